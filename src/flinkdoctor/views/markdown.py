"""The Markdown view, for a GitHub, GitLab or Jira ticket: root cause, chain table, fix blocks, accounting.

Input text is never markup here: in running text and table cells every character that starts markup is
backslash-escaped (CommonMark lets any ASCII punctuation be), so pipes cannot split a table, `[x](y)` is no link and
`<img>` no tag; log lines and commands go in fenced blocks whose fence is longer than any backtick run inside them.
"""

from __future__ import annotations

import re

from ..report.model import Evidence, Fix, Report, RootCauseReport
from ..safety.inert import inert
from .charts import checkpoint_summaries, config_audit
from .text import message_of, shorten

# the characters that start markup anywhere in a line (emphasis, code, links, images, HTML, entities, tables,
# strikethrough); the ones that do only at a line's start (lists, headings, quotes, rules) are escaped there
_MARKUP = re.compile(r"([\\`*_{}\[\]<>#!|~&])")
_LINE_START = re.compile(r"^([-+=>]|\d+[.)])")
EVIDENCE_SHOWN = 3


def md(text: object) -> str:
    """Input text for a Markdown paragraph or table cell: one line, inert, every markup character escaped."""
    escaped = _MARKUP.sub(r"\\\1", inert(" ".join(str(text).split())))
    return _LINE_START.sub(lambda m: m.group()[:-1] + "\\" + m.group()[-1], escaped)


def fenced(text: str, info: str = "text") -> str:
    """A fenced code block that no backtick run in `text` can close."""
    runs = [len(m) for m in re.findall(r"`+", text)]
    fence = "`" * max(3, max(runs, default=0) + 1)
    return f"{fence}{info}\n{inert(text, keep_newlines=True)}\n{fence}"


def render_markdown(report: Report) -> str:
    given = report.input
    out = [
        "# flinkdoctor report",
        "",
        f"**{_verdict(report)}**",
        "",
        f"Flink version: {md(report.flink_version or 'unknown')} ({md(report.flink_version_from)}); "
        f"input: {given.files} files, {given.lines:,} lines, {given.events:,} events.",
    ]
    for source in given.unreadable:
        why = source.truncated or f"{source.unparsed:,} of {source.lines:,} lines could not be parsed"
        out += ["", f"> Not fully readable: {md(source.path)} ({md(why)}); a diagnosis cannot rest on it."]
    for rank, root in enumerate(report.root_causes, 1):
        out += _root_cause(rank, root)
    for item in report.unexplained_symptoms:
        out += [
            "",
            f"## Unexplained symptom: {md(item.title)}",
            "",
            f"What usually causes it: {md(item.usually_caused_by)}",
        ]
        out += _evidence(item.evidence)
    if report.unexplained_errors:
        out += [
            "",
            "## Unexplained errors",
            "",
            "WARN/ERROR lines no rule explains, rare in healthy runs, nearest the failure first.",
        ]
        for rank, error in enumerate(report.unexplained_errors, 1):
            out += [
                "",
                f"{rank}. **{md(error.level)}** {md(error.template)}: {error.count:,} times, first seen "
                f"{md(error.first_seen or 'unknown time')}, rarity {error.rarity:.2f}",
            ]
            out += _evidence([error.evidence])
    out += _checkpoints(report)
    if report.findings:
        out += [
            "",
            "## All findings",
            "",
            "| rule | category | role | count | first seen | where |",
            "|---|---|---|--:|---|---|",
        ]
        for row in report.findings:
            where = f"{row.evidence[0].file}:{row.evidence[0].line}" if row.evidence else "-"
            out.append(
                f"| {md(row.rule)} | {md(row.category)} | {md(row.role)} | {row.count:,} | {md(row.first_seen or '-')} "
                f"| {md(where)} |"
            )
    out += _accounting(report)
    return "\n".join(out) + "\n"


