"""Parse (Spark): staged text sources -> the events table, written as Parquet.

One pass, no shuffle. The JVM reads the lines and flags event headers with each source's layout regex; a
vectorised Arrow function (numpy + pyarrow, no per-line Python) glues each header to its continuation lines
inside one file block, where Spark keeps the lines in file order, and lists the signatures each event could
match (prefilter.py). Every event is counted; only events some signature could match go on: the JVM splits
their header fields, parses the time, and writes them. A block's own line numbers are relative: the block
table (lines per block) turns them into file line numbers for the few events that become evidence.

Small sources are read from pack files (staging.pack): Spark's cost is per file far more than per byte. A pack
line carries its source id, and a source starts a new segment wherever it starts, so line numbers and counts
come out as for a file of its own. A row that continues an over-long line (staging.PIECE) starts an event of
its own but no new line: evidence keeps the line number of the file, and `lines` stays `wc -l`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .ingest import Manifest
from .layouts import FIELDS, layout_by_id
from .masking import mask_column
from .prefilter import Prefilter, scan
from .staging import PACK_SEP, PACK_SOURCE_BYTES, PIECE, clear, pack

if TYPE_CHECKING:
    from pyspark.sql import Column

MAX_EVENT_LINES = 1000  # longer events keep their full line range but only this many lines of text
SEP = "\u0001"

ASSEMBLED_SCHEMA = (
    "sid int, block long, first_rel long, last_rel long, orphan boolean, seg_end boolean, "
    "split boolean, sigs array<int>, text string"
)
# events kept beside the candidates (sigs non-empty), for the unexplained errors (unexplained.py); WARNING is how
# JVM unified logging (GC logs) spells WARN
WARN_LEVELS = ("WARN", "WARNING", "ERROR", "FATAL")
_WARN_LIKE = r"(?i)\b(?:WARN(?:ING)?|ERROR|FATAL)\b"  # cheap test of a header line; the layout decides the level
LISTING_THRESHOLD = "1000000"  # more paths than this are listed by a Spark job: one task per path (5,000: 12 s)


@dataclass
class EventsResult:
    path: str  # events Parquet
    blocks: dict  # sid -> [(block_start, lines)], in file order
    stats: dict  # sid -> {"lines", "unparsed"}; "events" -> number of events


def make_assembler(prefilter: Prefilter):
    """The Arrow function for mapInArrow; `prefilter` lists the signatures each event could match."""
    return lambda batches: _assemble(batches, prefilter)


def _assemble(batches, prefilter: Prefilter):
    """Glue continuation lines to their header; one output row per event (Arrow in, Arrow out). Only events
    with signatures to test, or whose header may be at WARN level or above, keep their text: the others are
    needed for counting alone."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    carry = None
    last_key, last_rel = None, 0

    def emit(rows, starts, next_changes: bool):
        """Events of `rows` starting at `starts`; `next_changes`: the row after `rows` opens a new file block."""
        n = rows.num_rows
        ends = np.append(starts[1:], n)
        col = {name: rows.column(name).combine_chunks() for name in rows.column_names}
        change = col["change"].to_numpy(zero_copy_only=False)
        seg_end = np.append(change[ends[:-1]], next_changes)  # last event of its block: the block's lines
        lists = pa.ListArray.from_arrays(pa.array(np.append(starts, n).astype(np.int32)), col["line"])
        if (ends - starts).max(initial=0) > MAX_EVENT_LINES:
            lists = pc.list_slice(lists, 0, MAX_EVENT_LINES)
        text = pc.binary_join(lists, "\n")
        sigs = scan(prefilter, text)
        take = pa.array(starts)
        keep = pc.or_(pc.greater(pc.list_value_length(sigs), 0), _warn_like(col["line"].take(take)))
        text = pc.if_else(keep, text, pa.scalar(None, pa.string()))
        return pa.RecordBatch.from_arrays(
            [
                col["sid"].take(take),
                col["block"].take(take),
                col["rel"].take(take),
                col["rel"].take(pa.array(ends - 1)),
                col["orphan"].take(take),
                pa.array(seg_end),
                col["piece"].take(take),
                sigs,
                text,
            ],
            names=["sid", "block", "first_rel", "last_rel", "orphan", "seg_end", "split", "sigs", "text"],
        )

    for batch in batches:
        n = batch.num_rows
        if n == 0:
            continue
        sid = batch.column("sid").to_numpy(zero_copy_only=False)
        blk = batch.column("block").to_numpy(zero_copy_only=False)
        piece = batch.column("piece").fill_null(False).to_numpy(zero_copy_only=False)
        hdr = batch.column("is_header").fill_null(False).to_numpy(zero_copy_only=False) & ~piece
        change = np.empty(n, dtype=bool)
        change[1:] = (sid[1:] != sid[:-1]) | (blk[1:] != blk[:-1])
        change[0] = last_key is None or (sid[0], blk[0]) != last_key
        idx = np.arange(n, dtype=np.int64)
        seg_start = np.maximum.accumulate(np.where(change, idx, 0))
        counted = np.cumsum(~piece, dtype=np.int64)  # a piece continues the line above: no new line number
        rel = counted - counted[seg_start] + (~piece[seg_start])
        if not change[0]:
            rel[seg_start == 0] += last_rel
        last_key, last_rel = (sid[-1], blk[-1]), int(rel[-1])
        table = pa.table(
            {
                "sid": batch.column("sid"),
                "block": batch.column("block"),
                "rel": pa.array(rel),
                "start": pa.array(hdr | change | piece),
                "orphan": pa.array(change & ~hdr & ~piece),
                "change": pa.array(change),
                "piece": pa.array(piece),
                "line": batch.column("line"),
            }
        )
        if carry is not None:
            table = pa.concat_tables([carry, table]).combine_chunks()
        starts = np.flatnonzero(table.column("start").to_numpy())
        if len(starts) > 1:
            next_changes = bool(table.column("change")[int(starts[-1])].as_py())
            yield emit(table.slice(0, starts[-1]), starts[:-1], next_changes)
        carry = table.slice(starts[-1])
    if carry is not None and carry.num_rows:
        yield emit(carry, np.array([0]), True)


