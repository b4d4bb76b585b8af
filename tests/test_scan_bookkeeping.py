"""The scan's own bookkeeping between its regex engines, done in bulk, with the answers of the plain way. The
Hyperscan pass's (pattern, event) pairs (prefilter._pairs), the catalogue's entries of each pattern it found
(CatalogueIndex.entry_arrays) and hits per event (catalogue._by_event), and a signature's regexes compiled once
per worker (matcher._Signature). Real logs of a lab recording (tests/data/lab/1.20.3/network-buffers.tar.gz, its
TaskManager), with the rules, the metrics and the small catalogue of test_catalogue_scan.py."""

from __future__ import annotations

import re
import tarfile
from types import SimpleNamespace

import numpy as np
import pytest
from test_catalogue_scan import small_catalogue

from conftest import DATA

BUNDLE = DATA / "lab" / "1.20.3" / "network-buffers.tar.gz"
TASKMANAGER = "flink-root-taskexecutor-0-vm.log"


@pytest.fixture(scope="module")
def log() -> bytes:
    with tarfile.open(BUNDLE) as archive:
        member = next(m for m in archive.getmembers() if m.name.endswith(TASKMANAGER))
        data = archive.extractfile(member).read()
    assert data.count(b"\tat ") > 100  # stack traces: their frames are most matches of the pass
    return data


@pytest.fixture(scope="module")
def matcher(rules):
    from flinkdoctor.analytics import load_metrics
    from flinkdoctor.scan.matcher import build_matcher

    return build_matcher(rules, tuple(m.line for m in load_metrics()), catalogue=None)


