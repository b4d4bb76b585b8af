"""Shared incidents: one cause in several jobs that share a resource, within one window, more often than the
background explains.

Every sighting of a cause on a resource opens a window of `window` length; the jobs sighted with that cause on
that resource inside it are the candidate's jobs (a window never grows past its length: there is no chaining of
sightings that are each close to the last). Each candidate is scored against the background (score.py): how
many jobs ran on the resource during the window, how many jobs of the fleet show the cause at all. A candidate
whose chance is below the threshold shared by every window tested is an incident.

Candidates are taken least likely first (at equal chance, by rule before by category: the more specific name; the
same jobs are never more likely by rule than by category, whose rate is higher). A candidate that shares a job and
a window with an incident already taken is the same incident: when it holds the same jobs seen through another
resource (the storage and the host of a one-host cluster), that resource is added to the incident; otherwise it is
dropped. Then the jobs of the incidents found are explained away and the rest is measured again without them, for a
few rounds. Last, the jobs on the resource that show only a symptom the cause explains join each incident (they
never count in its score).

Cost per round: sorting the sightings, then two-pointer windows and binary searches, so linear in jobs and
sightings up to a logarithm.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from .score import FALSE_ALARM, chance, expected, least_chance, threshold
from .sightings import Cause, Fleet, Resource

DEFAULT_WINDOW = timedelta(minutes=15)
LEVELS = ("rule", "category")
ROUNDS = 10  # rounds of explaining away; a fleet rarely needs more than three


@dataclass
class Incident:
    kind: str  # the resource: host | storage | zookeeper | kafka
    key: str
    level: str  # rule | category: what `cause` names
    cause: str
    start: datetime  # the first and last sighting
    end: datetime
    bundles: list[str]  # bundle ids, sorted
    joined: list[str]  # of them, those sighted only with something the cause explains
    rules: list[str]  # the rules sighted
    observed: int  # jobs with the cause on the resource in the window
    exposed: int  # jobs that ran on the resource in the window
    with_cause: int  # jobs of the fleet with the cause (less those of incidents found before)
    fleet: int  # jobs in the fleet (less those of incidents found before)
    expected: float
    chance: float
    also: list[Resource] = field(default_factory=list)


@dataclass(frozen=True)
class _Hit:
    time: datetime
    bundle_id: str
    rule: str
    joined: bool


@dataclass
class _Candidate:
    resource: Resource
    cause: Cause
    hits: list[_Hit]
    exposed: int
    with_cause: int
    chance: float
    group: list[_Hit] = field(default_factory=list)  # every hit of the cause on the resource, by time
    first: int = 0  # the window's first hit in the group
    fleet: int = 0  # the jobs it is measured against
    also: list[Resource] = field(default_factory=list)


class Exposure:
    """Per resource, the jobs that ran on it, to count those running during a window (two binary searches)."""

    def __init__(self, fleet: Fleet):
        spans: dict[str, list[datetime]] = {}
        resources: dict[str, set[Resource]] = defaultdict(set)
        for job in fleet.jobs.values():
            spans[job.bundle_id] = [t for t in (job.start, job.end) if t]
            resources[job.bundle_id] |= job.resources
        for sighting in fleet.sightings:  # a job ran where and when it was sighted
            if sighting.time:
                spans[sighting.bundle_id].append(sighting.time)
            resources[sighting.bundle_id] |= set(sighting.resources)
        starts: dict[Resource, list[datetime]] = defaultdict(list)
        ends: dict[Resource, list[datetime]] = defaultdict(list)
        for bundle_id, times in spans.items():
            if not times:
                continue
            for resource in resources[bundle_id]:
                starts[resource].append(min(times))
                ends[resource].append(max(times))
        self.starts = {r: sorted(times) for r, times in starts.items()}
        self.ends = {r: sorted(times) for r, times in ends.items()}

    def count(self, resource: Resource, start: datetime, end: datetime) -> int:
        """Jobs on `resource` whose logs overlap [start, end]: begun by its end, less those over before its start."""
        begun = bisect.bisect_right(self.starts.get(resource, []), end)
        over = bisect.bisect_left(self.ends.get(resource, []), start)
        return begun - over


def _groups(fleet: Fleet, window: timedelta, joined: bool = False) -> dict[tuple[Cause, Resource], list[_Hit]]:
    """Hits per cause and resource, by time: of the cause itself, or (`joined`) of a symptom it explains. A job's
    hits are thinned to one per window (the first), so that a window holds each job at most once and a job that
    logs a cause a hundred times is one test, not a hundred."""
    hits: dict[tuple[Cause, Resource], list[_Hit]] = defaultdict(list)
    for s in fleet.sightings:
        if s.time is None:
            continue
        for cause in s.joined if joined else s.causes:
            for resource in s.resources:
                hits[(cause, resource)].append(_Hit(s.time, s.bundle_id, s.rule, joined))
    for group, found in hits.items():
        found.sort(key=lambda h: (h.time, h.bundle_id, h.rule))
        last: dict[str, datetime] = {}
        kept = []
        for hit in found:
            if hit.bundle_id not in last or hit.time - last[hit.bundle_id] > window:
                last[hit.bundle_id] = hit.time
                kept.append(hit)
        hits[group] = kept
    return hits


def _jobs_with(fleet: Fleet) -> dict[Cause, set[str]]:
    """Per cause, the jobs that show it (by rule or category): the fleet's rate of it."""
    jobs: dict[Cause, set[str]] = defaultdict(set)
    for s in fleet.sightings:
        for cause in s.causes:
            jobs[cause].add(s.bundle_id)
    return jobs


