"""Run: every new bundle under the roots diagnosed in one Spark application, its results appended to the lake.

Ingest runs per bundle on the driver (each into its own folder, a failure recorded with its reason); the
bundles' sources are then renumbered into one manifest, so the Spark stages run once for the whole fleet:
one events pass (build_events) and one findings pass (match_events), whose instances are chosen per bundle and
rule. Correlation, the fallback and the report model then run per bundle on the driver, over findings only.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from datetime import timezone as tz
from pathlib import Path

from ..diagnosis.correlate import correlate
from ..diagnosis.fallback import fallback
from ..diagnosis.findings import (
    Finding,
    block_offsets,
    detail_findings,
    earliest_and_latest,
    keep_applicable,
    match_events,
)
from ..errors import FlinkdoctorError
from ..knowledge.rulebook import Rule
from ..knowledge.versions import detect
from ..pipeline import counters
from ..report.model import Report, build_report
from ..runtime.workdir import WorkDir
from ..scan.events import build_events
from ..scan.matcher import build_matcher
from ..sources.ingest import DEFAULT_MAX_UNPACKED, Manifest, Source, ingest
from . import lake
from .discover import Bundle, discover
from .infra import bundle_infra, finding_keys, host_from_path


@dataclass
class Ingested:
    bundle: Bundle
    manifest: Manifest | None = None
    reason: str | None = None
    status: str = "ok"


@dataclass
class RunResult:
    run: str
    new: int = 0
    skipped: int = 0  # already in the lake
    failed: int = 0
    timings: dict = field(default_factory=dict)


def run_fleet(
    roots: list[str | Path],
    lake_dir: str | Path,
    rules: list[Rule],
    *,
    spark=None,
    work_dir: str | Path | None = None,
    timezone: str = "UTC",
    year: int | None = None,
    max_unpacked: int = DEFAULT_MAX_UNPACKED,
) -> RunResult:
    """Diagnose the bundles under `roots` not yet in the lake and append them to it."""
    started = time.perf_counter()
    run = datetime.now(tz.utc).strftime("%Y%m%dT%H%M%SZ")
    result = RunResult(run)
    bundles = discover(roots)
    known = {row["digest"] for row in lake.read(lake_dir, "bundles", ["digest"])}
    fresh, seen = [], set()
    for bundle in bundles:
        if bundle.digest in known:
            result.skipped += 1
        elif bundle.digest in seen:
            fresh.append(Ingested(bundle, reason="the same content as another bundle of this run", status="duplicate"))
        else:
            seen.add(bundle.digest)
            fresh.append(Ingested(bundle))
    with WorkDir(work_dir) as work:
        combined, owner = _ingest_all(fresh, work.path, year, max_unpacked)
        result.timings["ingest_s"] = round(time.perf_counter() - started, 3)
        if spark is None:
            from ..runtime.spark import spark_session

            spark = spark_session(app_name="flinkdoctor-fleet")
        reports, events = {}, None
        if combined.text_sources:
            matcher = build_matcher(rules)
            events = build_events(spark, combined, work.path, matcher.prefilter, timezone=timezone, matcher=matcher)
            result.timings["events_s"] = round(time.perf_counter() - started, 3)
            findings, counts = _findings(spark, events, combined, owner)
            result.timings["findings_s"] = round(time.perf_counter() - started, 3)
            reports = _diagnose_each(fresh, findings, counts, rules, events.stats)
        result.timings["correlate_s"] = round(time.perf_counter() - started, 3)
        _write(spark, lake_dir, run, fresh, reports, events, owner, combined, rules)
        result.timings["lake_s"] = round(time.perf_counter() - started, 3)
    result.new = sum(1 for item in fresh if item.status == "ok")
    result.failed = sum(1 for item in fresh if item.status == "failed")
    return result


def _ingest_all(items: list[Ingested], work: Path, year: int | None, max_unpacked: int):
    """Ingest each bundle into its own folder, then renumber every source into one manifest whose staged files
    are `<sid>.log` again (the events stage reads the source id from the name)."""
    staging = work / "sources"
    staging.mkdir(parents=True, exist_ok=True)
    sources: list[Source] = []
    owner: dict[int, str] = {}  # sid -> bundle_id
    skipped: list[dict] = []
    years: list[int] = []
    for number, item in enumerate(items):
        if item.status != "ok":
            continue
        if item.bundle.error:
            item.status, item.reason = "failed", item.bundle.error
            continue
        try:
            manifest = ingest([item.bundle.path], work / "bundles" / str(number), year=year, max_unpacked=max_unpacked)
        except Exception as err:  # noqa: BLE001 - one bundle never stops the fleet: recorded with its reason
            reason = str(err) if isinstance(err, (FlinkdoctorError, OSError)) else f"{type(err).__name__}: {err}"
            reason = reason.replace(str(item.bundle.path), item.bundle.name)
            item.status, item.reason = "failed", reason.removeprefix(f"{item.bundle.name}: ")
            continue
        for source in manifest.sources:
            source.id, old = len(sources), source.staged
            if old:
                source.staged = str(staging / f"{source.id:05d}.log")
                os.replace(old, source.staged)
            source.host = source.host or host_from_path(source.path)
            sources.append(source)
            owner[source.id] = item.bundle.bundle_id
        item.manifest = manifest
        skipped += [{**s, "path": f"{item.bundle.name}/{s['path']}"} for s in manifest.skipped]
        years += [manifest.bundle_year] if manifest.bundle_year else []
    bundle_year = year or (Counter(years).most_common(1)[0][0] if years else None)
    return Manifest(sources=sources, work_dir=work, bundle_year=bundle_year, skipped=skipped), owner


def _findings(spark, events, manifest: Manifest, owner: dict[int, str]):
    """Per bundle and rule: the exact count and the earliest and latest instances, in detail."""
    from pyspark.sql import functions as F

    owners = spark.createDataFrame(list(owner.items()), "sid int, bundle_id string")
    frame = events.table(spark)
    found = match_events(frame, detail=False).join(F.broadcast(owners), "sid")
    rows, groups = earliest_and_latest(found, ["bundle_id", "rule"])
    findings = detail_findings(frame, events.blocks, manifest, rows)
    counts: dict[str, dict[str, int]] = {}
    for group in groups:
        counts.setdefault(group["bundle_id"], {})[group["rule"]] = group["cnt"]
    return findings, counts


def _diagnose_each(items: list[Ingested], findings: list[Finding], counts: dict, rules: list[Rule], stats: dict):
    """The report model of each bundle: version, applicable rules, correlation and fallback, as `diagnose`."""
    by_id = {rule.id: rule for rule in rules}
    by_bundle: dict[str, list[Finding]] = {}
    sid_bundle = {s.id: item.bundle.bundle_id for item in items if item.manifest for s in item.manifest.sources}
    for finding in findings:
        by_bundle.setdefault(sid_bundle[finding.sid], []).append(finding)
    reports: dict[str, tuple[list[Finding], Report]] = {}
    for item in items:
        if item.manifest is None:
            continue
        bundle_id, manifest = item.bundle.bundle_id, item.manifest
        found, count = by_bundle.get(bundle_id, []), counts.get(bundle_id, {})
        version, version_source = detect(
            [f.captures["version"] for f in found if f.rule == "flink-version" and f.captures.get("version")],
            [s.document for s in manifest.sources if s.kind == "flink-config" and isinstance(s.document, dict)],
            [s.document for s in manifest.sources if s.kind == "flink-rest-json"],
        )
        found, count = keep_applicable(found, count, by_id, version)
        roots = correlate(found, count, by_id)
        outcome = fallback(found, count, roots, by_id, {s.kind for s in manifest.sources})
        own_stats = {s.id: stats[s.id] for s in manifest.sources if s.id in stats}  # events: fleet-wide only
        reports[bundle_id] = (
            found,
            build_report(
                manifest,
                counters(manifest, own_stats),
                found,
                count,
                roots,
                by_id,
                version,
                version_source,
                outcome=outcome,
            ),
        )
    return reports


def _write(spark, lake_dir, run: str, items: list[Ingested], reports: dict, events, owner, manifest, rules):
    """The run's rows in every table; bundles last, so a run cut short is re-done in full next time."""
    by_rule = {rule.id: rule for rule in rules}
    paths = {s.id: s.path for s in manifest.sources}
    now = datetime.now(tz.utc).replace(tzinfo=None)
    finding_rows, diagnosis_rows, bundle_rows = [], [], []
    for item in items:
        bundle = item.bundle
        kept, report = reports.get(bundle.bundle_id, ([], None))
        infra = bundle_infra(item.manifest.sources) if item.manifest else {}
        counts = {f.rule: f.count for f in report.findings} if report else {}
        for finding in kept:
            rule = by_rule[finding.rule]
            keys = finding_keys(rule.category, finding.host, finding.hdfs_path, finding.text, infra)
            for kind in ("storage", "zookeeper", "kafka"):
                if keys[kind]:
                    infra[kind].add(keys[kind])
            finding_rows.append(
                {
                    **{k: getattr(finding, k) for k in ("sid", "line", "time", "host", "job_id", "checkpoint_id")},
                    **{k: getattr(finding, k) for k in ("container_id", "hdfs_path", "text")},
                    **{k: keys[k] for k in ("storage", "zookeeper", "kafka")},
                    "bundle_id": bundle.bundle_id,
                    "rule": rule.id,
                    "category": rule.category,
                    "role": rule.role,
                    "count": counts.get(rule.id, 1),
                    "path": paths.get(finding.sid),
                    "run": run,
                }
            )
        for rank, root in enumerate(report.root_causes if report else [], start=1):
            diagnosis_rows.append(
                {
                    **{k: getattr(root, k) for k in ("rule", "category", "title", "confidence", "count", "host")},
                    "bundle_id": bundle.bundle_id,
                    "rank": rank,
                    "first_seen": root.first_seen,
                    "chain": [step.rule for step in root.chain],
                    "derived": root.derived,
                    "verdict": report.verdict,
                    "run": run,
                }
            )
        times = [f.time for f in kept if f.time]
        bundle_rows.append(
            {
                **{k: sorted(infra.get(k, ())) for k in ("storage", "zookeeper", "kafka")},
                "hosts": sorted(infra.get("host", ())),
                "bundle_id": bundle.bundle_id,
                "digest": bundle.digest,
                "name": bundle.name,
                "path": str(bundle.path),
                "status": item.status,
                "reason": item.reason,
                "verdict": report.verdict if report else None,
                "flink_version": report.flink_version if report else None,
                "files": report.input.files if report else 0,
                "lines": report.input.lines if report else 0,
                "lines_unparsed": report.input.lines_unparsed if report else 0,
                "skipped": len(item.manifest.skipped) if item.manifest else 0,
                "first_time": min(times, default=None),
                "last_time": max(times, default=None),
                "job_ids": sorted({f.job_id for f in kept if f.job_id}),
                "root_causes": [root.rule for root in report.root_causes] if report else [],
                "processed_at": now,
                "run": run,
            }
        )
    lake.append(spark, lake_dir, "findings", finding_rows)
    lake.append(spark, lake_dir, "diagnoses", diagnosis_rows)
    if events is not None:
        _write_events(spark, lake_dir, run, events, owner, manifest)
    lake.append(spark, lake_dir, "bundles", bundle_rows)


def _write_events(spark, lake_dir, run: str, events, owner: dict[int, str], manifest: Manifest) -> None:
    """The kept events with their bundle, source path and file line numbers (the block table turns a block's
    relative line numbers into the file's)."""
    from pyspark.sql import functions as F

    sources = {s.id: s for s in manifest.sources}
    bases = [
        (sid, block, sources[sid].line_offset + offset, owner[sid], sources[sid].path)
        for (sid, block), offset in block_offsets(events.blocks).items()
    ]
    table = spark.createDataFrame(bases, "sid int, block long, base long, bundle_id string, path string")
    frame = events.table(spark).join(F.broadcast(table), ["sid", "block"])
    columns = lake.columns("events")
    frame = frame.select(
        (F.col("base") + F.col("first_rel")).alias("line"),
        (F.col("base") + F.col("last_rel")).alias("last_line"),
        F.lit(run).alias("run"),
        *[c for c in columns if c not in ("line", "last_line", "run")],
    ).select(*columns)
    frame.write.mode("append").partitionBy("run").parquet(str(lake.table_path(lake_dir, "events")))
