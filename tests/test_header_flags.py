"""The header work the scan does once instead of twice: the header test's flag standing for the fields' regex
(headers.flag_unsure, scanner._timed_fields), the events' first lines cut at their known lengths
(scanner._first_lines, the first lines' lengths of _Events._text_bounds). Each against the path it replaces: RE2
itself, the newline search, on random regexes and texts (hypothesis) and on every real line of tests/data with its
line ends."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from flinkdoctor.sources.layouts import load_layouts
from tests.test_header_positions import lines

pytestmark = pytest.mark.unit

ENDS = ("", "\n", "\r\n", "\r")
# the parts of a random header regex: what flag_unsure reads, and around it what it must refuse or get right
PIECES = ["-", ":", "a", "Z", "]", r"\s", r"\s+", r"\s*", r"\d", r"\d{2}", r"\w+", r"[^\]]*", ".", r"\]", r"\[",
          r"(?:-\s|:)", r"(?:x|\s)+", r"[\w.$\-]+", r"[\s-]", r"(?:ab)?", r"\S", r"[^\s]", "$", r"\r?",
          r"(?:\s|-){2}"]  # fmt: skip
CHARS = "-:aZ]x[ b\t\n\r\x0b\x1c0"


def _fields_match(body: str, values: list[str]) -> list[bool] | None:
    """Whether the scan's fields' regex (re2.re2_regex of the body as one group, its ASCII form) matches each
    value from its start; None when RE2 cannot read it exactly."""
    from flinkdoctor.scan.re2 import re2_regex

    regex = re2_regex(f"(?<head>{body})", True)
    if regex is None:
        return None
    return pc.match_substring_regex(pa.array(values, pa.string()), regex).to_pylist()


def _flags(body: str, values: list[str]) -> list[bool]:
    """headers.flag with the anchored test of a header regex `body` + its message."""
    from flinkdoctor.scan.headers import _anchored

    anchored = _anchored(body)
    assert anchored is not None
    return pc.match_substring_regex(pa.array(values, pa.large_string()), anchored).to_pylist()


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(PIECES), min_size=1, max_size=6), st.lists(st.text(CHARS, max_size=12), max_size=30))
@example([r"(?:\s|-){2}"], ["-", "--"])  # a counted repeat's parts follow each other: `-` then the newline
def test_where_the_flag_is_sure_the_fields_regex_matches(parts, heads):
    """headers._unsure_ends of a random header regex: on ASCII first lines with any line end, wherever the
    anchored header test flags the line and the line is not empty nor ends with a byte in the table, the fields'
    regex matches the line without its end; and it refuses the constructs RE2 and Python read otherwise."""
    from flinkdoctor.scan.headers import _anchored, _unsure_ends

    body = "^" + "".join(parts)
    table = _unsure_ends(body)
    if any(p in (r"\S", r"[^\s]", "$") for p in parts):
        assert table is None
        return
    if table is None or _anchored(body) is None:
        return
    pairs = [(head, end) for head in heads for end in ENDS]
    matched = _fields_match(body, [head for head, _ in pairs])
    if matched is None:
        return
    for (head, end), flagged, match in zip(pairs, _flags(body, [h + e for h, e in pairs]), matched, strict=True):
        if flagged and head and not table[ord(head[-1])]:
            assert match, (body, head, end)


@pytest.mark.parametrize(
    ("body", "line"),
    [
        (r"^a\s\s", "a\r\n"),  # two parts that take a line end, one after the other: `a` then `\r\n`
        (r"^a\s(b)?", "a\n"),  # an optional part last: the `\s` before it ends the match on the line end
    ],
)
def test_a_line_whose_end_the_header_takes_is_read_again(body, line):
    """review16b's surviving mutants: the header test flags `line` but the fields' regex does not match it
    without its end, so its last byte before the end must be in _unsure_ends' table (RE2 reads it again)."""
    from flinkdoctor.scan.headers import _unsure_ends

    table = _unsure_ends(body)
    head = line.rstrip("\r\n")
    assert _flags(body, [line]) == [True] and _fields_match(body, [head]) == [False]
    assert table is not None and table[ord(head[-1])]


def test_the_flag_is_sure_on_real_lines_of_every_layout():
    """On every real line and its look-alike variants (ASCII ones), with each line end: per layout the table
    holds; Flink's default layout's only unsure ending is `-` (its header's fields end `- `), and some layouts
    are refused (\\S, a message that is not `(?<msg>.*)$`)."""
    from flinkdoctor.scan.headers import flag_unsure

    plain = [line for line in lines() if line.isascii()]
    heads = plain + [line[:n] for line in plain[::50] for n in (20, 60, 90)] + [line + " - " for line in plain[::40]]
    proven = []
    for layout in load_layouts():
        table = flag_unsure(layout.id)
        if table is None:
            continue
        proven.append(layout.id)
        body = layout.header[: -len("(?<msg>.*)$")]
        for end in ("\n", "\r\n", ""):
            matched = _fields_match(body, heads)
            assert matched is not None
            for head, flagged, match in zip(heads, _flags(body, [h + end for h in heads]), matched, strict=True):
                if flagged and head and not table[ord(head[-1])]:
                    assert match, (layout.id, head, end)
    assert bytes(np.flatnonzero(flag_unsure("flink-log4j2")).astype(np.uint8)) == b"-"
    assert "flink-log4j2" in proven and flag_unsure("flink-logback") is None and flag_unsure("plain") is None


