"""The watch loop: poll job status, exceptions and checkpoint statistics; on an incident collect a bundle,
diagnose it and emit one JSON line (stdout, and a webhook when given).

A JobManager that stops answering (refused, timed out: it restarts, fails over, or the network is down) is a
state reported once when it begins and once when it ends, never a crash. The loop stops between polls when
`stop` is set (the CLI sets it on SIGINT and SIGTERM); an incident being processed is finished first.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from threading import Event

from ..errors import FlinkdoctorError
from ..safety import outbound
from ..safety.masking import mask
from . import endpoints as ep
from .bundle import stamp, utc_now
from .client import RestClient, RestError, segment
from .collector import DEFAULT_MAX_LOG_BYTES, collect
from .names import safe_name
from .triggers import CoolDown, JobSnapshot, Trigger, assess

INCIDENT_SCHEMA = "flinkdoctor.incident/v1"


@dataclass
class WatchOptions:
    out_dir: Path
    interval: float = 10.0
    cooldown: float = 600.0
    max_log_bytes: int = DEFAULT_MAX_LOG_BYTES
    max_incidents: int | None = None  # stop after this many (tests, one-shot use)


@dataclass
class Watcher:
    client: RestClient
    options: WatchOptions
    diagnose: Callable[[Path], dict]  # bundle -> {"verdict", "root_causes", ...}
    emit: Callable[[dict], None]  # one incident
    say: Callable[[str], None] = lambda message: None  # state changes, for a person (stderr)
    seen: dict[str, JobSnapshot] = field(default_factory=dict)
    timeouts: dict[str, int | None] = field(default_factory=dict)
    reachable: bool | None = None
    incidents: int = 0

    def __post_init__(self):
        self.cooldown = CoolDown(self.options.cooldown)

    def run(self, stop: Event) -> None:
        while not stop.is_set():
            self.poll(stop)
            if self.options.max_incidents is not None and self.incidents >= self.options.max_incidents:
                return
            stop.wait(self.options.interval)

    def poll(self, stop: Event | None = None) -> None:
        """One round: every watched job's snapshot, its triggers, and an incident for each job that has any."""
        try:
            overview, _ = self.client.get_json("/jobs/overview")
        except RestError as err:
            self._reachability(False, err)
            return
        self._reachability(True)
        listed = overview.get("jobs") if isinstance(overview, dict) else None
        jobs = [j for j in listed or [] if isinstance(j, dict) and isinstance(j.get("jid"), str)]
        now_ms = int(time.time() * 1000)
        for gone in set(self.seen) - {j["jid"] for j in jobs}:  # a JobManager restarted without HA forgets jobs
            del self.seen[gone]
        for job in sorted(jobs, key=lambda j: -_int(j.get("last-modification")))[: ep.MAX_JOBS]:
            if job.get("state") not in ep.ACTIVE_STATES:
                self.seen.pop(job["jid"], None)
                continue
            snapshot = self.snapshot(job, now_ms)
            triggers = assess(self.seen.get(snapshot.job_id), snapshot, now_ms, int(self.options.cooldown * 1000))
            self.seen[snapshot.job_id] = snapshot
            if self.cooldown.admit(snapshot.job_id, triggers, time.monotonic()):
                self.incident(snapshot, triggers)
                if self.options.max_incidents is not None and self.incidents >= self.options.max_incidents:
                    return
            if stop is not None and stop.is_set():
                return

    def snapshot(self, job: dict, now_ms: int) -> JobSnapshot:
        jid = job["jid"]
        path = f"/jobs/{segment(jid)}"
        checkpoints = self._get(f"{path}/checkpoints")
        exceptions = self._get(f"{path}/exceptions?maxExceptions=1")
        if jid not in self.timeouts:
            config = self._get(f"{path}/checkpoints/config")
            self.timeouts[jid] = _int(config.get("timeout")) or None if isinstance(config, dict) else None
        counts = checkpoints.get("counts") if isinstance(checkpoints, dict) else None
        latest = (checkpoints.get("latest") or {}).get("completed") if isinstance(checkpoints, dict) else None
        history = checkpoints.get("history") if isinstance(checkpoints, dict) else None
        running = [
            now_ms - _int(h.get("trigger_timestamp"))
            for h in history or []
            if isinstance(h, dict) and h.get("status") == "IN_PROGRESS" and _int(h.get("trigger_timestamp"))
        ]
        return JobSnapshot(
            job_id=jid,
            name=str(job.get("name") or ""),
            state=str(job.get("state") or ""),
            modified_ms=_int(job.get("last-modification")),
            failed_checkpoints=_int(counts.get("failed")) if isinstance(counts, dict) else None,
            latest_exception_ms=_latest_exception(exceptions),
            checkpoint_timeout_ms=self.timeouts.get(jid),
            running_checkpoint_ms=max(running) if running else None,
            last_checkpoint_ms=_int(latest.get("end_to_end_duration")) if isinstance(latest, dict) else None,
            last_checkpoint_id=_int(latest.get("id")) if isinstance(latest, dict) else None,
        )

    def incident(self, job: JobSnapshot, triggers: list[Trigger]) -> None:
        """Collect, diagnose, emit: one JSON line, whatever fails on the way (the failure is in the line)."""
        self.incidents += 1
        began = time.perf_counter()
        line: dict = {
            "schema": INCIDENT_SCHEMA,
            "time": utc_now(),
            "job": {"id": job.job_id, "name": mask(job.name), "state": job.state},
            "triggers": [{"kind": t.kind, "detail": t.detail} for t in triggers],
            "suppressed": self.cooldown.take_suppressed(job.job_id),
        }
        self.say(f"incident: job {job.job_id} {', '.join(t.kind for t in triggers)}; collecting")
        bundle = self.options.out_dir / f"incident-{safe_name(job.job_id)}-{stamp()}.tar.gz"
        try:
            result = collect(self.client, bundle, max_log_bytes=self.options.max_log_bytes, jobs=(job.job_id,))
        except RestError as err:
            line["error"] = f"collect failed: {err}"
            self.emit(line)
            return
        line.update(bundle=str(result.path), collect_seconds=result.seconds, collect_notes=len(result.notes))
        started = time.perf_counter()
        try:
            line.update(self.diagnose(result.path))
        except FlinkdoctorError as err:
            line["error"] = f"diagnosis failed: {mask(str(err))}"
        except Exception as err:  # noqa: BLE001 - one incident's internal error must not end the watch
            line["error"] = f"diagnosis failed: internal error {type(err).__name__}: {mask(str(err))}"
        line["diagnose_seconds"] = round(time.perf_counter() - started, 3)
        line["seconds"] = round(time.perf_counter() - began, 3)  # detection to this line: collect + diagnose
        self.emit(line)

    def _get(self, path: str) -> object:
        try:
            return self.client.get_json(path)[0]
        except RestError:
            return None

    def _reachability(self, ok: bool, err: RestError | None = None) -> None:
        if ok == self.reachable:
            return
        if not ok:
            self.say(f"JobManager not answering ({err.kind if err else 'error'}): {err}; polling on")
        elif self.reachable is False:
            self.say("JobManager answering again")
        self.reachable = ok


def summary(report: dict) -> dict:
    """What an incident line carries of a diagnosis: the verdict and the root causes, best first."""
    return {
        "verdict": report.get("verdict"),
        "flink_version": (report.get("flink_version") or {}).get("version"),
        "root_causes": [
            {k: root.get(k) for k in ("rule", "category", "title", "confidence", "first_seen", "derived") if k in root}
            for root in report.get("root_causes", [])
        ],
    }


def json_line(incident: dict) -> str:
    """One line of JSON, ASCII only: nothing in it can act on a terminal."""
    return outbound.dumps(incident, ensure_ascii=True, sort_keys=False)  # masked: the same text goes to the webhook


def _latest_exception(document: object) -> int | None:
    if not isinstance(document, dict):
        return None
    times = [_int(document.get("timestamp"))]
    history = document.get("exceptionHistory")
    entries = history.get("entries") if isinstance(history, dict) else None
    times += [_int(e.get("timestamp")) for e in entries or [] if isinstance(e, dict)]
    return max(times) if any(times) else 0


def _int(value: object) -> int:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0
