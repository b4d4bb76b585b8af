"""Fleet: generated fleets of recorded bundles (tests/fleetgen.py) diagnosed in one Spark application: the lake,
every bundle's answer, the planted shared incidents found with exactly their jobs, a background-only fleet with
none, the views (the terminal at 80 columns, the HTML's filter in a browser), the query and the incremental re-run.
The detector's own cases, with the score worked out by hand, are in test_fleet_incidents.py (no Spark)."""

from __future__ import annotations

import html
import re
import shutil
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from fleetgen import generate

from flinkdoctor.fleet import lake
from flinkdoctor.fleet.infra import authority, quorum
from flinkdoctor.fleet.query import jobs_with, parse_time
from flinkdoctor.fleet.report import build
from flinkdoctor.fleet.views import render_html, render_json, render_terminal
from flinkdoctor.sources.classify import host_from_path


def wc_lines(folder: Path) -> int:
    total = 0
    for path in folder.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            total += data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)
    return total


PLANTED = [("host", 8), ("storage", 8), ("zookeeper", 8)]


@pytest.fixture(scope="module")
def fleet(spark, rules, tmp_path_factory):
    from flinkdoctor.fleet.run import run_fleet

    base = tmp_path_factory.mktemp("fleet")
    plan = generate(base / "root", 60, incidents=PLANTED)
    result = run_fleet([base / "root"], base / "lake", rules, spark=spark, work_dir=base / "work")
    return base, plan, result


def planted(plan: dict, kind: str) -> dict:
    return next(i for i in plan["incidents"] if i["kind"] == kind)


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
    storage = planted(plan, "storage")
    diagnoses = lake.read(base / "lake", "diagnoses")
    first = {bundles[d["bundle_id"]]: d["rule"] for d in diagnoses if d["rank"] == 1}
    for kind in ("host", "storage", "zookeeper"):
        assert {first[job] for job in planted(plan, kind)["jobs"]} == {planted(plan, kind)["cause"]}, kind
    for name, recording in plan["recordings"].items():
        if recording.startswith("healthy-") and name not in {
            j for i in plan["incidents"] + plan["decoys"] for j in i["jobs"]
        }:
            assert name not in first, name  # a healthy run re-hosted and re-configured stays healthy
    findings = lake.read(base / "lake", "findings")
    close = [
        f
        for f in findings
        if f["rule"] == "checkpoint-stream-close-failed" and bundles[f["bundle_id"]] in storage["jobs"]
    ]
    assert {f["storage"] for f in close} == {storage["key"]}
    quorums = {
        f["zookeeper"]
        for f in findings
        if f["rule"] == "zookeeper-client-session-timeout"
        and bundles[f["bundle_id"]] in planted(plan, "zookeeper")["jobs"]
    }
    assert quorums == {planted(plan, "zookeeper")["key"]}
    events = lake.read(base / "lake", "events", ["bundle_id", "path", "line", "text"])
    for finding in close:  # the finding's line is in an event kept in the lake, at the same file line or after
        own = [e for e in events if e["bundle_id"] == finding["bundle_id"] and e["path"] == finding["path"]]
        assert any(e["line"] <= finding["line"] and "Could not flush and close" in e["text"] for e in own)


def test_planted_incidents_are_found_with_exactly_their_jobs(fleet):
    base, plan, _ = fleet
    report = build(base / "lake")
    found = sorted(({"kind": i.kind, "key": i.key, "jobs": i.jobs} for i in report.incidents), key=str)
    assert found == sorted(({k: i[k] for k in ("kind", "key", "jobs")} for i in plan["incidents"]), key=str)
    for incident in report.incidents:
        wanted = next(i for i in plan["incidents"] if i["kind"] == incident.kind)
        assert (incident.level, incident.cause, incident.observed) == ("rule", wanted["cause"], wanted["strength"])
        assert incident.expected < 2 and incident.chance < 1e-3 and incident.fleet == len(plan["bundles"]) - 1
        assert incident.exposed >= incident.observed and incident.with_cause >= incident.observed
    assert [i.number for i in report.incidents] == [1, 2, 3]
    assert [i.chance for i in report.incidents] == sorted(i.chance for i in report.incidents)
    causes = {c.rule: len(c.jobs) for c in report.causes}
    decoys = {kind: sum(d["kind"] == kind for d in plan["decoys"]) for kind in ("host", "storage")}
    strength = {kind: planted(plan, kind)["strength"] for kind in ("host", "storage")}
    assert causes["kernel-soft-lockup"] == strength["host"] + decoys["host"]  # the decoys: the same cause, not shared
    assert causes["checkpoint-stream-close-failed"] == strength["storage"] + decoys["storage"]
    assert report.failed == [{"job": plan["failed"][0], "reason": report.failed[0]["reason"]}]


