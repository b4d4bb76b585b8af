"""The measures' fast paths find what Python's `re` finds, on real JobManager and TaskManager lines (seeds,
incidents, lab recordings) and on variants of them made where a fast path must hand over to the regex:
- the job id a measure takes from elsewhere in its event (measure.JOB_IN_EVENT), read off the bytes after `job `
  (measure._jobs_by_bytes): variants with a letter beyond ASCII, a word character or an upper-case digit next to
  the id or before `job`;
- a metric's groups taken by RE2 from the first place of the literal its regex starts with (measure._captured):
  variants with that literal twice (the match starts at the second) and with a character beyond ASCII;
- the events' lines found by their newlines in the texts' bytes (measure._Lines.split) as str.split("\n") gives
  them, and each line's trailing blanks cut by their bytes (measure._rstripped) as str.rstrip() cuts them:
  variants ending in ASCII blanks, more of them than are cut byte by byte, and blanks or letters beyond ASCII."""

from __future__ import annotations

import random
import re
from functools import cache
from pathlib import Path

import pytest

from tests.conftest import lab_logs_of

DATA = Path(__file__).parent / "data"
NEIGHBOURS = ["\xe9", "\u0436", "\u5b57", "\u2003", "_", "x", "A", "(", "\n", "/chk-12"]


@cache
def events() -> list[str]:
    """Real lines, three to an event, and for each event that holds `job ` a variant with a neighbour put just
    before `job` or just after the 32 characters that follow it."""
    found: list[str] = []
    for folder in ("seeds", "incidents"):
        for path in sorted((DATA / folder).rglob("*.log")):
            found += path.read_bytes().decode("utf-8", "replace").splitlines()
    for recording in ("checkpoint-timeout", "restart-exhausted"):
        for raw in lab_logs_of(recording).values():
            found += raw.decode("utf-8", "replace").splitlines()
    texts = ["\n".join(found[i : i + 3]) for i in range(0, len(found), 3)]
    rng = random.Random(11)
    variants = []
    for text in texts:
        at = text.find("job ")
        if at < 0:
            continue
        place = rng.choice([at, at + 36])
        variants.append(text[:place] + rng.choice(NEIGHBOURS) + text[place:])
        variants.append(text[: at + 4] + text[at + 4 : at + 36].upper() + text[at + 36 :])
        # the byte just past each range of lower-case hex digits ('9'+1, 'f'+1) and just before ('0'-1, 'a'-1)
        variants += [text[: at + 35] + byte + text[at + 36 :] for byte in (":", "g", "/", "`")]
    return texts + variants + ["", "job ", "job " + "a" * 31]


