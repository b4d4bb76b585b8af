"""What a scenario is, the registry of fault steps that catalogue.yaml names, and the steps most scenarios share.

A scenario's data (config, job arguments, expected log lines) is in catalogue.yaml; what cannot be data (how
the fault is made while the job runs) is a Python function registered here with `@step` and named there.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..runner import Run

# Java package of the lab jobs (jobs/*.java). It stays `flinkdoctor.lab`: the class names appear in the stack
# traces of the recorded bundles and in the rules' real-log cases.
JAVA_PACKAGE = "flinkdoctor.lab"

# Fault steps by name: f(run, **params) runs while the job is up. Setup steps: f(run_dir, **params) runs
# before the cluster starts (a host prepared badly on purpose).
STEPS: dict[str, Callable[..., None]] = {}
SETUP_STEPS: dict[str, Callable[..., None]] = {}


def step(fn: Callable[..., None]) -> Callable[..., None]:
    """Register a fault step under its function name, for catalogue.yaml's `inject:`."""
    STEPS[fn.__name__] = fn
    return fn


def setup_step(fn: Callable[..., None]) -> Callable[..., None]:
    """Register a setup step under its function name, for catalogue.yaml's `setup:`."""
    SETUP_STEPS[fn.__name__] = fn
    return fn


@dataclass(frozen=True)
class Scenario:
    name: str
    summary: str
    config: dict[str, Any]  # the whole config.yaml override (base config included); "{run_dir}" = the run folder
    job_args: list[str]
    inject: Callable[[Run], None]  # a registered step with its parameters bound
    # regexes the bundle's logs must show; ("taskexecutor", rx) restricts one to files named so
    expect: list[str | tuple[str, str]] = field(default_factory=list)
    zookeeper: bool = False
    job_class: str = f"{JAVA_PACKAGE}.LabJob"  # main class in the lab jobs jar
    taskmanagers: int = 1  # TaskManagers started with the cluster (logs taskexecutor-0, -1, ...)
    setup: Callable[[Path], None] | None = None  # runs on the run folder before the cluster starts

    def cluster_config(self, run_dir: Path) -> dict[str, Any]:
        """config.yaml overrides for a run in `run_dir`."""
        return {k: v.replace("{run_dir}", str(run_dir)) if isinstance(v, str) else v for k, v in self.config.items()}


# -- steps several families share ---------------------------------------------------------------------------
@step
def healthy(run) -> None:
    run.sleep(20, "running healthy for 40s")
    run.snapshot("running")
    run.sleep(20)


@step
def until_failed(run, timeout: float) -> None:
    run.sleep(8)
    run.snapshot("running")
    run.wait_for("job FAILED", lambda: run.state() in ("FAILED", None), timeout)


def stop_with_savepoint(run) -> str:
    """After two checkpoints, bin/flink stop --savepointPath; returns the savepoint path."""
    run.wait_for("two completed checkpoints", lambda: run.log_has(r"Completed checkpoint 2 for job"), 40)
    run.snapshot("running")
    run.note("bin/flink stop --savepointPath ...")
    out = run.cluster.flink("stop", "--savepointPath", f"file://{run.cluster.tmp / 'savepoints'}", run.job_id)
    m = re.search(r"Savepoint completed\. Path: (\S+)", out)
    if not m:
        raise RuntimeError(f"no savepoint path in bin/flink stop output:\n{out}")
    return m.group(1)


def resubmit(run, savepoint: str, *args: str) -> None:
    """bin/flink run -d -s <savepoint>: the same job class, with the job's arguments changed by `args`."""
    run.note(f"savepoint {savepoint}; resubmitting with -s and {' '.join(args) or 'the same arguments'}")
    old_job = run.job_id
    try:
        run.job_id = run.cluster.submit(
            run.jar, *run.job_args, *args, options=("-s", savepoint), main_class=run.job_class
        )
    except RuntimeError:  # the client waits for the JobMaster; a JobManager-side restore failure ends here
        run.note("bin/flink run failed (see the client log); the job is FAILED at the JobManager")
        jobs = run.cluster.get("/jobs/overview")["jobs"]
        run.job_id = max((j for j in jobs if j["jid"] != old_job), key=lambda j: j["start-time"])["jid"]
