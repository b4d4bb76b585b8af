"""Fault steps for JVM and process-resource faults of a TaskManager: Metaspace, direct memory, threads, GC
pauses, file descriptors, disk space, network buffers, and a configuration the TaskManager rejects.

Limits are real and scoped to the one TaskManager process: `prlimit --pid` (dies with the process), a
cgroup of its own for the pids limit, a small tmpfs mounted inside the run folder. Each is undone in a
`finally` of the scenario's own inject step, so nothing outside the run is ever affected.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from pathlib import Path

from .base import step


def _until_failed(run, timeout: float) -> None:
    """Wait for the job to fail (or the TaskManager to die and the job to fail after it)."""
    run.wait_for("job FAILED", lambda: run.state() in ("FAILED", None), timeout)
    if not run.cluster.alive("taskmanager"):
        run.note("the TaskManager process has exited")


@step
def leak_until_failed(run, timeout: float) -> None:
    run.sleep(3)
    run.snapshot("running")
    _until_failed(run, timeout)


# -- too many open files: the TaskManager gets the classic 1024 descriptor limit --------------------
@step
def open_files(run) -> None:
    pid = run.cluster.pids["taskmanager"]
    run.note(f"prlimit --pid {pid} --nofile=1024:1024 (TaskManager has {len(os.listdir(f'/proc/{pid}/fd'))} open)")
    subprocess.run(["prlimit", f"--pid={pid}", "--nofile=1024:1024"], check=True)
    run.snapshot("running")
    _until_failed(run, 90)


# -- no space left: the checkpoint directory sits on a 2 MiB disk -----------------------------------
@step
def small_disk(run) -> None:
    target = run.cluster.tmp / "checkpoints"
    target.mkdir(parents=True, exist_ok=True)
    run.note(f"mount -t tmpfs -o size=2m tmpfs {target} (the checkpoint directory's disk)")
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m,mode=0755", "tmpfs", str(target)], check=True)
    try:
        run.snapshot("running")
        _until_failed(run, 90)
        run.cancel()  # no checkpoint may be writing when the disk goes away
    finally:
        if subprocess.run(["umount", str(target)]).returncode != 0:
            subprocess.run(["umount", "--lazy", str(target)], check=False)
        run.note(f"umount {target}")


# -- native threads: a pids limit (cgroup pids.max) on the TaskManager alone ------------------------
def _pids_root() -> Path:
    """The pids controller's root: cgroup v1 (/sys/fs/cgroup/pids) or the v2 unified hierarchy."""
    v1 = Path("/sys/fs/cgroup/pids")
    if (v1 / "cgroup.procs").exists():
        return v1
    v2 = Path("/sys/fs/cgroup")
    if "pids" in (v2 / "cgroup.subtree_control").read_text(errors="replace").split():
        return v2
    raise RuntimeError("no cgroup pids controller to limit the TaskManager's threads with")


@step
def thread_limit(run) -> None:
    pid = run.cluster.pids["taskmanager"]
    root = _pids_root()
    group = root / f"flinkdoctor-lab-{pid}"
    group.mkdir()
    try:
        threads = len(os.listdir(f"/proc/{pid}/task"))
        limit = threads + 200
        (group / "pids.max").write_text(f"{limit}\n")
        (group / "cgroup.procs").write_text(f"{pid}\n")
        run.note(f"TaskManager (pid {pid}, {threads} threads) moved to cgroup {group} with pids.max {limit}")
        run.snapshot("running")
        _until_failed(run, 90)
        run.snapshot("failed")
        run.cancel()
        run.note("stopping the TaskManager before its cgroup is removed")
        run.cluster.stop("taskmanager")
    finally:
        for _ in range(50):
            try:
                group.rmdir()
                break
            except OSError:  # still has the process: stop_all kills it; remove what we can
                if (group / "cgroup.procs").read_text().strip():
                    for p in (group / "cgroup.procs").read_text().split():
                        with contextlib.suppress(OSError):
                            (root / "cgroup.procs").write_text(f"{p}\n")
                time.sleep(0.2)


# -- illegal configuration: the TaskManager is restarted with a memory segment size Flink rejects ----
@step
def restart_misconfigured(run) -> None:
    run.wait_for("a completed checkpoint", lambda: run.log_has(r"Completed checkpoint \d+ for job"), 40)
    run.snapshot("running")
    run.note("restarting the TaskManager with taskmanager.memory.segment-size: 48kb (conf/taskmanager-1/)")
    run.cluster.stop("taskmanager")
    role = run.cluster.add_taskmanager(config={"taskmanager.memory.segment-size": "48kb"})
    run.wait_for("the new TaskManager to exit", lambda: not run.cluster.alive(role), 60)
    _until_failed(run, 60)


# -- long GC pauses: a 4 GB heap, 3.3 GB of it a cache of small objects that keeps churning ---------------
@step
def gc_pauses(run) -> None:
    run.sleep(3)
    run.snapshot("running")
    run.wait_for(
        "the TaskManager's heartbeat to time out",
        lambda: run.log_has(r"[Hh]eartbeat of TaskManager with id \S+ timed out"),
        100,
    )
    run.sleep(5)
