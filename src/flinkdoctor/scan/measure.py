"""The metrics' measures of the kept events, taken over Arrow arrays: no Python per event, only per match.

A metric's line regex (knowledge/metrics.yaml) is tried on every line of the events the pass found it can match
in (prefilter.py): the events' lines are found by their newlines in the texts' bytes, where they are (_Lines),
and only the measures' lines are copied, once, in the order the list gives them. A regex that starts with a
literal (every checkpoint line's does) is run by RE2 (re2.py: the regex as RE2 finds exactly what Python's `re`
finds) anchored at the literal's first place in each line, which decides the match and takes its groups in one
pass (_captured; RE2's unanchored extraction is slower than Python's search for these regexes, the anchored one
faster). Otherwise RE2 says which lines match, all at once, and Python's `re` takes the groups of the matching
lines only; a regex RE2 cannot read exactly is run by Python's `re` on every candidate line. Each matching line is
a measure: the metric's position, the line's index in its event, the line (without trailing blanks), the groups
that took part, and a job id found elsewhere in the event (read off the bytes after `job ` where they decide it,
else by the regex).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache, cached_property
from typing import TYPE_CHECKING, TypeAlias

from ..knowledge.regexes import parse, python_regex, sre
from .prefilter import Bytes, Positions, distinct, spans
from .re2 import ascii_rows, extract, matching, re2_regex, unicode_classes

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import pyarrow as pa

Flags: TypeAlias = "npt.NDArray[np.bool_]"  # one flag per text or line

# a job id elsewhere in an event (a chk-N path), for a measure whose line names none
JOB_IN_EVENT = r"/([0-9a-f]{32})/chk-\d+|\bjob ([0-9a-f]{32})\b"
MOSTLY_MATCHING = 2  # at most this many lines per candidate event: most of them match (each event can)
FEW_LINES = 128  # below this many candidate lines Python's `re` decides: cheaper than compiling the RE2 kernel
SPACES = "".join(chr(c) for c in range(0x3100) if chr(c).isspace())  # what str.rstrip() removes
TRIMMED_HERE = 4  # trailing ASCII blanks cut by their bytes, at most (more: Arrow's trim)
SPANNED = 4  # texts (lines) read where they are when the bytes they span are at most this many times theirs
WORD = 8  # bytes of a literal compared at once (_first_places)


def measures(
    metrics: dict[int, tuple[int, str, str]], text: pa.Array, found: dict[int, Positions], rows: Positions
) -> Measures:
    """The measures of the rows of `text` (the kept events): Measures.lists gives them as an Arrow list array
    (MEASURES). `metrics`: signature number -> (metric position, line regex, its longest literal); `found`:
    signature number -> candidate events; `rows`: per event, its row in `text` (-1: not in it). The lines are cut
    from the texts' bytes where they are (_Lines), and each measure's line and captures copied once, in the list's
    order (_in_order)."""
    import numpy as np
    import pyarrow as pa

    candidates = {}
    for number, (position, regex, _) in metrics.items():
        events = found.get(number)
        if events is not None and len(events):
            cand = rows[events]
            candidates[position, regex] = distinct(cand[cand >= 0])
    # the texts read where they are, or a copy of the candidates' when theirs are not most of the bytes (a lab
    # part keeps stack traces no metric reads)
    wanted = distinct(np.concatenate([np.zeros(0, dtype=np.int64), *candidates.values()]))
    lines = _Lines.of(text)
    every = SPANNED * int(np.sum(lines.offsets[wanted + 1] - lines.offsets[wanted])) >= lines.size
    if not every:
        lines = _Lines.of(text.take(pa.array(wanted)))
    pieces = []
    for (position, regex), cand in candidates.items():
        if len(cand):
            pieces.append(_measured(position, regex, lines, cand if every else np.searchsorted(wanted, cand)))
    pieces = [p for p in pieces if len(p.rows)]
    if not pieces:
        return Measures.none(len(text))
    row = np.concatenate([p.rows for p in pieces])
    idx = np.concatenate([p.idx for p in pieces])
    metric = np.concatenate([np.full(len(p.rows), p.position, dtype=np.int32) for p in pieces])
    order = np.lexsort((metric, idx, row))  # by event, then line, then metric: the order Python's loop gave
    local = row[order]  # (rows of the texts read)
    at = local if every else wanted[local]
    return Measures(len(text), pieces, order, at, local, metric[order], idx[order], lines)


@dataclass(frozen=True)
class Measures:
    """A batch's measures (one row per kept event) with what they were built from: the pieces (one per metric:
    its lines, their bytes in `lines`' buffer, its groups as RE2 or `re` gave them), the measures' order among the
    pieces' lines, each measure's row. The task that writes the measured rows takes their captures from here
    (`captured`, `maps`) beside the batch, not looked up in the batch's maps again (measured.flat_rows)."""

    n: int  # the rows (kept events)
    pieces: list[_Piece]
    order: Positions  # (positions among the pieces' lines, one piece after the other)
    row: Positions  # each measure's row, ascending
    local: Positions  # each measure's row among the texts read (`lines`)
    metric: npt.NDArray[np.int32]  # each measure's metric (position)
    idx: Positions  # each measure's line's index in its event
    lines: _Lines  # the texts the pieces' bytes are in

    @classmethod
    def none(cls, n: int) -> Measures:
        """No measures for `n` rows."""
        import numpy as np
        import pyarrow as pa

        empty = np.zeros(0, dtype=np.int64)
        return cls(n, [], empty, empty, empty, np.zeros(0, dtype=np.int32), empty, _Lines.of(pa.array([], pa.string())))

    @cached_property
    def _fields(self) -> list[pa.Array]:
        """metric, idx, line and job of each measure, in order (built once, for `lists` and `maps` alike)."""
        import numpy as np
        import pyarrow as pa

        begin = np.concatenate([p.begin for p in self.pieces])[self.order]
        end = np.concatenate([p.end for p in self.pieces])[self.order]
        return [
            pa.array(self.metric, pa.int32()),
            pa.array(self.idx, pa.int32()),
            spans(self.lines.data, begin, end),
            _jobs(self.lines.large, self.local),
        ]

    def counts(self) -> npt.NDArray[np.int32]:
        """Per row, its measures' count (the lengths of `lists`)."""
        import numpy as np

        return np.bincount(self.row, minlength=self.n).astype(np.int32)

    def lists(self, rows: Flags | None = None) -> pa.ListArray:
        """Per row, its measures (MEASURES). `rows`: only these rows' measures get their captures' maps (the
        others' are empty: rows nobody reads, such as those the events file leaves out); None: every row's."""
        import numpy as np
        import pyarrow as pa

        offsets = np.zeros(self.n + 1, dtype=np.int32)
        if not self.pieces:
            return pa.ListArray.from_arrays(
                pa.array(offsets), pa.array([], type=measures_type().value_type), type=measures_type()
            )
        np.cumsum(self.counts(), out=offsets[1:])
        metric, idx, line, job = self._fields
        maps = self.maps(None if rows is None else rows[self.row])
        struct = pa.StructArray.from_arrays([metric, idx, line, maps, job], fields=list(measures_type().value_type))
        return pa.ListArray.from_arrays(pa.array(offsets), struct, type=measures_type())

    def maps(self, wanted: Flags | None = None) -> pa.MapArray:
        """Each measure's captures (the groups that took part, in their order), in the list's order (flattened);
        `wanted`: only these measures' (the others' maps empty), None: every one's."""
        return _in_order(self.pieces, self.order, wanted)

    def captured(self, keys: tuple[str, ...]) -> dict[str, pa.Array]:
        """Per key, each measure's capture of that name (null: its metric has no such group, or the group took no
        part), in the list's order (flattened): the pieces' groups as RE2 gave them, one take per key (what
        looking each key up in the maps gives: measured._looked_up)."""
        import pyarrow as pa

        found = {}
        order = pa.array(self.order)
        for key in keys:
            values = [
                p.values[p.names.index(key)].cast(pa.string()) if key in p.names else pa.nulls(len(p.rows), pa.string())
                for p in self.pieces
            ]
            found[key] = pa.concat_arrays(values).take(order) if values else pa.array([], pa.string())
        return found


