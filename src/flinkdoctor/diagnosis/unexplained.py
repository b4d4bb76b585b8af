"""Unexplained errors: WARN+ events no rule explains, grouped into templates and ranked (issue #10, part 4).

When no signature knows a failure, the line that tells the story is often a WARN or ERROR a few seconds before it.
After correlation, every WARN/ERROR/FATAL event that is not the evidence of a finding is reduced to a template:
its header message with the variable parts (ids, addresses, paths, numbers) masked by the regexes of MASKS,
grouped by logger and template (by message first, so the masks run once per distinct message): on a local
master by the driver over the events table's files, file by file (templates_of_files), else in Spark. A template
is ranked by how rare it is in healthy runs (the shipped baseline, knowledge/baseline.json, built from the fault
lab's healthy bundles of every recorded Flink version by `flinkdoctor-lab baseline`) and by how close it comes in
time to the failure (the root cause, the derived cause, or the first failure event). Only templates rarer than
RARE are reported: a healthy run prints WARNs of its own.

Masking in Spark was measured against Drain3 on a real lab bundle (bench/RESULTS.md, "Unexplained errors"): the
same templates for these logs, no extra dependency. The driver's way gives Spark's templates exactly: Java's
regexes and Python's agree on ASCII text with re.ASCII (ASCII_MASKS), and Spark masks the other messages.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from functools import cache, partial
from importlib import resources
from typing import TYPE_CHECKING, Any

from ..errors import RuleError
from ..knowledge.validation import schema
from ..safety.masking import mask
from ..scan.events import WARN_LEVELS, Blocks, EventsResult, block_offsets
from ..sources.ingest import Manifest
from .findings import _each_file, keys_frame

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import Column, DataFrame, Row, SparkSession

    from .correlate import RootCause
    from .fallback import Outcome
    from .findings import Finding

BASELINE = "knowledge/baseline.json"
TOP = 5  # templates shown in the report
RARE = 0.5  # rarity above which a template is reported: seen in fewer than half of the healthy runs
NEAR_S = 60.0  # closeness halves at this distance (seconds) from the failure
# a finding that says only that an event is at ERROR (failure evidence) explains nothing about it: the event stays
# an unexplained error, to be templated and ranked
LEVEL_ONLY = ("error-event",)
UNTIMED_CLOSENESS = 0.25  # a template with no time cannot be placed near the failure
MAX_TEMPLATES = 20_000  # templates collected to the driver per bundle (a bundle rarely has more than a few hundred)
FEW = 20_000  # up to this many WARN+ events are grouped on the driver
SEVERITY = {level: rank for rank, level in enumerate(("WARN", "WARNING", "ERROR", "FATAL"))}

# (name, Java/Python regex of a variable part). Applied in this order, each part becoming <name>; the same regexes
# draft a rule (suggest.py), where each placeholder is captured again by PLACEHOLDER_REGEX.
MASKS: tuple[tuple[str, str], ...] = (
    ("URL", r"\b[a-zA-Z][\w+.-]{0,20}://[^\s,;'\"()\[\]<>]{1,2000}"),
    ("PATH", r"(?<![\w.])/[^\s,;'\"()\[\]<>]{1,2000}"),
    ("IP", r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d{1,5})?\b"),
    ("ID", r"\b[0-9a-fA-F]{32}\b"),
    ("HEX", r"\b0x[0-9a-fA-F]{1,64}\b|@[0-9a-f]{4,16}\b|\b(?=[0-9a-f]{0,63}\d)(?=[0-9a-f]{0,63}[a-f])[0-9a-f]{8,64}\b"),
    ("NUM", r"\d{1,40}(?:[.,]\d{1,40}){0,8}"),
)
PLACEHOLDER_REGEX = {
    "URL": r"[^\s,;'\"()\[\]<>]++",
    "PATH": r"/[^\s,;'\"()\[\]<>]*+",
    "IP": r"\d{1,3}(?:\.\d{1,3}){3}(?::\d{1,5})?",
    "ID": r"[0-9a-fA-F]{32}",
    "HEX": r"@?(?:0x)?[0-9a-fA-F]++",
    "NUM": r"\d++(?:[.,]\d++)*+",
}
PLACEHOLDER = re.compile(r"<(" + "|".join(name for name, _ in MASKS) + r")>")
_COMPILED = tuple((re.compile(pattern), f"<{name}>") for name, pattern in MASKS)


@dataclass(frozen=True)
class Template:
    """One group of WARN+ events with the same logger and masked message, with its earliest event as evidence."""

    logger: str | None
    template: str
    level: str
    count: int
    first: datetime | None
    last: datetime | None
    sid: int
    line: int
    time: datetime | None
    host: str | None
    text: str  # the evidence event's header line, secrets masked

    @property
    def key(self) -> str:
        """The baseline's key: the same message from another logger is another template."""
        return f"{self.logger or '-'} {self.template}"


