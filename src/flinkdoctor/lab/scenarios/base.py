"""What a scenario is, and the pieces most scenarios share (base config, wait-until-failed).

Config keys are the `execution.checkpointing.*` / `state.backend.type` / `restart-strategy.*`
spellings, which Flink 1.20 and 2.x both read (1.20 also still reads the older deprecated keys).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable


def base_config(run_dir: Path, **extra) -> dict:
    cfg = {
        "execution.checkpointing.interval": "2s",
        "state.backend.type": "hashmap",
        "execution.checkpointing.storage": "filesystem",
        "execution.checkpointing.dir": f"file://{run_dir / 'tmp' / 'checkpoints'}",
        "restart-strategy.type": "fixed-delay",
        "restart-strategy.fixed-delay.attempts": 3,
        "restart-strategy.fixed-delay.delay": "2s",
    }
    cfg.update(extra)
    return cfg


@dataclass
class Scenario:
    name: str
    summary: str
    config: Callable[[str, Path], dict]  # (flink version, run dir) -> config.yaml overrides
    job_args: list[str]
    inject: Callable  # (runner.Run) -> None; runs while the job is up
    # regexes the bundle's logs must show; ("taskexecutor", rx) restricts one to files named so
    expect: list = field(default_factory=list)
    zookeeper: bool = False
    job_class: str = "flinkdoctor.lab.LabJob"  # main class in the lab jobs jar
    taskmanagers: int = 1  # TaskManagers started with the cluster (logs taskexecutor-0, -1, ...)


def healthy(run) -> None:
    run.sleep(20, "running healthy for 40s")
    run.snapshot("running")
    run.sleep(20)


def until_failed(timeout: float):
    def inject(run) -> None:
        run.sleep(8)
        run.snapshot("running")
        run.wait_for("job FAILED", lambda: run.state() in ("FAILED", None), timeout)
    return inject


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


def resubmit(run, savepoint: str, *args: str, main_class: str = "flinkdoctor.lab.LabJob") -> None:
    """bin/flink run -d -s <savepoint> with the job's arguments changed by `args`."""
    run.note(f"savepoint {savepoint}; resubmitting with -s and {' '.join(args) or 'the same arguments'}")
    old_job = run.job_id
    try:
        run.job_id = run.cluster.submit(run.jar, *run.job_args, *args, options=("-s", savepoint),
                                        main_class=main_class)
    except RuntimeError:  # the client waits for the JobMaster; a JobManager-side restore failure ends here
        run.note("bin/flink run failed (see the client log); the job is FAILED at the JobManager")
        jobs = run.cluster.get("/jobs/overview")["jobs"]
        run.job_id = max((j for j in jobs if j["jid"] != old_job), key=lambda j: j["start-time"])["jid"]
