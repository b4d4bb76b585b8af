"""The header fields the scan cuts out at their places instead of capturing them (re2.positional_groups: RE2's
fast engine captures at most four groups, a Flink header has five) are the ones the layout's regex captures: on
every line of the seeds, incidents, Loghub logs, a lab recording, a JVM's GC log, the JSON records and REST
snapshots as staging writes them, and on look-alike variants of them (a timestamp in other scripts' digits,
Unicode spaces), through the scan's own header extraction."""

from __future__ import annotations

import random
from functools import cache
from pathlib import Path

import pytest

from flinkdoctor.knowledge.regexes import python_regex
from flinkdoctor.sources.layouts import load_layouts
from tests.conftest import lab_logs_of
from tests.test_shapes import JSON_LOGS, SHAPES, _read

DATA = Path(__file__).parent / "data"
LOOK_ALIKE = {d: [chr(0x660 + int(d)), chr(0xFF10 + int(d))] for d in "0123456789"}
LOOK_ALIKE.update({" ": ["\u2003", "\xa0", "\x1c", "\x85"], ",": ["\uff0c"], "-": ["\u2010"], "[": ["\xe9"]})


@cache
def lines() -> list[str]:
    """Every line of the real logs under tests/data (seeds, incidents, Loghub, a GC log), of one lab recording,
    of the JSON records and the REST snapshots as staging writes them, then a variant of each with a few
    look-alike characters in its first 40."""
    import json

    from flinkdoctor.sources.rest import render, rest_events

    found: list[str] = []
    for name in JSON_LOGS:
        found += _read(SHAPES / "json" / name)[1]
    for recording in sorted((DATA / "rest").glob("*/recording.json")):
        for response in json.loads(recording.read_text("utf-8"))["responses"].values():
            found += render(rest_events(response["body"])).splitlines()
    for folder in ("seeds", "incidents", "loghub", "jvm"):
        for path in sorted((DATA / folder).rglob("*")):
            if path.is_file() and path.suffix not in (".json", ".md", ".yaml", ".gz", ".zip", ".tgz"):
                found += path.read_bytes().decode("utf-8", "replace").splitlines()
    for raw in lab_logs_of("checkpoint-timeout").values():
        found += raw.decode("utf-8", "replace").splitlines()
    rng = random.Random(7)
    variants = []
    for line in found:
        chars = list(line)
        for i in rng.sample(range(min(len(chars), 40)), min(len(chars), 40, 3)):
            chars[i] = rng.choice(LOOK_ALIKE.get(chars[i], [chars[i]]))
        variants.append("".join(chars))
    return found + variants


def test_a_flink_header_timestamp_is_cut_at_its_place():
    """Flink's default layout: the timestamp is the one group of a fixed width at a fixed place."""
    from flinkdoctor.scan.re2 import positional_groups
    from flinkdoctor.scan.scanner import _header_prefix
    from flinkdoctor.sources.layouts import layout_by_id

    prefix = _header_prefix(layout_by_id("flink-log4j2").header)
    assert prefix is not None
    assert positional_groups(prefix) == (("ts", 0, len("2026-03-01 00:00:00,000")),)


def _positional_layouts() -> list[str]:
    """The layouts the scan reads with RE2 whose header holds a group it cuts out by position."""
    from flinkdoctor.scan.re2 import positional_groups
    from flinkdoctor.scan.scanner import _header_prefix

    return [
        layout.id
        for layout in load_layouts()
        if (prefix := _header_prefix(layout.header)) is not None and positional_groups(prefix)
    ]


@pytest.mark.parametrize("layout", _positional_layouts())
def test_groups_cut_at_their_places_are_the_captured_ones(layout):
    """Per layout the scan reads with RE2: the groups of its header prefix, by position or captured, are the
    groups RE2 captures and the groups Python's `re` finds, on every line (matching or not)."""
    import pyarrow as pa

    from flinkdoctor.scan.re2 import extract, positional_groups
    from flinkdoctor.scan.scanner import _header_prefix
    from flinkdoctor.sources.layouts import layout_by_id

    prefix = _header_prefix(layout_by_id(layout).header)
    assert prefix is not None
    values = pa.array(lines())
    python = python_regex(prefix)
    want = []
    for line in lines():
        found = python.search(line)
        want.append(None if found is None else {k: v or "" for k, v in found.groupdict().items()})
    got = extract(values, prefix, by_position=True).to_pylist()
    if layout == "shape-record-untimed":  # no real log of records without a time here; its `ts` is the one `-`
        assert positional_groups(prefix) == (("ts", 1, 2),)
    else:
        assert any(w is not None for w in want), "the corpus holds lines of this layout"
    assert got == want