@dataclass(frozen=True)
class Ranked:
    template: Template
    rarity: float  # 1: never in a healthy run; 0: in every one
    closeness: float  # 1: at the failure; halves every NEAR_S seconds away
    score: float


@dataclass(frozen=True)
class Baseline:
    runs: tuple[str, ...]  # the healthy bundles it was built from
    seen: dict[str, int]  # template key -> in how many of those runs

    def rarity(self, key: str) -> float:
        return 1.0 - self.seen.get(key, 0) / len(self.runs) if self.runs else 1.0


def template_of(message: str) -> str:
    """A message's template (Python; the same masks as template_column)."""
    for pattern, placeholder in _COMPILED:
        message = pattern.sub(placeholder, message)
    return message


def template_column(column: Column) -> Column:
    """The template of a message column, in Spark (Java regex, the same MASKS)."""
    from pyspark.sql import functions as F

    for name, pattern in MASKS:
        column = F.regexp_replace(column, pattern, f"<{name}>")
    return column


def with_file_lines(events: DataFrame, blocks: Blocks, manifest: Manifest) -> DataFrame:
    """`events` with `line`, the file line of each event's first line. The one place that turns the events
    table's block-relative numbers into file lines (scan.events.block_offsets), so the conversion can change alone."""
    from pyspark.sql import functions as F

    rows = _line_rows(blocks, manifest)
    table = keys_frame(events.sparkSession, rows, "sid int, block long, fixed_line long, base long")
    joined = events.join(F.broadcast(table), ["sid", "block"], "left")
    line = F.coalesce(F.col("fixed_line"), F.coalesce(F.col("base"), F.lit(0)) + F.col("first_rel"))
    return joined.withColumn("line", line.cast("long")).drop("fixed_line", "base")


