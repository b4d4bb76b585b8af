"""The fleet report: one model built from the lake, shown by the views in views.py (terminal, JSON, HTML).

Every bundle's answer (its verdict, top cause and category, when and on which host it was first seen, or why
it could not be read); the top root causes by the number of jobs they hit; the shared incidents, least likely
by chance first, each with the counts it was scored on (incidents.py, score.py).

JSON `flinkdoctor.fleet/v1`, contract_version 1.1. History: 1.0, the first version (incidents were linked runs
of causes and symptoms); 1.1 (issue #24): incidents are one cause each with their score (`cause`, `level`,
`observed`, `expected`, `exposed`, `with_cause`, `fleet`, `chance`, `joined`), `answers` holds every bundle's
answer, `false_alarm`. Fields are only added.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from ..knowledge.rulebook import Rule
from . import lake
from .incidents import DEFAULT_WINDOW, Incident, detect, ranked
from .score import FALSE_ALARM
from .sightings import from_lake

SCHEMA = "flinkdoctor.fleet/v1"
CONTRACT_VERSION = "1.1"


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
    number: int  # its rank: 1 is the least likely by chance
    kind: str  # host | storage | zookeeper | kafka
    key: str
    level: str  # rule | category: what `cause` names
    cause: str
    category: str
    title: str
    start: str
    end: str
    jobs: list[str]  # bundle names
    joined: list[str]  # of them, those that showed only something the cause explains
    rules: list[str]  # the rules sighted in its jobs
    observed: int  # jobs with the cause on the resource in the window
    expected: float  # at the cause's rate over the fleet
    exposed: int  # jobs that ran on the resource during the window
    with_cause: int  # jobs of the fleet with the cause
    fleet: int
    chance: float  # of `observed` or more by chance, given the first
    also: list[str]  # the same jobs seen through other resources


@dataclass(frozen=True)
class Answer:
    """One bundle's answer, as `diagnose` would give it."""

    job: str
    bundle_id: str
    status: str  # ok | failed | duplicate
    verdict: str | None  # known-cause | derived-cause | no-failure; None when not read
    rule: str | None  # the top root cause
    category: str | None
    derived: bool
    first_seen: str | None
    host: str | None
    reason: str | None = None  # why it could not be read
    incidents: list[int] = field(default_factory=list)  # numbers of the incidents it is in


@dataclass(frozen=True)
class FleetReport:
    bundles: int
    ok: int
    failed: list[dict]
    duplicates: int
    verdicts: dict[str, int]
    causes: list[CauseSummary]
    incidents: list[SharedIncident]
    answers: list[Answer]
    window_minutes: float
    false_alarm: float = FALSE_ALARM
    run: dict = field(default_factory=dict)  # this run: new, skipped, failed, timings

    def to_dict(self) -> dict:
        return {"schema": SCHEMA, "contract_version": CONTRACT_VERSION, **asdict(self)}


def _iso(time: datetime | None) -> str:
    return time.replace(tzinfo=None).isoformat(sep=" ", timespec="seconds") if time else "-"


def _when(hit: JobHit) -> tuple:
    return (hit.first_seen is None, hit.first_seen or "", hit.job)