@dataclass(frozen=True)
class _Lines:
    """The kept events' texts as one buffer of bytes: each text's offsets in `data`, the newlines in it, and which
    texts are ASCII (one pass each, for every metric's candidates)."""

    large: pa.LargeStringArray  # the texts (their offsets are into `data`)
    offsets: Positions
    data: Bytes

    @classmethod
    def of(cls, text: pa.Array) -> _Lines:
        import numpy as np
        import pyarrow as pa

        large = text.cast(pa.large_string())  # (the same bytes: only the offsets are widened)
        offsets = np.frombuffer(large.buffers()[1], dtype=np.int64)[large.offset : large.offset + len(large) + 1]
        data = np.frombuffer(large.buffers()[2] or pa.py_buffer(b""), dtype=np.uint8)
        return cls(large, offsets, data)

    @property
    def size(self) -> int:
        """The texts' bytes."""
        return int(self.offsets[-1] - self.offsets[0]) if len(self.offsets) else 0

    @cached_property
    def newlines(self) -> Positions:
        """Where the texts' newlines are in `data`."""
        lo = int(self.offsets[0]) if len(self.offsets) else 0
        return byte_places(self.data, 10, lo, lo + self.size)

    @cached_property
    def ascii(self) -> Flags:
        """Per text, whether it is ASCII."""
        return ascii_rows(self.large)

    def plain(self, rows: Positions, parent: Positions, begin: Positions, end: Positions) -> Flags:
        """Which of the lines [begin, end) of texts `rows` (each of `parent`) are ASCII: a text's lines when it
        is; each line of another."""
        import numpy as np
        import pyarrow.compute as pc

        plain = self.ascii[rows[parent]]
        if not plain.all():
            other = np.flatnonzero(~plain)
            lines = spans(self.data, begin[other], end[other])
            plain[other] = pc.string_is_ascii(lines).to_numpy(zero_copy_only=False)
        return plain

    def split(self, rows: Positions) -> tuple[Positions, Positions, Positions, Positions]:
        """(begin, end, parent, index) of each line of texts `rows`, as splitting each at "\\n" gives them: its
        bytes [begin, end) in `data`, its text's position in `rows`, its index in its text."""
        import numpy as np

        lo, hi = self.offsets[rows], self.offsets[rows + 1]
        first = np.searchsorted(self.newlines, lo)  # each text's first newline (its lines end at its newlines)
        count = np.searchsorted(self.newlines, hi) - first + 1
        parent = np.repeat(np.arange(len(rows)), count)
        index = np.arange(len(parent)) - (np.cumsum(count) - count)[parent]
        ending = first[parent] + index  # the newline that ends each line but a text's last
        last = index == count[parent] - 1
        bounds = np.append(self.newlines, 0)  # (the last line's `ending` may be one past the newlines)
        begin = np.where(index == 0, lo[parent], bounds[np.maximum(ending - 1, 0)] + 1)
        end = np.where(last, hi[parent], bounds[ending])
        return begin, end, parent, index