def test_an_events_first_line_is_cut_at_its_first_newline():
    """scanner._first_lines, the header's line of each event text, is the text split at its first newline: on
    events of several real lines, with a carriage return and an empty line among them, and on an empty text; and
    on texts of one line each (given back as they are), large or not, sliced or not."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from flinkdoctor.scan.scanner import _first_lines

    real = lines()[:3000]
    texts = ["\n".join(real[i : i + 3]) for i in range(0, len(real), 3)] + ["", "\n", real[0] + "\r\n" + real[1]]
    single = [line.rstrip("\n") for line in real[:500]] + ["", real[0] + "\r"]
    several = [pa.array(texts), pa.array(texts).slice(5), pa.array(texts, pa.large_string()).slice(1)]
    one_line = [pa.array(single), pa.array(single).slice(7), pa.array(single, pa.large_string()).slice(3)]
    for array in several + one_line:
        want = pc.list_element(pc.split_pattern(array, "\n", max_splits=1), 0).cast(pa.string())
        got = _first_lines(array)
        assert got.type == pa.string() and got.to_pylist() == want.to_pylist()


def test_a_prefix_whose_every_group_is_positional_is_captured():
    """A header prefix of fixed width with no other group (Arrow's extraction needs a group to capture): the
    scan's extraction by position gives what the captured one gives, on every line."""
    import pyarrow as pa

    from flinkdoctor.scan.re2 import extract, positional_groups

    prefix = r"(?<flinkdoctorHeader>^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3}\s)"
    assert positional_groups(prefix) == (("flinkdoctorHeader", 0, 24),)
    values = pa.array(lines())
    found = extract(values, prefix, by_position=True).to_pylist()
    assert found == extract(values, prefix).to_pylist() and any(found)


def test_an_unanchored_regex_is_captured_not_cut():
    """A regex not anchored at the line's start may match anywhere in it (Arrow's extraction searches): its
    fixed-width groups are captured, not cut from the line's first characters. On real Flink lines the time of
    day is found after the date."""
    import pyarrow as pa

    from flinkdoctor.scan.re2 import extract, positional_groups

    regex = r"(?<hms>\d{2}:\d{2}:\d{2}),(?<ms>\d{3}) (?<level>\S+)"
    assert positional_groups(regex) == ()
    python = python_regex(regex)
    want = []
    for line in lines():
        found = python.search(line)
        want.append(None if found is None else found.groupdict())
    assert any(w is not None for w in want), "the corpus holds lines with a time of day"
    assert extract(pa.array(lines()), regex, by_position=True).to_pylist() == want


@pytest.mark.parametrize("layout", [layout.id for layout in load_layouts()])
def test_a_header_test_anchored_at_the_line_start_flags_the_same_lines(layout):
    """headers.HeaderTest.anchored (RE2 over every line in place, a line that cannot start a header failing at
    its first byte) flags the lines the layout's test flags, each line a value with its newline, or the last
    without one; a test that could match an empty text, or that starts elsewhere than a line's start, has none."""
    import pyarrow as pa

    from flinkdoctor.scan.headers import _anchored, flag, header_test

    test = header_test(layout)
    if test.anchored is None:
        assert not test.re2
        return
    values = pa.array([line + "\n" for line in lines()] + [lines()[0], "", "\n"], pa.large_string())
    assert flag(test, values, test.anchored).tolist() == flag(test, values).tolist()
    assert _anchored(r"^\s*") is None and _anchored(r"\d+") is None and _anchored(r"^\d+") == r"\A(?m)^\d+"


@pytest.mark.parametrize("layout", _positional_layouts())
def test_an_events_message_is_the_rest_of_its_header_line(layout):
    """scanner._header_fields' message, cut once from the lines' bytes: per event of real lines (one line, or
    several), the rest of its first line after the header's fields where it has a header that the layout's regex
    matches and that rest is not empty; else the whole first line (no header: an orphan, a piece; a line the
    regex does not match; nothing after the fields), or null for an ASCII line it does not match where the fields
    are all cut at their places (re2._positional: no group captured, the fields' group null where it fails)."""
    import numpy as np
    import pyarrow as pa

    from flinkdoctor.scan.re2 import positional_groups
    from flinkdoctor.scan.scanner import PREFIX, Part, _first_lines, _header_fields, _header_prefix
    from flinkdoctor.sources.layouts import layout_by_id

    prefix = _header_prefix(layout_by_id(layout).header) or ""
    python = python_regex(prefix)
    cut = PREFIX in [name for name, _, _ in positional_groups(prefix)]
    real = lines()
    texts = real + [f"{real[i]}\n{real[i + 1]}" for i in range(0, len(real) - 1, 7)]
    headerless = np.random.default_rng(3).random(len(texts)) < 0.2
    want = []
    for text, none in zip(texts, headerless, strict=True):
        head = text.split("\n", 1)[0]
        found = None if none else python.search(head)
        if found and found.end() < len(head):
            want.append(head[found.end() :])
        else:  # (the fields' group, cut at its place, is null on an ASCII line the regex does not match)
            want.append(None if cut and not none and head.isascii() else head)
    if layout != "shape-record-untimed":  # (no real log of records without a time here)
        assert any(w and w != t.split("\n", 1)[0] for w, t in zip(want, texts, strict=True))
    part = Part(0, "a.log", 0, 1, 1, layout, False, True)
    for array in (pa.array(texts), pa.array(["x", *texts]).slice(1), pa.array(texts, pa.large_string())):
        assert _header_fields(part, _first_lines(array), headerless)["message"].to_pylist() == want


def test_a_string_arrays_ascii_rows_are_arrows():
    """re2.ascii_rows (numpy's largest byte first, Arrow's test of each value only when one is beyond ASCII):
    the rows Arrow's string_is_ascii finds, a null as ASCII; on real lines and their look-alike variants, all
    ASCII or not, sliced past a value that is not, large, empty, and of empty strings."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from flinkdoctor.scan.re2 import ascii_rows

    real = lines()
    plain = [line for line in real if line.isascii()]
    other = next(i for i, line in enumerate(real) if not line.isascii())
    arrays = [
        pa.array(real),
        pa.array(plain + [None]),
        pa.array(real[other : other + 50]).slice(1),  # its first value, not ASCII, is outside the slice
        pa.array(real[: other + 1]).slice(0, other),
        pa.array(real, pa.large_string()).slice(3),
        pa.array([], pa.string()),
        pa.array(["", None, ""]),
        pa.array(["a", "a", "é"]).slice(1),  # the value past the slice's first is not ASCII
        pa.chunked_array([real[:3], real[other : other + 2]]),
    ]
    for array in arrays:
        want = pc.fill_null(pc.string_is_ascii(array), True).to_numpy(zero_copy_only=False)
        assert ascii_rows(array).tolist() == want.tolist()
    assert ascii_rows(arrays[2]).all() and not ascii_rows(arrays[0]).all()
    assert ascii_rows(arrays[7]).tolist() == [True, False]


@pytest.mark.parametrize("layout", [layout.id for layout in load_layouts()])
def test_only_the_time_and_host_of_events_read_for_them_are_taken(layout):
    """scanner._header_fields with `only_timed` (the events of which the task reads only `ts` and `host`,
    _Events._only_timed): per layout, on every real line and its look-alike variants (digits of other scripts,
    Unicode spaces), some without a header, their `ts` and `host` are the ones of every field taken (the layout's
    regex captures them), one line or several; where the layout has them at fixed places their other fields are
    left null on ASCII lines, and a line beyond ASCII gets every field; the events not among them get every field."""
    import numpy as np
    import pyarrow as pa

    from flinkdoctor.scan.scanner import HEADER, Part, _first_lines, _header_fields, _timed_places

    real = lines()
    texts = real + [f"{real[i]}\n{real[i + 1]}" for i in range(0, len(real) - 1, 7)]
    rng = np.random.default_rng(5)
    headerless, only = rng.random(len(texts)) < 0.2, rng.random(len(texts)) < 0.9
    part = Part(0, "a.log", 0, 1, 1, layout, False, True)
    full = _header_fields(part, _first_lines(pa.array(texts)), headerless)
    light = _header_fields(part, _first_lines(pa.array(texts)), headerless, only)
    for name in ("ts", "host"):
        assert light[name].to_pylist() == full[name].to_pylist(), name
    ascii_only = only & np.array([text.split("\n", 1)[0].isascii() for text in texts])
    cut = _timed_places(layout) is not None
    for name in HEADER:
        got, want = light[name].to_pylist(), full[name].to_pylist()
        if name not in ("ts", "host"):
            assert [v for v, o in zip(got, ascii_only, strict=True) if cut and o] == [None] * (
                int(ascii_only.sum()) * cut
            )
            assert [g for g, o in zip(got, ascii_only, strict=True) if not (cut and o)] == [
                w for w, o in zip(want, ascii_only, strict=True) if not (cut and o)
            ], name
    if layout == "flink-log4j2":
        assert cut and any(full["ts"].to_pylist()) and any(full["logger"].to_pylist())
        assert not ascii_only.all() and ascii_only.any()


def test_a_layouts_levels_at_warn_are_among_the_pass_level_words():
    """headers.levels_worded: a layout whose `level` group lists its words in upper or lower case (or that has
    none) gives a level at WARN or above only where its first line holds one of the pass's level words (the same
    words as WARN_WORDS); a word in mixed case, a flag that folds case or a level group of any other shape does
    not say so. Every layout shipped says so but the JSON records' (a level of any capitals: every field taken)."""
    from flinkdoctor.scan.headers import WARN_WORDS, levels_worded
    from flinkdoctor.scan.prefilter import LEVEL_WORDS

    assert set(LEVEL_WORDS) == WARN_WORDS
    unsaid = [layout.id for layout in load_layouts() if not levels_worded(layout.header)]
    assert unsaid == ["shape-record", "shape-record-untimed"]
    assert levels_worded(r"^(?<ts>\S+) (?<level>info|warn|ERROR) (?<msg>.*)$")
    assert levels_worded(r"^(?<ts>\S+) (?<msg>.*)$")
    assert not levels_worded(r"^(?<ts>\S+) (?<level>INFO|Warn) (?<msg>.*)$")
    assert not levels_worded(r"(?i)^(?<ts>\S+) (?<level>INFO|WARN) (?<msg>.*)$")
    assert not levels_worded(r"^(?<ts>\S+) (?i:(?<level>INFO|WARN)) (?<msg>.*)$")
    assert not levels_worded(r"^(?<ts>\S+) (?<level>\w+) (?<msg>.*)$")
