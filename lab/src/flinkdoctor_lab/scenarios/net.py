"""Fault steps for data exchange between TaskManagers, TaskManagers that cannot reach the JobManager, and
checkpoint settings that the exchange topology does not support."""

from __future__ import annotations

import time

from ..cluster import REST_ERRORS
from .base import JAVA_PACKAGE, step


def _recovered_after(run, t0: float) -> bool:
    if run.state() != "RUNNING":
        return False
    try:
        latest = run.cluster.get(f"/jobs/{run.job_id}/checkpoints", timeout=3).get("latest") or {}
        return (latest.get("completed") or {}).get("latest_ack_timestamp", 0) / 1000 > t0
    except REST_ERRORS:
        return False


@step
def kill_taskmanager(run) -> None:
    run.wait_for("a completed checkpoint", lambda: run.log_has(r"Completed checkpoint \d+ for job"), 40)
    run.snapshot("running")
    run.kill("taskmanager-1")
    t0 = time.time()
    run.wait_for(
        "the job to restart on the remaining TaskManager and complete a checkpoint",
        lambda: _recovered_after(run, t0),
        90,
    )
    run.sleep(3)


@step
def unreachable_jobmanager(run, host: str) -> None:
    # the job asked for 4 slots and got 2 (the runner gave up waiting for all tasks RUNNING after 60 s);
    # the TaskManager that should bring the missing slots is started with a JobManager host name that
    # does not resolve (`host`, e.g. a Kubernetes service name used outside the cluster's DNS), so it never
    # registers and exits after taskmanager.registration.timeout
    run.snapshot("waiting-for-slots")
    run.note(f"adding a TaskManager whose config.yaml has jobmanager.rpc.address: {host}")
    role = run.cluster.add_taskmanager(config={"jobmanager.rpc.address": host})
    run.wait_for("the new TaskManager to give up registering", lambda: not run.cluster.alive(role), 45)
    run.wait_for("job FAILED (the slot request timed out)", lambda: run.state() in ("FAILED", None), 45)


@step
def custom_partitioner(run) -> None:
    # an upgrade: the running version is cancelled and the new version, which routes records with
    # partitionCustom, is submitted; the client rejects it (bin/flink's log keeps only the last command)
    run.wait_for("a completed unaligned checkpoint", lambda: run.log_has(r"Completed checkpoint \d+ for job"), 40)
    run.snapshot("running")
    run.note("cancelling the running version")
    run.cluster.flink("cancel", run.job_id, timeout=60)
    run.wait_for("job CANCELED", lambda: run.state() in ("CANCELED", None), 30)
    run.note(f"submitting the new version, which routes records with partitionCustom ({JAVA_PACKAGE}.NetJob)")
    try:
        run.cluster.submit(
            run.jar, "--name", "flinkdoctor-lab-routing", "--rate", "1000", main_class=f"{JAVA_PACKAGE}.NetJob"
        )
        run.note("the new version was accepted")
    except RuntimeError:
        run.note("bin/flink run failed (see the client log)")
