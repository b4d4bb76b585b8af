"""The pass finds some metric patterns by their literal start and a pattern of their failures, not by running them
(scan/checked.py): a checkpoint's completion, old form and new, `Could not materialize checkpoint`, ... . The
events each pattern is found in, the level words and every other pattern's matches are the same as the pass
running every pattern finds, on texts built to reach the edges: each item of the rests cut short or too long,
characters outside ASCII where a digit may be, two occurrences in a line, a line cut at a part's or a joined
file's end, carriage returns."""

from __future__ import annotations

import dataclasses
import random

import numpy as np
import pytest

JOB = "db5b5fab8f4d3e27dda1494c73cf256d"
NEW = "Completed checkpoint {n} for job {job} ({b} bytes, checkpointDuration={d} ms, finalizationTime=0 ms)."
OLD = "Completed checkpoint {n} for job {job} ({b} bytes in {d} ms)."
OTHER = [
    "Could not materialize checkpoint {n} for operator Map (1/2).",
    "Discarding checkpoint {n} of job {job}.",
    "Loading configuration property: state.backend.type, rocksdb",
    "Loading configuration property: , x",
    "Triggering checkpoint {n} (type=CHECKPOINT) @ 1772323201329 for job {job}.",
    "plain line",
    "",
]
NUMBERS = ["1", "12345", "\u0661\u0662", "1\u00e9", "", "x", "12a"]
JOBS = [JOB, JOB[:-1], JOB + "a", JOB.upper(), JOB[:5] + "\u00e9" + JOB[6:]]


def _line(rng: random.Random) -> str:
    template = rng.choice([NEW, OLD, NEW, OLD, *OTHER])

    def number() -> str:
        # (up to 80 digits: member_of's steps of eight bytes, and past them its one search: review18b)
        return rng.choice(NUMBERS) if rng.random() < 0.3 else str(rng.randint(0, 10 ** rng.choice([6, 6, 12, 20, 80])))

    job = rng.choice(JOBS) if rng.random() < 0.3 else JOB
    line = template.format(n=number(), job=job, b=number(), d=number())
    if rng.random() < 0.3:  # cut anywhere: every item of the rest short by some characters
        line = line[: rng.randint(0, len(line))]
    if rng.random() < 0.1:
        line += " " + _line(rng)  # two in a line
    if rng.random() < 0.1:
        line = line.replace(" bytes", rng.choice([" bytes,", " bytes;", " bytes, ", " bytess in"]))
    return line


def _text(rng: random.Random) -> bytes:
    text = "".join(_line(rng) + rng.choice(["\n", "\r\n", "\n"]) for _ in range(rng.randint(1, 10)))
    return (text[: rng.randint(0, len(text))] if rng.random() < 0.3 else text).encode()


@pytest.fixture(scope="module")
def passes(rules):
    """The rules' and metrics' prefilter, and the same patterns in a pass that runs every one of them."""
    from flinkdoctor.analytics import load_metrics
    from flinkdoctor.scan.matcher import build_matcher

    prefilter = build_matcher(rules, tuple(m.line for m in load_metrics()), catalogue=None).prefilter
    every = dataclasses.replace(prefilter, derived=(), scanned=(), compiled=None, checked=())
    return prefilter, every


def test_the_checked_groups(passes):
    """The completions' two forms are one group, told apart at `bytes` + ` ` or `,`; the pass runs neither of
    their patterns, only the groups' literals and failure patterns; no checked pattern's offsets are read."""
    prefilter, _ = passes
    groups = {g.literal: g for g in prefilter.checked}
    completed = groups["Completed checkpoint "]
    assert len(completed.members) == 2 and sorted(completed.parts) == [ord(" "), ord(",")]
    scanned = dict(prefilter.scanned)
    members = {n for g in prefilter.checked for n in g.members}
    assert not members & set(scanned)
    assert all(g.found in scanned and g.failed in scanned for g in prefilter.checked)
    read = {p for ps in prefilter.messages for p in ps} | {d.base for d in prefilter.derived} | {prefilter.trigger}
    assert not members & read
    assert not any(p.startswith("Triggering") for n in members for p in [prefilter.patterns[n]])


