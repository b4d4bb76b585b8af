"""The collector, the watcher's triggers and the live commands against recorded REST answers of real Flink 1.20.3
and 2.1.1 clusters (tests/data/rest), served by a real HTTP server: no Spark, no Flink.

Error paths: an endpoint a version does not serve (404), a slow answer (timeout), a TaskManager that disappears
mid-collection, a JobManager that refuses connections, hostile names, credentials that must not reach the bundle.
"""

from __future__ import annotations

import copy
import json
import signal
import socket
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest
from rest_replay import ReplayServer, load

from conftest import DATA
from flinkdoctor.live import Connection, RestClient, collect
from flinkdoctor.live.collector import Unreachable
from flinkdoctor.live.names import safe_name
from flinkdoctor.live.triggers import CoolDown, JobSnapshot, assess
from flinkdoctor.live.watcher import Watcher, WatchOptions
from flinkdoctor.sources.ingest import ingest

VERSIONS = ("1.20.3", "2.1.1")


def recording(version: str) -> dict:
    return load(DATA / "rest" / version / "recording.json")


def client(url: str, **options) -> RestClient:
    return RestClient(Connection.from_url(url, **{"timeout": 2.0, "retries": 0, **options}))


def files(folder: Path) -> dict[str, Path]:
    return {p.relative_to(folder).as_posix(): p for p in folder.rglob("*") if p.is_file()}


@pytest.mark.parametrize("version", VERSIONS)
def test_collect_recorded_cluster(tmp_path, version):
    rec = recording(version)
    job = rec["jobs"][0]
    with ReplayServer(rec) as server:
        result = collect(client(server.url), tmp_path / "b", folder_only=True)
    found = files(result.path)
    assert result.flink_version == version and result.jobs == [job] and result.taskmanagers == 1
    assert result.notes == []
    # logs by component and host; the TaskManager's log under its own folder, each file once
    jm_logs = [n for n in found if n.startswith("jobmanager/localhost/") and n.endswith(".log")]
    tm_logs = [n for n in found if n.startswith("taskmanager/localhost/") and n.endswith(".log")]
    assert any("standalonesession" in n for n in jm_logs) and not any("taskexecutor" in n for n in jm_logs)
    assert len(tm_logs) == 1 and "taskexecutor" in tm_logs[0]
    served = rec["responses"][next(p for p in rec["responses"] if p.endswith("taskexecutor-0-vm.log"))]["body"]
    assert found[tm_logs[0]].read_text() == served
    # REST snapshots in a folder named by the time they were taken
    (snapshot,) = {n.split("/")[1] for n in found if n.startswith("rest/")}
    assert time.strptime(snapshot, "%Y%m%dT%H%M%SZ")
    for name in ("exceptions", "checkpoints", "checkpoints-config", "config", "job", "jobmanager-config"):
        assert f"rest/{snapshot}/jobs/{job}/{name}.json" in found
    for name in ("config", "overview", "jobmanager-config", "jobmanager-thread-dump", "jobmanager-metrics"):
        assert f"rest/{snapshot}/{name}.json" in found
    assert any(n.endswith("/thread-dump.json") and "/taskmanagers/" in n for n in found)
    assert any(n.startswith(f"rest/{snapshot}/jobs/{job}/checkpoint-") for n in found)
    meta = json.loads(found["collect.json"].read_text())
    assert meta["schema"] == "flinkdoctor.collect/v1" and meta["flink_version"] == version
    assert all(r["status"] == 200 and r["time"].endswith("Z") for r in meta["requests"])
    assert found["collect.log"].read_text().startswith("# flinkdoctor collect log")


@pytest.mark.parametrize("version", VERSIONS)
def test_diagnose_reads_the_layout(tmp_path, version):
    """ingest (what diagnose reads first) classifies every collected file; the collector's log is not evidence."""
    with ReplayServer(recording(version)) as server:
        result = collect(client(server.url), tmp_path / "b.tar.gz")
    assert tarfile.is_tarfile(result.path)
    manifest = ingest([result.path], tmp_path / "work")
    kinds = {s.path: s.kind for s in manifest.sources}
    assert {k for p, k in kinds.items() if "standalonesession" in p and p.endswith(".log")} == {"flink-jobmanager"}
    assert {k for p, k in kinds.items() if "taskexecutor" in p and p.endswith(".log")} == {"flink-taskmanager"}
    assert {k for p, k in kinds.items() if p.endswith(".json")} == {"flink-rest-json"}
    # the exception history becomes events the rules read (a derived source of the exceptions snapshot)
    assert any(s.derived and s.path.endswith("/exceptions.json") for s in manifest.sources)
    (skipped,) = manifest.skipped
    assert skipped["path"].endswith("/collect.log") and "not evidence" in skipped["reason"]


