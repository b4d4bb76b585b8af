"""Checkpoint analytics per job: the series of durations and sizes, percentiles against the timeout and the interval,
the trend, the failure period, and checkpoints that outlast the interval.

Points come from the JobManager's lines (triggered, completed, expired, declined, failed, in 1.x and 2.x wording),
from timed steps a TaskManager or HDFS client logged (closing a chk-N file), and from REST checkpoint history.
The timeout and interval come from the effective configuration (REST, the job's own, wins), else from the log
itself: the time from "Triggering checkpoint N" to "Checkpoint N ... expired" is the timeout, the gap between
triggers the interval.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, replace
from datetime import datetime, timezone

from ..knowledge.vocabulary import CheckpointStatus
from ..sources.ingest import Manifest
from .config import Effective, duration_ms
from .metrics import Measure
from .model import (
    CheckpointAnalytics,
    CheckpointJob,
    CheckpointPoint,
    CheckpointTrend,
    FailurePattern,
    Limit,
    iso,
)

STATUS_OF: dict[str, CheckpointStatus] = {
    "checkpoint-completed": "completed",
    "checkpoint-expired": "expired",
    "checkpoint-declined": "declined",
    "checkpoint-failed": "failed",
}
REST_STATUS: dict[str, CheckpointStatus] = {"completed": "completed", "failed": "failed", "in_progress": "in_progress"}
FAILED = ("expired", "declined", "failed")
PRECEDENCE = {"completed": 0, "expired": 1, "declined": 2, "failed": 3, "in_progress": 4}  # one status per checkpoint
UNKNOWN_JOB = "unknown job"
NEAR_TIMEOUT = 0.8  # p95 above this share of the timeout is a finding
TREND_MIN_POINTS, TREND_MIN_SPAN_H, TREND_MIN_R = 5, 0.5, 0.5
PERIODIC_MIN_GAPS, PERIODIC_MAX_SPREAD = 3, 0.25  # at least 4 failures, gaps within 25 % of their median
EPISODE_S = 1.0  # failures closer than this are one episode (the same failure read from two sources)
SERIES_MAX = 10_000  # points of one job's series in the report; more are thinned (_series)


@dataclass
class Point:
    """A checkpoint point with where it was read (sid None: a REST document)."""

    job: str
    id: int | None
    time: datetime | None
    status: CheckpointStatus
    duration_ms: float | None
    size_bytes: int | None
    file: str
    line: int
    stage: str = "checkpoint"
    sid: int | None = None
    host: str | None = None
    text: str = ""


@dataclass
class JobAnalysis:
    """A job's analytics, and the points that back its findings (evidence)."""

    report: CheckpointJob
    points: list[Point]
    evidence: dict[str, list[Point]]  # finding rule id -> the points that show it


def epoch(ms: str | float | None) -> datetime | None:
    try:
        return datetime.fromtimestamp(float(ms) / 1000, tz=timezone.utc).replace(tzinfo=None) if ms else None
    except (ValueError, OverflowError, OSError):
        return None


def analyse_checkpoints(
    measures: list[Measure], manifest: Manifest, effective: Effective, paths: dict[int, str]
) -> tuple[CheckpointAnalytics, list[JobAnalysis]]:
    triggers = {}
    for m in measures:
        if m.measures == "checkpoint-trigger" and m.captures.get("job"):
            triggers[(m.captures["job"], _int(m.captures.get("checkpoint")))] = (
                epoch(m.captures.get("epoch_ms")) or m.time
            )
    points = _log_points(measures, triggers, paths)
    named = {p.job for p in points if p.job != UNKNOWN_JOB} | {job for job, _ in triggers}
    only = next(iter(named)) if len(named) == 1 else None  # a REST answer without a path belongs to the only job
    points += [replace(p, job=only) if only and p.job == UNKNOWN_JOB else p for p in _rest_points(manifest)]
    by_job: dict[str, list[Point]] = {job: [] for job, _ in triggers}
    for point in points:  # each job's points and trigger times gathered in one pass: no scan of all per job
        by_job.setdefault(point.job, []).append(point)
    started: dict[str, list[tuple[int, datetime]]] = {}
    for (job, number), at in triggers.items():
        if number is not None and at:
            started.setdefault(job, []).append((number, at))
    analyses = [_job(job, by_job[job], started.get(job, []), effective) for job in sorted(by_job)]
    missing = []
    if not any(p.duration_ms is not None for p in points):
        missing.append(
            "No checkpoint durations in the input: add the JobManager log (its 'Completed checkpoint' and 'expired' "
            "lines) or the REST checkpoint history (/jobs/<id>/checkpoints) to measure them against the timeout and "
            "the interval."
        )
    if points and not any(a.report.timeout for a in analyses):
        missing.append(
            "No checkpoint timeout in the input: add the configuration (flink-conf.yaml / config.yaml), the "
            "JobManager log's start-up lines or REST /jobs/<id>/checkpoints/config; a timeout set in the job's code "
            "shows only in REST."
        )
    return CheckpointAnalytics([a.report for a in analyses], missing), analyses


