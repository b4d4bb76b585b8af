"""Run one scenario end to end: install, cluster up, job, fault, REST snapshots, cluster down, bundle.

Every process started here is stopped by pid in a `finally`, and SIGTERM/SIGHUP are turned into
KeyboardInterrupt so that path runs on those too (Ctrl-C already raises it).
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import Any

from . import LabError, bundle
from .cluster import REST_ERRORS, Cluster
from .install import ensure_flink, ensure_jobs_jar
from .scenarios import SCENARIOS, Scenario


class Run:
    """What a scenario's `inject` step can do: wait, freeze, snapshot, read the logs."""

    def __init__(
        self,
        cluster: Cluster,
        job_id: str,
        jar: Path,
        job_class: str,
        job_args: list[str],
        progress: Callable[[str], None],
    ):
        self.cluster = cluster
        self.job_id = job_id
        self.jar = jar
        self.job_class = job_class
        self.job_args = job_args
        self.progress = progress
        self.rest_log: list[dict] = []
        self.notes: list[str] = []
        self.t_unfrozen = 0.0

    def note(self, msg: str) -> None:
        """Progress for the user, and a timestamped step in lab.json."""
        self.notes.append(f"{bundle._now()} {msg}")
        self.progress(msg)

    def snapshot(self, phase: str) -> None:
        n = len({r["phase"] for r in self.rest_log}) + 1
        dest = self.cluster.dir / "rest" / f"{n:02d}-{phase}"
        for rec in bundle.snapshot(self.cluster.rest_url, self.job_id, dest):
            rec["phase"] = phase
            self.rest_log.append(rec)
        if not any(dest.iterdir()):
            dest.rmdir()

    def sleep(self, seconds: float, msg: str | None = None) -> None:
        if msg:
            self.note(msg)
        time.sleep(seconds)

    def wait_for(self, what: str, cond: Callable[[], bool], timeout: float) -> bool:
        """Poll `cond` once a second; False (not an error) on timeout: the logs still tell the story."""
        self.note(f"waiting for {what} (up to {timeout:.0f}s)")
        deadline = time.time() + timeout
        while time.time() < deadline:
            if cond():
                return True
            time.sleep(1)
        self.note(f"gave up waiting for {what}")
        return False

    def state(self) -> str | None:
        return self.cluster.job_state(self.job_id)

    def log_has(self, pattern: str) -> bool:
        rx = re.compile(pattern)
        for f in self.cluster.log_dir.glob("*.log"):
            with open(f, errors="replace") as fh:
                if any(rx.search(line) for line in fh):
                    return True
        return False

    def freeze(self, role: str, seconds: float) -> None:
        """SIGSTOP a daemon (a long GC pause or host stall, as the JVM sees it), then SIGCONT."""
        self.note(f"SIGSTOP {role} (pid {self.cluster.pids[role]}) for {seconds:.0f}s")
        self.cluster.signal(role, signal.SIGSTOP)
        until = time.time() + seconds
        try:
            time.sleep(seconds / 2)
            self.snapshot(f"{role}-frozen")
            time.sleep(max(0.0, until - time.time()))
        finally:
            self.cluster.signal(role, signal.SIGCONT)
            self.t_unfrozen = time.time()
        self.note(f"SIGCONT {role}")

    def kill(self, role: str) -> None:
        """SIGKILL a daemon: a crashed host, an OOM-killed container, a deleted pod (no shutdown at all)."""
        self.note(f"SIGKILL {role} (pid {self.cluster.pids[role]})")
        self.cluster.signal(role, signal.SIGKILL)

    def cancel(self) -> None:
        if self.state() in ("RUNNING", "RESTARTING", "CREATED", "INITIALIZING"):
            self.note("cancelling the job")
            try:
                self.cluster.flink("cancel", self.job_id, timeout=60)
            except (RuntimeError, OSError, subprocess.SubprocessError) as e:
                self.note(f"cancel failed: {e}")
            self.wait_for("job CANCELED", lambda: self.state() in ("CANCELED", "FAILED", None), 30)


