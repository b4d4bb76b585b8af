"""The pipeline, as one straight line: ingest -> events -> findings -> diagnosis -> report."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from .analytics import analyse, analytics_rules, config_knowledge, extract, load_metrics
from .diagnosis.correlate import correlate
from .diagnosis.fallback import fallback
from .diagnosis.findings import collect_findings, keep_applicable
from .diagnosis.unexplained import unexplained_errors
from .knowledge.rulebook import Rule, load_rules
from .knowledge.versions import detect
from .options import check_flink_version, check_timezone, check_year
from .report.model import Report, build_report
from .runtime.workdir import WorkDir
from .scan.events import build_events
from .scan.matcher import build_matcher
from .sources.ingest import DEFAULT_MAX_UNPACKED, Manifest, ingest


def diagnose(
    paths: list[str | Path],
    *,
    spark=None,
    work_dir: str | Path | None = None,
    keep_work_dir: bool = False,
    timezone: str = "UTC",
    year: int | None = None,
    rules_dirs: Sequence[str | Path] = (),
    flink_version: str | None = None,
    max_unpacked: int = DEFAULT_MAX_UNPACKED,
    rules: list[Rule] | None = None,
    verbose: bool = False,
) -> Report:
    """Diagnose a bundle and return the report model.

    Raises UsageError for bad options, rules or a work dir that is not flinkdoctor's own, and InputError when
    nothing can be read; all of them before Spark starts. Everything written under the work dir is removed
    afterwards unless `keep_work_dir`. `verbose` lets Spark's own output through when this call starts Spark.
    """
    timezone, year = check_timezone(timezone), check_year(year)
    flink_version = check_flink_version(flink_version)
    rules = rules if rules is not None else load_rules(rules_dirs)  # a bad rule fails here, before Spark starts
    load_metrics(), analytics_rules(), config_knowledge()  # so does bad analytics knowledge
    with WorkDir(work_dir, keep=keep_work_dir) as work:
        return _run(paths, spark, work, timezone, year, flink_version, max_unpacked, rules, verbose)


def _run(
    paths,
    spark,
    work: WorkDir,
    timezone: str,
    year: int | None,
    flink_version: str | None,
    max_unpacked: int,
    rules: list[Rule],
    verbose: bool,
) -> Report:
    timings = {}
    started = time.perf_counter()
    manifest = ingest(paths, work.path, year=year, max_unpacked=max_unpacked)
    timings["ingest_s"] = round(time.perf_counter() - started, 3)

    if spark is None:
        from .runtime.spark import spark_session

        spark = spark_session(input_bytes=sum(s.size for s in manifest.sources if not s.derived), verbose=verbose)
    timings["spark_ready_s"] = round(time.perf_counter() - started, 3)

    metrics = load_metrics()
    matcher = build_matcher(rules, tuple(metric.line for metric in metrics))
    events = build_events(spark, manifest, work.path, matcher.prefilter, timezone=timezone, matcher=matcher)
    timings["events_s"] = round(time.perf_counter() - started, 3)

    table = events.table(spark)
    findings, counts = collect_findings(table, events.blocks, manifest, events.stats["matched"])
    timings["findings_s"] = round(time.perf_counter() - started, 3)
    measures = extract(table, metrics, events.blocks, manifest, events.stats.get("measured"))

    by_id = {rule.id: rule for rule in rules}
    version, version_source = (
        (flink_version, "option")
        if flink_version
        else detect(
            [f.captures["version"] for f in findings if f.rule == "flink-version" and f.captures.get("version")],
            [s.document for s in manifest.sources if s.kind == "flink-config" and isinstance(s.document, dict)],
            [s.document for s in manifest.sources if s.kind == "flink-rest-json"],
        )
    )
    findings, counts = keep_applicable(findings, counts, by_id, version)  # rules limited to other versions
    analytics = analyse(measures, manifest, version)  # checkpoint series, configuration audit: context findings
    by_id = {**analytics_rules(), **by_id}
    findings, counts = findings + analytics.findings, {**analytics.counts, **counts}
    timings["analytics_s"] = round(time.perf_counter() - started, 3)
    roots = correlate(findings, counts, by_id)
    outcome = fallback(findings, counts, roots, by_id, {s.kind for s in manifest.sources})  # a failure is never healthy
    errors = unexplained_errors(
        events.table(spark), events.blocks, manifest, findings, roots, outcome, warned=events.stats.get("warned")
    )
    timings["total_s"] = round(time.perf_counter() - started, 3)
    return build_report(
        manifest,
        counters(manifest, events.stats),
        findings,
        counts,
        roots,
        by_id,
        version,
        version_source,
        timings,
        work_dir=str(work.path) if work.keep else None,
        outcome=outcome,
        unexplained=errors,
        checkpoints=analytics.checkpoints,
        config_audit=analytics.config_audit,
    )


def counters(manifest: Manifest, stats: dict) -> dict:
    """input.* counters; every line is in an event or unparsed, for text and structured sources alike."""
    lines = in_events = unparsed = 0
    events = stats.get("events", 0)
    for source in manifest.sources:
        if source.derived:
            continue  # its lines are the JSON document's, counted there
        if source.staged:
            s = stats.get(source.id, {"lines": 0, "unparsed": 0})
            source.lines, source.unparsed = s["lines"], s["unparsed"]
            if source.line_map is not None:  # read into another shape: count the original's lines
                source.lines = source.line_map.original_lines
                before = source.line_map.original(s["unparsed"] + 1) - 1  # lines before the first placed one
                source.unparsed = min(source.lines, before) if s["unparsed"] else 0
        else:
            events += 1 if source.lines else 0  # a JSON document, a config file, a YARN log's framing
        lines += source.lines
        unparsed += source.unparsed
        in_events += source.lines - source.unparsed
    files = len({s.path for s in manifest.sources if not s.derived})
    return {"files": files, "lines": lines, "lines_in_events": in_events, "lines_unparsed": unparsed, "events": events}
