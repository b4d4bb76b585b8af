"""The warm path: `flinkdoctor server start`, then `diagnose` attached to it gives the cold path's answer, every run
on the one shared Spark Connect session, and a new session when a client closed that one."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import pytest

from conftest import DATA

SEED = DATA / "seeds" / "000"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _cli(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "flinkdoctor", *args], env=env, capture_output=True, text=True, timeout=300
    )


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    state = tmp_path_factory.mktemp("state")
    env = {**os.environ, "FLINKDOCTOR_STATE_DIR": str(state), "SPARK_LOCAL_IP": "127.0.0.1"}
    started = _cli(env, "server", "start", "--port", str(_free_port()))
    assert started.returncode == 0, started.stderr[-2000:]
    yield env, state / "flinkdoctor" / "server.json"
    stopped = _cli(env, "server", "stop")
    assert "stopped" in stopped.stdout


def _root_causes(env: dict, work) -> list[str]:
    run = _cli(env, "diagnose", str(SEED), "--format", "json", "--work-dir", str(work))
    assert run.returncode in (0, 1), run.stderr[-2000:]
    return [root["rule"] for root in json.loads(run.stdout)["root_causes"]]


def test_warm_runs_share_one_session_and_answer_as_cold(server, diagnose_bundle, tmp_path):
    env, state_file = server
    cold = [root["rule"] for root in diagnose_bundle(SEED)["root_causes"]]
    session = json.loads(state_file.read_text())["session"]
    assert _root_causes(env, tmp_path / "a") == cold
    assert _root_causes(env, tmp_path / "b") == cold
    assert json.loads(state_file.read_text())["session"] == session  # the same session (and Python workers)


def test_a_closed_session_is_replaced(server, diagnose_bundle, tmp_path):
    env, state_file = server
    url = _python(env, "from flinkdoctor.runtime.server import running_url; print(running_url())").stdout.strip()
    assert ";session_id=" in url
    closed = _python(env, f"from pyspark.sql import SparkSession; SparkSession.builder.remote({url!r}).create().stop()")
    assert closed.returncode == 0, closed.stderr[-2000:]
    before = json.loads(state_file.read_text())["session"]
    cold = [root["rule"] for root in diagnose_bundle(SEED)["root_causes"]]
    assert _root_causes(env, tmp_path / "c") == cold
    assert json.loads(state_file.read_text())["session"] != before


def _python(env: dict, code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)


def test_changed_code_gets_a_new_session(tmp_path, monkeypatch):
    """The session's Python workers keep the modules they imported: after an upgrade, a fresh session."""
    from flinkdoctor.runtime.server import running_url, state_file

    monkeypatch.setenv("FLINKDOCTOR_STATE_DIR", str(tmp_path))
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        port = listening.getsockname()[1]
        state_file().parent.mkdir(parents=True)
        old = {"pid": os.getpid(), "port": port, "url": f"sc://localhost:{port}", "session": "s1", "code": "old"}
        state_file().write_text(json.dumps(old))
        url = running_url()
        assert url is not None and url.startswith(f"sc://localhost:{port}/;session_id=") and "s1" not in url
        assert running_url() == url  # the code is unchanged now: the same session again
