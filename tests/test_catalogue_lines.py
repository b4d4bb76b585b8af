"""The catalogue's pass matched line by line (scan/catalogue.py `line_hits`): each entry's regex is tried only on the
lines its Hyperscan pattern ended in, and a hit is the same as the whole event's, split into lines and every line
tried (`entry_hits`, which still decides for a text masking changed). Real logs of a lab recording
(tests/data/lab/1.20.3/network-buffers.tar.gz) with the small catalogue of test_catalogue_scan.py, as they are, with
CRLF line ends, with a GBK message in an exception line, and with a secret in one (hostile_input's)."""

from __future__ import annotations

import tarfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_catalogue_scan import small_catalogue

from conftest import DATA
from hostile_input import URL_SECRETS

BUNDLE = DATA / "lab" / "1.20.3" / "network-buffers.tar.gz"
TASKMANAGER = "flink-root-taskexecutor-0-vm.log"
GBK = "磁盘空间不足".encode("gbk")  # an OS message in a Chinese locale's encoding: not UTF-8


@pytest.fixture(scope="module")
def matcher(rules):
    from flinkdoctor.analytics import load_metrics
    from flinkdoctor.scan.matcher import build_matcher

    return build_matcher(rules, tuple(m.line for m in load_metrics()), catalogue=small_catalogue())


def _log(tmp_path: Path) -> bytes:
    with tarfile.open(BUNDLE) as archive:
        member = next(m for m in archive.getmembers() if m.name.endswith(TASKMANAGER))
        return archive.extractfile(member).read()


def _variants(data: bytes) -> dict[str, bytes]:
    """The log, and the same log with CRLF line ends, a GBK message appended to each IOException line, a secret
    URL appended to each IOException line (masking changes those events' text)."""
    io_line = b"java.io.IOException"
    assert data.count(io_line) > 3
    return {
        "as recorded": data,
        "crlf": data.replace(b"\n", b"\r\n"),
        "gbk": b"\n".join(line + b" " + GBK if io_line in line else line for line in data.split(b"\n")),
        "secret": b"\n".join(
            line + b" " + URL_SECRETS[0].encode() if io_line in line else line for line in data.split(b"\n")
        ),
    }


def _scanned(tmp_path: Path, name: str, data: bytes, matcher) -> list[dict]:
    from flinkdoctor.scan.events import SPLIT_BYTES, plan
    from flinkdoctor.scan.scanner import PartStats, scan_part
    from flinkdoctor.sources.ingest import ingest

    path = tmp_path / name / "taskmanager.log"
    path.parent.mkdir()
    path.write_bytes(data)
    manifest = ingest([path], tmp_path / name / "in")
    rows = []
    for part in [p for task in plan(manifest.text_sources, SPLIT_BYTES) for p in task]:
        for out in scan_part(part, matcher.prefilter, matcher):
            if not isinstance(out, PartStats):
                rows += out.to_pylist()
    return rows


def _whole_event_hits(matcher, row: dict) -> list[dict]:
    """What the scan recorded before line_hits: every entry tried on every line of the event's (masked) text."""
    from flinkdoctor.scan.catalogue import entry_hits
    from flinkdoctor.scan.headers import WARN_WORDS
    from flinkdoctor.scan.scanner import TRACE

    index = matcher.catalogue
    found = entry_hits(index, row["text"], range(len(index.ids)))
    evidence = row["level"] in WARN_WORDS or row["ts"] is None or TRACE.search(row["text"])
    return found if evidence else []


