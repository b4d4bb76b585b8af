"""A throw-away standalone Flink cluster whose every file, port and process belongs to one run.

Flink's own scripts start the daemons (bin/jobmanager.sh, taskmanager.sh, zookeeper.sh), so the
logs, .out files and command lines are exactly those an operator gets. FLINK_CONF_DIR, FLINK_LOG_DIR
and FLINK_PID_DIR point into the run directory; ports are picked free; the daemons run in their own
session so a Ctrl-C in the terminal reaches us, not them, and we stop them by pid.
"""

from __future__ import annotations

import contextlib
import getpass
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import yaml

from flinkdoctor.sources.classify import flatten_config

# What a REST call raises when the JobManager is down, frozen or restarting (refused, timed out, dropped), or
# answers with something other than what we read; callers treat all of these as "no answer".
REST_ERRORS = (OSError, ValueError, KeyError, TypeError, http.client.HTTPException)

DAEMONS = {"jobmanager": "standalonesession", "taskmanager": "taskexecutor", "zookeeper": "zookeeper"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def base_role(role: str) -> str:
    """ "taskmanager-1" -> "taskmanager": further TaskManagers are keyed taskmanager-1, -2, ..."""
    return role.split("-", 1)[0]


class Cluster:
    """One JobManager + one or more TaskManagers (+ optional ZooKeeper) living in `run_dir`.

    Processes are keyed by role: "jobmanager", "zookeeper", "taskmanager" (the first TaskManager) and
    "taskmanager-1", "taskmanager-2", ... for further ones. Flink's daemon script numbers their logs
    flink-<user>-taskexecutor-<n>-<host>.log by the lines already in its pid file.
    """

    def __init__(self, home: Path, run_dir: Path, overrides: dict, zookeeper: bool = False):
        self.home = Path(home)
        self.dir = Path(run_dir)
        self.conf_dir = self.dir / "conf"
        self.log_dir = self.dir / "log"
        self.tmp = self.dir / "tmp"  # working state, not part of the bundle
        self.pid_dir = self.tmp / "pid"
        self.zookeeper = zookeeper
        self.pids: dict[str, int] = {}
        self._gone_taskmanagers: set[str] = set()  # stopped or killed; their names are not reused
        self.rest_port = free_port()
        self.config = self._config(overrides)

    # -- configuration -------------------------------------------------------------------
    def _config(self, overrides: dict) -> dict:
        shipped = flatten_config(yaml.safe_load((self.home / "conf" / "config.yaml").read_text()) or {})
        java_opts = shipped.get("env.java.opts.all", "")
        cfg = {
            "jobmanager.rpc.address": "localhost",
            "jobmanager.bind-host": "localhost",
            "jobmanager.rpc.port": free_port(),
            "rest.address": "localhost",
            "rest.bind-address": "localhost",
            "rest.port": self.rest_port,
            "taskmanager.host": "localhost",
            "taskmanager.bind-host": "localhost",
            "taskmanager.numberOfTaskSlots": 2,
            "parallelism.default": 1,
            "jobmanager.memory.process.size": "1g",
            "taskmanager.memory.process.size": "1200m",
            "jobmanager.execution.failover-strategy": "region",
            "env.java.opts.all": f"{java_opts} -Djava.io.tmpdir={self.tmp / 'java'}".strip(),
            "env.log.dir": str(self.log_dir),
            "env.pid.dir": str(self.pid_dir),
            "io.tmp.dirs": str(self.tmp / "io"),
            "web.tmpdir": str(self.tmp / "web"),
            "blob.storage.directory": str(self.tmp / "blob"),
        }
        if self.zookeeper:
            self.zk_port = free_port()
            cfg.update(
                {
                    "high-availability.type": "zookeeper",
                    "high-availability.zookeeper.quorum": f"localhost:{self.zk_port}",
                    "high-availability.storageDir": f"file://{self.tmp / 'ha'}",
                    "high-availability.cluster-id": "/flinkdoctor-lab",
                }
            )
        cfg.update(overrides)
        return cfg

    def write_config(self) -> None:
        """conf/ = the distribution's log4j/logback files + our config.yaml (+ zoo.cfg)."""
        self.conf_dir.mkdir(parents=True, exist_ok=True)
        for f in (self.home / "conf").iterdir():
            if f.name.startswith(("log4j", "logback")):
                shutil.copy(f, self.conf_dir / f.name)
        for d in (self.log_dir, self.pid_dir, self.tmp / "java", self.tmp / "io", self.tmp / "web"):
            d.mkdir(parents=True, exist_ok=True)
        text = "# written by flinkdoctor lab\n" + yaml.safe_dump(self.config, sort_keys=False, width=100000)
        (self.conf_dir / "config.yaml").write_text(text)
        if self.zookeeper:
            (self.conf_dir / "zoo.cfg").write_text(
                f"tickTime=1000\ninitLimit=10\nsyncLimit=5\nclientPort={self.zk_port}\ndataDir={self.tmp / 'zk'}\n"
            )

    def env(self) -> dict:
        env = dict(os.environ)
        env.update(
            FLINK_CONF_DIR=str(self.conf_dir),
            FLINK_LOG_DIR=str(self.log_dir),
            FLINK_PID_DIR=str(self.pid_dir),
            FLINK_HOME=str(self.home),
        )
        env.setdefault("USER", getpass.getuser())  # Flink names its log and pid files after it
        env.pop("FLINK_ENV_JAVA_OPTS", None)
        return env

    def write_role_config(self, role: str, overrides: dict) -> Path:
        """conf/<role>/: the cluster's config with `overrides`, for one process configured differently
        (a TaskManager host with its own config.yaml); returns the directory for FLINK_CONF_DIR."""
        conf = self.conf_dir / role
        conf.mkdir(parents=True, exist_ok=True)
        for f in self.conf_dir.iterdir():
            if f.is_file() and f.name.startswith(("log4j", "logback")):
                shutil.copy(f, conf / f.name)
        cfg = {**self.config, **overrides}
        text = "# written by flinkdoctor lab\n" + yaml.safe_dump(cfg, sort_keys=False, width=100000)
        (conf / "config.yaml").write_text(text)
        return conf

    # -- processes -----------------------------------------------------------------------
    def start(self, role: str, *args: str, config: dict | None = None) -> int:
        """Start a daemon with Flink's script and return its JVM pid (from Flink's pid file).

        `config`: overrides for this process only, written to conf/<role>/config.yaml."""
        base = base_role(role)
        script = {"jobmanager": "jobmanager.sh", "taskmanager": "taskmanager.sh", "zookeeper": "zookeeper.sh"}[base]
        env = self.env()
        if config:
            env["FLINK_CONF_DIR"] = str(self.write_role_config(role, config))
        subprocess.run(
            [str(self.home / "bin" / script), "start", *args],
            env=env,
            check=True,
            stdout=subprocess.DEVNULL,
            start_new_session=True,
            timeout=60,
        )
        pid_file = next(self.pid_dir.glob(f"flink-*-{DAEMONS[base]}.pid"))
        pid = int(pid_file.read_text().split()[-1])  # the script appends each new daemon's pid
        self.pids[role] = pid
        return pid

    @property
    def taskmanagers(self) -> list[str]:
        """Roles of the TaskManagers started so far (alive or not), in start order."""
        return sorted(
            (r for r in self.pids if base_role(r) == "taskmanager"),
            key=lambda r: int(r.split("-")[1]) if "-" in r else 0,
        )

    def add_taskmanager(self, config: dict | None = None) -> str:
        """Start one more TaskManager (taskmanager-N, N = how many were started before); returns its role."""
        n = sum(1 for r in self.pids if base_role(r) == "taskmanager") + len(self._gone_taskmanagers)
        role = "taskmanager" if n == 0 else f"taskmanager-{n}"
        self.start(role, config=config)
        return role

    def alive(self, role: str) -> bool:
        pid = self.pids.get(role)
        if pid is None:
            return False
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        try:  # a zombie (exited, not yet reaped) does not count
            return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
        except OSError:
            return False

    def signal(self, role: str, sig: int) -> None:
        os.kill(self.pids[role], sig)

    def stop(self, role: str, grace: float = 20.0) -> None:
        """SIGCONT (it may be frozen), SIGTERM, then SIGKILL after `grace` seconds."""
        pid = self.pids.get(role)
        if pid is None or not self.alive(role):
            self._forget(role)
            return
        for sig in (signal.SIGCONT, signal.SIGTERM):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                break
        deadline = time.time() + grace
        while time.time() < deadline and self.alive(role):
            time.sleep(0.2)
        if self.alive(role):
            os.kill(pid, signal.SIGKILL)
            while self.alive(role):
                time.sleep(0.1)
        self._forget(role)

    def _forget(self, role: str) -> None:
        if self.pids.pop(role, None) is not None and base_role(role) == "taskmanager":
            self._gone_taskmanagers.add(role)

    def stop_all(self) -> None:
        """Stop in the order stop-cluster.sh uses: TaskManagers, JobManager, then ZooKeeper."""
        for role in (*self.taskmanagers, "jobmanager", "zookeeper"):
            with contextlib.suppress(OSError):  # keep stopping the others
                self.stop(role)

    # -- REST and client -----------------------------------------------------------------
    @property
    def rest_url(self) -> str:
        return f"http://localhost:{self.rest_port}"

    def get(self, path: str, timeout: float = 5.0):
        with urllib.request.urlopen(self.rest_url + path, timeout=timeout) as r:
            return json.loads(r.read())

    def wait_ready(self, timeout: float = 120.0, slots: int = 1, taskmanagers: int = 1) -> None:
        """Wait until the REST API answers and `taskmanagers` TaskManagers have registered `slots` slots."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            for role in self.pids:
                if not self.alive(role):
                    raise RuntimeError(f"{role} died during startup; see {self.log_dir}")
            try:
                overview = self.get("/overview")
                if overview.get("slots-total", 0) >= slots and overview.get("taskmanagers", 0) >= taskmanagers:
                    return
            except REST_ERRORS:
                pass
            time.sleep(1)
        raise TimeoutError(f"cluster not ready after {timeout:.0f}s; see {self.log_dir}")

    def flink(self, *args: str, timeout: float = 120) -> str:
        """Run bin/flink against this cluster (it logs to log/flink-*-client-*.log)."""
        res = subprocess.run(
            [str(self.home / "bin" / "flink"), *args],
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=timeout,
            start_new_session=True,
        )
        if res.returncode != 0:
            raise RuntimeError(f"bin/flink {' '.join(args)} failed:\n{res.stdout}\n{res.stderr}")
        return res.stdout

    def submit(self, jar: Path, *args: str, main_class: str, options: tuple[str, ...] = ()) -> str:
        """bin/flink run -d [options] -c main_class jar args; returns the job id the client printed."""
        out = self.flink("run", "-d", *options, "-c", main_class, str(jar), *args)
        m = re.search(r"JobID ([0-9a-f]{32})", out)
        if not m:
            raise RuntimeError(f"no JobID in bin/flink output:\n{out}")
        return m.group(1)

    def job_state(self, job_id: str) -> str | None:
        try:
            return self.get(f"/jobs/{job_id}", timeout=3)["state"]
        except REST_ERRORS:
            return None