def _warn_like(headers):
    """Header lines that may be at WARN level or above (a boolean Arrow array); a false hit is dropped once the
    header's fields are parsed."""
    import pyarrow.compute as pc

    return pc.fill_null(pc.match_substring_regex(headers, _WARN_LIKE), False)


def candidates(events):
    """The events some signature could match: all that matching reads (the table also keeps WARN+ events)."""
    from pyspark.sql import functions as F

    return events.where(F.size("sigs") > 0)


def build_events(spark, manifest: Manifest, out_dir: Path, prefilter: Prefilter, timezone: str = "UTC") -> EventsResult:
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    sources = manifest.text_sources
    out = str(Path(out_dir) / "events.parquet")
    if not sources:
        spark.createDataFrame([], _events_schema()).write.mode("overwrite").parquet(out)
        return EventsResult(out, {}, {})

    by_layout: dict[str, list[int]] = {}
    for source in sources:
        by_layout.setdefault(source.layout or "none", []).append(source.id)

    lines = _read_lines(spark, sources, Path(out_dir) / "packs")
    split = [s.id for s in sources if s.split_lines]
    piece = _sid_in(split) & F.col("line").startswith(PIECE.decode()) if split else F.lit(False)
    lines = lines.select(
        "sid",
        "block",
        piece.alias("piece"),
        F.when(piece, F.expr("substr(line, 2)")).otherwise(F.col("line")).alias("line"),
    )
    is_header = F.lit(False)
    blank = F.lit(False)
    for layout_id, ids in by_layout.items():
        if layout_id == "none":
            blank = blank | _sid_in(ids)
            continue
        is_header = F.when(_sid_in(ids), F.col("line").rlike(layout_by_id(layout_id).header)).otherwise(is_header)
    lines = lines.select(
        "sid",
        "block",
        is_header.alias("is_header"),
        "piece",
        F.when(blank, F.lit("")).otherwise(F.col("line")).alias("line"),
    )
    events = lines.mapInArrow(make_assembler(prefilter), ASSEMBLED_SCHEMA)
    observation = Observation("line-accounting")
    events = events.observe(observation, *_accounting(sources)).where(F.col("text").isNotNull()).drop("seg_end")
    parsed = _parse_fields(events, by_layout, manifest.bundle_year, timezone)
    parsed.where((F.size("sigs") > 0) | F.col("level").isin(*WARN_LEVELS)).write.mode("overwrite").parquet(out)
    return EventsResult(out, *_block_stats(observation.get, sources))


