"""The events table's `time`: read by the scan task where it is certain (scan/times.py `with_time`), parsed by
Spark from the raw `ts` the task keeps everywhere else (events.EventsResult.table), the same either way: on every
header time of every text file under tests/data, on those times made invalid, under --timezone UTC and not, a
session zone not UTC, and through the whole scan of real bundles."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from test_measured_rows import _headers_times, _made_invalid

from conftest import DATA


def _edges(ts: str) -> list[str]:
    """A real `yyyy-MM-dd HH:mm:ss...` time at the calendar's edges: hour 24, minute and second 60, 30 February,
    29 February of common and leap years, 31 April, a minute's digit another ASCII byte, and the years around
    those the task reads (1700-2261)."""
    if ts[4:5] != "-" or ts[7:8] != "-" or len(ts) < 19:
        return []
    day, clock = ts[10:11], ts[19:]
    out = [ts[:11] + "24:00:00" + clock, ts[:14] + "60" + ts[16:], ts[:17] + "60" + ts[19:]]
    out += [f"{year}-02-{d}{day}{ts[11:]}" for year in ("1900", "2000", "2023", "2024") for d in ("28", "29", "30")]
    out += [f"{ts[:4]}-04-31{ts[10:]}", f"{ts[:4]}-12-31{day}23:59:59{clock}", f"{ts[:4]}-00-10{ts[10:]}"]
    out += [ts[:15] + other + ts[16:] for other in (":", "A", "/", " ")]  # (an ASCII byte in a digit's place)
    return out + [f"{year}{ts[4:]}" for year in ("1699", "1700", "2261", "2262", "9999")]


def _stored(path: Path, ts: list[str | None], layout: str, zones: SimpleNamespace | None) -> None:
    """An events file of these times (one source, sid 0, in order by first_rel), as a task writes it."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from flinkdoctor.scan.times import with_time

    path.mkdir(parents=True)
    batch = pa.record_batch(
        [pa.array([0] * len(ts), pa.int32()), pa.array(range(len(ts)), pa.int64()), pa.array(ts, pa.string())],
        names=["sid", "first_rel", "ts"],
    )
    pq.write_table(pa.Table.from_batches([with_time(batch, layout, zones)]), path / "part-00000.parquet")


def _times_of(spark, path: Path, layout: str, timezone: str) -> list:
    from flinkdoctor.scan.events import EventsResult, TimeReading

    result = EventsResult(str(path), {}, {}, TimeReading({layout: [0]}, 2019, timezone))
    return [row["time"] for row in result.table(spark).orderBy("first_rel").select("time").collect()]