def _int(text) -> int | None:
    try:
        return int(text)
    except (TypeError, ValueError):
        return None


def _log_points(measures: list[Measure], triggers: dict, paths: dict[int, str]) -> list[Point]:
    """A point per measured end of a checkpoint (or timed step), each made once: a long run has millions."""
    points = []
    for m in measures:
        if m.measures != "storage-close" and m.measures not in STATUS_OF:
            continue
        captures = m.captures
        job = captures.get("job") or m.event_job or UNKNOWN_JOB
        number = _int(captures.get("checkpoint"))
        duration = float(captures["duration_ms"]) if captures.get("duration_ms") else None
        path = paths[m.sid]
        if m.measures == "storage-close":
            start, end = epoch(captures.get("start_epoch_ms")), epoch(captures.get("end_epoch_ms"))
            if duration is None and start and end:
                duration = (end - start).total_seconds() * 1000
            at = end or m.time
            point = Point(
                job, number, at, "failed", duration, None, path, m.line, "storage-close", m.sid, m.host, m.text
            )
            points.append(point)
            continue
        status = STATUS_OF[m.measures]
        started = triggers.get((job, number))
        if duration is None and started and m.time and status != "completed":
            duration = (m.time - started).total_seconds() * 1000  # trigger to failure
        size = _int(captures.get("bytes"))
        points.append(
            Point(job, number, m.time, status, duration, size, path, m.line, "checkpoint", m.sid, m.host, m.text)
        )
    return points


def _rest_points(manifest: Manifest) -> list[Point]:
    """Checkpoint history entries of REST /jobs/<id>/checkpoints answers."""
    points = []
    for source in manifest.sources:
        document = source.document
        if source.kind != "flink-rest-json" or source.derived or not isinstance(document, dict):
            continue
        history = document.get("history")
        if not isinstance(history, list) or "counts" not in document:
            continue
        job = _rest_job(document)
        for entry in history:
            if not isinstance(entry, dict) or entry.get("is_savepoint"):
                continue
            status = REST_STATUS.get(str(entry.get("status", "")).lower())
            if status is None:
                continue
            failure = str(entry.get("failure_message") or "")
            if status == "failed" and "expired" in failure:
                status = "expired"
            ended = entry.get("failure_timestamp") or entry.get("latest_ack_timestamp")
            duration = entry.get("end_to_end_duration")
            size = entry.get("checkpointed_size", entry.get("state_size"))
            points.append(
                Point(
                    job,
                    _int(entry.get("id")),
                    epoch(ended if status != "in_progress" else entry.get("trigger_timestamp")),
                    status,
                    float(duration) if isinstance(duration, (int, float)) and status != "in_progress" else None,
                    int(size) if isinstance(size, (int, float)) else None,
                    f"REST {source.path}",
                    1,
                )
            )
    return points


def _rest_job(document: dict) -> str:
    """REST checkpoint answers do not name the job; a checkpoint path in them does (.../<job id>/chk-N)."""
    import re

    found = re.search(r"/([0-9a-f]{32})/chk-\d+", str(document))
    return found.group(1) if found else UNKNOWN_JOB


