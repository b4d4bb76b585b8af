"""Findings (Spark): the matches the scan tasks found (matcher.py), counted per rule, with the earliest and
latest instances of each taken in detail.

The rule tests (`flinkdoctor rules test`, tests/test_rule_cases.py) read matches the same way, so there is no
second matcher that could drift from the product.
"""

from __future__ import annotations

import operator
import os
import re
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from functools import cache, partial, reduce
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar

from ..knowledge.rulebook import Rule
from ..scan.events import Blocks, EventsResult, block_offsets, sid_condition
from ..sources.ingest import Manifest

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyspark.sql import Column, DataFrame, Row, SparkSession

# Entities a finding carries (rules capture their own values on top of these); taken from matched events only:
# (regex whose group 1 is the value, words one of which a text must hold to have one). The words spare Java's
# regex engine a walk over every character of a long stack trace that holds none.
ENTITIES = {
    "job_id": (
        r"(?:[Jj]ob(?: ?[Ii]d)?|responsible for|Job [^(\n]{0,200}\()[ :=]*([0-9a-f]{32})\b",
        ("job", "Job", "responsible for"),
    ),
    "checkpoint_id": (r"(?:[Cc]heckpoint|chk-)\s?(\d+)\b", ("heckpoint", "chk-")),
    "container_id": (r"(container_(?:e\d+_)?\d+_\d+_\d+_\d+)", ("container_",)),
    "hdfs_path": (
        r"((?:hdfs|viewfs|s3a?|oss|file):/{0,3}[^\s'\"]+|(?<=No lease on )/\S+)",
        ("hdfs:", "viewfs:", "s3:", "s3a:", "oss:", "file:", "No lease on /"),
    ),
}

EVENT_TEXT_MAX, EVENT_HEAD, EVENT_TAIL = 20_000, 4_000, 12_000  # chars of an event a finding keeps
OMITTED = "\u2026 lines omitted \u2026"
KEEP_PER_RULE = 40  # earliest and latest instances of each rule kept as evidence; counts stay exact
FEW = 20_000  # up to this many findings are collected whole; more are thinned per rule in Spark
MAX_RANGES_FILTER = 256  # (sid, block) pairs spelled out in a filter; more: by sid only


@dataclass
class Finding:
    """One matched event."""

    rule: str
    sid: int
    line: int  # line number in the source file as the user has it
    time: datetime | None
    host: str | None
    job_id: str | None
    text: str  # the line that matched
    captures: dict[str, str] = field(default_factory=dict)
    checkpoint_id: str | None = None
    hdfs_path: str | None = None
    container_id: str | None = None
    level: str | None = None
    # the whole event, for deriving a cause from its exception chain (fallback.py): head and tail of a long one,
    # with OMITTED between; lines are numbered from event_line (head) and back from event_line + event_lines - 1
    event_text: str = ""
    event_line: int = 0
    event_lines: int = 1
    # file line of the event's i-th line (0-based) when the source was read into another shape (shapes.py): its
    # lines are then not consecutive lines of the file
    line_of: Callable[[int], int] | None = field(default=None, repr=False, compare=False)

    def event_file_line(self, i: int) -> int:
        """The file line of the event's i-th line (0-based)."""
        return self.line_of(i) if self.line_of else self.event_line + i


def match_events(events: DataFrame, detail: bool = True) -> DataFrame:
    """Findings: one row per (event, rule) match, from the matches the scan tasks found (matcher.py). With
    `detail`, also the captures, the matching line and the entities (job, checkpoint, container, path); without,
    only what counting and choosing evidence need."""
    from pyspark.sql import functions as F

    found = events.where(F.size("matches") > 0).select("*", F.explode("matches").alias("m"))
    keys: list[Column | str] = ["sid", "bundle", "block", "first_rel", "time", F.col("m.rule").alias("rule")]
    if not detail:
        return found.select(*keys)
    entities = _entities()
    return found.select(
        *keys,
        "host",
        *entities,
        F.col("m.captures").alias("captures"),
        F.col("m.idx").alias("idx"),
        F.substring(F.element_at(F.split("text", "\n"), F.col("m.idx") + 1), 1, 600).alias("line_text"),
        "level",
        (F.col("last_rel") - F.col("first_rel") + 1).alias("event_lines"),
        _event_text().alias("event_text"),
    )


def _entities() -> list[Column]:
    """The ENTITIES of an event, from its text: null where it holds none."""
    from pyspark.sql import functions as F

    entities = []
    for name, (pattern, words) in ENTITIES.items():
        held = reduce(operator.or_, [F.col("text").contains(word) for word in words])
        entities.append(F.when(held, F.nullif(F.regexp_extract("text", pattern, 1), F.lit(""))).alias(name))
    return entities


Counts = dict[tuple[int, str], int]  # (bundle, rule) -> the rule's exact count in that bundle
Keys = dict[str, Any]  # a chosen match's key columns (sid, block, first_rel) and its group's, as Spark gave them


def collect_findings(
    events: DataFrame, blocks: Blocks, manifest: Manifest, matched: int
) -> tuple[list[Finding], Counts]:
    """Per bundle (the events' `bundle`: one, or a fleet's many) every rule's exact count, and its earliest and
    latest instances in detail.

    The scan tasks counted the `matched` (event, rule) matches. When they are few, one job reads them all in
    detail; else one aggregation over their keys gives the counts and chooses the instances, and a second job reads
    just the chosen events in detail. The entities are regexes over whole stack traces: taken for every match
    they would cost more than the matching itself.
    """
    if matched <= FEW:
        detailed = match_events(events).collect() if matched else []
        counts: Counts = {}
        for row in detailed:
            counts[row.bundle, row.rule] = counts.get((row.bundle, row.rule), 0) + 1
        return _findings(detailed, blocks, manifest), counts
    rows, groups = _of_kind(*chosen_of_events(events, ("rule",)), "rule")
    return detail_findings(events, blocks, manifest, rows), {(g["bundle"], g["rule"]): g["cnt"] for g in groups}


