"""Scan (inside a Spark task): byte ranges of staged files -> their kept events, written as Parquet by the task
itself, and their line counts, handed to Spark.

A range owns the lines that start in it and the events whose header line starts in it. It reads past its end
to finish its last event (up to the next header, or the end of the file); the continuation lines at its head
belong to the previous range's last event, so an event that straddles a boundary comes out once, whole. Line
numbers are relative to the range: the ranges' own line counts, summed on the driver, make them file line
numbers (events.file_line).

No Python runs per line: numpy finds the line starts, the layout's header regex runs over Arrow arrays of
lines (headers.py), one Hyperscan pass over the raw bytes finds the events each signature's whole regexes can
match (prefilter.py), the headers' level words and the events the masks' trigger can match, and only those events,
plus the events at WARN level or above, get their text cut out; secrets in it are masked (masking.py, on the events
the pass found the trigger in), their header fields are taken by RE2 over all of them at once (re2.py), the rules
are matched on them (matcher.py) and the metrics measured (measure.py).
Every other event is only counted. When the task writes the measures as rows of their own (measured.py), an event
kept only because a metric measures it is written only as those rows (_events_rows).

A row that starts with staging.PIECE continues an over-long line: it starts an event of its own, without a
header, but no new line, so line numbers and `lines` stay those of the file.

A task's whole small files of one layout and kind are scanned joined (`scan_parts`): their bytes in one buffer,
each line knowing its file, so the passes above and their Arrow kernels run once for thousands of rolled files,
not once a file; each file's bytes still go through Hyperscan on their own, and each event keeps its own file's
source and line numbers.
"""

from __future__ import annotations

import gc
import re
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, NamedTuple, TypeAlias

from ..errors import InputChanged
from ..runtime.worker import prepare_task
from ..safety.masking import TRIGGER_RE2, mask
from ..sources.layouts import layout_by_id
from .catalogue import Candidates, candidates, entry_hits, line_hits
from .headers import (
    MESSAGE_TAIL,
    WARN_WORDS,
    first_byte_table,
    flag,
    flag_unsure,
    header_fields,
    header_test,
    levels_worded,
)
from .matcher import EXCEPTION_LINE, Hit, Matcher, Rows
from .measure import Measures, byte_places, measures, measures_type
from .measured import MeasuredRows, MeasuresFile
from .prefilter import Bytes, Hits, Positions, Prefilter, distinct, scan, spans
from .re2 import ascii_rows, byte_slice, extract, group_names, matching, positional_groups, re2_regex
from .taskfile import TaskFile, filesystem_of
from .times import Zones, with_time

if TYPE_CHECKING:
    import io

    import numpy as np
    import numpy.typing as npt
    import pyarrow as pa

Flags: TypeAlias = "npt.NDArray[np.bool_]"  # one flag per line or event

MAX_EVENT_LINES = 1000  # longer events keep their full line range but only this many lines of text
HEAD_MAX = 600  # chars of a WARN+ event's first line kept as its `head` (the unexplained errors' evidence)
EXTEND = 64 * 1024  # first read past a range's end, doubled until the next header shows
OUT_EVENTS = 20_000  # events per Arrow batch written
ROW_GROUP_BYTES = 64 * 1024 * 1024  # events' bytes gathered into one Parquet row group
# the events' short columns of (nearly) distinct values, written without a dictionary (taskfile.py)
PLAIN_COLUMNS = frozenset(("first_rel", "last_rel", "ts", "time", "measures.list.element.captures.key_value.value"))
# the events' columns no filter of Spark's reads by value: written without statistics (taskfile.py)
UNSTATED_COLUMNS = frozenset(("sigs", "matches", "measures", "entries", "message", "text", "head"))
JOIN_BYTES = 32 * 1024 * 1024  # whole small files scanned together, at most (scan_parts)
# an exception line or a stack frame: an event holding one can be failure evidence for the catalogue
TRACE = re.compile("(?m)" + EXCEPTION_LINE.removeprefix("(?m)") + r"|^\s*at\s+\S")

MATCHES = "array<struct<rule: string, captures: map<string, string>, idx: int>>"
MEASURES = "array<struct<metric: int, idx: int, line: string, captures: map<string, string>, job: string>>"
ENTRIES = "array<struct<entry: string, idx: int>>"  # the catalogue's entries an event matches, and the line
# the events as the tasks write them: scan_part's batches (_schema) and their `time` (times.with_time), in
# microseconds, where the task read it; events.py has Spark parse the `ts` of the others
STORED_SCHEMA = (
    f"sid int, bundle int, block long, first_rel long, last_rel long, orphan boolean, sigs array<int>, "
    f"matches {MATCHES}, measures {MEASURES}, entries {ENTRIES}, ts string, level string, logger string, "
    "thread string, host string, uptime double, message string, text string, repeats int, head string, time long"
)
COUNTS = ("lines", "unparsed", "events", "matched", "measured", "warned", "catalogued")
# what Spark gets: per part its counts; `cpu_us`, the task's CPU (on its first part's row, 0 on the others)
OUTPUT_SCHEMA = "sid int, block long, " + ", ".join(f"{key} long" for key in (*COUNTS, "cpu_us"))


@dataclass(frozen=True)
class Part:
    """One byte range [start, end) of a staged source, and how to read it."""

    sid: int
    path: str
    start: int
    end: int
    size: int
    layout: str  # "none": binary, lines only counted
    pieces: bool  # staged with over-long lines split (rows starting with PIECE)
    counted: bool  # its events count as input events (not for a derived source)
    kind: str = "text"  # the source's kind (rules may read only some kinds)
    bundle: int = 0  # which of the bundles diagnosed together the source belongs to (pipeline.diagnose_bundles)


@dataclass(frozen=True)
class PartStats:
    """What a part counted: its lines, the lines in no event (before a file's first header), its events, and
    the (event, rule) matches among them, the lines metrics measured and the events kept at WARN level or above."""

    sid: int
    block: int
    lines: int
    unparsed: int
    events: int
    matched: int = 0
    measured: int = 0
    warned: int = 0
    catalogued: int = 0


PartRow: TypeAlias = tuple[int, str, int, int, int, str, bool, bool, str, int]  # a Part's fields, in order


def part_rows(plan: Sequence[Sequence[Part]]) -> list[list[PartRow]]:
    """The plan as `run` takes it inside the tasks: each part as a plain tuple. The plan goes, pickled, with
    every task's function, and each task unpickles all of it: 100,000 Part objects took 0.36 s a task, tuples
    take a tenth of it, and only a task's own parts become Parts."""
    return [[_row(part) for part in task] for task in plan]


def _row(part: Part) -> PartRow:
    return (
        part.sid,
        part.path,
        part.start,
        part.end,
        part.size,
        part.layout,
        part.pieces,
        part.counted,
        part.kind,
        part.bundle,
    )


def run(
    batches: Iterator[pa.RecordBatch],
    plan: Sequence[Sequence[Part | PartRow]],
    prefilter: Prefilter,
    out_dir: str,
    matcher: Matcher | None = None,
    measured: MeasuredRows | None = None,
    groups: Sequence[Sequence[int]] | None = None,
) -> Iterator[pa.RecordBatch]:
    """The Arrow function for mapInArrow over spark.range(len(groups or plan)): each row id names tasks, each a
    list of parts (Parts, or their `part_rows`): row r runs tasks `groups[r]` one after the other (events.run_groups:
    the order Spark runs them in, cheap tasks joined), else task r. Each task writes its events to one Parquet file
    of its own, named by its number, under `out_dir`, and hands Spark only its parts' stats, one batch per task (a
    task may read thousands of small files). No event text crosses to the JVM. With `measured`, the task writes
    its events' measures as rows too (measured.py), and an event kept only for its measures only as those rows
    (_events_rows)."""
    prepare_task()
    for batch in batches:
        for task in (t for row in batch.column(0).to_pylist() for t in ([row] if groups is None else groups[row])):
            started = time.process_time()
            stats: list[PartStats] = []
            parts = [part if isinstance(part, Part) else Part(*part) for part in plan[task]]
            with (
                _no_cycle_collection(),
                _EventsFile(out_dir, task, measured) as written,
                nullcontext() if measured is None else MeasuresFile(measured, task) as rows,
            ):
                for joined in _joinable(parts):  # (one layout each)
                    # with measured rows, the events' file leaves out the unmatched candidates with the
                    # measure-only events, in one filter of the batch (_events_rows), not one filter each
                    # (each batch with its measures, whose captures the measured rows take: Kept)
                    outs = scan_parts(joined, prefilter, matcher, unmatched=rows is not None, paired=rows is not None)
                    for out in outs:
                        if isinstance(out, PartStats):
                            stats.append(out)
                        elif not isinstance(out, Kept):
                            written.write(out, joined[0].layout)
                        else:  # (a pair only when asked for: with measured rows)
                            assert rows is not None
                            rows.write(out.batch, joined[0].layout, out.measures)
                            written.write(
                                _events_rows(out.batch, matcher is not None, out.measure_only), joined[0].layout
                            )
            yield _stats(stats, time.process_time() - started)