def build(
    lake_dir: str | Path,
    window: timedelta = DEFAULT_WINDOW,
    min_jobs: int = 2,
    top: int = 10,
    run=None,
    rules: list[Rule] | None = None,
) -> FleetReport:
    """The fleet report over everything in the lake (every run so far); `rules`: the rulebook the runs used
    (default: the built-in one), for what each cause explains."""
    import pyarrow.dataset as ds

    if rules is None:
        from ..knowledge.rulebook import load_rules

        rules = load_rules()
    bundles = lake.read(lake_dir, "bundles", [c for c in lake.columns("bundles") if c not in ("path", "run")])
    diagnoses = lake.read(
        lake_dir,
        "diagnoses",
        ["bundle_id", "rank", "rule", "category", "title", "first_seen", "host", "chain", "derived"],
    )
    findings = lake.read(
        lake_dir,
        "findings",
        ["bundle_id", "rule", "category", "role", "time", "host", "storage", "zookeeper", "kafka"],
        ds.field("role").isin(["cause", "symptom"]),
    )
    names = {b["bundle_id"]: b["name"] for b in bundles}
    found = ranked(detect(from_lake(bundles, diagnoses, findings, rules), window, min_jobs))
    titles = {rule.id: (rule.category, rule.title) for rule in rules}
    for row in diagnoses:  # a rule of another rulebook: its category and title as diagnosed
        titles.setdefault(row["rule"], (row["category"], row["title"]))
    incidents = [_shared(number, i, names, titles) for number, i in enumerate(found, 1)]
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
        causes=_causes(diagnoses, names)[:top],
        incidents=incidents,
        answers=_answers(bundles, diagnoses, found),
        window_minutes=window.total_seconds() / 60,
        run=run or {},
    )


def _causes(diagnoses: list[dict], names: dict[str, str]) -> list[CauseSummary]:
    """Root causes by the number of jobs they hit, each job with when and where it was first seen."""
    by_cause: dict[str, dict] = {}
    hits: dict[str, dict[str, JobHit]] = defaultdict(dict)
    for row in diagnoses:
        by_cause.setdefault(row["rule"], row)
        hit = JobHit(names.get(row["bundle_id"], row["bundle_id"]), row["bundle_id"], row["first_seen"], row["host"])
        hits[row["rule"]].setdefault(row["bundle_id"], hit)
    causes = [
        CauseSummary(rule, by_cause[rule]["category"], by_cause[rule]["title"], sorted(jobs.values(), key=_when))
        for rule, jobs in hits.items()
    ]
    return sorted(causes, key=lambda c: (-len(c.jobs), c.rule))


def _shared(number: int, incident: Incident, names: dict, titles: dict[str, tuple[str, str]]) -> SharedIncident:
    if incident.level == "rule":
        category, title = titles.get(incident.cause, ("other", incident.cause))
    else:
        category, title = incident.cause, f"category {incident.cause}"
    return SharedIncident(
        number=number,
        kind=incident.kind,
        key=incident.key,
        level=incident.level,
        cause=incident.cause,
        category=category,
        title=title,
        start=_iso(incident.start),
        end=_iso(incident.end),
        jobs=sorted(names.get(b, b) for b in incident.bundles),
        joined=sorted(names.get(b, b) for b in incident.joined),
        rules=incident.rules,
        observed=incident.observed,
        expected=round(incident.expected, 3),
        exposed=incident.exposed,
        with_cause=incident.with_cause,
        fleet=incident.fleet,
        chance=float(f"{incident.chance:.3g}"),
        also=[f"{kind} {key}" for kind, key in incident.also],
    )


def _answers(bundles: list[dict], diagnoses: list[dict], incidents: list[Incident]) -> list[Answer]:
    """Every bundle's answer, by name: its first root cause, or why it could not be read."""
    first = {row["bundle_id"]: row for row in diagnoses if row["rank"] == 1}
    member: dict[str, list[int]] = defaultdict(list)
    for number, incident in enumerate(incidents, 1):
        for bundle_id in incident.bundles:
            member[bundle_id].append(number)
    answers = []
    for b in sorted(bundles, key=lambda b: (b["name"], b["bundle_id"])):
        top = first.get(b["bundle_id"], {})
        host = top.get("host") or (", ".join(b.get("hosts") or ()) or None)
        answers.append(
            Answer(
                job=b["name"],
                bundle_id=b["bundle_id"],
                status=b["status"],
                verdict=b.get("verdict"),
                rule=top.get("rule"),
                category=top.get("category"),
                derived=bool(top.get("derived")),
                first_seen=top.get("first_seen"),
                host=host,
                reason=b.get("reason"),
                incidents=member.get(b["bundle_id"], []),
            )
        )
    return answers