@dataclass(frozen=True)
class _Piece:
    """The lines one metric's regex matched: their rows, line indexes, the metric's position, their bytes
    [begin, end) in the texts' buffer (trailing blanks cut), and the groups' names and values (null where one took
    no part)."""

    rows: Positions
    idx: Positions
    position: int
    begin: Positions
    end: Positions
    names: list[str]
    values: list[pa.Array]


def _measured(position: int, regex: str, texts: _Lines, cand: Positions) -> _Piece:
    """The lines of events `cand` that `regex` matches."""
    import numpy as np
    import pyarrow as pa

    begin, end, parent, idx = texts.split(cand)
    pattern = python_regex(regex)
    names = sorted(pattern.groupindex, key=pattern.groupindex.__getitem__)  # the order groupdict() gives
    mostly_matching = len(begin) <= MOSTLY_MATCHING * len(cand)
    if len(begin) >= FEW_LINES and (anchored := _from_literal(regex)) is not None:  # RE2 decides and reads
        hit, values = _captured(texts, begin, end, texts.plain(cand, parent, begin, end), pattern, names, *anchored)
    else:
        flat = spans(texts.data, begin, end)
        if len(flat) >= FEW_LINES and not mostly_matching and re2_regex(regex) is not None:  # RE2 decides, `re` reads
            hit = matching(flat, regex)
            found = [pattern.search(value) for value in flat.take(pa.array(hit)).to_pylist()] if names else []
        else:  # Python's `re` decides too: few lines (Arrow's kernel would compile the regex for them on every
            # call), or lines most of which match (events of one line each that the pass found the metric in: `re`
            # on every line costs less than RE2 on every line and `re` again on most of them)
            searched = list(map(pattern.search, flat.to_pylist()))
            hit = np.flatnonzero(np.array([m is not None for m in searched], dtype=bool))
            found = searched if len(hit) == len(searched) else [m for m in searched if m is not None]
        # RE2 reads every measure's regex exactly as Python does (checked when the rewrite is made), so `re` finds
        # each line RE2 matched: a miss would be a bug in that check, and fails loudly here
        values = [pa.array([m[name] for m in found], pa.string()) for name in names]  # type: ignore[index]
    begin, end = begin[hit], end[hit]
    return _Piece(cand[parent[hit]], idx[hit], position, begin, _rstripped(texts.data, begin, end), names, values)