def test_checked_patterns_find_the_same_events(passes):
    """Random texts of the lines: every pattern's events and the level words the same with and without the
    checks, and every unchecked pattern's matches (pattern, end); each text alone, and several joined as files."""
    from flinkdoctor.scan.prefilter import scan

    prefilter, every = passes
    members = {n for g in prefilter.checked for n in g.members}
    rng = random.Random(18)
    seen = {"new": 0, "old": 0, "failed": 0, "wide": 0}
    for _ in range(500):
        texts = [_text(rng) for _ in range(rng.randint(1, 3))]
        data = np.frombuffer(b"".join(texts), dtype=np.uint8)
        if not len(data):
            continue
        lines = np.append(0, np.flatnonzero(data[:-1] == 10) + 1)
        files = np.cumsum([0, *map(len, texts[:-1])])
        files = files[files < len(data)]
        for joined in (None, files):
            if joined is not None and len(joined) == 1:
                continue
            # events start at lines' starts, and at each joined file's (scanned on its own): as the scanner's
            begin = lines if joined is None else np.unique(np.concatenate([lines, files]))
            first_line_end = np.append(begin[1:], len(data))
            got = scan(prefilter, data, begin, first_line_end, joined)
            want = scan(every, data, begin, first_line_end, joined)
            assert {p: e.tolist() for p, e in got.by_pattern.items()} == {
                p: e.tolist() for p, e in want.by_pattern.items()
            }
            assert got.level_words.tolist() == want.level_words.tolist()
            assert _matches(got, members) == _matches(want, members)
            assert got.stop is None or (np.diff(got.stop) >= 0).all()  # by their ends, as the pass gives its own
        matched = {p for p, e in want.by_pattern.items() if len(e)}
        seen["new"] += any("checkpointDuration" in prefilter.patterns[p] for p in matched)
        seen["old"] += any("bytes in" in prefilter.patterns[p] for p in matched)
        text = b"".join(texts)
        seen["failed"] += text.count(b"Completed checkpoint ") > sum(len(want.by_pattern.get(n, [])) for n in members)
        seen["wide"] += "\u0661".encode() in text
    assert min(seen.values()) > 20, seen


def _matches(hits, members: set[int]) -> list[tuple[int, int]]:
    if hits.which is None:
        return []
    return sorted((w, s) for w, s in zip(hits.which.tolist(), hits.stop.tolist(), strict=True) if w not in members)


def test_a_line_cut_at_a_file_end(passes):
    """A completion cut at a joined file's end, the next file completing it: no match runs across, and the cut
    one is found in neither (its failure is the file's end)."""
    from flinkdoctor.scan.prefilter import scan

    prefilter, every = passes
    line = NEW.format(n=7, job=JOB, b=1, d=2).encode()
    texts = [line[:60], line[60:] + b"\n", line + b"\n", line[:-40]]
    data = np.frombuffer(b"".join(texts), dtype=np.uint8)
    files = np.cumsum([0, *map(len, texts[:-1])])
    got = scan(prefilter, data, files, files, files)
    want = scan(every, data, files, files, files)
    assert {p: e.tolist() for p, e in got.by_pattern.items()} == {p: e.tolist() for p, e in want.by_pattern.items()}
    assert got.by_pattern[256].tolist() == [2]
    lines = np.append(0, np.flatnonzero(data[:-1] == 10) + 1)  # one file: the first two texts are one line
    got, want = (scan(p, data, lines, lines) for p in (prefilter, every))
    assert {p: e.tolist() for p, e in got.by_pattern.items()} == {p: e.tolist() for p, e in want.by_pattern.items()}
    assert got.by_pattern[256].tolist() == [0, 1]


def test_parsing_refuses_what_the_failures_cannot_follow():
    """A rest with a repeat that may hold what follows it, a class with some characters outside ASCII, a newline,
    a short literal start, or a last item of variable length is not checked."""
    from flinkdoctor.scan.checked import parsed
    from flinkdoctor.scan.patterns import hyperscan_pattern

    def rest(regex: str):
        pattern = hyperscan_pattern(regex)
        assert pattern is not None
        return parsed(pattern)

    literal, items = rest(r"Completed checkpoint (\d+) for job ([0-9a-f]{32})")
    assert literal == "Completed checkpoint " and items[0].wide and items[0].high is None
    assert rest(r"Completed checkpoint (\d+)x for job") is not None
    assert rest(r"Completed checkpoint (\w+)1 for job") is None  # \w holds 1: where it stops is not certain
    assert rest(r"Completed checkpoint ([a-z\u00e9]+) x") is None  # some characters outside ASCII
    assert rest(r"Completed checkpoint (\s+)x") is None  # a newline
    assert rest(r"Short one (\d+) x") is None
    assert rest(r"Completed checkpoint x(\d{1,3})") is None or rest(r"Completed checkpoint x(\d{1,3})")[1][-1].fixed


