"""A long run's checkpoint triggers and completions as the few numpy columns the analysis reads.

A long run measures millions of checkpoints. Held as an Arrow table of every captured field (about 150 bytes a
checkpoint) and then sorted into copies per job, they made the driver's memory grow with the checkpoints by
several hundred bytes each. Here each kind keeps only what checkpoints.py reads of it: a trigger its job, number,
times and source, a completion its job, number, time, duration, size, where it is and its row in the measures' file;
the text stays in the file (metrics.Texts). Each column is held as compactly as its values allow exactly (Held): one
value while every row has it (a long run's one job, its stamped triggers' absent line times), else the narrowest of
two dtypes that holds every value (a checkpoint number, a row, a line in 4 bytes, a duration of whole milliseconds
in a float32, a job's code in 2 up to 32,768 jobs): 46 bytes a checkpoint of a long production run, 92 with every
column at its widest. `sort` orders them for the analysis in place, one column copy at a time. The rows come
unreduced; the few that may share a checkpoint (a log read twice) are reduced by their keys, which no other row
keeps (`Builder.shared`).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any

KEPT = ("kind", "job", "checkpoint", "time", "epoch_ms", "duration_ms", "bytes", "sid", "line", "host", "text")
TRIGGER, COMPLETED = "checkpoint-trigger", "checkpoint-completed"
KEY_DTYPES = {"bundle": "int32", "checkpoint": "int64", "untimed": "bool", "block": "int64", "rel": "int64"}
NO_CHECKPOINT = -(2**63)  # the group key of a line without a checkpoint number (other odd ones: just above)
TRIGGER_FIELDS = ("job", "number", "time", "at", "sid")
COMPLETED_FIELDS = ("job", "number", "time", "duration", "size", "sid", "line", "host", "row")
# each field's compact dtype and the one it is widened to when a value does not fit the first exactly (Held)
DTYPES = {
    "job": ("int16", "int32"),  # (a code: a production run's few dozen jobs; a session cluster's 100,000)
    "number": ("int32", "int64"),
    "time": ("datetime64[us]", "datetime64[us]"),
    "at": ("datetime64[us]", "datetime64[us]"),
    "sid": ("int16", "int32"),
    "duration": ("float32", "float64"),
    "size": ("int32", "int64"),
    "line": ("int32", "int64"),
    "host": ("int16", "int32"),
    "row": ("int32", "int64"),
}


@dataclass
class Columns:
    """Triggers (t_*) and completions (c_*), one row per measure; jobs and hosts as codes into `jobs`, `hosts`
    (host -1: none). `c_row` is the completion's row in the measures' file (metrics.Texts), or, when the lines are
    held (`text`, an Arrow array), its index in it. Integers and durations in either dtype of DTYPES (a column
    of one value: a read-only view of it, zero strides); readers compare a duration with a float as float64."""

    jobs: list[str] = field(default_factory=list)
    hosts: list[str] = field(default_factory=list)
    t_job: Any = None
    t_number: Any = None  # -1: none
    t_time: Any = None  # datetime64[us], the line's time (NaT: none)
    t_at: Any = None  # datetime64[us], the trigger's own epoch, else the line's time
    t_sid: Any = None
    c_job: Any = None
    c_number: Any = None
    c_time: Any = None
    c_duration: Any = None  # nan: none
    c_size: Any = None  # -1: none
    c_sid: Any = None
    c_line: Any = None
    c_host: Any = None  # -1: none
    c_row: Any = None
    text: Any = None
    sorted: bool = False

    def __len__(self) -> int:
        return len(self.t_job) + len(self.c_job)

    @property
    def nbytes(self) -> int:
        """The bytes the columns hold (a column of one value: none)."""
        names = [f"t_{f}" for f in TRIGGER_FIELDS] + [f"c_{f}" for f in COMPLETED_FIELDS]
        return sum(0 if _one_value(getattr(self, name)) else getattr(self, name).nbytes for name in names)

    @staticmethod
    def of_table(table) -> Columns:
        """From a whole table of metrics._split_columnar's columns (with the lines in `text`, or their rows)."""
        import numpy as np

        kinds = _encoded(table.column("kind"))
        counts = np.bincount(kinds.indices.to_numpy(zero_copy_only=False), minlength=len(kinds.dictionary))
        names = kinds.dictionary.to_pylist()
        builder = Builder(*(int(counts[names.index(k)]) if k in names else 0 for k in (TRIGGER, COMPLETED)))
        builder.add(table)
        return builder.columns(text=None if _is_rows(table) else table.column("text").combine_chunks())

    def where(self, triggers, completions) -> Columns:
        """The rows kept by the two masks, with the same codes (a bundle's own rows)."""
        kept = Columns(self.jobs, self.hosts, text=self.text)
        for name in TRIGGER_FIELDS:
            setattr(kept, f"t_{name}", taken(getattr(self, f"t_{name}"), triggers))
        for name in COMPLETED_FIELDS:
            setattr(kept, f"c_{name}", taken(getattr(self, f"c_{name}"), completions))
        return kept

    def sort(self) -> None:
        """In the analysis' order, in place: triggers by job name, then checkpoint, then time; completions by job
        name, untimed last, then time, then checkpoint (numpy's lexsort is stable: then the order read). A side
        already in that order (one job's log, read in time order) is left as it is: its sort index and column
        copies would cost 16 bytes a row and more. What a long run's copies freed is given back (give_back): its
        columns are past glibc's mmap threshold once it has risen, and would stay in its heap."""
        import numpy as np

        if self.sorted:
            return
        codes = np.int16 if len(self.jobs) <= 2**15 else np.int32  # (as compact as the columns' codes: Held)
        rank = np.empty(len(self.jobs), dtype=codes)
        rank[np.argsort(np.array(self.jobs, dtype=object), kind="stable")] = np.arange(len(self.jobs), dtype=codes)
        self.jobs = sorted(self.jobs)
        if (rank != np.arange(len(rank))).any():  # (the names read in their sorted order: the codes are the ranks)
            self.t_job, self.c_job = _mapped(rank, self.t_job), _mapped(rank, self.c_job)
        moved = self._order("t", TRIGGER_FIELDS, self._trigger_keys)
        moved |= self._order("c", COMPLETED_FIELDS, self._completion_keys)
        self.sorted = True
        if moved and len(self) >= GIVEN_BACK:
            give_back()

    def _trigger_keys(self, rows: slice = slice(None)) -> tuple:
        """The triggers' sort keys (of `rows`), least significant first, as np.lexsort takes them: views, no copy."""
        import numpy as np

        return self.t_time[rows].view(np.int64), self.t_number[rows], self.t_job[rows]

    def _completion_keys(self, rows: slice = slice(None)) -> tuple:
        """The completions' sort keys (of `rows`): views, and one flag a row (untimed)."""
        import numpy as np

        times = self.c_time[rows]
        return self.c_number[rows], times.view(np.int64), np.isnat(times), self.c_job[rows]

    def _order(self, side: str, fields: tuple[str, ...], keys_of) -> bool:
        """The side's columns in np.lexsort's order of `keys_of()`, one column copy at a time; none when they are
        in that order already. Whether it copied them."""
        import numpy as np

        if _ordered(keys_of, len(getattr(self, f"{side}_job"))):
            return False
        order = np.lexsort(keys_of())
        for name in fields:
            setattr(self, f"{side}_{name}", taken(getattr(self, f"{side}_{name}"), order))
        return True


