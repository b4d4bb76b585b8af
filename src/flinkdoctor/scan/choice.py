"""The choice of each rule's and catalogue entry's evidence, begun by the scan tasks: per (bundle, kind, name)
group of the (event, rule) matches and (event, entry) hits, its KEEP_PER_RULE earliest and latest in (time known,
time, source, range, line) order, and its exact count.

Each task chooses among its own events as it writes them and keeps what it chose in a small file of keys
(`KeysFile`), and the events it chose (its candidates) in a file of their own beside its events file; the driver
reads the keys and chooses among them the same way (`choose`: a choice over the union of choices over any split of
the rows is the choice over every row), and findings.py reads the chosen events in detail from the candidates. The
choice was a Spark job over the events table (every matched event's keys and names read by the JVM and sent to
Python, about a second per GiB of a lab bundle), and the chosen events' detail decoded every event's text: the
chosen are few but lie all over the files (a rule or entry with few matches has them all chosen), so no row group
could be skipped. A lab task's candidates hold about a third of its events' text.

A task chooses only among the rows whose time it knows to be the table's (the `time` it read, times.py, or no raw
`ts` for Spark to parse: no time). The others (a pattern or a zone only Spark reads) are written unchosen with
their `ts`, and the task writes no candidates; the driver has Spark parse those times before it chooses, and reads
the chosen events from the events table.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from .taskfile import TaskFile, filesystem_of

if TYPE_CHECKING:
    import pyarrow as pa

KEEP_PER_RULE = 40  # earliest and latest instances of each rule kept as evidence; counts stay exact
KINDS = {"rule": "matches", "entry": "entries"}  # each kind of evidence: the events' list column that names it
BY = ("bundle", "kind", "name")  # a group of the choice
KEYS_GROUP_BYTES = 64 * 1024 * 1024  # a task's keys in one row group (a few rows per group)
LEFT_TO_SPARK = b"flinkdoctor.left_to_spark"  # in a keys file's footer: some of its keys' times are Spark's to parse


def keys_schema() -> pa.Schema:
    """A key of the choice: the group, the event (source, range, line), its time in microseconds (`at`, null when
    unknown or left to Spark), the raw `ts` Spark parses (null when `at` was read) and the rows it counts for."""
    import pyarrow as pa

    return pa.schema(
        [
            ("bundle", pa.int32()),
            ("kind", pa.string()),
            ("name", pa.string()),
            ("sid", pa.int32()),
            ("block", pa.int64()),
            ("first_rel", pa.int64()),
            ("at", pa.int64()),
            ("ts", pa.string()),
            ("cnt", pa.int64()),
        ]
    )


def keys_of(batch: pa.RecordBatch | pa.Table, first_row: int = 0) -> pa.Table:
    """A key per name of each kind the events hold (each match's rule, each hit's entry), of a count of 1: the
    events as their file holds them (`time` and `ts`, times.with_time); and its event's `row`, counted from
    `first_row` (not written: the task's candidates are taken by it)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    tables = []
    for kind, column in KINDS.items():
        lists = batch.column(column)
        names = pc.struct_field(pc.list_flatten(lists), [kind])
        event = pc.list_parent_indices(lists)
        n = len(names)
        tables.append(
            pa.table(
                {
                    "bundle": batch.column("bundle").take(event),
                    "kind": pa.repeat(pa.scalar(kind), n) if n else pa.array([], pa.string()),
                    "name": names,
                    **{key: batch.column(key).take(event) for key in ("sid", "block", "first_rel")},
                    "at": batch.column("time").take(event),
                    "ts": batch.column("ts").take(event),
                    "cnt": pa.array(np.ones(n, dtype=np.int64)),
                    "row": pc.add(event.cast(pa.int64()), first_row),
                },
                schema=keys_schema().append(pa.field("row", pa.int64())),
            )
        )
    return pa.concat_tables(tables)


def left_to_spark(keys: pa.Table) -> pa.Array:
    """Per key, whether its time is Spark's to parse: no `at`, a raw `ts`."""
    import pyarrow.compute as pc

    return pc.and_(pc.is_null(keys.column("at")), pc.is_valid(keys.column("ts")))


class KeysFile(TaskFile):
    """One task's file of keys (`part-<task>.parquet` under the keys' folder): every events table the task writes
    is added (keys_of); when the task ends, those of a known time are chosen and written, the others all, and the
    events of the chosen keys to `candidates` (a file of the events' own kind), when no time was left to Spark."""

    def __init__(self, out_dir: str, task: int, candidates: TaskFile):
        super().__init__(out_dir, task, KEYS_GROUP_BYTES, frozenset(("first_rel", "at", "ts")), None)
        self.candidates = candidates
        self.keys: list[pa.Table] = []
        self.events: list[pa.Table] = []  # every events table added, in order (rows numbered across them)
        self.rows = 0

    def add(self, events: pa.Table) -> None:
        keys = keys_of(events, self.rows)
        self.events.append(events)
        self.rows += events.num_rows
        if keys.num_rows:
            self.keys.append(keys)

    def __exit__(self, failed: type[BaseException] | None, *rest: object) -> Literal[False]:
        if failed is None and self.keys:
            import numpy as np
            import pyarrow as pa
            import pyarrow.compute as pc

            keys = pa.concat_tables(self.keys)
            later = left_to_spark(keys)
            chosen = pa.concat_tables([choose(keys.filter(pc.invert(later)), BY, KEEP_PER_RULE), keys.filter(later)])
            self.write_table(chosen.drop_columns(["row"]))
            if pc.any(later).as_py():
                self.metadata[LEFT_TO_SPARK] = b"1"
            else:
                with self.candidates as candidates:  # (in the events' order)
                    rows = np.unique(chosen.column("row").to_numpy())
                    candidates.write_table(pa.concat_tables(self.events).take(rows))
        self.events = []
        return super().__exit__(failed, *rest)


def read_keys(path: str) -> pa.Table:
    """The keys the tasks wrote under `path` (none: an empty table)."""
    import pyarrow.dataset as ds

    filesystem, inner = filesystem_of(path)
    return ds.dataset(inner, schema=keys_schema(), format="parquet", filesystem=filesystem).to_table()


def any_left_to_spark(path: str) -> bool:
    """Whether a task left some key's time to Spark (its keys file's footer says so): only the footers are read."""
    import pyarrow.dataset as ds

    filesystem, inner = filesystem_of(path)
    fragments = ds.dataset(inner, format="parquet", filesystem=filesystem).get_fragments()
    return any(LEFT_TO_SPARK in (fragment.metadata.metadata or {}) for fragment in fragments)


def choose(table: pa.Table, by: tuple[str, ...], keep: int) -> pa.Table:
    """choose_exactly, on fewer rows: each group's rows whose (time known, time) lies beyond its `keep`-th
    smallest and largest cannot be chosen, whatever their place, so one sort of a single number per row
    (group, then time) finds the rows that can, ties at the cut included; only those are ordered in full (a
    lexsort of eight keys over every row cost 4-5 s for the 5.3 M keys of lab 8 GiB, this 0.8 s). The rows left
    out give their `cnt` to their group's first candidate, so the counts stay exact."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    rows = table.num_rows
    if rows <= 4 * keep:
        return choose_exactly(table, by, keep)
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
        return choose_exactly(table, by, keep)
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
    return choose_exactly(out.set_column(at_cnt, "cnt", pa.array(picked_cnt, out.schema.field("cnt").type)), by, keep)


def _dense(column: pa.Array | pa.ChunkedArray) -> tuple[Any, int]:
    """A column's values as dense numbers (in no particular order) and how many distinct values it holds."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    encoded = pc.dictionary_encode(column, null_encoding="encode")
    if isinstance(encoded, pa.ChunkedArray):
        encoded = encoded.combine_chunks()
    return encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64), len(encoded.dictionary)


def choose_exactly(table: pa.Table, by: tuple[str, ...], keep: int) -> pa.Table:
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
    codes = [pc.rank(table.column(name), "ascending", tiebreaker="dense").to_numpy() for name in reversed(by)]
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