def _merge(points: list[Point]) -> list[Point]:
    """One point per checkpoint and stage: a log line over a REST entry, the most telling status first."""
    best: dict[tuple, Point] = {}
    loose = []
    for point in points:
        if point.id is None:
            loose.append(point)
            continue
        key = (point.id, point.stage)
        have = best.get(key)
        rank = (PRECEDENCE[point.status], point.sid is None, point.duration_ms is None)
        if have is None or rank < (PRECEDENCE[have.status], have.sid is None, have.duration_ms is None):
            if have and point.duration_ms is None and have.duration_ms is not None:
                point = replace(point, duration_ms=have.duration_ms)
            best[key] = point
        elif have.duration_ms is None and point.duration_ms is not None:
            best[key] = replace(have, duration_ms=point.duration_ms)
    merged = list(best.values()) + loose
    merged.sort(key=lambda p: (p.time is None, p.time or datetime.min, p.id or 0))
    return merged


def _limits(points, started: list[tuple[int, datetime]], effective: Effective) -> tuple[Limit | None, Limit | None]:
    timeout = _configured(effective, "execution.checkpointing.timeout")
    if timeout is None:
        waits = sorted(p.duration_ms for p in points if p.status == "expired" and p.duration_ms and p.sid is not None)
        if waits:
            first = next(p for p in points if p.status == "expired" and p.duration_ms and p.sid is not None)
            timeout = Limit(
                round(statistics.median(waits), -1),
                f"log: from 'Triggering checkpoint' to 'expired' ({first.file}:{first.line})",
            )
    interval = _configured(effective, "execution.checkpointing.interval")
    if interval is None:
        starts = sorted(started)
        gaps = [
            (b[1] - a[1]).total_seconds() * 1000 for a, b in zip(starts, starts[1:], strict=False) if b[0] == a[0] + 1
        ]
        if len(gaps) >= 2:
            interval = Limit(
                round(statistics.median(gaps), -2), "log: median gap between 'Triggering checkpoint' lines"
            )
    return timeout, interval


def _configured(effective: Effective, key: str) -> Limit | None:
    found = effective.get(key)
    value = duration_ms(found.value) if found else None
    if found is None or value is None or value <= 0:
        return None
    return Limit(value, f"{found.where} ({key})")