def _sid_in(ids: list[int]) -> Column:
    """`sid IN (ids)` as one SQL expression: Column.isin sends each literal to the JVM on its own, which cost
    7 s for 5,000 sources."""
    from pyspark.sql import functions as F

    ids = sorted({int(i) for i in ids})
    return F.expr(f"sid IN ({', '.join(map(str, ids))})") if ids else F.lit(False)


def _read_lines(spark, sources, packs: Path):
    """(sid, block, line) of every staged line; sources under PACK_SOURCE_BYTES are read from pack files."""
    from pyspark.sql import functions as F

    small = [s for s in sources if Path(s.staged).stat().st_size < PACK_SOURCE_BYTES]
    if len(small) < 2:
        small = []
    clear(packs)
    packed = {s.id for s in small}
    paths = [s.staged for s in sources if s.id not in packed]
    paths += [str(p) for p in pack(((s.id, Path(s.staged)) for s in small), packs)]
    conf = "spark.sql.sources.parallelPartitionDiscovery.threshold"
    before = spark.conf.get(conf)
    spark.conf.set(conf, LISTING_THRESHOLD)  # the driver lists the files: faster than a job for a few thousand
    try:
        frame = spark.read.option("lineSep", "\n").text(paths)
    finally:
        spark.conf.set(conf, before)
    in_pack = F.col("_metadata.file_path").endswith(".pack")
    sep = F.instr("value", PACK_SEP)
    sid = F.when(in_pack, F.substring_index("value", PACK_SEP, 1)).otherwise(
        F.regexp_extract("_metadata.file_path", r"/(\d+)\.log$", 1)
    )
    value = F.when(in_pack, F.col("value").substr(sep + 1, F.lit(2**31 - 1))).otherwise(F.col("value"))
    return frame.select(
        sid.cast("int").alias("sid"),
        F.col("_metadata.file_block_start").alias("block"),
        F.regexp_replace(value, "\r$", "").alias("line"),
    )


def _accounting(sources):
    """Metrics observed while the events are written, so no second pass: each file block's line count (from
    its last event), and the unparsed lines: every line of a binary source, and lines before the first header
    of a file whose layout has timestamps (they cannot be placed in time). Lines of a later block before its
    first header continue the previous block's last event: which block is a source's first (a packed source
    may start anywhere in its pack) is settled on the driver, from the block table. An event that starts with
    a piece of an over-long line adds no line for that piece, and is not counted as an event."""
    from pyspark.sql import functions as F

    binary = _sid_in([s.id for s in sources if s.layout == "none"])
    timed = [s.id for s in sources if s.layout != "none" and layout_by_id(s.layout).timed]
    span = F.col("last_rel") - F.col("first_rel") + 1 - F.col("split").cast("int")
    derived = _sid_in([s.id for s in sources if s.derived])  # events of a JSON document: not input
    return [
        F.collect_list(F.when(F.col("seg_end"), F.struct("sid", "block", F.col("last_rel").alias("lines")))).alias(
            "blocks"
        ),
        F.collect_list(F.when(binary, F.struct("sid", span.alias("lines")))).alias("unparsed"),
        F.collect_list(F.when(F.col("orphan") & _sid_in(timed), F.struct("sid", "block", span.alias("lines")))).alias(
            "orphans"
        ),
        F.count_if(~binary & ~derived & ~F.col("split")).alias("events"),
    ]