def _events_rows(batch: pa.RecordBatch, decided: bool, measure_only: pa.Array | None = None) -> pa.RecordBatch:
    """The batch without its measure-only events: one line, measured, but matching no rule and no catalogue entry,
    below WARN level and standing for no group of repeated warnings. Nothing reads their events row: the analytics,
    the fleet's log spans and the few measures read their measured rows (measured.py), the findings read matches
    and catalogue hits, the unexplained errors the WARN+ events. A long run's JobManager log is mostly such lines,
    a trigger and a completion per checkpoint: each written once, not twice. An event of more lines keeps its row:
    its other lines are in no measured row (a start-up block of configuration lines and the script's own).
    `decided`: a matcher decided the batch's candidates (scan_parts' `unmatched`): those it matched nothing on
    are left out too (_matched). `measure_only`: _measure_only of the batch where its maker knows it (Kept)."""
    import pyarrow.compute as pc

    if measure_only is None:
        measure_only = _measure_only(batch.column)
    dropped = pc.or_(measure_only, pc.invert(_matched(batch))) if decided else measure_only
    if not pc.any(dropped).as_py():
        return batch
    return batch.filter(pc.invert(dropped))


def _measure_only(column: Callable[[str], pa.Array]) -> pa.Array:
    """Per row, whether it is a measure-only event (_events_rows), from the batch's columns by name (`column`); a
    list column may be given as each row's count of items (_batch: the measures' before their lists are made)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    def empty(name: str) -> pa.Array:
        values = column(name)
        return pc.equal(values if pa.types.is_integer(values.type) else pc.list_value_length(values), 0)

    warned = _warned(column("level"))
    return pc.and_(
        pc.and_(pc.invert(empty("measures")), pc.and_(empty("matches"), empty("entries"))),
        pc.and_(
            pc.and_(pc.invert(warned), pc.equal(column("repeats"), 1)),
            pc.equal(column("last_rel"), column("first_rel")),
        ),
    )


def _matched(batch: pa.RecordBatch) -> pa.Array:
    """Per row, whether its event matched something: a rule, a metric, a catalogue entry, or WARN level or above
    (a candidate of the pass that nothing matched is not kept)."""
    import pyarrow.compute as pc

    def some(column: str) -> pa.Array:
        return pc.greater(pc.list_value_length(batch.column(column)), 0)

    return pc.or_(pc.or_(some("matches"), some("measures")), pc.or_(some("entries"), _warned(batch.column("level"))))


@contextmanager
def _no_cycle_collection() -> Iterator[None]:
    """Python's cycle collector off while a task scans: the matches' small lists and dicts hold no cycles, and
    its passes over them cost 4 % of the scan. Back on (when it was) before Spark gets the task's stats."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class _EventsFile(TaskFile):
    """One task's Parquet file of events (TaskFile), in row groups of about ROW_GROUP_BYTES, with the times the
    task reads as Spark would (times.with_time: with `zones`, which the measured rows' spec gives)."""

    def __init__(self, out_dir: str, task: int, zones: Zones | None = None):
        super().__init__(out_dir, task, ROW_GROUP_BYTES, PLAIN_COLUMNS, UNSTATED_COLUMNS)
        self.zones = zones

    def write(self, batch: pa.RecordBatch, layout: str) -> None:
        import pyarrow as pa

        self.write_table(pa.Table.from_batches([with_time(batch, layout, self.zones)]))