KIND_LISTS = {"rule": "matches.rule", "entry": "entries.entry"}  # what each kind of evidence names, per event
CHOSEN_SCHEMA = "bundle int, kind string, name string, sid int, block long, first_rel long, at long, cnt long"


def chosen_of_events(events: DataFrame, kinds: tuple[str, ...]) -> tuple[list[Keys], list[Keys]]:
    """Per (bundle, kind, name) of the (event, rule) matches and (event, entry) hits of the events (`kinds`:
    "rule", "entry" or both), the keys of its earliest and latest KEEP_PER_RULE and its count. Ordered by time
    (unknown first), then by place (source, range, line), so every run chooses the same. Each task keeps only the
    least and greatest of each group of its own events (`_choose`, over Arrow), and the driver chooses among those
    few the same way. One row per event crosses to the tasks' Python with its names as a list, not exploded in the
    JVM (the names of lab 8 GiB's 5.3 M keys crossed one row each cost more than the choice); only the names'
    leaves are read (`matches.rule`, not its captures). Returns (the chosen keys with their group's columns, each
    group's columns with `cnt`), both in the groups' order."""
    from pyspark.sql import functions as F

    lists = {kind: F.col(KIND_LISTS[kind]) for kind in kinds}
    held = reduce(operator.or_, [F.size(names) > 0 for names in lists.values()])
    found = events.where(held).select(
        "bundle",
        "sid",
        "block",
        "first_rel",
        F.unix_micros("time").alias("at"),
        *[names.alias(kind) for kind, names in lists.items()],
    )
    choose = partial(_choose_events, kinds=kinds, keep=KEEP_PER_RULE)
    partial_choices = found.mapInArrow(choose, CHOSEN_SCHEMA).toArrow()
    return _chosen_keys(_choose(partial_choices, ("bundle", "kind", "name"), KEEP_PER_RULE), ["bundle", "kind", "name"])


def chosen_of_files(files: list[str], kinds: tuple[str, ...]) -> tuple[list[Keys], list[Keys]] | None:
    """chosen_of_events, over the table's files (EventsResult.files) read by the driver, each file chosen from as
    a Spark task chooses from its events: no Spark job, only the keys' and the names' leaves decoded, the files
    read on every core. None when an event that names something has a time only Spark reads (its task left the
    raw `ts`): chosen_of_events then."""
    import pyarrow as pa

    by = ("bundle", "kind", "name")
    merged: pa.Table | None = None
    waiting: list[pa.Table] = []
    for n, chosen in enumerate(_each_file(files, partial(_choices_of_file, kinds=kinds))):
        if chosen is None:
            return None
        # merged MERGED_FILES at a time: every file's choice held until the end was 80 files x the groups'
        # candidates at lab 8 GiB (the driver's peak 386 MiB against 323); merged one by one, the choice over
        # what was merged so far was made again per file (two thirds of the choice's CPU at lab 8 GiB)
        waiting.append(chosen)
        if len(waiting) == MERGED_FILES or n == len(files) - 1:
            merged = _choose(pa.concat_tables([*([merged] if merged is not None else []), *waiting]), by, KEEP_PER_RULE)
            waiting = []
    return _chosen_keys(merged, list(by)) if merged is not None else ([], [])


MERGED_FILES = 8  # files' choices merged at once (chosen_of_files)


