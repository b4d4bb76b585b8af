"""The Hyperscan pass reads some patterns from others' matches instead of running them (prefilter._derivations):
uncaught-exception's `...Exception: \\S` from `...Exception`'s ends, its `\\A(?:@\\S++ |<a date line>)?...` from
the line-start form's, unless a line starting with `@` is in the part. The pass with the derivations finds every
pattern's matches (pattern, end) and events exactly as the pass running every pattern does, on texts built to
reach the edges: what follows `: ` (a blank, a tab, a character of two, three or four bytes), a part's or a
joined file's last bytes, `@` lines, dated lines, NUL markers, carriage returns."""

from __future__ import annotations

import dataclasses
import random

import numpy as np
import pytest

PIECES = [
    "java.lang.IllegalStateException",
    "Caused by: org.apache.flink.FooError",
    "\tat org.apache.flink.Bar.baz(Bar.java:12)",
    "> \tjava.io.IOException",
    "@host1 java.lang.RuntimeException: x",
    "@ java.lang.RuntimeException",
    "@x\tjava.lang.OutOfMemoryError: y",
    "2023-03-17 13:37:12",
    "2023-03-17 13:37:12 \r",
    "\x00java.lang.Exception",
    "some text java.lang.Exception: not at a line start",
    "plain line",
    "",
]
AFTER = [": ", ": x", ": \t", ":  ", ":\u00e9", ": \u00e9", ": \u4e2d", ": \U0001f600", ": \u2003", ":", ": \r", ""]


def _text(rng: random.Random) -> bytes:
    lines = []
    for _ in range(rng.randint(1, 12)):
        line = rng.choice(PIECES)
        if line.endswith(("Exception", "Error")) or rng.random() < 0.2:
            line += rng.choice(AFTER)
        lines.append(line + rng.choice(["\n", "\r\n", "\n", "\n"]))
    text = "".join(lines)
    return (text[: rng.randint(0, len(text))] if rng.random() < 0.3 else text).encode()


@pytest.fixture(scope="module")
def passes(rules):
    """The rules' prefilter, and the same patterns in a pass that runs every one of them."""
    from flinkdoctor.analytics import load_metrics
    from flinkdoctor.scan.matcher import build_matcher

    prefilter = build_matcher(rules, tuple(m.line for m in load_metrics()), catalogue=None).prefilter
    every = dataclasses.replace(prefilter, derived=(), scanned=(), compiled=None)
    return prefilter, every


def test_the_rules_derivations(passes):
    """uncaught-exception's four patterns are derived, from the two the pass runs; the only trigger is a line
    starting with `@` (a date line ends in a newline: it adds no end), and the pass does not run the four."""
    prefilter, _ = passes
    patterns = prefilter.patterns
    derived = {d.number: d for d in prefilter.derived}
    assert len(derived) == 4
    bases = {d.base for d in derived.values()}
    assert {patterns[b].endswith("Exception") or patterns[b].endswith("Error") for b in bases} == {True}
    followed = [d for d in derived.values() if d.then is not None]
    assert {d.then for d in followed} == {b": "} and len(followed) == 2
    for d in followed:
        assert patterns[d.number].startswith(patterns[d.base])
    triggers = {t for d in derived.values() for t in d.triggers}
    scanned = dict(prefilter.scanned)
    assert [scanned[t] for t in triggers] == ["(?:(?m:^)|\\x{0})\\x{40}"]
    checked = prefilter.checked  # (and the checked groups' members replaced by their literal, failures, marks)
    run = len(patterns) - 4 + 1 - sum(len(g.members) - 2 - len(g.marks) for g in checked)
    assert not set(derived) & set(scanned) and len(scanned) == run


def test_derived_matches_are_the_patterns_own(passes):
    """Random texts of the pieces: every pattern's matches (pattern, end), its events and the level words the
    same with and without the derivations; each text alone, its lines as events, and several joined as files."""
    from flinkdoctor.scan.prefilter import scan

    prefilter, every = passes
    rng = random.Random(17)
    checked = {"follow": 0, "at": 0, "wide": 0}
    for _ in range(400):
        texts = [_text(rng) for _ in range(rng.randint(1, 3))]
        data = np.frombuffer(b"".join(texts), dtype=np.uint8)
        if not len(data):
            continue
        starts = np.append(0, np.flatnonzero(data[:-1] == 10) + 1)
        files = np.cumsum([0, *map(len, texts[:-1])])
        files = files[files < len(data)]
        begin = np.unique(np.concatenate([starts, files]))
        first_line_end = np.append(begin[1:], len(data))
        for joined in (None, files):
            if joined is not None and len(joined) == 1:
                continue
            got = scan(prefilter, data, begin, first_line_end, joined)
            want = scan(every, data, begin, first_line_end, joined)
            assert _matches(got) == _matches(want)
            assert got.stop is None or (np.diff(got.stop) >= 0).all()  # by their ends, as the pass gives its own
            assert {p: e.tolist() for p, e in got.by_pattern.items()} == {
                p: e.tolist() for p, e in want.by_pattern.items()
            }
            assert got.level_words.tolist() == want.level_words.tolist()
        joined_text = b"".join(texts)
        checked["follow"] += b"Exception: " in joined_text or b"Error: " in joined_text
        checked["at"] += b"\n@" in joined_text or joined_text.startswith(b"@")
        checked["wide"] += ": \xe4\xb8\xad".encode() in joined_text or b": \xf0" in joined_text
    assert min(checked.values()) > 20, checked


def _matches(hits) -> list[tuple[int, int]]:
    return [] if hits.which is None else sorted(zip(hits.which.tolist(), hits.stop.tolist(), strict=True))


def test_a_file_ending_in_the_follow(passes):
    """`...Exception: ` at a joined file's end, the next file starting with a letter: no match runs across."""
    from flinkdoctor.scan.prefilter import scan

    prefilter, every = passes
    texts = [b"java.lang.IllegalStateException: ", b"x\n", b"java.lang.IllegalStateException: ", "\u4e2d\n".encode()]
    data = np.frombuffer(b"".join(texts), dtype=np.uint8)
    files = np.cumsum([0, *map(len, texts[:-1])])
    for joined in (files, None):
        got = scan(prefilter, data, files, files, joined)
        want = scan(every, data, files, files, joined)
        assert {p: e.tolist() for p, e in got.by_pattern.items()} == {p: e.tolist() for p, e in want.by_pattern.items()}
        assert _matches(got) == _matches(want)


def test_a_base_with_a_top_level_alternation_derives_nothing():
    """`foo|bar: [x]` is `foo` or `bar: [x]`: its matches are not `foo|bar`'s followed by `: ` and an x
    (review17b); the same base in a group is."""
    from flinkdoctor.scan.prefilter import _derivations

    assert _derivations(("foo|bar", "foo|bar\\x{3a} [x]"), [0, 1])[0] == ()
    (derived,) = _derivations(("(?:foo|bar)", "(?:foo|bar)\\x{3a} [x]"), [0, 1])[0]
    assert (derived.number, derived.base, derived.then) == (1, 0, b": ")