def test_every_bundle_has_its_answer(fleet):
    base, plan, _ = fleet
    report = build(base / "lake")
    answers = {a.job: a for a in report.answers}
    assert sorted(answers) == sorted(plan["bundles"])
    for number, incident in enumerate(report.incidents, 1):
        for job in incident.jobs:
            a = answers[job]
            assert (a.verdict, a.rule, a.incidents) == ("known-cause", incident.cause, [number])
            assert a.first_seen and a.host and a.category
    host = planted(plan, "host")
    assert {answers[job].host for job in host["jobs"]} == {host["key"]}
    cut = answers[plan["failed"][0]]
    assert (cut.status, cut.verdict, cut.rule) == ("failed", None, None) and "Compressed file ended" in cut.reason
    healthy = [a for a in report.answers if a.verdict == "no-failure"]
    assert healthy and all(a.rule is None and not a.incidents for a in healthy)


@pytest.fixture(scope="module")
def background(spark, rules, tmp_path_factory):
    """A fleet of background only: a third of its jobs failing with causes of every recorded kind, and the
    decoys (one cause on two hosts at once, on one storage hours apart, ...), but nothing shared."""
    from flinkdoctor.fleet.run import run_fleet

    base = tmp_path_factory.mktemp("background")
    plan = generate(base / "root", 40, seed=5, incidents=[], background=0.35)
    run_fleet([base / "root"], base / "lake", rules, spark=spark, work_dir=base / "work")
    return base, plan


def test_a_background_only_fleet_gives_no_incident(background):
    base, plan = background
    report = build(base / "lake")
    failing = [a for a in report.answers if a.verdict not in (None, "no-failure")]
    assert len({a.rule for a in failing}) >= 8 and len(failing) >= 15  # a background of mixed failures
    assert report.incidents == []


def terminal_text(report, width: int) -> str:
    from rich.console import Console

    console = Console(record=True, width=width, color_system=None)
    render_terminal(report, console)
    return console.export_text()


def test_views(fleet):
    import json

    base, plan, _ = fleet
    report = build(base / "lake")
    data = json.loads(render_json(report))
    assert (data["schema"], data["contract_version"]) == ("flinkdoctor.fleet/v1", "1.1")
    assert len(data["incidents"]) == 3 and len(data["answers"]) == len(plan["bundles"])
    assert set(data["incidents"][0]) >= {"cause", "observed", "expected", "exposed", "with_cause", "chance", "jobs"}
    text = terminal_text(report, 200)
    for incident in plan["incidents"]:
        assert f"on {incident['kind']} {incident['key']}" in text
    assert plan["failed"][0] in text
    page = render_html(report)
    assert page.count('class="incident"') == 3 and page.count("<rect ") == 3  # on the timeline too
    assert page.count("<tr class=") == len(plan["bundles"])  # every bundle's answer in the table
    csp = html.unescape(re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page).group(1))
    assert "default-src 'none'" in csp and "script-src 'sha256-" in csp and "unsafe-eval" not in csp
    assert page.count("<script>") == 1 and 'id="filter"' in page


def test_the_terminal_at_80_columns_never_cuts_an_id(fleet):
    """Today's table cut `zookeeper-client-session-timeout` over two lines at 80 columns."""
    base, plan, _ = fleet
    report = build(base / "lake")
    text = terminal_text(report, 80)
    lines = text.splitlines()
    whole = {a.job for a in report.answers} | {a.rule for a in report.answers if a.rule}
    whole |= {a.category for a in report.answers if a.category} | {i.key for i in report.incidents}
    assert "zookeeper-client-session-timeout" in whole
    for line in lines:
        assert line == line.rstrip(), f"trailing blanks: {line!r}"
        if len(line) > 80:  # only a single thing that must copy as one: a ZooKeeper quorum
            assert line.strip() in whole or any(line.strip().startswith(w) for w in whole), line
    words = {word.strip(",;():") for line in lines for word in line.split()}
    assert whole <= words, whole - words  # every id, name and key whole on one line