def collect_templates(
    events: DataFrame,
    blocks: Blocks,
    manifest: Manifest,
    explained: Iterable[tuple[int, int]] = (),
    warned: int | None = None,
    stored: EventsResult | None = None,
) -> list[Template]:
    """Every template of the WARN+ events, less the events in `explained` ((sid, file line) of findings' events),
    per bundle (the events' `bundle`; a template's evidence `sid` says which).
    With `stored` (the scan's table: `events` is its `table`) whose files the driver sees, the driver reads them
    itself (templates_of_files): no Spark job but for the masks of non-ASCII messages. Else, when the scan tasks
    counted at most FEW `warned` events, Spark masks them and the driver groups them: two shuffles cost more
    than the grouping for a small bundle (the warm path's largest query); else Spark groups them.

    Reads only the events contract columns: sid, time, level, logger, host, message, head (an event's first
    line: never the whole text) and the line numbers, and `repeats`: of the WARN+ events of a part that no rule,
    metric or catalogue entry can match and that share a logger, message and level, the scan keeps the first and
    the last, the first standing for all but the last."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    spark = events.sparkSession
    explained = sorted(set(explained))
    files = stored.files(spark) if stored is not None else None
    if files is not None:
        here = templates_of_files(files, blocks, manifest, explained, partial(_masked_in_spark, spark))
        if here is not None:
            return here
    warn = with_file_lines(events.where(F.col("level").isin(*WARN_LEVELS)), blocks, manifest)
    if explained:
        known = keys_frame(spark, explained, "sid int, line long")
        warn = warn.join(F.broadcast(known), ["sid", "line"], "left_anti")
    severity = F.expr("CASE level " + " ".join(f"WHEN '{lv}' THEN {n}" for lv, n in SEVERITY.items()) + " ELSE -1 END")
    # the evidence line is the event's `head` (its first line, cut as the scan cuts it: HEAD_MAX chars), written
    # by the scan for WARN+ events: reading `text` for it decoded every kept event's whole text
    evidence = F.struct("sid", "line", "time", "host", F.col("head").alias("text"))
    order = F.struct(F.col("time").isNull(), "time", "sid", "line")
    if warned is not None and warned <= FEW:
        return _grouped_here(
            warn.select(
                "bundle",
                F.coalesce("logger", F.lit("")).alias("logger"),
                template_column(F.coalesce("message", F.lit(""))).alias("template"),
                "level",
                severity.alias("severity"),
                "time",
                "repeats",
                evidence.alias("evidence"),
            ).collect()
        )
    messages = (  # the same message repeats: group by it first, so the masks run once per distinct message
        warn.select(
            "bundle",
            F.coalesce("logger", F.lit("")).alias("logger"),
            F.coalesce("message", F.lit("")).alias("message"),
            "level",
            severity.alias("severity"),
            "time",
            "repeats",
            evidence.alias("evidence"),
            order.alias("order"),
        )
        .groupBy("bundle", "logger", "message")
        .agg(
            F.sum("repeats").alias("count"),
            F.max_by("level", "severity").alias("level"),
            F.max("severity").alias("severity"),
            F.min("time").alias("first"),
            F.max("time").alias("last"),
            F.min_by("evidence", "order").alias("evidence"),
            F.min("order").alias("order"),
        )
    )
    grouped = (
        messages.select("*", template_column(F.col("message")).alias("template"))
        .groupBy("bundle", "logger", "template")
        .agg(
            F.sum("count").alias("count"),
            F.max_by("level", "severity").alias("level"),
            F.min("first").alias("first"),
            F.max("last").alias("last"),
            F.min_by("evidence", "order").alias("evidence"),
            F.max("severity").alias("severity"),
        )
    )
    # at most MAX_TEMPLATES per bundle, the most severe and rarest first: a fleet's bundles each keep theirs
    each = Window.partitionBy("bundle").orderBy(F.desc("severity"), "count", "logger", "template")
    grouped = grouped.withColumn("nth", F.row_number().over(each)).where(F.col("nth") <= MAX_TEMPLATES)
    return [_template(row, row["count"], row.level, row.first, row.last) for row in grouped.collect()]


def _grouped_here(rows: list[Row]) -> list[Template]:
    """The templates of masked rows (logger, template, level, severity, time, evidence), grouped as Spark groups
    them: the count, the most severe level, the first and last time, and the evidence of the earliest event
    (by time, the untimed last, then by source and line: Spark's `order`)."""
    groups: dict[tuple[int, str, str], list[Row]] = {}
    for row in rows:
        groups.setdefault((row.bundle, row.logger, row.template), []).append(row)
    templates = []
    for same in groups.values():
        times = [row.time for row in same if row.time is not None]
        earliest = min(same, key=lambda r: (r.time is None, r.time or datetime.min, r.evidence.sid, r.evidence.line))
        most = max(same, key=lambda row: row.severity)
        count = sum(row.repeats for row in same)
        templates.append(_template(earliest, count, most.level, min(times, default=None), max(times, default=None)))
    return templates


def _template(row: Row, count: int, level: str, first: datetime | None, last: datetime | None) -> Template:
    """A Template of a row holding the group's logger, template and evidence."""
    return Template(
        logger=row.logger or None,
        template=mask(row.template) or "",
        level=level,
        count=count,
        first=first,
        last=last,
        sid=row.evidence.sid,
        line=int(row.evidence.line),
        time=row.evidence.time,
        host=row.evidence.host,
        text=mask(row.evidence.text) or "",
    )


# --- the templates on the driver, from the events table's files (a local master) ----------------------------

# template_column's masks as Python runs them on ASCII text: with re.ASCII, \\w is Java's [a-zA-Z_0-9], \\d its
# [0-9], \\s its [ \\t\\n\\x0B\\f\\r] and \\b the edge between those word characters and the others, as Java's
# (isLetterOrDigit or '_', or a non-spacing mark after one: none in ASCII). Without it Python's \\s holds
# \\x1c-\\x1f, and \\w, \\d and \\b take letters and digits of every script, where Java's \\w and \\d do not and its
# \\b does: a non-ASCII message is masked by Spark's own regexes (templates_of_files' `masked_in_spark`).
ASCII_MASKS = tuple((re.compile(pattern, re.ASCII), f"<{name}>") for name, pattern in MASKS)
# the columns a file's WARN+ events are read with (`ts`: a time only Spark reads), never `text`; their `head`
# is read afterwards for the templates' evidence only (_heads: read with the rest, it took the driver's peak
# 14 MiB higher at lab 1 GiB)
FILE_COLUMNS = ("bundle", "sid", "block", "first_rel", "level", "logger", "message", "host", "repeats", "time", "ts")
# a group's level: the last in this order of its rows' levels (Spark: max_by(level, severity); where levels
# share a severity, SEVERE and CRITICAL, Spark takes whichever it meets first: here the greater name)
LEVEL_ORDER = tuple(sorted(WARN_LEVELS, key=lambda level: (SEVERITY.get(level, -1), level)))
BY_MESSAGE = ["bundle", "logger", "message"]
BY_TEMPLATE = ["bundle", "logger", "template"]
EVIDENCE = ("time", "sid", "line", "block", "first_rel", "host", "file", "row")  # file, row: where its head is
FILE_BATCH = 4_096  # a file's rows decoded at a time
GROUPED = 65_536  # a file's WARN+ events held before they are grouped by message
PENDING = 50_000  # non-ASCII messages' groups held (at most) for one Spark job of their masks
WAITING = 65_536  # rows of groups that wait before they are merged with those so far (_Groups)
CACHED = 20_000  # ASCII messages' templates remembered across files (the same WARN in every container's log)

MaskedInSpark = Callable[[list[str]], list[str]]
Lines = dict[tuple[int, int], tuple[int | None, int]]  # (sid, block) -> with_file_lines' (fixed_line, base)
Known = dict[int, Any]  # sid -> its explained events' lines (a numpy array)


def ascii_template(message: str) -> str:
    """template_column's template of an ASCII message, in Python (ASCII_MASKS)."""
    for pattern, placeholder in ASCII_MASKS:
        message = pattern.sub(placeholder, message)
    return message


def templates_of_files(
    files: list[str],
    blocks: Blocks,
    manifest: Manifest,
    explained: Iterable[tuple[int, int]],
    masked_in_spark: MaskedInSpark,
) -> list[Template] | None:
    """collect_templates over the table's files (EventsResult.files) read by the driver, the same templates: each
    file's WARN+ events (only the columns collect_templates reads) grouped by message, its ASCII messages masked
    once each (ascii_template), then grouped by template; the files' templates merged as they come, so the
    driver holds a file's events and the templates, never the table's. Non-ASCII messages wait, grouped by
    message, for `masked_in_spark` (a job per PENDING of them). None when a WARN+ event has a time only Spark
    reads (its task left the raw `ts`): Spark's way then."""
    import numpy as np

    lines = {(sid, block): (fixed, base) for sid, block, fixed, base in _line_rows(blocks, manifest)}
    by_source: dict[int, list[int]] = {}
    for sid, line in set(explained):
        by_source.setdefault(sid, []).append(line)
    known = {sid: np.array(found, dtype=np.int64) for sid, found in by_source.items()}
    cache: dict[str, str] = {}
    merged, pending = _Groups(BY_TEMPLATE), _Groups(BY_MESSAGE)
    numbers = {path: n for n, path in enumerate(files)}
    read = partial(_templates_of_file, numbers=numbers, lines=lines, known=known, cache=cache)
    for found in _each_file(files, read):
        if found is None:
            return None
        masked, unmasked = found
        merged.add(masked)
        pending.add(unmasked)
        if pending.held >= PENDING:  # (rows held, at least the distinct messages: a Spark job per PENDING rows)
            merged.add(_templated(pending.table(), masked_in_spark))
            pending = _Groups(BY_MESSAGE)
    last = pending.table()
    if last is not None:
        merged.add(_templated(last, masked_in_spark))
    templates = merged.table()
    return _chosen(templates, files) if templates is not None else []


class _Groups:
    """Tables of groups (_reduced's) merged into one as they come, in time linear in their rows: a table waits
    until the waiting ones hold as many rows as the groups merged so far (at least WAITING), so each row is
    merged again a bounded number of times on average. Merged as each came, a bundle's every file (one per
    scan task) made the templates so far be grouped again: files x templates."""

    def __init__(self, keys: list[str]) -> None:
        self.keys = keys
        self.merged: pa.Table | None = None
        self.waiting: list[pa.Table] = []
        self.rows = 0  # the waiting tables' rows

    def add(self, more: pa.Table) -> None:
        if not more.num_rows:
            return
        self.waiting.append(more)
        self.rows += more.num_rows
        if self.rows >= max(WAITING, self.merged.num_rows if self.merged is not None else 0):
            self._merge()

    @property
    def held(self) -> int:
        """The rows held, merged and waiting: at least the distinct groups."""
        return self.rows + (self.merged.num_rows if self.merged is not None else 0)

    def table(self) -> pa.Table | None:
        """Every group so far (None while there is none)."""
        self._merge()
        return self.merged

    def _merge(self) -> None:
        import pyarrow as pa

        if self.waiting:
            tables = [self.merged, *self.waiting] if self.merged is not None else self.waiting
            self.merged = tables[0] if len(tables) == 1 else _reduced(pa.concat_tables(tables), self.keys)
            self.waiting, self.rows = [], 0


def _line_rows(blocks: Blocks, manifest: Manifest) -> list[tuple[int, int, int | None, int]]:
    """with_file_lines' table: (sid, block, the source's fixed line, the range's first file line - 1)."""
    sources = {s.id: s for s in manifest.sources}
    return [
        (sid, block, sources[sid].fixed_line, sources[sid].line_offset + offset)
        for (sid, block), offset in block_offsets(blocks).items()
        if sid in sources
    ]


def _templates_of_file(
    path: str, numbers: dict[str, int], lines: Lines, known: Known, cache: dict[str, str]
) -> tuple[pa.Table, pa.Table] | None:
    """One file's templates (templates_of_files): its ASCII messages' grouped by template, its non-ASCII ones'
    by message; None when a WARN+ event has only a raw time. Decoded FILE_BATCH rows at a time (a batch of
    65,536 took the driver's peak 17 MiB higher at lab 1 GiB), the WARN+ events kept with their place (file
    number, row), and grouped by message into the file's each GROUPED of them: a thread holds a batch, those
    events and the file's messages."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    messages, kept, held, at = None, [], 0, 0
    for batch in pq.ParquetFile(path).iter_batches(FILE_BATCH, columns=list(FILE_COLUMNS), use_threads=False):
        warn = pc.fill_null(pc.is_in(batch.column("level"), pa.array(WARN_LEVELS)), False)
        rows = np.flatnonzero(warn.to_numpy(zero_copy_only=False)) + at
        at += batch.num_rows
        warned = batch.filter(warn)
        if pc.any(pc.and_(pc.is_null(warned.column("time")), pc.is_valid(warned.column("ts")))).as_py():
            return None
        where = {"file": pa.array(np.full(len(rows), numbers[path], np.int32)), "row": pa.array(rows, pa.int64())}
        kept.append(pa.RecordBatch.from_arrays([*warned.columns, *where.values()], [*warned.schema.names, *where]))
        held += warned.num_rows
        if held >= GROUPED:
            messages, kept, held = _by_message(messages, kept, lines, known), [], 0
    if kept:
        messages = _by_message(messages, kept, lines, known)
    if messages is None:
        return pa.table({}), pa.table({})
    ascii = pc.string_is_ascii(messages.column("message"))
    masked = messages.filter(ascii)
    templates = []
    for message in masked.column("message").to_pylist():
        template = cache.get(message)
        if template is None:
            template = ascii_template(message)
            if len(cache) >= CACHED:
                cache.clear()
            cache[message] = template
        templates.append(template)
    masked = _with_template(masked, pa.array(templates, pa.string()))
    return _reduced(masked, BY_TEMPLATE), messages.filter(pc.invert(ascii))


def _by_message(messages: pa.Table | None, kept: list[pa.RecordBatch], lines: pa.Table, known: pa.Table) -> pa.Table:
    """The file's messages so far with the kept WARN+ events grouped in."""
    import pyarrow as pa

    events = _events_of(pa.Table.from_batches(kept), lines, known)
    return _reduced(events if messages is None else pa.concat_tables([messages, events]), BY_MESSAGE)


def _events_of(read: pa.Table, lines: Lines, known: Known) -> pa.Table:
    """WARN+ events read from a file as _reduced takes them (keys BY_MESSAGE), with with_file_lines' line
    (coalesce(fixed_line, coalesce(base, 0) + first_rel), each (sid, block) looked up once), less the `known`
    (explained) ones. (pyarrow's joins cost 7 ms a call: two a batch were a third of the lap.)"""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    sid, block, first_rel = (read.column(name).to_numpy() for name in ("sid", "block", "first_rel"))
    line = first_rel.astype(np.int64)
    if len(line) and lines:
        pairs, inverse = np.unique(np.stack([sid.astype(np.int64), block]), axis=1, return_inverse=True)
        fixed = np.zeros(pairs.shape[1], dtype=bool)
        value = np.zeros(pairs.shape[1], dtype=np.int64)  # the fixed line, else the range's base
        for p, pair in enumerate(zip(*pairs.tolist(), strict=True)):
            fixed_line, base = lines.get(pair, (None, 0))
            fixed[p], value[p] = fixed_line is not None, base if fixed_line is None else fixed_line
        inverse = inverse.ravel()
        line = np.where(fixed[inverse], value[inverse], value[inverse] + first_rel)
    keep = np.ones(len(line), dtype=bool)
    for one in known.keys() & set(np.unique(sid).tolist()):
        at = sid == one
        keep[at] = ~np.isin(line[at], known[one])
    placed = read.filter(pa.array(keep)).append_column("line", pa.array(line[keep], pa.int64()))
    empty = pa.scalar("", pa.string())
    return pa.table(
        {
            "bundle": placed.column("bundle"),
            "logger": pc.coalesce(placed.column("logger"), empty),
            "message": pc.coalesce(placed.column("message"), empty),
            "count": placed.column("repeats").cast(pa.int64()),
            "levelrank": pc.index_in(placed.column("level"), pa.array(LEVEL_ORDER)),
            "first": placed.column("time"),
            "last": placed.column("time"),
            **{name: placed.column(name) for name in EVIDENCE},
        }
    )


def _with_template(messages: pa.Table, templates: pa.Array) -> pa.Table:
    """Rows grouped by message with their message's template in its place."""
    at = messages.schema.get_field_index("message")
    return messages.set_column(at, "template", templates)


def _templated(messages: pa.Table, masked_in_spark: MaskedInSpark) -> pa.Table:
    """Non-ASCII messages' rows masked by Spark's regexes, grouped by template."""
    import pyarrow as pa

    templates = masked_in_spark(messages.column("message").to_pylist())
    return _reduced(_with_template(messages, pa.array(templates, pa.string())), BY_TEMPLATE)


def _masked_in_spark(spark: SparkSession, messages: list[str]) -> list[str]:
    """template_column of each message, by Spark (Java's regexes), in the messages' order."""
    from pyspark.sql import functions as F

    frame = keys_frame(spark, list(enumerate(messages)), "at long, message string")
    masked = frame.select("at", template_column(F.col("message")).alias("template")).collect()
    templates = [""] * len(messages)
    for row in masked:
        templates[row.at] = row.template
    return templates


def _reduced(rows: pa.Table, keys: list[str]) -> pa.Table:
    """Rows (keys, count, levelrank, first, last, EVIDENCE) grouped by `keys`, as Spark groups them: the count
    summed (null when every one is: Spark's sum), the greatest levelrank, the first and last time, and the
    evidence of the earliest row by Spark's `order` (time known first, time, sid, line; where Spark's min_by
    meets a tie, a derived source's one line, the scan's order: block, first_rel). Its own output is its input
    again: groups merge into what one grouping of all their rows gives."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    if not rows.num_rows:
        return rows
    time = rows.column("time")
    order = np.lexsort(
        (
            *(rows.column(name).to_numpy() for name in ("first_rel", "block", "line", "sid")),
            pc.fill_null(time, 0).to_numpy(),
            pc.is_null(time).to_numpy(zero_copy_only=False),
        )
    )
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    grouped = (
        rows.select([*keys, "count", "levelrank", "first", "last"])
        .append_column("rank", pa.array(rank))
        .group_by(keys, use_threads=False)
        .aggregate([("count", "sum"), ("levelrank", "max"), ("first", "min"), ("last", "max"), ("rank", "min")])
    )
    earliest = rows.select(list(EVIDENCE)).take(order[grouped.column("rank_min").to_numpy()])
    columns = {key: grouped.column(key) for key in keys}
    for name in ("count_sum", "levelrank_max", "first_min", "last_max"):
        columns[name.rsplit("_", 1)[0]] = grouped.column(name)
    return pa.table({**columns, **{name: earliest.column(name) for name in EVIDENCE}})


def _window_order(row: dict[str, Any]) -> tuple[int, bool, int, str, str]:
    """collect_templates' window's order: severity descending, then count (a null first), logger, template."""
    count = row["count"]
    return -SEVERITY.get(row["level"], -1), count is not None, count or 0, row["logger"], row["template"]


def _chosen(templates: pa.Table, files: list[str]) -> list[Template]:
    """At most MAX_TEMPLATES per bundle of the grouped templates, in the window's order (the most severe, then
    the fewest, then by logger and template), as Templates, their evidence's head read from `files`."""
    from pyspark.sql.types import TimestampType

    def at(micros: int | None) -> datetime | None:  # as Spark's collect gives a timestamp
        return TimestampType().fromInternal(micros) if micros is not None else None

    by_bundle: dict[int, list[dict[str, Any]]] = {}
    for row in templates.to_pylist():
        row["level"] = LEVEL_ORDER[row["levelrank"]]
        by_bundle.setdefault(row["bundle"], []).append(row)
    kept = []
    for rows in by_bundle.values():
        rows.sort(key=_window_order)
        kept += rows[:MAX_TEMPLATES]
    heads = _heads(files, {(row["file"], row["row"]) for row in kept})
    chosen = []
    for row in kept:
        chosen.append(
            Template(
                logger=row["logger"] or None,
                template=mask(row["template"]) or "",
                level=row["level"],
                count=row["count"],
                first=at(row["first"]),
                last=at(row["last"]),
                sid=row["sid"],
                line=int(row["line"]),
                time=at(row["time"]),
                host=row["host"],
                text=mask(heads[row["file"], row["row"]]) or "",
            )
        )
    return chosen


