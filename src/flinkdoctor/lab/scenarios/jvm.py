"""JVM and process-resource faults of a TaskManager: Metaspace, direct memory, threads, GC pauses, file
descriptors, disk space, network buffers, and a configuration the TaskManager rejects.

Limits are real and scoped to the one TaskManager process: `prlimit --pid` (dies with the process), a
cgroup of its own for the pids limit, a small tmpfs mounted inside the run folder. Each is undone in a
`finally` of the scenario's own inject step, so nothing outside the run is ever affected.
"""
from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from .base import Scenario, base_config as _base

# When the TaskManager may die, the job must give up quickly instead of waiting 5 min for slots.
_FAIL_FAST = {"slot.request.timeout": "20s", "heartbeat.interval": "2s", "heartbeat.timeout": "10s",
              "restart-strategy.fixed-delay.attempts": 2}


def _until_failed(run, timeout: float) -> None:
    """Wait for the job to fail (or the TaskManager to die and the job to fail after it)."""
    run.wait_for("job FAILED", lambda: run.state() in ("FAILED", None), timeout)
    if not run.cluster.alive("taskmanager"):
        run.note("the TaskManager process has exited")


def _leak_until_failed(timeout: float):
    def inject(run) -> None:
        run.sleep(3)
        run.snapshot("running")
        _until_failed(run, timeout)
    return inject


# -- too many open files: the TaskManager gets the classic 1024 descriptor limit --------------------
def _open_files(run) -> None:
    pid = run.cluster.pids["taskmanager"]
    run.note(f"prlimit --pid {pid} --nofile=1024:1024 (TaskManager has {len(os.listdir(f'/proc/{pid}/fd'))} open)")
    subprocess.run(["prlimit", f"--pid={pid}", "--nofile=1024:1024"], check=True)
    run.snapshot("running")
    _until_failed(run, 90)


# -- no space left: the checkpoint directory sits on a 2 MiB disk -----------------------------------
def _small_disk(run) -> None:
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


def _thread_limit(run) -> None:
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
                        try:
                            (root / "cgroup.procs").write_text(f"{p}\n")
                        except OSError:
                            pass
                time.sleep(0.2)


# -- illegal configuration: the TaskManager is restarted with a memory segment size Flink rejects ----
def _restart_misconfigured(run) -> None:
    run.wait_for("a completed checkpoint", lambda: run.log_has(r"Completed checkpoint \d+ for job"), 40)
    run.snapshot("running")
    run.note("restarting the TaskManager with taskmanager.memory.segment-size: 48kb (conf/taskmanager-1/)")
    run.cluster.stop("taskmanager")
    role = run.cluster.add_taskmanager(config={"taskmanager.memory.segment-size": "48kb"})
    run.wait_for("the new TaskManager to exit", lambda: not run.cluster.alive(role), 60)
    _until_failed(run, 60)


# -- long GC pauses: a 4 GB heap, 3.3 GB of it a cache of small objects that keeps churning ---------------
def _gc_config(version: str, run_dir: Path) -> dict:
    gc_log = run_dir / "log" / "taskmanager-gc.log"
    return _base(run_dir, **{
        "taskmanager.memory.process.size": "5g", "taskmanager.memory.managed.size": "64m",
        "taskmanager.memory.network.min": "64mb", "taskmanager.memory.network.max": "64mb",
        "env.java.opts.taskmanager": f"-Xlog:gc*:file={gc_log}:time,uptime,level,tags",
        "heartbeat.interval": "1s", "heartbeat.timeout": "5s",
        "restart-strategy.fixed-delay.attempts": 5})


def _gc_pauses(run) -> None:
    run.sleep(3)
    run.snapshot("running")
    run.wait_for("the TaskManager's heartbeat to time out",
                 lambda: run.log_has(r"[Hh]eartbeat of TaskManager with id \S+ timed out"), 100)
    run.sleep(5)