def test_version_only_path_answers_404(tmp_path):
    """An endpoint this Flink does not serve is a note, and everything else is still collected."""
    with ReplayServer(recording("1.20.3")) as server:
        server.status["/jobmanager/thread-dump"] = 404
        result = collect(client(server.url), tmp_path / "b", folder_only=True)
    assert len(result.notes) == 1 and "not served by this Flink version" in result.notes[0]
    meta = json.loads((result.path / "collect.json").read_text())
    assert [r["status"] for r in meta["requests"] if r["path"] == "/jobmanager/thread-dump"] == [404]
    assert result.logs == 5 and result.jobs


def test_timeout_is_noted_and_collection_goes_on(tmp_path):
    rec = recording("2.1.1")
    job = rec["jobs"][0]
    with ReplayServer(rec) as server:
        server.slow[f"/jobs/{job}/exceptions"] = 3.0
        result = collect(client(server.url, timeout=0.5), tmp_path / "b", folder_only=True)
    assert any("exceptions" in n and "timeout" in n for n in result.notes), result.notes
    assert not list(result.path.rglob("exceptions.json"))
    assert list(result.path.rglob("checkpoints.json")) and result.logs == 5


def test_taskmanager_disappears_mid_collection(tmp_path):
    """Listed by /taskmanagers, gone when its logs are asked for: noted; the JobManager's logs are kept."""
    rec = recording("1.20.3")
    tm = json.loads(json.dumps(rec["responses"]["/taskmanagers"]["body"]))["taskmanagers"][0]["id"]
    with ReplayServer(rec) as server:
        server.gone = [f"/taskmanagers/{tm}/logs/"]
        result = collect(client(server.url), tmp_path / "b", folder_only=True)
    gone = [n for n in result.notes if "may have gone away" in n]
    assert len(gone) == 2, result.notes  # its .log and its .out
    assert any("standalonesession" in p.name for p in (result.path / "jobmanager").rglob("*.log"))
    assert not (result.path / "taskmanager").exists()


