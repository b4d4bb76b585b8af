"""The metrics' measures of the kept events, taken over Arrow arrays: no Python per event, only per match.

A metric's line regex (knowledge/metrics.yaml) is tried on every line of the events the pass found it can match
in (prefilter.py): the events are split into lines, and RE2 (re2.py: the regex as RE2 finds exactly what
Python's `re` finds) says which lines match, all at once; Python's `re` then takes the groups of the matching
lines only (RE2's own extraction is slower than Python's for these regexes). A regex RE2 cannot read exactly is
run by Python's `re` on every candidate line. Each matching line is a measure: the metric's position, the line's
index in its event, the line (without trailing blanks), the groups that took part, and a job id found elsewhere
in the event.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

from ..knowledge.regexes import python_regex
from .prefilter import Positions, distinct
from .re2 import extract, matching, re2_regex, unicode_classes

if TYPE_CHECKING:
    import pyarrow as pa

# the lines one metric's regex matched: (rows, line indexes, metric position, lines, captures)
Measured = tuple[Positions, Positions, int, "pa.Array", "pa.MapArray"]

# a job id elsewhere in an event (a chk-N path), for a measure whose line names none
JOB_IN_EVENT = r"/([0-9a-f]{32})/chk-\d+|\bjob ([0-9a-f]{32})\b"
MOSTLY_MATCHING = 2  # at most this many lines per candidate event: most of them match (each event can)
FEW_LINES = 128  # below this many candidate lines Python's `re` decides: cheaper than compiling the RE2 kernel
SPACES = "".join(chr(c) for c in range(0x3100) if chr(c).isspace())  # what str.rstrip() removes


def measures(
    metrics: dict[int, tuple[int, str, str]], text: pa.Array, found: dict[int, Positions], rows: Positions
) -> pa.ListArray:
    """Per row of `text` (the kept events), its measures (MEASURES as an Arrow list array). `metrics`: signature
    number -> (metric position, line regex, its longest literal); `found`: signature number -> candidate events;
    `rows`: per event, its row in `text` (-1: not in it)."""
    import numpy as np
    import pyarrow as pa

    pieces = []
    for number, (position, regex, _) in metrics.items():
        events = found.get(number)
        if events is None or not len(events):
            continue
        cand = rows[events]
        cand = distinct(cand[cand >= 0])
        if len(cand):
            pieces.append(_measured(position, regex, text, cand))
    pieces = [p for p in pieces if len(p[0])]
    if not pieces:
        empty = pa.array(np.zeros(len(text) + 1, dtype=np.int32))  # offsets: no row holds a measure
        return pa.ListArray.from_arrays(empty, pa.array([], type=measures_type().value_type), type=measures_type())
    row = np.concatenate([p[0] for p in pieces])
    idx = np.concatenate([p[1] for p in pieces])
    metric = np.concatenate([np.full(len(p[0]), p[2], dtype=np.int32) for p in pieces])
    line = pa.concat_arrays([p[3] for p in pieces])
    captures = pa.concat_arrays([p[4] for p in pieces])
    order = np.lexsort((metric, idx, row))  # by event, then line, then metric: the order Python's loop gave
    row = row[order]
    jobs = _jobs(text, distinct(row))
    struct = pa.StructArray.from_arrays(
        [
            pa.array(metric[order], pa.int32()),
            pa.array(idx[order], pa.int32()),
            line.take(pa.array(order)),
            captures.take(pa.array(order)),
            jobs.take(pa.array(row)),
        ],
        fields=list(measures_type().value_type),
    )
    offsets = np.zeros(len(text) + 1, dtype=np.int32)
    np.cumsum(np.bincount(row, minlength=len(text)), out=offsets[1:])
    return pa.ListArray.from_arrays(pa.array(offsets), struct, type=measures_type())


def _measured(position: int, regex: str, text: pa.Array, cand: Positions) -> Measured:
    """(rows, line indexes, position, lines, captures) of the lines of events `cand` that `regex` matches."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    lists = pc.split_pattern(text.take(pa.array(cand)), "\n")
    flat = lists.flatten()
    parent = pc.list_parent_indices(lists).to_numpy()
    starts = lists.offsets.to_numpy()
    idx = np.arange(len(flat)) - starts[parent]
    pattern = python_regex(regex)
    names = sorted(pattern.groupindex, key=pattern.groupindex.__getitem__)  # the order groupdict() gives
    mostly_matching = len(flat) <= MOSTLY_MATCHING * len(cand)
    if len(flat) >= FEW_LINES and not mostly_matching and re2_regex(regex) is not None:  # RE2 decides, `re` reads
        hit = matching(flat, regex)
        found = [pattern.search(value) for value in flat.take(pa.array(hit)).to_pylist()] if names else []
    else:  # Python's `re` decides too: few lines (Arrow's kernel would compile the regex for them on every call),
        # or lines most of which match (events of one line each that the pass found the metric in: `re` on every
        # line costs less than RE2 on every line and `re` again on most of them)
        searched = list(map(pattern.search, flat.to_pylist()))
        hit = np.flatnonzero(np.array([m is not None for m in searched], dtype=bool))
        found = searched if len(hit) == len(searched) else [m for m in searched if m is not None]
    # RE2 reads every measure's regex exactly as Python does (checked when the rewrite is made), so `re` finds
    # each line RE2 matched: a miss would be a bug in that check, and fails loudly here
    values = [pa.array([m[name] for m in found], pa.string()) for name in names]  # type: ignore[index]
    lines = pc.utf8_rtrim(flat.take(pa.array(hit)), characters=SPACES)
    return cand[parent[hit]], idx[hit], position, lines.cast(pa.string()), _captures(names, values, len(hit))


def _captures(names: list[str], values: list[pa.Array], n: int) -> pa.MapArray:
    """A map<string, string> per matching line: the groups that took part (null: a group that did not)."""
    import numpy as np
    import pyarrow as pa

    empty = pa.array([], pa.string())
    if not names:
        return pa.MapArray.from_arrays(pa.array(np.zeros(n + 1, dtype=np.int32)), empty, empty)
    present = np.stack([v.is_valid().to_numpy(zero_copy_only=False) for v in values], axis=1)  # lines x groups
    line, which = np.nonzero(present)  # in row-major order: by line, then group
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(np.bincount(line, minlength=n), out=offsets[1:])
    keys = pa.array(names, pa.string()).take(pa.array(which))
    flat = pa.concat_arrays([v.cast(pa.string()) for v in values])
    items = flat.take(pa.array(which * n + line))
    return pa.MapArray.from_arrays(pa.array(offsets), keys, items)


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
    """Per row of `text`, the job id JOB_IN_EVENT finds in it (only `rows` are read; others null)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    found = extract(text.take(pa.array(rows)), JOB_IN_EVENT, _job_regex(True), _job_regex(False))
    path, named = found.field("path"), found.field("named")
    job = pc.if_else(pc.equal(path, ""), named, path)
    job = pc.if_else(pc.equal(job, ""), pa.scalar(None, pa.string()), job)
    at = np.full(len(text), -1, dtype=np.int64)
    at[rows] = np.arange(len(rows))
    return job.take(pa.array(at, mask=at < 0)).cast(pa.string())


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
