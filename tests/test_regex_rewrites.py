"""The scan's two rewrites of every regex it runs, checked against Python's `re` on every rule's real cases and on
non-ASCII variants of them: the Hyperscan pattern finds every event the regex matches (a superset, patterns.py),
and the RE2 regex finds exactly what it finds, with the same named groups (re2.py)."""

from __future__ import annotations

import random
import re
from functools import cache

import pytest

from flinkdoctor.analytics.metrics import load_metrics
from flinkdoctor.knowledge.regexes import python_regex
from flinkdoctor.knowledge.rulebook import load_rules
from flinkdoctor.sources.layouts import load_layouts

# characters Python's `re` may take for an ASCII one: other scripts' digits (\d), Unicode spaces and the
# information separators (\s), the letters IGNORECASE folds onto k, s and i, letters and marks of other scripts
# (\w); a variant puts some of them where the ASCII ones were
LOOK_ALIKE = {d: [chr(0x660 + int(d)), chr(0xFF10 + int(d))] for d in "0123456789"}
LOOK_ALIKE.update({" ": ["\u2003", "\xa0", "\x1c", "\x85"], "k": ["\u212a"], "K": ["\u212a"], "s": ["\u017f"]})
LOOK_ALIKE.update({"i": ["\u0131", "\u0130"], "I": ["\u0130"]})
LOOK_ALIKE.update({c: ["\xe9", "\u0436", "\u5b57", "\u0301", "\U00011f50"] for c in "abcdefghjlmnopqrtuvwxyz_"})


@cache
def regexes() -> list[tuple[str, str]]:
    """(where, regex) of every regex the scan runs: the rules' signatures, the metrics' lines, the layouts'
    headers."""
    found = [(r.id, rx) for r in load_rules() for s in r.signatures for _, rx in s.regexes()]
    found += [(m.id, m.line) for m in load_metrics()]
    return found + [(layout.id, layout.header) for layout in load_layouts()]


@cache
def corpus() -> list[str]:
    """The rules' cases, whole and line by line, and three variants of each with look-alike characters."""
    cases = [case.text for rule in load_rules() for case in rule.cases]
    texts = cases + sorted({line for text in cases for line in text.split("\n")})
    rng = random.Random(3)
    variants = []
    for text in texts:
        for _ in range(3):
            chars = list(text)
            for i in rng.sample(range(len(chars)), min(len(chars), 8)):
                if chars[i] in LOOK_ALIKE:
                    chars[i] = rng.choice(LOOK_ALIKE[chars[i]])
            variants.append("".join(chars))
    return texts + variants


