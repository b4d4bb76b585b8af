"""The lake: four Parquet tables under one folder, each partitioned by `run` (the UTC time a fleet run
started, e.g. run=20261123T081500Z), readable by Spark, DuckDB, pandas or pyarrow.

    bundles    one row per bundle seen: its content digest (the key a re-run skips on), status ok | failed |
               duplicate with the reason and whether the next run tries it again (retry: the machine or
               flinkdoctor failed, not the bundle; such a row is not read once a later run has a row of the
               same bundle or path),
               verdict, Flink version, line counts, the time range of its findings (first_time, last_time)
               and of its logs (log_start, log_end: its kept events), and the infrastructure it ran on (hosts,
               storage authorities, ZooKeeper quorums, Kafka brokers)
    events     the events kept for matching (those some rule or catalogue entry can match) and the WARN+
               events, with the bundle, source path and file line numbers; text masked as in every flinkdoctor
               output. Not the lines only a metric measures (a checkpoint's trigger or completion): the scan
               writes those only as measured rows (scan/scanner.py `_events_rows`), which the lake does not keep
    findings   the matched evidence: per bundle and rule its exact count and up to 40 earliest and 40 latest
               instances, with time, host, job id, storage authority and the line
    diagnoses  the root causes of each bundle, ranked as `diagnose` ranks them

The DDL strings below are the schema; README (Fleet) shows queries. Columns are only ever added, so a lake written
by an older flinkdoctor still reads: its runs show the newer columns as null (`read` and `query` merge the
schemas of every run). History: 1, the first lake; 2, bundles.log_start and log_end; 3, events without the lines
only a metric measures (same columns; log_start and log_end still count their times); 4, bundles.retry (null in
older runs, where a row without a digest, an entry that could not be read, is tried again).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..safety import outbound

TABLES = {
    "bundles": (
        "bundle_id string, digest string, name string, path string, status string, reason string, "
        "verdict string, flink_version string, files int, lines long, lines_unparsed long, skipped int, "
        "first_time timestamp, last_time timestamp, hosts array<string>, job_ids array<string>, "
        "storage array<string>, zookeeper array<string>, kafka array<string>, root_causes array<string>, "
        "processed_at timestamp, log_start timestamp, log_end timestamp, retry boolean, run string"
    ),
    "events": (
        "bundle_id string, sid int, path string, line long, last_line long, time timestamp, level string, "
        "logger string, thread string, host string, message string, text string, sigs array<int>, run string"
    ),
    "findings": (
        "bundle_id string, rule string, category string, role string, count long, sid int, path string, "
        "line long, time timestamp, host string, job_id string, checkpoint_id string, container_id string, "
        "hdfs_path string, storage string, zookeeper string, kafka string, text string, run string"
    ),
    "diagnoses": (
        "bundle_id string, rank int, rule string, category string, title string, confidence double, "
        "count long, first_seen string, host string, chain array<string>, derived boolean, verdict string, "
        "run string"
    ),
}


def table_path(lake: str | Path, table: str) -> Path:
    return Path(lake) / table


def columns(table: str) -> list[str]:
    return [part.strip().split(" ", 1)[0] for part in TABLES[table].split(", ")]


_names = columns  # `read` has a parameter of that name


def append(spark, lake: str | Path, table: str, rows: list[dict]) -> None:
    """Append rows (dicts with every column) as a new `run` partition."""
    if rows:
        names = columns(table)
        rows = outbound.rows(rows)  # masked: texts, names and paths come from the input
        frame = spark.createDataFrame([tuple(row[name] for name in names) for row in rows], TABLES[table])
        frame.write.mode("append").partitionBy("run").parquet(str(table_path(lake, table)))


def complete_runs(lake: str | Path) -> set[str]:
    """The runs that finished: a run writes its `bundles` rows last, so a run cut short (killed, a full disk)
    has none, and its rows in the other tables are never read (the next run does its bundles again)."""
    path = table_path(lake, "bundles")
    return {p.name.removeprefix("run=") for p in path.glob("run=*") if p.is_dir()} if path.is_dir() else set()


RETRY_KEYS = ("bundle_id", "path", "digest", "retry", "run")


def _superseded(keys: Any) -> set[tuple[Any, ...]]:
    """The bundles rows (their RETRY_KEYS) to be tried again that a later run has a row of the same bundle or
    path for; `keys`: every finished run's RETRY_KEYS columns (pyarrow). To be tried again: `retry`, or, in runs
    older than `retry`, no digest (an entry that could not be read: today's runs try it again)."""
    import pyarrow.compute as pc

    retry = keys.column("retry")
    again = pc.or_(pc.fill_null(retry, False), pc.and_(pc.is_null(retry), pc.is_null(keys.column("digest"))))
    if not pc.any(again).as_py():  # (nearly always: no group_by over a fleet's rows)
        return set()
    latest = {}
    for key in ("bundle_id", "path"):
        for row in keys.group_by(key).aggregate([("run", "max")]).to_pylist():
            if row[key] is not None:  # (no path is no one's path)
                latest[(key, row[key])] = row["run_max"]
    return {
        tuple(row[name] for name in RETRY_KEYS)
        for row in keys.filter(again).to_pylist()
        if any(latest.get((key, row[key]), row["run"]) > row["run"] for key in ("bundle_id", "path"))
    }


def read(lake: str | Path, table: str, columns: list[str] | None = None, filter=None) -> list[dict]:
    """Rows of a lake table on the driver (pyarrow: no Spark job for a small table), of finished runs only;
    [] when it is absent. A column that older runs lack is null in their rows; one that no run has yet is null in
    every row. Of `bundles`, a row to be tried again (`_superseded`) only until a later run has a row of its
    bundle or its path (an entry unreadable then has no digest: its bundle id is its path's)."""
    import pyarrow as pa
    import pyarrow.dataset as ds

    path = table_path(lake, table)
    if not path.is_dir():
        return []
    data = ds.dataset(str(path), format="parquet", partitioning="hive")
    finished = sorted(complete_runs(lake))
    if not finished:
        return []
    done = ds.field("run").isin(finished)
    wanted = columns or _names(table)
    keys = list(RETRY_KEYS) if table == "bundles" else []  # (read to drop what was tried again, then dropped)
    if not set(wanted) | set(keys) <= set(data.schema.names):  # an older run's schema first: merge every file's
        schema = pa.unify_schemas([fragment.physical_schema for fragment in data.get_fragments()])
        schema = schema.append(pa.field("run", pa.string()))
        data = ds.dataset(str(path), schema=schema, format="parquet", partitioning="hive")
    present = [name for name in wanted if name in data.schema.names]
    superseded: set[tuple[Any, ...]] = set()
    if keys:
        kept = data.to_table(columns=[name for name in keys if name in data.schema.names], filter=done)
        for name in keys:  # (a lake older than retry)
            if name not in kept.column_names:
                kept = kept.append_column(name, pa.nulls(kept.num_rows, pa.bool_() if name == "retry" else pa.string()))
        superseded = _superseded(kept.select(keys))
    extra = [name for name in keys if name not in present and name in data.schema.names] if superseded else []
    rows = data.to_table(columns=present + extra, filter=done if filter is None else done & filter).to_pylist()
    if superseded:
        rows = [row for row in rows if tuple(row.get(name) for name in RETRY_KEYS) not in superseded]
    missing = [name for name in wanted if name not in present]
    for row in rows:
        for name in extra:
            del row[name]
        row.update(dict.fromkeys(missing))
    return rows