def _heads(files: list[str], places: set[tuple[int, int]]) -> dict[tuple[int, int], str | None]:
    """The `head` of each (file number, row) of `places`, read FILE_BATCH rows at a time."""
    import numpy as np
    import pyarrow.parquet as pq

    by_file: dict[int, list[int]] = {}
    for number, row in places:
        by_file.setdefault(number, []).append(row)
    heads = {}
    for number, rows in by_file.items():
        wanted, at = np.array(sorted(rows), dtype=np.int64), 0
        for batch in pq.ParquetFile(files[number]).iter_batches(FILE_BATCH, columns=["head"], use_threads=False):
            lo, hi = np.searchsorted(wanted, [at, at + batch.num_rows])
            for row in wanted[lo:hi].tolist():
                heads[number, row] = batch.column(0)[row - at].as_py()
            at += batch.num_rows
            if at > wanted[-1]:
                break
    return heads


@cache
def baseline() -> Baseline:
    """The shipped baseline of healthy runs (knowledge/baseline.json), checked against its schema."""
    import jsonschema

    data = json.loads(resources.files("flinkdoctor").joinpath(BASELINE).read_text("utf-8"))
    problems = [
        f"{BASELINE}: {e.json_path}: {e.message}"
        for e in jsonschema.Draft202012Validator(schema("baseline")).iter_errors(data)
    ]
    if problems:
        raise RuleError("\n".join(problems))
    return Baseline(tuple(data["runs"]), {key: int(t["runs"]) for key, t in data["templates"].items()})


