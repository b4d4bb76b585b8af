"""What the analytics measure: checkpoint series and the configuration audit, as the report carries them."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone

from ..knowledge.vocabulary import CheckpointStatus, Severity


def iso(time: datetime | None) -> str | None:
    if time is None:
        return None
    if time.tzinfo is None:  # (UTC already: a session cluster's report has 100,000 jobs' points)
        return time.isoformat(timespec="milliseconds") + "Z"
    return time.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True, slots=True)
class CheckpointPoint:
    """One checkpoint (or one timed step of it) as the input shows it."""

    id: int | None
    time: str | None  # when it ended (completed, expired, failed, declined) or, for `in_progress`, was triggered
    status: CheckpointStatus
    duration_ms: float | None  # end to end (trigger to completion or failure); for a `stage` the step's own time
    size_bytes: int | None
    file: str  # where it was read: a log line or a REST document
    line: int
    stage: str = "checkpoint"  # checkpoint (end to end), or a step timed by a TaskManager / HDFS line: storage-close


@dataclass(frozen=True, slots=True)
class Limit:
    """A configured limit (timeout, interval) and where its value came from."""

    ms: float
    source: str  # e.g. "config.yaml: execution.checkpointing.timeout", "jobmanager.log:12", "REST ...", "default"


@dataclass(frozen=True, slots=True)
class CheckpointTrend:
    """Least-squares growth of completed durations over time; None fields when it cannot be said."""

    growth_ms_per_hour: float
    points: int
    hours_to_timeout: float | None  # at this rate, when the timeout is reached (None: not growing, or no timeout)


@dataclass(frozen=True, slots=True)
class FailurePattern:
    """Failure times of checkpoints (expired, declined, failed) and whether they recur at a steady period."""

    failures: int
    periodic: bool
    period_s: float | None  # the dominant gap between failures (median), when periodic
    gaps_s: list[float]  # every gap between consecutive failures, seconds


@dataclass(frozen=True, slots=True)
class CheckpointJob:
    """The checkpoint analytics of one job."""

    job: str  # the job id (or "unknown job" when the lines name none)
    series: list[CheckpointPoint]  # time order; one per checkpoint and stage, not a sample (charts thin it)
    counts: dict[str, int]  # per status
    timeout: Limit | None
    interval: Limit | None
    percentiles: dict[str, float]  # p50, p90, p95, p99, max of completed end-to-end durations (ms)
    trend: CheckpointTrend | None
    failures: FailurePattern | None
    over_interval: int  # completed checkpoints that took longer than the interval (they pile up)
    longest_stage_ms: float | None  # the longest timed step (storage-close) seen, e.g. one HDFS close
    ended: int = 0  # checkpoints that ended with a duration: a long run's series shows only some of them

    @property
    def timeout_ms(self) -> float | None:
        return self.timeout.ms if self.timeout else None

    @property
    def interval_ms(self) -> float | None:
        return self.interval.ms if self.interval else None


@dataclass(frozen=True)
class CheckpointAnalytics:
    jobs: list[CheckpointJob]
    missing: list[str] = field(default_factory=list)  # what could not be measured, and which input would show it


@dataclass(frozen=True)
class ConfigSetting:
    """One effective setting: its value as Flink applied it (later sources win) and every place it was set."""

    key: str
    value: str
    source: str  # where the effective value came from: "flink-conf.yaml:3", "jobmanager.log:40", "REST ...", "default"
    overridden: list[str] = field(default_factory=list)  # earlier places that set it to something else ("file: value")
    severity: Severity | None = None  # None: fine
    note: str = ""  # why it is risky
    suggested_key: str | None = None  # the key to use on this version (for a renamed or removed key)
    rule: str | None = None  # the finding's rule id, when it is risky


@dataclass(frozen=True)
class ConfigAudit:
    version: str | None
    settings: list[ConfigSetting]  # every effective setting read, risky ones first; masked values
    missing: list[str] = field(default_factory=list)  # what the audit could not see, and which input would show it

    @property
    def risky(self) -> list[ConfigSetting]:
        return [s for s in self.settings if s.severity]
