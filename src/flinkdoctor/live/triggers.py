"""When a poll shows an incident: job state, new exceptions, failed or slow checkpoints. Pure functions over what
two successive polls saw, so every rule here is testable without a cluster.

Severity orders the triggers; within a job's cool-down only a more severe trigger makes a new incident (a slow
checkpoint first, then the checkpoint failing, then the job restarting, then failing for good: each escalation is
reported once, repeats are counted, not reported).
"""

from __future__ import annotations

from dataclasses import dataclass, field

SEVERITY = {
    "checkpoint-slow": 1,
    "checkpoint-failed": 2,
    "new-exception": 3,
    "job-restarting": 3,
    "job-failing": 3,
    "job-failed": 4,
}
SLOW_RATIO = 0.8  # a checkpoint running longer than this share of its timeout is about to expire


@dataclass(frozen=True)
class JobSnapshot:
    """One job as a poll saw it (None: the REST API did not say)."""

    job_id: str
    name: str
    state: str
    modified_ms: int = 0  # last-modification of /jobs/overview
    failed_checkpoints: int | None = None
    latest_exception_ms: int | None = None
    checkpoint_timeout_ms: int | None = None
    running_checkpoint_ms: int | None = None  # age of the oldest checkpoint in progress
    last_checkpoint_ms: int | None = None  # duration of the latest completed checkpoint
    last_checkpoint_id: int | None = None


@dataclass(frozen=True)
class Trigger:
    kind: str
    detail: str

    @property
    def severity(self) -> int:
        return SEVERITY[self.kind]


def assess(previous: JobSnapshot | None, now: JobSnapshot, now_ms: int, recent_ms: int) -> list[Trigger]:
    """What changed for the worse since `previous` (None: first sight of the job; only what happened within
    `recent_ms` counts then, so starting a watcher does not report old failures)."""
    found = []
    if now.state in ("FAILING", "RESTARTING") and (previous is None or previous.state != now.state):
        found.append(Trigger(f"job-{now.state.lower()}", f"job switched to {now.state}"))
    if now.state == "FAILED" and (
        (previous is None and now_ms - now.modified_ms <= recent_ms) or (previous and previous.state != "FAILED")
    ):
        found.append(Trigger("job-failed", "job switched to FAILED"))
    if previous is not None:
        if _grew(previous.latest_exception_ms, now.latest_exception_ms):
            found.append(Trigger("new-exception", "a new entry in the job's exception history"))
        if _grew(previous.failed_checkpoints, now.failed_checkpoints):
            count = (now.failed_checkpoints or 0) - (previous.failed_checkpoints or 0)
            found.append(Trigger("checkpoint-failed", f"{count} checkpoint{'s' if count > 1 else ''} failed"))
    slow = _slow(previous, now)
    if slow:
        found.append(Trigger("checkpoint-slow", slow))
    return found


def _grew(before: int | None, after: int | None) -> bool:
    return before is not None and after is not None and after > before


def _slow(previous: JobSnapshot | None, now: JobSnapshot) -> str | None:
    timeout = now.checkpoint_timeout_ms
    if not timeout:
        return None
    if now.running_checkpoint_ms is not None and now.running_checkpoint_ms >= SLOW_RATIO * timeout:
        return f"a checkpoint has run {now.running_checkpoint_ms} ms of its {timeout} ms timeout"
    new_completed = previous is None or previous.last_checkpoint_id != now.last_checkpoint_id
    if new_completed and now.last_checkpoint_ms is not None and now.last_checkpoint_ms >= SLOW_RATIO * timeout:
        return f"the latest checkpoint took {now.last_checkpoint_ms} ms of its {timeout} ms timeout"
    return None


@dataclass
class CoolDown:
    """One incident per job per `seconds`, unless a trigger is more severe than the one last reported."""

    seconds: float
    last: dict[str, tuple[float, int]] = field(default_factory=dict)  # job -> (time, severity) reported
    suppressed: dict[str, int] = field(default_factory=dict)

    def admit(self, job_id: str, triggers: list[Trigger], now: float) -> bool:
        if not triggers:
            return False
        severity = max(t.severity for t in triggers)
        when, reported = self.last.get(job_id, (float("-inf"), 0))
        if now - when < self.seconds and severity <= reported:
            self.suppressed[job_id] = self.suppressed.get(job_id, 0) + 1
            return False
        self.last[job_id] = (now, severity)
        return True

    def take_suppressed(self, job_id: str) -> int:
        return self.suppressed.pop(job_id, 0)
