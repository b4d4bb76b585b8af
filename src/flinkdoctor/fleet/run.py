"""Run: every new bundle under the roots diagnosed in one Spark application, its results appended to the lake.

Ingest runs per bundle on the driver (each into its own folder, a failure recorded with its reason); then the one
diagnosis core (pipeline.diagnose_bundles) diagnoses them all together: its Spark stages run once for the whole
fleet, and each bundle gets the report `diagnose` gives it alone.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime
from datetime import timezone as tz
from pathlib import Path

from ..analytics import analytics_rules
from ..analytics.metrics import measured_spans
from ..diagnosis.findings import Finding
from ..errors import FlinkdoctorError, InputError
from ..knowledge.rulebook import Rule
from ..pipeline import Diagnoses, check_knowledge, diagnose_bundles
from ..report.model import Report
from ..runtime.workdir import WorkDir
from ..scan.events import block_offsets
from ..sources.ingest import DEFAULT_MAX_UNPACKED, Manifest, ingest
from . import lake
from .discover import Bundle, discover
from .infra import bundle_infra, finding_keys


@dataclass
class Ingested:
    bundle: Bundle
    manifest: Manifest | None = None
    reason: str | None = None
    status: str = "ok"
    retry: bool = False  # failed for a reason not the bundle's (the machine, flinkdoctor): the next run tries again


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
    check_knowledge()
    started = time.perf_counter()
    run = _new_run(lake_dir)
    result = RunResult(run)
    bundles = discover(roots)
    known = {row["digest"] for row in lake.read(lake_dir, "bundles", ["digest", "retry"]) if not row["retry"]}
    fresh: list[Ingested] = []
    seen: dict[str, Ingested] = {}  # digest -> the bundle of this run that has it
    for bundle in bundles:
        if bundle.digest is not None and bundle.digest in known:
            result.skipped += 1
        elif bundle.digest is not None and bundle.digest in seen:
            fresh.append(Ingested(bundle, reason="the same content as another bundle of this run", status="duplicate"))
        else:
            fresh.append(Ingested(bundle))
            if bundle.digest is not None:
                seen[bundle.digest] = fresh[-1]
    with WorkDir(work_dir) as work:
        _ingest_all(fresh, work.path, year, max_unpacked)
        for item in fresh:  # a duplicate of a bundle to be tried again is tried again with it (their digest)
            if item.status == "duplicate" and item.bundle.digest is not None:
                item.retry = seen[item.bundle.digest].retry
        result.timings["ingest_s"] = round(time.perf_counter() - started, 3)
        if spark is None:
            from ..runtime.spark import spark_session

            spark = spark_session(app_name="flinkdoctor-fleet")
        read = [item for item in fresh if item.manifest is not None]
        done = None
        if read:
            manifests = [item.manifest for item in read if item.manifest is not None]
            done = diagnose_bundles(spark, manifests, work.path, rules, timezone=timezone, started=started)
            result.timings.update({k: v for k, v in done.reports[0].timings.items() if k != "total_s"})
        result.timings["diagnosis_s"] = round(time.perf_counter() - started, 3)
        _write(spark, lake_dir, run, fresh, read, done, rules)
        result.timings["lake_s"] = round(time.perf_counter() - started, 3)
    result.new = sum(1 for item in fresh if item.status == "ok")
    result.failed = sum(1 for item in fresh if item.status == "failed")
    return result


def _new_run(lake_dir: str | Path) -> str:
    """The run's name: the UTC second it started, one no earlier run of the lake has (a run's rows are told from
    another's by it: one started in the same second waits for the next)."""
    while True:
        run = datetime.now(tz.utc).strftime("%Y%m%dT%H%M%SZ")
        if not any(lake.table_path(lake_dir, table).joinpath(f"run={run}").exists() for table in lake.TABLES):
            return run
        time.sleep(0.1)


