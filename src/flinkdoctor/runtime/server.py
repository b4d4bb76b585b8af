"""The warm path: one long-running Spark Connect server that `diagnose` attaches to instead of starting Spark.

PySpark 4 ships the server (spark-connect jar) and the client; starting Spark and its Python workers is most of
a small bundle's time, and a client attaches in well under a second. `flinkdoctor server start` runs the server
in the background on this machine (local[*], the same settings as a cold session) and records its process, port
and one Spark Connect session id in a state file; `diagnose` uses it while it runs, or any server named with
`--remote sc://host:port`.

Every diagnose attaches to that one session, which the server keeps for good: a new session would start new
Python workers (Spark Connect keeps each session's workers apart), about a second of every run. The session is
replaced when flinkdoctor's code changes (its workers hold the modules they imported) or a client closed it.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import TypedDict

from ..errors import UsageError
from .userstate import content_key, state_dir

DEFAULT_PORT = 15002


class ServerState(TypedDict):
    """What the state file records of the running server."""

    pid: int
    port: int
    url: str  # sc://localhost:port
    session: str  # the shared Spark Connect session's id
    code: str  # content_key() of the code the session's workers imported
    log: str  # the server's own output


CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
START_TIMEOUT_S = 120


def state_file() -> Path:
    return state_dir() / "server.json"


def status() -> ServerState | None:
    """The running server's {pid, port, url, session, code, log}, or None (a stale state file is removed)."""
    path = state_file()
    try:
        state: ServerState = json.loads(path.read_text("utf-8"))  # checked by use: a bad file is no server
        os.kill(int(state["pid"]), 0)
    except (OSError, ValueError, KeyError, TypeError):
        path.unlink(missing_ok=True)
        return None
    return state if _listening(int(state["port"])) else None


def running_url() -> str | None:
    """The running server's address with the shared session, sc://localhost:port/;session_id=...; a new session
    when flinkdoctor's code changed since (the session's Python workers would still run the old modules)."""
    state = status()
    if not state:
        return None
    if state.get("code") != content_key(()):
        state = _new_session(state)
    return f"{state['url']}/;session_id={state['session']}"


def renew_session() -> str | None:
    """A new shared session, when the recorded one was closed (a client stopped it): the URL to use now."""
    state = status()
    if not state:
        return None
    state = _new_session(state)
    return f"{state['url']}/;session_id={state['session']}"


def _new_session(state: ServerState) -> ServerState:
    state = {**state, "session": str(uuid.uuid4()), "code": content_key(())}
    state_file().write_text(json.dumps(state), "utf-8")
    return state


def start(port: int = DEFAULT_PORT) -> ServerState:
    """Start the server in the background and wait until it accepts clients."""
    from pyspark.find_spark_home import _find_spark_home

    from .conf import session_conf

    if (state := status()) is not None:
        return state
    if _listening(port):
        raise UsageError(f"port {port} is in use by another program: choose another with --port")
    path = state_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    log = path.with_name("server.log")
    conf = {
        **session_conf(),
        "spark.connect.grpc.binding.port": str(port),
        "spark.connect.grpc.binding.address": "127.0.0.1",
        "spark.connect.session.manager.defaultSessionTimeout": "-1",  # the shared session and its workers stay
    }
    driver_memory = conf.pop("spark.driver.memory")
    command = [
        str(Path(_find_spark_home()) / "bin" / "spark-submit"),
        "--master",
        "local[*]",
        "--driver-memory",
        driver_memory,
        "--class",
        CLASS,
        "--name",
        "flinkdoctor-server",
        *[arg for key, value in conf.items() for arg in ("--conf", f"{key}={value}")],
        "spark-internal",
    ]
    env = {
        **os.environ,
        "PYSPARK_PYTHON": sys.executable,
        "SPARK_LOCAL_IP": os.environ.get("SPARK_LOCAL_IP", "127.0.0.1"),
    }
    with open(log, "ab") as out:
        process = subprocess.Popen(command, stdout=out, stderr=out, env=env, start_new_session=True)
    state = {
        "pid": process.pid,
        "port": port,
        "url": f"sc://localhost:{port}",
        "session": str(uuid.uuid4()),
        "code": content_key(()),
        "log": str(log),
    }
    path.write_text(json.dumps(state), "utf-8")
    deadline = time.monotonic() + START_TIMEOUT_S
    while not _listening(port):
        if process.poll() is not None or time.monotonic() > deadline:
            stop()
            raise UsageError(f"the Spark Connect server did not start; see {log}")
        time.sleep(0.5)
    return state


def stop() -> bool:
    """Stop the server this machine's state file names; False when none runs."""
    path = state_file()
    try:
        pid = int(json.loads(path.read_text("utf-8"))["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return False
    path.unlink(missing_ok=True)
    try:
        os.killpg(pid, signal.SIGTERM)  # the server and its Python workers: its own process group
    except OSError:
        return False
    for _ in range(100):
        try:
            os.kill(pid, 0)
        except OSError:
            break
        time.sleep(0.1)
    return True


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0