ORDER_STEP = 1 << 20  # rows compared at a time by _ordered
GIVEN_BACK = 1 << 16  # rows of a sort whose copies' freed memory is returned (give_back: not per small bundle)


def _ordered(keys_of, size: int) -> bool:
    """Whether `size` rows are in np.lexsort's order of their keys already (`keys_of(rows)`: the keys of a slice
    of them, the most significant last; equal rows in any order, as a stable sort leaves them), checked a slice
    at a time: nothing of the rows' size is made."""
    import numpy as np

    for start in range(0, max(size - 1, 0), ORDER_STEP):
        keys = keys_of(slice(start, min(start + ORDER_STEP, size - 1) + 1))  # (each row and the next)
        equal = np.ones(len(keys[0]) - 1, dtype=np.bool_)  # (row k and row k + 1 equal in the keys compared so far)
        later = np.zeros(len(keys[0]) - 1, dtype=np.bool_)  # (row k + 1 after row k by the keys compared so far)
        for key in reversed(keys):
            here, after = key[:-1], key[1:]
            later |= equal & (after > here)
            equal &= after == here
        if not (later | equal).all():
            return False
    return True


def _one_value(values) -> bool:
    """Whether a column is one value's read-only view (Held.view): zero strides."""
    return values.ndim == 1 and len(values) > 1 and values.strides == (0,)