@pytest.mark.parametrize("variant", ["as recorded", "crlf", "gbk", "secret"])
def test_line_hits_are_the_whole_events_hits(tmp_path, matcher, monkeypatch, variant):
    from flinkdoctor.scan import scanner

    whole_event_calls = []
    original = scanner.entry_hits

    def counted(*args):
        whole_event_calls.append(args[1])
        return original(*args)

    monkeypatch.setattr(scanner, "entry_hits", counted)
    rows = _scanned(tmp_path, variant.replace(" ", "-"), _variants(_log(tmp_path))[variant], matcher)
    got = {(r["first_rel"], e["entry"], e["idx"]) for r in rows for e in r["entries"]}
    expected = {(r["first_rel"], e["entry"], e["idx"]) for r in rows for e in _whole_event_hits(matcher, r)}
    assert got == expected
    assert len({entry for _, entry, _ in got}) >= 2  # the IOException entry and at least one other
    if variant == "gbk":
        assert any("\ufffd" in r["text"] for r in rows if r["entries"])  # the bytes shown, replaced, still a hit
    if variant == "secret":  # only the events whose text masking changed are split whole and matched again
        masked = [text for text in whole_event_calls if "******" in text]
        assert masked and len(masked) == len(whole_event_calls)
        assert not any(URL_SECRETS[0] in r["text"] for r in rows)
    else:
        assert whole_event_calls == []