def test_a_flagged_line_ending_as_its_fields_do_is_read_again():
    """The lines the flag alone would get wrong: a Flink header line with nothing after its ` -`, flagged (the
    test's last \\s takes the newline) and not matched by the fields' regex, is read by RE2: its `ts` is null."""
    from flinkdoctor.scan.scanner import Part, _header_fields

    header = "2026-03-01 00:00:00,000 INFO  org.apache.Foo [main] -"
    good = "2026-03-01 00:00:00,001 INFO  org.apache.Foo [main] - hello"
    assert _flags(r"^(?<ts>\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3})\s+(?<level>INFO)\s+", [header + "\n"]) == [True]
    part = Part(0, "a.log", 0, 1, 1, "flink-log4j2", False, True)
    heads = pa.array([header, good])
    only = np.array([True, True])
    for flagged in (False, True):
        fields = _header_fields(part, heads, np.array([False, False]), only, flagged=flagged)
        assert fields["ts"].to_pylist() == [None, "2026-03-01 00:00:00,001"]


@pytest.mark.parametrize("layout", [layout.id for layout in load_layouts()])
def test_flagged_header_fields_are_the_regexs(layout):
    """scanner._header_fields with `flagged` (the rows with a header flagged by the layout's header test, their
    heads without the line end) gives every field the RE2 path gives: on every real line and look-alike
    variant, lines cut after their fields or ending in a blank, vertical tabs and \\x1c in their blanks, each
    with a line end, some rows without a header, most read only for their time."""
    from flinkdoctor.scan.headers import flag, header_test
    from flinkdoctor.scan.scanner import HEADER, Part, _header_fields

    test = header_test(layout)
    if test.anchored is None:
        return
    real = lines()
    heads = real + [line[:n] for line in real[::30] for n in (23, 57, 91)] + [line + " -" for line in real[::20]]
    heads += [line.replace(" ", "\x0b", 2) for line in real[::25]] + [
        line.replace(" ", "\x1c", 1) for line in real[::25]
    ]
    rng = np.random.default_rng(11)
    ends = rng.choice(ENDS, len(heads))
    values = pa.array([h + e for h, e in zip(heads, ends, strict=True)], pa.large_string())
    flagged = flag(test, values, test.anchored)
    headerless = ~flagged | (rng.random(len(heads)) < 0.1)
    only = rng.random(len(heads)) < 0.9
    part = Part(0, "a.log", 0, 1, 1, layout, False, True)
    want = _header_fields(part, pa.array(heads), headerless, only)
    got = _header_fields(part, pa.array(heads), headerless, only, flagged=True)
    for name in HEADER:
        assert got[name].to_pylist() == want[name].to_pylist(), name
    if layout == "flink-log4j2":
        assert any(want["ts"].to_pylist())


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text("ab\n\ré", max_size=8), max_size=12), st.data())
def test_first_lines_at_known_lengths_are_the_searched_ones(texts, data):
    """scanner._first_lines with the first lines' lengths known for some texts (-1: searched) gives the first
    lines the newline search gives, sliced arrays too."""
    from flinkdoctor.scan.scanner import _first_lines

    lengths = np.array(
        [len(t.split("\n", 1)[0].encode()) if data.draw(st.booleans()) else -1 for t in texts], dtype=np.int64
    )
    for array in (pa.array(texts), pa.array(["x\ny", *texts]).slice(1)):
        want = _first_lines(array).to_pylist()
        assert _first_lines(array, lengths).to_pylist() == want
        assert _first_lines(array, np.full(len(texts), -1)).to_pylist() == want


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from(["2026-03-01 00:00:00,000 WARN  a.B [t] - x", "\tat a.b(C.java:1)", "", "y", "\x00z"]),
        min_size=1,
        max_size=12,
    ),  # fmt: skip
    st.lists(st.sampled_from(["\n", "\r\n", "\r\r\n"]), min_size=12, max_size=12),
    st.booleans(),
)
def test_an_events_first_line_length_is_its_texts(rows, ends, last_end):
    """_Events._text_bounds' first lines' lengths: per event, the length of its text's first line as _batch cuts
    the text (its bounds, carriage returns before newlines taken out where the part has them), on lines with CRLF
    and LF ends, a carriage return more, empty lines, a last line without its end."""
    from flinkdoctor.scan.prefilter import spans
    from flinkdoctor.scan.scanner import MAX_EVENT_LINES, Part, _Events, _line_starts

    data = "".join(r + e for r, e in zip(rows, ends, strict=False))
    if not last_end:
        data = data[: len(data) - len(next(e for e in ("\r\r\n", "\r\n", "\n") if data.endswith(e)))]
    array = np.frombuffer(data.encode(), dtype=np.uint8)
    if not len(array):
        return
    after, crlf = _line_starts(array)
    starts = np.union1d(after[after < len(array)], [0])
    part = Part(0, "a.log", 0, len(array), len(array), "flink-log4j2", False, True)
    events = _Events(part, array, starts, np.ones(len(starts), bool), np.zeros(len(starts), bool), crlf)
    keep = np.arange(len(events.first))
    capped = np.minimum(events.last, events.first + MAX_EVENT_LINES - 1)
    begin, end, lengths = events._text_bounds(keep, capped)
    text = spans(array, begin, end)
    if crlf:
        text = pc.replace_substring(text, "\r\n", "\n")
    lines = [r + "\r" * (e == "\r\r\n") for r, e in zip(rows, ends, strict=False)]  # as the event's text holds it
    if not last_end:  # the last line without its end: none at all when it was empty
        lines[-1:] = [rows[-1]] if rows[-1] else []
    heads = [0] + [i for i, r in enumerate(rows) if i and r.startswith("2026")]
    texts = ["\n".join(lines[a:b]) for a, b in zip(heads, [*heads[1:], len(lines)], strict=True)]
    assert text.to_pylist() == texts
    assert lengths.tolist() == [len(t.split("\n", 1)[0].encode()) for t in texts]
