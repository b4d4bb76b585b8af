"""What a scenario is, and the pieces most scenarios share (base config, wait-until-failed).

Config keys are the `execution.checkpointing.*` / `state.backend.type` / `restart-strategy.*`
spellings, which Flink 1.20 and 2.x both read (1.20 also still reads the older deprecated keys).
"""
from __future__ import annotations

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
