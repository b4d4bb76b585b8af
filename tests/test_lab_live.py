"""Live fault lab: a real Flink 1.20.3 cluster runs the restart-exhausted scenario end to end.

Skipped unless FLINKDOCTOR_LIVE_LAB=1: it downloads Flink on first use (~250 MB, cached in
$FLINKDOCTOR_CACHE or ~/.cache/flinkdoctor) and takes about a minute. It proves the lab itself
(install, cluster, job, fault, REST snapshots, shutdown, bundle) has not rotted.
"""

from __future__ import annotations

import json
import os
import tarfile

import pytest

pytestmark = pytest.mark.skipif(
    os.environ.get("FLINKDOCTOR_LIVE_LAB") != "1",
    reason="live fault lab runs only with FLINKDOCTOR_LIVE_LAB=1",
)

VERSION = os.environ.get("FLINKDOCTOR_LIVE_LAB_VERSION", "1.20.3")


def test_restart_exhausted_live(tmp_path, diagnose_bundle):
    from flinkdoctor_lab.runner import run_scenario

    meta = run_scenario("restart-exhausted", VERSION, tmp_path, tar=True, progress=lambda m: None)

    assert meta["final_state"] == "FAILED"
    missing = [e["pattern"] for e in meta["expectations"] if not e["found"]]
    assert not missing, f"log lines not produced: {missing}"

    with tarfile.open(meta["bundle"]) as tf:
        names = {n.split("/", 1)[1] for n in tf.getnames() if "/" in n}
        texts = {
            n.split("/", 1)[1]: tf.extractfile(n).read().decode("utf-8", "replace")
            for n in tf.getnames()
            if n.endswith((".log", ".json", ".yaml"))
        }
    jm_logs = [n for n in names if n.startswith("log/") and "standalonesession" in n and n.endswith(".log")]
    tm_logs = [n for n in names if n.startswith("log/") and "taskexecutor" in n and n.endswith(".log")]
    assert jm_logs and tm_logs
    assert any(n.endswith(".out") for n in names)
    assert "conf/config.yaml" in names and "lab.json" in names
    assert "restart-strategy.type: fixed-delay" in texts["conf/config.yaml"]

    jm = texts[jm_logs[0]]
    assert "Recovery is suppressed by FixedDelayRestartBackoffTimeStrategy" in jm
    assert "IllegalStateException: Cannot process record" in jm
    assert "switched from state FAILING to FAILED" in jm

    # REST snapshots are the JobManager's own answers; the last one shows the failed job and its exceptions
    end = sorted(n for n in names if n.startswith("rest/") and n.endswith("-end/job.json"))
    assert end, sorted(names)
    assert json.loads(texts[end[-1]])["state"] == "FAILED"
    exceptions = json.loads(texts[end[-1].replace("job.json", "job-exceptions.json")])
    assert "Cannot process record" in json.dumps(exceptions)

    # every process the run started is gone
    assert json.loads(texts["lab.json"])["scenario"] == "restart-exhausted"
    for line in os.popen("ps -eo args").read().splitlines():
        assert str(tmp_path) not in line, f"left running: {line[:200]}"

    # and flinkdoctor diagnoses what the lab wrote: the user code's exception, not the restarts it caused
    report = diagnose_bundle(meta["bundle"])
    top = report["root_causes"][0]
    assert top["category"] == "user-code-error", [(r["rule"], r["category"]) for r in report["root_causes"]]
    assert report["flink_version"]["version"] == VERSION