def _warned(level: pa.Array) -> pa.Array:
    """Per event, whether its level is WARN or above (false where it has none)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    return pc.fill_null(pc.is_in(level, pa.array(sorted(WARN_WORDS))), False)


def _joinable(parts: list[Part]) -> list[list[Part]]:
    """A task's parts as scan_parts takes them: whole files of one layout and kind together, up to JOIN_BYTES
    (a task of thousands of small files pays the scan's fixed costs a few times, not once a file); a range of
    a larger file, or a file of no layout, alone."""
    groups: list[list[Part]] = []
    open_groups: dict[tuple[str, str], tuple[list[Part], list[int]]] = {}
    for part in parts:
        if part.start != 0 or part.end < part.size or part.layout == "none":
            groups.append([part])
            continue
        key = (part.layout, part.kind)
        group, size = open_groups.get(key, (None, [0]))
        if group is None or size[0] + part.size > JOIN_BYTES:
            group, size = [], [0]
            open_groups[key] = (group, size)
            groups.append(group)
        group.append(part)
        size[0] += part.size
    return groups


def scan_parts(
    parts: Sequence[Part],
    prefilter: Prefilter,
    matcher: Matcher | None = None,
    unmatched: bool = False,
    paired: bool = False,
) -> Iterator[pa.RecordBatch | Kept | PartStats]:
    """What scan_part gives for each of the parts, from one scan of them joined: whole files of one layout and
    kind (_joinable). Each event keeps its own file's source, line numbers and header fields; no match, event,
    stack frame or group of repeated warnings runs from one file into the next. Then each part's PartStats.
    `unmatched`, `paired`: as scan_part's."""
    import numpy as np

    if len(parts) == 1:
        yield from scan_part(parts[0], prefilter, matcher, unmatched, paired)
        return
    part = parts[0]
    sizes = np.array([p.size for p in parts], dtype=np.int64)
    offsets = np.cumsum(sizes) - sizes
    data = np.empty(int(sizes.sum()), dtype=np.uint8)  # each file read into its place: no join
    for p, at in zip(parts, offsets.tolist(), strict=True):
        _whole(p, data[at : at + p.size])
    # each file's bytes made valid on their own, as scan_part does: the joined bytes may be valid where a file
    # alone is not, when it ends inside a character that the next file's first bytes complete (a cut by bytes)
    later = offsets[sizes > 0][1:]  # each file's first byte but the first file's
    if len(data) and (not _is_utf8(data) or bool(((data[later] & 0xC0) == 0x80).any())):
        first = np.zeros(1, dtype=np.int64)
        blobs = [_valid_utf8(data[at : at + size], first)[0] for at, size in zip(offsets, sizes, strict=True)]
        sizes = np.array([len(blob) for blob in blobs], dtype=np.int64)
        offsets = np.cumsum(sizes) - sizes
        data = np.concatenate(blobs)
        del blobs
    after_newline, crlf = _line_starts(data)
    present = np.flatnonzero(sizes > 0)  # an empty file has no line
    starts = np.union1d(after_newline[after_newline < len(data)], offsets[present])
    of_line = present[np.searchsorted(offsets[present], starts, side="right") - 1]
    pieces = np.array([p.pieces for p in parts], dtype=bool)
    piece = (data[starts] == 0) & pieces[of_line] if len(starts) else np.zeros(0, dtype=bool)
    lines = np.bincount(of_line, weights=~piece, minlength=len(parts)).astype(np.int64)
    zero = np.zeros(len(parts), dtype=np.int64)
    counts = dict.fromkeys(("matched", "measured", "warned", "catalogued"), zero)
    orphan, events_of = zero, zero
    if len(starts):
        import pyarrow as pa
        import pyarrow.compute as pc

        files = _Files(parts, offsets, of_line)
        events = _Events(part, data, starts, np.ones(len(starts), dtype=bool), piece, crlf, files)
        counts = {key: zero.copy() for key in counts}
        for kept in events.kept(prefilter, matcher, unmatched, paired):
            batch = kept.batch
            at = files.index_of(batch.column("sid").to_numpy())
            for key, column in (("matched", "matches"), ("measured", "measures"), ("catalogued", "entries")):
                length = pc.list_value_length(batch.column(column)).to_numpy(zero_copy_only=False)
                np.add.at(counts[key], at, length)
            warned = pc.is_in(batch.column("level"), pa.array(sorted(WARN_WORDS)))
            np.add.at(counts["warned"], at, pc.fill_null(warned, False).to_numpy(zero_copy_only=False))
            yield kept if paired else batch
        orphan, events_of = events.counts_by_file(layout_by_id(part.layout).timed)
    for i, p in enumerate(parts):
        counted = int(events_of[i]) - (orphan[i] > 0) if p.counted else 0
        yield PartStats(
            p.sid,
            p.start,
            int(lines[i]),
            int(orphan[i]),
            counted,
            *(int(counts[key][i]) for key in ("matched", "measured", "warned", "catalogued")),
        )


def scan_part(
    part: Part, prefilter: Prefilter, matcher: Matcher | None = None, unmatched: bool = False, paired: bool = False
) -> Iterator[pa.RecordBatch | Kept | PartStats]:
    """Arrow batches of the part's kept events (STORED_SCHEMA), then its PartStats. `unmatched`: the candidates
    the matcher matched nothing on are left in the batches, for the caller to leave out (_matched); they count
    nothing. The caller leaves out the measure-only events too (_events_rows): of them and of those candidates,
    only the header's `ts` and `host` are taken (_Events._only_timed), the other fields left null. `paired`: each
    batch comes with its measures (Kept), and the measure-only events' measures have no captures' maps (the
    caller writes their measured rows from the measures, and leaves the events out)."""
    import numpy as np

    lo = max(part.start - 1, 0)  # the byte before the range says whether a line starts at its first byte
    with _open_unchanged(part) as handle:
        data = _read(handle, part, lo)
    starts, crlf = _line_starts(data)
    if part.start == 0:
        starts = np.concatenate([[0], starts])
    starts = starts[(starts < len(data)) & (starts >= part.start - lo)]
    owned = starts < part.end - lo
    piece = data[starts] == 0 if part.pieces else np.zeros(len(starts), dtype=bool)
    lines = int(np.count_nonzero(owned & ~piece))
    if part.layout == "none" or not len(starts):
        yield PartStats(part.sid, part.start, lines, lines if part.layout == "none" else 0, 0)
        return
    data, starts = _valid_utf8(data, starts)
    import pyarrow as pa
    import pyarrow.compute as pc

    events = _Events(part, data, starts, owned, piece, crlf)
    matched = measured = warned = catalogued = 0
    for kept in events.kept(prefilter, matcher, unmatched, paired):
        batch = kept.batch
        matched += pc.sum(pc.list_value_length(batch.column("matches"))).as_py() or 0
        measured += pc.sum(pc.list_value_length(batch.column("measures"))).as_py() or 0
        catalogued += pc.sum(pc.list_value_length(batch.column("entries"))).as_py() or 0
        warned += pc.sum(pc.is_in(batch.column("level"), pa.array(sorted(WARN_WORDS)))).as_py() or 0
        yield kept if paired else batch
    orphan_lines = events.orphan_lines() if layout_by_id(part.layout).timed else 0
    counted = events.count() - (orphan_lines > 0) if part.counted else 0
    yield PartStats(part.sid, part.start, lines, orphan_lines, counted, matched, measured, warned, catalogued)


@dataclass(frozen=True)
class _Files:
    """Several whole files joined in one buffer (scan_parts): each part's first byte in it, and per line the
    index of the part it is in."""

    parts: Sequence[Part]
    offsets: Positions
    of_line: Positions
    sid: npt.NDArray[np.int32] = field(init=False)  # each part's, to place its events' rows
    bundle: npt.NDArray[np.int32] = field(init=False)
    block: Positions = field(init=False)

    def __post_init__(self) -> None:
        import numpy as np

        for name, dtype in (("sid", np.int32), ("bundle", np.int32), ("block", np.int64)):
            values = [part.start if name == "block" else getattr(part, name) for part in self.parts]
            object.__setattr__(self, name, np.array(values, dtype=dtype))

    def index_of(self, sids: npt.NDArray[np.int32]) -> Positions:
        """Each row's part (its index in `parts`) from the row's source id."""
        import numpy as np

        order = np.argsort(self.sid, kind="stable")
        return order[np.searchsorted(self.sid[order], sids)]


class Kept(NamedTuple):
    """A batch of kept events (STORED_SCHEMA but `time`) and the measures its `measures` column was built from;
    with `paired` and `unmatched` (run's scan), its rows' _measure_only too, worked out once (_events_rows)."""

    batch: pa.RecordBatch
    measures: Measures
    measure_only: pa.Array | None = None


class _Events:
    """The events whose header starts in the part (or in the parts `files` joined): their lines, byte spans and
    kept rows."""

    def __init__(
        self,
        part: Part,
        data: Bytes,
        starts: Positions,
        owned: Flags,
        piece: Flags,
        crlf: bool,
        files: _Files | None = None,
    ):
        import numpy as np

        self.part, self.data, self.piece, self.crlf, self.files = part, data, piece, crlf, files
        self.ends = np.append(starts[1:], len(data))  # a line's bytes end after its newline
        self.starts = starts
        self.text = _lines_array(data, starts)
        self.test = header_test(part.layout)
        head = first_byte_table(self.test)[data[starts]] & ~piece
        if self.test.anchored is not None:  # RE2 in place (no copy): each line that can start a header a value
            cut = head.copy()  # of its own, the lines after it up to the next such line one value, which fails
            cut[1:] |= head[:-1]  # at its first byte: not a call per line (a lab part's 269,000 frames and messages)
            at = np.flatnonzero(cut)
            tested = head[at]
            self.header = np.zeros(len(starts), dtype=bool)
            self.header[at[tested]] = flag(self.test, _lines_array(data, starts[at]), self.test.anchored)[tested]
        elif self.test.re2 and 5 * int(head.sum()) >= 4 * len(starts):  # nearly every line: RE2 over all of them
            self.header = flag(self.test, self.text) & head  # in place costs less than copying them out (0.3 s)
        else:
            where = np.flatnonzero(head)
            self.header = np.zeros(len(starts), dtype=bool)
            self.header[where] = flag(self.test, self.text.take(where))
        first = np.zeros(len(starts), dtype=bool)
        if files is None:
            first[0] = part.start == 0  # a file's first line starts an event, header or not (an orphan)
        else:
            first = starts == files.offsets[files.of_line]
        self.file_first = first  # the lines that start a file
        self.first = np.flatnonzero((self.header | piece | first) & owned)  # each event's first line
        self.last = np.append(self.first[1:], len(starts)) - 1
        self.rel = np.cumsum(~piece, dtype=np.int64)  # a line's number from the part's start (a piece: its line)
        if files is not None:  # from its own file's start
            before = np.zeros(len(files.parts), dtype=np.int64)
            at = np.flatnonzero(first)
            before[files.of_line[at]] = self.rel[at] - ~piece[at]
            self.rel -= before[files.of_line]

    def count(self) -> int:
        return int((~self.piece[self.first]).sum())

    def orphan_lines(self) -> int:
        """Lines before the first header of the file (when this part starts it): not in any timed event."""
        if not len(self.first) or self.part.start != 0 or self.header[0] or self.piece[0]:
            return 0
        return int(self.rel[self.last[0]])

    def counts_by_file(self, timed: bool) -> tuple[Positions, Positions]:
        """(orphan lines, events) of each of the joined files, as `orphan_lines` and `count` give them alone."""
        import numpy as np

        assert self.files is not None
        n = len(self.files.parts)
        of_event = self.files.of_line[self.first]
        events = np.bincount(of_event, weights=~self.piece[self.first], minlength=n).astype(np.int64)
        orphan = np.zeros(n, dtype=np.int64)
        if timed:
            at = np.flatnonzero(self.file_first[self.first] & ~self.header[self.first] & ~self.piece[self.first])
            orphan[of_event[at]] = self.rel[self.last[at]]
        return orphan, events

    def kept(
        self, prefilter: Prefilter, matcher: Matcher | None, unmatched: bool, paired: bool = False
    ) -> Iterator[Kept]:
        """Events some signature could match, and events at WARN level or above, with their text, and their
        measures (`unmatched`, `paired`: as scan_part's)."""
        import numpy as np

        if not len(self.first):
            return
        capped = np.minimum(self.last, self.first + MAX_EVENT_LINES - 1)
        offsets = self.files.offsets if self.files is not None else None
        hits = scan(prefilter, self.data, self.starts[self.first], self.ends[self.first], offsets)
        found: dict[int, Positions] = {}  # only the signatures with candidates: a small part has a few of the hundreds
        for number, patterns in enumerate(prefilter.signatures):
            events = hits.signature_events(patterns)
            if len(events):
                found[number] = events
        tried = self._message_tries(prefilter, hits, found)
        keep = np.zeros(len(self.first), dtype=bool)
        for events in found.values():
            keep[events] = True
        warn = np.zeros(len(self.first), dtype=bool)
        if self.test.warn is not None:  # the level regex only on headers that hold one of the level words
            heads = hits.level_words
            heads = heads[self.header[self.first[heads]]]
            warn[heads] = flag(self.test, self.text.take(self.first[heads]), self.test.warn)
        entries = self._catalogue_candidates(matcher, warn, capped)
        keep[list(entries.entries)] = True
        repeats = self._warned_groups(np.flatnonzero(warn & ~keep))
        keep[list(repeats)] = True
        keep = np.flatnonzero(keep)
        maskable = _maskable(prefilter, hits)
        worded = np.zeros(len(self.first), dtype=bool)  # (the events below WARN level are among the others)
        worded[hits.level_words] = True
        rows = np.full(len(self.first), -1, dtype=np.int64)
        for chunk in range(0, len(keep), OUT_EVENTS):
            part = keep[chunk : chunk + OUT_EVENTS]
            rows[:] = -1
            rows[part] = np.arange(len(part))
            here = _within(found, part[0], part[-1])
            tried_here = here if tried is found else _within(tried, part[0], part[-1])
            yield self._batch(
                part, capped, here, tried_here, rows, matcher, entries, repeats, maskable, worded, unmatched, paired
            )

    def _message_tries(self, prefilter: Prefilter, hits: Hits, found: dict[int, Positions]) -> dict[int, Positions]:
        """Per signature, the candidate events the matcher tries it on: `found`, less the events where a pattern of
        one of its `message` regexes ended only in stack frames (a line after the first starting `\tat ` and a
        name). A `message` regex is tried on single lines, the header's message or a later line that is no frame
        (matcher.Fields.message_lines), so it can match only where its pattern ends in such a line: a rule that
        reads a jar's name in the message (flink-version) is otherwise tried, and fails, on every stack trace."""
        import numpy as np

        if hits.which is None or hits.stop is None or not any(prefilter.messages[number] for number in found):
            return found
        wanted = sorted({p for number in found for p in prefilter.messages[number]})
        at = np.isin(hits.which, wanted)
        which, stop = hits.which[at], hits.stop[at]
        line = np.searchsorted(self.starts, stop - 1, side="right") - 1
        event = np.searchsorted(self.first, line, side="right") - 1
        begin = self.starts[line]
        frame = (line != self.first[np.maximum(event, 0)]) & (begin + 5 <= self.ends[line])
        frame &= _named_frame(self.data, begin, len(self.data) - 1)  # a frame as the matcher reads one
        keep = ~frame & (event >= 0)
        pairs = distinct(which[keep] * len(self.first) + event[keep])
        pattern, of = np.divmod(pairs, len(self.first))
        cuts = np.flatnonzero(np.diff(pattern)) + 1  # (the pairs are sorted by pattern: one split)
        lines_of = dict(zip(pattern[np.append(0, cuts)].tolist(), np.split(of, cuts), strict=True)) if len(of) else {}
        tried = dict(found)
        for number, events in found.items():
            for p in prefilter.messages[number]:
                events = np.intersect1d(events, lines_of.get(p, events[:0]), assume_unique=True)
            tried[number] = events
        return tried

    def _warned_groups(self, events: Positions) -> dict[int, int]:
        """Events at WARN level or above that no signature, metric or catalogue entry can match, reduced: per
        logger, message and level, the first and the last event are kept, the first standing for every one
        before the last (`repeats`, which unexplained.py sums). The others' text is never cut, only their
        headers'."""
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        if not len(events):
            return {}
        heads = pc.utf8_rtrim(self.text.take(pa.array(self.first[events])), characters="\r\n")
        headerless = ~self.header[self.first[events]] | self.piece[self.first[events]]
        fields = _header_fields(self.part, heads.cast(pa.string()), headerless)  # (lines: no newline in them)
        columns = {
            "logger": fields["logger"],
            "message": fields["message"],
            "level": fields["level"],
            "at": pa.array(np.arange(len(events))),
        }
        keys = ["logger", "message", "level"]
        if self.files is not None:  # each file's groups are its own, as when it is scanned alone
            columns["file"] = pa.array(self.files.of_line[self.first[events]])
            keys.append("file")
        groups = (
            pa.table(columns)
            .group_by(keys, use_threads=False)
            .aggregate([("at", "min"), ("at", "max"), ("at", "count")])
        )
        first, last = groups.column("at_min").to_numpy(), groups.column("at_max").to_numpy()
        count = groups.column("at_count").to_numpy()
        kept = {int(events[a]): int(n) - (n > 1) for a, n in zip(first, count, strict=True)}
        kept.update({int(events[b]): 1 for b, n in zip(last, count, strict=True) if n > 1})
        return kept

    def _catalogue_candidates(self, matcher: Matcher | None, warn: Flags, capped: Positions) -> Candidates:
        """Per event that can be failure evidence (at WARN level or above, of more than one line, without a header,
        or in an untimed paste), the catalogue entries whose patterns its bytes hold (catalogue.py), and the
        entries its lines match as they are in the part (a masked text is matched again: _entry_hits)."""
        import numpy as np

        index = matcher.catalogue if matcher is not None else None
        if index is None:
            return Candidates({}, {})
        evidence = warn | (self.last > self.first) | ~self.header[self.first]
        if not layout_by_id(self.part.layout).timed:
            evidence[:] = True
        at = np.flatnonzero(evidence)
        lines, owner = self._lines_but_frames(at, capped)
        files = None if self.files is None else np.flatnonzero(np.diff(self.files.of_line[lines])) + 1
        spans, numbers = candidates(index, self.data, self.starts[lines], self.ends[lines], files)
        return line_hits(index, owner[spans], numbers, lines[spans], self.first, self._line_texts)

    def _line_texts(self, lines: Positions) -> pa.Array:
        """The lines as their event's text holds them: without the line end (and a piece's marker byte)."""
        import numpy as np

        begin = self.starts[lines] + self.piece[lines]
        end = self.ends[lines].copy()
        for byte in (10, 13):  # a newline, then a carriage return before it
            end -= (end > begin) & (self.data[np.maximum(end - 1, 0)] == byte)
        return spans(self.data, begin, end)

    def _lines_but_frames(self, events: Positions, capped: Positions) -> tuple[Positions, Positions]:
        """The lines of `events` (up to `capped`) that are no `\tat ` stack frame, and the event of each: an entry
        is matched on a line that is no frame (catalogue.entry_hits), and frames are most of a trace's bytes."""
        lines, of, top = self._event_lines(events, capped)
        frame = _tab_at(self.data, self.starts[lines], top)
        return lines[~frame], events[of[~frame]]

    def _framed(self, events: Positions, capped: Positions) -> Flags:
        """Per event, whether one of its lines (up to `capped`) is a stack frame that names something: `\tat ` and
        a printable ASCII character, which TRACE's `^\\s*at\\s+\\S` matches in its text where masking did not
        change it. Nearly every traced event holds one: RE2 reads only the others' text (_entry_hits)."""
        import numpy as np

        framed = np.zeros(len(events), dtype=bool)
        first, last = self.first[events], capped[events]
        for below in (1, 2):  # a trace's first frame is nearly always its second or third line: read those first
            at = np.flatnonzero(~framed & (first + below <= last))
            lines = first[at] + below
            top: int | Positions = len(self.data) - 1  # (as _event_lines reads a line: within its file)
            if self.files is not None:
                top = np.append(self.files.offsets[1:], len(self.data))[self.files.of_line[lines]] - 1
            framed[at[_named_frame(self.data, self.starts[lines], top)]] = True
        rest = np.flatnonzero(~framed)  # then every line of the others (a part's 4,300 such events: 240 left)
        lines, of, top = self._event_lines(events[rest], capped)
        framed[rest[of[_named_frame(self.data, self.starts[lines], top)]]] = True
        return framed

    def _event_lines(self, events: Positions, capped: Positions) -> tuple[Positions, Positions, int | Positions]:
        """The lines of `events` (up to `capped`), the position in `events` of each one's event, and per line the
        last byte that may be read from its start (its file's last: no byte of the next file joined after it)."""
        import numpy as np

        first = self.first[events]
        count = capped[events] - first + 1
        of = np.repeat(np.arange(len(events)), count)
        lines = np.repeat(first - np.cumsum(count) + count, count) + np.arange(int(count.sum()), dtype=np.int64)
        top: int | Positions = len(self.data) - 1  # no byte past the file's last is read
        if self.files is not None:
            top = np.append(self.files.offsets[1:], len(self.data))[self.files.of_line[lines]] - 1
        return lines, of, top

    def _batch(
        self,
        keep: Positions,
        capped: Positions,
        found: dict[int, Positions],
        tried: dict[int, Positions],
        rows: Positions,
        matcher: Matcher | None,
        entries: Candidates,
        repeats: dict[int, int],
        maskable: Flags | None,
        worded: Flags,
        unmatched: bool,
        paired: bool,
    ) -> Kept:
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        begin, end, first_length = self._text_bounds(keep, capped)
        text = spans(self.data, begin, end)
        if self.crlf:
            text = pc.replace_substring(text, "\r\n", "\n")  # line ends as Spark's reader gives them
        text, masked = _masked(text, None if maskable is None else maskable[keep])
        sigs = _signature_lists(found, rows, len(keep))
        tries = sigs if tried is found else _signature_lists(tried, rows, len(keep))
        first, part = self.first[keep], self.part
        orphan = self.file_first[first] & ~self.header[first] & ~self.piece[first]
        headerless = orphan | self.piece[first]
        only_timed = self._only_timed(keep, tries, masked, entries, worded, matcher) if unmatched else None
        # (read by the header's fields and by the WARN+ events' heads; a masked text's first line is searched)
        heads = _first_lines(text, np.where(masked, -1, first_length))
        fields = _header_fields(part, heads, headerless, only_timed, flagged=True)
        matches, measured = _matches(matcher, part, text, sigs, tries, masked, fields, found, rows)
        level = fields["level"]
        entry_hits = _entry_hits(
            matcher,
            text,
            masked,
            keep,
            entries,
            level,
            headerless | ~self.header[first],
            part,
            lambda rows: self._framed(keep[rows], capped),
        )
        first_rel, last_rel = pa.array(self.rel[first]), pa.array(self.rel[self.last[keep]])
        repeated = pa.array(_repeats(keep, repeats))
        only = None
        if paired:  # the captures' maps of the rows the events file keeps only (no other reads them): the rows'
            # measure-only flags from their columns and their measures' counts, before the lists are made, once
            columns = {"measures": pa.array(measured.counts()), "matches": matches, "entries": entry_hits}
            columns |= {"level": level, "repeats": repeated, "first_rel": first_rel, "last_rel": last_rel}
            only = _measure_only(columns.__getitem__)
        batch = pa.RecordBatch.from_arrays(
            [
                *self._source_columns(first),
                first_rel,
                last_rel,
                pa.array(orphan),
                sigs,
                matches,
                measured.lists(None if only is None else ~only.to_numpy(zero_copy_only=False)),
                entry_hits,
                *[fields[name] for name in HEADER],
                text,
                repeated,
                _heads(heads, level),
            ],
            schema=_schema(),
        )
        if matcher is None or unmatched:  # without a matcher nothing is decided: every candidate
            return Kept(batch, measured, only)
        needed = _matched(batch)  # a candidate nothing matched is not kept (a measured row always is)
        return Kept(batch if pc.all(needed).as_py() else batch.filter(needed), measured)

    def _only_timed(
        self,
        keep: Positions,
        tries: pa.ListArray,
        masked: Flags,
        entries: Candidates,
        worded: Flags,
        matcher: Matcher | None,
    ) -> Flags | None:
        """Per kept event, whether the task reads no field of its header but `ts` and `host`, when the caller
        leaves out the measure-only events and the candidates nothing matched (scan_part's `unmatched`; a matcher
        decided them): the event is one line, no rule's signature is tried on it, it is no catalogue candidate,
        its text is not masked, and its first line holds no level word at WARN or above, so it is below WARN
        level (headers.levels_worded). Such an event comes out measure-only, or matching nothing: its events row
        is left out (_events_rows), and its measured rows read only its time and host (measured.flat_rows).
        A long run's JobManager part is mostly such events (a checkpoint's trigger and completion). None: every
        event's fields are read."""
        import numpy as np

        if matcher is None or not levels_worded(layout_by_id(self.part.layout).header):
            return None
        offsets = tries.offsets.to_numpy()
        of_try = np.repeat(np.arange(len(keep)), np.diff(offsets))
        ruled = np.zeros(len(keep), dtype=bool)
        ruled[of_try[tries.values.to_numpy()[offsets[0] : offsets[-1]] < matcher.first_metric]] = True
        first = self.first[keep]
        only: Flags = ~ruled & ~masked & ~worded[keep] & (self.rel[first] == self.rel[self.last[keep]])
        if entries.entries:
            only &= ~np.isin(keep, np.fromiter(entries.entries, dtype=np.int64, count=len(entries.entries)))
        return only

    def _text_bounds(self, events: Positions, capped: Positions) -> tuple[Positions, Positions, Positions]:
        """The byte span of each event's text (up to its `capped` line), and its first line's length in bytes as
        _batch makes the text (_first_lines reads it): only the kept events' are worked out, not every event's (a
        production part keeps a few hundred of half a million). The text's end and its first line's end both drop
        their newline (a file's last line may have none) and a carriage return before it, in one pass."""
        import numpy as np

        first = self.first[events]
        begin = self.starts[first] + self.piece[first]  # a piece's marker byte is not text
        end = np.concatenate([self.ends[capped[events]], self.ends[first]])  # the texts' ends, then first lines'
        end -= self.data[np.maximum(end - 1, 0)] == 10
        end -= self.data[np.maximum(end - 1, 0)] == 13
        end = np.maximum(end, np.tile(begin, 2))
        return begin, end[: len(events)], end[len(events) :] - begin

    def _source_columns(self, first: Positions) -> list[pa.Array]:
        """`sid`, `bundle` and `block` of the events that start at lines `first`: the part's, or each file's."""
        import numpy as np
        import pyarrow as pa

        n, part = len(first), self.part
        if self.files is None:
            return [
                pa.array(np.full(n, part.sid, dtype=np.int32)),
                pa.array(np.full(n, part.bundle, dtype=np.int32)),
                pa.array(np.full(n, part.start, dtype=np.int64)),
            ]
        of = self.files.of_line[first]
        return [pa.array(self.files.sid[of]), pa.array(self.files.bundle[of]), pa.array(self.files.block[of])]


def _within(found: dict[int, Positions], first: int, last: int) -> dict[int, Positions]:
    """`found` (per signature, its candidate events, ascending) cut to the events first..last, one batch's: each
    batch reads its own candidates, not every batch all of the part's (a production part's hundreds of thousands
    of measured lines, in a batch of 20,000)."""
    import numpy as np

    here = {}
    for number, events in found.items():
        lo, hi = np.searchsorted(events, [first, last + 1])
        if hi > lo:
            here[number] = events[lo:hi]
    return here


def _repeats(keep: Positions, repeats: dict[int, int]) -> npt.NDArray[np.int32]:
    """Per kept event (ascending), the events it stands for: 1, or its group's (_warned_groups)."""
    import numpy as np

    out = np.ones(len(keep), dtype=np.int32)
    if repeats and len(keep):
        events = np.fromiter(repeats, dtype=np.int64, count=len(repeats))
        counts = np.fromiter(repeats.values(), dtype=np.int32, count=len(repeats))
        at = np.minimum(np.searchsorted(keep, events), len(keep) - 1)
        here = keep[at] == events
        out[at[here]] = counts[here]
    return out


def _entry_hits(
    matcher: Matcher | None,
    text: pa.Array,
    masked: Flags,
    keep: Positions,
    entries: Candidates,
    level: pa.Array,
    headerless: Flags,
    part: Part,
    framed: Callable[[Positions], Flags],
) -> pa.ListArray:
    """Per row, the catalogue entries it matches on a line that is no stack frame (entry id, line index), when
    the event can be failure evidence: at WARN level or above, without a header (or in an untimed paste), or
    holding an exception or a stack frame (catalogue.py; `framed`: per row, whether its bytes hold a frame TRACE
    matches). The lines' hits were found on the part's lines (Candidates.hits); a row whose text masking changed
    is matched again on its masked text."""
    import numpy as np
    import pyarrow as pa

    out: dict[int, list[dict[str, str | int]]] = {}
    index = matcher.catalogue if matcher is not None else None
    if index is None or not entries.entries:
        return _sparse_lists(len(keep), out, _entries_type())
    # the rows tried: those with hits on their lines, and those whose text masking changed (matched again)
    # (by a table over the events' range, not numpy's default sort or hash: 5 ms each for a lab part's batch)
    with_hits = np.isin(keep, np.fromiter(entries.hits, dtype=np.int64, count=len(entries.hits)), kind="table")
    candidate = np.isin(keep, np.fromiter(entries.entries, dtype=np.int64, count=len(entries.entries)), kind="table")
    rows = np.flatnonzero(with_hits | (candidate & masked))
    if not len(rows):
        return _sparse_lists(len(keep), out, _entries_type())
    warn = _warned(level.take(pa.array(rows)))
    evident = warn.to_numpy(zero_copy_only=False) | headerless[rows] | (not layout_by_id(part.layout).timed)
    # the rest holds a trace or not: a frame in its bytes, else RE2 over their texts at once (a stack trace's text
    # is most of a part's kept bytes, and turning it into Python strings cost more than the search); the masked
    # ones' text is read
    unknown = rows[~evident & ~masked[rows]]
    by_frame = framed(unknown) if len(unknown) else np.zeros(0, dtype=bool)
    traced = set(unknown[by_frame].tolist())
    if not by_frame.all():
        rest = unknown[~by_frame]
        traced.update(rest[matching(text.take(pa.array(rest)), TRACE.pattern)].tolist())
    again = rows[masked[rows]]
    texts = dict(zip(again.tolist(), text.take(pa.array(again, pa.int64())).to_pylist(), strict=True))
    for row, known in zip(rows.tolist(), evident.tolist(), strict=True):
        if row in texts:
            found = entry_hits(index, texts[row], entries.entries[int(keep[row])])
            if found and (known or TRACE.search(texts[row])):
                out[row] = found
        elif known or row in traced:
            out[row] = entries.hits[int(keep[row])]
    return _sparse_lists(len(keep), out, _entries_type())


def _entries_type() -> pa.ListType:
    import pyarrow as pa

    return pa.list_(pa.struct([("entry", pa.string()), ("idx", pa.int32())]))


def _signature_lists(found: dict[int, Positions], rows: Positions, n: int) -> pa.ListArray:
    """Per kept event (its row), the signatures it is a candidate of, ascending, as a list<int32> array.
    `found`: per signature, its candidate events; `rows`: per event, its row (-1: not in this batch)."""
    import numpy as np
    import pyarrow as pa

    pairs_row, pairs_sig = [np.zeros(0, dtype=np.int64)], [np.zeros(0, dtype=np.int32)]
    for number, events in found.items():
        at = rows[events]
        at = at[at >= 0]
        pairs_row.append(at)
        pairs_sig.append(np.full(len(at), number, dtype=np.int32))
    row, sig = np.concatenate(pairs_row), np.concatenate(pairs_sig)
    order = np.lexsort((sig, row))
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(np.bincount(row, minlength=n), out=offsets[1:])
    return pa.ListArray.from_arrays(pa.array(offsets), pa.array(sig[order], type=pa.int32()))


def _read(handle: pa.NativeFile, part: Part, lo: int) -> Bytes:
    """The bytes from `lo` to the end of the part's last event: past the part's end, up to the next line that
    starts an event (a header, or a piece), or the end of the file. One read when the event ends within EXTEND
    bytes; else more, doubling."""
    import numpy as np

    end = part.end - lo
    if part.layout == "none":
        return _read_at(handle, part, end, lo)
    blob = _read_at(handle, part, min(part.end + EXTEND, part.size) - lo, lo)
    step = EXTEND
    while True:
        complete = lo + len(blob) >= part.size
        stop = _next_event(part, blob, end, complete)
        if stop is not None:
            return blob[:stop]
        if complete:
            return blob
        step *= 2
        more = _read_at(handle, part, min(part.end + step, part.size) - lo - len(blob), lo + len(blob))
        blob = np.concatenate([blob, more])


def _read_at(
    handle: pa.NativeFile | io.BufferedReader, part: Part, size: int, offset: int, into: Bytes | None = None
) -> Bytes:
    """`size` bytes of the part's file from `offset`, read into a numpy array (`into`, or a new one): numpy backs
    a large array with huge pages, so its first touch costs a fraction of the page faults of the buffer pyarrow's
    read_at allocates (0.03 s of a 100 MB part's 0.06). Every range read ends within part.size, which the open
    checked: fewer bytes is a file cut shorter since (InputChanged), never lines lost or a read that waits for
    bytes that will not come."""
    import numpy as np

    out = np.empty(size, dtype=np.uint8) if into is None else into
    view, got = out.data, 0
    handle.seek(offset)
    while got < size:
        read = handle.readinto(view[got:])
        if not read:
            raise _changed(part, offset + got)
        got += read
    return out


def _next_event(part: Part, blob: Bytes, end: int, complete: bool) -> int | None:
    """The offset in `blob` of the first line at or after `end` that starts an event; len(blob) when `complete`
    (the file's end) shows none; None when the lines read so far show none."""
    import numpy as np

    test = header_test(part.layout)
    data = blob
    tail = data[end:]
    newlines = np.flatnonzero(tail == 10)
    at_line_start = end > 0 and data[end - 1] == 10
    starts = np.concatenate([[0], newlines + 1]) if at_line_start else newlines + 1
    whole = len(tail) if complete else (newlines[-1] + 1 if len(newlines) else 0)
    starts = starts[starts < whole]  # only whole lines can be tested
    if len(starts):
        piece = tail[starts] == 0 if part.pieces else np.zeros(len(starts), dtype=bool)
        maybe = np.flatnonzero(first_byte_table(test)[tail[starts]] & ~piece)
        header = np.zeros(len(starts), dtype=bool)
        if len(maybe):
            header[maybe] = flag(test, _lines_array(tail, starts).take(maybe))
        found = np.flatnonzero(header | piece)
        if len(found):
            return end + int(starts[found[0]])
    return len(data) if complete else None


def _line_starts(data: Bytes, chunk: int = 1 << 20) -> tuple[Positions, bool]:
    """(the offsets just after each newline, whether a carriage return ends a line in `data`: the only ones the
    events' texts change), a chunk at a time: a comparison over the whole would write a temporary as large as the
    part. The returns are found before the newlines, not by another pass over every byte."""
    import numpy as np

    found = [np.zeros(0, dtype=np.int64)]
    for at in range(0, len(data), chunk):
        found.append(np.flatnonzero(data[at : at + chunk] == 10) + (at + 1))
    after = np.concatenate(found)
    before = after[after >= 2] - 2
    return after, bool((data[before] == 13).any())


def _is_utf8(data: Bytes) -> bool:
    """Whether `data` is valid UTF-8 as _valid_utf8 tests it (Arrow's validation)."""
    import numpy as np
    import pyarrow as pa

    try:
        _lines_array(data, np.zeros(1, dtype=np.int64)).validate(full=True)
        return True
    except pa.ArrowInvalid:
        return False


def _valid_utf8(data: Bytes, starts: Positions) -> tuple[Bytes, Positions]:
    """(data, starts) with the bytes from the first line on as valid UTF-8: a sequence that is not UTF-8 (a message
    in GBK, Shift-JIS or Latin-1, a cut character) becomes U+FFFD, so its text is shown, never dropped, and no
    step that turns the Arrow text into Python strings fails on it. Only data that holds such bytes is copied.
    The lines stay the same lines: a newline or a NUL (a piece's marker) is never part of a replaced sequence."""
    import numpy as np

    body = data[int(starts[0]) :]
    if _is_utf8(body):
        return data, starts
    fixed = np.frombuffer(bytes(body).decode("utf-8", "replace").encode("utf-8"), dtype=np.uint8)
    after_newline, _ = _line_starts(fixed)
    return fixed, np.concatenate([[0], after_newline[after_newline < len(fixed)]]).astype(np.int64)


def _lines_array(data: Bytes, starts: Positions) -> pa.LargeStringArray:
    """The lines as a pyarrow string array over `data` (no copy); each value keeps its newline."""
    import numpy as np
    import pyarrow as pa

    offsets = np.append(starts, len(data)).astype(np.int64)
    return pa.LargeStringArray.from_buffers(len(starts), pa.py_buffer(offsets), pa.py_buffer(data))


def _stats(stats: list[PartStats], cpu_s: float) -> pa.RecordBatch:
    """The parts' stats as one batch (OUTPUT_SCHEMA), the task's CPU seconds on its first part's row: the
    process's, so a Parquet writer's threads count too (a worker runs one task at a time)."""
    import pyarrow as pa

    cpu_us = [round(cpu_s * 1e6) if i == 0 else 0 for i in range(len(stats))]
    return pa.RecordBatch.from_arrays(
        [
            pa.array([s.sid for s in stats], pa.int32()),
            pa.array([s.block for s in stats], pa.int64()),
            *[pa.array([getattr(s, key) for s in stats], pa.int64()) for key in COUNTS],
            pa.array(cpu_us, pa.int64()),
        ],
        names=["sid", "block", *COUNTS, "cpu_us"],
    )


def _schema() -> pa.Schema:
    """scan_part's batches: STORED_SCHEMA but the `time` the events' file adds (_EventsFile), as Arrow."""
    import pyarrow as pa

    return pa.schema(
        [
            ("sid", pa.int32()),
            ("bundle", pa.int32()),
            ("block", pa.int64()),
            ("first_rel", pa.int64()),
            ("last_rel", pa.int64()),
            ("orphan", pa.bool_()),
            ("sigs", pa.list_(pa.int32())),
            ("matches", _matches_type()),
            ("measures", measures_type()),
            ("entries", _entries_type()),
            *[(name, pa.float64() if name == "uptime" else pa.string()) for name in HEADER],
            ("text", pa.string()),
            ("repeats", pa.int32()),  # the events this row stands for: 1, or a group of WARN+ events (_warned_groups)
            ("head", pa.string()),  # a WARN+ event's first line (_heads)
        ]
    )


def _tab_at(data: Bytes, at: Positions, top: int | Positions) -> Flags:
    """Per line start `at`, whether the line starts a `\tat ` stack frame (no byte past `top` is read): the one
    test of the bytes the scan calls a frame."""
    import numpy as np

    frame: Flags = data[np.minimum(at, top)] == 9  # a tab, then "at "
    for offset, byte in ((1, 97), (2, 116), (3, 32)):
        frame &= data[np.minimum(at + offset, top)] == byte
    return frame


def _named_frame(data: Bytes, at: Positions, top: int | Positions) -> Flags:
    """Per line start `at`, whether the line is a stack frame that names something: `\tat ` and a printable
    ASCII character (no byte past `top` read), as TRACE's `^\\s*at\\s+\\S` and the matcher's frame lines read it."""
    import numpy as np

    name = data[np.minimum(at + 4, top)]
    named: Flags = _tab_at(data, at, top) & (name > 32) & (name < 127)
    return named


def _heads(first_lines: pa.Array, level: pa.Array) -> pa.Array:
    """Of each WARN+ event, its (masked) text's first line (`first_lines`: _first_lines of the texts), at most
    HEAD_MAX chars; null for the others. The unexplained errors read it for their evidence instead of `text`,
    whose decoding (every kept event's whole text, before the level is filtered) was about half of their time on
    a large bundle. Only the WARN+ rows are cut: a production part keeps hundreds of thousands of INFO measures
    for a dozen warnings; a lab part's are stack traces, whose texts are not copied to cut their first lines."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    warn = pc.indices_nonzero(_warned(level))
    if not len(warn):
        return pa.nulls(len(first_lines), pa.string())
    cut = pc.utf8_slice_codeunits(first_lines.take(warn), 0, HEAD_MAX)
    at = np.full(len(first_lines), -1, dtype=np.int64)  # each row's place among the WARN+ rows, -1: none (null)
    at[warn.to_numpy()] = np.arange(len(warn))
    return cut.take(pa.array(at, mask=at < 0))


def _maskable(prefilter: Prefilter, hits: Hits) -> Flags | None:
    """Per event, whether the masks' trigger can match its text: the events the pass found its pattern in (None:
    the pass did not look for it, every text is tested)."""
    import numpy as np

    if prefilter.trigger is None:
        return None
    maskable = np.zeros(hits.events, dtype=bool)
    maskable[hits.by_pattern.get(prefilter.trigger, np.zeros(0, dtype=np.int64))] = True
    return maskable


def _masked(text: pa.Array, maskable: Flags | None = None) -> tuple[pa.Array, Flags]:
    """The texts with their secrets masked (the masks run only where RE2 finds a word one of them needs, RE2 only
    on the `maskable` rows: the others cannot hold one), and which of them masking changed."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    changed = np.zeros(len(text), dtype=bool)
    tried = np.arange(len(text)) if maskable is None else np.flatnonzero(maskable)
    if not len(tried):
        return text, changed
    subset = text if len(tried) == len(text) else text.take(pa.array(tried))
    at = tried[pc.match_substring_regex(subset, TRIGGER_RE2).to_numpy(zero_copy_only=False)]
    if not len(at):
        return text, changed
    values = text.take(pa.array(at)).to_pylist()
    masked = [mask(value) for value in values]
    changed[at] = [after != before for before, after in zip(values, masked, strict=True)]
    hit = np.zeros(len(text), dtype=bool)
    hit[at] = True
    return pc.replace_with_mask(text, pa.array(hit), pa.array(masked, type=text.type)), changed