def _events(data: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Events cut at each line that starts with a year (a log4j header), and where each one's first line ends."""
    newlines = np.flatnonzero(data == 10)
    starts = np.append(0, newlines + 1)
    starts = starts[starts < len(data)]
    headed = starts[(data[starts] == ord("2")) & (data[np.minimum(starts + 4, len(data) - 1)] == ord("-"))]
    begin = np.unique(np.append(0, headed))
    return begin, np.append(newlines + 1, len(data))[np.searchsorted(newlines, begin)]


def test_the_pass_pairs_its_matches_as_a_sort_of_pattern_and_event_would(matcher, log, monkeypatch):
    """The matches of a pass come by their end, so their events ascend, and a stable sort of their patterns'
    numbers alone gives each (pattern, event) pair once, in the order of a sort of (pattern * events + event):
    the same events per pattern, without that sort (it is not called). Matches in another order take it."""
    from flinkdoctor.scan import prefilter

    data = np.frombuffer(log, dtype=np.uint8)
    begin, first_line_end = _events(data)
    hits = prefilter.scan(matcher.prefilter, data, begin, first_line_end)
    assert hits.which is not None and hits.stop is not None
    event = np.searchsorted(begin, hits.stop - 1, side="right") - 1
    assert (np.diff(event) >= 0).all() and len(event) > 500
    n = len(begin)
    pattern, of = np.divmod(np.unique(hits.which * n + event), n)
    want = {p: of[pattern == p].tolist() for p in np.unique(pattern).tolist()}
    assert {p: events.tolist() for p, events in hits.by_pattern.items()} == want
    assert max(len(events) for events in want.values()) < np.bincount(hits.which).max()  # pairs repeat

    def no_sort(values):
        raise AssertionError("matches in order are not sorted by (pattern, event)")

    monkeypatch.setattr(prefilter, "distinct", no_sort)
    got = prefilter._pairs(n, hits.which, event)
    assert got[0].tolist() == pattern.tolist() and got[1].tolist() == of.tolist()
    monkeypatch.undo()
    shuffled = np.random.default_rng(25).permutation(len(event))
    got = prefilter._pairs(n, hits.which[shuffled], event[shuffled])
    assert got[0].tolist() == pattern.tolist() and got[1].tolist() == of.tolist()
    assert [a.tolist() for a in prefilter._pairs(n, event[:0], event[:0])] == [[], []]


def test_the_entries_of_each_pattern_found_are_read_from_arrays_in_the_index(log):
    """candidates() gives each (span, entry) pair of the patterns the pass found, the entries of a pattern that
    stands for several (two entries of one regex) each in order: the same pairs, in the same order, as reading
    each pattern's `entries_of`, from arrays the index holds."""
    from flinkdoctor.scan.catalogue import candidates, catalogue_index

    entries = list(small_catalogue().entries)
    entries += [SimpleNamespace(id=f"twin:{e.id}", regex=e.regex) for e in entries]
    index = catalogue_index(SimpleNamespace(entries=entries))
    assert index is not None and max(len(of) for of in index.entries_of) == 2
    bounds, flat = index.entry_arrays
    assert [flat[a:b].tolist() for a, b in zip(bounds[:-1], bounds[1:], strict=True)] == [
        list(of) for of in index.entries_of
    ]
    data = np.frombuffer(log, dtype=np.uint8)
    starts = np.concatenate([[0], np.flatnonzero(data == 10) + 1])
    starts = starts[starts < len(data)]
    ends = np.append(starts[1:], len(data))
    spans, numbers = candidates(index, data, starts, ends)
    assert any(entries[number].id.startswith("twin:") for number in numbers.tolist())
    # as each pattern's entries read in turn: by pattern, then span, each pattern's entries in their order
    pattern_of = {entry: p for p, of in enumerate(index.entries_of) for entry in of}
    patterns = [pattern_of[number] for number in numbers.tolist()]
    assert patterns == sorted(patterns)
    runs: dict[tuple[int, int], list[int]] = {}
    for span, number, pattern in zip(spans.tolist(), numbers.tolist(), patterns, strict=True):
        runs.setdefault((pattern, span), []).append(number)
    assert all(found == list(index.entries_of[pattern]) for (pattern, _), found in runs.items())


def test_the_hits_of_each_event_are_a_slice_of_them_in_order():
    """_by_event: the values of each event (events ascending, one per value), in order, one list per event."""
    from flinkdoctor.scan.catalogue import _by_event

    events = np.array([3, 3, 5, 9, 9, 9], dtype=np.int64)
    assert _by_event(events, ["a", "b", "c", "d", "e", "f"]) == {3: ["a", "b"], 5: ["c"], 9: ["d", "e", "f"]}
    assert _by_event(events[:0], []) == {}


def test_a_signature_compiles_its_regexes_once_and_reads_captures_and_line_by_position(rules, monkeypatch):
    """A signature's regexes are compiled when it is first tried, not looked up per event; its captures come
    from the regex that holds the group, and the line from its text regex, whichever field comes first. A
    TaskManager's lines of a lab recording (network-buffers: a task switched to FAILED, its cause below)."""
    from flinkdoctor.knowledge.rulebook import Capture, Rule, Signature
    from flinkdoctor.scan import matcher as matching

    with tarfile.open(BUNDLE) as archive:
        member = next(m for m in archive.getmembers() if m.name.endswith(TASKMANAGER))
        lines = archive.extractfile(member).read().decode("utf-8").split("\n")
    at = next(i for i, line in enumerate(lines) if "to FAILED with failure cause" in line)
    text = "\n".join(lines[at : at + 6])
    assert "Insufficient number of network buffers" in text
    signature = Signature(
        message=r"switched from (?<from>\w+) to FAILED",
        text=r"Insufficient number of network buffers: required (?<required>\d+)",
    )
    captures = {name: Capture(name, "text") for name in ("from", "required")}
    rule = Rule("t", "t", "other", "cause", (signature,), "", (), "t.yaml", captures=captures)
    built = matching.build_matcher([rule], catalogue=None)
    header, _, message = lines[at].partition(" - ")
    event = matching.Fields(text, message, "WARN", "org.apache.flink.runtime.taskmanager.Task", "t", "taskmanager")
    first = built.match(event, [0])
    line = next(i for i, line in enumerate(text.split("\n")) if "Insufficient number" in line)
    assert first == [("t", {"from": "DEPLOYING", "required": first[0][1]["required"]}, line)]
    assert first[0][1]["required"].isdigit() and line > 0

    def no_compile(regex):
        raise AssertionError(f"compiled again per event: {regex}")

    monkeypatch.setattr(matching, "python_regex", no_compile)
    assert built.match(matching.Fields(text, message, "WARN", None, None, "taskmanager"), [0]) == first


def test_a_signature_of_the_header_alone_keeps_its_decisions_but_not_those_a_later_line_made():
    """A signature that reads no text (message, logger, thread) decides once per distinct header fields when its
    message regex matched the header's message: the same decision, shared, for the next event with the same
    fields. When the message was found on a later line of the text instead, the text decided: the next event
    with the same header but other lines is decided again (it does not match). Lines of a lab recording."""
    from flinkdoctor.knowledge.rulebook import Capture, Rule, Signature
    from flinkdoctor.scan import matcher as matching

    with tarfile.open(BUNDLE) as archive:
        member = next(m for m in archive.getmembers() if m.name.endswith(TASKMANAGER))
        lines = archive.extractfile(member).read().decode("utf-8").split("\n")
    at = next(i for i, line in enumerate(lines) if "to FAILED with failure cause" in line)
    failed, cause = lines[at].partition(" - ")[2], lines[at + 1]
    signature = Signature(message=r"switched from (?<from>\w+) to FAILED")
    rule = Rule("t", "t", "other", "cause", (signature,), "", (), "t.yaml", captures={"from": Capture("from")})
    built = matching.build_matcher([rule], catalogue=None)
    task = "org.apache.flink.runtime.taskmanager.Task"
    first = built.match(matching.Fields(lines[at], failed, "WARN", task, "t", "taskmanager"), [0])
    again = built.match(matching.Fields(lines[at] + "\n" + cause, failed, "WARN", task, "t", "taskmanager"), [0])
    assert first == [("t", {"from": "DEPLOYING"}, 0)] and again[0] is first[0]  # decided once, shared
    pasted = matching.Fields(cause + "\n" + lines[at], cause, None, None, None, "taskmanager")
    assert built.match(pasted, [0]) == [("t", {"from": "DEPLOYING"}, 1)]  # on the text's second line
    alone = matching.Fields(cause, cause, None, None, None, "taskmanager")
    assert built.match(alone, [0]) == []  # the same header fields, no such line: not the pasted one's answer
    assert built.signatures[0]._decided == {(failed, task, "t"): first[0]}


def test_a_lines_rest_is_what_follows_its_leading_timestamp_bytes(log):
    """catalogue._rests: each line without its leading bytes of PREFIX_BYTES, whatever the line: a log4j header's
    time and the blank after it, a line of digits only, a blank line, a frame, a piece's marker byte first, a
    line of more such bytes than a timestamp holds. On a lab TaskManager's header lines
    some rests repeat where the lines do not (they differ by their times; a replayed corpus repeats most)."""
    from flinkdoctor.scan.catalogue import _binary, _rests

    header = next(line for line in log.split(b"\n") if line.startswith(b"2026-"))
    lines = [header + b"\n", b"12345", b"\n", b"\tat x.y(Z.java:1)\r\n", b"\x002026-11-22 x\n", b"1 " * 40 + b"x\n"]
    joined = b"".join(lines)
    offsets = np.cumsum([0] + [len(line) for line in lines])
    rests = _rests(_binary(joined, offsets)).to_pylist()
    assert rests == [header[24:] + b"\n", b"", b"\n", lines[3], lines[4], b"x\n"]
    assert header[:24].decode().count(":") == 2 and header[24:25] not in b"0123456789-:,. "
    headers = [line + b"\n" for line in log.split(b"\n") if line.startswith(b"2026-")]
    offsets = np.cumsum([0] + [len(line) for line in headers])
    rests = set(_rests(_binary(b"".join(headers), offsets)).to_pylist())
    assert len(set(headers)) > 1000 and len(rests) < 0.9 * len(set(headers))  # (879 of 1,036)


def test_a_signature_ships_without_what_a_worker_keeps(matcher):
    """A signature pickled after it matched (as a driver's matcher could be, for its tasks) holds its fields
    only: its compiled regexes and kept decisions are worked out again where it is unpickled."""
    import pickle

    from flinkdoctor.scan import matcher as matching

    number, signature = next(
        (n, s) for n, s in matcher.signatures.items() if s.kinds is None and not s.levels and s._decided is not None
    )
    event = matching.Fields("x", "x", None, None, None, "flink-taskmanager")
    matcher.match(event, [number])
    assert {"_compiled", "_decided"} <= set(vars(signature))
    shipped = pickle.loads(pickle.dumps(signature))
    assert shipped == signature and not {"_compiled", "_decided"} & set(vars(shipped))
    assert shipped.match(event) == signature.match(event)


def test_an_entry_whose_first_bytes_are_unknown_runs_on_whole_lines(monkeypatch, tmp_path):
    """An entry whose first bytes cannot be worked out stays a candidate: its pattern is run on whole lines (a
    line's timestamp not skipped), as one that may start on a timestamp's byte."""
    from flinkdoctor.scan import catalogue

    def unknown(regex):
        raise ValueError(regex)

    monkeypatch.setenv("FLINKDOCTOR_STATE_DIR", str(tmp_path))
    monkeypatch.setattr(catalogue, "first_bytes", unknown)
    entries = [SimpleNamespace(id="a", regex=r"Insufficient number of network buffers")]
    index = catalogue.catalogue_index(SimpleNamespace(entries=entries))
    assert index is not None and index.patterns and index.on_prefix == (0,) and index.entries_of == ((0,),)


def test_a_signature_that_reads_the_text_decides_each_event_and_the_kept_decisions_are_bounded(monkeypatch):
    """A signature with a text regex keeps no decision: two events with the same header fields but other lines
    get their own answers (review14a: keeping them for `exception` signatures only changed 44 answers). And a
    header-only signature keeps at most DECIDED_PER_SIGNATURE decisions (a part's distinct messages are many)."""
    from flinkdoctor.knowledge.rulebook import Rule, Signature
    from flinkdoctor.scan import matcher as matching

    with tarfile.open(BUNDLE) as archive:
        member = next(m for m in archive.getmembers() if m.name.endswith(TASKMANAGER))
        lines = archive.extractfile(member).read().decode("utf-8").split("\n")
    at = next(i for i, line in enumerate(lines) if "to FAILED with failure cause" in line)
    failed, cause = lines[at].partition(" - ")[2], lines[at + 1]
    signature = Signature(message=r"to FAILED", text=r"(?m)^" + re.escape(cause.split(":")[0]))
    rule = Rule("t", "t", "other", "cause", (signature,), "", (), "t.yaml")
    built = matching.build_matcher([rule], catalogue=None)
    task = "org.apache.flink.runtime.taskmanager.Task"
    with_cause = matching.Fields(lines[at] + "\n" + cause, failed, "WARN", task, "t", "taskmanager")
    without = matching.Fields(lines[at], failed, "WARN", task, "t", "taskmanager")
    assert built.match(with_cause, [0]) == [("t", {}, 1)] and built.match(without, [0]) == []
    assert built.signatures[0]._decided is None

    monkeypatch.setattr(matching, "DECIDED_PER_SIGNATURE", 3)
    header = matching.build_matcher(
        [Rule("h", "h", "other", "cause", (Signature(message="FAILED"),), "", (), "h.yaml")], catalogue=None
    )
    for number in range(10):
        header.match(matching.Fields(failed, f"{failed} {number}", "WARN", task, "t", "taskmanager"), [0])
        assert len(header.signatures[0]._decided) <= 3