def _rstripped(data: Bytes, begin: Positions, end: Positions) -> Positions:
    """Each line's end without its trailing blanks, as str.rstrip() cuts them (SPACES): ASCII blanks by their
    bytes; a line that then ends in a byte beyond ASCII (which may be a blank's) or still in a blank, by Arrow's
    trim (a hostile line of many blanks costs no pass a blank)."""
    import numpy as np
    import pyarrow.compute as pc

    end = end.copy()
    if not len(data):
        return end
    for _ in range(TRIMMED_HERE):
        blank = (end > begin) & _blank()[data[np.maximum(end - 1, 0)]]
        if not blank.any():
            break
        end -= blank
    last = data[np.maximum(end - 1, 0)]
    other = np.flatnonzero((end > begin) & (_blank()[last] | (last >= 128)))
    if len(other):
        trimmed = pc.utf8_rtrim(spans(data, begin[other], end[other]), characters=SPACES)
        end[other] = begin[other] + pc.binary_length(trimmed).to_numpy(zero_copy_only=False)
    return end


def _in_order(pieces: list[_Piece], order: Positions, wanted: Flags | None = None) -> pa.MapArray:
    """The pieces' captures, a map<string, string> per line (the groups that took part, in their order), the lines
    in `order` (positions among the pieces' lines, one piece after the other): each value copied once. `wanted`
    (per line, in `order`): only these lines' maps are filled, the others' left empty; None: every line's."""
    import numpy as np
    import pyarrow as pa

    n = len(order)
    place = np.empty(n, dtype=np.int64)
    place[order] = np.arange(n)  # each line's place in the output
    names: list[str] = []
    values: list[pa.Array] = []
    owner, key, item = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]
    first = stored = 0  # the piece's first line among all; the values before its own
    for piece in pieces:
        m = len(piece.rows)
        at, taken = place[first : first + m], piece.values
        if wanted is not None:  # only the wanted lines' values, taken out
            chosen = np.flatnonzero(wanted[at])
            at = at[chosen]
            taken = [v.take(pa.array(chosen)) for v in piece.values] if len(chosen) else []
        if piece.names and len(at):
            present = np.stack([v.is_valid().to_numpy(zero_copy_only=False) for v in taken], axis=1)
            line, which = np.nonzero(present)  # (lines x groups, row-major: by line, then group)
            owner.append(at[line])
            key.append(len(names) + which)
            item.append(stored + which * len(at) + line)
            names += piece.names
            values += [v.cast(pa.string()) for v in taken]
            stored += len(at) * len(piece.names)
        first += m
    of = np.concatenate(owner)
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(np.bincount(of, minlength=n), out=offsets[1:])
    # a line's entries are adjacent and in its groups' order: each goes to its line's first slot plus its rank
    starts = np.flatnonzero(np.diff(of, prepend=-1))
    rank = np.arange(len(of)) - np.repeat(starts, np.diff(np.append(starts, len(of))))
    slot = np.empty(len(of), dtype=np.int64)
    slot[offsets[of] + rank] = np.arange(len(of))
    keys = pa.array(names, pa.string()).take(pa.array(np.concatenate(key)[slot]))
    items = pa.concat_arrays(values) if values else pa.array([], pa.string())
    return pa.MapArray.from_arrays(pa.array(offsets), keys, items.take(pa.array(np.concatenate(item)[slot])))