def test_the_tasks_time_is_sparks_parse(spark, tmp_path):
    """Per layout with a pattern, the table's times from the task's file equal Spark's parse of every raw time;
    where the task is certain (a fixed pattern, UTC everywhere) it read every real header's time and left invalid
    ones (a month 19, hour 24, a tab, a Unicode digit, 29 February of a common year) to Spark."""
    import pyarrow.parquet as pq

    from flinkdoctor.scan.times import fixed_fields
    from flinkdoctor.sources.layouts import load_layouts

    found = _headers_times(tmp_path / "in")
    zone = spark.conf.get("spark.sql.session.timeZone")
    read_here = 0
    for layout in load_layouts():
        if not (layout.timed and layout.time_format) or not found.get(layout.id):
            continue
        real = sorted(set(found[layout.id]))
        sample = real[:: max(1, len(real) // 100)]
        every = [*real, *sorted({bad for ts in sample for bad in [*_made_invalid(ts), *_edges(ts)]}), None]
        for timezone, session in (("UTC", "UTC"), ("Asia/Shanghai", "UTC"), ("UTC", "America/New_York")):
            case = tmp_path / f"{layout.id}-{timezone.replace('/', '_')}-{session.replace('/', '_')}"
            zones = SimpleNamespace(timezone=timezone, session_utc=session == "UTC")
            _stored(case / "task", every, layout.id, zones)
            _stored(case / "spark", every, layout.id, None)
            spark.conf.set("spark.sql.session.timeZone", session)
            try:
                mine, theirs = (
                    _times_of(spark, case / "task", layout.id, timezone),
                    _times_of(spark, case / "spark", layout.id, timezone),
                )
            finally:
                spark.conf.set("spark.sql.session.timeZone", zone)
            assert mine == theirs, (layout.id, timezone, session)
            written = pq.read_table(case / "task" / "part-00000.parquet").to_pylist()
            assert all(row["ts"] is None for row in written if row["time"] is not None)  # (where read: no raw time)
            certain = session == "UTC" and (layout.utc or timezone == "UTC") and not layout.year_from_bundle
            if certain and fixed_fields(layout.time_format):
                assert all(row["time"] is not None for row in written[: len(real)]), layout.id
                assert any(row["ts"] is not None for row in written[len(real) :]), layout.id
                read_here += len(real)
            else:
                assert all(row["time"] is None for row in written), (layout.id, timezone, session)
    assert read_here >= 10_000


@pytest.mark.parametrize("timezone", ["UTC", "Asia/Shanghai"])
def test_a_scan_gives_the_times_spark_parses(spark, rules, tmp_path, timezone):
    """Real bundles of several layouts scanned as the pipeline scans them (the tasks read times) and with every
    time left to Spark (no measured rows): each event the first keeps has the second's time."""
    import pyarrow.parquet as pq
    from pyspark.sql import functions as F

    from flinkdoctor.analytics.metrics import load_metrics, measured_rows
    from flinkdoctor.scan.events import build_events
    from flinkdoctor.scan.matcher import build_matcher
    from flinkdoctor.sources.ingest import ingest

    lab = sorted((DATA / "lab").glob("*/*.tar.gz"))[::8]
    manifest = ingest([DATA / "seeds", DATA / "incidents", DATA / "loghub", *lab], tmp_path / "in")
    assert len({s.layout for s in manifest.text_sources}) >= 5
    metrics = load_metrics()
    matcher = build_matcher(rules, tuple(m.line for m in metrics))
    spec = measured_rows(metrics)
    mine = build_events(spark, manifest, tmp_path / "mine", matcher.prefilter, timezone, matcher=matcher, measured=spec)
    theirs = build_events(spark, manifest, tmp_path / "theirs", matcher.prefilter, timezone, matcher=matcher)
    stored = pq.read_table(mine.path, columns=["time", "ts"])
    read, left = stored.num_rows - stored.column("time").null_count, stored.num_rows - stored.column("ts").null_count
    assert left > 0 and (read > 5 * left if timezone == "UTC" else read > 0)  # (local layouts: left to Spark)
    keys = ["sid", "block", "first_rel"]
    a = mine.table(spark).select(*keys, F.col("time").alias("a"))
    b = theirs.table(spark).select(*keys, F.col("time").alias("b"))
    joined = a.join(b, keys, "left")
    assert joined.count() == a.count() == stored.num_rows
    assert joined.where(~F.col("a").eqNullSafe(F.col("b"))).count() == 0
    assert joined.where(F.col("a").isNotNull()).count() > read  # (the times left: parsed by Spark)


@pytest.mark.unit
def test_with_time_reads_a_certain_time_and_keeps_the_others_raw_ts():
    """The time in microseconds since 1970 (UTC) and a null `ts` where read; a null time and the raw `ts`
    where left (an hour 24) or when the task is given no zones."""
    import pyarrow as pa

    from flinkdoctor.scan.times import with_time

    ts = ["2024-02-29 23:59:58,123", "2024-02-29 24:00:00,000", None]
    batch = pa.record_batch([pa.array(ts, pa.string())], names=["ts"])
    read = with_time(batch, "flink-log4j2", SimpleNamespace(timezone="UTC", session_utc=True))
    assert read.column("time").to_pylist() == [1709251198123000, None, None]
    assert read.column("ts").to_pylist() == [None, ts[1], None]
    left = with_time(batch, "flink-log4j2", None)
    assert left.column("time").to_pylist() == [None] * 3
    assert left.column("ts").to_pylist() == ts
