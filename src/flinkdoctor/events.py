"""Parse (Spark): staged text sources -> the events table, written as Parquet.

One pass, no shuffle, and no line crosses to the JVM. The driver lists the staged files and cuts them into byte
ranges (SPLIT_BYTES; small files go many to a task, so a bundle of thousands costs a few tasks); Spark runs one
task per range list, and each task reads its bytes through pyarrow's file systems (local, HDFS, S3), finds the
lines, headers and candidate events itself (scanner.py), masks their secrets, matches the rules on them
(matcher.py) and hands Spark only the events it keeps: every event some signature could match, and every event
at WARN level or above (whole text, capped at MAX_EVENT_LINES lines), each with the rules it matched. Every
other event is only counted. The JVM then splits the kept events' header fields, parses their time and writes
them.

An event that straddles two ranges belongs, whole, to the range its header starts in; the next range skips the
continuation lines at its head. Line numbers in the table are relative to a range (`block`, its first byte):
the ranges' own line counts, observed while the events are written, make them file line numbers. `file_line`
is the one place that does it; every consumer uses it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from .headers import WARN_WORDS
from .ingest import Manifest, Source
from .layouts import FIELDS, layout_by_id
from .matcher import Matcher
from .prefilter import Prefilter
from .scanner import MATCHES, MAX_EVENT_LINES, MEASURES, OUTPUT_SCHEMA, Part, run

if TYPE_CHECKING:
    from pyspark.sql import Column

__all__ = ["MAX_EVENT_LINES", "EventsResult", "block_offsets", "build_events", "file_line", "plan"]

SEP = "\u0001"
WARN_LEVELS = tuple(sorted(WARN_WORDS))  # levels kept beside the candidates (unexplained.py reads them)
SPLIT_BYTES = 128 * 1024 * 1024  # a range per task: Spark's own default for files
FILES_PER_TASK = 5000  # small files read by one task, at most


@dataclass
class EventsResult:
    path: str  # events Parquet
    blocks: dict  # sid -> [(block_start, lines)], in file order
    stats: dict  # sid -> {"lines", "unparsed"}; "events" -> number of events; "matched" -> (event, rule) matches


def plan(sources: list[Source], split_bytes: int = SPLIT_BYTES) -> list[list[Part]]:
    """The tasks: each a list of byte ranges. A file larger than `split_bytes` is cut into ranges of that size,
    one task each; smaller files are gathered, many to a task, up to `split_bytes` together."""
    tasks: list[list[Part]] = []
    small: list[Part] = []
    gathered = 0
    for source in sources:
        size = Path(str(source.staged)).stat().st_size
        layout = source.layout or "none"
        parts = [
            Part(
                source.id,
                str(source.staged),
                start,
                min(start + split_bytes, size),
                size,
                layout,
                source.split_lines > 0,
                not source.derived,
                source.kind,
            )
            for start in range(0, max(size, 1), split_bytes)
        ]
        if size > split_bytes:
            tasks += [[part] for part in parts]
            continue
        if small and (gathered + size > split_bytes or len(small) >= FILES_PER_TASK):
            tasks.append(small)
            small, gathered = [], 0
        small += parts
        gathered += size
    if small:
        tasks.append(small)
    return tasks


def build_events(
    spark,
    manifest: Manifest,
    out_dir: Path,
    prefilter: Prefilter,
    timezone: str = "UTC",
    split_bytes: int = SPLIT_BYTES,
    matcher: Matcher | None = None,
) -> EventsResult:
    """The events table. With a `matcher` (whose prefilter `prefilter` is), the tasks match its rules and
    metrics: each event's `matches` (match.py reads them) and `measures` (analytics); without, they are empty."""
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
    tasks = plan(sources, split_bytes)
    scanned = spark.range(0, len(tasks), 1, len(tasks)).mapInArrow(
        partial(run, plan=tasks, prefilter=prefilter, matcher=matcher), OUTPUT_SCHEMA
    )
    observation = Observation("line-accounting")
    stat = F.struct("sid", "block", "lines", "unparsed", "events", "matched")
    scanned = scanned.observe(observation, F.collect_list(F.when(F.col("stat"), stat)).alias("parts"))
    events = scanned.where(~F.col("stat")).drop("stat", "lines", "unparsed", "events", "matched")
    _parse_fields(events, by_layout, manifest.bundle_year, timezone).write.mode("overwrite").parquet(out)
    return EventsResult(out, *_part_stats(observation.get["parts"], sources))


def _part_stats(parts: list, sources) -> tuple[dict, dict]:
    """Lines per range (to number lines), per source its lines and unparsed lines, and the events."""
    blocks: dict[int, list[tuple[int, int]]] = {}
    stats: dict = {s.id: {"lines": 0, "unparsed": 0} for s in sources}
    events = matched = 0
    for row in sorted(parts, key=lambda r: (r["sid"], r["block"])):
        blocks.setdefault(row["sid"], []).append((row["block"], row["lines"]))
        stats[row["sid"]]["lines"] += row["lines"]
        stats[row["sid"]]["unparsed"] += row["unparsed"]
        events += row["events"]
        matched += row["matched"]
    stats["events"], stats["matched"] = events, matched
    return blocks, stats


def block_offsets(blocks: dict) -> dict[tuple[int, int], int]:
    """Lines in the ranges before each range of a file: turns range-relative line numbers into file ones."""
    offsets = {}
    for sid, spans in blocks.items():
        total = 0
        for block, lines in spans:
            offsets[(sid, block)] = total
            total += lines
    return offsets


def file_line(source: Source, offsets: dict[tuple[int, int], int], block: int, rel: int) -> int:
    """The line number, in the file the user has, of line `rel` of range `block` of `source` (`first_rel`,
    `last_rel`): Source.file_line maps it through a normalised copy's line map and a derived source's fixed line."""
    return source.file_line(offsets.get((source.id, block), 0) + rel)


def candidates(events):
    """The events some signature could match: all that matching reads (the table also keeps WARN+ events)."""
    from pyspark.sql import functions as F

    return events.where(F.size("sigs") > 0)


def _sid_in(ids: list[int]) -> Column:
    """`sid IN (ids)` as one SQL expression: Column.isin sends each literal to the JVM on its own, which cost
    7 s for 5,000 sources."""
    from pyspark.sql import functions as F

    ids = sorted({int(i) for i in ids})
    return F.expr(f"sid IN ({', '.join(map(str, ids))})") if ids else F.lit(False)


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
        "matches",
        "measures",
        ts_parsed.alias("time"),
        F.upper(field("level")).alias("level"),
        F.coalesce(field("logger"), fixed_logger).alias("logger"),
        field("thread").alias("thread"),
        field("host").alias("host"),
        field("uptime").cast("double").alias("uptime"),
        F.coalesce(field("msg"), header).alias("message"),
        "text",  # masked in the task: the events table may outlive the run (--keep-work-dir)
    )
    return events.drop("_f")


def _events_schema():
    return (
        f"sid int, block long, first_rel long, last_rel long, orphan boolean, sigs array<int>, matches {MATCHES}, "
        f"measures {MEASURES}, "
        "time timestamp, level string, "
        "logger string, thread string, host string, uptime double, message string, text string"
    )