@cache
def _from_literal(regex: str) -> tuple[str, str] | None:
    """(the literal every match of `regex` starts with, the regex for RE2 anchored at that literal, for ASCII
    text) when RE2 can take its groups where Python's `re` would: the regex starts with a literal (no flags), RE2
    reads it exactly (re2_regex), it has named groups and none of them can match an empty text (RE2 gives "" for a
    group that took no part, Python None). None otherwise."""
    tree = parse(regex)
    if tree.state.flags & ~sre.SRE_FLAG_UNICODE or not tree.state.groupdict or re2_regex(regex, True) is None:
        return None
    literal = ""
    for op, av in tree:
        if op is not sre.LITERAL or av >= 128:
            break
        literal += chr(av)
    if len(literal) < 4:
        return None
    for number in tree.state.groupdict.values():
        if _group_width(tree, number) < 1:
            return None
    return literal, f"\\A(?:{re2_regex(regex, True)})"


def _group_width(tree: object, number: int) -> int:
    """The fewest characters group `number` of the parse tree `tree` can match (0 when not found)."""
    for op, av in tree:  # type: ignore[attr-defined]
        if op is sre.SUBPATTERN:
            if av[0] == number:
                return int(av[3].getwidth()[0])
            found = _group_width(av[3], number)
            if found:
                return found
        elif op in (sre.MAX_REPEAT, sre.MIN_REPEAT):
            found = _group_width(av[2], number)
            if found:
                return found
        elif op is sre.BRANCH:
            for branch in av[1]:
                found = _group_width(branch, number)
                if found:
                    return found
    return 0


