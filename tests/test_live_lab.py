"""Live: `watch` and `collect` against real Flink clusters of both versions while the fault lab injects a fault.

The watcher polls the cluster from the moment the job is submitted; on each incident it collects a bundle and
diagnoses it, as `flinkdoctor watch` does. After the fault, `collect` takes one more bundle. Both diagnoses must
name the same root cause (rule and category) as the lab's recorded bundle of the same scenario and version.

Runs when FLINKDOCTOR_LIVE_LAB=1 (as tests/test_lab_live.py; CI sets it): Flink comes from PyPI on first use.
Each case takes about a minute and a half on 2 cores; hold the heavy lock while it runs.
"""

from __future__ import annotations

import os
import threading
import time
from contextlib import contextmanager

import pytest

from conftest import DATA

pytestmark = pytest.mark.skipif(
    os.environ.get("FLINKDOCTOR_LIVE_LAB") != "1",
    reason="live fault lab runs only with FLINKDOCTOR_LIVE_LAB=1",
)
JOB_LEVEL = {"job-failed", "job-restarting", "job-failing", "new-exception"}
CASES = [("restart-exhausted", "1.20.3"), ("checkpoint-timeout", "2.1.1")]
if os.environ.get("FLINKDOCTOR_LIVE_ALL") == "1":
    CASES += [("restart-exhausted", "2.1.1"), ("checkpoint-timeout", "1.20.3")]


def top(report_or_incident: dict) -> tuple[str, str] | None:
    roots = report_or_incident.get("root_causes") or []
    return (roots[0]["rule"], roots[0]["category"]) if roots else None


@pytest.mark.parametrize(("scenario", "version"), CASES, ids=[f"{s}-{v}" for s, v in CASES])
def test_watch_and_collect_live(tmp_path, spark, rules, diagnose_bundle, scenario, version):
    from flinkdoctor.live import Connection, RestClient, collect
    from flinkdoctor.live.watcher import Watcher, WatchOptions, summary
    from flinkdoctor.pipeline import diagnose
    from flinkdoctor_lab.runner import run_scenario

    incidents: list[dict] = []
    live: dict = {}
    works = iter(range(1000))

    def diagnosis(bundle):
        work = tmp_path / f"work-{next(works)}"
        return summary(diagnose([bundle], spark=spark, rules=rules, work_dir=work).to_dict())

    @contextmanager
    def while_up(run):
        client = RestClient(Connection.from_url(run.cluster.rest_url, timeout=5, retries=1))
        watcher = Watcher(
            client,
            WatchOptions(tmp_path / "incidents", interval=1, cooldown=600),
            diagnose=diagnosis,
            emit=incidents.append,
        )
        stop = threading.Event()
        thread = threading.Thread(target=watcher.run, args=(stop,), daemon=True)
        thread.start()
        try:
            yield
            deadline = time.time() + 180  # the fault is done: let the watcher report the job-level incident
            while time.time() < deadline and not any(JOB_LEVEL & {t["kind"] for t in i["triggers"]} for i in incidents):
                time.sleep(1)
            started = time.perf_counter()
            live["collect"] = collect(client, tmp_path / "after-fault.tar.gz")
            live["collect_s"] = time.perf_counter() - started
        finally:
            stop.set()
            thread.join(timeout=300)

    meta = run_scenario(scenario, version, tmp_path / "runs", tar=True, progress=lambda m: None, while_up=while_up)
    assert not [e["pattern"] for e in meta["expectations"] if not e["found"]]

    recorded = top(diagnose_bundle(DATA / "lab" / version / f"{scenario}.tar.gz"))
    assert recorded is not None

    # the watcher: one JSON line per incident, each with its bundle kept and diagnosed
    assert incidents, "the watcher reported no incident"
    for incident in incidents:
        assert "error" not in incident, incident
        assert os.path.exists(incident["bundle"])
    worst = [i for i in incidents if JOB_LEVEL & {t["kind"] for t in i["triggers"]}]
    assert worst, [i["triggers"] for i in incidents]
    assert top(worst[-1]) == recorded, (incidents, recorded)
    assert worst[-1]["flink_version"] == version

    # collect after the fault, then diagnose: the same root cause as the lab's recorded bundle
    result = live["collect"]
    assert result.flink_version == version and result.taskmanagers >= 1 and result.logs >= 2
    started = time.perf_counter()
    report = diagnose_bundle(result.path)
    diagnose_s = time.perf_counter() - started
    assert top(report) == recorded
    kinds = {s["kind"] for s in report["input"]["sources"]}
    assert {"flink-jobmanager", "flink-taskmanager", "flink-rest-json"} <= kinds
    print(
        f"\n{scenario} {version}: {len(incidents)} incidents "
        + ", ".join(
            f"{'+'.join(t['kind'] for t in i['triggers'])} {i['seconds']}s "
            f"(collect {i['collect_seconds']}s, diagnose {i['diagnose_seconds']}s) -> {top(i)}"
            for i in incidents
        )
        + f"; collect after fault {live['collect_s']:.2f}s, diagnose {diagnose_s:.1f}s -> {top(report)}"
    )
