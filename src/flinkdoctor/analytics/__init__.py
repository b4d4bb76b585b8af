"""Checkpoint and configuration analytics: the numbers behind checkpoint and configuration causes.

They read every match of the metrics (not the samples findings keep), the configuration documents and the REST
snapshots, and return the report's two sections plus findings of role `context` with their evidence, which go
to the correlator with the signatures' findings.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..diagnosis.findings import Finding
from ..knowledge.rulebook import Rule
from ..sources.ingest import Manifest
from .checkpoints import JobAnalysis, Point, analyse_checkpoints
from .config import Assignment, Risk, audit, build_audit, effective_config
from .knowledge import analytics_rules, config_knowledge
from .metrics import Measure, extract, load_metrics
from .model import CheckpointAnalytics, ConfigAudit

__all__ = ["Analytics", "analyse", "analytics_rules", "config_knowledge", "extract", "load_metrics"]


@dataclass
class Analytics:
    checkpoints: CheckpointAnalytics
    config_audit: ConfigAudit
    findings: list[Finding]
    counts: dict[str, int]


def analyse(measures: list[Measure], manifest: Manifest, version: str | None) -> Analytics:
    paths = {s.id: s.path for s in manifest.sources}
    effective = effective_config(manifest, measures, paths)
    checkpoints, jobs = analyse_checkpoints(measures, manifest, effective, paths)
    checkpointing = bool(checkpoints.jobs) or effective.get("execution.checkpointing.interval") is not None
    config_audit, risks = audit(effective, version, config_knowledge(), checkpointing, _seen(measures, paths))
    risks += _timeout_risks(jobs, effective)
    if risks:
        config_audit = build_audit(effective, version, risks)
    findings = _checkpoint_findings(jobs) + _risk_findings(risks, manifest)
    counts: dict[str, int] = {}
    for finding in findings:
        counts[finding.rule] = counts.get(finding.rule, 0) + 1
    return Analytics(checkpoints, config_audit, findings, counts)


def _seen(measures: list[Measure], paths: dict[int, str]) -> dict[str, Assignment]:
    """The first line showing what the job did with its checkpoints (where they were written), by measure."""
    seen: dict[str, Assignment] = {}
    for m in measures:
        if m.measures in ("checkpoint-storage-path", "memory-checkpoint-storage") and m.measures not in seen:
            value = m.captures.get("class") or m.text.strip()
            where = f"{paths[m.sid]}:{m.line}"
            seen[m.measures] = Assignment(m.measures, value, where, m.sid, m.line, m.time, m.host, m.text)
    return seen


def _timeout_risks(jobs: list[JobAnalysis], effective) -> list[Risk]:
    """A checkpoint timeout below what checkpoints (or one of their steps) were seen to take."""
    risks = []
    for job in jobs:
        timeout = job.report.timeout
        longest = job.longest_ms  # completed checkpoints and timed steps: an expired one lasts the timeout
        if timeout and longest > timeout.ms and not timeout.source.startswith("log:"):
            key = "execution.checkpointing.timeout"
            note = (
                f"Checkpoints of job {job.report.job} were seen taking up to {longest:,.0f} ms, above the "
                f"{timeout.ms:,.0f} ms timeout: size the timeout to the state and the storage, or make them faster."
            )
            risks.append(
                Risk("config-checkpoint-timeout-below-durations", "warning", key, note, None, effective.get(key))
            )
    return risks


def _finding(rule: str, point: Point) -> Finding:
    return Finding(
        rule=rule,
        sid=point.sid if point.sid is not None else -1,
        line=point.line,
        time=point.time,
        host=point.host,
        job_id=point.job if len(point.job) == 32 else None,
        text=point.text,
        checkpoint_id=str(point.id) if point.id is not None else None,
    )


def _checkpoint_findings(jobs: list[JobAnalysis]) -> list[Finding]:
    return [_finding(rule, point) for job in jobs for rule, points in job.evidence.items() for point in points]


def _risk_findings(risks: list[Risk], manifest: Manifest) -> list[Finding]:
    """A risk's evidence is the log line that set the key; a file or REST setting has no line to show (line 0)."""
    config_source = next((s.id for s in manifest.sources if s.kind == "flink-config"), -1)
    findings = []
    for risk in risks:
        found = risk.assignment
        if found and found.sid is not None and found.line:
            findings.append(
                Finding(risk.check_id, found.sid, found.line, found.time, found.host, None, found.text or "")
            )
        else:
            findings.append(Finding(risk.check_id, config_source, 0, None, None, None, ""))
    return findings


def rules_with_analytics(rules: dict[str, Rule]) -> dict[str, Rule]:
    return {**rules, **analytics_rules()}
