"""The measured lines as flat rows, written by the scan tasks beside the events table: the analytics' file.

A long run measures millions of lines (a trigger and a completion per checkpoint). Spark read them back from
the events table, exploded each event's `measures`, parsed each line's time by its layout's pattern and wrote
them again: most of the analytics lap. The task that found them has every field of those rows but the parsed
time, so it writes them itself, one row per measure, in the columns analytics/metrics.py's `_reduced` gives (its
`row`): the driver only reads the file.

The time is the one field Spark computed: `events.parsed_time` (the raw `ts`, blanks folded, read by the
layout's Java pattern, STRICT, in the session's time zone, then shifted from --timezone). Here (times.py) it is read
only where the answer is certain to be Spark's: a layout whose pattern is fixed-width digits and literals
(`yyyy-MM-dd HH:mm:ss,SSS`, ...), a `ts` of exactly that shape in ASCII, a valid date and time of day, a
session and a --timezone of UTC. Any other row that needs a time (another pattern, a year from the bundle, a
zone to shift from, a month 13, a Unicode digit, a tab), and any trigger whose own epoch or number Spark's cast
might read otherwise than the digits say, is counted as left (`LEFT`, in the file's metadata); when a run leaves
any, the driver has Spark write the file instead, from these rows. A null `ts` is a null time wherever it is.

A row without a time keeps its event's raw `ts` (a trigger that stamps its own epoch, a time left to Spark): the
events table does not hold an event that only a metric measures (scanner.py), so its line's time is read from here
when Spark parses the times left, the few measures are read whole, and a fleet bundle's log start and end are
found (fleet/run.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias

from .taskfile import TaskFile, null_where
from .times import read_times

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import pyarrow as pa
    import pyarrow.parquet as pq

    from .measure import Measures

Flags: TypeAlias = "npt.NDArray[np.bool_]"  # one flag per row

LEFT = b"flinkdoctor.times_left"  # the file's metadata: rows whose time (or stamp) the task left to Spark
ROW_GROUP_BYTES = 32 << 20  # rows' Arrow bytes per row group (metrics.Texts reads a group's lines to show one)
LONG_DIGITS = 18  # ASCII digits Spark's cast reads into a long, surely
PLAIN_COLUMNS = frozenset(("first_rel", "time", "c_checkpoint", "c_epoch_ms", "ts"))  # short, (nearly) distinct values


@dataclass(frozen=True)
class MeasuredRows:
    """What a task needs to write the measures' rows: where, each metric's kind (by its position), the kinds
    whose captures are columns (`c_<key>` for each of `captured`), the trigger kind (a trigger stamping its own
    epoch needs no time), and how Spark would read times (--timezone, whether the session's zone is UTC)."""

    out_dir: str
    kinds: tuple[str, ...]
    columnar: tuple[str, ...]
    trigger: str
    captured: tuple[str, ...]
    untimed: tuple[str, ...]  # captures a trigger's row leaves out (its epoch gives them)
    timezone: str = "UTC"
    session_utc: bool = True


def schema(captured: tuple[str, ...]) -> pa.Schema:
    """The measures' file: `_reduced`'s row as Spark wrote it (its times read back as Arrow gives them)."""
    import pyarrow as pa

    return pa.schema(
        [
            ("sid", pa.int32()),
            ("bundle", pa.int32()),
            ("block", pa.int64()),
            ("first_rel", pa.int64()),
            ("time", pa.timestamp("ns")),
            ("host", pa.string()),
            ("metric", pa.int32()),
            ("idx", pa.int32()),
            ("line", pa.string()),
            ("captures", pa.map_(pa.string(), pa.string())),
            ("job", pa.string()),
            *[(f"c_{key}", pa.string()) for key in captured],
            ("ts", pa.string()),  # the event's raw time, where `time` is none (see the module's docstring)
        ]
    )


def flat_rows(
    batch: pa.RecordBatch, spec: MeasuredRows, layout: str, measures: Measures | None = None
) -> tuple[pa.Table | None, int]:
    """(the rows of the batch's measures, the rows whose time the task left to Spark): one row per measure, in
    the order Spark's explode gives (event by event, each event's measures in order). `measures`: what the
    batch's were built from (the task's: scanner.Kept), whose captures are taken as RE2 gave them (the batch's
    maps may then be left empty where the events file does not keep the row); None: looked up in the maps."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    lists = batch.column("measures")
    if not len(lists) or not pc.sum(pc.list_value_length(lists)).as_py():
        return None, 0
    parent = pc.list_parent_indices(lists)
    measure = pc.list_flatten(lists)
    metric = measure.field("metric")
    of_kind = metric.to_numpy(zero_copy_only=False)
    trigger = _of_kinds(of_kind, spec.kinds, {spec.trigger})
    columnar = _of_kinds(of_kind, spec.kinds, set(spec.columnar))
    if measures is None:
        captures = _nulled(measure.field("captures"), columnar)
        captured = _looked_up(measure.field("captures"), spec.captured)
    else:  # (only the maps written: the other kinds')
        captures = _nulled(measures.maps(~columnar), columnar)
        captured = measures.captured(spec.captured)
    stamped, unsure = _stamped(captured.get("epoch_ms"), captured.get("checkpoint"), trigger)
    timed = np.flatnonzero(~stamped)  # (a trigger that stamps its own epoch needs no time)
    n = len(measure)
    time = np.full(n, np.datetime64("NaT", "ns"))
    left = unsure.copy()
    ts = batch.column("ts").take(parent)
    read, undecided = read_times(ts.take(pa.array(timed)), layout, spec)
    time[timed] = read
    left[timed] |= undecided
    columns = [
        batch.column("sid").take(parent),
        batch.column("bundle").take(parent),
        batch.column("block").take(parent),
        batch.column("first_rel").take(parent),
        pa.array(time, pa.timestamp("ns")),
        batch.column("host").take(parent),
        metric,
        measure.field("idx"),
        null_where(measure.field("line"), trigger),
        captures,
        measure.field("job"),
        *[
            null_where(values.cast(pa.string()), ~columnar | (trigger & (key in spec.untimed)))
            for key, values in captured.items()
        ],
        null_where(ts, ~np.isnat(time)),
    ]
    return pa.Table.from_arrays(columns, schema=schema(spec.captured)), int(np.count_nonzero(left))


def _of_kinds(metric: npt.NDArray[np.int32], kinds: tuple[str, ...], wanted: set[str]) -> Flags:
    """Per measure, whether its metric's kind (`kinds`, by position) is one of `wanted` (a position beyond them:
    no), by one lookup per measure (numpy's isin sorted or compared the positions once per kind)."""
    import numpy as np

    table = np.array([kind in wanted for kind in kinds] + [False], dtype=bool)
    outside = (metric < 0) | (metric >= len(kinds))
    found: Flags = table[np.where(outside, len(kinds), metric)]
    return found


def _nulled(captures: pa.MapArray, flags: npt.NDArray[np.bool_]) -> pa.MapArray:
    """The map array with the rows of `flags` null (Arrow's if_else takes no maps)."""
    import pyarrow as pa

    mask = flags | ~captures.is_valid().to_numpy(zero_copy_only=False)
    return pa.MapArray.from_arrays(captures.offsets, captures.keys, captures.items, mask=pa.array(mask))


def _looked_up(captures: pa.MapArray, keys: tuple[str, ...]) -> dict[str, pa.Array]:
    """Per key, each row's value in the map (its first, as Spark's and Arrow's lookups give; null: no such key),
    from one pass over the maps' entries (Arrow's map_lookup walks every map once per key): each entry's key found
    among `keys` by one hash lookup, then each key's first entry per row taken. `captures` may be a slice (a
    flattened list's child): its entries are read where they are."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    n = len(captures)
    offsets = captures.offsets.to_numpy()
    first, last = (int(offsets[0]), int(offsets[-1])) if n else (0, 0)
    owner = np.repeat(np.arange(n), np.diff(offsets))
    names, items = captures.keys.slice(first, last - first), captures.items.slice(first, last - first)
    which = pc.fill_null(pc.index_in(names, pa.array(keys, pa.string())), -1).to_numpy(zero_copy_only=False)
    found = {}
    for number, key in enumerate(keys):
        entries = np.flatnonzero(which == number)
        at = np.full(n, -1, dtype=np.int64)
        at[owner[entries[::-1]]] = entries[::-1]  # (a key twice in one map: its first)
        found[key] = items.take(pa.array(at, mask=at < 0))
    return found


def _stamped(
    epoch: pa.Array | None, number: pa.Array | None, trigger: npt.NDArray[np.bool_]
) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.bool_]]:
    """(the triggers that stamp their own epoch as `_reduced` decides it, the triggers whose epoch or number
    Spark's cast might read otherwise than its ASCII digits say). Spark: `try_cast(epoch_ms as long) != 0` and
    `checkpoint == cast(try_cast(checkpoint as long) as string)`, each null as false."""
    import numpy as np
    import pyarrow as pa

    n = len(trigger)
    stamped, unsure = np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
    rows = np.flatnonzero(trigger)
    if epoch is None or number is None or not len(rows):
        return stamped, unsure
    if len(rows) < n:  # only the triggers' captures are read (a production batch's completions are half)
        taken = pa.array(rows)
        epoch, number = epoch.take(taken), number.take(taken)
    epoch_digits, epoch_zero, epoch_null = _digits(epoch)
    number_digits, number_canonical, number_null = _digits(number, canonical=True)
    sure = (epoch_null | epoch_digits) & (number_null | number_digits)
    stamped[rows] = ~epoch_null & ~number_null & epoch_digits & ~epoch_zero & number_digits & number_canonical
    unsure[rows] = ~sure
    return stamped, unsure


def _digits(values: pa.Array, canonical: bool = False) -> tuple[Flags, Flags, Flags]:
    """Per string: (1 to LONG_DIGITS ASCII digits, then: all zeros (or, `canonical`: written as a long prints
    it, no leading zero), null)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    values = values.cast(pa.string())
    null = ~values.is_valid().to_numpy(zero_copy_only=False)
    length = pc.fill_null(pc.binary_length(values), 0).to_numpy(zero_copy_only=False)
    # (ASCII decimal: every byte one of 0-9, and at least one)
    digits = pc.fill_null(pc.ascii_is_decimal(values), False).to_numpy(zero_copy_only=False)
    digits &= length <= LONG_DIGITS
    if canonical:
        leading = pc.fill_null(pc.starts_with(values, "0"), False).to_numpy(zero_copy_only=False)
        return digits, ~leading | (length == 1), null
    zeros = pc.fill_null(pc.equal(pc.ascii_ltrim(values, "0"), ""), False).to_numpy(zero_copy_only=False)
    return digits, zeros & (length >= 1), null


class MeasuresFile(TaskFile):
    """One task's file of measured rows (`flat_rows`, TaskFile), in row groups of about ROW_GROUP_BYTES; the
    rows whose time the task left to Spark counted in its metadata (LEFT)."""

    def __init__(self, spec: MeasuredRows, task: int):
        super().__init__(spec.out_dir, task, ROW_GROUP_BYTES, PLAIN_COLUMNS, None)  # (read whole: no statistics)
        self.spec = spec
        self.metadata[LEFT] = b"0"

    def write(self, batch: pa.RecordBatch, layout: str, measures: Measures | None = None) -> None:
        rows, left = flat_rows(batch, self.spec, layout, measures)
        self.metadata[LEFT] = str(int(self.metadata[LEFT]) + left).encode()
        if rows is not None:
            self.write_table(rows)


def times_left(files: list[pq.FileMetaData]) -> int:
    """The rows whose time the tasks left to Spark, in all their files (a file that does not say: all)."""
    left = 0
    for file in files:
        said = (file.metadata or {}).get(LEFT)
        left += file.num_rows if said is None else int(said)
    return left