def closeness(template: Template, failure: datetime | None) -> float:
    """1 at the failure, halving every NEAR_S seconds before or after; 1 for all when nothing failed."""
    if failure is None:
        return 1.0
    if template.first is None or template.last is None:
        return UNTIMED_CLOSENESS
    if template.first <= failure <= template.last:
        return 1.0
    gap = min(abs((template.first - failure).total_seconds()), abs((template.last - failure).total_seconds()))
    return float(0.5 ** (gap / NEAR_S))


def rank(templates: list[Template], known: Baseline, failure: datetime | None) -> list[Ranked]:
    """Every template, best first: rarer and closer to the failure, then the more severe, then the fewer."""
    ranked = []
    for template in templates:
        rarity = known.rarity(template.key)
        near = closeness(template, failure)
        ranked.append(Ranked(template, round(rarity, 3), round(near, 3), round(rarity * near, 4)))
    ranked.sort(
        key=lambda r: (
            -r.score,
            -SEVERITY.get(r.template.level, -1),
            r.template.count,
            r.template.first or datetime.max,
            r.template.key,
        )
    )
    return ranked


def failure_time(findings: list[Finding], roots: list[RootCause], outcome: Outcome | None) -> datetime | None:
    """When it failed: the first root cause's onset in the log, else the derived cause's failure, else the first
    failure event (fallback's failure rules); None when the input shows no failure."""
    from .fallback import knowledge

    if roots and not (outcome and outcome.derived_first):
        times = [f.time for f in roots[0].instances if f.time]
        if times:
            return min(times)
    if outcome and outcome.derived and outcome.derived[0].finding.time:
        return outcome.derived[0].finding.time
    failures = [f.time for f in findings if f.rule in knowledge().failure_rules and f.time]
    return min(failures) if failures else None


def explained_events(findings: Iterable[Finding]) -> set[tuple[int, int]]:
    """The (source, event line) of every event a finding explains; a level-only finding explains none."""
    return {(f.sid, f.event_line or f.line) for f in findings if f.rule not in LEVEL_ONLY}


def top_templates(templates: list[Template], known: Baseline, failure: datetime | None, top: int = TOP) -> list[Ranked]:
    """The `top` templates rarer than RARE in healthy runs, ranked against the failure's time."""
    return [r for r in rank(templates, known, failure) if r.rarity > RARE][:top]