SCENARIOS: list[Scenario] = [
    Scenario(
        "direct-oom",
        "user code keeps a 1 MiB direct ByteBuffer per record (task off-heap 0: the JVM's direct limit is Flink's own)",
        lambda v, d: _base(d, **{"restart-strategy.fixed-delay.attempts": 2}),
        ["--rate", "50", "--direct", str(1 << 20)],
        _leak_until_failed(90),
        [r"java\.lang\.OutOfMemoryError: Direct buffer memory", r"switched from state RUNNING to RESTARTING",
         r"switched from state FAILING to FAILED"],
    ),
    Scenario(
        "metaspace-oom",
        "user code compiles 20 classes per record with Janino and keeps them; jvm-metaspace.size 128m",
        lambda v, d: _base(d, **{"taskmanager.memory.jvm-metaspace.size": "128m", **_FAIL_FAST}),
        ["--rate", "20", "--classes", "20"],
        _leak_until_failed(120),
        [r"java\.lang\.OutOfMemoryError: Metaspace", r"switched from state FAILING to FAILED"],
    ),
    Scenario(
        "native-thread-oom",
        "user code starts a thread per record that never ends; the TaskManager's cgroup allows 200 more tasks",
        lambda v, d: _base(d, **_FAIL_FAST),
        ["--rate", "20", "--threads", "1"],
        _thread_limit,
        [r"OutOfMemoryError: unable to create (new )?native thread", r"switched from state FAILING to FAILED"],
    ),
    Scenario(
        "too-many-open-files",
        "user code opens a lookup file per record and never closes it; TaskManager nofile limit 1024 (prlimit)",
        lambda v, d: _base(d, **_FAIL_FAST),
        ["--rate", "40", "--open-files", "1"],
        _open_files,
        [r"Too many open files", r"switched from state FAILING to FAILED"],
    ),
    Scenario(
        "no-space-left",
        "checkpoint directory on a 2 MiB tmpfs, 8 MiB of keyed state; 1 tolerable checkpoint failure",
        lambda v, d: _base(d, **{"execution.checkpointing.interval": "3s",
                                 "execution.checkpointing.tolerable-failed-checkpoints": 1,
                                 "restart-strategy.fixed-delay.attempts": 2}),
        ["--rate", "2000", "--keys", "256", "--payload", "32768"],
        _small_disk,
        [r"No space left on device", r"Exceeded checkpoint tolerable failure threshold",
         r"switched from state FAILING to FAILED"],
    ),
    Scenario(
        "network-buffers",
        "parallelism 8 with an all-to-all keyBy on one TaskManager with 8 slots and 2 MiB of network memory",
        lambda v, d: _base(d, **{"taskmanager.numberOfTaskSlots": 8, "parallelism.default": 8,
                                 "taskmanager.memory.network.min": "2mb", "taskmanager.memory.network.max": "2mb"}),
        ["--rate", "100", "--keys", "128"],
        _leak_until_failed(60),
        [r"Insufficient number of network buffers", r"switched from state FAILING to FAILED"],
    ),
    Scenario(
        "illegal-configuration",
        "the TaskManager is restarted with taskmanager.memory.segment-size: 48kb, which Flink rejects at start-up",
        lambda v, d: _base(d, **_FAIL_FAST),
        ["--rate", "2000", "--keys", "128"],
        _restart_misconfigured,
        [("taskexecutor-1", r"IllegalConfigurationException"), r"NoResourceAvailableException"],
    ),
    Scenario(
        "gc-pause",
        "a 4 GB TaskManager heap, 3.3 GB of it a churning cache of small objects: full GCs of 2-5 s "
        "(GC log on) against heartbeat.timeout 5 s",
        _gc_config,
        ["--rate", "400", "--cache-entries", "20000", "--cache-max", "120000000"],
        _gc_pauses,
        [("gc", r"Pause Full"), ("standalonesession", r"[Hh]eartbeat of TaskManager with id \S+ timed out")],
    ),
]
