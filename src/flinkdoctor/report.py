"""Report: one model (the JSON contract, schema flinkdoctor.report/v1), several views (JSON, terminal).

Contract history: v1 (first release): schema, input, root_causes, findings; extra fields: flink_version,
skipped, timings.
"""
from __future__ import annotations

import json
import re
from datetime import datetime, timezone

from .correlate import RootCause
from .ingest import Manifest
from .match import Finding
from .rulebook import Rule
from .versions import matches

SCHEMA = "flinkdoctor.report/v1"
EVIDENCE_PER_FINDING = 5

SECRET = re.compile(
    r"""(?ix)
    (password|passwd|secret|token|api[._-]?key|access[._-]?key|secret[._-]?key|credentials?|sasl\.jaas\.config)
    (\s*["']?\s*[=:]\s*)
    ("[^"]*"|'[^']*'|[^\s,;}\]]+)""")


def redact(text: str) -> str:
    """Hide values of password/secret/key settings (Kafka JAAS and connector configs are dumped into logs)."""
    return SECRET.sub(lambda m: f"{m.group(1)}{m.group(2)}***", text)


def iso(time: datetime | None) -> str | None:
    if time is None:
        return None
    if time.tzinfo is None:
        time = time.replace(tzinfo=timezone.utc)
    return time.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _evidence(finding: Finding, paths: dict[int, str]) -> dict:
    return {"file": paths[finding.sid], "line": finding.line, "time": iso(finding.time),
            "text": redact(finding.text), "host": finding.host}


def _fill(template: str, values: dict) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: str(values.get(m.group(1), f"<{m.group(1)}>")), template)


def _fixes(rule: Rule, version: str | None, values: dict, aftermath_only: bool = False) -> list[dict]:
    fixes = []
    for fix in rule.fix:
        if not matches(fix.get("versions"), version) or (aftermath_only and not fix.get("aftermath")):
            continue
        item = {"text": _fill(fix["text"], values)}
        if fix.get("config"):
            item["config"] = {k: _fill(str(v), values) for k, v in fix["config"].items()}
        if fix.get("command"):
            item["command"] = _fill(fix["command"], values)
        if fix.get("versions"):
            item["versions"] = fix["versions"]
        if aftermath_only:
            item["for"] = rule.id
        fixes.append(item)
    return fixes


def build_report(manifest: Manifest, counters: dict, findings: list[Finding], counts: dict[str, int],
                 roots: list[RootCause], rules: dict[str, Rule], version: str | None, version_source: str,
                 timings: dict | None = None) -> dict:
    paths = {s.id: s.path for s in manifest.sources}
    values: dict[str, str] = {}
    for finding in findings:  # captures of every finding fill placeholders such as {hdfs_file}
        for key, value in finding.captures.items():
            if value:
                values.setdefault(key, value)
        if finding.hdfs_path:
            values.setdefault("hdfs_path", finding.hdfs_path)

    root_causes = []
    for root in roots:
        own = dict(values)
        for instance in root.instances:
            own.update({k: v for k, v in instance.captures.items() if v})
        first = root.instances[0]
        root_causes.append({
            "rule": root.rule.id, "category": root.rule.category, "title": root.rule.title,
            "confidence": root.confidence, "first_seen": iso(min((f.time for f in root.instances if f.time),
                                                                 default=None)),
            "host": first.host, "count": root.count,
            "explanation": root.rule.explanation,
            "evidence": [_evidence(f, paths) for f in root.instances[:EVIDENCE_PER_FINDING]],
            "chain": [{"rule": rule.id, "category": rule.category, "role": rule.role, "depth": depth,
                       **_evidence(instance, paths)} for rule, instance, depth in root.chain],
            "fix": _fixes(root.rule, version, own) + [
                fix for rule, _, _ in root.chain for fix in _fixes(rule, version, own, aftermath_only=True)],
            "references": root.rule.references,
        })

    by_rule: dict[str, list[Finding]] = {}
    for finding in findings:
        by_rule.setdefault(finding.rule, []).append(finding)
    finding_rows = []
    for rule_id, instances in sorted(by_rule.items(), key=lambda kv: (_first_time(kv[1]), kv[0])):
        rule = rules[rule_id]
        times = [f.time for f in instances if f.time]
        finding_rows.append({
            "rule": rule_id, "category": rule.category, "role": rule.role, "title": rule.title,
            "count": counts.get(rule_id, len(instances)),
            "first_seen": iso(min(times)) if times else None, "last_seen": iso(max(times)) if times else None,
            "evidence": [_evidence(f, paths) for f in instances[:EVIDENCE_PER_FINDING]],
        })

    return {
        "schema": SCHEMA,
        "input": {**counters, "sources": [
            {"path": s.path, "kind": s.kind, "layout": s.layout, "lines": s.lines, "unparsed": s.unparsed,
             "host": s.host, "container": s.container, "log_type": s.log_type}
            for s in manifest.sources if not s.derived]},
        "flink_version": {"version": version, "from": version_source},
        "root_causes": root_causes,
        "findings": finding_rows,
        "skipped": manifest.skipped,
        **({"timings": timings} if timings else {}),
    }


