"""Sightings: where and when each job of the lake showed a cause, the input of the incident detector.

A job's causes are its answer: the root causes of its diagnosis. Each is sighted at the times and on the
resources of its findings (a host; the storage authority, ZooKeeper quorum or Kafka cluster the finding names or
the job is configured with); a cause derived from an exception chain, at its first time on its host. A root cause
counts for its rule and for its category.

A cause also counts in jobs that show only a symptom it explains (the rules and categories of its rule's
`explains`): a symptom that its job's own diagnosis leaves unexplained joins the incidents of the causes that
would explain it (a job suspended after losing ZooKeeper, without a line saying why, joins the quorum's outage).
A root cause joins no other: it is the job's own answer.

A cause that is the job's own (its code, classpath, configuration, state or heap: infra.JOB_CATEGORIES) is never
sighted on a host: a host does not share it with the other jobs it runs.

Generic findings never count on their own, nor join: the failure evidence every failure leaves (a failed task, a
restart, an exhausted restart strategy, an uncaught exception: `failure_rules` of knowledge/exceptions.yaml),
declined checkpoints (the decline's own exception is the diagnosis), context findings, and derived causes of
category `other` (a pool of unrelated exceptions, not one cause).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime

from ..knowledge.rulebook import Rule
from .infra import JOB_CATEGORIES

KINDS = ("host", "storage", "zookeeper", "kafka")
GENERIC_CATEGORIES = frozenset({"checkpoint-declined", "other"})

Resource = tuple[str, str]  # (kind, key): ("host", "worker-07")
Cause = tuple[str, str]  # (level, id): ("rule", "kernel-soft-lockup") or ("category", "host-stall")


@dataclass(frozen=True)
class Job:
    bundle_id: str
    start: datetime | None  # the first and last time in its logs: when it ran
    end: datetime | None
    resources: frozenset[Resource] = frozenset()


@dataclass(frozen=True)
class Sighting:
    """A job showing `rule` at `time` (None: it cannot be placed, but the job counts as having the cause) on
    `resources`; it counts for `causes`, and `joined` for those that only explain what it shows."""

    bundle_id: str
    rule: str
    time: datetime | None
    resources: tuple[Resource, ...]
    causes: tuple[Cause, ...]
    joined: tuple[Cause, ...] = ()


@dataclass
class Fleet:
    jobs: dict[str, Job]
    sightings: list[Sighting] = field(default_factory=list)


def generic_rules(rules: list[Rule]) -> frozenset[str]:
    """Rules whose findings say that something failed, not why."""
    from ..diagnosis.fallback import knowledge

    failure = set(knowledge().failure_rules)
    return frozenset(r.id for r in rules if r.id in failure or r.role == "context" or r.category in GENERIC_CATEGORIES)


def explainers(rules: list[Rule]) -> dict[str, tuple[Cause, ...]]:
    """Per rule, the causes (rule and category keys of cause rules) whose `explains` name it or its category."""
    generic = generic_rules(rules)
    by_category: dict[str, list[str]] = defaultdict(list)
    for rule in rules:
        by_category[rule.category].append(rule.id)
    found: dict[str, set[Cause]] = defaultdict(set)
    for rule in rules:
        if rule.role != "cause" or rule.id in generic:
            continue
        for relation in rule.explains:
            kind, target = relation.target
            for explained in [target] if kind == "rule" else by_category.get(target, []):
                if explained != rule.id and explained not in generic:
                    found[explained] |= {("rule", rule.id), ("category", rule.category)}
    return {rule: tuple(sorted(causes)) for rule, causes in found.items()}


def _own(rule: str, category: str, generic: frozenset[str]) -> tuple[Cause, ...]:
    if rule in generic:
        return ()
    return (("rule", rule),) + ((("category", category),) if category not in GENERIC_CATEGORIES else ())


def _resources(row: dict) -> tuple[Resource, ...]:
    """The resources a finding points at; not its host when its category is the job's own."""
    shared = [kind for kind in KINDS if row.get(kind) and not (kind == "host" and row["category"] in JOB_CATEGORIES)]
    return tuple((kind, row[kind]) for kind in shared)


def _time(value) -> datetime | None:
    if value is None or isinstance(value, datetime):
        return value.replace(tzinfo=None) if value is not None and value.tzinfo else value
    try:
        parsed = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed.replace(tzinfo=None)


def _jobs(bundles: list[dict]) -> tuple[dict[str, Job], set[str]]:
    """The bundles read without error, with when and where they ran; and those whose run failed."""
    jobs: dict[str, Job] = {}
    failed: set[str] = set()
    for row in bundles:
        if row["status"] != "ok":
            continue
        start = _time(row.get("log_start")) or _time(row.get("first_time"))
        end = _time(row.get("log_end")) or _time(row.get("last_time"))
        keys = {"host": row.get("hosts")} | {kind: row.get(kind) for kind in KINDS[1:]}
        resources = frozenset((kind, key) for kind, values in keys.items() for key in values or ())
        jobs[row["bundle_id"]] = Job(row["bundle_id"], start, end or start, resources)
        if row.get("verdict") not in (None, "no-failure"):
            failed.add(row["bundle_id"])
    return jobs, failed


def from_lake(bundles: list[dict], diagnoses: list[dict], findings: list[dict], rules: list[Rule]) -> Fleet:
    """The jobs (bundles read without error) and their sightings, from the lake's rows; linear in the rows."""
    generic = generic_rules(rules)
    explained_by = explainers(rules)
    jobs, failed = _jobs(bundles)
    fleet = Fleet(jobs)
    roots: dict[str, dict[str, str]] = defaultdict(dict)  # bundle -> root rule -> category
    chained: dict[str, set[str]] = defaultdict(set)  # bundle -> rules its own root causes explain
    for row in diagnoses:
        if row["bundle_id"] not in jobs:
            continue
        chained[row["bundle_id"]] |= set(row.get("chain") or ())
        if not row.get("derived"):
            roots[row["bundle_id"]][row["rule"]] = row["category"]
        elif row["category"] not in GENERIC_CATEGORIES:
            fleet.sightings.append(
                Sighting(
                    row["bundle_id"],
                    row["rule"],
                    _time(row.get("first_seen")),
                    _resources(row),
                    (("category", row["category"]),),
                )
            )
    for row in findings:
        bundle, rule = row["bundle_id"], row["rule"]
        if bundle not in jobs or rule in generic:
            continue
        if rule in roots[bundle]:
            sighting = Sighting(
                bundle, rule, _time(row.get("time")), _resources(row), _own(rule, row["category"], generic)
            )
        elif row.get("role") == "symptom" and bundle in failed and rule not in chained[bundle]:
            # a symptom its job leaves unexplained: it only joins the causes that explain it
            joined = explained_by.get(rule, ())
            sighting = Sighting(bundle, rule, _time(row.get("time")), _resources(row), (), joined)
        else:
            continue
        if sighting.causes or sighting.joined:
            fleet.sightings.append(sighting)
    return fleet