def _choices_of_file(path: str, kinds: tuple[str, ...]) -> pa.Table | None:
    """_choose over one file's events (chosen_of_files), None when one that names something has no time of its
    task's but a raw one."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    stored = pq.ParquetFile(path)
    leaves = {kind: _leaf(stored, KIND_LISTS[kind]) for kind in kinds}
    read = stored.read(
        columns=["bundle", "sid", "block", "first_rel", "time", "ts", *leaves.values()], use_threads=False
    )
    lists = {kind: _names(read.column(KIND_LISTS[kind].split(".")[0])) for kind in kinds}
    held = reduce(pc.or_, [_some(names) for names in lists.values()])
    unread = pc.and_(pc.is_null(read.column("time")), pc.is_valid(read.column("ts")))
    if pc.any(pc.and_(held, unread)).as_py():
        return None
    columns = {key: read.column(key).combine_chunks() for key in ("bundle", "sid", "block", "first_rel")}
    batch = pa.record_batch({**columns, "at": read.column("time").combine_chunks(), **lists})
    keys = pa.concat_tables([_keys_of(batch, kind) for kind in kinds])
    return _choose(keys, ("bundle", "kind", "name"), KEEP_PER_RULE)


def _some(lists: pa.Array) -> pa.Array:
    """Whether each list holds anything (Spark's `size(list) > 0`: false for a null list)."""
    import pyarrow.compute as pc

    return pc.fill_null(pc.greater(pc.list_value_length(lists), 0), False)


# what _in_detail reads of an event (`ts` and `time` for its time): its lists are KIND_LISTS' columns
DETAIL_COLUMNS = (
    "sid",
    "bundle",
    "block",
    "first_rel",
    "last_rel",
    "ts",
    "time",
    "host",
    "level",
    "text",
    "matches",
    "entries",
)
Place = tuple[int, int, int]  # an event's (sid, block, first_rel)
T = TypeVar("T")


def rows_of_files(files: list[str], wanted: set[Place] | None) -> pa.Table:
    """The events `wanted` (every event holding a match or a hit when None), read by the driver from the table's
    files (EventsResult.files) with the columns _in_detail reads, in the files' order (about a read of the
    table's: the order does not decide an answer, as the findings and hits are sorted and the choice is wholly
    ordered). Spark's read of them packed its files largest first into its two tasks: one held 94 % of a lab
    bundle's chosen events (the earliest and latest are in the first and last files) and did their entities'
    regexes alone; the driver's rows go to Spark's tasks evenly (EventsResult.rows)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    ranges: dict[tuple[int, int], Any] | None = None
    if wanted is not None:
        by_range: dict[tuple[int, int], list[int]] = {}
        for sid, block, first_rel in wanted:
            by_range.setdefault((sid, block), []).append(first_rel)
        ranges = {key: np.array(rels, dtype=np.int64) for key, rels in by_range.items()}
    read = [batch for batches in _each_file(files, partial(_rows_of_file, ranges=ranges)) for batch in batches]
    schema = pq.read_schema(files[0]).empty_table().select(list(DETAIL_COLUMNS)).schema
    return pa.Table.from_batches(read, schema)


DETAIL_BATCH = 512  # a file's rows decoded at a time for detail (a lab file: ~17,000 events, 35 MB of text)


def _rows_of_file(path: str, ranges: dict[tuple[int, int], Any] | None) -> list[pa.RecordBatch]:
    """rows_of_files of one file, as batches of its wanted rows (none empty): the rows of `ranges` ((sid, block)
    -> the wanted events' first_rel), or every row holding a match or a hit when None. The columns are decoded
    DETAIL_BATCH rows at a time, so a thread holds a batch of the text, not a file's (two threads holding a lab
    file's whole text each took the driver's peak from 291 to 506 MB)."""
    import numpy as np
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    stored = pq.ParquetFile(path)
    if ranges is None:
        lists = stored.read(columns=[_leaf(stored, names) for names in KIND_LISTS.values()], use_threads=False)
        held = [_some(_names(lists.column(names.split(".")[0]))) for names in KIND_LISTS.values()]
        keep = reduce(pc.or_, held).to_numpy(zero_copy_only=False)
    else:  # the rows grouped by range, each range's against its wanted lines: linear in rows and ranges
        keys = stored.read(columns=["sid", "block", "first_rel"], use_threads=False)
        sid, block, first_rel = (keys.column(name).to_numpy() for name in ("sid", "block", "first_rel"))
        # (one sort of two number columns: np.unique of their pairs, axis=1, sorted a row of bytes each, a
        # third of the read at lab 8 GiB)
        order = np.lexsort((block, sid))
        sid, block = sid[order], block[order]
        bounds = np.r_[np.flatnonzero(np.r_[True, (sid[1:] != sid[:-1]) | (block[1:] != block[:-1])]), len(order)]
        keep = np.zeros(keys.num_rows, dtype=bool)
        for start, end in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
            pair = (int(sid[start]), int(block[start]))
            if pair in ranges:
                rows = order[start:end]
                keep[rows] = np.isin(first_rel[rows], ranges[pair])
    if not keep.any():
        return []
    kept, at = [], 0
    for batch in stored.iter_batches(DETAIL_BATCH, columns=list(DETAIL_COLUMNS), use_threads=False):
        chosen = batch.filter(keep[at : at + batch.num_rows])
        at += batch.num_rows
        if chosen.num_rows:
            kept.append(chosen)
    return kept


def _leaf(stored: pq.ParquetFile, names: str) -> str:
    """The Parquet column path of a list column's names (KIND_LISTS' "matches.rule": "matches.list.element.rule")."""
    column, leaf = names.split(".")
    paths: list[str] = [c.path for c in stored.schema]
    return next(path for path in paths if path.startswith(f"{column}.") and path.endswith(f".{leaf}"))


def _names(lists: pa.ChunkedArray) -> pa.ListArray:
    """A list of one-field structs (a list column read down to one leaf) as the list of that field's values."""
    import pyarrow as pa

    whole = lists.combine_chunks()
    return pa.ListArray.from_arrays(whole.offsets, whole.values.field(0), mask=whole.is_null())


def _each_file(files: list[str], read: Callable[[str], T]) -> Iterator[T]:
    """`read` of each file, in the files' order, given as each is done, on a thread per core (Parquet's decoding
    and numpy's sorts let go of the GIL). After each file what its decoding freed goes back to the system (the
    driver's Arrow pool is the C library's, cli._system_arrow_pool: release_unused trims its heaps): kept, it
    added up file after file (a lab bundle's ten files: ~50 MB, held to the end of the lap)."""
    import pyarrow as pa

    pool = pa.default_memory_pool()

    def given_back(path: str) -> T:
        try:
            return read(path)
        finally:
            pool.release_unused()

    threads = ThreadPoolExecutor(max(1, min(len(files), os.cpu_count() or 1)))
    try:
        yield from threads.map(given_back, files)
    finally:  # a caller that stops early (a raw time: Spark's way then) has no more files read for it
        threads.shutdown(cancel_futures=True)


def _choose_events(batches: Iterator[pa.RecordBatch], kinds: tuple[str, ...], keep: int) -> Iterator[pa.RecordBatch]:
    """_choose over one task's events, each flattened into a row per name it holds of each kind (the Arrow
    function of chosen_of_events' mapInArrow)."""
    import pyarrow as pa

    keys = [_keys_of(batch, kind) for batch in batches for kind in kinds]
    table = pa.concat_tables(keys) if keys else None
    if table is not None and table.num_rows:
        yield from _choose(table, ("bundle", "kind", "name"), keep).to_batches()