def _count(index) -> int:
    """The rows `index` picks (positions or a mask)."""
    import numpy as np

    index = np.asarray(index)
    return int(np.count_nonzero(index)) if index.dtype == np.bool_ else len(index)


def taken(values, index):
    """values[index] (positions or a mask), a column of one value kept as one (no array of its size made)."""
    import numpy as np

    return np.broadcast_to(values[:1], (_count(index),)) if _one_value(values) else values[index]


def _mapped(table, codes):
    """table[codes], a column of one code mapped to a column of one value."""
    import numpy as np

    return np.broadcast_to(table[codes[:1]], codes.shape) if _one_value(codes) else table[codes]


def _fits(values, dtype) -> bool:
    """Whether every value is held exactly in `dtype`: an integer's range; a float's value, nan as nan, no
    infinity (numpy's nan_to_num makes it the dtype's largest: a float32 column would rank it otherwise)."""
    import numpy as np

    dtype = np.dtype(dtype)
    if not len(values) or dtype == values.dtype:
        return True
    if dtype.kind == "i":
        limits = np.iinfo(dtype)
        return bool(values.min() >= limits.min and values.max() <= limits.max)
    with np.errstate(over="ignore", invalid="ignore"):
        same = np.array_equal(values.astype(dtype).astype(values.dtype), values, equal_nan=True)
    return same and not np.isinf(values).any()


class Held:
    """A column filled a batch at a time (Builder) at its final size, held as compactly as its values so far
    allow exactly: one value while every row has it (no array: a long run's one job, its stamped triggers'
    absent line times), then an array of the compact dtype, widened once when a value does not fit it (DTYPES).
    A long run's millions of checkpoints are what the driver's memory grows with."""

    def __init__(self, size: int, compact: str, wide: str) -> None:
        import numpy as np

        self.size, self.compact, self.wide = size, np.dtype(compact), np.dtype(wide)
        self.array: Any = None  # (None: every row so far is `value`)
        self.value: Any = None  # a one-row array
        self.filled = 0

    def put(self, start: int, values) -> None:
        """Rows start..start + len(values) (filled in order, each once)."""
        import numpy as np

        if not len(values):
            return
        end = start + len(values)
        if self.array is None:
            if self.value is None:
                self.value = values[:1].copy()
            if np.array_equal(values, np.broadcast_to(self.value, values.shape), equal_nan=values.dtype.kind in "fmM"):
                self.filled = end
                return
            fits = _fits(self.value, self.compact) and _fits(values, self.compact)
            self.array = np.empty(self.size, dtype=self.compact if fits else self.wide)
            self.array[:start] = self.value
        elif not _fits(values, self.array.dtype):
            wider = np.empty(self.size, dtype=self.wide)
            wider[:start] = self.array[:start]
            self.array = wider
        self.array[start:end] = values
        self.filled = end

    def view(self, size: int | None = None):
        """The first `size` rows (default: those filled): an array's slice, or a read-only view of the one value."""
        import numpy as np

        size = self.filled if size is None else size
        if self.array is not None:
            return self.array[:size]
        if self.value is None:
            return np.empty(size, dtype=self.compact)
        dtype = self.compact if _fits(self.value, self.compact) else self.wide
        return np.broadcast_to(self.value.astype(dtype), (size,))

    def keep(self, kept) -> None:
        """Only the filled rows `kept` (positions or a mask), in that order."""
        if self.array is None:
            self.filled = _count(kept)
        else:
            self.array = self.array[: self.filled][kept]
            self.filled = len(self.array)