def detect(
    fleet: Fleet,
    window: timedelta = DEFAULT_WINDOW,
    min_jobs: int = 2,
    false_alarm: float = FALSE_ALARM,
    rounds: int = ROUNDS,
) -> list[Incident]:
    """The incidents of the fleet, in the order found (ranked() sorts them).

    In rounds: the jobs of the incidents found are explained, so the next round measures the rest against a
    background without them (a cause that struck 40 jobs of one host at once does not make the same cause in 4
    jobs of another host look common); the first round alone decides whether there is any incident at all."""
    exposure = Exposure(fleet)
    groups = _groups(fleet, window)
    jobs_with = _jobs_with(fleet)
    explained: set[str] = set()
    found: list[_Candidate] = []
    for _ in range(rounds):
        chosen = _round(groups, exposure, jobs_with, explained, len(fleet.jobs), window, min_jobs, false_alarm)
        if not chosen:
            break
        found += chosen
        explained |= {hit.bundle_id for candidate in chosen for hit in candidate.hits}
    joiners = _groups(fleet, window, joined=True)
    return [_incident(c, _joining(c, joiners.get((c.cause, c.resource), []), window, explained)) for c in found]


def _round(groups, exposure, jobs_with, explained, jobs, window, min_jobs, false_alarm) -> list[_Candidate]:
    """One pass over every window, against the fleet less the `explained` jobs."""
    size = jobs - len(explained)
    with_cause = {cause: len(bundles - explained) for cause, bundles in jobs_with.items()}
    least: list[float] = []
    candidates: list[_Candidate] = []
    for (cause, resource), every in groups.items():
        hits = [h for h in every if h.bundle_id not in explained]
        end = 0
        for first, hit in enumerate(hits):
            if first and hits[first - 1].time == hit.time:
                continue  # the window from this moment is already scored, with every hit of the moment
            end = max(end, first)
            while end + 1 < len(hits) and hits[end + 1].time - hit.time <= window:
                end += 1
            inside = hits[first : end + 1]
            exposed = max(exposure.count(resource, hit.time, hit.time + window), len(inside))
            least.append(least_chance(exposed, with_cause[cause], size))
            observed = len(inside)
            if observed < min_jobs:
                continue
            if observed <= expected(exposed, with_cause[cause], size):
                continue  # no more than the background: never an incident
            odds = chance(observed, exposed, with_cause[cause], size)
            candidates.append(_Candidate(resource, cause, inside, exposed, with_cause[cause], odds, hits, first, size))
    limit = threshold(least, false_alarm)
    chosen = []
    for candidate, also in _choose([c for c in candidates if c.chance <= limit], window):
        chosen.append(_widened(candidate, window, exposure))
        chosen[-1].also = also
    return chosen


