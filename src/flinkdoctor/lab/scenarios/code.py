"""Faults in the user's job code and its dependencies: serialization, missing classes, leaked
threads, functions that ignore cancellation, out-of-order event time.

The job is jobs/CodeJob.java; each `--mode` is a bug the way users write it, and Flink's own
checks (closure cleaner, Kryo, classloaders, the cancellation watchdog,
AscendingTimestampExtractor) produce the failure.
"""
from __future__ import annotations

from .base import Scenario, base_config as _base, until_failed as _until_failed

CODE_JOB = "flinkdoctor.lab.CodeJob"


def _submit_not_serializable(run) -> None:
    """The running version is cancelled and a new version deployed; its map function holds the team's
    non-Serializable HTTP client. (Cancel first: bin/flink rewrites the client log on every call, so the
    failed `run` must be the last call.)"""
    run.sleep(6)
    run.snapshot("running")
    _cancel(run)
    run.wait_for("job CANCELED", lambda: run.state() in ("CANCELED", None), 30)
    run.note("bin/flink run the new version (--mode not-serializable): expected to fail in the client")
    try:
        new_job = run.cluster.submit(run.jar, *run.job_args, "--mode", "not-serializable", main_class=CODE_JOB)
        run.note(f"unexpected: the new version was accepted as job {new_job}")
    except RuntimeError:
        run.note("bin/flink run failed (see the client log); no job is running")
    run.sleep(2)


def _cancel(run) -> None:
    run.note("bin/flink cancel (the operator stops the job)")
    try:
        run.cluster.flink("cancel", run.job_id, timeout=60)
    except Exception as e:
        run.note(f"cancel failed: {e}")


def _leak_after_cancel(run) -> None:
    run.sleep(8)
    run.snapshot("running")
    _cancel(run)
    run.wait_for("the leaked thread to touch the closed classloader",
                 lambda: run.log_has(r"Trying to access closed classloader"), 40)
    run.sleep(2)


def _cancel_stuck(run) -> None:
    run.sleep(8)
    run.snapshot("running")
    _cancel(run)
    run.wait_for("the cancellation watchdog to kill the TaskManager",
                 lambda: not run.cluster.alive("taskmanager"), 60)
    run.wait_for("job CANCELED", lambda: run.state() in ("CANCELED", "FAILED", None), 30)


def _steady(run) -> None:
    run.sleep(12)
    run.snapshot("running")
    run.sleep(12)


SCENARIOS: list[Scenario] = [
    Scenario(
        "kryo-failure",
        "records of a non-POJO class (Kryo fallback); every 5000th holds a shared Collections.unmodifiableList, "
        "which Kryo cannot rebuild after the keyBy shuffle",
        lambda v, d: _base(d),
        ["--mode", "kryo", "--rate", "500"],
        _until_failed(90),
        [r"KryoException", r"switched from state FAILING to FAILED"],
        job_class=CODE_JOB,
    ),
    Scenario(
        "not-serializable",
        "the job is cancelled and a new version whose map function keeps a non-Serializable HTTP client in a "
        "field is submitted; the client rejects it",
        lambda v, d: _base(d),
        ["--mode", "ok", "--rate", "500"],
        _submit_not_serializable,
        [("client", r"is not serializable"), ("client", r"NotSerializableException")],
        job_class=CODE_JOB,
    ),
    Scenario(
        "missing-dependency",
        "open() loads the JDBC driver com.mysql.cj.jdbc.Driver, which the job jar does not bundle",
        lambda v, d: _base(d),
        ["--mode", "missing-driver", "--rate", "500"],
        _until_failed(60),
        [r"ClassNotFoundException: com\.mysql\.cj\.jdbc\.Driver", r"switched from state FAILING to FAILED"],
        job_class=CODE_JOB,
    ),
    Scenario(
        "classloader-leak",
        "open() starts a static settings-reloader thread that is never stopped; the job is cancelled and "
        "the thread keeps using the job's classloader",
        lambda v, d: _base(d),
        ["--mode", "leak-thread", "--rate", "500"],
        _leak_after_cancel,
        [("taskexecutor", r"Trying to access closed classloader"), r"switched from state CANCELLING to CANCELED"],
        job_class=CODE_JOB,
    ),
    Scenario(
        "cancel-stuck",
        "a map retries a dead endpoint forever and swallows interrupts; the job is cancelled, "
        "task.cancellation.timeout 20 s",
        lambda v, d: _base(d, **{"task.cancellation.interval": "5 s", "task.cancellation.timeout": "20 s"}),
        ["--mode", "stuck-sink", "--rate", "500"],
        _cancel_stuck,
        [("taskexecutor", r"did not react to cancelling signal"),
         ("taskexecutor", r"Task did not exit gracefully within")],
        job_class=CODE_JOB,
    ),
    Scenario(
        "timestamps-out-of-order",
        "AscendingTimestampExtractor on input where every 200th record is 5 s late",
        lambda v, d: _base(d),
        ["--mode", "ascending", "--rate", "200", "--late-every", "200", "--late-ms", "5000"],
        _steady,
        [("taskexecutor", r"Timestamp monotony violated")],
        job_class=CODE_JOB,
    ),
]