def _keys_of(batch: pa.RecordBatch, kind: str) -> pa.Table:
    """A row per name of `kind` the batch's events hold (their list column `kind`), with its event's keys."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    lists = batch.column(kind)
    names = pc.list_flatten(lists)
    event = pc.list_parent_indices(lists)
    return pa.table(
        {
            "bundle": pc.take(batch.column("bundle"), event),
            "kind": pa.repeat(pa.scalar(kind), len(names)) if len(names) else pa.array([], pa.string()),
            "name": names,
            **{key: pc.take(batch.column(key), event) for key in ("sid", "block", "first_rel", "at")},
            "cnt": pa.array(np.ones(len(names), dtype=np.int64)),
        }
    )


def _chosen_keys(chosen: pa.Table, by: list[str]) -> tuple[list[Keys], list[Keys]]:
    """_choose's rows as chosen_of_events gives them: the chosen keys with their group's columns, and each
    group's columns with its count (on a group's first row)."""
    rows: list[Keys] = []
    counted: list[Keys] = []
    for row in chosen.to_pylist():
        columns = {name: row[name] for name in by}
        if row["cnt"]:  # a group's first row carries its count
            counted.append({**columns, "cnt": row["cnt"]})
        rows.append({"sid": row["sid"], "block": row["block"], "first_rel": row["first_rel"], **columns})
    return rows, counted


def _choose(table: pa.Table, by: tuple[str, ...], keep: int) -> pa.Table:
    """_choose_exactly, on fewer rows: each group's rows whose (time known, time) lies beyond its `keep`-th
    smallest and largest cannot be chosen, whatever their place, so one sort of a single number per row
    (group, then time) finds the rows that can, ties at the cut included; only those are ordered in full (a
    lexsort of eight keys over every row cost 4-5 s for the 5.3 M keys of lab 8 GiB, this 0.8 s). The rows left
    out give their `cnt` to their group's first candidate, so the counts stay exact."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    rows = table.num_rows
    if rows <= 4 * keep:
        return _choose_exactly(table, by, keep)
    group = np.zeros(rows, dtype=np.int64)
    for name in by:  # one dense number per group (hashing, not sorting, the columns' values)
        codes, size = _dense(table.column(name))
        group = group * size + codes
    group, groups = _dense(pa.array(group))
    at = table.column("at")
    known = pc.is_valid(at).to_numpy(zero_copy_only=False)
    values = pc.fill_null(at, 0).to_numpy()
    low, high = (int(values[known].min()), int(values[known].max())) if known.any() else (0, 0)
    span = high - low + 2  # unknown times as 0, known ones from 1: unknown first
    if groups * span >= 2**62:  # the times' range too wide for one number: order every row in full
        return _choose_exactly(table, by, keep)
    primary = group * span + np.where(known, values - low + 1, 0)
    ordered = np.sort(primary)
    sizes = np.bincount(group, minlength=groups)
    ends = np.cumsum(sizes)
    starts = ends - sizes
    cut_low = ordered[np.minimum(starts + keep - 1, ends - 1)][group]
    cut_high = ordered[np.maximum(ends - keep, starts)][group]
    candidate = (primary <= cut_low) | (primary >= cut_high)
    cnt = table.column("cnt").to_numpy()
    left_out = np.bincount(group[~candidate], weights=cnt[~candidate], minlength=groups).astype(np.int64)
    picked = np.flatnonzero(candidate)
    picked_cnt = cnt[picked].copy()
    first = np.unique(group[picked], return_index=True)[1]  # every group has a candidate
    picked_cnt[first] += left_out[group[picked][first]]
    out = table.take(picked)
    at_cnt = out.schema.get_field_index("cnt")
    return _choose_exactly(out.set_column(at_cnt, "cnt", pa.array(picked_cnt, out.schema.field("cnt").type)), by, keep)


def _dense(column: pa.Array | pa.ChunkedArray) -> tuple[Any, int]:
    """A column's values as dense numbers (in no particular order) and how many distinct values it holds."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    encoded = pc.dictionary_encode(column, null_encoding="encode")
    if isinstance(encoded, pa.ChunkedArray):
        encoded = encoded.combine_chunks()
    return encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64), len(encoded.dictionary)


def _dense_ranks(column: pa.Array | pa.ChunkedArray) -> Any:
    """pc.rank(column, "ascending", tiebreaker="dense") (numpy; nulls last), ranked over the column's distinct
    values, not its rows: a choice's names are a few hundred among tens of thousands of rows, and sorting every
    row's string was a third of _choose at lab 8 GiB."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_floating(column.type):  # (NaN and null both in a chunked column: Arrow cannot unify them)
        return pc.rank(column, "ascending", tiebreaker="dense").to_numpy()
    encoded = pc.dictionary_encode(column, null_encoding="encode")
    if isinstance(encoded, pa.ChunkedArray):
        encoded = encoded.combine_chunks()
    ranks = pc.rank(encoded.dictionary, "ascending", tiebreaker="dense").to_numpy()
    return ranks[encoded.indices.to_numpy(zero_copy_only=False)]


