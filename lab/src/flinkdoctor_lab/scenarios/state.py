"""Fault steps for state and restore: savepoints restored into a changed job, damaged savepoints and HA
metadata, RocksDB.

The restore scenarios stop the job with a savepoint (`bin/flink stop --savepointPath`) and resubmit
it with `-s`, changed the way an operator or developer changes a job between two deployments.
"""

from __future__ import annotations

from pathlib import Path

from .base import resubmit, setup_step, step, stop_with_savepoint


@step
def restore_changed(run, args: list[str]) -> None:
    """Savepoint, then restore into the same job with `args` changed; wait until it has FAILED."""
    savepoint = stop_with_savepoint(run)
    resubmit(run, savepoint, *args)
    run.wait_for("the restore to fail", lambda: run.state() in ("FAILED", None), 60)


@step
def restore_damaged(run) -> None:
    """Savepoint, delete its state files but keep _metadata (a cleanup that spared only the metadata)."""
    savepoint = stop_with_savepoint(run)
    sp_dir = run.cluster.tmp / "savepoints" / savepoint.rstrip("/").rsplit("/", 1)[-1]
    removed = [p.name for p in sorted(sp_dir.iterdir()) if p.is_file() and p.name != "_metadata"]
    for name in removed:
        (sp_dir / name).unlink()
    run.note(f"deleted {len(removed)} state file(s) from {sp_dir.name}, kept _metadata: {', '.join(removed)}")
    resubmit(run, savepoint)
    run.wait_for("the restore to fail", lambda: run.state() in ("FAILED", None), 60)


@setup_step
def file_in_the_way(run_dir: Path, path: str) -> None:
    """Make `path` (relative to the run folder) a regular file, so a directory below it cannot be created: a
    mount point that was never mounted and got written to as a file. Made before the cluster starts, as on a
    real host."""
    blocker = run_dir / path
    blocker.parent.mkdir(parents=True, exist_ok=True)
    blocker.write_text("not a directory\n")


@step
def ha_handle_deleted(run) -> None:
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
    run.wait_for(
        "the job's recovery to fail",
        lambda: (
            not run.cluster.alive("jobmanager")
            or run.state() == "FAILED"
            or run.log_has(r"Could not retrieve checkpoint \d+ from state handle")
        ),
        60,
    )
    run.sleep(5)
    if not run.cluster.alive("jobmanager"):
        run.note("the JobManager process has exited")