@pytest.mark.parametrize("few_lines", [0, 10**9])  # the rows the bytes leave: by RE2, then by Python's `re`
def test_the_job_read_off_the_bytes_is_pythons(monkeypatch, few_lines):
    import numpy as np
    import pyarrow as pa

    from flinkdoctor.scan import measure
    from flinkdoctor.scan.measure import JOB_IN_EVENT, _jobs, _jobs_by_bytes

    monkeypatch.setattr(measure, "FEW_LINES", few_lines)

    python = re.compile(JOB_IN_EVENT)
    want = []
    for text in events():
        found = python.search(text)
        want.append((found.group(1) or found.group(2)) if found else None)
    values = pa.array(events())
    rows = np.arange(len(values))
    assert _jobs(values, rows).to_pylist() == want
    start, undecided = _jobs_by_bytes(values.cast(pa.large_string()), rows)
    decided = np.count_nonzero(start >= 0)
    assert decided >= 50 and 0 < len(undecided) < decided  # the bytes decide most rows that hold a job
    # one id per row asked for, in their order, a row asked for again (each of its measures) given again; only
    # those rows are read, and a sliced array is read at its own offsets
    half = np.repeat(np.arange(0, len(values) - 1, 2), np.arange(len(values) // 2) % 3)
    assert len(half) > len(set(half.tolist())) > 100
    assert _jobs(values.slice(1), half).to_pylist() == [want[1 + i] for i in half.tolist()]


def test_a_metrics_groups_taken_from_its_literal_are_pythons():
    import numpy as np
    import pyarrow as pa

    from flinkdoctor.analytics.metrics import load_metrics
    from flinkdoctor.knowledge.regexes import python_regex
    from flinkdoctor.scan.measure import _captured, _from_literal, _Lines

    lines = [line for text in events() for line in text.split("\n")]
    # the metrics' regexes, and one with a group that may take no part: the checkpoint type, which Flink 1.20
    # prints and the 1.14 of seed 001 does not
    optional = r"Triggering checkpoint (?<checkpoint>\d+) (?:\(type=(?<type>[^)]{1,200})\) )?@ (?<epoch_ms>\d+)"
    checked = 0
    for regex in [metric.line for metric in load_metrics()] + [optional]:
        anchored = _from_literal(regex)
        if anchored is None:
            continue
        literal = anchored[0]
        pattern = python_regex(regex)
        names = sorted(pattern.groupindex, key=pattern.groupindex.__getitem__)
        holding = [line for line in lines if literal in line]
        variants = [line.replace(literal, literal + literal[:-1] + "\xe9 " + literal, 1) for line in holding]
        variants += [line.replace(literal, literal + literal, 1) for line in holding]
        variants += [line + " \u5b57" for line in holding]
        texts = lines + variants
        want = [pattern.search(text) for text in texts]
        held = _Lines.of(pa.array(texts))  # (as the texts' lines are read: where they are, with what follows)
        begin, end = held.offsets[:-1], held.offsets[1:]
        plain = held.plain(np.arange(len(texts)), np.arange(len(texts)), begin, end)
        hit, values = _captured(held, begin, end, plain, pattern, names, *anchored)
        assert hit.tolist() == [i for i, m in enumerate(want) if m is not None], regex
        for name, got in zip(names, values, strict=True):
            assert got.to_pylist() == [m[name] for m in want if m is not None], (regex, name)
        checked += len(hit)
    assert checked > 100 and np.all(np.diff(hit) > 0)
    found = [python_regex(optional).search(line) for line in lines]
    assert {m["type"] is None for m in found if m} == {True, False}  # the group took part in some, not in others


TAILS = [
    "",
    " ",
    "\t",
    " \t \x0b\x0c",
    " " * 9,
    "\x1c\x1f",
    "\u3000",
    "\u00a0 ",
    "x\u2003 \t",
    "\xe9",
    "\u5b57 ",
    "\u0085",
]


def test_lines_cut_from_the_bytes_are_pythons():
    import numpy as np
    import pyarrow as pa

    from flinkdoctor.scan.measure import _Lines, _rstripped

    rng = random.Random(5)
    texts = [text + rng.choice(TAILS) for text in events()]
    texts += ["", "\n", "\n\n", "a\n", "\nb", "x" + TAILS[4] + "\n" + TAILS[6]]
    values = pa.array(["not read", *texts]).slice(1)  # (a slice: its texts' offsets do not start at 0)
    held = _Lines.of(values)
    rows = np.arange(len(texts))[::2]
    begin, end, parent, index = held.split(rows)
    data = held.data.tobytes()
    lines = [data[b:e].decode() for b, e in zip(begin.tolist(), end.tolist(), strict=True)]
    want = [(i, k, line) for i in rows.tolist() for k, line in enumerate(texts[i].split("\n"))]
    assert list(zip(rows[parent].tolist(), index.tolist(), lines, strict=True)) == want
    cut = _rstripped(held.data, begin, end)
    assert [data[b:e].decode() for b, e in zip(begin.tolist(), cut.tolist(), strict=True)] == [
        line.rstrip() for _, _, line in want
    ]
    assert len({line[len(line.rstrip()) :] for _, _, line in want}) >= len(TAILS) - 1  # (each kind of tail met)


def test_a_literals_first_place_in_each_line_is_pythons():
    """measure._first_places on real lines, where they are and copied out (a sparse choice of lines): the first
    place of the literal wholly in each line, as bytes.find gives it; never a place that runs past the line's end
    into the next, nor one in the bytes between two lines."""
    import numpy as np
    import pyarrow as pa

    from flinkdoctor.scan.measure import _first_places, _Lines

    literal = b"checkpoint "
    lines = [line for text in events() for line in text.split("\n")]
    lines += ["checkpoint", "x checkpoint", "checkpoint checkpoint ", "acheckpoint \xe9"]  # cut at the end; twice
    lines += ["x checkpoint ", "y", "z checkpoint "]  # wholly in the line, its last bytes; then the last line's
    held = _Lines.of(pa.array(["\n".join(lines)]))
    begin, end, _, _ = held.split(np.array([0]))
    data = held.data.tobytes()
    for rows in (np.arange(len(lines)), np.arange(0, len(lines), 9)):  # dense, then sparse (copied out)
        got = _first_places(held.data, begin[rows], end[rows], literal)
        want = [data[b:e].find(literal) for b, e in zip(begin[rows].tolist(), end[rows].tolist(), strict=True)]
        assert got.tolist() == want
        assert 0 < sum(w >= 0 for w in want) < len(want)
    assert _first_places(held.data, begin[:0], end[:0], literal).tolist() == []
    between = np.frombuffer(b"abcdef\ncheckpoint \nghijkl", dtype=np.uint8)  # in the bytes between two lines
    assert _first_places(between, np.array([0, 19]), np.array([6, 25]), literal).tolist() == [-1, -1]
    copied = np.frombuffer(b"x checkpoint" + b"\n" * 200 + b" y", dtype=np.uint8)  # copied out back to back
    assert _first_places(copied, np.array([0, 212]), np.array([12, 214]), literal).tolist() == [-1, -1]


@pytest.mark.parametrize("literal", [b"at job", b"checkpoint", b"for job db5b5f", b"Triggering checkpoint "])
def test_a_long_literals_bytes_compared_a_word_at_a_time_are_its_bytes(literal):
    """measure._first_places compares a literal of WORD bytes or more 8 bytes at a time (the last 8 overlapping):
    a line that holds the literal with any one byte changed holds no place of it, one that holds it after such a
    near miss has its place after it, and a literal that ends on the buffer's last byte is found."""
    import numpy as np

    from flinkdoctor.scan.measure import _first_places

    lines = [b"x " + literal, literal + b" y", b"" + literal[:-1], b"-"]
    for i in range(len(literal)):  # one byte changed, alone and before the literal itself
        near = literal[:i] + bytes([literal[i] ^ 1]) + literal[i + 1 :]
        lines += [b"< " + near + b" >", near + literal]
    data = np.frombuffer(b"\n".join(lines), dtype=np.uint8)
    lengths = np.array([len(line) for line in lines])
    begin = np.concatenate([[0], np.cumsum(lengths + 1)[:-1]])
    got = _first_places(data, begin, begin + lengths, literal)
    assert got.tolist() == [line.find(literal) for line in lines]
    last = np.frombuffer(b"ab" + literal, dtype=np.uint8)  # the literal's last byte is the buffer's
    assert _first_places(last, np.array([0]), np.array([len(last)]), literal).tolist() == [2]
    short = np.frombuffer(literal[:3], dtype=np.uint8)  # a buffer shorter than a word: no place, no error
    assert _first_places(short, np.array([0]), np.array([len(short)]), literal).tolist() == [-1]


def test_a_job_id_in_the_buffers_last_32_bytes_is_read():
    """measure._windows reads a 32-byte record that ends on the buffer's last byte (review16b: one record
    fewer raised an IndexError there)."""
    import numpy as np

    from flinkdoctor.scan.measure import _windows

    job = b"0123456789abcdef0123456789abcdef"
    data = np.frombuffer(b"for job " + job, dtype=np.uint8)
    assert bytes(_windows(data, np.array([8]))[0]) == job


def test_a_bytes_places_are_found_a_chunk_at_a_time_as_in_one_pass():
    """measure.byte_places (the texts' newlines and the literals' first bytes, found a chunk at a time): every
    place of the byte in data[lo:hi], as one comparison over all of it finds them, on real lines joined, with
    chunks that cut lines and that end on the byte itself, and a range that starts and ends inside a chunk."""
    import numpy as np

    from flinkdoctor.scan.measure import byte_places

    data = np.frombuffer("\n".join(events()).encode("utf-8"), dtype=np.uint8)
    newlines = np.flatnonzero(data == 10)
    assert len(newlines) > 1000
    on_newline = int(newlines[100] - newlines[99])  # a chunk whose first byte is a newline
    for byte in (10, ord("j"), ord("/")):
        for chunk in (1 << 20, 4096, 1000, on_newline):
            for lo, hi in ((0, len(data)), (17, len(data) - 5), (int(newlines[99]), int(newlines[500]) + 1)):
                want = np.flatnonzero(data[lo:hi] == byte) + lo
                assert byte_places(data, byte, lo, hi, chunk).tolist() == want.tolist()
    assert byte_places(data, 10, 5, 5).tolist() == []


@pytest.mark.parametrize("few_lines", [0, 10**9])  # the groups taken by RE2, then by Python's `re`
def test_the_captures_beside_the_measures_are_the_maps_own(monkeypatch, few_lines):
    """Measures.captured (what measured.flat_rows reads beside a batch instead of looking its maps up again): per
    key, each measure's capture in the list's order, the same as the maps' lookup (measured._looked_up); and
    the maps of only some rows (Measures.lists) or measures (Measures.maps): those rows' maps, the others
    empty, every other field the same."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from flinkdoctor.analytics.metrics import load_metrics
    from flinkdoctor.scan import measure
    from flinkdoctor.scan.measured import _looked_up

    monkeypatch.setattr(measure, "FEW_LINES", few_lines)
    metrics = {n: (n, m.line, "") for n, m in enumerate(load_metrics())}
    keys = ("job", "checkpoint", "epoch_ms", "duration_ms", "bytes", "key", "none")
    texts = events()
    rows = np.arange(len(texts))
    built = measure.measures(metrics, pa.array(texts), dict.fromkeys(metrics, rows), rows)
    whole = built.lists()
    flat = pc.list_flatten(whole)
    want = {k: v.to_pylist() for k, v in _looked_up(flat.field("captures"), keys).items()}
    assert len(want["job"]) > 100 and len({tuple(v is None for v in want[k]) for k in keys}) >= 3  # kinds mixed
    assert {k: v.to_pylist() for k, v in built.captured(keys).items()} == want
    maps = flat.field("captures").to_pylist()
    assert built.maps().to_pylist() == maps and sum(map(bool, maps)) > 100
    rng = np.random.default_rng(5)
    wanted = rng.random(len(flat)) < 0.3
    assert built.maps(wanted).to_pylist() == [m if w else [] for m, w in zip(maps, wanted, strict=True)]
    chosen = rng.random(len(texts)) < 0.3
    some = built.lists(chosen).to_pylist()
    for row, (measures, every) in enumerate(zip(some, whole.to_pylist(), strict=True)):
        assert measures == [{**m, "captures": m["captures"] if chosen[row] else []} for m in every]
    assert measure.measures(metrics, pa.array(["x"]), {}, np.arange(1)).lists().to_pylist() == [[]]