def test_connection_refused_leaves_nothing(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    with pytest.raises(Unreachable) as err:
        collect(client(f"http://127.0.0.1:{port}"), tmp_path / "b.tar.gz")
    assert err.value.kind == "refused"
    assert list(tmp_path.iterdir()) == []


def test_every_request_refused_is_no_bundle(tmp_path):
    """A JobManager that answers every request with 401 (wrong credentials) gives an error, not an empty bundle."""
    with ReplayServer(recording("1.20.3")) as server:
        server.status["/"] = 401
        done = subprocess.run(
            [sys.executable, "-m", "flinkdoctor", "collect", "--rest", server.url, "-o", str(tmp_path / "b.tar.gz")],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 3, done.stderr
    assert "nothing collected from the JobManager" in done.stderr and "HTTP 401" in done.stderr
    assert list(tmp_path.iterdir()) == []


def test_logs_are_tailed_at_a_line_start(tmp_path):
    with ReplayServer(recording("2.1.1")) as server:
        result = collect(client(server.url), tmp_path / "b", folder_only=True, max_log_bytes=4096)
    (jm_log,) = (result.path / "jobmanager").rglob("*standalonesession*.log")
    data = jm_log.read_bytes()
    assert 0 < len(data) <= 4096 and data[:2] == b"20"  # a whole line: it starts with its date
    cut = [n for n in result.notes if "kept the last" in n]
    assert len(cut) == 3  # JobManager, TaskManager and client logs; the empty .out files are whole
    meta = json.loads((result.path / "collect.json").read_text())
    assert sum(1 for r in meta["requests"] if "truncated" in r) == 3


def test_hostile_names_stay_inside_the_bundle(tmp_path):
    rec = copy.deepcopy(recording("1.20.3"))
    evil = "../../escape\x1b[2J"
    logs = rec["responses"]["/jobmanager/logs"]["body"]["logs"]
    logs.append({"name": evil, "size": 5})
    rec["responses"]["/jobmanager/logs/..%2F..%2Fescape%1B%5B2J"] = {"status": 200, "type": "text", "body": "x\n"}
    with ReplayServer(rec) as server:
        result = collect(client(server.url), tmp_path / "b", folder_only=True)
    assert not (tmp_path / "escape").exists()
    written = [p for p in result.path.rglob("*") if "escape" in p.name]
    assert [p.name for p in written] == [safe_name(evil)] and written[0].read_text() == "x\n"
    assert all(ch.isalnum() or ch in "._-" for ch in written[0].name)


def test_credentials_never_reach_the_bundle(tmp_path, monkeypatch):
    rec = copy.deepcopy(recording("2.1.1"))
    password = "S3cretPassw0rd"
    config = rec["responses"]["/jobmanager/config"]["body"]
    config.append({"key": "s3.secret-key", "value": "AKIAABCDEFGHIJKLMNOP"})
    log = next(p for p in rec["responses"] if p.endswith("standalonesession-0-vm.log"))
    rec["responses"][log]["body"] += f"2026-11-23 07:50:00,000 INFO  x [] - echo {password}\n"
    with ReplayServer(rec) as server:
        url = server.url.replace("http://", f"http://ops:{password}@")
        result = collect(RestClient(Connection.from_url(url, retries=0)), tmp_path / "b.tar.gz")
        headers = server.requests[0][1]
    assert headers["authorization"].startswith("Basic ")
    with tarfile.open(result.path) as tar:
        blob = b"".join(tar.extractfile(m).read() for m in tar.getmembers() if m.isfile())
    assert password.encode() not in blob and b"Authorization" not in blob and b"AKIAABCDEFGHIJKLMNOP" not in blob
    assert b"ops:" not in blob and b"******" in blob


def test_bearer_token_is_sent_not_kept(tmp_path):
    with ReplayServer(recording("1.20.3")) as server:
        result = collect(client(server.url, token="tok-1234567890"), tmp_path / "b", folder_only=True)
        assert {h.get("authorization") for _, h in server.requests} == {"Bearer tok-1234567890"}
    assert not any(b"tok-1234567890" in p.read_bytes() for p in result.path.rglob("*") if p.is_file())


# -- triggers and cool-down ---------------------------------------------------------------------------------------
def snap(state="RUNNING", **fields) -> JobSnapshot:
    return JobSnapshot(job_id="j", name="job", state=state, **fields)


def kinds(triggers) -> list[str]:
    return [t.kind for t in triggers]


def test_triggers():
    now = 1_000_000
    assert kinds(assess(None, snap(), now, 600_000)) == []
    assert kinds(assess(snap(), snap("RESTARTING"), now, 600_000)) == ["job-restarting"]
    assert kinds(assess(snap("RESTARTING"), snap("RESTARTING"), now, 600_000)) == []
    assert kinds(assess(snap("FAILING"), snap("FAILED"), now, 600_000)) == ["job-failed"]
    # first sight: a failure within the recent window counts, an old one does not
    assert kinds(assess(None, snap("FAILED", modified_ms=now - 1000), now, 600_000)) == ["job-failed"]
    assert kinds(assess(None, snap("FAILED", modified_ms=now - 700_000), now, 600_000)) == []
    # counters only against a previous poll
    assert kinds(assess(None, snap(failed_checkpoints=3, latest_exception_ms=5), now, 1)) == []
    grown = assess(
        snap(failed_checkpoints=1, latest_exception_ms=5), snap(failed_checkpoints=3, latest_exception_ms=9), now, 1
    )
    assert kinds(grown) == ["new-exception", "checkpoint-failed"] and "2 checkpoints failed" in grown[1].detail
    # a checkpoint near its timeout, running or just completed (once per completed checkpoint)
    assert kinds(assess(snap(), snap(checkpoint_timeout_ms=5000, running_checkpoint_ms=4100), now, 1)) == [
        "checkpoint-slow"
    ]
    assert kinds(assess(snap(), snap(checkpoint_timeout_ms=5000, running_checkpoint_ms=3000), now, 1)) == []
    done = snap(checkpoint_timeout_ms=5000, last_checkpoint_ms=4500, last_checkpoint_id=7)
    assert kinds(assess(snap(last_checkpoint_id=6), done, now, 1)) == ["checkpoint-slow"]
    assert kinds(assess(done, done, now, 1)) == []


def test_cooldown_reports_escalations_and_counts_repeats():
    cool = CoolDown(600)
    slow, failed = (
        assess(snap(), snap(checkpoint_timeout_ms=10, running_checkpoint_ms=9), 0, 1),
        assess(snap(failed_checkpoints=0), snap(failed_checkpoints=1), 0, 1),
    )
    restart = assess(snap(), snap("RESTARTING"), 0, 1)
    assert cool.admit("j", slow, 0) and cool.admit("j", failed, 1) and cool.admit("j", restart, 2)
    assert not cool.admit("j", restart, 3) and not cool.admit("j", failed, 4)
    assert cool.take_suppressed("j") == 2 and cool.take_suppressed("j") == 0
    assert cool.admit("other", restart, 5)  # per job
    assert cool.admit("j", restart, 603)  # after the cool-down
    assert not cool.admit("j", [], 10_000)


# -- the watcher against a recorded cluster -----------------------------------------------------------------------
def test_watcher_incident_and_jobmanager_restart(tmp_path):
    rec = copy.deepcopy(recording("1.20.3"))
    job = rec["jobs"][0]
    overview = rec["responses"]["/jobs/overview"]["body"]
    overview["jobs"][0]["state"] = "RUNNING"
    diagnosed, emitted, said = [], [], []

    def diagnosis(bundle):
        diagnosed.append(bundle)
        return {"verdict": "known-cause", "root_causes": []}

    with ReplayServer(rec) as server:
        watcher = Watcher(
            client(server.url),
            WatchOptions(tmp_path / "incidents", interval=0.1, cooldown=600),
            diagnose=diagnosis,
            emit=emitted.append,
            say=said.append,
        )
        watcher.poll()
        assert emitted == []  # the baseline: a running job
        rec["responses"]["/jobs/overview"]["body"]["jobs"][0]["state"] = "RESTARTING"
        watcher.poll()
        watcher.poll()  # still restarting: no new incident
        server.status["/jobs/overview"] = 503  # the JobManager fails over
        watcher.poll()
        del server.status["/jobs/overview"]
        rec["responses"]["/jobs/overview"]["body"]["jobs"][0]["state"] = "RUNNING"
        watcher.poll()
        rec["responses"]["/jobs/overview"]["body"]["jobs"][0]["state"] = "RESTARTING"
        watcher.poll()  # restarting again within the cool-down: counted, not reported
    assert len(emitted) == 1
    line = emitted[0]
    assert line["job"]["id"] == job and [t["kind"] for t in line["triggers"]] == ["job-restarting"]
    assert line["verdict"] == "known-cause" and Path(line["bundle"]).exists() and diagnosed == [Path(line["bundle"])]
    assert line["collect_seconds"] >= 0 and line["seconds"] >= line["collect_seconds"]
    assert said == [
        "incident: job " + job + " job-restarting; collecting",
        said[1],
        "JobManager answering again",
    ] and said[1].startswith("JobManager not answering (http)")
    assert watcher.cooldown.suppressed == {job: 1}


def test_watch_command_survives_refused_and_stops_on_sigterm(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "flinkdoctor",
            "watch",
            "--rest",
            f"http://127.0.0.1:{port}",
            "--interval",
            "0.5",
            "--retries",
            "0",
            "--out-dir",
            str(tmp_path / "incidents"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    said = []  # SIGTERM once the watcher polls (its handler is set before it starts): a fixed sleep lost under load
    deadline = time.monotonic() + 60
    while not any("not answering" in line for line in said) and time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        said.append(line)
    proc.send_signal(signal.SIGTERM)
    out, rest = proc.communicate(timeout=20)
    err = "".join(said) + rest
    assert proc.returncode == 0, err
    assert out == ""
    assert err.count("JobManager not answering (refused)") == 1 and "watch stopped after 0 incidents" in err


def test_collect_command(tmp_path):
    with ReplayServer(recording("2.1.1")) as server:
        out = tmp_path / "incident.tar.gz"
        run = [sys.executable, "-m", "flinkdoctor", "collect", "--rest", server.url, "-o", str(out)]
        done = subprocess.run(run, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == str(out) and tarfile.is_tarfile(out)
        assert "Flink 2.1.1, 1 jobs, 1 TaskManagers, 5 logs" in done.stderr
        again = subprocess.run(run, capture_output=True, text=True, timeout=60)
        assert again.returncode == 2 and "exists" in again.stderr
    unwritable = subprocess.run([*run[:-1], "/proc/no-such-dir/b.tar.gz"], capture_output=True, text=True, timeout=60)
    assert unwritable.returncode == 2 and "cannot write the bundle" in unwritable.stderr
    both = subprocess.run(
        [sys.executable, "-m", "flinkdoctor", "diagnose", str(out), "--rest", "http://127.0.0.1:1"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert both.returncode == 2 and "either bundle paths or --rest" in both.stderr


def test_kubectl_output_beside_a_collected_bundle(tmp_path):
    """A collected bundle and saved `kubectl describe pod` / `kubectl get` output in one folder: each file is read
    as what it is (tests/data/incidents/d12 and d20 are real kubectl output)."""
    with ReplayServer(recording("1.20.3")) as server:
        result = collect(client(server.url), tmp_path / "incident" / "rest-bundle.tar.gz")
    for case, name in (("d12", "kubectl-describe.txt"), ("d20", "kubectl-get-pods.txt")):
        (tmp_path / "incident" / name).write_bytes((DATA / "incidents" / case / "bundle" / name).read_bytes())
    manifest = ingest([tmp_path / "incident"], tmp_path / "work")
    kinds = {s.path: s.kind for s in manifest.sources if not s.derived}
    assert kinds["kubectl-describe.txt"] == "kubernetes"
    assert "kubectl-get-pods.txt" in kinds  # read as text; its lines are counted, whatever kind it gets
    collected = {k for p, k in kinds.items() if p.startswith(result.path.name) and p.endswith(".log")}
    assert {"flink-jobmanager", "flink-taskmanager"} <= collected


def test_webhook_posts_the_line_and_reports_failures():
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from flinkdoctor.errors import UsageError
    from flinkdoctor.live.webhook import Webhook

    received = []

    class Receiver(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - http.server's name
            received.append((self.headers["Content-Type"], self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(204 if len(received) == 1 else 500)
            self.end_headers()

        def log_message(self, *args):
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        hook = Webhook(f"http://user:pw@127.0.0.1:{httpd.server_address[1]}/hook", timeout=2)
        assert hook.post('{"schema": "flinkdoctor.incident/v1"}') is None
        problem = hook.post("{}")
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert received[0] == ("application/json", b'{"schema": "flinkdoctor.incident/v1"}')
    assert problem is not None and "HTTP 500" in problem and "pw" not in problem
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    refused = Webhook(f"http://127.0.0.1:{port}/", timeout=1).post("{}")
    assert refused is not None and "failed" in refused
    with pytest.raises(UsageError):
        Webhook("file:///etc/passwd")


def test_processes_with_folders_of_their_own_keep_same_named_logs(tmp_path):
    """Two TaskManagers on one host, each with its own log folder (YARN containers), both writing taskmanager.log:
    both are kept; a shared folder (the standalone lab) is fetched once (test_collect_recorded_cluster)."""
    rec = copy.deepcopy(recording("1.20.3"))
    responses = rec["responses"]
    tm_log = next(p for p in responses if p.endswith("taskexecutor-0-vm.log"))
    jm_log = next(p for p in responses if p.endswith("standalonesession-0-vm.log"))
    first = responses["/taskmanagers"]["body"]["taskmanagers"][0]
    second = {**first, "id": "container_e01_1700000000000_0001_01_000003"}
    responses["/taskmanagers"]["body"]["taskmanagers"].append(second)
    responses["/jobmanager/logs"] = {"status": 200, "type": "json", "body": {"logs": [{"name": "jobmanager.log"}]}}
    responses["/jobmanager/logs/jobmanager.log"] = responses[jm_log]
    for tm in (first["id"], second["id"]):
        responses[f"/taskmanagers/{tm}/logs"] = {
            "status": 200,
            "type": "json",
            "body": {"logs": [{"name": "taskmanager.log", "size": len(responses[tm_log]["body"])}]},
        }
        responses[f"/taskmanagers/{tm}/logs/taskmanager.log"] = responses[tm_log]
    with ReplayServer(rec) as server:
        result = collect(client(server.url), tmp_path / "b", folder_only=True)
    logs = sorted(p.relative_to(result.path).as_posix() for p in result.path.rglob("*.log") if p.name != "collect.log")
    assert logs == [
        "jobmanager/localhost/jobmanager.log",
        "taskmanager/localhost/container_e01_1700000000000_0001_01_000003/taskmanager.log",
        f"taskmanager/localhost/{safe_name(first['id'])}/taskmanager.log",
    ]


@pytest.fixture(scope="module")
def certificate(tmp_path_factory):
    """A self-signed certificate for localhost (openssl), as a test JobManager with REST SSL would have."""
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=localhost",
            "-addext",
            "subjectAltName=DNS:localhost",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


def test_tls_verified_with_ca_file_refused_without(tmp_path, certificate):
    cert, key = certificate
    with ReplayServer(recording("2.1.1"), tls=(cert, key)) as server:
        assert server.url.startswith("https://")
        with pytest.raises(Unreachable) as err:
            collect(client(server.url), tmp_path / "untrusted.tar.gz")
        assert err.value.kind == "tls"
        verified = collect(client(server.url, ca_file=str(cert)), tmp_path / "verified.tar.gz")
        insecure = collect(client(server.url, insecure=True), tmp_path / "insecure.tar.gz")
    assert verified.flink_version == insecure.flink_version == "2.1.1" and verified.logs == insecure.logs == 5