def _captured(
    texts: _Lines,
    begin: Positions,
    end: Positions,
    plain: Flags,
    pattern: re.Pattern[str],
    names: list[str],
    literal: str,
    anchored: str,
) -> tuple[Positions, list[pa.Array]]:
    """(the lines [begin, end) of the texts' bytes that `pattern` matches, ascending; its named groups' values on
    them, null where a group took no part), by RE2 from the first place of `literal` in each ASCII line (`plain`):
    a match can start nowhere else before it, so the match RE2 finds there is the one Python's search finds. A line
    without the literal has no match; a line where none starts there (it may, further on) or a line beyond ASCII is
    searched by Python's `re`."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    at = np.where(plain, _first_places(texts.data, begin, end, literal.encode()), -1)
    tried = np.flatnonzero(at >= 0)
    found = pc.extract_regex(spans(texts.data, begin[tried] + at[tried], end[tried]), anchored)
    matched = found.is_valid().to_numpy(zero_copy_only=False)
    by_re2 = tried[matched]
    searched = np.sort(np.concatenate([np.flatnonzero(~plain), tried[~matched]]))
    by_python = [pattern.search(v) for v in spans(texts.data, begin[searched], end[searched]).to_pylist()]
    more = np.array([m is not None for m in by_python], dtype=bool)
    hit = np.concatenate([by_re2, searched[more]])
    order = np.argsort(hit, kind="stable")
    none = pa.scalar(None, pa.string())
    values = []
    for name in names:
        captured = found.field(name) if matched.all() else found.field(name).filter(pa.array(matched))
        captured = pc.if_else(pc.equal(captured, ""), none, captured).cast(pa.string())  # "": it took no part
        if len(by_python):
            other = pa.array([m[name] for m in by_python if m is not None], pa.string())
            captured = pa.concat_arrays([captured, other]).take(pa.array(order))
        values.append(captured)
    return hit[order], values


def _first_places(data: Bytes, begin: Positions, end: Positions, literal: bytes) -> Positions:
    """Per line [begin, end) of `data` (ascending, apart), the offset from its start of the first place of
    `literal` wholly in it (-1: none). numpy finds the literal's first byte in the lines' bytes (where they are
    when they are most of the bytes they span, else copied out) and then its other bytes at those places only:
    Arrow's find_substring read every byte of the lines at several times the cost."""
    import numpy as np
    import pyarrow as pa

    at = np.full(len(begin), -1, dtype=np.int64)
    if not len(begin) or not literal:
        return at
    if end[-1] - begin[0] > SPANNED * int((end - begin).sum()):  # a sparse metric's lines: copied together
        copied = spans(data, begin, end).cast(pa.large_string())
        begin = np.frombuffer(copied.buffers()[1], dtype=np.int64)[copied.offset : copied.offset + len(copied) + 1]
        end, begin = begin[1:], begin[:-1]
        data = np.frombuffer(copied.buffers()[2] or pa.py_buffer(b""), dtype=np.uint8)
    found = byte_places(data, literal[0], int(begin[0]), int(end[-1]) - len(literal) + 1)
    if len(literal) >= WORD and len(data) >= WORD:  # the other bytes compared 8 at a time (the last 8 may overlap)
        words = np.ndarray((len(data) - WORD + 1,), dtype="<u8", buffer=data, strides=(1,))
        for offset in (*range(0, len(literal) - WORD, WORD), len(literal) - WORD):
            found = found[words[found + offset] == int.from_bytes(literal[offset : offset + WORD], "little")]
    else:
        for offset, byte in enumerate(literal[1:], start=1):
            found = found[data[found + offset] == byte]
    line = np.searchsorted(begin, found, side="right") - 1  # (each place is at or after the first line's start)
    found, line = found[found + len(literal) <= end[line]], line[found + len(literal) <= end[line]]
    first = np.flatnonzero(np.diff(line, prepend=-1))  # each line's first place (the places ascend)
    at[line[first]] = found[first] - begin[line[first]]
    return at


@cache
def _job_regex(ascii_only: bool) -> str:
    """JOB_IN_EVENT for RE2: its word boundaries as a character that is no word character (Python's \\w), or
    the text's edge. The leftmost match and its groups are Python's (tests/test_re2.py). `ascii_only`: for texts
    of ASCII characters only."""
    classes = unicode_classes()
    word = "".join(_range(a, b) for a, b in classes["word"] if not ascii_only or a < 128)
    digit = "".join(_range(a, b) for a, b in classes["digit"] if not ascii_only or a < 128)
    hexes = "(?P<path>[0-9a-f]{32})"
    return rf"/{hexes}/chk-[{digit}]+|(?:\A|[^{word}])job (?P<named>[0-9a-f]{{32}})(?:[^{word}]|\z)"


def _range(a: int, b: int) -> str:
    return f"\\x{{{a:x}}}" if a == b else f"\\x{{{a:x}}}-\\x{{{b:x}}}"


