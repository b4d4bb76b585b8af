"""Data exchange between TaskManagers, TaskManagers that cannot reach the JobManager, and checkpoint
settings that the exchange topology does not support."""
from __future__ import annotations

import time

from .base import Scenario, base_config as _base

# two TaskManagers x 2 slots, parallelism 2, slots spread over both: the keyBy exchange crosses hosts
SPREAD = {"taskmanager.numberOfTaskSlots": 2, "parallelism.default": 2, "taskmanager.load-balance.mode": "SLOTS",
          "restart-strategy.fixed-delay.attempts": 30, "restart-strategy.fixed-delay.delay": "2s"}

# a host name that does not resolve (a Kubernetes service name used outside the cluster's DNS)
BAD_JM_HOST = "flink-jobmanager"


def _recovered_after(run, t0: float) -> bool:
    if run.state() != "RUNNING":
        return False
    try:
        latest = (run.cluster.get(f"/jobs/{run.job_id}/checkpoints", timeout=3).get("latest") or {})
        return (latest.get("completed") or {}).get("latest_ack_timestamp", 0) / 1000 > t0
    except Exception:
        return False


def _kill_taskmanager(run) -> None:
    run.wait_for("a completed checkpoint", lambda: run.log_has(r"Completed checkpoint \d+ for job"), 40)
    run.snapshot("running")
    run.kill("taskmanager-1")
    t0 = time.time()
    run.wait_for("the job to restart on the remaining TaskManager and complete a checkpoint",
                 lambda: _recovered_after(run, t0), 90)
    run.sleep(3)


def _unreachable_jobmanager(run) -> None:
    # the job asked for 4 slots and got 2 (the runner gave up waiting for all tasks RUNNING after 60 s);
    # the TaskManager that should bring the missing slots is started with a JobManager host name that
    # does not resolve, so it never registers and exits after taskmanager.registration.timeout
    run.snapshot("waiting-for-slots")
    run.note(f"adding a TaskManager whose config.yaml has jobmanager.rpc.address: {BAD_JM_HOST}")
    role = run.cluster.add_taskmanager(config={"jobmanager.rpc.address": BAD_JM_HOST})
    run.wait_for("the new TaskManager to give up registering", lambda: not run.cluster.alive(role), 45)
    run.wait_for("job FAILED (the slot request timed out)", lambda: run.state() in ("FAILED", None), 45)


def _custom_partitioner(run) -> None:
    # an upgrade: the running version is cancelled and the new version, which routes records with
    # partitionCustom, is submitted; the client rejects it (bin/flink's log keeps only the last command)
    run.wait_for("a completed unaligned checkpoint", lambda: run.log_has(r"Completed checkpoint \d+ for job"), 40)
    run.snapshot("running")
    run.note("cancelling the running version")
    run.cluster.flink("cancel", run.job_id, timeout=60)
    run.wait_for("job CANCELED", lambda: run.state() in ("CANCELED", None), 30)
    run.note("submitting the new version, which routes records with partitionCustom (flinkdoctor.lab.NetJob)")
    try:
        run.cluster.submit(run.jar, "--name", "flinkdoctor-lab-routing", "--rate", "1000",
                           main_class="flinkdoctor.lab.NetJob")
        run.note("the new version was accepted")
    except RuntimeError:
        run.note("bin/flink run failed (see the client log)")


SCENARIOS: list[Scenario] = [
    Scenario(
        "remote-taskmanager-lost",
        "two TaskManagers, keyBy exchange across them; kill -9 one TaskManager (a crashed host)",
        lambda v, d: _base(d, **SPREAD),
        ["--rate", "2000", "--keys", "128"],
        _kill_taskmanager,
        [("taskexecutor-0", r"Connection unexpectedly closed by remote task manager|Lost connection to task manager"),
         ("standalonesession", r"switched from state RUNNING to RESTARTING"),
         ("standalonesession", r"switched from state RESTARTING to RUNNING")],
        taskmanagers=2,
    ),
    Scenario(
        "network-host-unreachable",
        f"parallelism 4; the TaskManager added for the missing slots has jobmanager.rpc.address: {BAD_JM_HOST}, "
        "a name that does not resolve",
        lambda v, d: _base(d, **{"parallelism.default": 4, "slot.request.timeout": "90s",
                                 "taskmanager.registration.timeout": "20s", "restart-strategy.type": "none"}),
        ["--rate", "2000", "--keys", "128"],
        _unreachable_jobmanager,
        [("taskexecutor-1", r"Caused by: \[java\.net\.UnknownHostException: " + BAD_JM_HOST),
         ("taskexecutor-1", r"Could not register at the ResourceManager within the specified maximum"),
         ("standalonesession", r"NoResourceAvailableException")],
    ),
    Scenario(
        "unaligned-checkpoint-unsupported",
        "cluster with unaligned checkpoints enabled; the job's new version uses partitionCustom",
        lambda v, d: _base(d, **{"execution.checkpointing.unaligned.enabled": True}),
        ["--rate", "2000", "--keys", "128"],
        _custom_partitioner,
        [("client", r"Unaligned checkpoints are currently not supported for custom partitioners")],
    ),
]
