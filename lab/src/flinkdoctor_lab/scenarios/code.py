"""Fault steps for bugs in the user's job code and its dependencies: serialization, missing classes, leaked
threads, functions that ignore cancellation, out-of-order event time.

The job is jobs/CodeJob.java; each `--mode` is a bug the way users write it, and Flink's own
checks (closure cleaner, Kryo, classloaders, the cancellation watchdog,
AscendingTimestampExtractor) produce the failure.
"""

from __future__ import annotations

import subprocess

from .base import step


@step
def submit_not_serializable(run) -> None:
    """The running version is cancelled and a new version deployed; its map function holds the team's
    non-Serializable HTTP client. (Cancel first: bin/flink rewrites the client log on every call, so the
    failed `run` must be the last call.)"""
    run.sleep(6)
    run.snapshot("running")
    _cancel(run)
    run.wait_for("job CANCELED", lambda: run.state() in ("CANCELED", None), 30)
    run.note("bin/flink run the new version (--mode not-serializable): expected to fail in the client")
    try:
        new_job = run.cluster.submit(run.jar, *run.job_args, "--mode", "not-serializable", main_class=run.job_class)
        run.note(f"unexpected: the new version was accepted as job {new_job}")
    except RuntimeError:
        run.note("bin/flink run failed (see the client log); no job is running")
    run.sleep(2)


def _cancel(run) -> None:
    run.note("bin/flink cancel (the operator stops the job)")
    try:
        run.cluster.flink("cancel", run.job_id, timeout=60)
    except (RuntimeError, OSError, subprocess.SubprocessError) as e:
        run.note(f"cancel failed: {e}")


@step
def leak_after_cancel(run) -> None:
    run.sleep(8)
    run.snapshot("running")
    _cancel(run)
    run.wait_for(
        "the leaked thread to touch the closed classloader",
        lambda: run.log_has(r"Trying to access closed classloader"),
        40,
    )
    run.sleep(2)


@step
def cancel_stuck(run) -> None:
    run.sleep(8)
    run.snapshot("running")
    _cancel(run)
    run.wait_for("the cancellation watchdog to kill the TaskManager", lambda: not run.cluster.alive("taskmanager"), 60)
    run.wait_for("job CANCELED", lambda: run.state() in ("CANCELED", "FAILED", None), 30)


@step
def steady(run) -> None:
    run.sleep(12)
    run.snapshot("running")
    run.sleep(12)
