"""Fault steps of the first scenarios: checkpoints, restarts, freezes of each daemon, restore."""

from __future__ import annotations

from ..cluster import REST_ERRORS
from .base import resubmit, step, stop_with_savepoint


@step
def checkpoint_timeout(run) -> None:
    run.sleep(5)
    run.snapshot("running")
    run.wait_for(
        "tolerable-failure threshold and failover",
        lambda: run.log_has(r"Exceeded checkpoint tolerable failure threshold"),
        80,
    )
    run.wait_for("job restarted", lambda: run.state() == "RUNNING" and run.log_has(r"RESTARTING to RUNNING"), 30)
    run.sleep(5)


@step
def incompatible_restore(run) -> None:
    resubmit(run, stop_with_savepoint(run), "--count-uid", "keyed-count-v2")
    run.wait_for("the restore to fail", lambda: run.state() in ("FAILED", None), 60)


@step
def freeze(run, role: str, seconds: float) -> None:
    run.wait_for("a completed checkpoint", lambda: run.log_has(r"Completed checkpoint \d+ for job"), 40)
    run.snapshot("running")
    run.freeze(role, seconds)
    run.wait_for(
        "recovery (job RUNNING, a new checkpoint completed)",
        lambda: _recovered(run) or not run.cluster.alive("jobmanager"),
        120,
    )
    if not run.cluster.alive("jobmanager"):
        run.note("the JobManager process has exited")
    run.sleep(5)


def _recovered(run) -> bool:
    if run.state() != "RUNNING":
        return False
    try:
        cps = run.cluster.get(f"/jobs/{run.job_id}/checkpoints", timeout=3)
        latest = (cps.get("latest") or {}).get("completed") or {}
        return latest.get("latest_ack_timestamp", 0) / 1000 > run.t_unfrozen
    except REST_ERRORS:
        return False