def _block_stats(observed: dict, sources) -> tuple[dict, dict]:
    """Lines per file block (to number lines), and per source its lines and unparsed lines."""
    blocks: dict[int, list[tuple[int, int]]] = {}
    stats: dict = {s.id: {"lines": 0, "unparsed": 0} for s in sources}
    for row in sorted(observed["blocks"], key=lambda r: (r["sid"], r["block"])):
        blocks.setdefault(row["sid"], []).append((row["block"], row["lines"]))
        stats[row["sid"]]["lines"] += row["lines"]
    for row in observed["unparsed"]:
        stats[row["sid"]]["unparsed"] += row["lines"]
    events = observed["events"]
    derived = {s.id for s in sources if s.derived}
    for row in observed["orphans"]:  # lines before the first header of a source: unparsed, not an event
        if row["block"] == blocks[row["sid"]][0][0]:
            stats[row["sid"]]["unparsed"] += row["lines"]
            events -= row["sid"] not in derived
    stats["events"] = events
    return blocks, stats


def _parse_fields(events, by_layout: dict[str, list[int]], bundle_year: int | None, timezone: str):
    """Split each event's header line into fields with its source's layout; entities and exception chain."""
    from pyspark.sql import functions as F

    header = F.substring_index("text", "\n", 1)
    parts = F.lit(None).cast("array<string>")
    ts_parsed = F.lit(None).cast("timestamp")
    fixed_logger = F.lit(None).cast("string")
    for layout_id, ids in by_layout.items():
        if layout_id == "none":
            continue
        layout = layout_by_id(layout_id)
        template = SEP.join(f"${layout.group_index(f)}" if layout.group_index(f) else "" for f in FIELDS)
        in_layout = _sid_in(ids) & ~F.col("orphan") & ~F.col("split")  # a piece: no header
        parts = F.when(in_layout, F.split(F.regexp_replace(header, layout.header, template), SEP)).otherwise(parts)
        if layout.timed and layout.time_format:
            raw = F.regexp_replace(F.col("_f")[0], r"\s+", " ")
            if layout.year_from_bundle:
                raw = F.concat_ws(" ", F.lit(str(bundle_year or 1970)), raw)
            parsed = F.try_to_timestamp(raw, F.lit(layout.time_format))
            if not layout.utc:
                parsed = F.to_utc_timestamp(parsed, timezone)
            ts_parsed = F.when(in_layout, parsed).otherwise(ts_parsed)
        if layout.fixed_logger:
            fixed_logger = F.when(in_layout, F.lit(layout.fixed_logger)).otherwise(fixed_logger)

    def field(name):
        value = F.col("_f")[FIELDS.index(name)]
        return F.when(value != "", value)

    events = events.withColumn("_f", parts)
    events = events.select(
        "sid",
        "block",
        "first_rel",
        "last_rel",
        "orphan",
        "sigs",
        ts_parsed.alias("time"),
        F.upper(field("level")).alias("level"),
        F.coalesce(field("logger"), fixed_logger).alias("logger"),
        field("thread").alias("thread"),
        field("host").alias("host"),
        field("uptime").cast("double").alias("uptime"),
        mask_column(F.coalesce(field("msg"), header)).alias("message"),
        mask_column(F.col("text")).alias("text"),  # the events table may outlive the run (--keep-work-dir)
    )
    return events.drop("_f")


def _events_schema():
    return (
        "sid int, block long, first_rel long, last_rel long, orphan boolean, sigs array<int>, "
        "time timestamp, level string, "
        "logger string, thread string, host string, uptime double, message string, text string"
    )
