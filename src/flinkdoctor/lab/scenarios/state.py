"""State and restore: savepoints restored into a changed job, damaged savepoints and HA metadata, RocksDB.

The restore scenarios stop the job with a savepoint (`bin/flink stop --savepointPath`) and resubmit
it with `-s`, changed the way an operator or developer changes a job between two deployments.
"""
from __future__ import annotations

from pathlib import Path

from .base import (Scenario, base_config as _base, healthy as _healthy, resubmit, stop_with_savepoint,
                   until_failed as _until_failed)

STATE_JOB = "flinkdoctor.lab.StateJob"


def _restore_changed(*args: str):
    """Savepoint, then restore into the same job with `args` changed; wait until it has FAILED."""
    def inject(run) -> None:
        savepoint = stop_with_savepoint(run)
        resubmit(run, savepoint, *args, main_class=STATE_JOB)
        run.wait_for("the restore to fail", lambda: run.state() in ("FAILED", None), 60)
    return inject


def _restore_damaged(run) -> None:
    """Savepoint, delete its state files but keep _metadata (a cleanup that spared only the metadata)."""
    savepoint = stop_with_savepoint(run)
    sp_dir = run.cluster.tmp / "savepoints" / savepoint.rstrip("/").rsplit("/", 1)[-1]
    removed = [p.name for p in sorted(sp_dir.iterdir()) if p.is_file() and p.name != "_metadata"]
    for name in removed:
        (sp_dir / name).unlink()
    run.note(f"deleted {len(removed)} state file(s) from {sp_dir.name}, kept _metadata: {', '.join(removed)}")
    resubmit(run, savepoint, main_class=STATE_JOB)
    run.wait_for("the restore to fail", lambda: run.state() in ("FAILED", None), 60)


def _file_in_the_way(run_dir: Path) -> str:
    """A RocksDB local dir that cannot be created: its parent `disk1` is a regular file (a mount point that was
    never mounted and got written to as a file). Made before the cluster starts, as on a real host."""
    blocker = run_dir / "tmp" / "disk1"
    blocker.parent.mkdir(parents=True, exist_ok=True)
    blocker.write_text("not a directory\n")
    return str(blocker / "flink-rocksdb")


def _ha_handle_deleted(run) -> None:
    """ZooKeeper HA: checkpoints complete, the JobManager stops, the completedCheckpoint files under
    high-availability.storageDir are deleted while ZooKeeper still points at them, the JobManager starts again."""
    run.wait_for("three completed checkpoints", lambda: run.log_has(r"Completed checkpoint 3 for job"), 40)
    run.snapshot("running")
    run.note("stopping the JobManager (SIGTERM; HA data is kept)")
    run.cluster.stop("jobmanager")
    handles = sorted((run.cluster.tmp / "ha").rglob("completedCheckpoint*"))
    for p in handles:
        p.unlink()
    run.note(f"deleted {len(handles)} file(s) from high-availability.storageDir: {', '.join(p.name for p in handles)}")
    run.note("starting the JobManager again (bin/jobmanager.sh start)")
    run.cluster.start("jobmanager")
    run.wait_for("the job's recovery to fail",
                 lambda: not run.cluster.alive("jobmanager") or run.state() == "FAILED"
                 or run.log_has(r"Could not retrieve checkpoint \d+ from state handle"), 60)
    run.sleep(5)
    if not run.cluster.alive("jobmanager"):
        run.note("the JobManager process has exited")


SP_CFG = {"restart-strategy.fixed-delay.attempts": 1, "restart-strategy.fixed-delay.delay": "2s"}

SCENARIOS: list[Scenario] = [
    Scenario(
        "max-parallelism-mismatch",
        "savepoint of a job with max parallelism 128, restored after the code sets max parallelism 256",
        lambda v, d: _base(d, **SP_CFG),
        ["--rate", "2000", "--keys", "128", "--max-parallelism", "128"],
        _restore_changed("--max-parallelism", "256"),
        [("standalonesession", r"switched from state RUNNING to FINISHED"),
         ("standalonesession", r"Max parallelism mismatch between checkpoint/savepoint state and new program"),
         ("standalonesession", r"reached terminal state FAILED"),
         ("client", r"Max parallelism mismatch between checkpoint/savepoint state and new program")],
        job_class=STATE_JOB,
    ),
    Scenario(
        "serializer-incompatible",
        "savepoint with keyed ValueState<Long> 'count', restored after the code made it ValueState<String>",
        lambda v, d: _base(d, **SP_CFG),
        ["--rate", "2000", "--keys", "128"],
        _restore_changed("--count-type", "string"),
        [("standalonesession", r"switched from state RUNNING to FINISHED"),
         ("taskexecutor", r"StateMigrationException"),
         ("taskexecutor", r"new state serializer .* must not be incompatible with the old state serializer"),
         ("standalonesession", r"switched from state FAILING to FAILED")],
        job_class=STATE_JOB,
    ),
    Scenario(
        "savepoint-files-missing",
        "savepoint whose state files were deleted (only _metadata kept), then restored",
        lambda v, d: _base(d, **SP_CFG),
        ["--rate", "2000", "--keys", "128", "--payload", "1024"],
        _restore_damaged,
        [("standalonesession", r"switched from state RUNNING to FINISHED"),
         ("taskexecutor", r"Could not restore keyed state backend for"),
         ("taskexecutor", r"FileNotFoundException"),
         ("standalonesession", r"switched from state FAILING to FAILED")],
        job_class=STATE_JOB,
    ),
    Scenario(
        "rocksdb-local-dir-unusable",
        "RocksDB backend with state.backend.rocksdb.localdir under a path that is a file: the dir cannot be created",
        lambda v, d: _base(d, **SP_CFG, **{"state.backend.type": "rocksdb",
                                          "state.backend.rocksdb.localdir": _file_in_the_way(d)}),
        ["--rate", "2000", "--keys", "128"],
        _until_failed(60),
        [("taskexecutor", r"Local DB files directory .* does not exist and cannot be created"),
         ("standalonesession", r"switched from state FAILING to FAILED")],
        job_class=STATE_JOB,
    ),
    Scenario(
        "rocksdb-memory-starved",
        "RocksDB backend with taskmanager.memory.managed.size 32m for 2 slots (16 MiB per slot)",
        lambda v, d: _base(d, **{"state.backend.type": "rocksdb", "taskmanager.memory.managed.size": "32m"}),
        ["--rate", "2000", "--keys", "128"],
        _healthy,
        [("taskexecutor", r"RocksDBStateBackend performance will be poor because of the current Flink memory configuration"),
         r"Completed checkpoint \d+ for job [0-9a-f]{32}"],
        job_class=STATE_JOB,
    ),
    Scenario(
        "ha-checkpoint-handle-deleted",
        "ZooKeeper HA; JobManager stopped, completedCheckpoint files deleted from the HA storage dir, restarted",
        lambda v, d: _base(d, **SP_CFG),
        ["--rate", "2000", "--keys", "128"],
        _ha_handle_deleted,
        [("standalonesession", r"Could not retrieve checkpoint \d+ from state handle under"),
         ("standalonesession", r"FileNotFoundException")],
        zookeeper=True,
        job_class=STATE_JOB,
    ),
]