def test_the_html_filters_in_a_browser(fleet, tmp_path):
    """The page's one script runs under its policy and filters the table; nothing is fetched."""
    from test_browser import CHROMIUM, _browser_or_skip

    sync_api = _browser_or_skip()
    base, plan, _ = fleet
    page_file = tmp_path / "fleet.html"
    page_file.write_text(render_html(build(base / "lake")), encoding="utf-8")
    problems: list[str] = []
    with sync_api.sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page()
            page.on("console", lambda m: problems.append(m.text) if m.type in ("error", "warning") else None)
            page.on("pageerror", lambda e: problems.append(str(e)))
            page.on("request", lambda r: problems.append(r.url) if not r.url.startswith(("file:", "data:")) else None)
            page.goto(page_file.as_uri())
            rows = page.locator("#answers tbody tr")
            assert rows.count() == len(plan["bundles"])
            page.check("#in-incident")
            in_incidents = sum(len(i["jobs"]) for i in plan["incidents"])
            assert page.locator("#answers tbody tr:not([hidden])").count() == in_incidents
            assert page.locator("#shown").inner_text() == str(in_incidents)
            page.uncheck("#in-incident")
            host = planted(plan, "host")
            page.fill("#filter", host["key"])
            assert page.locator("#answers tbody tr:not([hidden])").count() >= len(host["jobs"])
            page.fill("#filter", plan["failed"][0])
            assert page.locator("#answers tbody tr:not([hidden])").count() == 1
        finally:
            browser.close()
    assert problems == []


def test_query_which_jobs_had_a_category_in_a_range(fleet):
    base, plan, _ = fleet
    storage = planted(plan, "storage")
    rows = {r["name"]: r for r in lake.read(base / "lake", "bundles")}
    start = min(rows[job]["first_time"] for job in storage["jobs"])
    hits = jobs_with(base / "lake", "checkpoint-storage-error", start, start + timedelta(minutes=10))
    assert sorted(h["job"] for h in hits) == storage["jobs"]
    decoys = sum(d["kind"] == "storage" for d in plan["decoys"])
    assert len(jobs_with(base / "lake", "checkpoint-storage-error")) == len(storage["jobs"]) + decoys  # no range
    assert parse_time("7d", datetime(2026, 11, 23)) == datetime(2026, 11, 16)


def test_rerun_processes_only_new_bundles(fleet, spark, rules, tmp_path):
    from flinkdoctor.fleet.run import run_fleet

    base, plan, first = fleet
    lake_dir = tmp_path / "lake"
    shutil.copytree(base / "lake", lake_dir)
    more = generate(tmp_path / "more", 20, seed=99, incidents=[], decoys=False)
    healthy = next(n for n, r in more["recordings"].items() if r.startswith("healthy-") and not n.endswith(".gz"))
    grown = tmp_path / "root"
    shutil.copytree(base / "root", grown)
    shutil.copytree(tmp_path / "more" / healthy, grown / "job-0901")  # a healthy run, new content
    shutil.copytree(base / "root" / "job-00001", grown / "job-00001-again")  # same content, another name
    result = run_fleet([grown], lake_dir, rules, spark=spark, work_dir=tmp_path / "work")
    assert (result.new, result.skipped, result.failed) == (1, len(plan["bundles"]) + 1, 0)
    names = [r["name"] for r in lake.read(lake_dir, "bundles")]
    assert sorted(names) == sorted(plan["bundles"] + ["job-0901"])
    assert sorted(i.jobs for i in build(lake_dir).incidents) == sorted(i["jobs"] for i in plan["incidents"])


def test_infrastructure_keys():
    assert host_from_path("log/flink-root-taskexecutor-0-worker-h1.log") == "worker-h1"
    assert host_from_path("log/flink-yarn-standalonesession-2-10.0.0.5.out") == "10.0.0.5"
    assert host_from_path("jobmanager.log") is None
    assert authority("hdfs://NN-1:8020/flink/chk-1") == "nn-1:8020"
    assert authority("s3a://AKIAIOSFODNN7EXAMPLE:wJalr%2Fsecret@bucket-1/chk") == "bucket-1"  # user-info never kept
    assert authority("hdfs:/saas/app/flink/checkpoints") is None
    assert authority("file:///tmp/checkpoints") is None
    assert quorum("zk3:2181, zk1:2181,zk2:2181") == "zk1:2181,zk2:2181,zk3:2181"