def _joining(candidate: _Candidate, joiners: list[_Hit], window: timedelta, explained: set[str]) -> list[_Hit]:
    """The jobs on the resource that show only a symptom the cause explains, within the incident's window."""
    start, end = candidate.hits[0].time, max(h.time for h in candidate.hits)
    members = {h.bundle_id for h in candidate.hits}
    times = [h.time for h in joiners]
    found = []
    for hit in joiners[bisect.bisect_left(times, end - window) : bisect.bisect_right(times, start + window)]:
        if hit.bundle_id not in members and hit.bundle_id not in explained:
            members.add(hit.bundle_id)
            found.append(hit)
    return found


def _widened(candidate: _Candidate, window: timedelta, exposure: Exposure) -> _Candidate:
    """The chosen window with the group's earlier hits that still fit in one window's length with its last hit
    (a window that scored best from its second sighting still names the first job), scored again."""
    last = max(h.time for h in candidate.hits)
    jobs = {h.bundle_id for h in candidate.hits}
    extra = []
    for index in range(candidate.first - 1, -1, -1):
        hit = candidate.group[index]
        if last - hit.time > window:
            break
        if hit.bundle_id not in jobs:
            extra.append(hit)
            jobs.add(hit.bundle_id)
    if not extra:
        return candidate
    hits = extra[::-1] + candidate.hits
    start = hits[0].time
    exposed = max(exposure.count(candidate.resource, start, start + window), len(hits))
    odds = chance(len(hits), exposed, candidate.with_cause, candidate.fleet)
    return _Candidate(
        candidate.resource, candidate.cause, hits, exposed, candidate.with_cause, odds, fleet=candidate.fleet
    )


def _choose(candidates: list[_Candidate], window: timedelta) -> list[tuple[_Candidate, list[Resource]]]:
    """Least likely first (then most jobs, by rule before by category, earliest); one incident per job and
    window."""
    order = sorted(
        candidates,
        key=lambda c: (c.chance, -len(c.hits), LEVELS.index(c.cause[0]), c.hits[0].time, c.resource, c.cause),
    )
    chosen: list[tuple[_Candidate, list[Resource]]] = []
    claims: dict[str, list[int]] = defaultdict(list)  # bundle -> chosen incidents holding it
    for candidate in order:
        start = candidate.hits[0].time
        jobs = {h.bundle_id for h in candidate.hits}
        overlapping = {
            index for bundle in jobs for index in claims[bundle] if abs(chosen[index][0].hits[0].time - start) <= window
        }
        if not overlapping:
            for bundle in jobs:
                claims[bundle].append(len(chosen))
            chosen.append((candidate, []))
            continue
        for index in overlapping:
            held, also = chosen[index]
            same = jobs == {h.bundle_id for h in held.hits}
            if same and candidate.resource != held.resource and candidate.resource not in also:
                also.append(candidate.resource)
    return chosen


def _incident(candidate: _Candidate, joiners: list[_Hit]) -> Incident:
    hits = candidate.hits
    return Incident(
        kind=candidate.resource[0],
        key=candidate.resource[1],
        level=candidate.cause[0],
        cause=candidate.cause[1],
        start=hits[0].time,
        end=max(h.time for h in hits),
        bundles=sorted({h.bundle_id for h in hits + joiners}),
        joined=sorted({h.bundle_id for h in joiners}),
        rules=sorted({h.rule for h in hits + joiners}),
        observed=len(hits),
        exposed=candidate.exposed,
        with_cause=candidate.with_cause,
        fleet=candidate.fleet,
        expected=expected(candidate.exposed, candidate.with_cause, candidate.fleet),
        chance=candidate.chance,
        also=sorted(candidate.also),
    )


def ranked(incidents: list[Incident]) -> list[Incident]:
    """Least likely by chance first (the strongest evidence of a shared cause), then most jobs, then earliest."""
    return sorted(incidents, key=lambda i: (i.chance, -i.observed, i.start, i.kind, i.key))
