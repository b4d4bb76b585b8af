"""The pipeline, as one straight line: ingest -> events -> findings -> diagnosis -> report."""
from __future__ import annotations

import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

from .correlate import correlate
from .events import build_events
from .ingest import DEFAULT_MAX_UNPACKED, Manifest, ingest
from .match import collect_findings
from .prefilter import build_prefilter
from .report import build_report
from .rulebook import Rule, load_rules
from .versions import detect


def diagnose(paths: list[str | Path], *, spark=None, work_dir: str | Path | None = None, timezone: str = "UTC",
             year: int | None = None, rules_dirs: list[str | Path] = (), flink_version: str | None = None,
             max_unpacked: int = DEFAULT_MAX_UNPACKED, rules: list[Rule] | None = None) -> dict:
    """Diagnose a bundle; returns the report model (the JSON contract as a dict)."""
    timings = {}
    started = time.perf_counter()
    rules = rules if rules is not None else load_rules(rules_dirs)  # a bad rule fails here, before Spark starts
    work = Path(work_dir) if work_dir else Path(tempfile.mkdtemp(prefix="flinkdoctor-"))
    manifest = ingest(paths, work, year=year, max_unpacked=max_unpacked)
    timings["ingest_s"] = round(time.perf_counter() - started, 3)

    if spark is None:
        from .spark import spark_session
        spark = spark_session()
    timings["spark_ready_s"] = round(time.perf_counter() - started, 3)

    events = build_events(spark, manifest, work, build_prefilter(rules), timezone=timezone)
    timings["events_s"] = round(time.perf_counter() - started, 3)

    with whole_stage_codegen(spark, False):  # one expression per rule: too large for one generated method
        findings, counts = collect_findings(spark.read.parquet(events.path), rules, events.blocks, manifest)
    timings["findings_s"] = round(time.perf_counter() - started, 3)

    by_id = {rule.id: rule for rule in rules}
    version, version_source = (flink_version, "option") if flink_version else detect(
        [f.captures["version"] for f in findings if f.rule == "flink-version" and f.captures.get("version")],
        [s.document for s in manifest.sources if s.kind == "flink-config"],
        [s.document for s in manifest.sources if s.kind == "flink-rest-json"])
    roots = correlate(findings, counts, by_id)
    timings["total_s"] = round(time.perf_counter() - started, 3)
    return build_report(manifest, counters(manifest, events.stats), findings, counts, roots, by_id, version,
                        version_source, timings)


@contextmanager
def whole_stage_codegen(spark, enabled: bool):
    """Whole-stage code generation off for a query whose expression outgrows Java's 64 KB method limit: the
    regexes dominate the cost, and Spark would otherwise compile, fail, log a stack trace and fall back."""
    key = "spark.sql.codegen.wholeStage"
    before = spark.conf.get(key)
    spark.conf.set(key, str(enabled).lower())
    try:
        yield
    finally:
        spark.conf.set(key, before)


def counters(manifest: Manifest, stats: dict[int, dict]) -> dict:
    """input.* counters; every line is in an event or unparsed, for text and structured sources alike."""
    lines = in_events = unparsed = 0
    events = stats.get("events", 0)
    for source in manifest.sources:
        if source.derived:
            continue  # its lines are the JSON document's, counted there
        if source.staged:
            s = stats.get(source.id, {"lines": 0, "unparsed": 0})
            source.lines, source.unparsed = s["lines"], s["unparsed"]
        else:
            events += 1 if source.lines else 0  # a JSON document, a config file, a YARN log's framing
        lines += source.lines
        unparsed += source.unparsed
        in_events += source.lines - source.unparsed
    files = len({s.path for s in manifest.sources if not s.derived})
    return {"files": files, "lines": lines, "lines_in_events": in_events, "lines_unparsed": unparsed,
            "events": events}
