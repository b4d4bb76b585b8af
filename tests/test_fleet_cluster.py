"""Fleet under spark-submit on a real Spark standalone cluster: a master and a worker started from the PySpark
package's own jars, the package shipped to the executors as a zip with --py-files (as README says), the lake
and the report checked; both daemons stopped by pid."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fleetgen import generate

from flinkdoctor.fleet import lake

SRC = Path(__file__).resolve().parents[1] / "src"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_for(log: Path, text: str, process: subprocess.Popen, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if log.exists() and text in log.read_text(errors="replace"):
            return
        if process.poll() is not None:
            break
        time.sleep(0.5)
    raise AssertionError(f"{text!r} not in {log}:\n{log.read_text(errors='replace')[-3000:] if log.exists() else ''}")


def _start(home: Path, env: dict, log: Path, *args: str) -> subprocess.Popen:
    with open(log, "wb") as out:  # spark-class execs java: the pid is the daemon's
        return subprocess.Popen(
            [str(home / "bin" / "spark-class"), *args], stdout=out, stderr=subprocess.STDOUT, env=env
        )


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def test_fleet_under_spark_submit_on_a_standalone_cluster(tmp_path):
    import pyspark

    home = Path(pyspark.__file__).parent
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("no Java: Spark's daemons cannot start")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYSPARK_SUBMIT_ARGS", "SPARK_HOME")}
    env.update(SPARK_HOME=str(home), SPARK_LOCAL_IP="127.0.0.1", SPARK_LOG_DIR=str(tmp_path / "logs"))
    port = _free_port()
    url = f"spark://127.0.0.1:{port}"
    master = _start(
        home,
        env,
        tmp_path / "master.log",
        "org.apache.spark.deploy.master.Master",
        *("--host", "127.0.0.1", "--port", str(port), "--webui-port", str(_free_port())),
    )
    worker = None
    try:
        _wait_for(tmp_path / "master.log", "I have been elected leader", master)
        worker = _start(
            home,
            env,
            tmp_path / "worker.log",
            "org.apache.spark.deploy.worker.Worker",
            url,
            *("--cores", "1", "--memory", "1g", "--webui-port", str(_free_port())),
            *("--work-dir", str(tmp_path / "worker")),
        )
        _wait_for(tmp_path / "worker.log", "Successfully registered with master", worker)

        plan = generate(tmp_path / "root", 15, incidents=[])  # the decoys: one cause, never shared
        package = shutil.make_archive(str(tmp_path / "flinkdoctor"), "zip", root_dir=SRC, base_dir="flinkdoctor")
        driver_env = {**env, "PYTHONPATH": str(SRC)}  # the submitting machine has flinkdoctor installed
        done = subprocess.run(
            [str(home / "bin" / "spark-submit"), "--master", url, "--py-files", package]
            + ["--conf", "spark.executor.memory=1g", "--conf", "spark.cores.max=1"]
            + ["--conf", f"spark.pyspark.python={sys.executable}"]
            + [str(SRC / "flinkdoctor" / "__main__.py"), "fleet", str(tmp_path / "root")]
            + ["--out", str(tmp_path / "lake"), "--work-dir", str(tmp_path / "work"), "--format", "json"],
            env=driver_env,
            capture_output=True,
            text=True,
            timeout=240,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        report = json.loads(done.stdout)
        assert report["incidents"] == []
        answers = {a["job"]: a for a in report["answers"]}
        assert sorted(answers) == sorted(plan["bundles"])
        causes = {"host": "kernel-soft-lockup", "storage": "checkpoint-stream-close-failed"}
        for decoy in plan["decoys"]:
            wanted = causes.get(decoy["kind"], "zookeeper-client-session-timeout")
            assert [answers[job]["rule"] for job in decoy["jobs"]] == [wanted], decoy
        assert report["run"]["new"] == len(plan["bundles"]) - 1 and report["run"]["failed"] == 1
        names = {r["name"]: r["status"] for r in lake.read(tmp_path / "lake", "bundles")}
        assert sorted(names) == sorted(plan["bundles"])
        # the work ran in an executor the worker launched for this application, not in the driver
        assert list((tmp_path / "worker").glob("app-*/*/stderr"))
    finally:
        for process in (worker, master):
            if process is not None:
                _stop(process)