def _choose_exactly(table: pa.Table, by: tuple[str, ...], keep: int) -> pa.Table:
    """Per group of the `by` columns, its `keep` first and `keep` last rows in (time known, time, sid, block,
    first_rel) order (`at`: the time in microseconds, null when unknown; unknown first), a row once when both;
    the group's count (the sum of its rows' `cnt`) on its first row, 0 on the others. Rows in (group, order)
    order, groups in the order of their `by` values. Its own output is its input again: what tasks chose
    merges on the driver into what one choice over every row would give."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    if not table.num_rows:
        return table
    # each `by` column's values as dense ranks (np.lexsort: the last key is the primary one)
    codes = [_dense_ranks(table.column(name)) for name in reversed(by)]
    at = table.column("at")
    known = pc.is_valid(at).to_numpy(zero_copy_only=False)
    at_values = pc.fill_null(at, 0).to_numpy()
    order = np.lexsort(
        (
            table.column("first_rel").to_numpy(),
            table.column("block").to_numpy(),
            table.column("sid").to_numpy(),
            at_values,
            known,
            *codes,
        )
    )
    group = np.zeros(len(order), dtype=np.int64)
    for code in reversed(codes):  # one number per group, in the groups' order
        group = group * (int(code.max()) + 1) + code[order].astype(np.int64)
    starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
    sizes = np.diff(np.r_[starts, len(order)])
    first = np.repeat(starts, sizes)
    place = np.arange(len(order)) - first
    size = np.repeat(sizes, sizes)
    kept = (place < keep) | (place >= size - keep)
    counts = np.add.reduceat(table.column("cnt").to_numpy()[order], starts)
    cnt = np.where(place == 0, np.repeat(counts, sizes), 0)[kept]
    out = table.take(order[kept])
    return out.set_column(out.schema.get_field_index("cnt"), "cnt", pa.array(cnt, out.schema.field("cnt").type))


def detail_findings(events: DataFrame, blocks: Blocks, manifest: Manifest, rows: list[Keys]) -> list[Finding]:
    """The chosen matches (rows with sid, block, first_rel, rule) in detail, as findings in time order."""
    from pyspark.sql import functions as F

    keys = ["sid", "block", "first_rel", "rule"]
    if not rows:
        return []
    chosen = keys_frame(
        events.sparkSession,
        [tuple(row[k] for k in keys) for row in rows],
        "sid int, block long, first_rel long, rule string",
    )
    detailed = match_events(chosen_events_of(events, rows)).join(F.broadcast(chosen), keys, "left_semi").collect()
    return _findings(detailed, blocks, manifest)


def chosen_events_of(events: DataFrame, rows: list[Keys]) -> DataFrame:
    """The events of the chosen rows (sid, block, first_rel): their ranges' files only (_ranges_of), then the rows."""
    from pyspark.sql import functions as F

    keys = ["sid", "block", "first_rel"]
    chosen = keys_frame(
        events.sparkSession,
        sorted({tuple(int(row[k]) for k in keys) for row in rows}),
        "sid int, block long, first_rel long",
    )
    return events.where(_ranges_of(rows)).join(F.broadcast(chosen), keys, "left_semi")


ARROW_TYPES = {"int": "int32", "long": "int64", "string": "string"}


def keys_frame(spark: SparkSession, rows: Sequence[Sequence[object]], schema: str) -> DataFrame:
    """Keys the driver holds (chosen events, explained lines) as a DataFrame of `schema` ("name type, ...": int,
    long, string), built from an Arrow table: createDataFrame of Python rows runs a Spark job of its own whose
    Python workers unpickle them (0.9 s for the 16,000 chosen matches of a lab bundle); Arrow goes as it is."""
    import pyarrow as pa

    fields = [pa.field(name, getattr(pa, ARROW_TYPES[kind])()) for name, kind in (f.split() for f in schema.split(","))]
    columns = list(zip(*rows, strict=True)) if rows else [()] * len(fields)
    return spark.createDataFrame(
        pa.Table.from_arrays(
            [pa.array(c, f.type) for c, f in zip(columns, fields, strict=True)], schema=pa.schema(fields)
        )
    )


def _of_kind(rows: list[Keys], groups: list[Keys], kind: str) -> tuple[list[Keys], list[Keys]]:
    """chosen_of_events' rows and groups of one kind, named as that kind's own aggregation
    names them (`rule` or `entry`)."""

    def renamed(keys: Keys) -> Keys:
        out = {k: v for k, v in keys.items() if k not in ("kind", "name")}
        out[kind] = keys["name"]
        return out

    return [renamed(r) for r in rows if r["kind"] == kind], [renamed(g) for g in groups if g["kind"] == kind]


def collect_evidence(
    events: DataFrame,
    blocks: Blocks,
    manifest: Manifest,
    matched: int,
    catalogued: int,
    stored: EventsResult | None = None,
) -> tuple[list[Finding], Counts, list[CatalogueHit]]:
    """collect_findings and collect_catalogue_hits together, each event's text (most of what a read costs) read
    once for all the rules and entries that want it: when the tasks counted few matches and few hits, one job
    reads every event that holds either in detail (two jobs decoded every kept event's text twice: the JVM's
    heap grew with the input under those pages); when both choose instances by aggregation, one job reads the
    events they chose, each event once with its matches and hits. Either way the rows are then split into the
    two details. With `stored` (the scan's table: `events` is its `table`) whose files the driver sees, the
    driver reads the files for the choice and the events in detail (chosen_of_files, rows_of_files): Spark
    gets only those events."""
    from pyspark.sql import functions as F

    files = stored.files(events.sparkSession) if stored is not None else None
    if matched <= FEW and catalogued <= FEW:
        if not matched and not catalogued:
            return [], {}, []
        if stored is not None and files:
            matches, hits = _rows_in_detail(events.sparkSession, stored, rows_of_files(files, None))
        else:
            matches, hits = _in_detail(events.where((F.size("matches") > 0) | (F.size("entries") > 0)))
        counts: Counts = {}
        for match in matches:
            counts[match.bundle, match.rule] = counts.get((match.bundle, match.rule), 0) + 1
        hit_counts: Counts = {}
        for hit in hits:
            hit_counts[hit.bundle, hit.entry] = hit_counts.get((hit.bundle, hit.entry), 0) + 1
        return _findings(matches, blocks, manifest), counts, _hits_of(hits, hit_counts, blocks, manifest)
    if matched <= FEW or catalogued <= FEW:
        findings, counts = collect_findings(events, blocks, manifest, matched)
        return findings, counts, collect_catalogue_hits(events, blocks, manifest, catalogued)
    kinds = ("rule", "entry")
    rows, both = (chosen_of_files(files, kinds) if files else None) or chosen_of_events(events, kinds)
    rule_rows, groups = _of_kind(rows, both, "rule")
    entry_rows, entry_groups = _of_kind(rows, both, "entry")
    rules = {(r["sid"], r["block"], r["first_rel"], r["rule"]) for r in rule_rows}
    entries = {(r["sid"], r["block"], r["first_rel"], r["entry"]) for r in entry_rows}
    if stored is not None and files:
        places = {(int(r["sid"]), int(r["block"]), int(r["first_rel"])) for r in rows}
        matches, hits = _rows_in_detail(events.sparkSession, stored, rows_of_files(files, places), rules, entries)
    else:
        matches, hits = _in_detail(chosen_events_of(events, rows), rules, entries)
    counts = {(group["bundle"], group["entry"]): group["cnt"] for group in entry_groups}
    return (
        _findings(matches, blocks, manifest),
        {(g["bundle"], g["rule"]): g["cnt"] for g in groups},
        _hits_of(hits, counts, blocks, manifest),
    )


