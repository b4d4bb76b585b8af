"""Checkpoint and configuration analytics on the seeds and the recorded lab bundles (real Flink 1.20.3 and 2.1.1).

A few tests add a configuration file next to a bundle: a file an operator writes (not a line Flink prints), with
the values the seed's write-up states (seed 000: "checkpoint timeout 10_000ms") or a key of the other major version.
"""

from __future__ import annotations

import copy
import json
import re
import sys
import tarfile
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from conftest import DATA, line_at

SEEDS = DATA / "seeds"
LAB = DATA / "lab"


def config_file(tmp_path, text: str):
    path = tmp_path / "flink-conf.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def job_with(report, predicate):
    return next(job for job in report["checkpoints"]["jobs"] if predicate(job))


def findings_of(report, rule):
    return [f for f in report["findings"] if f["rule"] == rule]


def setting(report, key):
    return next(s for s in report["config_audit"]["settings"] if s["key"] == key)


def unpacked(archive, tmp_path):
    with tarfile.open(archive) as tar:
        tar.extractall(tmp_path, filter="data")
    return tmp_path


# --- Spark: real bundles --------------------------------------------------------------------------------------


def test_seed_000_close_against_timeout(diagnose_bundle, tmp_path):
    """The HDFS close of chk-363 took 37,829 ms; with the job's 10 s timeout that is 3.8 x the timeout."""
    plain = diagnose_bundle(SEEDS / "000")
    closed = job_with(plain, lambda j: j["longest_stage_ms"])
    assert closed["longest_stage_ms"] == 37829
    step = next(p for p in closed["series"] if p["stage"] == "storage-close")
    assert step["id"] == 363 and step["file"] == "close-timing-excerpt.txt"
    assert "duration: 37829" in line_at(SEEDS / "000" / step["file"], step["line"])
    assert step["time"] == "2020-01-03T04:23:53.855Z"  # the line's own "failed timestamp:1578025433855"
    assert any("No checkpoint timeout in the input" in m for m in plain["checkpoints"]["missing"])
    # two failures of two job runs (different job ids): no period can be claimed from them
    assert all(not (j["failures"] or {}).get("periodic") for j in plain["checkpoints"]["jobs"])
    # no configuration at all: the audit says so rather than flag unset keys
    assert plain["config_audit"]["settings"] == [] and plain["config_audit"]["missing"]

    report = diagnose_bundle(SEEDS / "000", config_file(tmp_path, "execution.checkpointing.timeout: 10 s\n"))
    job = job_with(report, lambda j: j["longest_stage_ms"])
    assert job["timeout_ms"] == 10000 and "flink-conf.yaml" in job["timeout"]["source"]
    assert any("37,829 ms" in line and "10,000 ms timeout" in line for line in job["summary"]), job["summary"]
    (over,) = findings_of(report, "checkpoint-step-over-timeout")
    assert over["role"] == "context" and over["evidence"][0]["file"].endswith("close-timing-excerpt.txt")
    timeout = setting(report, "execution.checkpointing.timeout")
    assert timeout["severity"] == "warning" and timeout["rule"] == "config-checkpoint-timeout-below-durations"
    # checkpoint files were written to HDFS: the job set a file-system backend in code, so no memory-backend flag
    assert not findings_of(report, "config-memory-state-backend")
    assert [r["category"] for r in report["root_causes"]] == ["checkpoint-storage-slow"]


def test_seed_001_audit_flags_missing_state_backend(diagnose_bundle):
    report = diagnose_bundle(SEEDS / "001", flink_version="1.10.0")
    backend = setting(report, "state.backend")
    assert backend["severity"] == "critical" and backend["source"] == "not set (default)"
    assert backend["suggested_key"] == "state.backend"  # not 1.17's state.backend.type
    assert "state.backend: filesystem" in backend["note"] and "state.checkpoints.dir" in backend["note"]
    assert "MemCheckpointStreamFactory" in backend["note"]  # the logs show the memory backend at work
    (finding,) = findings_of(report, "config-memory-state-backend")
    evidence = finding["evidence"][0]
    assert evidence["file"] == "jobmanager.log"
    assert line_at(SEEDS / "001" / evidence["file"], evidence["line"]).rstrip() == evidence["text"]
    assert "MemCheckpointStreamFactory" in evidence["text"]
    dirs = setting(report, "state.checkpoints.dir")
    assert dirs["severity"] is None and dirs["source"] == "flink-conf.yaml"
    assert report["root_causes"][0]["category"] == "state-size-limit"
    job = job_with(report, lambda j: j["job"] == "44ec04da13306281d7a8da2c808d5b71")
    assert job["counts"] == {"declined": 1}


def test_seed_001_unknown_version_still_names_the_key(diagnose_bundle):
    report = diagnose_bundle(SEEDS / "001")
    assert setting(report, "state.backend")["severity"] == "critical"
    assert report["config_audit"]["version"] is None


def test_seed_002_says_what_it_cannot_measure(diagnose_bundle):
    """The seed holds one TaskManager stack trace without times: no duration to set against interval and timeout."""
    report = diagnose_bundle(SEEDS / "002")
    assert report["checkpoints"]["jobs"] == []
    assert any("No checkpoint durations in the input" in m for m in report["checkpoints"]["missing"])
    assert report["root_causes"][0]["category"] == "checkpoint-timeout"


@pytest.mark.parametrize("version", ["1.20.3", "2.1.1"])
def test_lab_checkpoint_timeout_duration_against_interval_and_timeout(diagnose_bundle, version, tmp_path):
    """Real runs with interval 3 s and timeout 5 s: every checkpoint expires after 5 s, past the next trigger."""
    archive = LAB / version / "checkpoint-timeout.tar.gz"
    report = diagnose_bundle(archive)
    root = unpacked(archive, tmp_path)
    job = job_with(report, lambda j: j["counts"].get("expired"))
    assert job["timeout_ms"] == 5000 and job["interval_ms"] == 3000
    expired = [p for p in job["series"] if p["status"] == "expired" and not p["file"].startswith("REST")]
    assert expired and all(4900 <= p["duration_ms"] <= 5100 for p in expired)  # trigger line to expiry line
    for point in expired:
        text = line_at(root / point["file"], point["line"])
        assert f"Checkpoint {point['id']} of job {job['job']} expired before completing" in text
    assert job["over_interval"] >= len(expired)
    assert any("longer than the 3,000 ms interval" in line for line in job["summary"])
    (finding,) = findings_of(report, "checkpoint-longer-than-interval")
    assert finding["count"] >= len(expired)
    assert report["root_causes"][0]["category"] == "checkpoint-timeout"
    tolerance = setting(report, "execution.checkpointing.tolerable-failed-checkpoints")
    assert tolerance["value"] == "1" and tolerance["severity"] is None  # the lab sets 1: not flagged


@pytest.mark.parametrize("version", ["1.20.3", "2.1.1"])
def test_lab_healthy_completed_series(diagnose_bundle, version, tmp_path):
    """Completed checkpoints of a healthy run, in the 1.15+/2.x wording, each point at its own log line."""
    archive = LAB / version / "healthy.tar.gz"
    report = diagnose_bundle(archive)
    root = unpacked(archive, tmp_path)
    job = job_with(report, lambda j: j["counts"].get("completed"))
    logged = [p for p in job["series"] if p["status"] == "completed" and not p["file"].startswith("REST")]
    assert len(logged) >= 10
    for point in logged:
        text = line_at(root / point["file"], point["line"])
        assert f"Completed checkpoint {point['id']} for job {job['job']} ({point['size_bytes']} bytes, " in text
        assert f"checkpointDuration={int(point['duration_ms'])} ms" in text
    durations = sorted(p["duration_ms"] for p in job["series"] if p["status"] == "completed")
    assert job["percentiles"]["max"] == durations[-1] and job["percentiles"]["p50"] <= job["percentiles"]["p95"]
    assert job["over_interval"] == 0 and not findings_of(report, "checkpoint-duration-near-timeout")
    assert report["verdict"] == "no-failure"


@pytest.mark.parametrize(("version", "severity"), [("2.1.1", "warning"), ("1.20.3", "info")])
def test_one_x_key_on_a_two_x_bundle(diagnose_bundle, tmp_path, version, severity):
    """An operator's file with the 1.x backend key: a finding on 2.x, a deprecation note on 1.20."""
    conf = config_file(tmp_path, "state.backend: rocksdb\n")
    report = diagnose_bundle(LAB / version / "healthy.tar.gz", conf)
    assert report["flink_version"]["version"] == version
    backend = setting(report, "state.backend")
    assert backend["severity"] == severity and backend["suggested_key"] == "state.backend.type"
    assert backend["rule"] == "config-key-of-other-version"
    assert ("1.x key" in backend["note"]) == (version == "2.1.1")
    assert findings_of(report, "config-key-of-other-version")


def test_report_with_analytics_fits_the_schema(diagnose_bundle):
    import jsonschema

    schema = json.loads((DATA.parent.parent / "src/flinkdoctor/schemas/report.schema.json").read_text())
    for bundle in (SEEDS / "000", SEEDS / "001", LAB / "2.1.1" / "checkpoint-timeout.tar.gz"):
        report = diagnose_bundle(bundle)
        jsonschema.validate(report, schema)
        assert report["contract_version"] == "1.2"


# --- pure Python ----------------------------------------------------------------------------------------------


def test_durations_as_flink_writes_them():
    from flinkdoctor.analytics.config import duration_ms

    assert duration_ms("10 s") == 10_000 and duration_ms("600000") == 600_000 and duration_ms("3s") == 3000
    assert duration_ms("1 min") == 60_000 and duration_ms("2 h") == 7_200_000
    assert duration_ms("ten") is None and duration_ms("5 fortnights") is None and duration_ms(None) is None


def _points(gaps_min: list[float]):
    from flinkdoctor.analytics.checkpoints import Point

    start, points = datetime(2020, 1, 2, 17, 0), []
    when = start
    for n, gap in enumerate([0.0, *gaps_min]):
        when += timedelta(minutes=gap)
        points.append(Point("j" * 32, n, when, "failed", None, None, "jobmanager.log", n + 1, sid=0))
    return points


def test_failure_period_is_found_when_steady():
    from flinkdoctor.analytics.checkpoints import _failures

    steady, _ = _failures(_points([17, 16.5, 17.5, 17, 16.8]), None)
    assert steady and steady.periodic and 16 * 60 <= (steady.period_s or 0) <= 18 * 60
    ragged, _ = _failures(_points([3, 40, 11, 90]), None)
    assert ragged and not ragged.periodic and ragged.period_s is None
    few, _ = _failures(_points([17, 17]), None)
    assert few and not few.periodic  # three failures are not yet a pattern


def test_keys_checked_against_the_version():
    from flinkdoctor.analytics.config import Assignment, Effective, audit
    from flinkdoctor.analytics.knowledge import config_knowledge

    effective = Effective()
    for key, value in (
        ("state.backend.type", "rocksdb"),
        ("akka.ask.timeout", "240 s"),
        ("heartbeat.timeout", "180000"),
    ):
        effective.add(Assignment(key, value, "flink-conf.yaml"))
    on_110, risks = audit(effective, "1.10.0", config_knowledge(), checkpointing=True)
    by_key = {s.key: s for s in on_110.settings}
    assert (
        "ignores it" in by_key["state.backend.type"].note
        and by_key["state.backend.type"].suggested_key == "state.backend"
    )
    assert by_key["akka.ask.timeout"].rule == "config-ask-timeout-raised"
    assert by_key["heartbeat.timeout"].rule == "config-heartbeat-timeout-raised"
    on_2, _ = audit(effective, "2.1.1", config_knowledge(), checkpointing=True)
    akka = next(s for s in on_2.settings if s.key == "akka.ask.timeout")
    assert akka.suggested_key == "pekko.ask.timeout" and "1.x key" in akka.note
    assert risks and all(r.note for r in risks)


def test_zookeeper_ha_without_suspended_tolerance():
    from flinkdoctor.analytics.config import Assignment, Effective, audit
    from flinkdoctor.analytics.knowledge import config_knowledge

    effective = Effective()
    effective.add(Assignment("high-availability.type", "zookeeper", "config.yaml"))
    flagged, _ = audit(effective, "1.17.2", config_knowledge(), checkpointing=False)
    row = next(s for s in flagged.settings if s.rule == "config-zookeeper-suspended-not-tolerated")
    assert row.suggested_key == "high-availability.zookeeper.client.tolerate-suspended-connections"
    old, _ = audit(effective, "1.10.0", config_knowledge(), checkpointing=False)
    assert any("Not available before Flink 1.14" in s.note for s in old.settings)
    effective.add(Assignment("high-availability.zookeeper.client.tolerate-suspended-connections", "true", "x"))
    fine, _ = audit(effective, "1.17.2", config_knowledge(), checkpointing=False)
    assert not any(s.rule == "config-zookeeper-suspended-not-tolerated" for s in fine.settings)


def test_metrics_feed_the_prefilter_after_the_rules():
    from flinkdoctor.analytics import load_metrics
    from flinkdoctor.knowledge.rulebook import load_rules
    from flinkdoctor.scan.prefilter import build_prefilter

    rules = load_rules()
    metrics = load_metrics()
    alone = build_prefilter(rules)
    both = build_prefilter(rules, [m.signature for m in metrics])
    assert both.signatures[: len(alone.signatures)] == alone.signatures  # the rules' numbers do not move
    assert len(both.signatures) == len(alone.signatures) + len(metrics)
    assert all(both.signatures[len(alone.signatures) :])  # every metric has literals
    assert all(re.compile(m.pattern.pattern) for m in metrics)


def test_the_driver_reduces_triggers_and_completions_as_spark_did(spark, rules, tmp_path, monkeypatch):
    """The triggers and completions are written unreduced and reduced by the driver (columns.Builder) to the
    rows Spark's aggregate kept, and so are the other kinds (metrics._reduce_rest; Spark then runs no aggregate,
    one read of the events): on real lab runs (a 1.20.3 JobManager log given twice, so that every checkpoint and
    start-up line has two lines of each kind, and a 2.1.1 run whose checkpoints expire), the same columns, the
    same other measures, the same texts read back and the same analysis as when Spark reduced every kind."""
    import numpy as np

    from flinkdoctor.analytics import analyse, extract, load_metrics
    from flinkdoctor.analytics import metrics as m
    from flinkdoctor.scan.events import build_events
    from flinkdoctor.scan.matcher import build_matcher
    from flinkdoctor.sources.ingest import ingest

    (log,) = unpacked(LAB / "1.20.3" / "healthy.tar.gz", tmp_path / "run").glob("*/log/*standalonesession*.log")
    (tmp_path / "twice" / "again").mkdir(parents=True)
    (tmp_path / "twice" / "jobmanager.log").write_bytes(log.read_bytes())
    (tmp_path / "twice" / "again" / "jobmanager.log").write_bytes(log.read_bytes())
    metrics = load_metrics()
    matcher = build_matcher(rules, tuple(m.line for m in metrics))

    def bits(values):  # numbers, times and nan/NaT compared as they are stored (a float as its float64's bits)
        if values.dtype.kind == "f":
            values = values.astype(np.float64)
        return values.view(np.int64).tolist() if values.dtype.kind in "fM" else values.tolist()

    for name, given in (("twice", tmp_path / "twice"), ("expiring", LAB / "2.1.1" / "checkpoint-timeout.tar.gz")):
        manifest = ingest([given], tmp_path / f"work-{name}")
        events = build_events(spark, manifest, tmp_path / f"work-{name}", matcher.prefilter, matcher=matcher)
        table = events.table(spark)
        seen = {}
        lines = table.selectExpr("sum(size(measures))").first()[0]
        for plan, written in (("spark", ()), ("driver", m.COLUMNAR), ("every", None)):
            monkeypatch.setattr(m, "WRITTEN", written)
            found = extract(table, metrics, events.blocks, manifest)  # through the measures' file
            rows = sum(file.metadata.num_rows for file in found.texts.files)
            c = found.checkpoints
            columns = zip(*(bits(getattr(c, f"t_{f}")) for f in ("job", "number", "time", "at", "sid")), strict=True)
            triggers = sorted((c.jobs[j], *rest) for j, *rest in columns)
            fields = ("job", "number", "time", "duration", "size", "sid", "line", "host")
            done = sorted(
                (c.jobs[j], *rest, text)
                for j, *rest, text in zip(
                    *(bits(getattr(c, f"c_{f}")) for f in fields), found.texts.read(c.c_row), strict=True
                )
            )
            analysis = analyse(found, manifest, None)
            shown = sorted((f.rule, f.sid, f.line, f.text) for f in analysis.findings)
            seen[plan] = (rows, sorted(found, key=repr), triggers, done, analysis.checkpoints, shown)
        (spark_rows, *by_spark), (driver_rows, *by_driver) = seen["spark"], seen["driver"]
        every_rows, *by_every = seen["every"]
        assert by_driver == by_spark, name
        assert by_every == by_spark, name
        assert every_rows == lines > driver_rows, name  # every measured line written, the others reduced by the driver
        assert len(by_spark[0]) >= 10, name  # start-up lines (configuration) and more: the driver reduced them
        trigger_rows, done_rows = len(by_spark[1]), len(by_spark[2])
        assert trigger_rows >= 3 and by_spark[3].jobs, name
        if name == "twice":  # the driver read each checkpoint's two lines of each kind, and kept the one Spark kept
            assert done_rows >= 3 and driver_rows == spark_rows + trigger_rows + done_rows
            assert {sid for _, _, _, _, sid in by_spark[1]} == {1} and {d[5] for d in by_spark[2]} == {0}
        else:
            assert any(p.status == "expired" for j in by_spark[3].jobs for p in j.series)