def _first_time(instances: list[Finding]) -> str:
    times = [f.time for f in instances if f.time]
    return min(times).isoformat() if times else "9999"


def render_json(report: dict) -> str:
    return json.dumps(report, indent=2, ensure_ascii=False)


def render_terminal(report: dict, console) -> None:
    """The terminal view: root causes first, each with its chain, evidence and fix; then the other findings."""
    from rich.panel import Panel
    from rich.table import Table
    from rich.text import Text

    source = report["input"]
    version = report["flink_version"]["version"] or "unknown (fixes for all versions shown)"
    console.print(Text(f"flinkdoctor: {source['files']} files, {source['lines']:,} lines "
                       f"({source['lines_unparsed']:,} unparsed), {source['events']:,} events; "
                       f"Flink version {version}", style="dim"))
    if not report["root_causes"]:
        console.print(Panel("No root cause found: no rule that names a cause matched this bundle.",
                            title="Diagnosis", border_style="green"))
    for rank, root in enumerate(report["root_causes"], 1):
        body = Text()
        body.append(f"{root['title']}\n", style="bold")
        body.append(f"category {root['category']}  rule {root['rule']}  confidence {root['confidence']:.2f}  "
                    f"first seen {root['first_seen'] or 'unknown time'}  ({root['count']} times)\n\n")
        body.append(" ".join(root["explanation"].split()) + "\n\n")  # the rule's line breaks are not the terminal's
        body.append("Evidence\n", style="bold")
        for ev in root["evidence"][:3]:
            body.append(f"  {ev['file']}:{ev['line']}  {ev['time'] or ''}\n", style="cyan")
            body.append(f"    {ev['text'][:300]}\n")
        if root["chain"]:
            body.append("\nChain of symptoms\n", style="bold")
            for step in root["chain"]:
                body.append(f"  {'  ' * (step['depth'] - 1)}-> {step['rule']} ({step['category']})  ", style="yellow")
                body.append(f"{step['time'] or 'no time'}  {step['file']}:{step['line']}\n", style="cyan")
                body.append(f"  {'  ' * (step['depth'] - 1)}     {step['text'][:200]}\n")
        if root["fix"]:
            body.append("\nFix\n", style="bold")
            for fix in root["fix"]:
                body.append(f"  * {fix['text']}\n")
                for key, value in fix.get("config", {}).items():
                    body.append(f"      {key}: {value}\n", style="green")
                if fix.get("command"):
                    body.append(f"      $ {fix['command']}\n", style="green")
        body.append("\nReferences: " + ", ".join(root["references"]), style="dim")
        console.print(Panel(body, title=f"Root cause #{rank}", border_style="red" if rank == 1 else "yellow"))
    table = Table(title="All findings", show_lines=False)
    for column in ("rule", "category", "role", "count", "first seen", "where"):
        table.add_column(column)
    for row in report["findings"]:
        ev = row["evidence"][0] if row["evidence"] else {}
        table.add_row(row["rule"], row["category"], row["role"], str(row["count"]), row["first_seen"] or "-",
                      f"{ev.get('file')}:{ev.get('line')}")
    if report["findings"]:
        console.print(table)
    if report["skipped"]:
        console.print(Text(f"Skipped: {report['skipped']}", style="yellow"))