Detailed: TypeAlias = "Row | SimpleNamespace"  # a match's or hit's row in detail: Spark's, or _in_detail's
Chosen = set[tuple[int, int, int, str]]  # (sid, block, first_rel, rule or entry) of the instances wanted


def _in_detail(
    events: DataFrame, rules: Chosen | None = None, entries: Chosen | None = None
) -> tuple[list[SimpleNamespace], list[SimpleNamespace]]:
    """The events' matches and hits in detail, as match_events(detail=True) and catalogue_events(detail=True) give
    them (a row per (event, rule) match, per (event, entry) hit, in the table's order), from one read of the
    events: per event its detail (event text) once, its entities only when it holds a match (a hit carries none:
    the regexes over an event of the catalogue alone were for nothing), and each match's and hit's line, from the
    event's lines split once (split per item, a lab bundle's 16,500 chosen items split their events' whole texts
    again and again: a second of the lap). Only the matches in `rules` and the hits in `entries` when given (the
    chosen instances), else all. Each event is read as a dict and each item unpacked as the tuple it is, and
    given back as a SimpleNamespace: a Row's attribute looks its name up in a list of them, which was a fifth of
    this function and of _findings' and _hits_of's reads on the 6,200 events a lab bundle chooses."""
    from pyspark.sql import functions as F

    def line(item: Column) -> Column:
        return F.substring(F.element_at(F.col("lines"), item["idx"] + 1), 1, 600)

    matched = F.size("matches") > 0
    entities = [F.when(matched, entity) for entity in _entities()]
    lined = events.select("*", F.split("text", "\n").alias("lines"))  # (two references: not inlined back)
    detailed = lined.select(
        "sid",
        "bundle",
        "block",
        "first_rel",
        "time",
        "host",
        "level",
        *[entity.alias(name) for entity, name in zip(entities, ENTITIES, strict=True)],
        (F.col("last_rel") - F.col("first_rel") + 1).alias("event_lines"),
        _event_text().alias("event_text"),
        F.transform(
            "matches",
            lambda m: F.struct(
                m["rule"].alias("rule"),
                m["captures"].alias("captures"),
                m["idx"].alias("idx"),
                line(m).alias("line_text"),
            ),
        ).alias("matches"),
        F.transform(
            "entries",
            lambda e: F.struct(e["entry"].alias("entry"), e["idx"].alias("idx"), line(e).alias("line_text")),
        ).alias("entries"),
    ).collect()
    matches, hits = [], []
    for row in detailed:
        event = row.asDict()
        key = (event["sid"], event["block"], event["first_rel"])
        common = {name: event[name] for name in _COMMON}
        for rule, captures, idx, line_text in event["matches"] or ():
            if rules is None or (*key, rule) in rules:
                found = {name: event[name] for name in ENTITIES}
                matches.append(
                    SimpleNamespace(**common, **found, rule=rule, captures=captures, idx=idx, line_text=line_text)
                )
        for entry, idx, line_text in event["entries"] or ():
            if entries is None or (*key, entry) in entries:
                hits.append(SimpleNamespace(**common, entry=entry, idx=idx, line_text=line_text))
    return matches, hits


_COMMON = ("sid", "bundle", "block", "first_rel", "time", "host", "level", "event_lines", "event_text")


def _rows_in_detail(
    spark: SparkSession,
    stored: EventsResult,
    rows: pa.Table,
    rules: Chosen | None = None,
    entries: Chosen | None = None,
) -> tuple[list[SimpleNamespace], list[SimpleNamespace]]:
    """_in_detail of the rows the driver read from the table's files (rows_of_files), in their order: on the
    driver where its answer is certain to be Spark's (_detail_here), Spark's _in_detail for the other rows only.
    Handing every row to Spark for its entities' regexes and splits cost a Spark job that sent each event's text
    to the JVM and back (lab 1 GiB: 4 s of the findings lap's 7 s, for 6,200 events)."""
    import numpy as np
    from pyspark.sql.types import TimestampType

    timestamp = TimestampType().fromInternal  # a time as Spark's collect gives it (naive, the process's zone)
    matches: list[tuple[int, SimpleNamespace]] = []
    hits: list[tuple[int, SimpleNamespace]] = []
    left = np.zeros(rows.num_rows, dtype=bool)  # the rows Spark details
    for at, event in enumerate(rows.to_pylist()):
        done = _detail_here(event, rules, entries, timestamp)
        if done is None:
            left[at] = True
            continue
        matches += [(at, match) for match in done[0]]
        hits += [(at, hit) for hit in done[1]]
    if left.any():
        spark_rows = rows.filter(left)
        keys = zip(*(spark_rows.column(name).to_pylist() for name in ("sid", "block", "first_rel")), strict=True)
        place = {key: int(at) for key, at in zip(keys, np.flatnonzero(left), strict=True)}
        spark_matches, spark_hits = _in_detail(stored.rows(spark, spark_rows), rules, entries)
        matches += [(place[item.sid, item.block, item.first_rel], item) for item in spark_matches]
        hits += [(place[item.sid, item.block, item.first_rel], item) for item in spark_hits]
        matches.sort(key=operator.itemgetter(0))  # (stable: an event's items stay in their order)
        hits.sort(key=operator.itemgetter(0))
    return [match for _, match in matches], [hit for _, hit in hits]