def test_hyperscan_patterns_find_every_match_of_the_regex():
    """Each match Python's `re` finds, and the look-alike variants of it that still match, is found by the
    regex's Hyperscan pattern in the UTF-8 bytes (also with CR LF line ends)."""
    hyperscan = pytest.importorskip("hyperscan")
    from flinkdoctor.scan.patterns import hyperscan_pattern

    rng = random.Random(5)
    checked = 0
    for where, regex in regexes() + [(f"{w} (whole text)", r) for w, r in regexes() if r.startswith(("^", "\\A"))]:
        pattern = hyperscan_pattern(regex, whole_text=where.endswith("(whole text)"))
        if pattern is None:
            continue
        database = hyperscan.Database()
        database.compile(expressions=[pattern.encode()], ids=[0], elements=1, flags=[hyperscan.HS_FLAG_UTF8])
        python = python_regex(regex)
        for text in corpus()[: len(corpus()) // 4]:
            for found in python.finditer(text):
                chars = list(found.group(0))
                for i in rng.sample(range(len(chars)), min(len(chars), 4)):
                    chars[i] = rng.choice(LOOK_ALIKE.get(chars[i], [chars[i]]))
                for candidate in (found.group(0), "".join(chars), "x\xe9" + "".join(chars) + "\u4e2d"):
                    if python.search(candidate):
                        for form in (candidate, candidate.replace("\n", "\r\n")):
                            hits: list[int] = []
                            database.scan(form.encode(), match_event_handler=lambda *a, h=hits: h.append(1))
                            assert hits, f"{where}: {regex!r} -> {pattern!r} misses {form!r}"
                            checked += 1
    assert checked > 5000


def test_re2_regexes_find_what_python_finds():
    """Same match or none, and the same named groups (RE2 gives "" for a group that took no part), on every
    text of the corpus; regexes RE2 cannot read the same way are None and left to Python."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from flinkdoctor.scan.re2 import extract, matching, re2_regex

    values = pa.array(corpus())
    exact = 0
    for where, regex in regexes():
        if re2_regex(regex) is None:
            continue
        exact += 1
        python = python_regex(regex)
        found = [python.search(text) for text in corpus()]
        if python.groupindex:
            want = [None if m is None else {k: v or "" for k, v in m.groupdict().items()} for m in found]
            assert extract(values, regex).to_pylist() == want, where
        assert matching(values, regex).tolist() == [i for i, m in enumerate(found) if m], where
        assert pc.match_substring_regex(values, re2_regex(regex)).to_pylist() == [m is not None for m in found]
    assert exact >= 0.8 * len(regexes())


@pytest.mark.parametrize(
    "regex, exact",
    [
        (r"\bjob\b", False),  # RE2's word boundary is ASCII
        (r"(?=a)b", False),
        (r"(?:\w++\.)+E", False),
        (r"x{1,2000}", False),
        (r"(?i)\u00e9t\u00e9", False),  # folding outside ASCII
        (r"(?i)kill", True),
        (r"(?m)^a$", True),
        (r"(?<n>\d+) of (?<m>\d+)", True),
    ],
)
def test_what_re2_cannot_read_the_same_way_is_left_to_python(regex, exact):
    from flinkdoctor.scan.re2 import re2_regex

    assert (re2_regex(regex) is not None) is exact


def test_the_unicode_classes_file_is_the_running_pythons():
    """knowledge/unicode_classes.json holds \\d, \\s and \\w as this Python's `re` has them (write_classes
    regenerates it for another Unicode version; a mismatch is worked out at run time, but slower)."""
    import json
    import unicodedata
    from importlib import resources

    from flinkdoctor.scan.re2 import CLASSES_FILE, compute_classes

    stored = json.loads(resources.files("flinkdoctor").joinpath(CLASSES_FILE).read_text("utf-8"))
    if stored["unidata_version"] != unicodedata.unidata_version:
        pytest.skip(f"classes written for Unicode {stored['unidata_version']}")
    computed = compute_classes()
    for name, test in (("digit", r"\d"), ("space", r"\s"), ("word", r"\w")):
        assert [tuple(pair) for pair in stored[name]] == computed[name]
        pattern = re.compile(test)
        codes = {c for low, high in computed[name] for c in range(low, high + 1)}
        assert all((pattern.fullmatch(chr(c)) is not None) == (c in codes) for c in range(0, 0x110000, 7))


def test_the_job_found_elsewhere_in_an_event_is_pythons():
    """measure.JOB_IN_EVENT as RE2 runs it (its word boundaries as characters) finds Python's job, on texts with
    a job id in a path, after `job`, after a non-ASCII letter (no boundary for Python), or none."""
    import pyarrow as pa

    from flinkdoctor.scan.measure import JOB_IN_EVENT, _jobs

    job = "1fdf09bfd9a6f5522794ffa2f96c327e"
    texts = [
        f"Completed checkpoint 3 for job {job} (7387 bytes, checkpointDuration=82 ms, finalizationTime=1 ms).",
        f"Closing file:/tmp/fdl/runs/x/tmp/checkpoints/{job}/chk-3/_metadata",
        f"\xe9job {job} x",
        f"job {job}\xe9",
        f"job {job}",
        "nothing here",
        f"jobs {job}",
    ]
    python = re.compile(JOB_IN_EVENT)
    want = []
    for text in texts:
        found = python.search(text)
        want.append((found.group(1) or found.group(2)) if found else None)
    import numpy as np

    assert _jobs(pa.array(texts), np.arange(len(texts))).to_pylist() == want
    assert want[2] is None and want[3] is None and want[0] == want[1] == job


def test_a_pattern_starts_only_on_its_first_bytes():
    """patterns.first_bytes: every match of a regex's Hyperscan pattern starts on one of them (its leftmost start,
    by Hyperscan's SOM), for every regex the scan runs and a sample of the failure catalogue's, on the rules'
    cases, their look-alike variants and a lab TaskManager's lines with CR LF ends: what lets the catalogue's
    pass skip a line's leading timestamp for the patterns that cannot start on a byte of one."""
    import tarfile

    hyperscan = pytest.importorskip("hyperscan")
    from conftest import DATA
    from flinkdoctor.knowledge.catalogue import load_catalogue
    from flinkdoctor.scan.patterns import Unsupported, first_bytes, hyperscan_pattern

    with tarfile.open(DATA / "lab" / "1.20.3" / "network-buffers.tar.gz") as archive:
        member = next(m for m in archive.getmembers() if m.name.endswith("taskexecutor-0-vm.log"))
        lab = archive.extractfile(member).read()
    texts = [text.encode() for text in corpus()[: len(corpus()) // 4]] + [lab, lab.replace(b"\n", b"\r\n")]
    sample = random.Random(25).sample([e.regex for e in load_catalogue().entries], 1500)
    checked, starting_on_digits = 0, 0
    for regex in [r for _, r in regexes()] + sample:
        try:
            pattern = hyperscan_pattern(regex)
        except Unsupported:
            continue
        if pattern is None:
            continue
        first = first_bytes(regex)
        database = hyperscan.Database()
        try:
            flags = [hyperscan.HS_FLAG_UTF8 | hyperscan.HS_FLAG_SOM_LEFTMOST]
            database.compile(expressions=[pattern.encode()], ids=[0], elements=1, flags=flags)
        except hyperscan.error:
            continue  # too large to track its starts: not checked
        starting_on_digits += bool(first & set(b"0123456789"))
        for text in texts:
            starts: list[int] = []
            database.scan(text, match_event_handler=lambda i, a, b, f, c, s=starts: s.append(a))
            for start in starts:
                assert min(text[start], 0x80) in first, (
                    f"{regex!r} -> {pattern!r} starts on {text[start : start + 20]!r}"
                )
                checked += 1
    assert checked > 5000 and starting_on_digits > 10


@pytest.mark.parametrize(
    ("regex", "first"),
    [
        (r"Checkpoint \d+ expired", b"C"),
        (r"(?i)timeout", b"Tt"),
        (r"(?:Caused by: )?java\.io\.\w+Exception", b"j"),  # what can match nothing at the start is dropped
        (r"\s*at \S+", b"a"),
        (r"\s+at \S+", b"\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x80"),
        (r"(?:foo|\d+ms)", b"f0123456789\x80"),
        (r"^\bfailed", b"f"),
        (r"[^a-z]", bytes(c for c in range(128) if not 0x61 <= c <= 0x7A) + b"\x80"),
        (r"é", b"\x80"),
        (r"(a?1)bq", b"a1"),  # an optional start inside a group: what follows it can start the match too
        (r"((?:ab|cd|)9)zz", b"ac9"),  # an empty alternative: so can what follows the branch
        (r"((?:a?)+b)q", b"ab"),  # a repeat of what can match nothing: what follows it can start the match
    ],
)
def test_the_first_bytes_of_a_pattern(regex, first):
    """first_bytes on the constructs: a literal, folded case, an optional group or repeat at the start (dropped,
    as the pattern drops it), a class that holds a newline (a carriage return may come before it) and Unicode
    spaces, an alternative, anchors (dropped), a negated class, a character outside ASCII (0x80 for its UTF-8
    lead byte)."""
    from flinkdoctor.scan.patterns import first_bytes

    assert first_bytes(regex) == frozenset(first)
