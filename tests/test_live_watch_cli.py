"""`flinkdoctor watch` as a user runs it, against recorded REST answers of a real Flink 2.1.1 cluster whose job is
restarting: one incident line with a real diagnosis (Spark), then a clean stop on Ctrl-C (SIGINT), which PySpark's
own SIGINT handler must not turn into an abort. Starts Spark in a subprocess: hold the heavy lock."""

from __future__ import annotations

import copy
import json
import os
import signal
import subprocess
import sys
import time

import pytest
from rest_replay import ReplayServer, load

from conftest import DATA


@pytest.mark.spark  # starts Spark in a subprocess
def test_watch_reports_an_incident_and_stops_on_ctrl_c(tmp_path):
    rec = copy.deepcopy(load(DATA / "rest" / "2.1.1" / "recording.json"))
    job = rec["jobs"][0]
    rec["responses"]["/jobs/overview"]["body"]["jobs"][0]["state"] = "RESTARTING"
    out, err = tmp_path / "watch.jsonl", tmp_path / "watch.err"
    with ReplayServer(rec) as server, open(out, "w") as stdout, open(err, "w") as stderr:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "flinkdoctor",
                "watch",
                "--rest",
                server.url,
                "--interval",
                "1",
                "--out-dir",
                str(tmp_path / "incidents"),
            ],
            stdout=stdout,
            stderr=stderr,
            env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"},
        )
        deadline = time.time() + 240
        while time.time() < deadline and not out.read_text().strip() and proc.poll() is None:
            time.sleep(1)
        time.sleep(2)  # a few more polls: the job still restarts, within the cool-down
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=120)
    messages = err.read_text()
    assert code == 0, messages[-3000:]
    assert "watch stopped after 1 incidents" in messages and "Traceback" not in messages
    (line,) = out.read_text().splitlines()
    incident = json.loads(line)
    assert incident["schema"] == "flinkdoctor.incident/v1" and incident["job"]["id"] == job
    kinds = [t["kind"] for t in incident["triggers"]]
    # the recording also holds a checkpoint IN_PROGRESS since it was recorded: by now far past its 5 s timeout
    assert kinds[0] == "job-restarting" and set(kinds) <= {"job-restarting", "checkpoint-slow"}, kinds
    assert incident["flink_version"] == "2.1.1" and "error" not in incident
    assert incident["root_causes"][0]["category"] == "checkpoint-timeout", incident["root_causes"]
    assert os.path.exists(incident["bundle"])