def give_back() -> None:
    """Return what a long read freed to the system: glibc keeps freed heap pages, and Arrow's allocator its
    pools, for reuse, and the read's many batch-sized buffers would count in the driver's memory for the rest of
    the run."""
    import ctypes

    import pyarrow as pa

    pa.default_memory_pool().release_unused()
    with contextlib.suppress(OSError, AttributeError):  # (not glibc: its allocator returns memory its own way)
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def _encoded(values):
    """A string column (Arrow, chunked or not, plain or dictionary-encoded) as one DictionaryArray."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks() if values.num_chunks != 1 else values.chunk(0)
    return values if pa.types.is_dictionary(values.type) else pc.dictionary_encode(values)


def _firsts(side: str, key: dict, job, sid):
    """The positions (ascending) of the first row of each group (bundle, job, checkpoint as written), as
    `_reduced` orders a group: a trigger's last line (file order: source, range, line), a completion's first, one
    with a duration before one without; of rows equal in all, the first read."""
    import numpy as np

    size = len(job)
    order = (key["rel"], key["block"], sid) if side == "c" else (-key["rel"], -key["block"], -sid)
    untimed = key["untimed"] if side == "c" else np.zeros(size, np.bool_)
    ranked = np.lexsort((*order, untimed, key["checkpoint"], job, key["bundle"]))
    del order, untimed
    same = np.zeros(size, dtype=np.bool_)  # a row of the group before it (in the ranked order)
    same[1:] = True
    for values in (key["bundle"], key["checkpoint"], job):
        values = values[ranked]
        same[1:] &= values[1:] == values[:-1]
        del values
    return np.sort(ranked[~same])


def _canonical(table):
    """Per row (numpy), whether its checkpoint number as written is the number's own digits."""
    import pyarrow as pa
    import pyarrow.compute as pc

    written = table.column("group_checkpoint")
    equal = pc.equal(pc.cast(table.column("checkpoint"), pa.string()), written)
    return pc.fill_null(equal, False).to_numpy(zero_copy_only=False)


def _odd(table, canonical):
    """Per row (numpy), whether it has a checkpoint number written other than as its digits ("007", digits of
    another script, more than a long holds): Spark's key is the text, its own group."""
    import pyarrow.compute as pc

    return ~canonical & pc.is_valid(table.column("group_checkpoint")).to_numpy(zero_copy_only=False)


def _is_rows(table) -> bool:
    import pyarrow as pa

    return pa.types.is_integer(table.schema.field("text").type)