@contextmanager
def _signals_raise():
    """Make SIGTERM and SIGHUP unwind like Ctrl-C so the finally block stops the cluster."""

    def handler(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    old = {s: signal.signal(s, handler) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def _tasks_running(cluster: Cluster, job_id: str) -> bool:
    try:
        job = cluster.get(f"/jobs/{job_id}", timeout=3)
    except REST_ERRORS:
        return False
    return job["state"] == "RUNNING" and all(v["status"] == "RUNNING" for v in job["vertices"])


def check_expectations(run_dir: Path, scenario: Scenario) -> list[dict]:
    """For each regex the scenario promises, the first line of the bundle's logs that shows it."""
    files = sorted((run_dir / "log").glob("*"))
    results = []
    for exp in scenario.expect:
        where, rx = exp if isinstance(exp, tuple) else ("", exp)
        hit = {"pattern": rx, "in": where or "any", "found": False}
        pat = re.compile(rx)
        for f in (f for f in files if where in f.name):
            with open(f, errors="replace") as fh:
                for i, line in enumerate(fh, 1):
                    if pat.search(line):
                        hit.update(found=True, file=f"log/{f.name}", line=i, text=line.rstrip("\n")[:400])
                        break
            if hit["found"]:
                break
        results.append(hit)
    return results


def run_scenario(
    name: str,
    version: str,
    out: Path,
    tar: bool = False,
    progress: Callable[[str], None] = print,
    while_up: Callable[[Run], AbstractContextManager] | None = None,
) -> dict:
    """Run scenario `name` on Flink `version`; return lab.json's content (with 'bundle' = path).

    `while_up(run)`: a context manager entered once the job is submitted and left after the fault (before the job
    is cancelled and the cluster stopped), for tests that watch or collect from the live cluster meanwhile.

    Raises LabError when Flink or the jobs jar cannot be prepared, or when the run fails (after it has
    stopped every process and written the partial bundle)."""
    scenario = SCENARIOS[name]
    started = time.time()
    try:
        home = ensure_flink(version, progress)
        jar = ensure_jobs_jar(version, progress)
    except (OSError, subprocess.SubprocessError, RuntimeError) as e:
        raise LabError(f"cannot prepare Flink {version} and the lab jobs: {e}") from e
    run_dir = Path(out).resolve() / f"{name}-{version}-{time.strftime('%Y%m%d-%H%M%S')}"
    if scenario.setup:
        scenario.setup(run_dir)
    cluster = Cluster(home, run_dir, scenario.cluster_config(run_dir), zookeeper=scenario.zookeeper)
    cluster.write_config()
    meta: dict[str, Any] = {
        "schema": "flinkdoctor.lab/v1",
        "scenario": name,
        "summary": scenario.summary,
        "flink_version": version,
        "started": bundle._now(),
        "job_args": scenario.job_args,
    }
    run = None
    error = None
    try:
        with _signals_raise():
            if scenario.zookeeper:
                progress("starting ZooKeeper (bin/zookeeper.sh)")
                cluster.start("zookeeper", "1")
                time.sleep(3)
            n_tm = scenario.taskmanagers
            progress(f"starting JobManager and {n_tm} TaskManager{'s' if n_tm > 1 else ''}")
            cluster.start("jobmanager")
            for _ in range(n_tm):
                cluster.add_taskmanager()
            cluster.wait_ready(taskmanagers=n_tm)
            progress(f"cluster up, REST at {cluster.rest_url}; submitting the job")
            job_args = ["--name", f"flinkdoctor-lab-{name}", *scenario.job_args]
            job_id = cluster.submit(jar, *job_args, main_class=scenario.job_class)
            run = Run(cluster, job_id, jar, scenario.job_class, job_args, progress)
            run.note(f"job {job_id} submitted")
            # a job that fails while its tasks start (a restore, an open() that throws) never gets there
            run.wait_for(
                "all tasks RUNNING (or the job failing)",
                lambda: (
                    _tasks_running(cluster, job_id) or cluster.job_state(job_id) in ("FAILING", "FAILED", "RESTARTING")
                ),
                60,
            )
            with while_up(run) if while_up else nullcontext():
                scenario.inject(run)
                run.snapshot("end")
            run.cancel()
    except Exception as e:  # noqa: BLE001 (any failure: keep what Flink wrote; Ctrl-C just stops)
        error = f"{type(e).__name__}: {e}"
        progress(f"error: {error}")
    finally:
        progress("stopping every process this run started")
        cluster.stop_all()
    meta.update(
        finished=bundle._now(),
        seconds=round(time.time() - started, 1),
        error=error,
        job_id=run and run.job_id,
        final_state=None,
        steps=run.notes if run else [],
        rest=run.rest_log if run else [],
    )
    final = [r for r in meta["rest"] if r["path"] == f"/jobs/{meta['job_id']}" and r.get("status") == 200]
    if final:
        meta["final_state"] = json.loads((run_dir / "rest" / final[-1]["file"]).read_text())["state"]
    meta["expectations"] = check_expectations(run_dir, scenario)
    meta["bundle"] = str(bundle.finish(run_dir, {k: v for k, v in meta.items() if k != "bundle"}, tar))
    if error:
        raise LabError(f"{name} on Flink {version} failed: {error}; partial bundle: {meta['bundle']}")
    return meta