# the header's fields as the events table keeps them (`ts` raw: the events' file reads its time, _EventsFile)
HEADER = ("ts", "level", "logger", "thread", "host", "uptime", "message")


def _header_fields(
    part: Part, heads: pa.Array, headerless: Flags, only_timed: Flags | None = None, flagged: bool = False
) -> dict[str, pa.Array]:
    """Per event, its header's fields by the layout's regex (none for an event without a header), the message
    the header's own when the layout names none, the level in upper case, the layout's fixed logger: Arrow
    arrays, taken by RE2 over all the events' first lines (`heads`: _first_lines of their texts) at once
    (re2.py; Python's `re` per event only for a layout RE2 cannot read exactly). `only_timed`: the events of
    which only `ts` and `host` are read (_Events._only_timed): where the layout has them at fixed places, they
    are cut there from the lines its regex matches, the other fields left null (_timed_fields), and only the
    other events' fields are captured. `flagged`: each of those with a header is a line the layout's header
    test flagged, its head that line without its end (_timed_fields)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    if only_timed is not None and only_timed.any() and part.layout != "none" and _timed_places(part.layout) is not None:
        timed = only_timed & ascii_rows(heads)  # (a character is a byte: the places are bytes)
        light = _timed_fields(part.layout, heads, headerless, flagged)  # (over every row: no copy of most of them)
        if timed.all():
            return light
        rest = np.flatnonzero(~timed)
        # the other rows' first lines, not their texts: a lab part's are its stack traces, tens of MB copied and
        # read for their newlines again
        full = _header_fields(part, heads.take(pa.array(rest)), headerless[rest])
        # each row's value: its light one, or its full one (the rest's, in order): the light ones replaced where
        # they are not null (`ts`, `host`), else the full ones taken, null at the light rows (no copy of both)
        other = pa.array(~timed)
        at = np.zeros(len(heads), dtype=np.int64)
        at[rest] = np.arange(len(rest))
        taken = pa.array(at, mask=timed)
        return {
            name: full[name].take(taken)
            if light[name].null_count == len(heads)
            else pc.replace_with_mask(light[name], other, full[name])
            for name in HEADER
        }
    n = len(heads)
    columns: dict[str, pa.Array] = {
        name: pa.nulls(n, pa.float64() if name == "uptime" else pa.string()) for name in HEADER
    }
    columns["message"] = heads
    if part.layout == "none" or not n:
        return columns
    layout = layout_by_id(part.layout)
    prefix = _header_prefix(layout.header)
    if prefix is None:
        return _header_fields_python(part, heads, headerless)
    found = extract(heads, prefix, by_position=True)
    names = {field.name for field in found.type}
    has_header = pa.array(~np.asarray(headerless, dtype=bool))
    none = pa.scalar(None, pa.string())

    def field(name: str) -> pa.Array:  # the group's value where it is not empty and the event has a header
        if name not in names:
            return pa.nulls(n, pa.string())
        values = found.field(name)
        return pc.if_else(pc.and_kleene(has_header, pc.not_equal(values, "")), values, none)

    columns["ts"], columns["thread"], columns["host"] = field("ts"), field("thread"), field("host")
    columns["level"] = pc.utf8_upper(field("level"))
    columns["logger"] = pc.if_else(
        has_header, pc.coalesce(field("logger"), pa.scalar(layout.fixed_logger, pa.string())), none
    )
    columns["message"] = _message(heads, found.field(PREFIX), headerless)
    uptime = field("uptime")
    at = np.flatnonzero(uptime.is_valid().to_numpy(zero_copy_only=False))
    if len(at):  # as Python's float() reads them (digits of any script too)
        values = np.full(n, np.nan)
        values[at] = [_float(v) if _float(v) is not None else np.nan for v in uptime.take(pa.array(at)).to_pylist()]
        columns["uptime"] = pa.array(values, pa.float64(), mask=np.isnan(values))
    return columns


@cache
def _timed_places(layout_id: str) -> dict[str, tuple[int, int]] | None:
    """The places of the layout's `ts` and `host` groups (those it has) in an ASCII first line its regex matches,
    when both are at fixed places (re2.positional_groups); None otherwise, or when RE2 cannot read the regex."""
    prefix = _header_prefix(layout_by_id(layout_id).header)
    if prefix is None:
        return None
    places = {name: (first, end) for name, first, end in positional_groups(prefix)}
    wanted = [name for name in ("ts", "host") if name in group_names(prefix)]
    return {name: places[name] for name in wanted} if all(name in places for name in wanted) else None


def _timed_fields(layout_id: str, heads: pa.Array, headerless: Flags, flagged: bool = False) -> dict[str, pa.Array]:
    """Per event (its first line; read right only when ASCII), the `ts` and `host` _header_fields gives, cut at
    their places (_timed_places) where the layout's regex matches, with no group captured (RE2 decides whether
    it matches without tracking groups, a third of capturing them); every other field null. `flagged`: each row
    with a header is a line the layout's header test flagged, `heads` holding it without its end: the flag says
    the regex matches where headers.flag_unsure says so (a production part's measured lines: nearly all), and
    RE2 reads only the other rows (a line that ends where the header's fields could)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    places = _timed_places(layout_id)
    assert places is not None
    prefix = _header_prefix(layout_by_id(layout_id).header)
    assert prefix is not None
    n = len(heads)
    columns = {name: pa.nulls(n, pa.float64() if name == "uptime" else pa.string()) for name in HEADER}
    if not n or not places:
        return columns
    regex = re2_regex(prefix, True, frozenset(group_names(prefix)))
    unsure = flag_unsure(layout_id) if flagged else None
    if unsure is None:
        has = pc.and_(pc.match_substring_regex(heads, regex), pa.array(~np.asarray(headerless, dtype=bool)))
    else:
        found = ~np.asarray(headerless, dtype=bool)
        wide = np.int64 if pa.types.is_large_string(heads.type) else np.int32
        offsets = np.frombuffer(heads.buffers()[1], dtype=wide)[heads.offset : heads.offset + n + 1]
        data = np.frombuffer(heads.buffers()[2] or pa.py_buffer(b""), dtype=np.uint8)
        empty = offsets[1:] == offsets[:-1]
        last = data[np.maximum(offsets[1:] - 1, 0)] if len(data) else np.zeros(n, dtype=np.uint8)
        check = np.flatnonzero(found & (empty | unsure[last]))  # (a null head's fields are null either way)
        if len(check):
            found[check] = pc.fill_null(pc.match_substring_regex(heads.take(pa.array(check)), regex), False).to_numpy(
                zero_copy_only=False
            )
        has = pa.array(found)
    none = pa.scalar(None, pa.string())
    for name, (first, end) in places.items():
        values = byte_slice(heads, first, end)
        columns[name] = pc.if_else(pc.and_kleene(has, pc.not_equal(values, "")), values, none)
    return columns


def _first_lines(text: pa.Array, lengths: Positions | None = None) -> pa.StringArray:
    """Each text's first line (up to its first newline): a newline's place found in the texts' bytes by numpy,
    not by splitting every text into lines (a tenth of a production part's scan). `lengths`: per text, its first
    line's length in bytes where the caller knows it (_Events._text_bounds), else -1: only the other
    texts are searched (a production part's texts are nearly all one line; a lab part's are stack traces)."""
    import numpy as np
    import pyarrow as pa

    large = text.cast(pa.large_string())
    n = len(large)
    offsets = np.frombuffer(large.buffers()[1], dtype=np.int64)[large.offset : large.offset + n + 1]
    data = np.frombuffer(large.buffers()[2] or pa.py_buffer(b""), dtype=np.uint8)
    if lengths is not None and not text.null_count:
        if (lengths == np.diff(offsets)).all():  # every text one line: the texts, not a copy
            return text.cast(pa.string())
        unknown = np.flatnonzero(lengths < 0)
        known = spans(data, offsets[:-1], offsets[:-1] + np.maximum(lengths, 0))
        if not len(unknown):
            return known
        at = np.arange(n)
        at[unknown] = n + np.arange(len(unknown))
        return pa.concat_arrays([known, _first_lines(large.take(pa.array(unknown)))]).take(pa.array(at))
    newlines = byte_places(data, 10, int(offsets[0]), int(offsets[-1]))  # (a chunk at a time)
    if not len(newlines) and not text.null_count:  # every text one line (measured lines): the texts, not a copy
        return text.cast(pa.string())
    after = np.searchsorted(newlines, offsets[:-1])  # each text's first newline, if it is in the text
    end = np.append(newlines, offsets[-1])[after]
    return spans(data, offsets[:-1], np.minimum(end, offsets[1:]))


PREFIX = "flinkdoctorHeader"  # the group holding what precedes the message


@cache
def _header_prefix(header: str) -> str | None:
    """The layout's header regex without its message, `(?<msg>.*)$`, as one group PREFIX: RE2 takes the
    fields before the message several times faster without it, and the message is the rest of the line (the
    rest always matches `.*$`, so the fields are the same). None when the layout's regex does not end so, or RE2
    cannot read it exactly: Python's `re` takes its fields."""
    if not header.endswith(MESSAGE_TAIL) or re2_regex(header) is None:
        return None
    prefix = f"(?<{PREFIX}>{header[: -len(MESSAGE_TAIL)]})"
    return prefix if re2_regex(prefix) is not None else None


def _message(heads: pa.Array, prefix: pa.Array, headerless: Flags) -> pa.Array:
    """Per event, its message: the rest of its first line after the header's fields (`prefix`, as the extraction
    gives them: empty where the layout's regex does not match) where it has a header and that rest is not empty,
    else the whole line; null where it has a header and `prefix` is null. Cut from the lines' bytes where they
    are, once (not cut, then chosen by two passes over every message's bytes)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    heads = heads.cast(pa.large_string())
    offsets = np.frombuffer(heads.buffers()[1], dtype=np.int64)[heads.offset : heads.offset + len(heads) + 1]
    length = pc.fill_null(pc.binary_length(prefix), 0).to_numpy(zero_copy_only=False).astype(np.int64)
    header = ~np.asarray(headerless, dtype=bool)
    matched = prefix.is_valid().to_numpy(zero_copy_only=False)
    rest = header & matched & (offsets[:-1] + length < offsets[1:])  # (a header's fields match from its start)
    message = spans(heads.buffers()[2] or pa.py_buffer(b""), offsets[:-1] + np.where(rest, length, 0), offsets[1:])
    unmatched = header & ~matched
    if heads.null_count:
        unmatched |= ~heads.is_valid().to_numpy(zero_copy_only=False)
    if not unmatched.any():
        return message
    return pc.if_else(pa.array(unmatched), pa.scalar(None, pa.string()), message)


def _header_fields_python(part: Part, heads: pa.Array, headerless: Flags) -> dict[str, pa.Array]:
    """_header_fields by Python's `re`, per event."""
    import pyarrow as pa

    values = heads.to_pylist()
    columns: dict[str, list[str | float | None]] = {name: [None] * len(values) for name in HEADER}
    columns["message"] = list(values)
    fixed = layout_by_id(part.layout).fixed_logger
    for i, head in enumerate(values):
        if headerless[i]:
            continue
        fields = header_fields(part.layout, head)
        columns["ts"][i] = fields.get("ts")
        columns["level"][i] = fields["level"].upper() if "level" in fields else None
        columns["logger"][i] = fields.get("logger") or fixed
        columns["thread"][i] = fields.get("thread")
        columns["host"][i] = fields.get("host")
        columns["uptime"][i] = _float(fields.get("uptime"))
        columns["message"][i] = fields.get("msg") or head
    return {
        name: pa.array(column, pa.float64() if name == "uptime" else pa.string()) for name, column in columns.items()
    }


def _float(value: str | None) -> float | None:
    try:
        return float(value) if value else None
    except ValueError:
        return None


def _matches(
    matcher: Matcher | None,
    part: Part,
    text: pa.Array,
    sigs: pa.ListArray,
    tries: pa.ListArray,
    masked: Flags,
    fields: dict[str, pa.Array],
    found: dict[int, Positions],
    rows: Positions,
) -> tuple[pa.ListArray, Measures]:
    """Per event, the rules it matches (matcher.py), with captures and the matching line's index, and the
    metrics' measures of its lines (measure.py, in bulk). The signatures tried on a row are its `tries`
    (_Events._message_tries), or all its `sigs` where masking changed its text (its lines are not the bytes'),
    those of them its source kind and level admit (Matcher.admitted)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    if matcher is None:
        return _sparse_lists(len(text), {}, _matches_type()), Measures.none(len(text))
    first_metric = matcher.first_metric
    offsets, numbers = sigs.offsets.to_numpy(), sigs.values.to_numpy()
    if tries is not sigs:  # a masked row tries all its signatures, every other row its tries
        rows_of = np.repeat(np.arange(len(text)), np.diff(offsets))
        tried_rows = np.repeat(np.arange(len(text)), np.diff(tries.offsets.to_numpy()))
        own, other = masked[rows_of], ~masked[tried_rows]
        row = np.concatenate([rows_of[own], tried_rows[other]])
        numbers = np.concatenate([numbers[own], tries.values.to_numpy()[other]])
        order = np.lexsort((numbers, row))
        numbers = numbers[order]
        offsets = np.zeros(len(text) + 1, dtype=np.int64)
        np.cumsum(np.bincount(row, minlength=len(text)), out=offsets[1:])
    # the rules' signatures per row (a metric's are measured below), cut into Python lists at once: numpy's
    # slicing and masking per row cost more than the rows' matching
    rule = numbers < first_metric
    of_pair = np.repeat(np.arange(len(text)), np.diff(offsets))[rule]  # (ascending)
    numbers = numbers[rule]
    if len(numbers):  # only the pairs whose signature reads the row's source kind and level are tried in Python
        levels = fields["level"].dictionary_encode()
        codes = pc.fill_null(levels.indices, len(levels.dictionary)).to_numpy(zero_copy_only=False)
        admitted = matcher.admitted(numbers, [*levels.dictionary.to_pylist(), None], codes[of_pair], part.kind)
        of_pair, numbers = of_pair[admitted], numbers[admitted]
    rule_rows = distinct(of_pair)
    matched: dict[int, list[Hit]] = {}
    if len(rule_rows):  # each signature tried on its rows at once (Matcher.match_rows)
        taken = pa.array(rule_rows)
        message, level, logger, thread = (
            fields[name].take(taken).to_pylist() for name in ("message", "level", "logger", "thread")
        )
        events = Rows(text.take(taken).to_pylist(), message, level, logger, thread, part.kind)
        matched = matcher.match_rows(events, np.searchsorted(rule_rows, of_pair), numbers)
    return _matched_lists(len(text), rule_rows, matched), measures(matcher.metrics, text, found, rows)


def _matched_lists(n: int, rule_rows: Positions, matched: dict[int, list[Hit]]) -> pa.ListArray:
    """The matches' list array (_matches_type) of `n` rows from Matcher.match_rows' hits (keyed by position in
    `rule_rows`): _sparse_lists' rows, its items built from their columns (rule, captures' keys and values, idx),
    not from a dict per hit."""
    import numpy as np
    import pyarrow as pa

    kind = _matches_type()
    lists = {int(rule_rows[k]): matched[k] for k in sorted(matched)}  # (rule_rows ascend: in row order)
    hits = [hit for found in lists.values() for hit in found]
    counts = np.fromiter((len(captures) for _, captures, _ in hits), dtype=np.int32, count=len(hits))
    bounds = np.zeros(len(hits) + 1, dtype=np.int32)
    np.cumsum(counts, out=bounds[1:])
    keys = pa.array([key for _, captures, _ in hits for key in captures], pa.string())
    values = pa.array([value for _, captures, _ in hits for value in captures.values()], pa.string())
    struct = kind.value_type
    entries = pa.StructArray.from_arrays(
        [
            pa.array([rule for rule, _, _ in hits], pa.string()),
            pa.MapArray.from_arrays(pa.array(bounds), keys, values, type=struct.field("captures").type),
            pa.array([idx for _, _, idx in hits], pa.int32()),
        ],
        fields=list(struct),
    )
    return _sparse_lists(n, lists, kind, entries)


def _sparse_lists(
    n: int, lists: Mapping[int, Sequence[object]], kind: pa.ListType, items: pa.Array | None = None
) -> pa.ListArray:
    """A list array of `n` rows, empty but for the rows in `lists`: from offsets, not from n Python lists (most
    rows of a production part hold none). `items`: the lists' items in row order as an array already (else
    made from `lists`)."""
    import numpy as np
    import pyarrow as pa

    rows = sorted(lists)
    sizes = np.zeros(n, dtype=np.int32)
    sizes[rows] = [len(lists[row]) for row in rows]
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(sizes, out=offsets[1:])
    if items is None:
        items = pa.array([value for row in rows for value in lists[row]], type=kind.value_type)
    return pa.ListArray.from_arrays(pa.array(offsets), items, type=kind)


def _matches_type() -> pa.ListType:
    import pyarrow as pa

    return pa.list_(
        pa.struct([("rule", pa.string()), ("captures", pa.map_(pa.string(), pa.string())), ("idx", pa.int32())])
    )


def _whole(part: Part, into: Bytes) -> None:
    """A whole file's bytes as ingest saw them (part.size; a live log that grew is read as it was), read into
    `into`; gone or cut shorter since is InputChanged (see _open_unchanged). A local file is read without
    pyarrow's file system."""
    if "://" in part.path:
        with _open_unchanged(part) as handle:
            _read_at(handle, part, part.size, 0, into)
            return
    try:
        with open(part.path, "rb") as handle:
            _read_at(handle, part, part.size, 0, into)
    except InputChanged:  # (an OSError too: raised as it is)
        raise
    except OSError as err:
        raise _changed(part, None, err) from err