def _jobs(text: pa.Array, rows: Positions) -> pa.Array:
    """Per row of `rows` (ascending, repeated for each measure of a row), the job id JOB_IN_EVENT finds in that
    row of `text` (null: none): read off the bytes after `job ` where they decide it (_jobs_by_bytes), by the
    regex in the other rows; each distinct row read once, the ids taken once, in the measures' order."""
    import numpy as np
    import pyarrow as pa

    large = text.cast(pa.large_string())  # one cast: the offsets found are in its bytes
    start, undecided = _jobs_by_bytes(large, distinct(rows))
    found = np.flatnonzero(start >= 0)
    data = np.frombuffer(large.buffers()[2] or pa.py_buffer(b""), dtype=np.uint8)
    ids = _windows(data, start[found])  # ASCII hex digits: 32 characters each
    sizes = np.arange(0, 32 * len(found) + 1, 32, dtype=np.int32)
    parts = [pa.StringArray.from_buffers(len(found), pa.py_buffer(sizes), pa.py_buffer(ids))]
    at = np.full(len(text), -1, dtype=np.int64)
    at[found] = np.arange(len(found))
    if len(undecided):
        parts.append(_jobs_by_regex(text, undecided))
        at[undecided] = len(found) + np.arange(len(undecided))
    at = at[rows]
    return pa.concat_arrays(parts).take(pa.array(at, mask=at < 0))


def _jobs_by_regex(text: pa.Array, rows: Positions) -> pa.Array:
    """Of each of `rows` of `text`, the job id JOB_IN_EVENT finds in it (null: none): by RE2, or by Python's `re`
    for fewer than FEW_LINES rows (a production part leaves a few a batch, the events that restore from a chk-N
    path: Arrow compiled RE2's form, with every Unicode word character in it, for each batch)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if len(rows) < FEW_LINES:
        searched = [re.search(JOB_IN_EVENT, value or "") for value in text.take(pa.array(rows)).to_pylist()]
        return pa.array([m[1] or m[2] if m else None for m in searched], pa.string())
    found = extract(text.take(pa.array(rows)), JOB_IN_EVENT, _job_regex(True), _job_regex(False))
    path, named = found.field("path"), found.field("named")
    job = pc.if_else(pc.equal(path, ""), named, path)
    return pc.if_else(pc.equal(job, ""), pa.scalar(None, pa.string()), job).cast(pa.string())


def _jobs_by_bytes(text: pa.LargeStringArray, rows: Positions) -> tuple[Positions, Positions]:
    """(per row of `text`, the byte offset in its data of the job id JOB_IN_EVENT finds in it, -1: none or not
    decided here;
    the rows of `rows` left to the regex). A row with no `/chk-` can match only `job ` then 32 hex digits, with
    no word character before or after; where each `job ` of a row has ASCII bytes around it, those say which is
    the first that matches (or that none does). A row with a `/chk-`, or with a byte beyond ASCII at such a
    boundary (which may or may not be a letter), is left to the regex. numpy looks only at the `j`s and `/`s:
    RE2's search over every row's text cost a tenth of a production part's scan."""
    import numpy as np
    import pyarrow as pa

    n = len(text)
    offsets = np.frombuffer(text.buffers()[1], dtype=np.int64)[text.offset : text.offset + n + 1]
    data = np.frombuffer(text.buffers()[2] or pa.py_buffer(b""), dtype=np.uint8)
    wanted = np.zeros(n, dtype=bool)
    wanted[rows] = True
    lo, hi = int(offsets[0]), int(offsets[-1])

    def at(letters: bytes, key: int) -> tuple[Positions, Positions]:  # (where `letters` starts within one row,
        found = byte_places(data, letters[key], lo, hi) - key  # by its byte `key`; that row)
        found = found[(found >= lo) & (found + len(letters) <= hi)]
        for i, byte in enumerate(letters):
            if i != key:
                found = found[data[found + i] == byte]
        row = np.searchsorted(offsets, found, side="right") - 1
        inside = (found + len(letters) <= offsets[row + 1]) & wanted[row]
        return found[inside], row[inside]

    checkpoint_rows = at(b"/chk-", 0)[1]
    job, row = at(b"job ", 0)
    word = _word_classes()
    end = offsets[row + 1]
    word_before = np.where(job > offsets[row], word[data[np.maximum(job - 1, 0)]], NO)  # a text's start: none
    hexes = np.zeros(len(job), dtype=bool)
    whole = np.flatnonzero(job + 36 <= end)  # 32 bytes after `job ` in its row
    hexes[whole] = _lower_hex(_windows(data, job[whole] + 4)).all(axis=1)
    after = job + 36
    word_after = np.where(after < end, word[data[np.minimum(after, max(hi - 1, 0))]], NO)
    undecided = np.zeros(n, dtype=bool)
    undecided[checkpoint_rows] = True
    undecided[row[(word_before == MAYBE) | (hexes & (word_after == MAYBE))]] = True
    matches = np.flatnonzero((word_before == NO) & hexes & (word_after == NO) & ~undecided[row])
    first = matches[np.diff(row[matches], prepend=-1) != 0]  # each row's first (they ascend)
    start = np.full(n, -1, dtype=np.int64)
    start[row[first]] = job[first] + 4
    return start, np.flatnonzero(undecided)