def test_groups_with_another_pattern_of_the_literal_are_not_checked():
    """A pattern that cannot be checked and starts with a group's literal keeps the group unchecked: its lines
    would each fail the group. Members that do not part at a literal character are not grouped."""
    from flinkdoctor.scan.checked import groups
    from flinkdoctor.scan.patterns import hyperscan_pattern

    def patterns(*regexes: str) -> tuple[str, ...]:
        return tuple(p for p in map(hyperscan_pattern, regexes) if p is not None)

    two = patterns(r"Completed checkpoint (\d+) in", r"Completed checkpoint (\d+) at")
    (group,) = groups(two, [0, 1], 10)
    assert (group.found, group.failed, group.parts) == (10, 11, (ord("i"), ord("a")))
    assert groups(two + patterns(r"Completed checkpoint (\w+)1"), [0, 1], 10) == []
    assert groups(two + patterns(r"Completed checkpoint(?:\d){0,3}x"), [0, 1], 10) == []
    assert groups(patterns(r"Completed checkpoint (\d+) in", r"Completed checkpoint (\d+)"), [0, 1], 10) == []


def test_member_of_walks_the_shared_items():
    """member_of names each occurrence's member by the byte after the shared items, whatever their lengths."""
    from flinkdoctor.scan.checked import groups, member_of
    from flinkdoctor.scan.patterns import hyperscan_pattern

    regexes = (r"Completed checkpoint (\d+) for ([0-9a-f]{4}) in", r"Completed checkpoint (\d+) for ([0-9a-f]{4}) at")
    (group,) = groups(tuple(hyperscan_pattern(r) for r in regexes), [0, 1], 10)  # type: ignore[misc]
    text = "Completed checkpoint 1 for abcd at\nCompleted checkpoint 123\u0661 for 0000 in\n".encode()
    data = np.frombuffer(text, dtype=np.uint8)
    ends = np.array([21, text.index(b"123")], dtype=np.int64)
    assert member_of(data, ends, group).tolist() == [1, 0]


def test_the_pass_reports_a_whole_line_once(passes):
    """Over whole completion lines the pass reports each occurrence of the literal once, no failure, and each
    member's mark at most once per scan; a line cut short is a failure."""
    from flinkdoctor.scan.prefilter import _pass, database

    prefilter, _ = passes
    group = next(g for g in prefilter.checked if g.literal == "Completed checkpoint ")
    lines = [(NEW if i % 3 else OLD).format(n=i, job=JOB, b=10 * i, d=i % 7) for i in range(60)]
    data = np.frombuffer("\n".join(lines).encode(), dtype=np.uint8)
    which, _, _ = _pass(database(prefilter), data, [(0, len(data))])
    counts = {n: int((which == n).sum()) for n in (group.found, group.failed, *group.marks)}
    assert counts == {group.found: 60, group.failed: 0, **dict.fromkeys(group.marks, 1)}
    cut = np.frombuffer((lines[0][:-20] + "\n" + lines[1][:40]).encode(), dtype=np.uint8)
    which, _, _ = _pass(database(prefilter), cut, [(0, len(cut))])
    assert int((which == group.failed).sum()) == 2


def test_many_failures_run_the_members_over_the_part(passes, monkeypatch):
    """More lines that start a completion and end no member than MANY_FAILURES: the members run over the whole
    part once, not a line at a time (hostile input), with the same events."""
    from flinkdoctor.scan import prefilter as module

    prefilter, every = passes
    lines = [f"Completed checkpoint {i} for job x" if i % 2 else NEW.format(n=i, job=JOB, b=i, d=i) for i in range(600)]
    data = np.frombuffer("\n".join(lines).encode(), dtype=np.uint8)
    begin = np.append(0, np.flatnonzero(data[:-1] == 10) + 1)
    want = module.scan(every, data, begin, begin)
    monkeypatch.setattr(module, "_line_at", None)  # (not called)
    got = module.scan(prefilter, data, begin, begin)
    assert {p: e.tolist() for p, e in got.by_pattern.items()} == {p: e.tolist() for p, e in want.by_pattern.items()}
    assert len(got.by_pattern[256]) == 300


