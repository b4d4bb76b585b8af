"""The first scenarios: checkpoints, restarts, freezes of each daemon, heap OOM, slots, restore."""
from __future__ import annotations

from .base import (Scenario, base_config as _base, healthy as _healthy, resubmit, stop_with_savepoint,
                   until_failed as _until_failed)


def _checkpoint_timeout(run) -> None:
    run.sleep(5)
    run.snapshot("running")
    run.wait_for("tolerable-failure threshold and failover",
                 lambda: run.log_has(r"Exceeded checkpoint tolerable failure threshold"), 80)
    run.wait_for("job restarted", lambda: run.state() == "RUNNING" and run.log_has(r"RESTARTING to RUNNING"), 30)
    run.sleep(5)


def _incompatible_restore(run) -> None:
    resubmit(run, stop_with_savepoint(run), "--count-uid", "keyed-count-v2")
    run.wait_for("the restore to fail", lambda: run.state() in ("FAILED", None), 60)


def _freeze(role: str, seconds: float):
    def inject(run) -> None:
        run.wait_for("a completed checkpoint", lambda: run.log_has(r"Completed checkpoint \d+ for job"), 40)
        run.snapshot("running")
        run.freeze(role, seconds)
        run.wait_for("recovery (job RUNNING, a new checkpoint completed)",
                     lambda: _recovered(run) or not run.cluster.alive("jobmanager"), 120)
        if not run.cluster.alive("jobmanager"):
            run.note("the JobManager process has exited")
        run.sleep(5)
    return inject


def _recovered(run) -> bool:
    if run.state() != "RUNNING":
        return False
    try:
        cps = run.cluster.get(f"/jobs/{run.job_id}/checkpoints", timeout=3)
        latest = (cps.get("latest") or {}).get("completed") or {}
        return latest.get("latest_ack_timestamp", 0) / 1000 > run.t_unfrozen
    except Exception:
        return False


FREEZE_CFG = {"heartbeat.interval": "2s", "heartbeat.timeout": "10s",
              "restart-strategy.fixed-delay.attempts": 20, "restart-strategy.fixed-delay.delay": "3s"}