def test_cli_query_and_usage(fleet, capsys):
    import json

    from flinkdoctor.cli import main

    base, plan, _ = fleet
    main(["fleet", "query", str(base / "lake"), "--had", "kernel-soft-lockup", "--format", "json"])
    rows = json.loads(capsys.readouterr().out)
    decoys = sum(d["kind"] == "host" for d in plan["decoys"])
    host = planted(plan, "host")
    assert len(rows) == len(host["jobs"]) + decoys and {host["key"]} <= {h for r in rows for h in r["hosts"]}
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


def test_a_bundles_log_span_counts_the_lines_only_a_metric_measures(spark, rules, tmp_path):
    """A bundle's log start and end are its kept events' first and last times, the lines only a metric measures
    included (a JobManager log's first lines are configuration properties, its last often a checkpoint's; the
    scan writes them only as measured rows): a real lab run's span is the one of a scan that wrote every such
    event to its table, and not the table's alone."""
    from pyspark.sql import functions as F

    from conftest import DATA
    from flinkdoctor.analytics.metrics import load_metrics, measured_rows
    from flinkdoctor.fleet.run import _spans
    from flinkdoctor.scan.events import build_events
    from flinkdoctor.scan.matcher import build_matcher
    from flinkdoctor.sources.ingest import ingest

    metrics = load_metrics()
    matcher = build_matcher(rules, tuple(metric.line for metric in metrics))
    manifest = ingest([DATA / "lab" / "1.20.3" / "healthy.tar.gz"], tmp_path / "in")
    owner = {source.id: "b" for source in manifest.sources}
    rows = build_events(
        spark, manifest, tmp_path / "rows", matcher.prefilter, matcher=matcher, measured=measured_rows(metrics)
    )
    every = build_events(spark, manifest, tmp_path / "every", matcher.prefilter, matcher=matcher)
    span = _spans(spark, rows, owner)
    assert span == _spans(spark, every, owner) and span["b"][0] < span["b"][1]
    table = rows.table(spark).agg(F.min("time").alias("a"), F.max("time").alias("b")).first()
    assert (table["a"], table["b"]) != span["b"]  # (the events table alone would move it)


def test_a_bundle_failed_by_the_machine_or_by_flinkdoctor_is_tried_again(spark, rules, tmp_path, monkeypatch):
    """A failure that is not the bundle's (flinkdoctor's internal error, an entry it could not read) was recorded
    and never tried again: the next run took its digest as done. Now the next run tries it again and its new row
    supersedes the failed one (by bundle, or by path for an entry that had no digest); a bundle that is itself
    the reason (nothing readable in it) stays done. Two unreadable entries were also one the other's duplicate."""
    from flinkdoctor.fleet import discover as discovering
    from flinkdoctor.fleet import run as running
    from flinkdoctor.fleet.query import sql

    root, lake_dir = tmp_path / "root", tmp_path / "lake"
    seeds = Path(__file__).parent / "data" / "seeds"
    for name, seed in (
        ("job-crash", "001"),
        ("job-crash-copy", "001"),
        ("job-unread-1", "002"),
        ("job-unread-2", "004"),
    ):
        shutil.copytree(seeds / seed, root / name)
    (root / "job-empty").mkdir()  # nothing readable: an InputError, the bundle's own
    ingest, digest = running.ingest, discovering.content_digest

    def crashing(paths, *args, **kwargs):
        if Path(paths[0]).name.startswith("job-crash"):
            raise KeyError("a bug")
        return ingest(paths, *args, **kwargs)

    def unreadable(path):
        if path.name.startswith("job-unread"):
            raise PermissionError(13, "Permission denied")
        return digest(path)

    monkeypatch.setattr(running, "ingest", crashing)
    monkeypatch.setattr(discovering, "content_digest", unreadable)
    first = running.run_fleet([root], lake_dir, rules, spark=spark, work_dir=tmp_path / "w1")
    assert (first.new, first.failed, first.skipped) == (0, 4, 0)
    rows = {row["name"]: row for row in lake.read(lake_dir, "bundles")}
    assert {name: (row["status"], row["retry"]) for name, row in rows.items()} == {
        "job-crash": ("failed", True),
        "job-crash-copy": ("duplicate", True),  # tried again with the bundle it copies
        "job-unread-1": ("failed", True),
        "job-unread-2": ("failed", True),
        "job-empty": ("failed", False),
    }
    assert rows["job-crash"]["reason"] == "KeyError: 'a bug'"

    monkeypatch.undo()  # flinkdoctor fixed, the entries readable
    second = running.run_fleet([root], lake_dir, rules, spark=spark, work_dir=tmp_path / "w2")
    assert (second.new, second.failed, second.skipped) == (3, 0, 1)
    expected = {"job-crash": "ok", "job-crash-copy": "duplicate", "job-unread-1": "ok", "job-unread-2": "ok"}
    expected["job-empty"] = "failed"
    rows = {row["name"]: row for row in lake.read(lake_dir, "bundles")}
    assert {name: row["status"] for name, row in rows.items()} == expected
    assert all(rows[name]["verdict"] for name in expected if name != "job-empty")
    crash = rows["job-crash"]["bundle_id"]
    assert rows["job-crash-copy"]["bundle_id"] == crash  # the copy's findings are the original's rows, once
    found = [(r["rule"], r["sid"], r["line"]) for r in lake.read(lake_dir, "findings") if r["bundle_id"] == crash]
    assert found and len(found) == len(set(found))
    assert build(lake_dir).failed == [{"job": "job-empty", "reason": rows["job-empty"]["reason"]}]
    seen = sql(spark, lake_dir, "SELECT name, status FROM bundles").collect()
    assert dict(map(tuple, seen)) == expected and len(seen) == 5
    import pyarrow.dataset as ds

    assert ds.dataset(str(lake_dir / "bundles"), partitioning="hive").count_rows() == 9  # both runs' rows kept

    third = running.run_fleet([root], lake_dir, rules, spark=spark, work_dir=tmp_path / "w3")
    assert (third.new, third.failed, third.skipped) == (0, 0, 5)