def _open_unchanged(part: Part) -> pa.NativeFile:
    """The part's file, as long as it is still the file that was ingested: gone or cut shorter since (a log
    rotated or truncated under a bundle read in place) is InputChanged, never a partial count. A file that grew
    (a live log) is read as it was."""
    try:
        handle = _open(part.path)
    except OSError as err:  # (pyarrow's errors are OSErrors)
        raise _changed(part, None, err) from err
    if (size := handle.size()) < part.size:
        handle.close()
        raise _changed(part, size)
    return handle


def _changed(part: Part, size: int | None, err: OSError | None = None) -> InputChanged:
    """The part's file cut shorter since ingest (`size`), or gone or unreadable now (`err`: removed, replaced by
    a folder, its permissions taken), named as the user gave it (not the link to it)."""
    from ..sources.staging import shown_input

    if size is not None:
        return InputChanged(shown_input(part.path), f"{part.size:,} bytes when read, {size:,} now")
    if err is None:
        return InputChanged(shown_input(part.path), "it cannot be read now")
    return InputChanged.unreadable(shown_input(part.path), err)


def _open(path: str) -> pa.NativeFile:
    """The file through pyarrow's file systems: a local path, or a URI (hdfs://, s3://) on a cluster."""
    filesystem, inner = filesystem_of(path)
    return filesystem.open_input_file(inner)