SCENARIOS: list[Scenario] = [
    Scenario(
        "healthy",
        "keyed counting job, checkpoints every 2 s, 40 s, no fault",
        lambda v, d: _base(d),
        ["--rate", "2000", "--keys", "128"],
        _healthy,
        [r"Completed checkpoint \d+ for job [0-9a-f]{32}", r"switched from state (CREATED|INITIALIZING) to RUNNING"],
    ),
    Scenario(
        "state-over-memory-limit",
        "JobManager checkpoint storage (5 MiB limit) with 8 MiB of keyed state",
        lambda v, d: _base(d, **{"execution.checkpointing.storage": "jobmanager",
                                 "execution.checkpointing.interval": "3s",
                                 "execution.checkpointing.tolerable-failed-checkpoints": 1,
                                 "restart-strategy.fixed-delay.attempts": 2}),
        ["--rate", "2000", "--keys", "256", "--payload", "32768"],
        _until_failed(120),
        [r"Size of the state is larger than the maximum permitted memory-backed state",
         r"Exceeded checkpoint tolerable failure threshold", r"switched from state FAILING to FAILED"],
    ),
    Scenario(
        "checkpoint-timeout",
        "a slow keyed operator (100 ms/record) behind full buffers, checkpoint timeout 5 s",
        lambda v, d: _base(d, **{"execution.checkpointing.interval": "3s",
                                 "execution.checkpointing.timeout": "5s",
                                 "execution.checkpointing.tolerable-failed-checkpoints": 1,
                                 "restart-strategy.fixed-delay.attempts": 10}),
        ["--rate", "0", "--sleep-ms", "100"],
        _checkpoint_timeout,
        [r"expired before completing", r"Exceeded checkpoint tolerable failure threshold",
         r"switched from state RUNNING to RESTARTING"],
    ),
    Scenario(
        "restart-exhausted",
        "user code throws on every attempt; fixed-delay restart, 3 attempts",
        lambda v, d: _base(d),
        ["--rate", "1000", "--fail-after", "3000"],
        _until_failed(90),
        [r"IllegalStateException: Cannot process record", r"Recovery is suppressed by",
         r"switched from state FAILING to FAILED"],
    ),
    Scenario(
        "taskmanager-freeze",
        "SIGSTOP the TaskManager for 25 s (heartbeat.timeout 10 s), then SIGCONT",
        lambda v, d: _base(d, **FREEZE_CFG),
        ["--rate", "2000", "--keys", "128"],
        _freeze("taskmanager", 25),
        [("standalonesession", r"[Hh]eartbeat of TaskManager with id \S+ timed out"),
         ("taskexecutor", r"[Hh]eartbeat of JobManager with id \S+ timed out")],
    ),
    Scenario(
        "jobmanager-freeze",
        "SIGSTOP the JobManager for 25 s (heartbeat.timeout 10 s), then SIGCONT",
        lambda v, d: _base(d, **FREEZE_CFG),
        ["--rate", "2000", "--keys", "128"],
        _freeze("jobmanager", 25),
        [("taskexecutor", r"[Hh]eartbeat of JobManager with id \S+ timed out"),
         ("taskexecutor", r"[Hh]eartbeat of ResourceManager with id \S+ timed out"),
         ("standalonesession", r"[Hh]eartbeat of TaskManager with id \S+ timed out")],
    ),
    Scenario(
        "zookeeper-freeze",
        "ZooKeeper HA (bin/zookeeper.sh); SIGSTOP ZooKeeper for 25 s past a 6 s session timeout",
        lambda v, d: _base(d, **FREEZE_CFG, **{"high-availability.zookeeper.client.session-timeout": "6000",
                                               "high-availability.zookeeper.client.connection-timeout": "3000"}),
        ["--rate", "2000", "--keys", "128"],
        _freeze("zookeeper", 25),
        [r"State change: SUSPENDED", r"State change: LOST", r"lost leadership|revoked leadership",
         r"reached terminal state SUSPENDED",
         # 1.20 reconnects and recovers the job; 2.x gives up once Curator's retries run out and the
         # JobManager process exits ("Background operation retry gave up" -> fatal error)
         r"State change: RECONNECTED|Fatal error occurred in the cluster entrypoint"],
        zookeeper=True,
    ),
    Scenario(
        "heap-oom",
        "a map keeps 4 MiB per record on the heap (a cache that never evicts); restarts run out",
        lambda v, d: _base(d, **{"restart-strategy.fixed-delay.attempts": 2}),
        ["--rate", "10", "--hoard", str(4 << 20)],
        _until_failed(120),
        [r"java\.lang\.OutOfMemoryError: Java heap space", r"switched from state RUNNING to RESTARTING",
         r"switched from state FAILING to FAILED"],
    ),
    Scenario(
        "heap-oom-exit",
        "the same hoarding map with taskmanager.jvm-exit-on-oom: true; the TaskManager JVM exits",
        lambda v, d: _base(d, **{"taskmanager.jvm-exit-on-oom": True, "slot.request.timeout": "20s",
                                 "heartbeat.interval": "2s", "heartbeat.timeout": "10s",
                                 "restart-strategy.fixed-delay.attempts": 2}),
        ["--rate", "10", "--hoard", str(4 << 20)],
        _until_failed(150),
        [r"java\.lang\.OutOfMemoryError: Java heap space", r"(?i)no longer reachable|Heartbeat of TaskManager",
         r"NoResourceAvailableException"],
    ),
    Scenario(
        "slots-short",
        "parallelism 4 on a TaskManager with 2 slots; slot requests time out after 20 s",
        lambda v, d: _base(d, **{"parallelism.default": 4, "slot.request.timeout": "20s",
                                 "restart-strategy.fixed-delay.attempts": 1}),
        ["--rate", "2000", "--keys", "128"],
        _until_failed(120),
        [r"NoResourceAvailableException", r"switched from state FAILING to FAILED"],
    ),
    Scenario(
        "incompatible-restore",
        "stop with a savepoint, resubmit with the keyed operator's uid changed: its state maps to nothing",
        lambda v, d: _base(d),
        ["--rate", "2000", "--keys", "128"],
        _incompatible_restore,
        [("standalonesession", r"switched from state RUNNING to FINISHED"),
         ("standalonesession", r"Cannot map checkpoint/savepoint state for operator \w+ to the new program"),
         ("standalonesession", r"reached terminal state FAILED"),
         ("client", r"Cannot map checkpoint/savepoint state for operator")],
    ),
]