def test_the_pass_joins_the_lines_it_scans_as_they_are(tmp_path):
    """The catalogue's pass scans the chosen lines back to back: runs of adjacent lines are one slice each."""
    from flinkdoctor.scan.catalogue import _joined

    data = np.frombuffer(_log(tmp_path), dtype=np.uint8)
    starts = np.concatenate([[0], np.flatnonzero(data == 10) + 1])[:-1]
    ends = np.append(starts[1:], len(data))
    chosen = np.sort(np.random.default_rng(25).choice(len(starts), size=len(starts) // 3, replace=False))
    chosen = np.unique(np.concatenate([chosen, chosen[:50] + 1]))  # some adjacent runs
    chosen = chosen[chosen < len(starts)]
    expected = b"".join(data[a:b].tobytes() for a, b in zip(starts[chosen], ends[chosen], strict=True))
    assert _joined(data, starts[chosen], ends[chosen]) == expected


@pytest.mark.parametrize("variant", ["as recorded", "crlf", "no last newline"])
def test_the_pass_finds_per_distinct_line_what_one_pass_over_the_lines_finds(tmp_path, variant):
    """candidates() scans each distinct line once, and only the patterns that may match a newline over the lines
    as they follow each other: the same (line, entry) pairs as every pattern over the lines back to back, each
    file's on its own. Real lines (their stack frames repeat), chosen with gaps and adjacent runs, cut into three
    files, with the small catalogue and entries whose regexes run across lines (a blank class, a negated class,
    a back reference)."""
    from types import SimpleNamespace

    from flinkdoctor.scan.catalogue import _joined, candidates, catalogue_index
    from flinkdoctor.scan.prefilter import compile_patterns, distinct

    spanning = [
        r"Insufficient number of network buffers:\s+required",
        r"java\.io\.IOException[^@]{0,80}at org\.apache",
        r"(\w+)Exception: \1 in",
        r"to FAILED with failure cause:[\s\S]*?Insufficient",
    ]
    # entries that start on a byte of a line's timestamp, or across its end: run on whole lines (the others on
    # the lines after their timestamps)
    prefixed = [r"\d\d,\d{3} WARN ", r":\d\d,\d+ INFO  org\.apache", r"\d+ bytes each", r" - Source: "]
    entries = list(small_catalogue().entries)
    entries += [SimpleNamespace(id=f"test:{i}", regex=regex) for i, regex in enumerate(spanning)]
    entries += [SimpleNamespace(id=f"prefixed:{i}", regex=regex) for i, regex in enumerate(prefixed)]
    index = catalogue_index(SimpleNamespace(entries=entries))
    assert index is not None and len(index.spanning) >= len(spanning)
    assert len(set(index.on_prefix) - set(index.spanning)) == len(prefixed)  # run on whole lines
    log = _log(tmp_path)
    log = {"crlf": log.replace(b"\n", b"\r\n"), "no last newline": log.rstrip(b"\n")}.get(variant, log)
    data = np.frombuffer(log, dtype=np.uint8)
    starts = np.concatenate([[0], np.flatnonzero(data == 10) + 1])
    starts = starts[starts < len(data)]
    ends = np.append(starts[1:], len(data))
    chosen = np.sort(np.random.default_rng(25).choice(len(starts), size=len(starts) // 2, replace=False))
    chosen = np.unique(np.concatenate([chosen, chosen[:200] + 1, [len(starts) - 1]]))
    chosen = chosen[chosen < len(starts)]
    begin, end = starts[chosen], ends[chosen]
    files = np.array([len(chosen) // 3, 2 * len(chosen) // 3])

    one_pass = compile_patterns(index.patterns)
    joined = _joined(data, begin, end)
    at = np.cumsum(end - begin) - (end - begin)
    found: list[int] = []
    bounds = [0, *at[files].tolist(), len(joined)]
    for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
        one_pass.scan(joined[lo:hi], match_event_handler=lambda p, s, e, f, c, lo=lo: found.extend((p, e + lo)))
    pattern, stop = np.array(found[0::2]), np.array(found[1::2])
    span = np.searchsorted(at, stop - 1, side="right") - 1
    pattern, span = np.divmod(distinct(pattern * len(begin) + span), len(begin))
    expected = {(s, e) for p, s in zip(pattern.tolist(), span.tolist(), strict=True) for e in index.entries_of[p]}

    spans, numbers = candidates(index, data, begin, end, files)
    got = list(zip(spans.tolist(), numbers.tolist(), strict=True))
    assert len(got) == len(set(got)) and set(got) == expected
    assert {f"test:{i}" for i in range(len(spanning))} <= {index.ids[e] for _, e in got}
    assert {f"prefixed:{i}" for i in range(len(prefixed))} <= {index.ids[e] for _, e in got}
    alone = set()  # the pairs each line holds on its own
    for s in {s for s, _ in got}:
        one_pass.scan(data[begin[s] : end[s]].tobytes(), match_event_handler=lambda p, *_, s=s: alone.add((s, p)))
    alone_entries = {(s, e) for s, p in alone for e in index.entries_of[p]}
    assert any(pair not in alone_entries for pair in got)  # some only across lines
    assert len({data[a:b].tobytes() for a, b in zip(begin, end, strict=True)}) < len(begin) * 0.8  # lines repeat


def test_a_files_last_line_without_a_newline_runs_into_nothing(tmp_path):
    """A file's last line without a newline (a joined small file's) ends a piece of the per-distinct-line pass: a
    pattern within a line does not match from its end into the next distinct line, the next file's first."""
    import re
    from types import SimpleNamespace

    from flinkdoctor.scan.catalogue import candidates, catalogue_index

    lines = _log(tmp_path).split(b"\n")[:20]
    first, second = b"\n".join(lines[:10]), b"\n".join(lines[10:]) + b"\n"  # the first without its last newline
    across = re.escape(lines[9][-8:].decode()) + re.escape(lines[10][:8].decode())
    within = re.escape(lines[10].decode())  # the whole line
    index = catalogue_index(
        SimpleNamespace(
            entries=[SimpleNamespace(id="across", regex=across), SimpleNamespace(id="within", regex=within)]
        )
    )
    assert index is not None and not index.spanning
    data = np.frombuffer(first + second, dtype=np.uint8)
    begin = np.array([0, *(np.flatnonzero(data[:-1] == 10) + 1), len(first)])
    begin = np.unique(begin)
    end = np.append(begin[1:], len(data))
    spans, numbers = candidates(index, data, begin, end, np.array([10]))
    assert [(int(s), index.ids[e]) for s, e in zip(spans, numbers, strict=True)] == [(10, "within")]
    assert [found.tolist() for found in candidates(index, data, begin[:2], begin[:2])] == [[], []]  # empty spans


def test_rows_without_matches_are_built_from_offsets_as_python_lists_would_be():
    """The matches', entries' and repeats' columns of a part where most rows hold none (a production part's
    checkpoint lines): the same arrays as Arrow builds from one Python list per row."""
    import pyarrow as pa

    from flinkdoctor.scan.scanner import _entries_type, _matches_type, _repeats, _sparse_lists

    lists = {
        1: [{"entry": "jdk:eae3171d2a0a", "idx": 3}],
        4: [{"entry": "flink:c8e958a5b1b3", "idx": 0}, {"entry": "jdk:eae3171d2a0a", "idx": 7}],
    }
    rows = [lists.get(i, []) for i in range(6)]
    assert _sparse_lists(6, lists, _entries_type()).equals(pa.array(rows, type=_entries_type()))
    assert _sparse_lists(3, {}, _matches_type()).equals(pa.array([[], [], []], type=_matches_type()))
    match = [{"rule": "jvm-heap-oom", "captures": [("job_id", "x")], "idx": 2}]
    assert _sparse_lists(2, {0: match}, _matches_type()).equals(pa.array([match, []], type=_matches_type()))
    keep = np.array([2, 5, 9, 11], dtype=np.int64)
    assert _repeats(keep, {5: 7, 11: 2, 30: 4}).tolist() == [1, 7, 1, 2]
    assert _repeats(keep, {}).tolist() == [1, 1, 1, 1]


def _events_of(data: bytes, files: list[int] | None = None):
    """scanner._Events over `data` as a part of a whole file (or of whole files joined at `files`, their first
    bytes) of Flink's default layout, and each event's capped last line."""
    from flinkdoctor.scan.scanner import MAX_EVENT_LINES, Part, _Events, _Files, _line_starts

    array = np.frombuffer(data, dtype=np.uint8)
    after, crlf = _line_starts(array)
    offsets = np.array(files or [0], dtype=np.int64)
    starts = np.union1d(after[after < len(array)], offsets)
    bounds = [*offsets.tolist(), len(array)]
    parts = [
        Part(i, f"{i}.log", 0, b - a, b - a, "flink-log4j2", False, True)
        for i, (a, b) in enumerate(zip(bounds[:-1], bounds[1:], strict=True))
    ]
    joined = None if files is None else _Files(parts, offsets, np.searchsorted(offsets, starts, side="right") - 1)
    ones, none = np.ones(len(starts), dtype=bool), np.zeros(len(starts), dtype=bool)
    events = _Events(parts[0], array, starts, ones, none, crlf, joined)
    return events, np.minimum(events.last, events.first + MAX_EVENT_LINES - 1)


def test_an_event_framed_by_its_bytes_holds_a_trace(tmp_path):
    """scanner._Events._framed, a stack frame `\\tat ` and a printable ASCII character at a line's start in the
    bytes: every event it flags is one TRACE matches in its text (the test _entry_hits then skips), and it flags
    nearly all of those (RE2 reads the rest); on the lab log as recorded and with CRLF line ends."""
    from flinkdoctor.scan.prefilter import spans
    from flinkdoctor.scan.scanner import TRACE

    for data in (_log(tmp_path), _log(tmp_path).replace(b"\n", b"\r\n")):
        events, capped = _events_of(data)
        every = np.arange(len(events.first))
        texts = spans(events.data, *events._text_bounds(every, capped)[:2]).to_pylist()
        framed = events._framed(every, capped)
        traced = np.array([TRACE.search(text) is not None for text in texts])
        assert framed.any() and not (framed & ~traced).any()
        assert framed.sum() >= 0.9 * traced.sum()


def test_a_frame_is_not_read_into_the_next_joined_file():
    """A joined file's last line `\\tat` without its newline, the next file starting with ` ` and a name: no
    frame (the bytes after a file's last are the next file's); with the name in the same file, one. An event's
    last line `\\tat ` with nothing after it is none either (TRACE needs a character that is no space)."""
    from flinkdoctor.scan.scanner import TRACE

    header = b"2026-03-01 00:00:00,000 INFO  org.apache.Foo [main] - failed\n"
    for tail, framed in ((b"\tat", False), (b"\tat ", False), (b"\tat Foo", True)):
        first = header + tail
        events, capped = _events_of(first + b"Foo.bar(Foo.java:1)\n" + header, files=[0, len(first)])
        assert events._framed(np.array([0]), capped).tolist() == [framed]
    events, capped = _events_of(header + b"\tat \n" + header)
    assert events._framed(np.array([0, 1]), capped).tolist() == [False, False]
    assert not TRACE.search((header + b"\tat ").decode())


def test_a_frame_names_something_printable_and_ascii():
    """`\\tat ` then a space, a control character or a character beyond ASCII (U+0085 and U+00A0, spaces to
    Python's and the Unicode RE2 rewrite's `\\s`) is not known to be a named frame by its bytes (RE2 reads its
    text: `\\tat \\u00a0x` is TRACE's); `\\tat Foo` and `\\tat ~` are, and TRACE finds them."""
    from flinkdoctor.scan.scanner import TRACE

    header = b"2026-03-01 00:00:00,000 INFO  org.apache.Foo [main] - failed\n"
    cases = [(b" x", False), (b"\x1fx", False), ("\u0085x".encode(), False), ("\u00a0x".encode(), False)]
    for after, framed in [*cases, (b"Foo.bar(Foo.java:1)", True), (b"~", True)]:
        line = b"\tat " + after + b"\r\n"
        events, capped = _events_of(header + line + header)
        assert events._framed(np.array([0]), capped).tolist() == [framed], after
        assert not framed or TRACE.search((header + line).decode())


def test_lines_all_empty_are_their_own_rests():
    """catalogue._rests of lines with no bytes at all (hypothesis drew it once by chance: numpy then indexed an
    empty buffer): each rest is its empty line."""
    import numpy as np

    from flinkdoctor.scan.catalogue import _binary, _rests

    for count in (1, 3):
        assert _rests(_binary(b"", np.zeros(count + 1, dtype=np.int64))).to_pylist() == [b""] * count


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.binary(max_size=40).map(lambda b: bytes(c for c in b if c != 10)), min_size=1, max_size=8), st.data()
)
def test_a_lines_rest_starts_after_its_own_prefix_bytes_only(lines, data):
    """catalogue._rests: each span's rest is the span after its leading bytes of PREFIX_BYTES, never past the
    span (a file's last line has no newline, and the next file's first line follows it at once: a span of
    prefix bytes alone took the next one's into its skip in review15b's surviving mutant), whatever its other
    bytes (not UTF-8 here)."""
    import numpy as np

    from flinkdoctor.scan.catalogue import PREFIX_BYTES, _binary, _rests

    prefixes = st.sampled_from([b"2026-11-27 ", b"1", b"", b"12:00 ", b"9" * 40])
    spans = [data.draw(prefixes) + line + data.draw(st.sampled_from([b"\n", b""])) for line in lines]
    joined = b"".join(spans)
    sizes = np.array([len(span) for span in spans], dtype=np.int64)
    rests = _rests(_binary(joined, np.append(np.cumsum(sizes) - sizes, len(joined)))).to_pylist()
    for span, rest in zip(spans, rests, strict=True):
        skip = next((i for i, byte in enumerate(span) if byte not in PREFIX_BYTES), len(span))
        assert rest == span[skip:]


# regexes whose match on a line after its timestamp reads what comes before the match's start, or that may start
# in the timestamp: each must be tried on the whole line (catalogue._reads_on False), with a line where the rest's
# answer differs from the line's
WHOLE_LINE = [
    (r"\bE", "2026-01-01 5E"),  # a word boundary at the start
    (r"(?<!\d)E", "2026-01-01 5E"),  # a look-behind
    (r"(\bE)x", "2026-01-01 5Ex"),  # ... inside a group
    (r"(?:\bE){1,2}", "2026-01-01 5E"),  # ... a repeat
    (r"x|\bF", "2026-01-01 5F"),  # ... an alternative
    (r"(?>\bE)", "2026-01-01 5E"),  # ... an atomic group
    (r"E(?=(?<=5E))", "2026-01-01 5E"),  # ... a look-ahead holding a look-behind
    (r"^E", "2026-01-01 E"),  # an anchor at the start
    (r"(?:(?=\d)\d*)E", "2026-01-01 5E"),  # a first node that matches an empty string, dropped by the pattern
    (r"\d+ E", "2026-01-01 5 E"),  # a first node that starts on a timestamp's bytes
]
# regexes that read only from their match's start on, and cannot start on such a byte: tried on the rest
ON_REST = [r"E(?=x)", r"E$", r"(?:Ex|F)+y?", r"[A-Z]\w+Exception: \d+"]


@pytest.mark.parametrize(("regex", "line"), WHOLE_LINE)
def test_a_regex_that_reads_before_its_match_is_tried_on_the_whole_line(regex, line):
    """catalogue._reads_on: False for each way a regex reads before its match's start or may start in a line's
    timestamp, and the line's answer is not its rest's (so line_hits, keyed by rests, would answer wrong)."""
    from flinkdoctor.knowledge.regexes import python_regex
    from flinkdoctor.scan.catalogue import PREFIX_CHARS, _reads_on

    rest = line.lstrip(PREFIX_CHARS)
    assert (python_regex(regex).search(line) is None) != (python_regex(regex).search(rest) is None)
    assert not _reads_on(regex)


@pytest.mark.parametrize("regex", ON_REST)
def test_a_regex_that_reads_forward_only_is_tried_on_rests(regex):
    from flinkdoctor.scan.catalogue import _reads_on

    assert _reads_on(regex)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from([r for r, _ in WHOLE_LINE] + ON_REST), st.text("0123456789-:,. EFxy5\u00e9", max_size=12))
def test_a_regex_tried_on_rests_answers_as_on_the_line(regex, line):
    """Where _reads_on says a rest answers for its line, Python's `re` finds a match in both or in neither."""
    from flinkdoctor.knowledge.regexes import python_regex
    from flinkdoctor.scan.catalogue import PREFIX_CHARS, _reads_on

    if _reads_on(regex):
        pattern = python_regex(regex)
        assert (pattern.search(line) is None) == (pattern.search(line.lstrip(PREFIX_CHARS)) is None)


def test_line_hits_decide_each_entry_on_its_lines_as_the_lines_read(monkeypatch):
    """line_hits keyed by rests: header lines that differ by their time only share a rest, and every entry's hit
    is its regex's answer on the line itself, for an entry tried on rests and one that must read whole lines
    (a word boundary on a time's last digit); a frame line holds no hit, whatever its rest."""
    from types import SimpleNamespace

    import pyarrow as pa

    from flinkdoctor.knowledge.regexes import python_regex
    from flinkdoctor.scan import catalogue
    from flinkdoctor.scan.catalogue import candidates, catalogue_index, line_hits

    entries = (SimpleNamespace(id="rest", regex=r"Ex(?:ception)?: \w+"), SimpleNamespace(id="whole", regex=r"\bEx"))
    index = catalogue_index(SimpleNamespace(entries=entries))
    lines = [
        "2026-01-01 00:00:00,001 Ex: boom",  # both (a boundary after the blank)
        "2026-01-01 00:00:00,002 Ex: boom",  # the same rest
        "2026-01-01 00:00:00,0035Ex: boom",  # the same rest, no boundary before it: `rest` only
        "... 5Ex: boom",  # no frame (`...` then a digit and a word): `rest` only
        "\t... 3 more Ex: boom",  # a frame: neither
        "Exception: boom",  # both, no time
    ]
    data = np.frombuffer("".join(line + "\n" for line in lines).encode(), dtype=np.uint8)
    starts = np.cumsum([0] + [len(line) + 1 for line in lines])
    spans, numbers = candidates(index, data, starts[:-1], starts[1:])
    assert len(spans)

    def texts(at):
        return pa.array([lines[i] for i in at.tolist()])

    searched = []

    class Counted:
        def __init__(self, regex):
            self.pattern = python_regex(regex)

        def search(self, text):
            searched.append(text)
            return self.pattern.search(text)

    monkeypatch.setattr(catalogue, "python_regex", Counted)
    events = np.arange(len(lines))  # one event per line
    found = line_hits(index, events[spans], numbers, spans, events, texts)
    hits = {event: sorted(hit["entry"] for hit in rows) for event, rows in found.hits.items()}
    assert hits == {0: ["rest", "whole"], 1: ["rest", "whole"], 2: ["rest"], 3: ["rest"], 5: ["rest", "whole"]}
    # `rest` tried once per distinct rest (2: "Ex: boom", "Exception: boom"), `whole` per line but the frame (5)
    assert sorted(searched) == sorted(["Ex: boom", lines[5], *(lines[i] for i in (0, 1, 2, 3, 5))])


def test_an_event_is_framed_by_any_of_its_lines_up_to_its_cap(monkeypatch):
    """_framed reads each event's second and third lines first, then every line of the others: the same answer
    as every line read, for a frame on the second, third or fifth line, none, one past the event's cap (not
    read), and a one-line event at a joined file's end whose next line (the next file's first) is a frame. The
    lines read: the second lines, the third lines of events not framed by their second, then every line of the
    events framed by neither."""
    from flinkdoctor.scan import scanner
    from flinkdoctor.scan.scanner import MAX_EVENT_LINES

    header = b"2026-03-01 00:00:00,000 INFO  org.apache.Foo [main] - failed\n"
    frame = b"\tat a.B.c(B.java:1)\n"
    events = [
        header + frame + frame,
        header + b"java.io.IOException: x\n" + frame,
        header + b"a\nb\nc\n" + frame,
        header,
        header + b"a\nb\n",
        header + b"m\n" * MAX_EVENT_LINES + frame,
        header + b"m\n" * (MAX_EVENT_LINES - 2) + frame,
        header,
    ]
    first = b"".join(events)
    scanned, capped = _events_of(first + frame + header, files=[0, len(first)])
    every = np.arange(len(scanned.first))
    expected = []
    for event in every.tolist():
        lines = range(scanned.first[event], capped[event] + 1)
        expected.append(any(bytes(scanned.data[scanned.starts[i] : scanned.starts[i] + 5]) == b"\tat a" for i in lines))
    assert expected == [True, True, True, False, False, False, True, False, True, False]
    read = []
    named = scanner._named_frame
    monkeypatch.setattr(scanner, "_named_frame", lambda data, at, top: read.append(len(at)) or named(data, at, top))
    assert scanned._framed(every, capped).tolist() == expected
    assert read == [6, 5, 5 + 1 + 3 + MAX_EVENT_LINES + MAX_EVENT_LINES + 1 + 1 + 1]
    assert scanned._framed(every[::-1], capped).tolist() == expected[::-1]


def test_a_header_is_flagged_on_its_own_line_only():
    """_Events flags the lines that can start a header with RE2 in place, each its own value, and the lines up to
    the next such line as one value: a line whose header regex would match only with the next line's bytes
    (`\\s+` taking the newline and the next line's blank before `- `) is no header, as when each line is read
    alone; a line that cannot start one (a frame) is none either, and the lines read are the headers'."""
    from flinkdoctor.scan.headers import header_fields

    header = "2026-03-01 00:00:00,000 INFO  org.apache.Foo [main] - failed\n"
    split = "2026-03-01 00:00:01,000 WARN  org.apache.Foo [main]\n - not a header\n"
    lines = [header, "\tat a.B.c(B.java:1)\n", split, header, "java.io.IOException\n", header]
    events, _ = _events_of("".join(lines).encode())
    alone = [bool(header_fields("flink-log4j2", line.split("\n")[0])) for line in "".join(lines).splitlines(True)]
    assert alone == [True, False, False, False, True, False, True]
    assert events.header.tolist() == alone