def _detail_here(
    event: dict[str, Any], rules: Chosen | None, entries: Chosen | None, timestamp: Callable[[int], datetime]
) -> tuple[list[SimpleNamespace], list[SimpleNamespace]] | None:
    """_in_detail's items of one event (a row of the table's files as a dict), or None when only Spark gives
    them for certain: a text that is not ASCII (Java's and Python's regexes read `\\b`, `\\s` and `\\d` alike
    on ASCII only: Java's `\\b` sees a non-ASCII letter as a word's by JVM version), a time the task left raw
    (Spark parses it by the layout's pattern), an item's line outside the text (Spark's element_at)."""
    text, micros = event["text"], event["time"]
    if not isinstance(text, str) or not text.isascii() or (micros is None and event["ts"] is not None):
        return None
    lines = text.split("\n")  # (Spark's split of "\n": every piece, empty ones at either end too)
    items = [*(event["matches"] or ()), *(event["entries"] or ())]
    if not all(isinstance(item["idx"], int) and 0 <= item["idx"] < len(lines) for item in items):
        return None
    key = (event["sid"], event["block"], event["first_rel"])
    last = event["last_rel"]
    common = {
        **{name: event[name] for name in ("sid", "bundle", "block", "first_rel")},
        "time": None if micros is None else timestamp(micros),
        **{name: event[name] for name in ("host", "level")},
        "event_lines": None if last is None else last - event["first_rel"] + 1,
        "event_text": _text_kept(text),
    }
    matches, hits = [], []
    found: dict[str, str | None] | None = None
    for match in event["matches"] or ():
        rule, captures, idx = match["rule"], match["captures"], match["idx"]
        if rules is None or (*key, rule) in rules:
            found = found if found is not None else _entities_here(text)
            captures = None if captures is None else dict(captures)
            matches.append(
                SimpleNamespace(**common, **found, rule=rule, captures=captures, idx=idx, line_text=lines[idx][:600])
            )
    for hit in event["entries"] or ():
        entry, idx = hit["entry"], hit["idx"]
        if entries is None or (*key, entry) in entries:
            hits.append(SimpleNamespace(**common, entry=entry, idx=idx, line_text=lines[idx][:600]))
    return matches, hits


def _text_kept(text: str) -> str:
    """_event_text of an event's text."""
    if len(text) <= EVENT_TEXT_MAX:
        return text
    return text[:EVENT_HEAD] + f"\n{OMITTED}\n" + text[-EVENT_TAIL:]


def _entities_here(text: str) -> dict[str, str | None]:
    """_entities of an ASCII text, by Python's regexes in ASCII mode (read there as Java reads them)."""
    found: dict[str, str | None] = {}
    for name, (pattern, words) in _ascii_entities().items():
        match = pattern.search(text) if any(word in text for word in words) else None
        found[name] = (match.group(1) or None) if match else None  # (regexp_extract's "" is null: nullif)
    return found


@cache
def _ascii_entities() -> dict[str, tuple[re.Pattern[str], tuple[str, ...]]]:
    return {name: (re.compile(pattern, re.ASCII), words) for name, (pattern, words) in ENTITIES.items()}


def _findings(detailed: Sequence[Detailed], blocks: Blocks, manifest: Manifest) -> list[Finding]:
    """Rows of match_events(detail=True) as findings in time order, with file line numbers."""
    offsets = block_offsets(blocks)
    sources = {s.id: s for s in manifest.sources}
    findings = []
    for row in detailed:
        source = sources[row.sid]
        event_line = offsets.get((row.sid, row.block), 0) + row.first_rel  # in the staged file
        line = source.file_line(event_line + row.idx)
        findings.append(
            Finding(
                rule=row.rule,
                sid=row.sid,
                line=line,
                time=row.time,
                host=row.host or source.host,
                job_id=row.job_id,
                text=(row.line_text or "").rstrip(),
                captures=dict(row.captures or {}),
                checkpoint_id=row.checkpoint_id,
                hdfs_path=row.hdfs_path,
                container_id=row.container_id,
                level=row.level,
                event_text=row.event_text or "",
                event_line=source.file_line(event_line),
                event_lines=row.event_lines or 1,
                line_of=partial(_shifted, source.file_line, event_line) if source.line_map is not None else None,
            )
        )
    findings.sort(key=lambda f: (f.time is None, f.time or datetime.min, f.sid, f.line))
    return findings


def _ranges_of(rows: list[Keys]) -> Column:
    """A filter on the byte ranges (sid, block) the rows are in, which Parquet evaluates against each file's
    statistics: a task writes the events of its own ranges, so the files of other ranges are not read."""
    from pyspark.sql import functions as F

    pairs = sorted({(int(row["sid"]), int(row["block"])) for row in rows})
    if not pairs:
        return F.lit(False)
    if len(pairs) > MAX_RANGES_FILTER:
        return F.expr(sid_condition([sid for sid, _ in pairs]) or "false")  # runs of ids as ranges
    return F.expr(" OR ".join(f"(sid = {sid} AND block = {block})" for sid, block in pairs))


def _shifted(file_line: Callable[[int], int], first: int, i: int) -> int:
    return file_line(first + i)


def keep_applicable(
    findings: list[Finding], counts: dict[str, int], rules: dict[str, Rule], version: str | None
) -> tuple[list[Finding], dict[str, int]]:
    """The findings and counts of the rules that hold for the Flink version (a rule's `versions`): a message
    that means one thing in 1.x may mean another, or nothing, in 2.x. An unknown version keeps every rule."""
    dropped = {
        rule_id
        for rule_id in {f.rule for f in findings} | set(counts)
        if rule_id in rules and not rules[rule_id].applies_to(version)
    }
    if not dropped:
        return findings, counts
    return (
        [f for f in findings if f.rule not in dropped],
        {rule_id: n for rule_id, n in counts.items() if rule_id not in dropped},
    )