def byte_places(data: npt.NDArray[np.uint8], byte: int, lo: int, hi: int, chunk: int = 1 << 20) -> Positions:
    """The offsets of `byte` in data[lo:hi], a chunk at a time (twice as fast as one comparison over all)."""
    import numpy as np

    found = [np.zeros(0, dtype=np.int64)]
    for at in range(lo, hi, chunk):
        found.append(np.flatnonzero(data[at : min(at + chunk, hi)] == byte) + at)
    return np.concatenate(found)


def _windows(data: npt.NDArray[np.uint8], at: Positions) -> npt.NDArray[np.uint8]:
    """The 32 bytes from each of `at` (each within `data`), one row each: gathered as 32-byte records (one copy
    each, 1.7x as fast as rows of a sliding window of bytes)."""
    import numpy as np

    if not len(at):
        return np.zeros((0, 32), dtype=np.uint8)
    records = np.ndarray((len(data) - 31,), dtype=np.dtype((np.void, 32)), buffer=data, strides=(1,))
    rows: npt.NDArray[np.uint8] = records[at].view(np.uint8).reshape(len(at), 32)
    return rows


@cache
def _blank() -> Flags:
    """Per byte: whether it is an ASCII character str.rstrip() removes (SPACES)."""
    import numpy as np

    return np.array([b < 128 and chr(b) in SPACES for b in range(256)], dtype=bool)


NO, YES, MAYBE = 0, 1, 2  # a byte's word class: not a word character, one, or beyond ASCII (not known from it)


@cache
def _word_classes() -> npt.NDArray[np.uint8]:
    """Per byte: its word class (Python's \\w on an ASCII character; MAYBE beyond ASCII)."""
    import numpy as np

    word = [MAYBE if b >= 128 else YES if chr(b).isalnum() or b == ord("_") else NO for b in range(256)]
    return np.array(word, dtype=np.uint8)


def _lower_hex(values: npt.NDArray[np.uint8]) -> Flags:
    """Per byte, whether it is a lower-case hex digit: two ranges, each a subtraction that wraps below it and a
    comparison (a 256-entry table indexed by every byte cost twice as much)."""
    import numpy as np

    hexes: Flags = (values - np.uint8(ord("0")) <= 9) | (values - np.uint8(ord("a")) <= 5)
    return hexes


def measures_type() -> pa.ListType:
    import pyarrow as pa

    return pa.list_(
        pa.struct(
            [
                ("metric", pa.int32()),
                ("idx", pa.int32()),
                ("line", pa.string()),
                ("captures", pa.map_(pa.string(), pa.string())),
                ("job", pa.string()),
            ]
        )
    )