def _verdict(report: Report) -> str:
    if report.verdict == "known-cause":
        return "A known cause: a signature in the knowledge base names the root cause."
    if report.verdict == "derived-cause":
        return "A cause derived from the failure's exception chain (no known signature matched): a lead, not a verdict."
    return "No failure in the input: no failed task or job, no uncaught exception and no known signature."


def _root_cause(rank: int, root: RootCauseReport) -> list[str]:
    out = [
        "",
        f"## Root cause {rank}: {md(root.title)}",
        "",
        f"- category: {md(root.category)}; rule: {md(root.rule)}; confidence: **{root.confidence:.0%}**",
        f"- first seen: {md(root.first_seen or 'unknown time')}"
        + (f" on {md(root.host)}" if root.host else "")
        + f" ({root.count} time{'s' if root.count != 1 else ''})",
        "",
        md(root.explanation),
    ]
    out += _evidence(root.evidence)
    if root.chain:
        out += ["", "### Chain", "", "| # | time | rule | category | where | message |", "|--:|---|---|---|---|---|"]
        for number, step in enumerate(root.chain, 1):
            ev = step.evidence
            out.append(
                f"| {number} | {md(ev.time or '-')} | {md(step.rule)} | {md(step.category)} | {md(ev.file)}:{ev.line} "
                f"| {md(shorten(message_of(ev.text), 160))} |"
            )
    if root.fix:
        out += ["", "### Fix"]
        for fix in root.fix:
            out += _fix(fix)
    if root.references:
        out += ["", "References: " + ", ".join(md(ref) for ref in root.references)]
    return out


def _evidence(evidence: list[Evidence]) -> list[str]:
    if not evidence:
        return []
    lines = [f"{ev.file}:{ev.line} {ev.time or ''}\n  {ev.text}" for ev in evidence[:EVIDENCE_SHOWN]]
    return ["", "Evidence:", "", fenced("\n".join(lines))]


def _fix(fix: Fix) -> list[str]:
    versions = f" (Flink {md(fix.versions)})" if fix.versions else ""
    target = f" (for {md(fix.for_rule)})" if fix.for_rule else ""
    out = ["", f"- {md(fix.text)}{versions}{target}"]
    if fix.config:
        out += ["", fenced("\n".join(f"{key}: {value}" for key, value in fix.config.items()), "yaml")]
    if fix.command:
        out += ["", fenced(fix.command, "sh")]
    return out


def _checkpoints(report: Report) -> list[str]:
    data = report.to_dict()
    out = []
    summaries = checkpoint_summaries(data)
    if summaries:
        out += ["", "## Checkpoints"]
        for job, lines in summaries:
            out += ["", f"### {md(job)}", ""] + [f"- {md(line)}" for line in lines]
    audit = config_audit(data)
    if audit:
        out += ["", "## Configuration audit", "", "| setting | value | from | finding |", "|---|---|---|---|"]
        for row in audit:
            out.append(
                f"| {md(row.get('key', ''))} | {md(row.get('value', ''))} | {md(row.get('source', ''))} "
                f"| {md(row.get('note', ''))} |"
            )
    return out


def _accounting(report: Report) -> list[str]:
    given = report.input
    out = [
        "",
        "## Input accounting",
        "",
        f"{given.files} files, {given.lines:,} lines: {given.lines_in_events:,} in {given.events:,} events, "
        f"{given.lines_unparsed:,} unparsed.",
        "",
        "| file | kind | layout | lines | unparsed | notes |",
        "|---|---|---|--:|--:|---|",
    ]
    for s in given.sources:
        notes = "; ".join(
            part
            for part in (
                f"encoding {s.encoding}" if s.encoding else "",
                s.truncated or "",
                f"{s.split_lines:,} over-long lines split" if s.split_lines else "",
            )
            if part
        )
        out.append(
            f"| {md(s.path)} | {md(s.kind)} | {md(s.layout or '-')} | {s.lines:,} | {s.unparsed:,} | {md(notes)} |"
        )
    if report.skipped:
        out += ["", "Skipped:", ""] + [
            f"- {md(item.get('path', ''))}: {md(item.get('reason', ''))}" for item in report.skipped
        ]
    return out
