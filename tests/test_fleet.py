"""Fleet: a generated fleet of recorded bundles (tests/fleetgen.py) diagnosed in one Spark application; the lake,
the report, recurrence (exactly the planted shared incidents), the query and the incremental re-run."""

from __future__ import annotations

import shutil
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from fleetgen import WEEK_START, generate

from flinkdoctor.fleet import lake
from flinkdoctor.fleet.infra import authority, quorum
from flinkdoctor.fleet.query import jobs_with, parse_time
from flinkdoctor.fleet.recurrence import detect
from flinkdoctor.fleet.report import build, render_html, render_json, render_terminal
from flinkdoctor.sources.classify import host_from_path


def wc_lines(folder: Path) -> int:
    total = 0
    for path in folder.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            total += data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)
    return total


@pytest.fixture(scope="module")
def fleet(spark, rules, tmp_path_factory):
    from flinkdoctor.fleet.run import run_fleet

    base = tmp_path_factory.mktemp("fleet")
    plan = generate(base / "root", 16)
    result = run_fleet([base / "root"], base / "lake", rules, spark=spark, work_dir=base / "work")
    return base, plan, result


def test_every_bundle_in_the_lake_with_its_lines_counted(fleet):
    base, plan, result = fleet
    rows = {r["name"]: r for r in lake.read(base / "lake", "bundles")}
    assert sorted(rows) == sorted(plan["bundles"])
    assert (result.new, result.failed, result.skipped) == (len(plan["bundles"]) - 1, 1, 0)
    for name, row in rows.items():
        if name in plan["failed"]:
            assert row["status"] == "failed" and "Compressed file ended" in row["reason"]
        else:
            assert row["status"] == "ok" and row["verdict"]
            # the logs' span holds every finding's time (the kept events hold the findings)
            assert row["log_start"] <= row["first_time"] <= row["last_time"] <= row["log_end"], name
        if (base / "root" / name).is_dir():
            assert row["lines"] == wc_lines(base / "root" / name), name
    assert {row["run"] for row in rows.values()} == {result.run}


def test_findings_events_and_diagnoses_per_bundle(fleet):
    base, plan, _ = fleet
    bundles = {r["bundle_id"]: r["name"] for r in lake.read(base / "lake", "bundles")}
    storage_jobs = set(plan["incidents"][0]["jobs"])
    diagnoses = lake.read(base / "lake", "diagnoses")
    first = {bundles[d["bundle_id"]]: d["rule"] for d in diagnoses if d["rank"] == 1}
    assert all(first[job] == "checkpoint-stream-close-failed" for job in storage_jobs)
    assert all(first[job] == "kernel-soft-lockup" for job in plan["incidents"][1]["jobs"])
    findings = lake.read(base / "lake", "findings")
    close = [
        f for f in findings if f["rule"] == "checkpoint-stream-close-failed" and bundles[f["bundle_id"]] in storage_jobs
    ]
    assert {f["storage"] for f in close} == {plan["incidents"][0]["key"]}
    events = lake.read(base / "lake", "events", ["bundle_id", "path", "line", "text"])
    for finding in close:  # the finding's line is in an event kept in the lake, at the same file line or after
        own = [e for e in events if e["bundle_id"] == finding["bundle_id"] and e["path"] == finding["path"]]
        assert any(e["line"] <= finding["line"] and "Could not flush and close" in e["text"] for e in own)


def test_recurrence_finds_exactly_the_planted_incidents(fleet):
    base, plan, _ = fleet
    report = build(base / "lake")
    found = [{"kind": i.kind, "key": i.key, "jobs": i.jobs} for i in report.incidents]
    assert found == plan["incidents"]
    causes = {c.rule: len(c.jobs) for c in report.causes}
    assert causes["checkpoint-stream-close-failed"] == 6  # 4 in the incident, 2 decoys days apart
    assert causes["kernel-soft-lockup"] == 6  # 3 in the incident, 3 decoys alone
    assert report.failed == [{"job": plan["failed"][0], "reason": report.failed[0]["reason"]}]


def test_views(fleet):
    import json

    from rich.console import Console

    base, plan, _ = fleet
    report = build(base / "lake")
    data = json.loads(render_json(report))
    assert data["schema"] == "flinkdoctor.fleet/v1" and len(data["incidents"]) == 2
    console = Console(record=True, width=200, color_system=None)
    render_terminal(report, console)
    text = console.export_text()
    assert "same storage nn-shared.example.com:8020" in text and "same host worker-h1" in text
    assert plan["failed"][0] in text
    page = render_html(report)
    assert "<script" not in page and page.count('class="incident"') == 2
    assert "nn-shared.example.com:8020" in page and plan["failed"][0] in page
    for job in plan["incidents"][0]["jobs"]:
        assert job in page


def test_query_which_jobs_had_a_category_in_a_range(fleet):
    base, plan, _ = fleet
    day = WEEK_START + timedelta(days=2)
    hits = jobs_with(base / "lake", "checkpoint-storage-error", day, day + timedelta(hours=12))
    assert sorted(h["job"] for h in hits) == plan["incidents"][0]["jobs"]
    assert len(jobs_with(base / "lake", "checkpoint-storage-error")) == 6  # no range: every job
    assert parse_time("7d", datetime(2026, 11, 23)) == datetime(2026, 11, 16)