def _ingest_all(items: list[Ingested], work: Path, year: int | None, max_unpacked: int) -> None:
    """Ingest each bundle into its own folder; one that cannot be read is recorded with its reason, and tried
    again by the next run unless the bundle itself is the reason (an InputError: the same bytes fail the same)."""
    for number, item in enumerate(items):
        if item.status != "ok":
            continue
        if item.bundle.error:
            item.status, item.reason, item.retry = "failed", item.bundle.error, True
            continue
        try:
            item.manifest = ingest(
                [item.bundle.path], work / "bundles" / str(number), year=year, max_unpacked=max_unpacked
            )
        except Exception as err:  # noqa: BLE001 - one bundle never stops the fleet: recorded with its reason
            reason = str(err) if isinstance(err, (FlinkdoctorError, OSError)) else f"{type(err).__name__}: {err}"
            reason = reason.replace(str(item.bundle.path), item.bundle.name)
            item.status, item.reason = "failed", reason.removeprefix(f"{item.bundle.name}: ")
            item.retry = not isinstance(err, InputError)


def _write(
    spark, lake_dir, run: str, items: list[Ingested], read: list[Ingested], done: Diagnoses | None, rules: list[Rule]
) -> None:
    """The run's rows in every table; bundles last, so a run cut short is re-done in full next time."""
    by_rule = {**analytics_rules(), **{rule.id: rule for rule in rules}}
    reports: dict[str, tuple[list[Finding], Report]] = {}
    if done is not None:
        for position, item in enumerate(read):
            reports[item.bundle.bundle_id] = (done.findings[position], done.reports[position])
    paths = {s.id: s.path for s in done.manifest.sources} if done else {}
    now = datetime.now(tz.utc).replace(tzinfo=None)
    owner = {sid: read[b].bundle.bundle_id for sid, b in done.bundle_of.items()} if done is not None else {}
    spans = _spans(spark, done.events, owner) if done is not None else {}
    finding_rows, diagnosis_rows, bundle_rows = [], [], []
    for item in items:
        bundle = item.bundle
        kept, report = reports.get(bundle.bundle_id, ([], None))  # (a duplicate: its original's report)
        own = item.status == "ok"  # a duplicate's findings and causes are its original's rows, not written twice
        infra = bundle_infra(item.manifest.sources) if item.manifest else {}
        counts = {f.rule: f.count for f in report.findings} if report else {}
        for finding in kept if own else []:
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
        verdict = report.verdict if report else None
        for rank, root in enumerate(report.root_causes if report and own else [], start=1):
            diagnosis_rows.append(
                {
                    **{k: getattr(root, k) for k in ("rule", "category", "title", "confidence", "count", "host")},
                    "bundle_id": bundle.bundle_id,
                    "rank": rank,
                    "first_seen": root.first_seen,
                    "chain": [step.rule for step in root.chain],
                    "derived": root.derived,
                    "verdict": verdict,
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
                "log_start": spans.get(bundle.bundle_id, (None, None))[0],
                "log_end": spans.get(bundle.bundle_id, (None, None))[1],
                "retry": item.retry,
                "job_ids": sorted({f.job_id for f in kept if f.job_id}),
                "root_causes": [root.rule for root in report.root_causes] if report else [],
                "processed_at": now,
                "run": run,
            }
        )
    lake.append(spark, lake_dir, "findings", finding_rows)
    lake.append(spark, lake_dir, "diagnoses", diagnosis_rows)
    if done is not None:
        _write_events(spark, lake_dir, run, done.events, owner, done.manifest)
    lake.append(spark, lake_dir, "bundles", bundle_rows)


def _spans(spark, events, owner: dict[int, str]) -> dict[str, tuple]:
    """Per bundle, the first and last time of its kept events: when its logs say it ran (the incident detector
    counts the jobs running on a resource during a window). Small aggregations: a row per source, of the events
    table and of the measured rows (an event only a metric measures is kept there only: scanner._events_rows)."""
    from pyspark.sql import functions as F

    table = events.table(spark).groupBy("sid").agg(F.min("time").alias("a"), F.max("time").alias("b")).collect()
    found = [(row["sid"], row["a"], row["b"]) for row in table if row["a"] is not None]
    found += [(sid, *span) for sid, span in measured_spans(spark, events).items()]
    spans: dict[str, tuple] = {}
    for sid, first, last in found:
        old = spans.get(owner[sid], (first, last))
        spans[owner[sid]] = (min(old[0], first), max(old[1], last))
    return spans


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