# --- the failure catalogue's hits (scan/catalogue.py), aggregated as the rules' matches are -----------------


@dataclass
class CatalogueInstance:
    """One event that matched a catalogue entry: where, when, the matching line and the event. Whether it is
    failure evidence is the diagnosis' to say (the scan records hits only in events at WARN level or above,
    without a header, in an untimed paste, or holding an exception or a stack frame)."""

    sid: int
    line: int  # the matching line's number in the source file as the user has it
    time: datetime | None
    host: str | None
    level: str | None
    text: str  # the line that matched
    event_text: str  # the whole event (head and tail of a long one, OMITTED between)
    event_line: int
    event_lines: int
    # file line of the event's i-th line when the source was read into another shape (Finding.line_of)
    line_of: Callable[[int], int] | None = field(default=None, repr=False, compare=False)


@dataclass
class CatalogueHit:
    """A catalogue entry a bundle matched: how often, and its earliest and latest KEEP_PER_RULE instances."""

    bundle: int  # which of the bundles diagnosed together (the events' `bundle`; 0 alone)
    entry: str  # the entry's id (knowledge.catalogue)
    count: int
    instances: list[CatalogueInstance]  # in time order


def catalogue_events(events: DataFrame, detail: bool = True) -> DataFrame:
    """One row per (event, entry) hit, as match_events gives one per (event, rule) match."""
    from pyspark.sql import functions as F

    found = events.where(F.size("entries") > 0).select("*", F.explode("entries").alias("e"))
    keys: list[Column | str] = ["sid", "bundle", "block", "first_rel", "time", F.col("e.entry").alias("entry")]
    if not detail:
        return found.select(*keys)
    return found.select(
        *keys,
        "host",
        "level",
        F.col("e.idx").alias("idx"),
        F.substring(F.element_at(F.split("text", "\n"), F.col("e.idx") + 1), 1, 600).alias("line_text"),
        (F.col("last_rel") - F.col("first_rel") + 1).alias("event_lines"),
        _event_text().alias("event_text"),
    )


def _event_text() -> Column:
    from pyspark.sql import functions as F

    return F.when(F.length("text") <= EVENT_TEXT_MAX, F.col("text")).otherwise(
        F.concat(F.substring("text", 1, EVENT_HEAD), F.lit(f"\n{OMITTED}\n"), F.expr(f"substring(text, -{EVENT_TAIL})"))
    )


def collect_catalogue_hits(
    events: DataFrame, blocks: Blocks, manifest: Manifest, catalogued: int
) -> list[CatalogueHit]:
    """Per bundle (the events' `bundle`) every entry's exact count and its earliest and latest instances, as
    collect_findings does for rules: one job when the tasks counted few hits (`catalogued`), else the top-k
    aggregation, then the chosen events."""
    if not catalogued:
        return []
    if catalogued > FEW:
        rows, groups = _of_kind(*chosen_of_events(events, ("entry",)), "entry")
        return _catalogue_hits(events, blocks, manifest, rows, groups)
    detailed = catalogue_events(events).collect()
    counts: dict[tuple[int, str], int] = {}
    for row in detailed:
        counts[row.bundle, row.entry] = counts.get((row.bundle, row.entry), 0) + 1
    return _hits_of(detailed, counts, blocks, manifest)


def _catalogue_hits(
    events: DataFrame,
    blocks: Blocks,
    manifest: Manifest,
    rows: list[Keys],
    groups: list[Keys],
) -> list[CatalogueHit]:
    """The hits of the chosen instances (chosen_of_events' rows and groups) in detail."""
    from pyspark.sql import functions as F

    counts = {(group["bundle"], group["entry"]): group["cnt"] for group in groups}
    if not rows:
        return _hits_of([], counts, blocks, manifest)
    keys = ["sid", "block", "first_rel", "entry"]
    chosen = keys_frame(
        events.sparkSession,
        [tuple(row[k] for k in keys) for row in rows],
        "sid int, block long, first_rel long, entry string",
    )
    detailed = catalogue_events(chosen_events_of(events, rows)).join(F.broadcast(chosen), keys, "left_semi").collect()
    return _hits_of(detailed, counts, blocks, manifest)


def _hits_of(
    detailed: Sequence[Detailed], counts: dict[tuple[int, str], int], blocks: Blocks, manifest: Manifest
) -> list[CatalogueHit]:
    """Each entry's hit: its count, and its instances from the detailed rows, earliest and latest."""
    offsets = block_offsets(blocks)
    sources = {s.id: s for s in manifest.sources}
    instances: dict[tuple[int, str], list[CatalogueInstance]] = {}
    for row in detailed:
        source = sources[row.sid]
        event_line = offsets.get((row.sid, row.block), 0) + row.first_rel
        instances.setdefault((row.bundle, row.entry), []).append(
            CatalogueInstance(
                sid=row.sid,
                line=source.file_line(event_line + row.idx),
                time=row.time,
                host=row.host or source.host,
                level=row.level,
                text=(row.line_text or "").rstrip(),
                event_text=row.event_text or "",
                event_line=source.file_line(event_line),
                event_lines=row.event_lines or 1,
                line_of=partial(_shifted, source.file_line, event_line) if source.line_map is not None else None,
            )
        )
    hits = []
    for (bundle, entry), count in sorted(counts.items()):
        found = sorted(  # chosen_of_events' order: unknown times first, then by time, then by place
            instances.get((bundle, entry), []),
            key=lambda i: (i.time is not None, i.time or datetime.min, i.sid, i.event_line),
        )
        if len(found) > 2 * KEEP_PER_RULE:  # few hits were read whole: keep the same earliest and latest
            found = found[:KEEP_PER_RULE] + found[-KEEP_PER_RULE:]
        hits.append(CatalogueHit(bundle, entry, count, found))
    return hits