def test_hostile_lines_cost_what_their_bytes_do(passes, monkeypatch):
    """review18b's inputs, each with the same events as the pass running every pattern, in time linear in its
    bytes: a completion whose numbers run to a million digits beside the other form (member_of once stepped eight
    bytes at a time: 90 s for 10^7 digits); a long line holding many failures (its line found once, not once a
    failure)."""
    import time

    from flinkdoctor.scan import prefilter as module

    prefilter, every = passes
    completed = next(g for g in prefilter.checked if g.literal == "Completed checkpoint ").members
    digits = "7" * 1_000_000
    text = OLD.format(n=digits, job=JOB, b=digits, d=1) + "\n" + NEW.format(n=1, job=JOB, b=2, d=3) + "\n"
    failures = " ".join(f"Completed checkpoint {i}x" for i in range(200)) + " " + "y" * 1_000_000 + "\n"
    found = []
    line_at = module._line_at
    monkeypatch.setattr(module, "_line_at", lambda *args: found.append(args[1]) or line_at(*args))
    for body in (text, failures + text):
        data = np.frombuffer(body.encode(), dtype=np.uint8)
        begin = np.append(0, np.flatnonzero(data[:-1] == 10) + 1)
        want = module.scan(every, data, begin, begin)
        started = time.process_time()
        got = module.scan(prefilter, data, begin, begin)
        took = time.process_time() - started
        assert {p: e.tolist() for p, e in got.by_pattern.items()} == {p: e.tolist() for p, e in want.by_pattern.items()}
        assert sum(len(got.by_pattern.get(n, [])) for n in completed) == 2 and took < 3.0
    assert len(found) == 1  # the 200 failures' one line


def test_match_ends_in_spans():
    """_ending_in: per end, whether lo < end <= hi for one of the sorted spans, as testing each span gives."""
    from flinkdoctor.scan.prefilter import _ending_in

    rng = random.Random(5)
    for _ in range(300):
        cuts = sorted(rng.sample(range(200), rng.randint(2, 20)))
        spans = [(a, b) for a, b in zip(cuts[::2], cuts[1::2], strict=False)]
        ends = np.array(sorted(rng.choices(range(210), k=rng.randint(0, 50))), dtype=np.int64)
        want = [any(lo < e <= hi for lo, hi in spans) for e in ends.tolist()]
        assert _ending_in(ends, spans).tolist() == want


SHAPES = {  # rests the failure patterns must follow exactly (review18b), with tails that match them
    r"(\d{1,3})x": ["12x", "1x", "\u0661\u0662\u0663x"],
    r"(\d{2,2})(\w{1,2}) ": ["12a ", "99ab ", "1\u00e9b_ "],
    r"(\d+)([a-f]{1,4}),": ["123abc,", "1f,", "\u00e9aaaa,"],
    r"([a-c]{2,5})(\d{1,})y(\d{3})": ["ab1y123", "abcab12y000"],
    r"([0-9a-f]{4}) (\d+) in": ["abcd 12 in", "0000 1 in"],
}


def test_the_failure_pattern_reports_exactly_where_the_member_does_not():
    """For each rest shape `parsed` accepts, over tails edited at random: the literal followed by a match of the
    member, or a report of its failure pattern, never both and never neither."""
    from flinkdoctor.scan.checked import fail_pattern, parsed
    from flinkdoctor.scan.patterns import hyperscan_pattern
    from flinkdoctor.scan.prefilter import _pass, compile_patterns

    literal, alphabet = "Completed checkpoint ", "0123456789abcdefgxyzq ,e\u00e9\u0661\n\rin at"
    rng = random.Random(3)
    for shape, tails in SHAPES.items():
        pattern = hyperscan_pattern(literal + shape)
        assert pattern is not None and (found := parsed(pattern)) is not None, shape
        database = compile_patterns((pattern, fail_pattern(found[0], [found[1]])), [0, 1])
        for _ in range(300):
            tail = list(rng.choice(tails))
            for _ in range(rng.choice([0, 1, 1, 2])):
                at, edit = rng.randint(0, len(tail)), rng.random()
                if edit < 0.4:
                    tail.insert(at, rng.choice(alphabet))
                elif at < len(tail):
                    tail[at : at + 1] = [] if edit < 0.7 else [rng.choice(alphabet)]
            text = literal + "".join(tail) + rng.choice(["", "\n", " ", "x"])
            which, _, _ = _pass(database, np.frombuffer(text.encode(), dtype=np.uint8), [(0, len(text.encode()))])
            assert bool((which == 0).any()) != bool((which == 1).any()), (shape, text)