def test_only_the_times_read_are_parsed_and_the_analysis_is_that_of_every_line(spark, rules, tmp_path):
    """Read from the scan's own table (`stored`), a trigger that stamps its epoch gets no line time parsed (the
    costliest part of a row), every other measured line its time parsed after the explode: on real lab runs (a
    healthy 1.20.3 JobManager log, a 2.1.1 run whose checkpoints expire) the triggers' times are their epochs,
    the other measures and the completions are those read with every time parsed, and the analysis is the one
    of every line read whole."""
    import numpy as np

    from flinkdoctor.analytics import analyse, extract, load_metrics
    from flinkdoctor.analytics.checkpoints import epoch
    from flinkdoctor.scan.events import build_events
    from flinkdoctor.scan.matcher import build_matcher
    from flinkdoctor.sources.ingest import ingest

    metrics = load_metrics()
    matcher = build_matcher(rules, tuple(m.line for m in metrics))
    for name in ("1.20.3/healthy", "2.1.1/checkpoint-timeout"):
        work = tmp_path / name.replace("/", "-")
        manifest = ingest([LAB / f"{name}.tar.gz"], work)
        events = build_events(spark, manifest, work, matcher.prefilter, matcher=matcher)
        table = events.table(spark)
        lines = table.selectExpr("sum(size(measures))").first()[0]
        whole = extract(table, metrics, events.blocks, manifest, lines)  # every line, its time from the table
        parsed = extract(table, metrics, events.blocks, manifest)  # through the file, every event's time parsed
        stored = extract(table, metrics, events.blocks, manifest, stored=events)
        c, p = stored.checkpoints, parsed.checkpoints
        assert len(c.t_job) >= 3 and len(c.c_job) >= (3 if "healthy" in name else 0), name
        assert np.isnat(c.t_time).all() and not np.isnat(c.c_time).any(), name  # parsed where read, only
        stamps = {
            (m.captures["job"], int(m.captures["checkpoint"])): epoch(m.captures["epoch_ms"])
            for m in whole
            if m.measures == "checkpoint-trigger"
        }
        at = c.t_at.astype("datetime64[us]").tolist()
        keys = [(c.jobs[j], n) for j, n in zip(c.t_job.tolist(), c.t_number.tolist(), strict=True)]
        assert dict(zip(keys, at, strict=True)) == stamps, name
        for field in ("t_job", "t_number", "t_at", "t_sid", "c_job", "c_number", "c_time", "c_duration", "c_line"):
            assert getattr(c, field).tobytes() == getattr(p, field).tobytes(), (name, field)
        assert sorted(stored, key=repr) == sorted(parsed, key=repr), name  # the other kinds, their times
        assert analyse(stored, manifest, None).checkpoints == analyse(whole, manifest, None).checkpoints, name


def test_a_log_read_twice_is_one_point_per_checkpoint(spark, rules, tmp_path, monkeypatch):
    """The driver gets one measured line per checkpoint (Spark reduces them, here every kind: the driver's own
    reduction of the triggers and completions is the test above), wherever else the lines repeat: the
    JobManager log of a real run given twice gives the points of one copy, at the first copy's lines; and the
    analytics of the reduced lines are those of every line."""
    import pyarrow as pa

    from flinkdoctor.analytics import analyse, extract, load_metrics
    from flinkdoctor.analytics import metrics as m
    from flinkdoctor.analytics.metrics import _split_columnar
    from flinkdoctor.scan.events import build_events
    from flinkdoctor.scan.matcher import build_matcher
    from flinkdoctor.sources.ingest import ingest

    (log,) = unpacked(LAB / "1.20.3" / "healthy.tar.gz", tmp_path / "run").glob("*/log/*standalonesession*.log")
    (tmp_path / "once").mkdir()
    (tmp_path / "once" / "jobmanager.log").write_bytes(log.read_bytes())
    (tmp_path / "twice" / "again").mkdir(parents=True)
    (tmp_path / "twice" / "jobmanager.log").write_bytes(log.read_bytes())
    (tmp_path / "twice" / "again" / "jobmanager.log").write_bytes(log.read_bytes())
    metrics = load_metrics()
    matcher = build_matcher(rules, tuple(metric.line for metric in metrics))
    monkeypatch.setattr(m, "WRITTEN", ())
    measured = {}
    for name in ("once", "twice"):
        manifest = ingest([tmp_path / name], tmp_path / f"work-{name}")
        events = build_events(spark, manifest, tmp_path / f"work-{name}", matcher.prefilter, matcher=matcher)
        table = events.table(spark)
        lines = table.selectExpr("sum(size(measures))").first()[0]
        found = extract(table, metrics, events.blocks, manifest)  # reduced in Spark, whatever the count
        stored = pa.concat_tables([file.read() for file in found.texts.files])  # the reduced rows Spark wrote
        at = stored.schema.get_field_index("line")
        stored = stored.set_column(at, "line", pa.array(range(stored.num_rows), pa.int64()))
        _, columns = _split_columnar(stored, metrics, events.blocks, manifest)  # (the driver keeps fewer columns)
        bulk = columns.select(["metric", "sid", "line", "checkpoint"]).to_pylist()
        rows = [(m.metric, m.sid, m.line, m.captures.get("checkpoint")) for m in found]
        rows += [(r["metric"], r["sid"], r["line"], str(r["checkpoint"])) for r in bulk]
        measured[name] = (lines, sorted(rows, key=lambda r: (r[1], r[2])))
        every = extract(table, metrics, events.blocks, manifest, lines)  # few: every line, merged by the analytics
        assert len(every) == lines > len(found) + len(bulk)
        assert analyse(every, manifest, None).checkpoints == analyse(found, manifest, None).checkpoints
    (lines_once, once), (lines_twice, twice) = measured["once"], measured["twice"]
    assert lines_twice == 2 * lines_once
    assert len([m for m in once if m[0] == "checkpoint-completed-with-finalization"]) >= 3

    def triggers(found, trigger=True):
        return [m for m in found if (m[0] == "checkpoint-triggered") == trigger]

    assert triggers(twice, False) == triggers(once, False)  # the first copy's lines (sid 0), none of the second
    assert [(m[1], m[2]) for m in triggers(twice)] == [(1, m[2]) for m in triggers(once)]  # a trigger: the last


def test_many_matches_choose_the_same_evidence_as_few(spark, rules, tmp_path, monkeypatch):
    """Above FEW matches, one aggregation over their keys counts them and picks each rule's earliest and latest
    instances: the same counts, and the same findings as the one-job path for a rule with few enough."""
    from flinkdoctor.analytics import load_metrics
    from flinkdoctor.diagnosis import findings as match
    from flinkdoctor.scan.events import build_events
    from flinkdoctor.scan.matcher import build_matcher
    from flinkdoctor.sources.ingest import ingest

    manifest = ingest([LAB / "1.20.3" / "checkpoint-timeout.tar.gz"], tmp_path)
    matcher = build_matcher(rules, tuple(m.line for m in load_metrics()))
    events = build_events(spark, manifest, tmp_path, matcher.prefilter, matcher=matcher)
    table, matched = events.table(spark), events.stats["matched"]
    few = match.collect_findings(table, events.blocks, manifest, matched)
    monkeypatch.setattr(match, "FEW", 0)
    many = match.collect_findings(table, events.blocks, manifest, matched)
    assert many[1] == few[1] and sum(few[1].values()) == matched > 0

    def of(findings, rule):
        return sorted((f.sid, f.line, f.text, f.job_id, f.checkpoint_id) for f in findings if f.rule == rule)

    for (_, rule), n in few[1].items():
        chosen, every = of(many[0], rule), of(few[0], rule)
        assert len(chosen) == min(n, 2 * match.KEEP_PER_RULE) and set(chosen) <= set(every)
        if n <= 2 * match.KEEP_PER_RULE:
            assert chosen == every
    # the chosen are each rule's first and last KEEP_PER_RULE in (time, unknown first; source, range, line) order
    monkeypatch.setattr(match, "KEEP_PER_RULE", 3)
    rows, groups = match._of_kind(*match.chosen_of_events(table, ("rule",)), "rule")
    ordered: dict[str, list] = {}
    for row in sorted(
        match.match_events(table, detail=False).collect(),
        key=lambda r: (r.time is not None, r.time or 0, r.sid, r.block, r.first_rel),
    ):
        ordered.setdefault(row.rule, []).append((row.sid, row.block, row.first_rel))
    assert {g["rule"]: g["cnt"] for g in groups} == {rule: len(keys) for rule, keys in ordered.items()}
    assert any(len(keys) > 6 for keys in ordered.values())  # some rule has more than the first and last three
    for rule, keys in ordered.items():
        picked = {(r["sid"], r["block"], r["first_rel"]) for r in rows if r["rule"] == rule}
        assert picked == set(keys[:3]) | set(keys[-3:])


def _job_measures(job: str, sid: int, checkpoints: int, start: datetime):
    """A job's trigger and completion measures, from the lines the healthy 1.20.3 lab run's JobManager printed
    (tests/data/lab/1.20.3/healthy.tar.gz: "Triggering checkpoint 1 (type=...) @ 1795345683861 for job ...",
    "Completed checkpoint 1 for job ... (7387 bytes, checkpointDuration=299 ms, finalizationTime=5 ms).")."""
    from flinkdoctor.analytics.metrics import Measure

    found = []
    for n in range(1, checkpoints + 1):
        at = start + timedelta(seconds=2 * n)
        epoch = str(int((at - datetime(1970, 1, 1)).total_seconds() * 1000))
        trigger = (
            f"Triggering checkpoint {n} (type=CheckpointType{{name='Checkpoint', sharingFilesStrategy="
            f"FORWARD_BACKWARD}}) @ {epoch} for job {job}."
        )
        done = (
            f"Completed checkpoint {n} for job {job} (7387 bytes, checkpointDuration={20 + n} ms, "
            "finalizationTime=1 ms)."
        )
        found.append(
            Measure(
                "checkpoint-triggered",
                "checkpoint-trigger",
                sid,
                2 * n,
                at,
                None,
                trigger,
                {"checkpoint": str(n), "epoch_ms": epoch, "job": job},
            )
        )
        found.append(
            Measure(
                "checkpoint-completed-with-finalization",
                "checkpoint-completed",
                sid,
                2 * n + 1,
                at + timedelta(milliseconds=20 + n),
                None,
                done,
                {"checkpoint": str(n), "job": job, "bytes": "7387", "duration_ms": str(20 + n)},
            )
        )
    return found


def test_many_jobs_each_analysed_as_alone():
    """A session cluster's JobManager log names thousands of jobs: each job's analysis is the one it has alone
    (its own points and trigger times), and the cost grows with the points, not with jobs times points."""
    import time

    from flinkdoctor.analytics.checkpoints import analyse_checkpoints
    from flinkdoctor.analytics.config import Effective
    from flinkdoctor.sources.ingest import Manifest

    def run(jobs: int):
        measures = []
        for k in range(jobs):
            measures += _job_measures(f"{k:032x}", 0, 6, datetime(2026, 3, 1) + timedelta(hours=k))
        began = time.process_time()  # CPU, not wall: a neighbour's load does not pass for the test's own cost
        section, _ = analyse_checkpoints(measures, Manifest([], Path("."), None), Effective(), {0: "jobmanager.log"})
        return section, time.process_time() - began

    alone, _ = run(1)
    few, few_s = min((run(400) for _ in range(3)), key=lambda r: r[1])  # the least disturbed of three small runs
    many, many_s = run(4000)
    assert len(few.jobs) == 400 and len(many.jobs) == 4000
    for job in (few.jobs[0], many.jobs[1234], many.jobs[-1]):
        assert (job.counts, job.interval, job.percentiles) == (
            alone.jobs[0].counts,
            alone.jobs[0].interval,
            alone.jobs[0].percentiles,
        )
    assert job.interval and job.interval.ms == 2000 and job.counts == {"completed": 6}
    assert many_s < 30 * max(few_s, 0.01)  # 10x the jobs: linear is 10x, the old per-job scan of all points 100x


def test_a_long_run_reports_a_bounded_series_with_every_failure_and_extreme():
    """Past SERIES_MAX points a job's series keeps every point that did not complete and each time span's
    shortest and longest completed one; its counts and percentiles are still every checkpoint's."""
    from flinkdoctor.analytics import checkpoints
    from flinkdoctor.analytics.config import Effective
    from flinkdoctor.sources.ingest import Manifest

    job = "1fdf09bfd9a6f5522794ffa2f96c327e"
    measures = _job_measures(job, 0, 3 * checkpoints.SERIES_MAX, datetime(2026, 3, 1))
    section, _ = checkpoints.analyse_checkpoints(measures, Manifest([], Path("."), None), Effective(), {0: "jm.log"})
    (report,) = section.jobs
    n = 3 * checkpoints.SERIES_MAX
    assert report.counts == {"completed": n} and report.percentiles["max"] == 20 + n
    assert len(report.series) <= checkpoints.SERIES_MAX
    durations = [p.duration_ms for p in report.series]
    assert min(durations) == 21 and max(durations) == 20 + n  # the shortest and the longest are kept
    assert [p.time for p in report.series] == sorted(p.time for p in report.series)


def _as_columns(measures):
    """The triggers and completions of `measures` as metrics._split_columnar gives them (a long run's)."""
    import pyarrow as pa

    bulk = [m for m in measures if m.measures in ("checkpoint-trigger", "checkpoint-completed")]
    number = [int(m.captures["checkpoint"]) for m in bulk]
    return pa.table(
        {
            "kind": [m.measures for m in bulk],
            "job": [m.captures["job"] for m in bulk],
            "checkpoint": pa.array(number, pa.int64()),
            "time": pa.array([m.time for m in bulk], pa.timestamp("us")),
            "epoch_ms": pa.array([int(m.captures["epoch_ms"]) if "epoch_ms" in m.captures else None for m in bulk]),
            "duration_ms": pa.array([float(m.captures.get("duration_ms") or "nan") for m in bulk]).cast(pa.float64()),
            "bytes": pa.array([int(m.captures["bytes"]) if "bytes" in m.captures else None for m in bulk], pa.int64()),
            "sid": pa.array([m.sid for m in bulk], pa.int32()),
            "line": pa.array([m.line for m in bulk], pa.int64()),
            "host": pa.array([m.host for m in bulk], pa.string()),
            "text": pa.array([m.text if m.measures == "checkpoint-completed" else None for m in bulk], pa.string()),
        }
    )


