"""The fleet report: one model built from the lake, and its views (terminal, JSON, HTML; each in
VIEWS). Top root causes by the number of jobs they hit, with the jobs and times; the likely
shared-infrastructure incidents; the bundles that could not be read."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from ..safety.inert import inert
from ..safety.masking import mask, scrub
from . import lake
from .recurrence import DEFAULT_WINDOW, detect

SCHEMA = "flinkdoctor.fleet/v1"  # v1: first version
_RAW_UNSAFE = re.compile("[\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")


@dataclass(frozen=True)
class JobHit:
    job: str  # bundle name
    bundle_id: str
    first_seen: str | None
    host: str | None


@dataclass(frozen=True)
class CauseSummary:
    rule: str
    category: str
    title: str
    jobs: list[JobHit]


@dataclass(frozen=True)
class SharedIncident:
    kind: str
    key: str
    start: str
    end: str
    jobs: list[str]
    rules: list[str]
    also: list[str]


@dataclass(frozen=True)
class FleetReport:
    bundles: int
    ok: int
    failed: list[dict]
    duplicates: int
    verdicts: dict[str, int]
    causes: list[CauseSummary]
    incidents: list[SharedIncident]
    window_minutes: float
    run: dict = field(default_factory=dict)  # this run: new, skipped, failed, timings

    def to_dict(self) -> dict:
        return {"schema": SCHEMA, **asdict(self)}


def _iso(time: datetime | None) -> str:
    return time.replace(tzinfo=None).isoformat(sep=" ", timespec="seconds") if time else "-"


def build(lake_dir: str | Path, window: timedelta = DEFAULT_WINDOW, min_jobs: int = 2, top: int = 10, run=None):
    """The fleet report over everything in the lake (every run so far)."""
    bundles = lake.read(lake_dir, "bundles", ["bundle_id", "name", "status", "reason", "verdict", "hosts"])
    names = {b["bundle_id"]: b["name"] for b in bundles}
    by_cause: dict[str, dict] = {}
    hits: dict[str, dict[str, JobHit]] = defaultdict(dict)
    for row in lake.read(lake_dir, "diagnoses", ["bundle_id", "rule", "category", "title", "first_seen", "host"]):
        by_cause.setdefault(row["rule"], row)
        hit = JobHit(names.get(row["bundle_id"], row["bundle_id"]), row["bundle_id"], row["first_seen"], row["host"])
        hits[row["rule"]].setdefault(row["bundle_id"], hit)
    causes = [
        CauseSummary(rule, by_cause[rule]["category"], by_cause[rule]["title"], sorted(jobs.values(), key=_when))
        for rule, jobs in hits.items()
    ]
    causes.sort(key=lambda c: (-len(c.jobs), c.rule))
    healthy = frozenset(b["bundle_id"] for b in bundles if b["verdict"] == "no-failure")
    columns = ["bundle_id", "rule", "role", "time", "host", "storage", "zookeeper", "kafka"]
    incidents = [
        SharedIncident(
            i.kind,
            i.key,
            _iso(i.start),
            _iso(i.end),
            sorted(names.get(b, b) for b in i.bundles),
            i.rules,
            [f"{kind} {key}" for kind, key in i.also],
        )
        for i in detect(lake.read(lake_dir, "findings", columns), window, min_jobs, healthy)
    ]
    verdicts: dict[str, int] = defaultdict(int)
    for b in bundles:
        if b["status"] == "ok":
            verdicts[b["verdict"] or "-"] += 1
    return FleetReport(
        bundles=len(bundles),
        ok=sum(b["status"] == "ok" for b in bundles),
        failed=sorted(
            ({"job": b["name"], "reason": b["reason"]} for b in bundles if b["status"] == "failed"),
            key=lambda f: f["job"],
        ),
        duplicates=sum(b["status"] == "duplicate" for b in bundles),
        verdicts=dict(sorted(verdicts.items())),
        causes=causes[:top],
        incidents=incidents,
        window_minutes=window.total_seconds() / 60,
        run=run or {},
    )


def _when(hit: JobHit) -> tuple:
    return (hit.first_seen is None, hit.first_seen or "", hit.job)


def render_json(report: FleetReport) -> str:
    text = json.dumps(scrub(report.to_dict()), indent=2, ensure_ascii=False, default=str)  # masked, then JSON
    return _RAW_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def render_terminal(report: FleetReport, console) -> None:
    """Every string from the input (names, hosts, paths) through inert() into Text, never markup."""
    from rich.panel import Panel
    from rich.table import Table
    from rich.text import Text

    def safe(value) -> Text:
        return Text(inert(mask(str(value)) if value is not None else "-"))

    run = report.run
    if run:
        console.print(
            Text(
                f"this run: {run.get('new', 0)} new bundles, {run.get('skipped', 0)} already in the lake, "
                f"{run.get('failed', 0)} failed to read",
                style="dim",
            )
        )
    verdicts = ", ".join(f"{inert(k)} {v}" for k, v in report.verdicts.items())
    console.print(
        Text(f"fleet: {report.bundles} bundles, {report.ok} diagnosed ({verdicts}), {len(report.failed)} unreadable")
    )
    for incident in report.incidents:
        body = Text()
        body.append(f"{len(incident.jobs)} jobs hit on the same {incident.kind} ")
        body.append(inert(mask(incident.key)), style="bold")
        body.append(f" between {incident.start} and {incident.end}\n")
        body.append("causes and symptoms: " + inert(", ".join(incident.rules)) + "\n")
        if incident.also:
            body.append("also seen as: " + inert(mask(", ".join(incident.also))) + "\n")
        body.append("jobs: " + inert(mask(", ".join(incident.jobs))))
        console.print(Panel(body, title="Likely shared-infrastructure incident", border_style="red"))
    if not report.incidents:
        console.print(Text(f"No cause recurring across jobs within {report.window_minutes:g} minutes.", style="green"))
    table = Table(title="Top root causes by jobs affected")
    for column in ("cause", "category", "jobs", "first jobs (first seen, host)"):
        table.add_column(column, overflow="fold")
    for cause in report.causes:
        shown = "; ".join(f"{h.job} ({h.first_seen or '-'}, {h.host or '-'})" for h in cause.jobs[:5])
        more = f"; and {len(cause.jobs) - 5} more" if len(cause.jobs) > 5 else ""
        table.add_row(safe(cause.rule), safe(cause.category), Text(str(len(cause.jobs))), safe(shown + more))
    console.print(table)
    for failed in report.failed:
        console.print(Text(f"Unreadable: {inert(failed['job'])}: {inert(failed['reason'])}", style="yellow"))


def render_html(report: FleetReport) -> str:
    """One self-contained page (no script at all), rendered by the diagnose HTML view's autoescaping, inert
    Jinja2 environment from the JSON view's data, so every string is masked as there."""
    from ..views.html import _environment

    return _environment().get_template("fleet.html.j2").render(report=json.loads(render_json(report)))


VIEWS = {"json": render_json, "html": render_html}  # format -> function(report) -> str; terminal prints to a console
