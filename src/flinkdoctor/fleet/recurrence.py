"""Recurrence: the same cause or symptom in several jobs, close in time, on one piece of shared infrastructure
(a host, a storage authority, a ZooKeeper quorum, a Kafka cluster) is a likely shared-infrastructure incident.

Findings are grouped by (kind, key); within a group, instances are linked when they are at most `window`
apart (single linkage, so a stall that repeats every few minutes stays one incident); a linked run that spans
at least `min_jobs` bundles is an incident. A job counts as hit by a cause it shows, or by a symptom when its
run failed (a symptom in a run that did not fail, such as a checkpoint declined while a healthy job is
cancelled, is not a hit). Context findings never count; findings without a time cannot be placed. The
same jobs and window seen through several keys (the storage and the host of a one-host cluster) are one
incident with every key listed.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta

KINDS = ("host", "storage", "zookeeper", "kafka")
DEFAULT_WINDOW = timedelta(minutes=15)


@dataclass
class Incident:
    kind: str  # host | storage | zookeeper | kafka
    key: str
    start: datetime
    end: datetime
    bundles: list[str]  # bundle ids
    rules: list[str]
    also: list[tuple[str, str]] = field(default_factory=list)  # other (kind, key) that saw the same jobs


def _naive(time: datetime) -> datetime:
    return time.replace(tzinfo=None) if time.tzinfo else time


def detect(
    findings: list[dict], window: timedelta = DEFAULT_WINDOW, min_jobs: int = 2, healthy: frozenset[str] = frozenset()
) -> list[Incident]:
    """Incidents in findings rows (bundle_id, rule, role, time and one column per kind), by start time;
    `healthy`: the bundles whose run shows no failure."""
    groups: dict[tuple[str, str], list[tuple[datetime, str, str]]] = defaultdict(list)
    for row in findings:
        hit = row.get("role") == "cause" or (row.get("role") == "symptom" and row["bundle_id"] not in healthy)
        if not hit or row.get("time") is None:
            continue
        for kind in KINDS:
            if row.get(kind):
                groups[(kind, row[kind])].append((_naive(row["time"]), row["bundle_id"], row["rule"]))
    incidents = []
    for (kind, key), hits in sorted(groups.items()):
        hits.sort()
        run = [hits[0]]
        for hit in hits[1:] + [None]:
            if hit is not None and hit[0] - run[-1][0] <= window:
                run.append(hit)
                continue
            jobs = sorted({h[1] for h in run})
            if len(jobs) >= min_jobs:
                incidents.append(Incident(kind, key, run[0][0], run[-1][0], jobs, sorted({h[2] for h in run})))
            if hit is not None:
                run = [hit]
    return _merge(incidents)


def _merge(incidents: list[Incident]) -> list[Incident]:
    """One incident per set of jobs and overlapping window; host keys give way to shared services."""
    order = {kind: i for i, kind in enumerate(("storage", "zookeeper", "kafka", "host"))}
    merged: list[Incident] = []
    for incident in sorted(incidents, key=lambda i: (order[i.kind], i.start)):
        same = next(
            (
                m
                for m in merged
                if m.bundles == incident.bundles and m.start <= incident.end and incident.start <= m.end
            ),
            None,
        )
        if same is None:
            merged.append(incident)
        else:
            same.also.append((incident.kind, incident.key))
            same.rules = sorted(set(same.rules) | set(incident.rules))
            same.start, same.end = min(same.start, incident.start), max(same.end, incident.end)
    return sorted(merged, key=lambda i: (i.start, i.kind, i.key))