def test_a_long_runs_checkpoints_in_bulk_give_the_same_analysis():
    """The columns of a long run's triggers and completions (read in bulk) give the analysis that Measures of
    the same lines give: counts, percentiles, trend, interval, the expiries' durations from their triggers, the
    series and the evidence."""
    import pyarrow.compute as pc

    from flinkdoctor.analytics.checkpoints import analyse_checkpoints
    from flinkdoctor.analytics.config import Effective
    from flinkdoctor.analytics.metrics import Measure, Measured
    from flinkdoctor.sources.ingest import Manifest

    job = "1fdf09bfd9a6f5522794ffa2f96c327e"
    measures = _job_measures(job, 0, 3000, datetime(2026, 3, 1)) + _job_measures("e" * 32, 1, 40, datetime(2026, 3, 2))
    # checkpoints 2990 to 3000 expired instead (Flink 1.20.3's line, CheckpointCoordinator), measured on their own
    expired = [m for m in measures if m.captures["job"] == job and int(m.captures["checkpoint"]) > 2990]
    measures = [m for m in measures if m not in expired or m.measures == "checkpoint-trigger"]
    for m in expired:
        if m.measures == "checkpoint-completed":
            n = m.captures["checkpoint"]
            text = f"Checkpoint {n} of job {job} expired before completing."
            measures.append(Measure("checkpoint-expired", "checkpoint-expired", 0, m.line, m.time, None, text,
                                    {"checkpoint": n, "job": job}))  # fmt: skip
    measures.sort(key=lambda m: (m.sid, m.line))
    paths = {0: "jobmanager.log", 1: "jobmanager.log.1"}
    plain, plain_jobs = analyse_checkpoints(measures, Manifest([], Path("."), None), Effective(), paths)
    columns = _as_columns(measures)
    rest = Measured(m for m in measures if m.measures not in ("checkpoint-trigger", "checkpoint-completed"))
    rest.checkpoints = columns
    bulk, bulk_jobs = analyse_checkpoints(rest, Manifest([], Path("."), None), Effective(), paths)
    assert pc.sum(pc.equal(columns.column("kind"), "checkpoint-completed")).as_py() == 3000 + 40 - 10
    assert bulk.missing == plain.missing
    for ours, theirs in zip(bulk.jobs, plain.jobs, strict=True):
        assert ours == theirs
    assert [j.evidence for j in bulk_jobs] == [j.evidence for j in plain_jobs]
    first = plain.jobs[0] if plain.jobs[0].job == job else plain.jobs[1]
    assert first.counts == {"completed": 2990, "expired": 10} and first.interval and first.interval.ms == 2000


def test_bundles_scanned_together_get_each_its_own_checkpoints_in_bulk(spark, rules, tmp_path):
    """The reduced measures (the triggers and completions in columns, as a long run's are) of two real runs
    scanned together, split by bundle, give each run the checkpoint analysis it gets scanned alone."""
    from flinkdoctor.analytics import analyse, extract, load_metrics
    from flinkdoctor.pipeline import combine
    from flinkdoctor.scan.events import build_events
    from flinkdoctor.scan.matcher import build_matcher
    from flinkdoctor.sources.ingest import ingest

    runs = [LAB / "1.20.3" / "healthy.tar.gz", LAB / "2.1.1" / "checkpoint-timeout.tar.gz"]
    metrics = load_metrics()
    matcher = build_matcher(rules, tuple(m.line for m in metrics), catalogue=None)

    def measured(manifests, work, bundle_of=None):
        manifest = combine(manifests)[0]
        events = build_events(spark, manifest, work, matcher.prefilter, matcher=matcher, bundle_of=bundle_of)
        return extract(events.table(spark), metrics, events.blocks, manifest)  # reduced: triggers in columns

    manifests = [ingest([run], tmp_path / f"in{i}") for i, run in enumerate(runs)]
    _, views, bundle_of = combine(manifests)
    together = measured(manifests, tmp_path / "together", bundle_of).by_bundle(bundle_of, len(runs))
    for b, run in enumerate(runs):
        alone_manifest = ingest([run], tmp_path / f"alone{b}")
        alone = measured([alone_manifest], tmp_path / f"work{b}")
        assert alone.checkpoints is not None and len(together[b].checkpoints) == len(alone.checkpoints) > 0
        mine = analyse(together[b], views[b], None).checkpoints
        assert mine == analyse(alone, alone_manifest, None).checkpoints, run
        assert mine.jobs


class _Counted:
    """A table that counts what is asked of it whole: a pass per job over every row would show here."""

    def __init__(self, table):
        self._table, self.calls = table, 0

    def __getattr__(self, name):
        self.calls += 1
        return getattr(self._table, name)


def test_a_session_clusters_jobs_in_bulk_cost_no_pass_per_job():
    """100,000 jobs in one JobManager log: the columns are read, sorted and cut by job once (the same calls on the
    whole table for 10 jobs as for 300), and each job's analysis is the one it has alone."""

    def run(jobs: int):
        section, counted = _session_cluster(jobs, _Counted)
        return section, counted.calls

    (alone, _), (few, few_calls), (many, many_calls) = run(1), run(10), run(300)
    assert len(few.jobs) == 10 and len(many.jobs) == 300
    assert few_calls == many_calls > 0
    _each_as_alone(alone, (few.jobs[3], many.jobs[123], many.jobs[-1]))


def _session_cluster(jobs: int, wrapped=lambda columns: columns):
    """`jobs` jobs of 6 checkpoints, an hour apart, in one JobManager log, analysed: (the checkpoint section, the
    columns as given, `wrapped`)."""
    from flinkdoctor.analytics.checkpoints import analyse_checkpoints
    from flinkdoctor.analytics.config import Effective
    from flinkdoctor.analytics.metrics import Measured
    from flinkdoctor.sources.ingest import Manifest

    measures = []
    for k in range(jobs):
        measures += _job_measures(f"{k:032x}", 0, 6, datetime(2026, 3, 1) + timedelta(hours=k))
    given = Measured()
    given.checkpoints = wrapped(_as_columns(measures))
    section, _ = analyse_checkpoints(given, Manifest([], Path("."), None), Effective(), {0: "jobmanager.log"})
    return section, given.checkpoints


def _each_as_alone(alone, jobs) -> None:
    """Each of `jobs` has the figures and series of the one job of `alone` (the same checkpoints)."""
    for job in jobs:
        assert (job.counts, job.interval, job.percentiles, [p.duration_ms for p in job.series]) == (
            alone.jobs[0].counts,
            alone.jobs[0].interval,
            alone.jobs[0].percentiles,
            [p.duration_ms for p in alone.jobs[0].series],
        )


@pytest.mark.unit
def test_a_session_clusters_jobs_keep_no_points_beyond_their_evidence():
    """100,000 jobs in one JobManager log: what the analysis keeps per job (its report's numbers and bounded
    series) does not hold Points of its longest and latest checkpoints unless evidence shows them. Measured with
    tracemalloc between 1,000 and 3,000 jobs of 6 checkpoints: under 2,000 bytes a job (it was 3,400 when each
    job kept ten Points and their text; it measures 1,150)."""
    import gc
    import tracemalloc

    from flinkdoctor.analytics.checkpoints import analyse_checkpoints
    from flinkdoctor.analytics.config import Effective
    from flinkdoctor.analytics.metrics import Measured
    from flinkdoctor.sources.ingest import Manifest

    def retained(jobs: int):
        measures = []
        for k in range(jobs):
            measures += _job_measures(f"{k:032x}", 0, 6, datetime(2026, 3, 1) + timedelta(hours=k))
        given = Measured()
        given.checkpoints = _as_columns(measures)
        del measures
        gc.collect()
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            section, analyses = analyse_checkpoints(given, Manifest([], Path("."), None), Effective(), {0: "jm.log"})
            gc.collect()
            kept = tracemalloc.get_traced_memory()[0] - before
        finally:
            tracemalloc.stop()
        assert len(section.jobs) == len(analyses) == jobs and not any(a.evidence for a in analyses)
        return kept

    assert (retained(3000) - retained(1000)) / 2000 < 2000


def test_the_series_of_many_jobs_share_one_bound():
    """The report's checkpoint series are bounded in all: 3,000 jobs of 6 checkpoints each list at most
    SERIES_MAX points together (each job at least its shortest and longest), with every count still whole."""
    from flinkdoctor.analytics import checkpoints
    from flinkdoctor.analytics.config import Effective
    from flinkdoctor.analytics.metrics import Measured
    from flinkdoctor.sources.ingest import Manifest

    measures = []
    for k in range(3000):
        measures += _job_measures(f"{k:032x}", 0, 6, datetime(2026, 3, 1) + timedelta(hours=k))
    given = Measured()
    given.checkpoints = _as_columns(measures)
    section, _ = checkpoints.analyse_checkpoints(given, Manifest([], Path("."), None), Effective(), {0: "jm.log"})
    assert sum(len(job.series) for job in section.jobs) <= checkpoints.SERIES_MAX
    for job in section.jobs:
        assert job.counts == {"completed": 6}
        assert [p.duration_ms for p in job.series] == [21, 26]  # its shortest and its longest


def test_spark_actions_do_not_grow_with_jobs(spark, rules, tmp_path, monkeypatch):
    """A session cluster's JobManager log names many jobs: a diagnosis runs the same Spark actions for 30 jobs as
    for 3 (each stage once for all jobs, none per job), and each job gets the analysis it gets with fewer beside.
    The log is a real run's JobManager log (the healthy 1.20.3 lab run) repeated, each copy with its own ids."""
    from flinkdoctor.analytics import metrics
    from flinkdoctor.pipeline import diagnose_bundles
    from flinkdoctor.sources.ingest import ingest

    monkeypatch.setattr(metrics, "FEW", 0)  # the checkpoints in columns, as a long run's
    (log,) = unpacked(LAB / "1.20.3" / "healthy.tar.gz", tmp_path / "run").glob("*/log/*standalonesession*.log")
    text = log.read_text("utf-8")
    ids = sorted(set(re.findall(r"\b[0-9a-f]{32}\b", text)))

    def diagnosed(copies: int):
        folder = tmp_path / f"jobs-{copies}"
        folder.mkdir()
        with (folder / "jobmanager.log").open("w", encoding="utf-8") as out:
            for k in range(copies):
                fresh = {old: f"{k:08x}{n:024x}" for n, old in enumerate(ids)}
                out.write(re.sub(r"\b[0-9a-f]{32}\b", lambda m, fresh=fresh: fresh[m.group()], text))
        manifest = ingest([folder], tmp_path / f"in-{copies}")
        group = f"jobs-axis-{copies}"
        spark.sparkContext.setJobGroup(group, group)
        try:
            report = diagnose_bundles(spark, [manifest], tmp_path / f"work-{copies}", rules).reports[0]
        finally:
            spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
        return report, len(spark.sparkContext.statusTracker().getJobIdsForGroup(group))

    (few, few_actions), (many, many_actions) = diagnosed(3), diagnosed(30)
    assert few.checkpoints is not None and many.checkpoints is not None
    assert len(few.checkpoints.jobs) == 3 and len(many.checkpoints.jobs) == 30
    assert 0 < few_actions == many_actions

    def shapes(report):
        jobs = report.checkpoints.jobs
        return {(tuple(sorted(j.counts.items())), tuple(sorted(j.percentiles.items()))) for j in jobs}

    assert shapes(many) == shapes(few)
    assert [r.rule for r in many.root_causes] == [r.rule for r in few.root_causes]


def _with_timeout(ms: str = "250 ms"):
    """A configured checkpoint timeout (as an operator's flink-conf.yaml sets it) below the test jobs' longest
    checkpoints: each job's five longest become evidence (checkpoint-duration-near-timeout), the Points shown."""
    from flinkdoctor.analytics.config import Assignment, Effective

    effective = Effective()
    effective.add(Assignment("execution.checkpointing.timeout", ms, "flink-conf.yaml"))
    return effective