def test_rerun_processes_only_new_bundles(fleet, spark, rules, tmp_path):
    from flinkdoctor.fleet.run import run_fleet

    base, plan, first = fleet
    lake_dir = tmp_path / "lake"
    shutil.copytree(base / "lake", lake_dir)
    more = generate(tmp_path / "more", 20, seed=99)  # its last runs before the cut archive are healthy
    grown = tmp_path / "root"
    shutil.copytree(base / "root", grown)
    shutil.copytree(tmp_path / "more" / more["bundles"][-2], grown / "job-0901")  # a healthy run, new content
    shutil.copytree(base / "root" / "job-0001", grown / "job-0001-again")  # same content, another name
    result = run_fleet([grown], lake_dir, rules, spark=spark, work_dir=tmp_path / "work")
    assert (result.new, result.skipped, result.failed) == (1, len(plan["bundles"]) + 1, 0)
    names = [r["name"] for r in lake.read(lake_dir, "bundles")]
    assert sorted(names) == sorted(plan["bundles"] + ["job-0901"])
    assert [i.jobs for i in build(lake_dir).incidents] == [i["jobs"] for i in plan["incidents"]]


def test_infrastructure_keys():
    assert host_from_path("log/flink-root-taskexecutor-0-worker-h1.log") == "worker-h1"
    assert host_from_path("log/flink-yarn-standalonesession-2-10.0.0.5.out") == "10.0.0.5"
    assert host_from_path("jobmanager.log") is None
    assert authority("hdfs://NN-1:8020/flink/chk-1") == "nn-1:8020"
    assert authority("hdfs:/saas/app/flink/checkpoints") is None
    assert authority("file:///tmp/checkpoints") is None
    assert quorum("zk3:2181, zk1:2181,zk2:2181") == "zk1:2181,zk2:2181,zk3:2181"


def test_recurrence_links_within_the_window_and_ignores_healthy_symptoms():
    t = datetime(2026, 11, 18, 3, 0)

    def row(bundle, minutes, role="cause", host="h1"):
        return {"bundle_id": bundle, "rule": "r", "role": role, "time": t + timedelta(minutes=minutes), "host": host}

    chained = [row("a", 0), row("b", 10), row("c", 20)]  # each within 15 min of the last: one incident
    assert [i.bundles for i in detect(chained)] == [["a", "b", "c"]]
    assert detect([row("a", 0), row("b", 16)]) == []
    assert detect([row("a", 0), row("b", 1, host="h2")]) == []
    symptoms = [row("a", 0, "symptom"), row("b", 1, "symptom")]
    assert detect(symptoms, healthy=frozenset({"b"})) == []
    assert len(detect(symptoms)) == 1
    assert detect([row("a", 0, "context"), row("b", 1, "context")]) == []


def test_cli_query_and_usage(fleet, capsys):
    import json

    from flinkdoctor.cli import main

    base, plan, _ = fleet
    main(["fleet", "query", str(base / "lake"), "--had", "kernel-soft-lockup", "--format", "json"])
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 6 and {"worker-h1"} <= {h for r in rows for h in r["hosts"]}
    with pytest.raises(SystemExit) as done:
        main(["fleet", "query", str(base / "lake")])
    assert done.value.code == 2


def test_a_bundle_diagnosed_with_others_gets_the_report_it_gets_alone(spark, rules, tmp_path):
    """The one diagnosis core: three real lab runs (checkpoint analytics, a configuration audit, unexplained
    errors among them) diagnosed together, as the fleet does, give each the report `diagnose` gives it alone."""
    from flinkdoctor.pipeline import diagnose, diagnose_bundles
    from flinkdoctor.sources.ingest import ingest

    lab = Path(__file__).parent / "data" / "lab"
    bundles = [lab / "1.20.3" / "checkpoint-timeout.tar.gz", lab / "2.1.1" / "heap-oom.tar.gz"]
    bundles.append(lab / "1.20.3" / "state-over-memory-limit.tar.gz")
    manifests = [ingest([b], tmp_path / f"b{i}") for i, b in enumerate(bundles)]
    together = diagnose_bundles(spark, manifests, tmp_path / "together", rules).reports
    for bundle, report in zip(bundles, together, strict=True):
        alone = diagnose([bundle], spark=spark, rules=rules, work_dir=tmp_path / f"alone-{bundle.stem}").to_dict()
        mine = report.to_dict()
        for data in (alone, mine):
            data.pop("timings"), data.pop("work_dir", None)
        assert mine == alone, bundle
    checkpoint_timeout, heap_oom, state = (r.to_dict() for r in together)
    assert checkpoint_timeout["checkpoints"]["jobs"] and checkpoint_timeout["config_audit"]["settings"]
    assert heap_oom["unexplained_errors"] or state["unexplained_errors"]


def test_an_older_lake_still_reads(tmp_path):
    """A lake of the first schema (no log_start / log_end) with a newer run beside it: both read, the older
    run's new columns null."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    first = tmp_path / "bundles" / "run=20261101T000000Z"
    second = tmp_path / "bundles" / "run=20261102T000000Z"
    first.mkdir(parents=True)
    second.mkdir(parents=True)
    pq.write_table(pa.table({"bundle_id": ["a"], "name": ["job-a"], "status": ["ok"]}), first / "part-0.parquet")
    start = datetime(2026, 11, 2, 8, 0)
    pq.write_table(
        pa.table({"bundle_id": ["b"], "name": ["job-b"], "status": ["ok"], "log_start": [start]}),
        second / "part-0.parquet",
    )
    rows = sorted(lake.read(tmp_path, "bundles", ["bundle_id", "log_start", "log_end", "run"]), key=str)
    assert rows == [
        {"bundle_id": "a", "log_start": None, "log_end": None, "run": "20261101T000000Z"},
        {"bundle_id": "b", "log_start": start, "log_end": None, "run": "20261102T000000Z"},
    ]