class Builder:
    """Columns filled a batch at a time (metrics._read_split) into arrays made once at their final size (`sizes`:
    the triggers and completions to come), so that only the compact columns outlive a batch, each in one block
    of memory that nothing transient is interleaved with."""

    def __init__(self, triggers: int, completions: int, *, keyed: bool = False) -> None:
        """`keyed`: the rows come unreduced (metrics._reduced) with what Spark would group and order them by;
        `columns` keeps one row per group, the one Spark's `min_by` keeps. Unkeyed rows may be reduced too, the
        few that can share a group only (`shared`, `reduce_shared`): a long run's checkpoints are each one
        trigger and one completion, and every row's keys would double the columns while they are read. The
        product reads keyless (metrics._read_split); `keyed` is kept as the reference the tests hold that read to
        (every row's keys, one reduction at the end)."""
        import numpy as np

        self._jobs: dict[str, int] = {}
        self._hosts: dict[str, int] = {}
        self._held = {f"t_{name}": Held(triggers, *DTYPES[name]) for name in TRIGGER_FIELDS}
        self._held.update({f"c_{name}": Held(completions, *DTYPES[name]) for name in COMPLETED_FIELDS})
        self._filled = [0, 0]
        self._keys: dict[str, Any] = {}
        self._odd: dict[str, int] = {}  # checkpoint numbers as written other than digits' canonical form
        if keyed:
            for side, size in (("t", triggers), ("c", completions)):
                for name, dtype in KEY_DTYPES.items():
                    self._keys[f"{side}_{name}"] = np.empty(size, dtype=dtype)

    def _codes(self, values, known: dict[str, int]):
        """Codes of a string column in `known` (grown as new strings come), -1 for null."""
        import numpy as np
        import pyarrow.compute as pc

        encoded = _encoded(values)
        mapping = np.array([known.setdefault(v, len(known)) for v in encoded.dictionary.to_pylist()] + [-1], np.int32)
        indices = pc.fill_null(encoded.indices, len(mapping) - 1).to_numpy(zero_copy_only=False)
        return mapping[indices]

    def add(self, table, only=None) -> None:
        """The triggers and completions of one table of _split_columnar's columns; `text` holds file rows (or, for
        a whole table of lines, each row's index). `only`: a mask of the rows to add (default all), so that a
        batch of which a few rows go elsewhere (metrics.Plan's carried jobs) is not copied for the others."""
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        from .checkpoints import _epochs64

        kinds = _encoded(table.column("kind"))
        names = kinds.dictionary.to_pylist()
        kind = pc.fill_null(kinds.indices, -1).to_numpy(zero_copy_only=False)
        jobs = self._codes(table.column("job"), self._jobs)
        numbers = pc.fill_null(table.column("checkpoint"), -1).to_numpy(zero_copy_only=False).astype(np.int64)
        times = table.column("time").to_numpy(zero_copy_only=False).astype("datetime64[us]")
        sid = table.column("sid").to_numpy(zero_copy_only=False).astype(np.int32)
        if _is_rows(table):
            rows = table.column("text").to_numpy(zero_copy_only=False).astype(np.int64)
        else:  # (a whole table, its lines held: of_table)
            rows = np.arange(table.num_rows, dtype=np.int64)
        if only is not None:
            kind = np.where(only, kind, -1)
        trig = np.flatnonzero(kind == names.index(TRIGGER)) if TRIGGER in names else np.zeros(0, np.int64)
        done = np.flatnonzero(kind == names.index(COMPLETED)) if COMPLETED in names else np.zeros(0, np.int64)
        epochs = table.column("epoch_ms").take(pa.array(trig)).to_numpy(zero_copy_only=False)
        at = _epochs64(epochs)
        taken = table.select(["duration_ms", "bytes", "line", "host"]).take(pa.array(done))
        parts = {
            "t_job": jobs[trig],
            "t_number": numbers[trig],
            "t_time": times[trig],
            "t_at": np.where(np.isnat(at), times[trig], at),
            "t_sid": sid[trig],
            "c_job": jobs[done],
            "c_number": numbers[done],
            "c_time": times[done],
            "c_duration": pc.fill_null(taken.column("duration_ms"), float("nan")).to_numpy(),
            "c_size": pc.fill_null(taken.column("bytes"), -1).to_numpy(),
            "c_sid": sid[done],
            "c_line": taken.column("line").to_numpy(),
            "c_host": self._codes(taken.column("host"), self._hosts),
            "c_row": rows[done],
        }
        (t0, c0), (t1, c1) = self._filled, (self._filled[0] + len(trig), self._filled[1] + len(done))
        for name, values in parts.items():
            self._held[name].put(t0 if name.startswith("t_") else c0, values)
        if self._keys:
            keys = self._group_keys(table, numbers)
            for side, at, start, end in (("t", trig, t0, t1), ("c", done, c0, c1)):
                for name, values in keys.items():
                    self._keys[f"{side}_{name}"][start:end] = values[at]
        self._filled = [t1, c1]

    def _group_keys(self, table, numbers) -> dict:
        """Per row, what Spark would group by beside the kind (bundle, checkpoint as written) and order by
        (duration absent, source, range, line in it). The job is the row's job code: `_reduced` groups by the
        captured job, else the event's, else none, which are the codes' strings (none: "unknown job")."""
        import numpy as np
        import pyarrow as pa

        numbers = np.asarray(numbers, dtype=np.int64)  # (a compact column's: NO_CHECKPOINT needs 64 bits)
        written = table.column("group_checkpoint")
        canonical = _canonical(table)
        checkpoint = np.where(canonical, numbers, NO_CHECKPOINT)  # (numbers: -1 where none; never a key here)
        if not canonical.all():  # "007", digits of another script: their own key each, as Spark's text key
            odd = np.flatnonzero(_odd(table, canonical))
            for k, text in zip(odd.tolist(), written.take(pa.array(odd)).to_pylist(), strict=True):
                checkpoint[k] = NO_CHECKPOINT + 1 + self._odd.setdefault(text, len(self._odd))
        return {
            "bundle": table.column("bundle").to_numpy(zero_copy_only=False),
            "checkpoint": checkpoint,
            "untimed": table.column("untimed").to_numpy(zero_copy_only=False),
            "block": table.column("block").to_numpy(zero_copy_only=False),
            "rel": table.column("rel").to_numpy(zero_copy_only=False),
        }

    def _reduce(self) -> None:
        """One row per group (bundle, job, checkpoint as written), as `_reduced` keeps: a trigger's last line
        (file order: source, range, line), a completion's first, one with a duration before one without; of
        rows equal in all, the first read. The rows kept stay in the order read."""

        held, keys = self._held, self._keys
        triggers, completions = self._filled
        for side, size, fields in (("t", triggers, TRIGGER_FIELDS), ("c", completions, COMPLETED_FIELDS)):
            key = {name: keys.pop(f"{side}_{name}")[:size] for name in KEY_DTYPES}
            job, sid = held[f"{side}_job"].view(size), held[f"{side}_sid"].view(size)
            kept = _firsts(side, key, job, sid)
            del key
            if len(kept) == size:
                continue
            for name in fields:
                held[f"{side}_{name}"].keep(kept)
            self._filled[0 if side == "t" else 1] = len(kept)

    def shared(self) -> dict:
        """Per side ("t", "c"), the rows added (positions, ascending) whose job and checkpoint number another
        row of the side has too (or, without a number, whose job another numberless row has): only these can
        share a group of `_reduced` (a group's rows have one job and one number; a bundle or a number written
        otherwise, "007", only splits them further). A log read twice, a job's numbers counted again. Beside the
        sort's index, a flag a row: neighbours in that order are compared a slice at a time."""
        import numpy as np

        shared = {}
        for side, size in (("t", self._filled[0]), ("c", self._filled[1])):
            job, number = self._held[f"{side}_job"].view(size), self._held[f"{side}_number"].view(size)
            # (a long run's rows come in that order already: no sort index of their size)
            ordered = _ordered(lambda rows, job=job, number=number: (number[rows], job[rows]), size)
            order = None if ordered else np.lexsort((number, job))
            twice = np.zeros(size, dtype=np.bool_)
            for start in range(0, max(size - 1, 0), ORDER_STEP):  # (neighbours in that order, a slice at a time)
                end = min(start + ORDER_STEP, size - 1) + 1
                at = np.arange(start, end) if order is None else order[start:end]
                same = np.diff(job[at]) == 0
                same &= np.diff(number[at]) == 0
                twice[at[1:][same]] = True
                twice[at[:-1][same]] = True
            del order
            if twice.any():
                shared[side] = np.flatnonzero(twice)
        return shared

    def reduce_shared(self, shared: dict, tables: dict) -> None:
        """Keep one row per group among the `shared` rows (their `_split_columnar` tables with the groups' keys,
        in the same order), the one `_reduce` keeps; the others are dropped, the rows kept stay in the order
        read."""
        import numpy as np

        held = self._held
        for side, fields in (("t", TRIGGER_FIELDS), ("c", COMPLETED_FIELDS)):
            if side not in shared:
                continue
            at = shared[side]
            size = self._filled[0 if side == "t" else 1]
            key = self._group_keys(tables[side], held[f"{side}_number"].view(size)[at])
            job, sid = held[f"{side}_job"].view(size)[at], held[f"{side}_sid"].view(size)[at]
            kept = np.ones(size, dtype=np.bool_)
            kept[at] = False
            kept[at[_firsts(side, key, job, sid)]] = True
            if kept.all():
                continue
            for name in fields:
                held[f"{side}_{name}"].keep(kept)
            self._filled[0 if side == "t" else 1] = int(kept.sum())

    def columns(self, text=None) -> Columns:
        """The filled columns (as many rows as were added; keyed: as many as groups)."""
        if self._keys:
            self._reduce()
        made, (triggers, completions) = Columns(list(self._jobs), list(self._hosts), text=text), self._filled
        for name in TRIGGER_FIELDS:
            setattr(made, f"t_{name}", self._held[f"t_{name}"].view(triggers))
        for name in COMPLETED_FIELDS:
            setattr(made, f"c_{name}", self._held[f"c_{name}"].view(completions))
        return made