def test_completions_text_read_back_only_for_the_points_shown(tmp_path, monkeypatch):
    """A long run's completions keep no text in memory: their lines stay in the measures' file, and the points
    a report shows (evidence) get theirs read back, the same as when the columns held every text; any rows, in
    any order, read back a few lines at a time within their row groups, are their own lines."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyarrow import fs

    from flinkdoctor.analytics.checkpoints import analyse_checkpoints
    from flinkdoctor.analytics.metrics import Measured, Texts
    from flinkdoctor.sources.ingest import Manifest

    measures = []
    for k in range(40):
        measures += _job_measures(f"{k:032x}", 0, 300, datetime(2026, 3, 1) + timedelta(hours=k))
    columns = _as_columns(measures)
    whole = Measured()
    whole.checkpoints = columns
    (tmp_path / "measures").mkdir()
    for n, at in enumerate(range(0, columns.num_rows, 7000)):  # files of row groups, as Spark writes them
        part = columns.select(["text"]).slice(at, 7000).rename_columns(["line"])
        pq.write_table(part, tmp_path / "measures" / f"part-{n:05d}.snappy.parquet", row_group_size=2500)
    stored = Measured()
    stored.checkpoints = columns.set_column(
        columns.schema.get_field_index("text"), "text", pa.array(range(columns.num_rows), pa.int64())
    )
    stored.texts = Texts(fs.LocalFileSystem(), str(tmp_path / "measures"))
    effective, paths = _with_timeout(), {0: "jobmanager.log"}
    plain, plain_jobs = analyse_checkpoints(whole, Manifest([], Path("."), None), effective, paths)
    read, read_jobs = analyse_checkpoints(stored, Manifest([], Path("."), None), effective, paths)
    assert read == plain
    # each job's evidence: its five longest checkpoints, their lines' texts read back from the file
    shown = [(p.line, p.text) for j in read_jobs for ps in j.evidence.values() for p in ps]
    assert shown == [(p.line, p.text) for j in plain_jobs for ps in j.evidence.values() for p in ps]
    assert len(shown) == 40 * 5 and all(text.startswith("Completed checkpoint ") for _, text in shown)
    from flinkdoctor.analytics import metrics as m

    monkeypatch.setattr(m, "TEXT_BATCH", 300)  # (row groups of 2,500: batches, and a group's tail not read)
    every = columns.column("text").to_pylist()
    picked = np.random.default_rng(25).permutation(len(every))[:5000]
    assert stored.texts.read(picked) == [every[k] for k in picked]
    assert stored.texts.read(np.array([7, 2, 7, 2499, 2500])) == [every[k] for k in (7, 2, 7, 2499, 2500)]


@pytest.mark.unit
@pytest.mark.parametrize("prepared", [8192, 1])
def test_only_the_lines_a_finding_shows_are_read_back_however_long_the_series(tmp_path, monkeypatch, prepared):
    """A report's series carry no line's text, a finding's evidence does: of a long run's completions only the
    evidence's lines are read back from the measures' file (each job's five longest at 300 checkpoints a job), not
    the series' 1,200. The series' Points were read back too, from every row group of the file (a long run's
    series spans it), and every job's were held until then."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyarrow import fs

    from flinkdoctor.analytics import checkpoints
    from flinkdoctor.analytics.checkpoints import analyse_checkpoints
    from flinkdoctor.analytics.metrics import Measured, Texts
    from flinkdoctor.sources.ingest import Manifest

    monkeypatch.setattr(checkpoints, "PREPARED", prepared)  # (1: each job a share of its own, its points kept)
    read: list[int] = []
    real = Texts.read
    monkeypatch.setattr(Texts, "read", lambda self, rows: read.append(len(rows)) or real(self, rows))

    def rows_read(checkpoints: int) -> tuple[int, int, int]:
        measures = []
        for k in range(4):
            measures += _job_measures(f"{k:032x}", 0, checkpoints, datetime(2026, 3, 1) + timedelta(days=k))
        columns = _as_columns(measures)
        folder = tmp_path / str(checkpoints)
        folder.mkdir()
        lines = columns.select(["text"]).rename_columns(["line"])
        pq.write_table(lines, folder / "part-00000.snappy.parquet", row_group_size=2500)
        stored = Measured()
        stored.checkpoints = columns.set_column(
            columns.schema.get_field_index("text"), "text", pa.array(range(columns.num_rows), pa.int64())
        )
        stored.texts = Texts(fs.LocalFileSystem(), str(folder))
        read.clear()
        section, jobs = analyse_checkpoints(
            stored, Manifest([], Path("."), None), _with_timeout(), {0: "jobmanager.log"}
        )
        shown = [p for job in jobs for points in job.evidence.values() for p in points]
        assert shown and all(p.text.startswith("Completed checkpoint ") for p in shown)
        return sum(read), len(shown), sum(len(job.series) for job in section.jobs)

    (few, few_shown, few_series), (many, many_shown, many_series) = rows_read(300), rows_read(3000)
    assert (few, many) == (few_shown, many_shown)  # (3,000 a job: their earliest and latest over the interval too)
    assert few == 4 * 5 and few_series == 4 * 300 and many_series > 4 * 1000  # (series: Points, no text read)


@pytest.mark.unit
def test_the_trends_sums_are_fsums_to_the_last_bit(monkeypatch):
    """_fsum (no Python float made per value) gives math.fsum's very float: values of every magnitude that cancel,
    subnormals, zeros of both signs, sums past 2**53, parts longer than FIT_STEP or cut anywhere; a value that is
    not finite gives fsum's answer for it."""
    import math

    import numpy as np

    from flinkdoctor.analytics import checkpoints

    rng = np.random.default_rng(25)
    cases = [[], [-0.0], [-0.0, -0.0], [0.0, -0.0], [5e-324] * 3, [1e308, -1e308, 1.0], [2.0**53, 1.0, 1.0]]
    cases += [[0.1] * 10, [-(2.0**52) - 0.5, 0.25, 0.25], [1.0 + 5 * 2.0**-52, -1.0]]  # (the last: high halves cancel)
    for _ in range(300):
        n = int(rng.integers(1, 300))
        values = rng.normal(0, 1, n) * 10.0 ** rng.integers(-300, 300, n)
        cases.append(np.concatenate([values, -values[: n // 2]]).tolist())
    durations = rng.normal(1000, 300, 3 * checkpoints.FIT_STEP + 7) * 2.0**40  # (a sum far past 2**53)
    cases += [durations.tolist(), ((durations - durations.mean()) * (durations[::-1] - 7.5)).tolist()]
    for values in cases:
        array = np.array(values, dtype=np.float64)
        wanted = repr(math.fsum(values))
        assert repr(checkpoints._fsum([array])) == wanted
        assert repr(checkpoints._fsum(array[at : at + 997] for at in range(0, len(array), 997))) == wanted
    assert checkpoints._fsum([np.array([1.0, math.inf]), np.array([2.0])]) == math.inf
    assert math.isnan(checkpoints._fsum([np.array([math.nan, 2.0])]))
    wanted = math.fsum(durations.tolist())
    monkeypatch.setattr(math, "fsum", lambda values: pytest.fail("a Python float made per value"))
    assert checkpoints._fsum([durations]) == wanted


@pytest.mark.unit
@pytest.mark.parametrize("jobs", [300, 2**15, 2**15 + 1])
def test_a_session_clusters_job_codes_take_two_bytes_a_row_up_to_32768_jobs(jobs):
    """Each trigger and completion holds its job as a code: in 2 bytes while the jobs are up to 32,768 (a
    production run's few dozen), sorted or not, else in 4; each row's code names its own job either way."""
    import numpy as np

    from flinkdoctor.analytics.columns import Columns

    measures = []
    for k in reversed(range(jobs)):  # (read in the reverse of the names' order: sort maps every code)
        measures += _job_measures(f"{k:032x}", 0, 1, datetime(2026, 3, 1) + timedelta(minutes=k))
    columns = Columns.of_table(_as_columns(measures))
    wanted = np.int16 if jobs <= 2**15 else np.int32
    named = [m.captures["job"] for m in measures if m.measures == "checkpoint-completed"]
    assert columns.t_job.dtype == columns.c_job.dtype == wanted
    assert [columns.jobs[code] for code in columns.c_job.tolist()] == named
    columns.sort()
    assert columns.t_job.dtype == columns.c_job.dtype == wanted
    assert [columns.jobs[code] for code in columns.c_job.tolist()] == sorted(named)


def _measures_file(measures, number: dict, bundle_of: dict | None = None):
    """The measures as `_reduced` writes them (the triggers' and completions' captures as string columns; with
    `bundle_of`, a source's bundle, the file's `bundle` column, for the driver's reduction)."""
    import pyarrow as pa

    from flinkdoctor.analytics import metrics as m

    trigger = [x.measures == "checkpoint-trigger" for x in measures]
    captured = {
        f"c_{key}": pa.array(
            [
                None if t and key in ("duration_ms", "bytes") else x.captures.get(key)
                for x, t in zip(measures, trigger, strict=True)
            ],
            pa.string(),
        )
        for key in m.CAPTURED
    }
    file = pa.table(
        {
            "sid": pa.array([x.sid for x in measures], pa.int32()),
            "block": pa.array([0] * len(measures), pa.int64()),
            "first_rel": pa.array([x.line for x in measures], pa.int64()),
            "time": pa.array([x.time for x in measures], pa.timestamp("us")),
            "host": pa.array([None] * len(measures), pa.string()),
            "metric": pa.array([number[x.metric] for x in measures], pa.int32()),
            "idx": pa.array([0] * len(measures), pa.int32()),
            "line": pa.array([None if t else x.text for x, t in zip(measures, trigger, strict=True)], pa.string()),
            "captures": pa.array(
                [None if x.measures in m.COLUMNAR else list(x.captures.items()) for x in measures],
                pa.map_(pa.string(), pa.string()),
            ),
            "job": pa.array([None] * len(measures), pa.string()),
            **captured,
        }
    )
    if bundle_of is not None:
        file = file.add_column(1, "bundle", pa.array([bundle_of[x.sid] for x in measures], pa.int32()))
    return file


@pytest.mark.unit
def test_the_measures_file_read_in_batches_gives_each_bundle_its_own_checkpoints(tmp_path, monkeypatch):
    """The reduced measures' file (as `_reduced` writes it: the triggers' and completions' captures as string
    columns) read a few rows at a time gives the columns it gives read whole, and the analysis the measures
    themselves give; split by bundle, each bundle's analysis holds its own job only, though its columns' job
    codes come from batches that held both."""
    import types

    import pyarrow.parquet as pq
    from pyarrow import fs

    from flinkdoctor.analytics import metrics as m
    from flinkdoctor.analytics.checkpoints import analyse_checkpoints
    from flinkdoctor.analytics.columns import COMPLETED_FIELDS, TRIGGER_FIELDS
    from flinkdoctor.sources.ingest import Manifest

    known = m.load_metrics()
    number = {metric.id: n for n, metric in enumerate(known)}
    jobs = ["1fdf09bfd9a6f5522794ffa2f96c327e", "e" * 32]
    measures = sorted(
        _job_measures(jobs[0], 0, 300, datetime(2026, 3, 1)) + _job_measures(jobs[1], 1, 200, datetime(2026, 3, 1)),
        key=lambda x: (x.time, x.sid),  # both jobs' rows in every batch
    )
    trigger = [x.measures == "checkpoint-trigger" for x in measures]
    file = _measures_file(measures, number)
    (tmp_path / "measures").mkdir()
    for n, at in enumerate(range(0, file.num_rows, 400)):  # files of row groups, as Spark writes them
        pq.write_table(file.slice(at, 400), tmp_path / "measures" / f"part-{n:05d}.parquet", row_group_size=150)
    texts = m.Texts(fs.LocalFileSystem(), str(tmp_path / "measures"))
    # the fields _split_columnar reads of each source (ingest's Source): a log from its first line, no host
    manifest = types.SimpleNamespace(
        sources=[types.SimpleNamespace(id=s, host=None, fixed_line=None, line_map=None, line_offset=0) for s in (0, 1)]
    )
    whole = m._read_split(texts, known, {}, manifest)
    monkeypatch.setattr(m, "BATCH", 37)
    rest, many = m._read_split(texts, known, {}, manifest)
    assert rest.num_rows == whole[0].num_rows == 0
    assert len(many) == len(measures) and many.c_row.tolist() == [n for n, t in enumerate(trigger) if not t]
    assert many.jobs == whole[1].jobs and many.hosts == whole[1].hosts
    for name in [f"t_{f}" for f in TRIGGER_FIELDS] + [f"c_{f}" for f in COMPLETED_FIELDS]:
        assert getattr(many, name).tolist() == getattr(whole[1], name).tolist(), name

    read = m.Measured()
    read.checkpoints, read.texts = many, texts
    held = m.Measured()  # the same rows with their text in the columns (test_completions_text_read_back...)
    held.checkpoints = _as_columns(measures)
    effective, paths = _with_timeout(), {0: "jobmanager.log", 1: "jobmanager.log.1"}
    bulk, bulk_jobs = analyse_checkpoints(read, Manifest([], Path("."), None), effective, paths)
    alone, alone_jobs = analyse_checkpoints(held, Manifest([], Path("."), None), effective, paths)
    assert bulk == alone and [j.counts for j in bulk.jobs] == [{"completed": 300}, {"completed": 200}]
    shown = [(p.line, p.text) for j in bulk_jobs for ps in j.evidence.values() for p in ps]
    assert shown == [(p.line, p.text) for j in alone_jobs for ps in j.evidence.values() for p in ps] and shown
    for b, split in enumerate(read.by_bundle({0: 0, 1: 1}, 2)):
        section, _ = analyse_checkpoints(split, Manifest([], Path("."), None), effective, paths)
        assert [j.job for j in section.jobs] == [jobs[b]]
        assert section.jobs[0] == alone.jobs[b]


def _expiring_jobs(count: int):
    """`count` jobs, each in its own JobManager log (source) one after another, of 120 checkpoints of which the
    60th expired (no completion; its duration is from its trigger, 15 s before)."""
    from flinkdoctor.analytics.metrics import Measure

    measures = []
    for k in range(count):
        job = f"{k + 1:032x}"
        rows = _job_measures(job, k, 120, datetime(2026, 3, 1) + timedelta(hours=k))
        done = next(x for x in rows if x.measures == "checkpoint-completed" and x.captures["checkpoint"] == "60")
        at = done.time - timedelta(milliseconds=80) + timedelta(seconds=15)  # (the trigger's time + 15 s)
        expired = Measure(
            "checkpoint-expired",
            "checkpoint-expired",
            k,
            done.line,
            at,
            None,
            f"Checkpoint 60 of job {job} expired before completing.",
            {"checkpoint": "60", "job": job},
        )
        measures += [expired if x is done else x for x in rows]
    return measures


def _one_window_at_a_time(real, sizes: list[int]):
    """metrics.Windows.__iter__ (`real`) watched: each window's rows noted in `sizes`, and the window before
    checked gone (a weak reference, after a collection) before the next is read."""
    import gc
    import weakref

    last = None

    def one_at_a_time(self):
        nonlocal last
        windows = real(self)
        while True:
            gc.collect()
            assert last is None or last() is None  # (the window before: let go before the next is read)
            columns = next(windows, None)
            if columns is None:
                return
            sizes.append(len(columns))
            last = weakref.ref(columns)
            yield columns
            del columns

    return one_at_a_time


@pytest.mark.unit
def test_many_jobs_checkpoints_are_read_and_analysed_a_window_at_a_time(tmp_path, monkeypatch):
    """A production bundle's JobManager logs are a job each, one after another in the measures' file: past
    WINDOW_ROWS triggers and completions the driver reads them a window of whole jobs at a time, each window's
    columns gone before the next is read, so the rows it holds at once do not grow with the jobs (4 jobs or 16:
    windows of the same size, only more of them). The other kinds' rows, and the analysis (an expiry's duration
    from its trigger in a window included), are those of every row read at once, and so are each bundle's when
    bundles are diagnosed together. Jobs whose rows are interleaved in every row group leave nowhere to cut: one
    window, the whole file, as before."""
    import types
    from functools import partial

    import pyarrow.parquet as pq
    from pyarrow import fs

    from flinkdoctor.analytics import metrics as m
    from flinkdoctor.analytics.checkpoints import analyse_checkpoints
    from flinkdoctor.sources.ingest import Manifest

    known = m.load_metrics()
    number = {metric.id: n for n, metric in enumerate(known)}
    effective = _with_timeout("200 ms")
    monkeypatch.setattr(m, "BATCH", 53)

    def read(measures, name: str, window_rows: int):
        folder = tmp_path / f"{name}-{window_rows}"
        folder.mkdir()
        file = _measures_file(measures, number)
        for n, at in enumerate(range(0, file.num_rows, 480)):  # files of row groups of half a job's rows
            pq.write_table(file.slice(at, 480), folder / f"part-{n:05d}.parquet", row_group_size=120)
        source = partial(types.SimpleNamespace, host=None, fixed_line=None, line_map=None, line_offset=0)
        manifest = types.SimpleNamespace(sources=[source(id=s) for s in {x.sid for x in measures}])
        monkeypatch.setattr(m, "WINDOW_ROWS", window_rows)
        texts = m.Texts(fs.LocalFileSystem(), str(folder))
        rest, many = m._read_split(texts, known, {}, manifest)
        given = m.Measured(x for x in measures if x.measures not in m.COLUMNAR)
        given.checkpoints, given.texts = many, texts
        return rest, given

    def analysed(given, count: int):
        paths = {k: f"jobmanager-{k}.log" for k in range(count)}
        section, jobs = analyse_checkpoints(given, Manifest([], Path("."), None), effective, paths)
        shown = [(p.file, p.line, p.duration_ms, p.text) for j in jobs for ps in j.evidence.values() for p in ps]
        return section, shown

    held: dict[int, list[int]] = {}
    for count in (4, 16):
        measures = _expiring_jobs(count)
        rest, windowed = read(measures, f"jobs{count}", 500)
        whole_rest, whole = read(measures, f"jobs{count}", 10**6)
        assert isinstance(windowed.checkpoints, m.Windows) and not isinstance(whole.checkpoints, m.Windows)
        assert rest.to_pylist() == whole_rest.to_pylist() and rest.num_rows == count  # (the expiries)
        sizes: list[int] = []
        real = m.Windows.__iter__
        monkeypatch.setattr(m.Windows, "__iter__", _one_window_at_a_time(real, sizes))
        section, shown = analysed(windowed, count)
        monkeypatch.setattr(m.Windows, "__iter__", real)
        assert (section, shown) == analysed(whole, count) and shown
        expired = [p for j in section.jobs for p in j.series if p.status == "expired"]
        assert [p.duration_ms for p in expired] == [15000.0] * count  # (from its trigger, in a window)
        held[count] = sizes
        bundle_of = {k: k % 2 for k in range(count)}  # (bundles diagnosed together: every window read, split)
        for split, alone in zip(windowed.by_bundle(bundle_of, 2), whole.by_bundle(bundle_of, 2), strict=True):
            assert analysed(split, count) == analysed(alone, count)
    assert max(held[4]) == max(held[16]) < 2 * 500 and len(held[16]) > len(held[4]) > 1

    interleaved = sorted(_expiring_jobs(4), key=lambda x: (x.time.replace(day=1, hour=0), x.sid))
    rest, together = read(interleaved, "interleaved", 500)
    assert not isinstance(together.checkpoints, m.Windows)


@pytest.mark.unit
def test_a_window_cut_follows_the_captured_job_not_the_events_own(tmp_path, monkeypatch):
    """A checkpoint line names its job (captured, `c_job`) and the event may carry another from its context (the
    `job` column: the job the header or an earlier line named): the analysis groups by the captured one, else
    the event's, else "unknown job" (_split_columnar), and so must the spans the windows are cut by. Job A's
    trigger and completion sit in two row groups whose events name two other jobs; read by the events' jobs, A
    would look closed after the first group and a window cut there would split it."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyarrow import fs

    from flinkdoctor.analytics import metrics as m

    known = m.load_metrics()
    side = {kind: next(n for n, x in enumerate(known) if x.measures == kind) for kind in m.COLUMNAR}
    trigger, done = side["checkpoint-trigger"], side["checkpoint-completed"]
    groups = [  # per row group: (metric, event's job, captured job) of its rows
        [(trigger, "job-of-the-header", "A")],
        [(done, "another-job-in-context", "A")],
        [(trigger, "B", None), (done, "B", None)],
        [(trigger, None, None)],
    ]
    rows = [row for group in groups for row in group]
    table = pa.table(
        {
            "metric": pa.array([r[0] for r in rows], pa.int32()),
            "job": pa.array([r[1] for r in rows], pa.string()),
            "c_job": pa.array([r[2] for r in rows], pa.string()),
        }
    )
    sizes = [len(group) for group in groups]
    with pq.ParquetWriter(tmp_path / "part-00000.parquet", table.schema) as writer:
        for at, size in zip([0, 1, 2, 4], sizes, strict=True):
            writer.write_table(table.slice(at, size))
    texts = m.Texts(fs.LocalFileSystem(), str(tmp_path))
    assert len(texts.groups) == len(groups)

    rows = m._JobRows.of(texts, m._sides(known), list(range(len(groups))))
    spans = {name: (int(rows.first[j]), int(rows.last[j])) for j, name in enumerate(rows.names) if rows.total[j]}
    assert spans == {"A": (0, 1), "B": (2, 2), "unknown job": (3, 3)}
    monkeypatch.setattr(m, "WINDOW_ROWS", 1)
    plan = m.Plan.of(texts, known)
    assert [window for window, _ in plan.windows] == [[0, 1], [2], [3]] and plan.jobs == set(spans)


@pytest.mark.unit
def test_a_job_named_in_every_log_is_carried_beside_the_windows(tmp_path, monkeypatch):
    """Production's JobManager logs are a job each, one after another in the measures' file, but a few
    completions of other jobs are named in every log (an incident's lines copied into each): with them no job
    boundary was a cut (main at 8 GiB: one window, every log's columns at once). Those jobs are carried: their
    rows, few, set apart while each window is read and analysed last with their groups' keys. The windows stay
    under WINDOW_ROWS, and the analysis is the whole file's: the visitor's copies of one checkpoint (one per
    log) reduced to one, a big job's completion read twice (first without its duration) reduced in its window by
    its own rows' keys, not the visitor's."""
    import dataclasses
    import types
    from functools import partial

    import pyarrow.compute as pc
    import pyarrow.parquet as pq
    from pyarrow import fs

    from flinkdoctor.analytics import metrics as m
    from flinkdoctor.analytics.checkpoints import analyse_checkpoints
    from flinkdoctor.sources.ingest import Manifest

    known = m.load_metrics()
    number = {metric.id: n for n, metric in enumerate(known)}
    monkeypatch.setattr(m, "BATCH", 53)
    visitor = "ab" * 16
    visits = [x for x in _job_measures(visitor, 0, 3, datetime(2026, 3, 1)) if x.measures == "checkpoint-completed"]
    measures = []
    for k in range(8):
        own = [x for x in _expiring_jobs(8) if x.sid == k]
        copies = [dataclasses.replace(x, sid=k, line=10_000 + x.line) for x in visits]
        measures += own[:100] + copies + own[100:]
    twice = [x for x in measures if x.sid == 3 and x.measures == "checkpoint-completed"][-1]  # (after the copies)
    untimed = {key: value for key, value in twice.captures.items() if key != "duration_ms"}  # (the timed one wins)
    measures.insert(measures.index(twice), dataclasses.replace(twice, line=twice.line - 1, captures=untimed))
    source = partial(types.SimpleNamespace, host=None, fixed_line=None, line_map=None, line_offset=0)
    manifest = types.SimpleNamespace(sources=[source(id=k) for k in range(8)])
    file = _measures_file(measures, number, dict.fromkeys(range(8), 0))

    def read(window_rows: int):
        folder = tmp_path / f"rows-{window_rows}"
        folder.mkdir()
        for k in range(8):  # (a file per log, as the scan tasks write a log's part)
            own = file.filter(pc.equal(file.column("sid"), k))
            pq.write_table(own, folder / f"part-{k:05d}.parquet", row_group_size=120)
        monkeypatch.setattr(m, "WINDOW_ROWS", window_rows)
        texts = m.Texts(fs.LocalFileSystem(), str(folder))
        given = m.Measured(x for x in measures if x.measures not in m.COLUMNAR)
        given.checkpoints, given.texts = m._read_split(texts, known, {}, manifest)[1], texts
        return given

    def analysed(given):
        paths = {k: f"jobmanager-{k}.log" for k in range(8)}
        section, jobs = analyse_checkpoints(given, Manifest([], Path("."), None), _with_timeout("200 ms"), paths)
        shown = [(p.file, p.line, p.duration_ms, p.text) for j in jobs for ps in j.evidence.values() for p in ps]
        return section, shown

    windowed, whole = read(500), read(10**6)
    assert isinstance(windowed.checkpoints, m.Windows) and windowed.checkpoints.plan.carried == [visitor]
    sizes: list[int] = []
    real = m.Windows.__iter__
    monkeypatch.setattr(m.Windows, "__iter__", _one_window_at_a_time(real, sizes))
    section, shown = analysed(windowed)
    monkeypatch.setattr(m.Windows, "__iter__", real)
    assert (section, shown) == analysed(whole) and shown
    assert len(sizes) > 2 and max(sizes) <= 500 and sizes[-1] == len(visits)  # (the visitor's: 3, of 24 copies)
    assert sum(sizes) == len(whole.checkpoints) == file.num_rows - 7 * len(visits) - 1 - 8  # (8 expiries: no column)


@pytest.mark.unit
def test_other_kinds_are_decoded_only_from_the_row_groups_holding_them(tmp_path, monkeypatch):
    """Past WINDOW_ROWS the rows of kinds other than triggers and completions are read in a pass of their own
    before the windows: only the row groups that hold any are decoded (a session cluster's file holds none, and
    its every row was decoded for nothing), and the rows are those a read of the whole file gives."""
    import types
    from functools import partial

    import pyarrow.parquet as pq
    from pyarrow import fs

    from flinkdoctor.analytics import metrics as m

    known = m.load_metrics()
    number = {metric.id: n for n, metric in enumerate(known)}
    monkeypatch.setattr(m, "BATCH", 53)
    measures = _expiring_jobs(8)
    file = _measures_file(measures, number)
    pq.write_table(file, tmp_path / "part-00000.parquet", row_group_size=120)
    source = partial(types.SimpleNamespace, host=None, fixed_line=None, line_map=None, line_offset=0)
    manifest = types.SimpleNamespace(sources=[source(id=s) for s in {x.sid for x in measures}])
    sides = m._sides(known)
    texts = m.Texts(fs.LocalFileSystem(), str(tmp_path))
    holding = [
        g
        for g, (part, index) in enumerate(texts.groups)
        if (sides[part.read_row_group(index, columns=["metric"]).column(0).to_numpy()] < 0).any()
    ]
    assert 0 < len(holding) < len(texts.groups)  # (the expiries: in a few row groups of many)
    read: list = []
    batches = m.Texts.batches

    def spied(self, columns, size, groups=None):
        read.append((tuple(columns), groups))
        return batches(self, columns, size, groups)

    monkeypatch.setattr(m.Texts, "batches", spied)
    monkeypatch.setattr(m, "WINDOW_ROWS", 500)
    rest, windows = m._read_split(texts, known, {}, manifest)
    assert isinstance(windows, m.Windows) and [groups for _, groups in read] == [holding]  # (the rest's pass)
    monkeypatch.setattr(m, "WINDOW_ROWS", 10**6)
    whole, _ = m._read_split(texts, known, {}, manifest)
    assert rest.to_pylist() == whole.to_pylist() and rest.num_rows == 8


@pytest.mark.unit
@pytest.mark.parametrize("keyed", [False, True])
def test_a_batchs_other_kinds_are_left_out_of_its_columns_as_if_never_read(keyed):
    """A batch of the measures' file holding other kinds beside its triggers and completions gives the columns
    of those alone (metrics._split_columnar leaves the others out of the columns it makes, not out of the batch:
    copying its every string column was ~40 % of the split): the same values, and dictionaries that hold only
    the kept rows' jobs and hosts, here where an other row comes first and names a job and a host no trigger or
    completion names."""
    import types
    from functools import partial

    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from flinkdoctor.analytics import metrics as m

    known = m.load_metrics()
    number = {metric.id: n for n, metric in enumerate(known)}
    measures = _expiring_jobs(3)
    file = _measures_file(measures, number, {x.sid: 0 for x in measures} if keyed else None)
    other = m._sides(known)[file.column("metric").to_numpy()] < 0
    first = int(np.flatnonzero(other)[0])
    file = file.take(pa.array([first, *(k for k in range(file.num_rows) if k != first)]))
    other = np.concatenate([[True], np.delete(other, first)])
    for name, value in (("job", "f" * 32), ("host", "elsewhere")):  # (named by the other rows only)
        file = file.set_column(file.schema.get_field_index(name), name, pa.array(np.where(other, value, None)))
    for key in m.CAPTURED:  # (an other kind's captures are in its map: null in these columns, as written)
        at = file.schema.get_field_index(f"c_{key}")
        file = file.set_column(at, f"c_{key}", pc.if_else(pa.array(other), None, file.column(at)))
    file = file.set_column(file.schema.get_field_index("line"), "line", pa.array(range(file.num_rows), pa.int64()))
    source = partial(types.SimpleNamespace, host=None, fixed_line=None, line_map=None, line_offset=0)
    manifest = types.SimpleNamespace(sources=[source(id=s) for s in {x.sid for x in measures}])
    rest, columns = m._split_columnar(file, known, {}, manifest)
    _, alone = m._split_columnar(file.filter(pa.array(~other)), known, {}, manifest)
    assert rest.num_rows == 3 and columns.num_rows == file.num_rows - 3
    assert columns.to_pylist() == alone.to_pylist()
    for name in ("metric", "kind", "job", "host"):
        assert columns.column(name).chunk(0).dictionary == alone.column(name).chunk(0).dictionary, name
    assert columns.column("job").chunk(0).dictionary.to_pylist() == [f"{k + 1:032x}" for k in range(3)]
    assert columns.column("host").null_count == columns.num_rows  # (no source's host known, none on a line)
    # a trigger or completion without a captured job takes its event's, else none; a source's known host fills
    # the lines that name none
    bulk = np.flatnonzero(~other)
    uncaptured = file.column("c_job").to_pylist()
    events = [None] * file.num_rows
    uncaptured[bulk[0]] = uncaptured[bulk[1]] = None
    events[bulk[0]] = "a" * 32
    file = file.set_column(file.schema.get_field_index("c_job"), "c_job", pa.array(uncaptured, pa.string()))
    file = file.set_column(file.schema.get_field_index("job"), "job", pa.array(events, pa.string()))
    named = file.column("host").to_pylist()
    last = int(np.flatnonzero(file.column("sid").to_numpy() == 1)[-1])
    named[last] = "tm-9"  # (the line's own host first)
    file = file.set_column(file.schema.get_field_index("host"), "host", pa.array(named, pa.string()))
    manifest.sources[1].host = "tm-1"
    _, columns = m._split_columnar(file, known, {}, manifest)
    jobs, hosts = columns.column("job").to_pylist(), columns.column("host").to_pylist()
    assert jobs[:3] == ["a" * 32, "unknown job", f"{1:032x}"]
    sid = columns.column("sid").to_pylist()
    assert [h for h, s in zip(hosts, sid, strict=True) if s == 1] == ["tm-1"] * (sid.count(1) - 1) + ["tm-9"]
    assert {h for h, s in zip(hosts, sid, strict=True) if s != 1} == {None}


@pytest.mark.unit
def test_read_ahead_keeps_the_order_and_raises_the_readers_error():
    """The next batch is read by a thread while this one is split (metrics._ahead): the batches come in their
    order, an error reading one is raised to the caller, and a caller that stops early leaves no thread."""
    import threading

    from flinkdoctor.analytics.metrics import _ahead

    assert list(_ahead(iter(range(1000)))) == list(range(1000))
    assert list(_ahead(iter([]))) == []

    def failing():
        yield 1
        raise OSError("the measures' file went away")

    got = []
    with pytest.raises(OSError, match="went away"):
        for item in _ahead(failing()):
            got.append(item)
    assert got == [1]
    early = _ahead(iter(range(10)))
    assert next(early) == 0
    early.close()
    assert not [t for t in threading.enumerate() if t.name.startswith("flinkdoctor-read-ahead")]


@pytest.mark.unit
def test_checkpoints_each_read_once_are_kept_without_their_groups_keys(tmp_path, monkeypatch):
    """The triggers and completions written unreduced with their groups' keys (bundle, number as written, file
    order), two jobs' checkpoints each once: the driver holds no key (a long run's keys would double its
    columns) and reads no row again, and its columns are those the keyed reduction keeps. One checkpoint's
    completion read twice, or written once as "7" and once as "0007" (Spark's key is the text: two groups),
    makes those two rows' keys needed: they alone are split again, with their keys, and the columns are again
    the keyed reduction's (one completion dropped, or both kept)."""
    import dataclasses
    import types

    import pyarrow.parquet as pq
    from pyarrow import fs

    from flinkdoctor.analytics import metrics as m
    from flinkdoctor.analytics.columns import COMPLETED_FIELDS, TRIGGER_FIELDS, Builder

    known = m.load_metrics()
    number = {metric.id: n for n, metric in enumerate(known)}
    jobs = ["1fdf09bfd9a6f5522794ffa2f96c327e", "e" * 32]
    once = sorted(
        _job_measures(jobs[0], 0, 90, datetime(2026, 3, 1)) + _job_measures(jobs[1], 1, 60, datetime(2026, 3, 1)),
        key=lambda x: (x.time, x.sid),
    )

    def completion(n: int):
        return next(x for x in once if x.measures == "checkpoint-completed" and x.captures["checkpoint"] == str(n))

    seven, twelve = completion(7), completion(12)
    odd = [*once, dataclasses.replace(seven, line=seven.line + 1, captures={**seven.captures, "checkpoint": "0007"})]
    twice = [*once, dataclasses.replace(twelve, line=twelve.line + 1)]
    manifest = types.SimpleNamespace(
        sources=[types.SimpleNamespace(id=s, host=None, fixed_line=None, line_map=None, line_offset=0) for s in (0, 1)]
    )
    split_again = []
    real = m._shared_rows
    monkeypatch.setattr(m, "_shared_rows", lambda *a: split_again.append(real(*a)) or split_again[-1])
    monkeypatch.setattr(m, "BATCH", 41)
    for name, rows, again, kept in (("once", once, 0, 0), ("odd", odd, 2, 1), ("twice", twice, 2, 0)):
        (tmp_path / name).mkdir()
        pq.write_table(_measures_file(rows, number, {0: 0, 1: 0}), tmp_path / name / "part-00000.parquet")
        texts = m.Texts(fs.LocalFileSystem(), str(tmp_path / name))
        split_again.clear()
        read = m._read_split(texts, known, {}, manifest)[1]
        assert sum(t.num_rows for found in split_again for t in found.values()) == again, name
        triggers = sum(x.measures == "checkpoint-trigger" for x in rows)
        builder = Builder(triggers, len(rows) - triggers, keyed=True)
        schema = texts.files[0].schema_arrow
        columns = [c for c in schema.names if c != "line"]
        line = schema.names.index("line")
        keyed = m._read_batches(texts, columns, line, (known, {}, manifest), builder, True)[1].columns()
        assert len(read) == len(keyed) == len(once) + kept and read.jobs == keyed.jobs, name
        for field in [f"t_{f}" for f in TRIGGER_FIELDS] + [f"c_{f}" for f in COMPLETED_FIELDS]:
            assert getattr(read, field).tolist() == getattr(keyed, field).tolist(), (name, field)


@pytest.mark.unit
def test_the_driver_keeps_the_line_of_each_checkpoint_sparks_aggregate_kept(tmp_path, monkeypatch):
    """The triggers and completions written unreduced, each checkpoint's lines three times (sources 0 and 1 of
    one bundle, source 2 of another), read a few rows at a time: the driver keeps per bundle a trigger's last
    line (source 1) and a completion's first (source 0), as `_reduced`'s order says, and the columns equal those
    read from the kept lines alone."""
    import dataclasses
    import types

    import pyarrow.parquet as pq
    from pyarrow import fs

    from flinkdoctor.analytics import metrics as m
    from flinkdoctor.analytics.columns import COMPLETED_FIELDS, TRIGGER_FIELDS

    known = m.load_metrics()
    number = {metric.id: n for n, metric in enumerate(known)}
    job = "1fdf09bfd9a6f5522794ffa2f96c327e"
    once = _job_measures(job, 0, 120, datetime(2026, 3, 1))
    copies = {sid: [dataclasses.replace(x, sid=sid) for x in once] for sid in (0, 1, 2)}
    bundle_of = {0: 0, 1: 0, 2: 1}
    every = [x for n in range(len(once)) for x in (copies[2][n], copies[1][n], copies[0][n])]  # later first
    kept = [x for x in every if (x.sid == 1) == (x.measures == "checkpoint-trigger") or x.sid == 2]
    manifest = types.SimpleNamespace(
        sources=[
            types.SimpleNamespace(id=s, host=None, fixed_line=None, line_map=None, line_offset=0) for s in (0, 1, 2)
        ]
    )
    monkeypatch.setattr(m, "BATCH", 37)
    read = {}
    for name, rows in (("every", every), ("kept", kept)):
        (tmp_path / name).mkdir()
        pq.write_table(_measures_file(rows, number, bundle_of), tmp_path / name / "part-00000.parquet")
        read[name] = m._read_split(m.Texts(fs.LocalFileSystem(), str(tmp_path / name)), known, {}, manifest)[1]
    assert len(read["every"]) == len(kept) == 2 * len(once) < len(every)
    assert sorted(set(read["every"].t_sid.tolist())) == [1, 2] and sorted(set(read["every"].c_sid.tolist())) == [0, 2]
    assert read["every"].jobs == read["kept"].jobs == [job]
    for name in [f"t_{f}" for f in TRIGGER_FIELDS] + [f"c_{f}" for f in COMPLETED_FIELDS if f != "row"]:
        assert getattr(read["every"], name).tolist() == getattr(read["kept"], name).tolist(), name


def test_a_long_runs_columns_keep_numbers_only(tmp_path):
    """A long run's triggers and completions are read into the few fixed-width columns the analysis reads, as
    compact as their values allow (columns.Held; here a trigger 20 bytes, a completion 24, however long its line):
    no Arrow table of every captured field, no text, and the analysis of those columns is the one of the same
    lines held whole."""
    import numpy as np
    import pyarrow.parquet as pq
    from pyarrow import fs

    from flinkdoctor.analytics.checkpoints import analyse_checkpoints
    from flinkdoctor.analytics.columns import COMPLETED_FIELDS, TRIGGER_FIELDS, Columns
    from flinkdoctor.analytics.metrics import Measured, Texts
    from flinkdoctor.sources.ingest import Manifest

    measures = _job_measures("1fdf09bfd9a6f5522794ffa2f96c327e", 0, 500, datetime(2026, 3, 1))
    held = _as_columns(measures)
    (tmp_path / "measures").mkdir()
    pq.write_table(held.select(["text"]).rename_columns(["line"]), tmp_path / "measures" / "part-00000.parquet")
    columns = Columns.of_table(held.set_column(held.schema.get_field_index("text"), "text", [list(range(1000))]))
    for name in [f"t_{f}" for f in TRIGGER_FIELDS] + [f"c_{f}" for f in COMPLETED_FIELDS]:
        assert isinstance(getattr(columns, name), np.ndarray) and getattr(columns, name).dtype != object, name
    # one job, file, host and size: each one value, no array; numbers, lines and rows in 4 bytes, the durations
    # (whole milliseconds) in float32, the times in 8
    assert columns.text is None and columns.nbytes == 500 * (4 + 8 + 8) + 500 * (4 + 8 + 4 + 4 + 4)
    stored, whole = Measured(), Measured()
    stored.checkpoints, stored.texts = columns, Texts(fs.LocalFileSystem(), str(tmp_path / "measures"))
    whole.checkpoints = held
    effective, paths = _with_timeout(), {0: "jobmanager.log"}
    read, read_jobs = analyse_checkpoints(stored, Manifest([], Path("."), None), effective, paths)
    plain, plain_jobs = analyse_checkpoints(whole, Manifest([], Path("."), None), effective, paths)
    assert read == plain and read.jobs[0].counts == {"completed": 500}
    shown = [(p.line, p.text) for j in read_jobs for ps in j.evidence.values() for p in ps]
    assert shown == [(p.line, p.text) for j in plain_jobs for ps in j.evidence.values() for p in ps] and shown


def test_a_long_runs_statistics_make_no_python_object_per_checkpoint():
    """The percentiles, the interval (the median gap between triggers), the trend and the series of a long run
    are taken from the numpy columns: what the analysis allocates beside them grows by less than 48 bytes a
    checkpoint (a Python float alone is 24, 32 in a list: each statistic made a list of them before). The series'
    Points are bounded (SERIES_MAX), the same for both runs."""
    import tracemalloc

    from flinkdoctor.analytics.checkpoints import analyse_checkpoints
    from flinkdoctor.analytics.columns import Columns
    from flinkdoctor.analytics.config import Effective
    from flinkdoctor.analytics.metrics import Measured
    from flinkdoctor.sources.ingest import Manifest

    def peak(n: int) -> int:
        given = Measured()
        given.checkpoints = Columns.of_table(_as_columns(_job_measures("e" * 32, 0, n, datetime(2026, 3, 1))))
        given.checkpoints.sort()  # (in place, once: what is measured is what the analysis makes beside them)
        tracemalloc.start()
        try:
            section, _ = analyse_checkpoints(given, Manifest([], Path("."), None), Effective(), {0: "jm.log"})
            _, most = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        (job,) = section.jobs
        assert job.counts == {"completed": n} and job.interval and job.interval.ms == 2000 and job.trend
        assert job.percentiles["max"] == 20 + n and len(job.series) == 10_000
        return most

    few, many = peak(25_000), peak(100_000)
    assert many - few < 48 * 75_000


def test_a_long_runs_series_keeps_the_points_the_plain_series_keeps():
    """Past its bound, a job's series in columns keeps each time span's shortest and longest (the earliest of
    equal ones) exactly as the series of the same points held one by one does, with other completed points
    (REST history) merged in, ties in time and in duration, and a checkpoint without a duration."""
    import random

    from flinkdoctor.analytics.checkpoints import Bulk, Point, _series

    rng = random.Random(25)
    job, start = "1fdf09bfd9a6f5522794ffa2f96c327e", datetime(2026, 3, 1)
    measures = _job_measures(job, 0, 3000, start)
    for m in measures:  # durations with many ties, times with some, one without a duration
        if m.measures == "checkpoint-completed":
            m.captures["duration_ms"] = str(rng.choice([5, 7, 7, 9, 300]))
            if rng.random() < 0.2:
                object.__setattr__(m, "time", start + timedelta(seconds=rng.randrange(0, 6000, 20)))
    measures[-1].captures.pop("duration_ms")
    measures.sort(key=lambda m: (m.time, m.line))
    bulk = Bulk.of(_as_columns(measures), {0: "jobmanager.log"})
    completed = bulk.completed(job)
    assert completed is not None
    every = completed.points(range(len(completed)))
    rest = [  # completed elsewhere (a REST history), some at the same time as a logged one
        Point(job, 10_000 + k, start + timedelta(seconds=40 * k), "completed", float(k % 4), None, "REST", 1)
        for k in range(1, 90)
    ]
    for most in (40, 301, 2000):
        ours = completed.series_with(rest, most)
        plain = _series(sorted(every + rest, key=lambda p: (p.time, p.id or 0)), most)
        assert [(p.id, p.time, p.duration_ms) for p in ours] == [(p.id, p.time, p.duration_ms) for p in plain]


@pytest.mark.unit
def test_a_captured_number_longer_than_a_long_is_none_not_a_traceback():
    """A long run's captures are read by Arrow, and by Python where Arrow cannot (digits of another script). A
    checkpoint number or size of 20 digits or more (a corrupt or hostile line; `\\d+` takes any length) fits in
    neither int64 column: it reads as none, as an unreadable one does, instead of failing the diagnosis."""
    import pyarrow as pa

    from flinkdoctor.analytics.metrics import _numbers

    digits = pa.array(["42", "9" * 25, "\u0664\u0662", "-" + "9" * 19, None])  # (Arabic-Indic 42)
    assert _numbers(digits, pa.int64(), int).to_pylist() == [42, None, 42, None, None]
    assert _numbers(pa.array(["7", "9" * 19]), pa.int64(), int).to_pylist() == [7, None]


def test_a_long_runs_trend_is_the_statistics_modules_to_the_last_bit(tmp_path):
    """The trend's fit over numpy slices (_fit) gives the very floats statistics.linear_regression and
    statistics.correlation give (Python 3.10-3.11: each product rounded, then fsum): on the completed checkpoints
    of real lab runs (their line times and checkpointDuration), and on a long run of 200,003 checkpoints made of
    those durations, growing, with a time between them that is not a round number of hours."""
    import statistics

    import numpy as np

    from flinkdoctor.analytics.checkpoints import _fit

    completed = re.compile(r"^(\S+ \S+) .*Completed checkpoint \d+ for job \w+ \(\d+ bytes, checkpointDuration=(\d+)")
    runs = []
    for name in ("1.20.3/healthy", "2.1.1/healthy"):
        folder = unpacked(LAB / f"{name}.tar.gz", tmp_path / name.replace("/", "-"))
        (log,) = folder.glob("*/log/*standalonesession*.log")
        found = [completed.match(line) for line in log.read_text("utf-8").splitlines()]
        timed = [(datetime.strptime(m[1], "%Y-%m-%d %H:%M:%S,%f"), float(m[2])) for m in found if m]
        assert len(timed) >= 5, name
        hours = [(t - timed[0][0]).total_seconds() / 3600 for t, _ in timed]
        runs.append((hours, [d for _, d in timed]))
    lab = [d for _, durations in runs for d in durations]
    n = 200_003
    runs.append(([k * 1.7 / 3600 for k in range(n)], [lab[k % len(lab)] + k // 1000 for k in range(n)]))
    for hours, durations in runs:
        fitted = _fit(np.array(hours, np.float64), np.array(durations, np.float64))
        expected = statistics.linear_regression(hours, durations)
        wanted = (expected.slope, expected.intercept, statistics.correlation(hours, durations))
        if sys.version_info < (3, 12):
            assert fitted == wanted
        else:  # 3.12 sums the products exactly (sumprod): the last bit may differ from the 3.11 formula kept
            assert fitted == pytest.approx(wanted, rel=1e-9, abs=1e-12)


@pytest.mark.unit
def test_the_driver_reduces_other_kinds_as_it_reads_them(tmp_path, monkeypatch):
    """Declines (one per task per checkpoint: a day of them is millions of lines) written unreduced are reduced as
    the file is read, the winners so far carried with the next rows: the rows kept are those one reduction over
    every row keeps, and the driver never holds more than a batch's lines beside the winners."""
    import random
    import types

    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyarrow import fs

    from flinkdoctor.analytics import metrics as m

    known = m.load_metrics()
    number = {metric.id: n for n, metric in enumerate(known)}
    jobs = ("1fdf09bfd9a6f5522794ffa2f96c327e", "4b8e2a3f6c1d9e0a7b5c3d2e1f0a9b8c")
    rows = [
        (bundle, job, str(checkpoint), task)
        for bundle in (0, 1)
        for job in jobs
        for checkpoint in range(1, 41)
        for task in range(12)
    ]
    random.Random(7).shuffle(rows)  # the tasks' declines of a checkpoint in any order, interleaved
    n = len(rows)
    file = pa.table(
        {
            "sid": pa.array([b * 2 + t % 2 for b, _, _, t in rows], pa.int32()),
            "bundle": pa.array([b for b, _, _, _ in rows], pa.int32()),
            "block": pa.array([0] * n, pa.int64()),
            "first_rel": pa.array(range(n), pa.int64()),
            "time": pa.array([datetime(2026, 3, 1) + timedelta(milliseconds=k) for k in range(n)], pa.timestamp("us")),
            "host": pa.array([None] * n, pa.string()),
            "metric": pa.array([number["checkpoint-declined"]] * n, pa.int32()),
            "idx": pa.array([0] * n, pa.int32()),
            "line": pa.array([f"row {k}" for k in range(n)], pa.string()),
            "captures": pa.array(
                [[("checkpoint", c), ("job", j)] for _, j, c, _ in rows], pa.map_(pa.string(), pa.string())
            ),
            "job": pa.array([None] * n, pa.string()),
            **{f"c_{key}": pa.array([None] * n, pa.string()) for key in m.CAPTURED},
        }
    )
    (tmp_path / "measures").mkdir()
    pq.write_table(file, tmp_path / "measures" / "part-00000.parquet", row_group_size=500)
    manifest = types.SimpleNamespace(
        sources=[
            types.SimpleNamespace(id=s, host=None, fixed_line=None, line_map=None, line_offset=0) for s in range(4)
        ]
    )
    texts = m.Texts(fs.LocalFileSystem(), str(tmp_path / "measures"))
    whole = m._read_split(texts, known, {}, manifest)[0]
    reductions, held = [], []
    reduce = m._reduce_rest

    def counted(table, metrics, **options):
        held.append(table.num_rows)
        out = reduce(table, metrics, **options)
        reductions.append(out.num_rows)
        return out

    monkeypatch.setattr(m, "BATCH", 97)
    monkeypatch.setattr(m, "_reduce_rest", counted)
    rest = m._read_split(texts, known, {}, manifest)[0]
    assert whole.num_rows == 2 * 2 * 40 == rest.num_rows  # one per bundle, job and checkpoint
    assert rest.to_pylist() == whole.to_pylist()
    assert len(reductions) > 10 and max(held) <= max(2 * 97, 2 * max(reductions)) + 97


@pytest.mark.unit
def test_a_duration_of_hundreds_of_digits_gives_no_trend_and_no_overflow():
    """A hostile completion line may carry a duration of 309 digits: read as 1e308 (metrics._numbers, as every
    captured duration is read), two of them overflowed the trend's exact sums (OverflowError in fsum: a crash,
    exit 4). A duration no float holds exactly gives no trend; the rest of the run's figures are unaffected."""
    import numpy as np
    import pyarrow as pa

    from flinkdoctor.analytics.checkpoints import _trend_of
    from flinkdoctor.analytics.metrics import _numbers

    captured = [str(1000 + 7 * i) for i in range(1200)]
    captured[10] = captured[600] = "1" + "0" * 308
    values = _numbers(pa.array(captured), pa.float64(), float).to_numpy(zero_copy_only=False).copy()
    assert values[10] == 1e308
    hours = np.arange(1200, dtype=np.float64) / 60  # a completion a minute for 20 hours
    assert _trend_of(hours, values, None) is None
    values[10] = values[600] = 1000.0
    assert _trend_of(hours, values, None) is not None  # the same run without them has its trend


@pytest.mark.unit
def test_the_measures_files_hold_no_arrow_memory_once_read(tmp_path):
    """Each scan task writes its own measures' file, and the driver keeps them open after the read (Texts: a shown
    point's text is read back later). Opened with Parquet's pre-buffer, each file kept its last row group's
    column chunks for the rest of the run: what the driver held grew with the files, so with the input (5.6 MB a
    file at production 8 GiB). Read without it: every file's rows, a line read back from the first and the
    last, and nothing held, with 2 files or 12."""
    import types

    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyarrow import fs

    from flinkdoctor.analytics import metrics as m

    known = m.load_metrics()
    number = {metric.id: n for n, metric in enumerate(known)}
    manifest = types.SimpleNamespace(
        sources=[types.SimpleNamespace(id=0, host=None, fixed_line=None, line_map=None, line_offset=0)]
    )
    held = {}
    for files in (2, 12):
        folder = tmp_path / f"files-{files}"
        folder.mkdir()
        written = []
        for n in range(files):  # (a job of its own in each task's file: no checkpoint read twice)
            written.append(_job_measures(f"{n:032x}", 0, 2000, datetime(2026, 3, 1) + timedelta(days=n)))
            pq.write_table(_measures_file(written[-1], number), folder / f"part-{n:05d}.parquet", row_group_size=700)
        before = pa.total_allocated_bytes()
        texts = m.Texts(fs.LocalFileSystem(), str(folder))
        rest, many = m._read_split(texts, known, {}, manifest)
        del rest
        held[files] = pa.total_allocated_bytes() - before
        assert len(many.t_job) == len(many.c_job) == files * 2000 and len(many.jobs) == files
        last = 4000 * (files - 1) + 3999  # (the last file's last completion)
        assert texts.read([1, last]) == [written[0][1].text, written[-1][-1].text]
    assert held[12] <= held[2] + 4096 and held[12] < 64 << 10, held


def _sorted_as_before(columns) -> dict:
    """The columns as Columns.sort ordered them before it skipped the ordered and sorted by views (the
    reference): the job codes made ranks of the names, then a stable lexsort of each side."""
    import numpy as np

    from flinkdoctor.analytics.columns import COMPLETED_FIELDS, TRIGGER_FIELDS

    rank = np.empty(len(columns.jobs), dtype=np.int32)
    rank[np.argsort(np.array(columns.jobs, dtype=object), kind="stable")] = np.arange(len(columns.jobs))
    t_job, c_job = rank[columns.t_job], rank[columns.c_job]
    t_order = np.lexsort((columns.t_time.astype(np.int64), columns.t_number, t_job))
    c_order = np.lexsort((columns.c_number, columns.c_time.astype(np.int64), np.isnat(columns.c_time), c_job))
    out = {f"t_{f}": getattr(columns, f"t_{f}")[t_order] for f in TRIGGER_FIELDS}
    out |= {f"c_{f}": getattr(columns, f"c_{f}")[c_order] for f in COMPLETED_FIELDS}
    out["t_job"], out["c_job"] = t_job[t_order], c_job[c_order]
    return out


def _hostile_columns(rows: int, seed: int):
    """Triggers and completions of three jobs (names not in the order read) with what a hostile log gives:
    checkpoint numbers repeated, skipped, absent (-1) and past 2^53; times equal, absent (NaT) and out of order;
    durations absent (NaN), negative, infinite and of 309 digits."""
    import numpy as np

    from flinkdoctor.analytics.columns import Columns

    rng = np.random.default_rng(seed)

    def times():
        values = (rng.integers(0, rows // 3 + 1, rows) * 1_000_000).astype("datetime64[us]")
        values[rng.random(rows) < 0.05] = np.datetime64("NaT")
        return values

    def numbers():
        values = rng.integers(-1, rows // 2, rows)
        values[rng.random(rows) < 0.01] = 2**62 + 7
        return values

    durations = rng.integers(0, 50, rows).astype(np.float64)
    for value, share in ((np.nan, 0.05), (-5.0, 0.01), (np.inf, 0.01), (1e308, 0.01)):
        durations[rng.random(rows) < share] = value
    return Columns(
        jobs=["e" * 32, "1fdf09bfd9a6f5522794ffa2f96c327e", "9" * 32],
        hosts=["tm-1"],
        t_job=rng.integers(0, 3, rows).astype(np.int32),
        t_number=numbers(),
        t_time=times(),
        t_at=times(),
        t_sid=rng.integers(0, 4, rows).astype(np.int32),
        c_job=rng.integers(0, 3, rows).astype(np.int32),
        c_number=numbers(),
        c_time=times(),
        c_duration=durations,
        c_size=rng.integers(-1, 10**9, rows),
        c_sid=rng.integers(0, 4, rows).astype(np.int32),
        c_line=np.arange(rows, dtype=np.int64),
        c_host=rng.integers(-1, 1, rows).astype(np.int32),
        c_row=np.arange(rows, dtype=np.int64) * 2 + 1,
    )


@pytest.mark.unit
def test_the_checkpoints_columns_sort_as_before_and_rows_in_order_stay_in_place(monkeypatch):
    """Columns.sort gives the order it gave (the reference: job ranks, then a stable lexsort of copies of the
    times), on hostile columns and on two jobs' real lines read interleaved; checked a few rows at a time (a
    disorder at every place of a slice's edge is found); columns already in that order are the same arrays after,
    not copies."""
    import numpy as np

    from flinkdoctor.analytics import columns as co

    monkeypatch.setattr(co, "ORDER_STEP", 7)
    jobs = ["e" * 32, "1fdf09bfd9a6f5522794ffa2f96c327e"]
    real = sorted(
        _job_measures(jobs[0], 0, 40, datetime(2026, 3, 1)) + _job_measures(jobs[1], 1, 30, datetime(2026, 3, 1)),
        key=lambda x: (x.time, x.sid),
    )
    for columns in [_hostile_columns(rows, seed) for rows, seed in ((1, 0), (2, 1), (50, 2), (3001, 3))] + [
        co.Columns.of_table(_as_columns(real))
    ]:
        expected = _sorted_as_before(columns)
        columns.sort()
        assert columns.jobs == sorted(columns.jobs)
        for name, values in expected.items():
            assert getattr(columns, name).tolist() == values.tolist() or np.array_equal(
                getattr(columns, name), values, equal_nan=True
            ), name
        kept = {name: getattr(columns, name) for name in expected}
        columns.sorted = False
        columns.sort()  # (in order now: nothing moved, nothing copied)
        assert all(getattr(columns, name) is array for name, array in kept.items())
    for at in range(1, 30):  # one pair out of order anywhere, slices of 7 rows
        ordered = np.arange(30, dtype=np.int64)
        ordered[at - 1], ordered[at] = ordered[at], ordered[at - 1]
        assert not co._ordered(lambda rows, keys=ordered: (keys[rows],), 30), at
        assert co._ordered(lambda rows: (np.arange(30)[rows],), 30)
        assert not co._ordered(lambda rows, keys=ordered: (keys[rows], np.zeros(30, np.int32)[rows]), 30)
        assert co._ordered(lambda rows, keys=ordered: (keys[rows], np.arange(30)[rows]), 30)  # (the last decides)


@pytest.mark.unit
def test_sorting_ordered_checkpoints_allocates_nothing_that_grows_with_them(monkeypatch):
    """One job's log read in time order (a long run: the checkpoints axis) is in the analysis' order already:
    its sort allocates only the slices it compares (tracemalloc sees numpy's allocations), the same at 100,000
    checkpoints and at 400,000, where the lexsort's index and its column copies took 16 bytes a row and more."""
    import tracemalloc

    import numpy as np

    from flinkdoctor.analytics import columns as co

    monkeypatch.setattr(co, "ORDER_STEP", 1 << 14)

    def peak(rows: int) -> int:
        at = (np.arange(rows, dtype=np.int64) * 2_000_000).astype("datetime64[us]")
        columns = co.Columns(
            jobs=["e" * 32],
            t_job=np.zeros(rows, np.int32),
            t_number=np.arange(1, rows + 1, dtype=np.int64),
            t_time=at,
            t_at=at.copy(),
            t_sid=np.zeros(rows, np.int32),
            c_job=np.zeros(rows, np.int32),
            c_number=np.arange(1, rows + 1, dtype=np.int64),
            c_time=at + np.timedelta64(300, "ms"),
            c_duration=np.full(rows, 300.0),
            c_size=np.full(rows, 7387, np.int64),
            c_sid=np.zeros(rows, np.int32),
            c_line=np.arange(rows, dtype=np.int64) * 2 + 1,
            c_host=np.full(rows, -1, np.int32),
            c_row=np.arange(rows, dtype=np.int64) * 2 + 1,
        )
        tracemalloc.start()
        try:
            columns.sort()
            _, most = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert columns.c_number[0] == 1 and columns.c_number[-1] == rows
        return most

    few, many = peak(100_000), peak(400_000)
    assert many < 1 << 20 and many - few < 64 << 10, (few, many)


@pytest.mark.unit
def test_the_rows_that_may_share_a_checkpoint_are_found_a_slice_at_a_time(monkeypatch):
    """Builder.shared compares each row with its neighbour in (job, number) order a few rows at a time: the rows
    it names are those the whole comparison named (the reference), with repeats across every slice's edge,
    numbers absent, non-consecutive and past 2^62, and none when each checkpoint is read once."""
    import numpy as np

    from flinkdoctor.analytics import columns as co

    def reference(job, number):
        order = np.lexsort((number, job))
        same = (np.diff(job[order]) == 0) & (np.diff(number[order]) == 0)
        twice = np.zeros(len(job), dtype=np.bool_)
        twice[1:] = same
        twice[:-1] |= same
        return np.sort(order[twice])

    monkeypatch.setattr(co, "ORDER_STEP", 7)
    rng = np.random.default_rng(5)
    for rows in (0, 1, 2, 7, 8, 15, 400):
        builder = co.Builder(rows, rows)
        for side in ("t", "c"):
            job = rng.integers(0, 3, rows).astype(np.int32)
            number = rng.choice(np.array([-1, 1, 2, 5, 9, 2**62 + 3, *range(100, 100 + rows)]), rows)
            builder._held[f"{side}_job"].put(0, job)
            builder._held[f"{side}_number"].put(0, number)
        builder._filled = [rows, rows]
        found = builder.shared()
        for side in ("t", "c"):
            job, number = builder._held[f"{side}_job"].view(), builder._held[f"{side}_number"].view()
            expected = reference(job, number)
            assert found.get(side, np.zeros(0, np.int64)).tolist() == expected.tolist(), (rows, side)
    once = co.Builder(50, 50)
    for side in ("t", "c"):
        once._held[f"{side}_job"].put(0, np.repeat(np.arange(5, dtype=np.int32), 10))
        once._held[f"{side}_number"].put(0, np.tile(np.arange(1, 20, 2), 5))
    once._filled = [50, 50]
    assert once.shared() == {}


def _held(values, batch: int = 100):
    """A column as columns.Held keeps it when its rows come `batch` at a time (the Builder's reads)."""
    from flinkdoctor.analytics.columns import DTYPES, Held

    kind = {"i": "number", "f": "duration", "M": "time"}[values.dtype.kind]
    held = Held(len(values), *DTYPES[kind])
    for at in range(0, len(values), batch):
        held.put(at, values[at : at + batch])
    return held


@pytest.mark.unit
def test_a_held_column_keeps_every_value_exactly_in_its_compact_dtype_or_a_wider_one():
    """columns.Held keeps each value as it was given: one value while every row has it (a view of no bytes),
    then the compact dtype, widened once when a later batch brings a value it cannot hold (a number past 2^31,
    a duration that float32 rounds, an infinity), the rows before kept."""
    import numpy as np

    from flinkdoctor.analytics.columns import Held

    def same(held, values):
        view = held.view()
        return view.dtype.kind == values.dtype.kind and np.array_equal(
            view.astype(values.dtype), values, equal_nan=values.dtype.kind in "fM"
        )

    times = np.full(1000, np.datetime64("NaT"), dtype="datetime64[us]")  # (a stamped trigger's line time)
    one = _held(times)
    assert same(one, times) and one.view().strides == (0,) and one.array is None
    jobs = np.zeros(1000, dtype=np.int32)
    assert _held(jobs).array is None and _held(jobs).view().strides == (0,)
    for dtype, value, wide in ((np.int64, 2**31, "int64"), (np.int64, -(2**31) - 1, "int64")):
        numbers = np.arange(1000, dtype=dtype)
        assert _held(numbers).view().dtype == np.int32 and same(_held(numbers), numbers)
        for at in (0, 1, 99, 100, 999):  # in the first batch, at a batch's edge, the last row
            later = numbers.copy()
            later[at] = value
            assert _held(later).view().dtype == wide and same(_held(later), later), at
    durations = np.arange(1000, dtype=np.float64) * 3 + 0.5
    durations[::7] = np.nan
    assert _held(durations).view().dtype == np.float32 and same(_held(durations), durations)
    for value in (0.1, 2.0**24 + 1, np.inf, -np.inf, 1e308, 5e-324):
        later = durations.copy()
        later[500] = value
        assert _held(later).view().dtype == np.float64 and same(_held(later), later), value
    constant = np.full(1000, 7, dtype=np.int64)  # one value, then another: the rows before are that value
    constant[-1] = 2**40
    assert same(_held(constant), constant) and _held(constant).view().dtype == np.int64
    for value, wide in ((2**40, np.int64), (0.1, np.float64)):  # one value the compact dtype cannot hold
        column = np.full(1000, value)
        assert same(_held(column), column) and _held(column).view().dtype == wide, value
    held = _held(np.full(1000, 5, dtype=np.int64))  # a column of one value keeps its count, not an array
    held.keep(np.arange(1000) % 3 == 0)
    assert held.array is None and held.view().tolist() == [5] * 334
    empty = Held(0, "int32", "int64")
    assert empty.view().tolist() == []


@pytest.mark.unit
def test_the_analysis_of_compact_columns_is_that_of_the_wide_ones(monkeypatch):
    """The same triggers and completions held as columns.Held holds them (one value, int32, float32, or widened)
    and at their widest give the same analysis, to every report field and evidence point: hostile columns
    (numbers past 2^62, infinite and 309-digit durations: widened) and columns a compact dtype holds whole
    (whole milliseconds, one job, no line times), with the per-job slices (FIT_STEP) of 7 rows."""
    import numpy as np
    import pyarrow as pa

    from flinkdoctor.analytics import checkpoints
    from flinkdoctor.analytics.checkpoints import analyse_checkpoints
    from flinkdoctor.analytics.columns import COMPLETED_FIELDS, TRIGGER_FIELDS, Columns
    from flinkdoctor.analytics.metrics import Measured
    from flinkdoctor.sources.ingest import Manifest

    def analysed(columns, effective):
        given = Measured()
        given.checkpoints = columns
        section, jobs = analyse_checkpoints(
            given, Manifest([], Path("."), None), effective, {s: "jm.log" for s in range(4)}
        )
        return section, [sorted((rule, repr(points)) for rule, points in job.evidence.items()) for job in jobs]

    tame = _hostile_columns(3001, 9)
    tame.c_duration = np.where(np.isnan(tame.c_duration), np.nan, np.abs(np.nan_to_num(tame.c_duration)) % 400)
    tame.t_job, tame.c_job = np.zeros(3001, np.int32), np.zeros(3001, np.int32)
    tame.t_time = np.full(3001, np.datetime64("NaT"), "datetime64[us]")
    tame.t_number, tame.c_number = np.abs(tame.t_number) % 2000, np.abs(tame.c_number) % 2000
    rising = copy.copy(tame)  # (a trend fitted over many slices: a checkpoint a minute, each 3 ms longer)
    rising.c_time = (np.arange(3001, dtype=np.int64) * 60 * 10**6).astype("datetime64[us]")
    rising.c_duration = np.arange(3001, dtype=np.float64) * 3 + 50
    trended = 0
    for columns in (_hostile_columns(3001, 3), _hostile_columns(400, 4), tame, rising):
        for effective in (_with_timeout(), _with_timeout("20 ms")):
            lines = pa.array([f"line {n}" for n in range(2 * len(columns.c_row) + 2)])
            compact = Columns(list(columns.jobs), list(columns.hosts), text=lines)
            for name in [f"t_{f}" for f in TRIGGER_FIELDS] + [f"c_{f}" for f in COMPLETED_FIELDS]:
                setattr(compact, name, _held(getattr(columns, name)).view())
            wide = Columns(list(columns.jobs), list(columns.hosts), text=lines)
            for name in [f"t_{f}" for f in TRIGGER_FIELDS] + [f"c_{f}" for f in COMPLETED_FIELDS]:
                values = getattr(columns, name)
                setattr(wide, name, values.astype(np.float64 if values.dtype.kind == "f" else values.dtype))
            monkeypatch.setattr(checkpoints, "SERIES_MAX", 600)  # (a series thinned: series_with's spans)
            expected = analysed(wide, effective)
            with monkeypatch.context() as patched:
                patched.setattr(checkpoints, "FIT_STEP", 7)
                assert analysed(compact, effective) == expected
            trended += sum(job.trend is not None and job.trend.points > 7 for job in expected[0].jobs)
    assert trended  # (a trend over more points than a slice holds)
    assert compact.nbytes < wide.nbytes  # (the tame columns: one job, no line times, float32 durations)


@pytest.mark.unit
def test_a_float32_column_is_compared_and_fitted_as_float64():
    """A column of float32 durations (whole milliseconds, exact) against an interval float32 cannot hold, and in
    the trend's fit: the answers of the same values as float64 (numpy would round the Python float to float32)."""
    import numpy as np
    import pyarrow as pa

    from flinkdoctor.analytics.checkpoints import Completed, _fit, _trend_of

    durations = np.array([16_777_216.0, 5.0, 16_777_214.0], dtype=np.float32)
    done = Completed(
        "e" * 32,
        np.arange(3, dtype=np.int32),
        np.array([1, 2, 3], dtype="datetime64[s]").astype("datetime64[us]"),
        durations,
        np.full(3, -1, np.int32),
        np.arange(3, dtype=np.int32),
        pa.array(["a", "b", "c"]),
        {0: "jm.log"},
        place=(np.zeros(3, np.int16), np.arange(3, dtype=np.int32), np.full(3, -1, np.int16), np.arange(3)),
        hosts=[None],
    )
    count, shown = done.over(16_777_215.6)
    assert count == 1 and [p.duration_ms for p in shown] == [16_777_216.0]
    rng = np.random.default_rng(1)
    values = (1_000_000 + rng.integers(0, 5000, 2000) + np.arange(2000) * 3).astype(np.float32)
    hours = np.arange(2000, dtype=np.float64) / 60
    assert _fit(hours, values) == _fit(hours, values.astype(np.float64))  # (slope, intercept, r: every bit)
    assert _trend_of(hours, values, None) == _trend_of(hours, values.astype(np.float64), None)


def _small_jobs(rows: int, jobs: int, seed: int, *, hours: bool = False):
    """_hostile_columns' rows spread over `jobs` jobs (a session cluster's: a few checkpoints each), one job's
    completions all untimed; `hours`: each job's completions a minute and a few microseconds apart, 3 to 60 of
    them (spans of 2 to 59 minutes: a trend needs 30), their durations rising."""
    import numpy as np
    import pyarrow as pa

    columns = _hostile_columns(rows, seed)
    columns.text = pa.array([f"line {n}" for n in range(2 * rows + 2)])
    rng = np.random.default_rng(seed + 1)
    columns.jobs = [f"{k * 7919 % jobs:032x}" for k in range(jobs)]  # (names not in the order read)
    columns.t_job = rng.integers(0, jobs, rows).astype(np.int32)
    columns.c_job = rng.integers(0, jobs, rows).astype(np.int32)
    columns.c_time[columns.c_job == 5] = np.datetime64("NaT")
    if hours:
        columns.c_job = np.repeat(np.arange(jobs), 3 + np.arange(jobs) % 58)[:rows].astype(np.int32)
        minutes = np.arange(rows, dtype=np.int64) * 60 * 10**6
        columns.c_time = (minutes + rng.integers(0, 7, rows)).astype("datetime64[us]")
        columns.c_duration = np.arange(rows, dtype=np.float64) * 3 + 50
    return columns


def _analysed(columns, effective):
    """The checkpoint section of `columns` (copied: the analysis sorts them) and each job's evidence."""
    from flinkdoctor.analytics.checkpoints import analyse_checkpoints
    from flinkdoctor.analytics.metrics import Measured
    from flinkdoctor.sources.ingest import Manifest

    given = Measured()
    given.checkpoints = copy.copy(columns)
    section, jobs = analyse_checkpoints(
        given, Manifest([], Path("."), None), effective, {s: "jm.log" for s in range(4)}
    )
    return section, [(sorted((k, repr(v)) for k, v in job.evidence.items()), job.longest_ms) for job in jobs]


@pytest.mark.unit
def test_small_jobs_taken_together_get_the_analysis_each_gets_alone(monkeypatch):
    """Bulk.prepare's figures of many small jobs at once (grouped.py) are those each job's own path gives, to every
    report field and evidence point: hostile columns (numbers repeated, absent and past 2^62; times equal, absent,
    a job's all absent; durations absent, negative, infinite, 309 digits), series whole and thinned, trends fitted
    and not, two timeouts, the jobs taken 7 at a time."""
    from flinkdoctor.analytics import checkpoints

    taken = []  # (how many jobs each share gave figures)
    figures = checkpoints.Bulk._small_figures
    monkeypatch.setattr(checkpoints.Bulk, "_small_figures", lambda *a: taken.append(len(f := figures(*a))) or f)
    monkeypatch.setattr(checkpoints, "PREPARED", 7)
    trended = thinned = 0
    for columns in (_small_jobs(3000, 300, 3), _small_jobs(800, 40, 4, hours=True)):
        for effective in (_with_timeout(), _with_timeout("20 ms")):
            for most in (600, 1000, 2400, 100_000):
                monkeypatch.setattr(checkpoints, "SERIES_MAX", most)
                with monkeypatch.context() as alone:
                    alone.setattr(checkpoints.Bulk, "prepare", lambda self, jobs, most: None)
                    expected = _analysed(columns, effective)
                assert _analysed(columns, effective) == expected
                trended += sum(job.trend is not None for job in expected[0].jobs)
                thinned += sum(len(job.series) < sum(job.counts.values()) for job in expected[0].jobs)
    assert trended and thinned
    assert sum(taken) > 1000  # (the jobs did take the figures)


def _listed_jobs(triggers, completions):
    """Columns of two jobs ("a" * 32, "b" * 32: codes 0, 1) from (job, number, time in µs) per trigger and
    (job, number, time in µs, duration in ms) per completion: the small inputs where one figure turns on an edge."""
    import numpy as np
    import pyarrow as pa

    from flinkdoctor.analytics.columns import Columns

    def column(rows, at, dtype):
        return np.array([row[at] for row in rows], dtype=dtype)

    n = len(completions)
    return Columns(
        jobs=["a" * 32, "b" * 32],
        hosts=["tm-1"],
        t_job=column(triggers, 0, np.int32),
        t_number=column(triggers, 1, np.int64),
        t_time=column(triggers, 2, np.int64).astype("datetime64[us]"),
        t_at=column(triggers, 2, np.int64).astype("datetime64[us]"),
        t_sid=np.zeros(len(triggers), np.int32),
        c_job=column(completions, 0, np.int32),
        c_number=column(completions, 1, np.int64),
        c_time=column(completions, 2, np.int64).astype("datetime64[us]"),
        c_duration=column(completions, 3, np.float64),
        c_size=np.full(n, -1, np.int64),
        c_sid=np.zeros(n, np.int32),
        c_line=np.arange(n, dtype=np.int64),
        c_host=np.full(n, -1, np.int32),
        c_row=np.arange(n, dtype=np.int64),
        text=pa.array([f"line {k}" for k in range(n)]),
    )


@pytest.mark.unit
def test_small_jobs_at_the_edge_of_each_figure_get_what_each_gets_alone(monkeypatch):
    """The inputs where a figure of the small jobs' path turns on an edge (review of jobs10), each against each
    job's own path: a series span's width rounded half to even (7/2 and 5/2 µs); a trend over exactly 5 points and
    half an hour; trigger gaps that cross from one job to the next number; a job whose durations are all absent
    beside one with one duration (no percentiles; the ranks of an empty job)."""
    from flinkdoctor.analytics import checkpoints

    minutes = 60 * 10**6
    durations = (5.0, 1.0, 9.0, 2.0, 8.0)
    cases = {
        "spans": _listed_jobs(
            [],
            [(0, k, t, d) for k, (t, d) in enumerate(zip((0, 1, 3, 5, 7), durations, strict=True))]
            + [(1, 10 + k, t, d) for k, (t, d) in enumerate(zip((0, 1, 2, 3, 5), durations, strict=True))],
        ),
        "trend": _listed_jobs([], [(0, k, k * 15 * minutes // 2, 100.0 + 10 * k) for k in range(5)]),
        "gaps": _listed_jobs(
            [(0, 1, 0), (0, 2, 10 * 10**6), (1, 3, 20 * 10**6), (1, 4, 30 * 10**6)],
            [(0, 1, 1000, 5.0), (1, 3, 20 * 10**6 + 1000, 5.0)],
        ),
        "absent": _listed_jobs([], [(0, 1, 0, 5.0), (1, 2, 1000, float("nan")), (1, 3, 2000, float("nan"))]),
    }
    taken = []  # (how many jobs each share gave figures)
    figures = checkpoints.Bulk._small_figures
    monkeypatch.setattr(checkpoints.Bulk, "_small_figures", lambda *a: taken.append(len(f := figures(*a))) or f)
    monkeypatch.setattr(checkpoints, "SERIES_MAX", 8)  # (two jobs: 4 points each, the spans' width counts)
    for name, columns in cases.items():
        with monkeypatch.context() as alone:
            alone.setattr(checkpoints.Bulk, "prepare", lambda self, jobs, most: None)
            expected = _analysed(columns, _with_timeout())
        taken.clear()
        assert _analysed(columns, _with_timeout()) == expected, name
        assert sum(taken) == len(expected[0].jobs), name  # (every job took the small jobs' path)
    assert _analysed(cases["trend"], _with_timeout())[0].jobs[0].trend is not None  # (the edge is inside)


@pytest.mark.unit
def test_small_jobs_cost_numpy_calls_per_share_not_per_job(monkeypatch):
    """A session cluster's jobs: the numpy work per job (percentiles, spans, the Points made) is done once per
    share of PREPARED jobs, for 300 jobs as for 10, and each job gets the analysis it gets alone."""
    from flinkdoctor.analytics import checkpoints, grouped

    calls = {"per job": 0, "per share": 0}

    def counted(owner, name: str, kind: str):
        real = getattr(owner, name)

        def count(*args, **kwargs):
            calls[kind] += 1
            return real(*args, **kwargs)

        monkeypatch.setattr(owner, name, count)

    for name in ("_nearest_ranks", "_span_starts", "_median"):
        counted(checkpoints, name, "per job")
    counted(checkpoints.Completed, "points", "per job")
    counted(grouped, "nearest_ranks", "per share")
    monkeypatch.setattr(checkpoints, "PREPARED", 100)
    shares: list[int] = []  # the jobs each prepare is given: a share's, not all (memory held, work per share)
    prepare = checkpoints.Bulk.prepare
    monkeypatch.setattr(
        checkpoints.Bulk, "prepare", lambda self, jobs, most: shares.append(len(jobs)) or prepare(self, jobs, most)
    )

    def run(jobs: int):
        calls.update({"per job": 0, "per share": 0})
        section, _ = _session_cluster(jobs)
        return section, dict(calls)

    (alone, _), (few, few_calls), (many, many_calls) = run(1), run(10), run(300)
    assert shares[-3:] == [100, 100, 100]
    assert few_calls == {"per job": 10 + 1, "per share": 1}  # (the Points of the series: one call a share)
    assert many_calls == {"per job": 300 + 3, "per share": 3}
    _each_as_alone(alone, (few.jobs[3], many.jobs[123], many.jobs[-1]))


@pytest.mark.unit
def test_a_time_is_written_in_utc_to_the_millisecond_with_a_z():
    """analytics.model.iso, the report's times: a naive time is UTC already (the columns'), an aware one is moved to
    UTC; milliseconds always, cut not rounded, and `Z` for the zone."""
    from datetime import timezone

    from flinkdoctor.analytics.model import iso

    shanghai = timezone(timedelta(hours=8))
    assert iso(None) is None
    assert iso(datetime(2026, 3, 1, 12, 0, 0, 999_999)) == "2026-03-01T12:00:00.999Z"
    assert iso(datetime(2026, 3, 1, 12, 0)) == "2026-03-01T12:00:00.000Z"
    assert iso(datetime(2026, 3, 1, 20, 0, 0, 5_000, tzinfo=shanghai)) == "2026-03-01T12:00:00.005Z"
    assert iso(datetime(999, 1, 2, tzinfo=timezone.utc)) == "0999-01-02T00:00:00.000Z"


@pytest.mark.unit
def test_the_times_of_points_made_in_bulk_are_written_as_iso_writes_them():
    """A series' Points made from the columns carry their time as the report writes it, taken for all of them in
    one numpy call (a session cluster's series are hundreds of thousands of points): model.iso's text for every
    time, before 1970 and in the years 1 and 9999, cut to the millisecond; none for a point without a time."""
    import numpy as np
    import pyarrow as pa

    from flinkdoctor.analytics.checkpoints import Completed, _public, _stamps
    from flinkdoctor.analytics.model import iso

    written = ["0001-01-01T00:00:00.999999", "0999-12-31T23:59:59.000500", "1969-12-31T23:59:59.999999"]
    written += ["1970-01-01T00:00:00.000001", "2026-03-01T12:34:56.789999", "9999-12-31T23:59:59.999999", "NaT"]
    times = np.array(written, dtype="datetime64[us]")
    wanted = [iso(t) for t in times.tolist()]
    assert [s if s != "NaTZ" else None for s in _stamps(times)] == wanted
    rows = np.arange(len(times))
    lines = pa.array(["Completed checkpoint"] * len(times))
    place = (rows * 0, rows, rows * 0 - 1, rows)  # (source 0, line, no host, row)
    made = Completed("j", rows, times, np.full(len(times), 5.0), rows, rows, lines, {0: "jm.log"}, place=place)
    made.hosts = [None]
    points = made.points(rows)
    assert [p.stamp for p in points] == wanted and [_public(p).time for p in points] == wanted


@pytest.mark.unit
def test_a_median_is_statistics_median_sorted_in_python_or_by_numpy():
    """_median sorts up to SORTED_IN_PYTHON values as a list (a job's few gaps: numpy's call costs more) and more
    by numpy: either way statistics.median of the values, however they come (a list, an array, unsorted)."""
    import statistics

    import numpy as np

    from flinkdoctor.analytics import checkpoints

    rng = np.random.default_rng(11)
    for n in (1, 2, 3, checkpoints.SORTED_IN_PYTHON, checkpoints.SORTED_IN_PYTHON + 1, 200):
        values = rng.permutation(rng.integers(0, 10**6, n).astype(np.float64) * 100)
        wanted = statistics.median(values.tolist())
        assert checkpoints._median(values) == checkpoints._median(values.tolist()) == wanted


def test_the_measures_are_let_go_before_the_failure_catalogue_loads(spark, rules, tmp_path, monkeypatch):
    """extract's measures (a long run's checkpoint columns: hundreds of MiB at 8 GiB of production logs) are
    no longer referenced when the failure catalogue (~65 MiB) is loaded: held together they made the driver's
    peak. Checked by a weak reference, not by memory figures, which the machine's load makes unreliable."""
    import gc
    import weakref

    from flinkdoctor import pipeline

    made: list[weakref.ref] = []
    alive: list[bool] = []
    extract, load = pipeline.extract, pipeline.load_catalogue

    def extracted(*args, **kwargs):
        measures = extract(*args, **kwargs)
        made.append(weakref.ref(measures))
        return measures

    def loading():
        gc.collect()
        alive.append(any(ref() is not None for ref in made))
        return load()

    monkeypatch.setattr(pipeline, "extract", extracted)
    monkeypatch.setattr(pipeline, "load_catalogue", loading)
    report = pipeline.diagnose([LAB / "1.20.3" / "checkpoint-timeout.tar.gz"], spark=spark, rules=rules)
    assert report.checkpoints.jobs and made  # (measured checkpoints)
    assert alive == [False]  # the catalogue was loaded once, the measures gone by then


def test_a_window_steps_back_to_its_last_cut_when_the_next_group_would_overflow_it(tmp_path, monkeypatch):
    """Plan.of: a window closes at the last cut before it would pass WINDOW_ROWS, not at the row group where it
    passes it, when no cut is there: job Y's rows in groups 1 and 2, no cut between them, so the windows are
    [0] and [1, 2] (cutting after group 1 split Y between two windows: review15b's surviving mutant)."""
    import pyarrow.parquet as pq
    from pyarrow import fs

    from flinkdoctor.analytics import metrics as m

    known = m.load_metrics()
    number = {metric.id: n for n, metric in enumerate(known)}
    x = _job_measures("ab" * 16, 0, 1, datetime(2026, 3, 1))  # 1 trigger, 1 completion
    y = _job_measures("cd" * 16, 0, 8, datetime(2026, 3, 2))  # 8 of each, 8 rows in each of two groups
    file = _measures_file(x + y, number, {0: 0})
    with pq.ParquetWriter(tmp_path / "part-00000.parquet", file.schema) as writer:
        for start, length in ((0, 2), (2, 8), (10, 8)):
            writer.write_table(file.slice(start, length))
    monkeypatch.setattr(m, "WINDOW_ROWS", 16)
    plan = m.Plan.of(m.Texts(fs.LocalFileSystem(), str(tmp_path)), known)
    assert [groups for groups, _ in plan.windows] == [[0], [1, 2]] and not plan.carried


def test_the_carried_jobs_together_stay_under_their_share_of_a_window(tmp_path, monkeypatch):
    """Plan.of carries the jobs that straddle a cut only while they and the jobs already carried hold at most
    WINDOW_ROWS // CARRIED_SHARE rows: three one-checkpoint jobs straddling three cuts are not all carried (the
    limit without the carried ones' rows carried all three, 6 rows over a limit of 2: review15b's mutant)."""
    import pyarrow.parquet as pq
    from pyarrow import fs

    from flinkdoctor.analytics import metrics as m

    known = m.load_metrics()
    number = {metric.id: n for n, metric in enumerate(known)}
    day = datetime(2026, 3, 1)
    big = [_job_measures(f"{k:032x}", 0, 5, day + timedelta(hours=k)) for k in range(4)]  # 10 rows each
    visitors = [_job_measures(f"{k + 10:032x}", 0, 1, day + timedelta(days=1, hours=k)) for k in range(3)]
    groups = [
        big[0] + visitors[0][:1],
        visitors[0][1:] + visitors[1][:1] + big[1],
        visitors[1][1:] + visitors[2][:1] + big[2],
        visitors[2][1:] + big[3],
    ]
    file = _measures_file([x for group in groups for x in group], number, {0: 0})
    with pq.ParquetWriter(tmp_path / "part-00000.parquet", file.schema) as writer:
        at = 0
        for group in groups:
            writer.write_table(file.slice(at, len(group)))
            at += len(group)
    monkeypatch.setattr(m, "WINDOW_ROWS", 16)
    plan = m.Plan.of(m.Texts(fs.LocalFileSystem(), str(tmp_path)), known)
    assert sum(plan.carried_sizes) <= 16 // m.CARRIED_SHARE and plan.carried == [f"{10:032x}"]