def _bundles_run(lake_dir: Path, run: str, **columns) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = lake_dir / "bundles" / f"run={run}"
    folder.mkdir(parents=True)
    pq.write_table(pa.table(columns), folder / "part-0.parquet")


def test_a_row_tried_again_is_read_only_until_a_later_run_has_its_bundle_or_path(tmp_path):
    """lake.read's bundles: a row to be tried again (retry, or no digest in a run older than retry) goes once a
    later run has a row of its bundle or its path; every other row stays, and the columns read are the ones asked
    for. A lake whose first run is older than retry reads the same."""
    _bundles_run(  # older than retry: an unreadable entry (no digest, tried again today), two read ones
        tmp_path,
        "20261101T000000Z",
        bundle_id=["p1", "a", "b"],
        digest=[None, "a-digest", "b-digest"],
        path=["/r/job-p", "/r/job-a", None],
        status=["failed", "ok", "ok"],
    )
    _bundles_run(
        tmp_path,
        "20261102T000000Z",
        bundle_id=["p2", "c", "d", "e"],
        digest=["p-digest", "c-digest", None, "e-digest"],
        path=["/r/job-p", "/r/job-c", "/r/job-d", None],
        status=["ok", "failed", "failed", "failed"],
        retry=[False, True, True, True],
    )
    _bundles_run(
        tmp_path,
        "20261103T000000Z",
        bundle_id=["c", "f"],
        digest=["c-digest", "f-digest"],
        path=["/r/job-c", None],
        status=["ok", "ok"],
        retry=[False, False],
    )
    rows = lake.read(tmp_path, "bundles", ["bundle_id", "status"])
    assert sorted(map(tuple, (r.values() for r in rows))) == [
        ("a", "ok"),
        ("b", "ok"),
        ("c", "ok"),  # c's failed try (run 2) superseded by its bundle
        ("d", "failed"),  # to be tried again, not yet tried
        ("e", "failed"),  # no path: no other row is its path's
        ("f", "ok"),
        ("p2", "ok"),  # p1 (unreadable then, no digest) superseded by its path
    ]
    assert all(set(r) == {"bundle_id", "status"} for r in rows)
    import pyarrow.dataset as ds

    filtered = lake.read(tmp_path, "bundles", ["bundle_id"], filter=ds.field("status") == "failed")
    assert sorted(r["bundle_id"] for r in filtered) == ["d", "e"]


def test_a_run_started_in_the_same_second_as_an_earlier_one_waits_for_the_next(tmp_path, monkeypatch):
    from flinkdoctor.fleet import run as running

    now = datetime.now(running.tz.utc).strftime("%Y%m%dT%H%M%SZ")
    (tmp_path / "findings" / f"run={now}").mkdir(parents=True)  # (a run cut short has no bundles rows)
    assert running._new_run(tmp_path) > now