def percentile(values: list[float], share: float) -> float:
    """Nearest-rank percentile (a value that occurred)."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def _trend(completed: list[Point], timeout: Limit | None) -> CheckpointTrend | None:
    timed = [(p.time, p.duration_ms) for p in completed if p.time and p.duration_ms is not None]
    if len(timed) < TREND_MIN_POINTS:
        return None
    start = timed[0][0]
    hours = [(t - start).total_seconds() / 3600 for t, _ in timed]
    values = [float(v) for _, v in timed]
    if hours[-1] - hours[0] < TREND_MIN_SPAN_H or len(set(values)) < 2 or len(set(hours)) < 2:
        return None
    slope, intercept = statistics.linear_regression(hours, values)
    if statistics.correlation(hours, values) < TREND_MIN_R or slope <= 0:
        return CheckpointTrend(round(slope, 1), len(timed), None)
    now = intercept + slope * hours[-1]
    to_timeout = (timeout.ms - now) / slope if timeout and timeout.ms > now else None
    return CheckpointTrend(round(slope, 1), len(timed), round(to_timeout, 2) if to_timeout is not None else None)


def _failures(points: list[Point], interval: Limit | None) -> tuple[FailurePattern | None, list[Point]]:
    failed = sorted((p for p in points if p.status in FAILED and p.time), key=lambda p: p.time or datetime.min)
    episodes: list[Point] = []
    for point in failed:
        if not episodes or (point.time - episodes[-1].time).total_seconds() > EPISODE_S:  # type: ignore[operator]
            episodes.append(point)
    if not episodes:
        return None, []
    gaps = [(b.time - a.time).total_seconds() for a, b in zip(episodes, episodes[1:], strict=False)]  # type: ignore[operator]
    periodic, period = False, None
    if len(gaps) >= PERIODIC_MIN_GAPS:
        middle = statistics.median(gaps)
        spread = statistics.median(abs(g - middle) for g in gaps) / middle if middle else 1
        shortest = 2 * interval.ms / 1000 if interval else EPISODE_S
        periodic = spread <= PERIODIC_MAX_SPREAD and middle >= shortest
        period = round(middle, 1) if periodic else None
    return FailurePattern(len(failed), periodic, period, [round(g, 1) for g in gaps]), episodes


def _job(job: str, raw: list[Point], started: list[tuple[int, datetime]], effective: Effective) -> JobAnalysis:
    """One job's analysis from its own points and (checkpoint, trigger time) pairs."""
    points = _merge(raw)
    timeout, interval = _limits(points, started, effective)
    counts: dict[str, int] = {}
    for p in points:
        if p.stage == "checkpoint":
            counts[p.status] = counts.get(p.status, 0) + 1
    completed = [p for p in points if p.status == "completed" and p.duration_ms is not None]
    durations = [p.duration_ms for p in completed if p.duration_ms is not None]
    shares = {"p50": 0.5, "p90": 0.9, "p95": 0.95, "p99": 0.99, "max": 1.0}
    pct = {name: percentile(durations, share) for name, share in shares.items()} if durations else {}
    trend = _trend(completed, timeout)
    failures, episodes = _failures([p for p in points if p.stage == "checkpoint"] or points, interval)
    ended = [p for p in points if p.stage == "checkpoint" and p.duration_ms is not None and p.status != "in_progress"]
    over = [p for p in ended if interval and p.duration_ms > interval.ms]  # type: ignore[operator]
    steps = [p for p in points if p.stage != "checkpoint" and p.duration_ms is not None]
    longest = max(steps, key=lambda p: p.duration_ms or 0) if steps else None
    evidence: dict[str, list[Point]] = {}
    if timeout and pct and pct["p95"] >= NEAR_TIMEOUT * timeout.ms:
        evidence["checkpoint-duration-near-timeout"] = sorted(completed, key=lambda p: -(p.duration_ms or 0))[:5]
    if timeout and longest and (longest.duration_ms or 0) > timeout.ms:
        evidence["checkpoint-step-over-timeout"] = [longest]
    if trend and trend.hours_to_timeout is not None:
        evidence["checkpoint-durations-growing"] = completed[-5:]
    if failures and failures.periodic:
        evidence["checkpoint-failures-periodic"] = episodes
    if over:
        evidence["checkpoint-longer-than-interval"] = over
    report = CheckpointJob(
        job=job,
        series=[_public(p) for p in _series(points)],
        counts=counts,
        timeout=timeout,
        interval=interval,
        percentiles=pct,
        trend=trend,
        failures=failures,
        over_interval=len(over),
        longest_stage_ms=longest.duration_ms if longest else None,
    )
    return JobAnalysis(report, points, {k: [p for p in v if p.sid is not None] for k, v in evidence.items()})


def _series(points: list[Point]) -> list[Point]:
    """The points the report lists: every one, up to SERIES_MAX; past it (a long run checkpoints millions of
    times) every point that did not complete, and the completed ones cut into equal time spans, each kept by its
    shortest and longest: a report of bounded size that still shows every failure, spike and dip. Counts,
    percentiles, trend and findings are taken from every point."""
    if len(points) <= SERIES_MAX:
        return points
    completed = [p for p in points if p.status == "completed" and p.time is not None]
    rest = [p for p in points if p.status != "completed" or p.time is None]
    spans = max(1, (SERIES_MAX - len(rest)) // 2)
    start = completed[0].time if completed else None
    width = (completed[-1].time - start) / spans if completed and start else None  # type: ignore[operator]
    extremes: dict[int, tuple[Point, Point]] = {}
    for point in completed:
        span = min(int((point.time - start) / width), spans - 1) if width else 0  # type: ignore[operator]
        low, high = extremes.get(span, (point, point))
        shorter = (point.duration_ms or 0) < (low.duration_ms or 0)
        longer = (point.duration_ms or 0) > (high.duration_ms or 0)
        extremes[span] = (point if shorter else low, point if longer else high)
    kept = {id(p): p for pair in extremes.values() for p in pair}
    kept.update({id(p): p for p in rest})
    return sorted(kept.values(), key=lambda p: (p.time is None, p.time or datetime.min, p.id or 0))


def _public(p: Point) -> CheckpointPoint:
    size = p.size_bytes
    return CheckpointPoint(p.id, iso(p.time), p.status, p.duration_ms, size, p.file, p.line, p.stage)
