"""Parse (Spark): staged text sources -> the events table, written as Parquet by the tasks.

One pass, no shuffle, and no event crosses to the JVM. The driver lists the staged files and cuts them into byte
ranges (SPLIT_BYTES; small files go many to a task, so a bundle of thousands costs a few tasks); Spark runs one
task per range list, and each task reads its bytes through pyarrow's file systems (local, HDFS, S3), finds the
lines, headers and candidate events itself (scanner.py), masks their secrets, splits their header fields,
matches the rules on them (matcher.py) and writes the events it keeps: every event some signature could match,
and every event at WARN level or above (whole text, capped at MAX_EVENT_LINES lines), each with the rules it
matched. Every other event is only counted; Spark gets only the counts. With the measures written as rows of
their own (scan/measured.py), an event only a metric measures is written only there, not in this table.

An event that straddles two ranges belongs, whole, to the range its header starts in; the next range skips the
continuation lines at its head. Line numbers in the table are relative to a range (`block`, its first byte):
the ranges' own line counts make them file line numbers. `file_line` is the one place that does it; every
consumer uses it. An event's time is read by its task where the answer is certain to be Spark's (times.py: a
fixed-width pattern, a valid date, UTC; only when the scan writes measured rows, whose spec carries the zones);
Spark parses the others when the table is read (`EventsResult.table`), with the layout's own datetime pattern,
from the header's raw time the tasks keep for them. The findings' and unexplained errors' reads spent about a
second per 1.4 million rows parsing every event's time in the JVM.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from ..errors import InputChanged
from ..sources.ingest import Manifest, Source
from ..sources.layouts import layout_by_id
from ..sources.staging import shown_input
from .catalogue import for_tasks
from .headers import WARN_WORDS
from .matcher import Matcher
from .measured import MeasuredRows
from .prefilter import Prefilter
from .scanner import COUNTS, MAX_EVENT_LINES, STORED_SCHEMA, Part, part_rows, run

if TYPE_CHECKING:
    from concurrent.futures import Future

    import pyarrow as pa
    from pyspark.sql import Column, DataFrame, Row, SparkSession
    from pyspark.sql.types import DataType, StructType

__all__ = ["MAX_EVENT_LINES", "EventsResult", "block_offsets", "build_events", "file_line", "plan"]

WARN_LEVELS = tuple(sorted(WARN_WORDS))  # levels kept beside the candidates (unexplained.py reads them)
SPLIT_BYTES = 128 * 1024 * 1024  # a range per task: Spark's own default for files
FILES_PER_TASK = 5000  # small files read by one task, at most
# a JobManager log's byte costs its task 1x (lab) to about 4x (production: measured checkpoint lines) what a
# TaskManager log's does (bench/part_profile.py): counted twice when run_order ranks the tasks by cost
JOBMANAGER_COST = 2
GROUP_COST = 192 * 1024 * 1024  # tasks run by one Spark task until their cost (run_order's) reaches this (run_groups)
TAIL_TASKS = 2  # per slot: the last tasks of run_order, which run alone
Blocks = dict[int, list[tuple[int, int]]]  # source id -> (range, lines in it) per range, in file order
# EventsResult.stats: per-source counts by sid and totals by name in one mapping, which its readers index by
# both kinds of key: Any until it is split in two
Stats: TypeAlias = dict[Any, Any]


@dataclass(frozen=True)
class TimeReading:
    """How to read the events' times: each source's layout, the bundle's year (layouts that print none), the
    time zone of layouts that print local times."""

    by_layout: dict[str, list[int]] = field(default_factory=dict)
    bundle_year: int | None = None
    timezone: str = "UTC"


@dataclass
class EventsResult:
    path: str  # events Parquet
    blocks: Blocks
    # sid -> {"lines", "unparsed", "events"}; totals: "events", "matched" ((event, rule) matches), "measured"
    # (lines), "warned" (WARN+), "catalogued" ((event, entry) hits of the failure catalogue)
    stats: Stats
    times: TimeReading = field(default_factory=TimeReading)
    measured: str | None = None  # the measures' rows the tasks wrote (measured.py), when asked to
    tasks_cpu_s: float = 0.0  # the scan tasks' CPU, summed: of the events lap, what the Python workers computed

    def table(self, spark: SparkSession) -> DataFrame:
        """The events table: what the tasks wrote, with `time` (UTC): the tasks', or parsed from the header's raw
        time where they left it."""

        stored = spark.read.schema(STORED_SCHEMA).parquet(self.path)
        names = [name for name in stored.columns if name not in ("ts", "time")]
        at = names.index("measures")
        return stored.select(*names[:at], stored_time(self.times).alias("time"), *names[at:])

    def files(self, spark: SparkSession) -> list[str] | None:
        """The table's Parquet files, for the driver to read itself, largest first as Spark packs a scan's (the
        order of what is read from them does not decide an answer); None where the driver may not see them (a
        master that is not local: the tasks wrote where they ran)."""
        if not _local(spark):
            return None
        found = [e for e in os.scandir(self.path) if e.is_file() and not e.name.startswith(("_", "."))]
        return [e.path for e in sorted(found, key=lambda e: (-e.stat().st_size, e.name))]

    def rows(self, spark: SparkSession, rows: pa.Table) -> DataFrame:
        """Rows the driver read from the table's files (STORED_SCHEMA's columns, `ts` and `time` among them) as
        a DataFrame with `time` as `table` gives it. Their empty batches are left out: Spark (4.3) reads the
        Arrow stream createDataFrame sends it only up to the first batch of no rows, and lost every row after
        it (a lab bundle's earliest instances, read in batches from the files)."""
        import pyarrow as pa

        frame = spark.createDataFrame(pa.Table.from_batches([b for b in rows.to_batches() if b.num_rows], rows.schema))
        return frame.select(
            *[c for c in frame.columns if c not in ("ts", "time")], stored_time(self.times).alias("time")
        )


def _size_to_read(source: Source) -> int:
    """The bytes of a staged source to read: of an input read in place, as many as ingest saw (a live log that
    grew is read as it was); one gone or cut shorter since is InputChanged, never a partial count."""
    staged = str(source.staged)
    if not source.in_place and not os.path.islink(staged):
        return Path(staged).stat().st_size  # flinkdoctor's own copy, in the work dir
    shown = shown_input(staged)
    try:
        found = os.stat(staged)
    except OSError as err:
        raise InputChanged.unreadable(shown, err) from err
    if not stat.S_ISREG(found.st_mode):
        raise InputChanged(shown, "it is no longer a file")
    now = found.st_size
    if now < source.size:
        raise InputChanged(shown, f"{source.size:,} bytes when read, {now:,} now")
    return source.size


def plan(
    sources: list[Source], split_bytes: int = SPLIT_BYTES, bundle_of: Mapping[int, int] | None = None
) -> list[list[Part]]:
    """The tasks: each a list of byte ranges. A file larger than `split_bytes` is cut into ranges of that size,
    one task each; smaller files are gathered, many to a task, up to `split_bytes` together. `bundle_of` (source
    id -> bundle) says which bundle each event belongs to when several are scanned together (default: one)."""
    tasks: list[list[Part]] = []
    small: list[Part] = []
    gathered = 0
    for source in sources:
        size = _size_to_read(source)
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
                bundle_of.get(source.id, 0) if bundle_of else 0,
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


def run_order(tasks: list[list[Part]]) -> list[int]:
    """The tasks' numbers in the order Spark should run them: the costliest first (by bytes, JobManager bytes
    counted JOBMANAGER_COST times), ties in plan order. Spark runs a stage's tasks in partition order, as slots
    free up; with the longest first, the stage does not end on a long task running alone while the other slots
    idle (longest processing time first). A task keeps its number, so its files' names and contents do not
    depend on the order."""
    return sorted(range(len(tasks)), key=lambda number: (-_cost(tasks[number]), number))


def _cost(task: list[Part]) -> int:
    return sum((part.end - part.start) * (JOBMANAGER_COST if part.kind == "flink-jobmanager" else 1) for part in task)


def run_groups(tasks: list[list[Part]], slots: int | None) -> list[list[int]]:
    """The tasks as Spark runs them, in run_order: on a local master of `slots` cores, consecutive tasks run one
    after the other by one Spark task until their cost reaches GROUP_COST; the last TAIL_TASKS per slot, the
    cheapest, run alone, so the stage still ends on short tasks. Each Spark task costs its slot 20-60 ms of wall
    between tasks (the JVM ends one and launches the next: 1.2-1.8 s a worker at production 8 GiB's 82 tasks) and
    the JVM 20-30 ms of CPU, a tenth of a production TaskManager task (0.37 s). `slots` None (a cluster, whose
    slots the driver does not know): every task alone. Each task still writes its own file under its number."""
    order = run_order(tasks)
    if slots is None:
        return [[number] for number in order]
    cut = max(len(order) - TAIL_TASKS * slots, 0)
    groups: list[list[int]] = []
    cost = GROUP_COST
    for number in order[:cut]:
        if cost >= GROUP_COST:
            groups.append([])
            cost = 0
        groups[-1].append(number)
        cost += _cost(tasks[number])
    return groups + [[number] for number in order[cut:]]


def build_events(
    spark: SparkSession,
    manifest: Manifest,
    out_dir: Path,
    prefilter: Prefilter,
    timezone: str = "UTC",
    split_bytes: int = SPLIT_BYTES,
    matcher: Matcher | None = None,
    bundle_of: Mapping[int, int] | None = None,
    measured: MeasuredRows | None = None,
) -> EventsResult:
    """The events table, written by the tasks under `out_dir` (flinkdoctor's work dir: an earlier table there is
    replaced). With a `matcher` (whose prefilter `prefilter` is), the tasks match its rules and metrics: each
    event's `matches` (findings.py reads them) and `measures` (analytics); without, they are empty. `bundle_of`:
    see `plan`. With `measured` (its kinds; its folder and zones are set here), the tasks write the measures as
    rows too, under `out_dir` (EventsResult.measured), and an event only a metric measures only there."""
    out = Path(out_dir) / "events.parquet"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    sources = manifest.text_sources
    by_layout: dict[str, list[int]] = {}
    for source in sources:
        by_layout.setdefault(source.layout or "none", []).append(source.id)
    times = TimeReading(by_layout, manifest.bundle_year, timezone)
    if not sources:
        return EventsResult(str(out), {}, {}, times)
    tasks = plan(sources, split_bytes, bundle_of)
    matcher = _for_tasks(spark, matcher, Path(out_dir))
    rows = None
    if measured is not None and matcher is not None:
        rows = Path(out_dir) / "measures.parquet"
        shutil.rmtree(rows, ignore_errors=True)
        rows.mkdir(parents=True)
        session = spark.conf.get("spark.sql.session.timeZone") or ""
        measured = replace(measured, out_dir=str(rows), timezone=timezone, session_utc=session == "UTC")
    else:
        measured = None
    groups = run_groups(tasks, _slots(spark))
    scan = partial(
        run,
        plan=part_rows(tasks),
        prefilter=prefilter,
        out_dir=str(out),
        matcher=matcher,
        measured=measured,
        groups=groups,
    )
    _warm_parser()
    parts = spark.range(0, len(groups), 1, len(groups)).mapInArrow(scan, _output_type()).collect()
    cpu_s = sum(row["cpu_us"] for row in parts) / 1e6
    return EventsResult(str(out), *_part_stats(parts, sources), times, str(rows) if rows else None, cpu_s)


def _output_type() -> StructType:
    """OUTPUT_SCHEMA as a type built here, not parsed: a DDL string is parsed by the JVM, and its first parse there
    (Spark's SQL parser loaded and warmed, 0.35-0.45 s of CPU) held up the stage's start (_warm_parser)."""
    from pyspark.sql.types import IntegerType, LongType, StructField, StructType

    return StructType(
        [StructField("sid", IntegerType()), StructField("block", LongType())]
        + [StructField(name, LongType()) for name in (*COUNTS, "cpu_us")]
    )


def _warm_parser() -> Future[DataType] | None:
    """The events table's schema (STORED_SCHEMA, which `table` reads by) parsed by the JVM in a thread while the
    scan's stage starts: the first parse in a JVM costs 0.35-0.45 s of CPU, paid while the stage's planning and
    its Python workers' start leave a core idle, not later on the findings lap. Not with Spark Connect (its
    parse is the server's; the server's JVM is warm)."""
    from pyspark.sql.types import _parse_datatype_string
    from pyspark.sql.utils import is_remote

    from ..runtime.beside import beside

    if is_remote():
        return None
    return beside(_parse_datatype_string, STORED_SCHEMA)


def _for_tasks(spark: SparkSession, matcher: Matcher | None, run_dir: Path) -> Matcher | None:
    """The matcher as the tasks get it: on a local master (the tasks see the driver's files) its catalogue index
    is read by each Python worker from its file, not unpickled from every task's function (15 MB)."""
    if matcher is None or matcher.catalogue is None or not _local(spark):
        return matcher
    return replace(matcher, catalogue=for_tasks(matcher.catalogue, run_dir))


def _local(spark: SparkSession) -> bool:
    try:
        master = spark.conf.get("spark.master") or ""
    except Exception:  # noqa: BLE001 - a session that does not say where it runs: not known to be local
        return False
    return master.startswith("local")


def _slots(spark: SparkSession) -> int | None:
    """The cores a local master runs tasks on (`local`, `local[N]`, `local[*]`, with or without retries); None for
    any other master. `local[*]` runs on the JVM's available processors, which a container's CPU limit lowers
    (the machine's count, os.cpu_count, would not)."""
    try:
        master = spark.conf.get("spark.master") or ""
    except Exception:  # noqa: BLE001 - a session that does not say where it runs: not known to be local
        return None
    found = re.fullmatch(r"local(?:\[(\*|\d+)(?:,\d+)?\])?", master.strip())
    if found is None:
        return None
    if found.group(1) in (None, "*"):
        return 1 if found.group(1) is None else _jvm_cores(spark)
    return max(int(found.group(1)), 1)


def _jvm_cores(spark: SparkSession) -> int:
    """The processors the driver's JVM sees (what Spark's `local[*]` counts), the machine's if it cannot say."""
    try:
        return max(int(spark.sparkContext._jvm.java.lang.Runtime.getRuntime().availableProcessors()), 1)  # type: ignore[union-attr]
    except Exception:  # noqa: BLE001 - no JVM to ask (a session stand-in): the machine's count
        return os.cpu_count() or 1


def _part_stats(parts: list[Row], sources: list[Source]) -> tuple[Blocks, Stats]:
    """Lines per range (to number lines), per source its lines, unparsed lines and events, and the totals."""
    blocks: Blocks = {}
    stats: Stats = {s.id: {"lines": 0, "unparsed": 0, "events": 0} for s in sources}
    totals = dict.fromkeys(("events", "matched", "measured", "warned", "catalogued"), 0)
    for row in sorted(parts, key=lambda r: (r["sid"], r["block"])):
        blocks.setdefault(row["sid"], []).append((row["block"], row["lines"]))
        stats[row["sid"]]["lines"] += row["lines"]
        stats[row["sid"]]["unparsed"] += row["unparsed"]
        stats[row["sid"]]["events"] += row["events"]
        for key in totals:
            totals[key] += row[key]
    stats.update(totals)
    return blocks, stats


def block_offsets(blocks: Blocks) -> dict[tuple[int, int], int]:
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


def _sid_in(ids: list[int]) -> Column:
    """`sid IN (ids)` as one SQL expression: Column.isin sends each literal to the JVM on its own, which cost
    7 s for 5,000 sources."""
    from pyspark.sql import functions as F

    condition = sid_condition(ids)
    return F.expr(condition) if condition else F.lit(False)


MAX_RANGES = 64  # runs of consecutive ids written as ranges, at most (an OR of more is a deep expression)


def sid_condition(ids: list[int]) -> str | None:
    """SQL that holds for exactly these source ids (None for none): runs of consecutive ids as ranges, the others
    in one IN list. Ingest numbers sources in walking order, so a bundle of 100,000 rolled files of one layout is
    one range, not 100,000 literals for Spark to parse and plan at every read of the events table."""
    ordered = sorted({int(i) for i in ids})
    if not ordered:
        return None
    runs: list[list[int]] = []
    for sid in ordered:
        if runs and runs[-1][1] == sid - 1:
            runs[-1][1] = sid
        else:
            runs.append([sid, sid])
    ranges = [(first, last) for first, last in runs if last - first >= 2]
    if len(ranges) > MAX_RANGES:
        ranges = []
    ranged = {sid for first, last in ranges for sid in range(first, last + 1)}
    single = [sid for sid in ordered if sid not in ranged]
    terms = [f"sid BETWEEN {first} AND {last}" for first, last in ranges]
    terms += [f"sid IN ({', '.join(map(str, single))})"] if single else []
    return " OR ".join(terms)


def stored_time(times: TimeReading) -> Column:
    """An event's time (UTC) from the columns the tasks wrote: the task's `time` (microseconds), else its raw `ts`
    parsed by Spark (parsed_time)."""
    from pyspark.sql import functions as F

    return F.coalesce(F.expr("timestamp_micros(time)"), parsed_time(times))


def parsed_time(times: TimeReading) -> Column:
    """The events' time, parsed from the raw `ts` with each source's layout pattern, in UTC (null where `ts` is)."""
    from pyspark.sql import functions as F

    parsed_any = F.lit(None).cast("timestamp")
    for layout_id, ids in times.by_layout.items():
        if layout_id == "none":
            continue
        layout = layout_by_id(layout_id)
        if not (layout.timed and layout.time_format):
            continue
        raw = F.regexp_replace(F.col("ts"), r"\s+", " ")
        if layout.year_from_bundle:
            raw = F.concat_ws(" ", F.lit(str(times.bundle_year or 1970)), raw)
        parsed = F.try_to_timestamp(raw, F.lit(layout.time_format))
        if not layout.utc:
            parsed = F.to_utc_timestamp(parsed, times.timezone)
        parsed_any = F.when(_sid_in(ids), parsed).otherwise(parsed_any)
    return parsed_any
