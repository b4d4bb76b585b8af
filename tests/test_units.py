"""Pure functions, no Spark."""

from __future__ import annotations

import functools
from datetime import datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flinkdoctor.diagnosis.correlate import onset
from flinkdoctor.diagnosis.findings import Finding, block_offsets, keep_applicable
from flinkdoctor.knowledge.regexes import nested_quantifier
from flinkdoctor.knowledge.rulebook import Signature, load_rules, required_literals
from flinkdoctor.knowledge.versions import detect, matches, specifier
from flinkdoctor.safety.masking import mask
from flinkdoctor.scan.prefilter import build_prefilter
from flinkdoctor.sources.layouts import detect_layout


@pytest.mark.parametrize(
    "spec, version, expected",
    [
        (">=1.14", "1.10.0", False),
        (">=1.14", "1.20.3", True),
        ("<1.13", "1.10", True),
        (">=1.13,<1.17", "1.16.3", True),
        (">=1.13,<1.17", "1.17.0", False),
        (">=1.20", "2.1.1", True),
        ("<1.9", None, True),
        ("<1.17", "1.16.3", True),
        ("<=1.17", "1.17.3", True),
        (">1.17", "1.17.3", False),
        (">=1.17", "1.20+", True),
        ("<1.17", "1.20+", False),
        ("<1.17", "1.17-SNAPSHOT", False),
        (">=1.17", "banana", True),
        ("<1.9", "", True),
        (None, "1.20.3", True),
    ],
)
def test_version_specs(spec, version, expected):
    assert matches(spec, version) is expected


@pytest.mark.parametrize("spec", [">=1.x", "1.17", ">=1.13;<1.17", ""])
def test_malformed_version_specifier_is_an_error(spec):
    with pytest.raises(ValueError):
        specifier(spec)


def test_version_from_config_keys():
    assert detect([], [{"state.backend.type": "rocksdb"}], []) == ("1.17+", "config")
    assert detect(["1.20.3", "1.20.3"], [], []) == ("1.20.3", "log")
    assert detect([], [], [{"flink-version": "2.1.1"}]) == ("2.1.1", "rest")


def test_the_pairs_a_signature_admits_are_those_it_would_try():
    """Matcher.admitted (each distinct signature and level decided once, for every pair) is each shipped rule
    signature's own first test, _Signature.admits, on every level word, none and the empty one, for a kind a
    rule reads and one it does not: a pair it refuses is never tried, and one it keeps is."""
    import numpy as np

    from flinkdoctor.scan.matcher import build_matcher

    matcher = build_matcher(load_rules(), catalogue=None)
    levels = ["INFO", "WARN", "ERROR", "FATAL", "DEBUG", "NONE", "", None]
    numbers = np.repeat(np.array(sorted(matcher.signatures)), len(levels))
    level_of = np.tile(np.arange(len(levels)), len(matcher.signatures))
    read = sorted({kind for s in matcher.signatures.values() for kind in s.kinds or ()})
    assert read  # (some rule reads only some kinds)
    for kind in (*read, "no such kind"):
        got = matcher.admitted(numbers, levels, level_of, kind)
        want = [matcher.signatures[n].admits(kind, levels[at]) for n, at in zip(numbers, level_of, strict=True)]
        assert got.tolist() == want
        assert 0 < sum(want) < len(want)
    leveled = next(s for s in matcher.signatures.values() if "NONE" in s.levels and s.kinds is None)
    assert leveled.admits("text", None) and leveled.admits("text", "") and not leveled.admits("text", "INFO")


@pytest.mark.parametrize(
    "signature, literals",
    [
        (
            Signature(
                text=r"Size of the state is larger than the maximum permitted memory-backed state\. "
                r"Size=\s?(?<size>\d+)"
            ),
            ["Size of the state is larger than the maximum permitted memory-backed state. Size="],
        ),
        (Signature(message="State change: SUSPENDED"), ["State change: SUSPENDED"]),
        (
            Signature(message="Decline checkpoint (?<checkpoint>\\d+) by task (?<task>\\S+) of job"),
            ["Decline checkpoint ", " by task ", " of job"],
        ),
        (Signature(text="OutOfMemoryErrors?: Java heap"), ["OutOfMemoryError", ": Java heap"]),  # s? is optional
        (Signature(text="abc(?:defg)?hijk"), ["hijk"]),  # inside an optional group: not required
        (Signature(text="[Cc]heckpoint expired"), ["heckpoint expired"]),
        (Signature(text="timeout|expired"), []),  # alternatives: neither is required
        (Signature(text="(?i)timeout"), []),  # any case: no literal holds
        (Signature(text="\\nCaused by: x"), ["\nCaused by: x"]),  # \n is a newline, part of the literal
        (Signature(logger="org\\.apache\\.flink"), []),  # only text, message and exception count
        (Signature(message="x{2}yyy", literal="Checkpoint"), ["Checkpoint"]),
    ],
)
def test_required_literals_come_from_the_parse_tree(signature, literals):
    assert required_literals(signature) == literals


def test_every_shipped_signature_has_a_prefilter_pattern():
    rules = load_rules()
    prefilter = build_prefilter(rules)
    assert all(prefilter.signatures)
    assert sum(len(r.signatures) for r in rules) == len(prefilter.signatures)


def test_the_patterns_are_numbered_alike_in_every_process():
    """The compiled database is kept by a digest of the patterns in order (prefilter.serialized): numbered in a
    set's order, which follows the string hash's seed, every run missed the cache and compiled again."""
    import os
    import subprocess
    import sys

    script = (
        "import hashlib; from flinkdoctor.knowledge.rulebook import load_rules; "
        "from flinkdoctor.scan.prefilter import build_prefilter; "
        "print(hashlib.sha256(repr(build_prefilter(load_rules())).encode()).hexdigest())"
    )
    digests = {
        subprocess.run(
            [sys.executable, "-c", script],
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in ("1", "2", "3")
    }
    assert len(digests) == 1


def _hits(rules, text: bytes):
    """The pass over `text` cut into events at each line that starts with a year (a log4j header)."""
    import re

    import numpy as np

    from flinkdoctor.scan.prefilter import scan

    prefilter = build_prefilter(rules)
    begin = np.array([m.start() for m in re.finditer(rb"(?m)^20\d\d-", text)], dtype=np.int64)
    first_line_end = np.array([text.index(b"\n", b) + 1 for b in begin], dtype=np.int64)
    hits = scan(prefilter, np.frombuffer(text, dtype=np.uint8), begin, first_line_end)
    return prefilter, hits


# lines as Flink 1.20.3 prints them (tests/data/lab/1.20.3/checkpoint-timeout.tar.gz and network-buffers.tar.gz)
EXPIRED = (
    b"2026-11-22 11:12:07,808 INFO  org.apache.flink.runtime.checkpoint.CheckpointCoordinator    [] - Checkpoint 1 "
    b"of job 1fdf09bfd9a6f5522794ffa2f96c327e expired before completing.\n"
)
TRIGGERING = (
    b"2026-11-22 11:12:02,808 INFO  org.apache.flink.runtime.checkpoint.CheckpointCoordinator    [] - Triggering "
    b"checkpoint 1 (type=CheckpointType{name='Checkpoint', sharingFilesStrategy=FORWARD_BACKWARD}) @ 1795345922802 "
    b"for job 1fdf09bfd9a6f5522794ffa2f96c327e.\n"
)
CAUSED_BY = (
    b"Caused by: java.io.IOException: Insufficient number of network buffers: required 9, but only 1 available.\n"
)


def _rule(*signatures):
    from flinkdoctor.knowledge.rulebook import Rule

    return Rule("t", "t", "other", "cause", tuple(signatures), "", (), "t.yaml")


def test_the_pass_names_the_events_each_whole_regex_can_match():
    """An event is a candidate of a signature when each of its regexes can match in it (not because it holds a
    literal of one); level words count in an event's first line only."""
    rule = _rule(
        Signature(text=r"Checkpoint (?<id>\d+) of job [0-9a-f]+ expired before completing"),
        Signature(text=r"Insufficient number of network buffers", exception=r"java\.io\.IOException"),
    )
    warned = EXPIRED.replace(b"INFO ", b"WARN ")
    text = EXPIRED + EXPIRED.replace(b"Checkpoint 1 ", b"Checkpoint ") + warned + CAUSED_BY + TRIGGERING
    prefilter, hits = _hits([rule], text)
    assert hits.signature_events(prefilter.signatures[0]).tolist() == [0, 2]  # not the one without a number
    assert hits.signature_events(prefilter.signatures[1]).tolist() == [2]  # both regexes, in its second line
    assert hits.level_words.tolist() == [2]  # WARN in event 2's header; the trace's lines are no header


def test_a_signature_that_is_a_level_word_is_a_candidate_wherever_it_matches():
    """A signature whose pattern is the same text as a level word (error-event's `\\bERROR\\b`) keeps its own
    pattern: a level word counts only in an event's first line, the signature in every line (before, the two
    shared a number and the signature matched nothing)."""
    rule = _rule(Signature(text=r"\bERROR\b"))
    errored = EXPIRED.replace(b"INFO ", b"ERROR")
    prefilter, hits = _hits([rule], EXPIRED + errored)
    assert hits.signature_events(prefilter.signatures[0]).tolist() == [1]
    assert hits.level_words.tolist() == [1]


def test_a_match_across_two_events_is_a_candidate_of_the_later_only():
    """A regex's match that starts in one event and ends in the next makes the next a candidate (the matcher
    then finds none in it); no event that holds a whole match is missed."""
    prefilter, hits = _hits([_rule(Signature(text=r"completing\.\n2026"))], EXPIRED + TRIGGERING)
    assert hits.signature_events(prefilter.signatures[0]).tolist() == [1]


@pytest.mark.parametrize(
    "regex, nested",
    [
        (r"(a+)+", True),
        (r"(\w*)*", True),
        (r"x(?:\s*\S+)+y", True),
        (r"(a*){2,5}", True),
        (r"((?:ab)+c)+", True),
        (r"(?:\S+\s+)?x", False),
        (r"(?:a+)++", False),
        (r"(?>a+)+", False),
        (r"(?:\w++\.)+E", False),
        (r"(?:ab){2,}", False),
        (r"(?<n>\d+) of (?<m>\d+)", False),
    ],
)
def test_nested_quantifiers_are_found_in_the_parse_tree(regex, nested):
    assert bool(nested_quantifier(regex)) is nested


def test_findings_of_rules_for_other_versions_are_dropped(tmp_path):
    (tmp_path / "future-only.yaml").write_text(
        "id: future-only\ntitle: A rule for a Flink that does not exist\ncategory: other\nrole: cause\n"
        "versions: '>=9.9'\nmatch:\n  - text: 'Something happened'\nexplanation: Something long enough to pass.\n"
        "references: [x]\nfix: [{text: nothing}]\ngap: none\ncases: []\n"
    )
    rules = {r.id: r for r in load_rules([tmp_path])}
    assert not rules["future-only"].applies_to("1.20.3") and rules["future-only"].applies_to("9.9.1")
    assert rules["future-only"].applies_to(None)  # an unknown version keeps every rule
    findings = [
        Finding("future-only", 0, 1, None, None, None, "Something happened"),
        Finding("jvm-heap-oom", 0, 2, None, None, None, "java.lang.OutOfMemoryError: Java heap space"),
    ]
    counts = {"future-only": 3, "jvm-heap-oom": 1}
    kept, kept_counts = keep_applicable(findings, counts, rules, "1.20.3")
    assert [f.rule for f in kept] == ["jvm-heap-oom"] and kept_counts == {"jvm-heap-oom": 1}
    assert keep_applicable(findings, counts, rules, "10.0") == (findings, counts)
    assert keep_applicable(findings, counts, rules, "1.20+")[1] == {"jvm-heap-oom": 1}


def test_onset_goes_back_by_the_silence():
    rules = {r.id: r for r in load_rules()}
    finding = Finding(
        "zookeeper-client-session-timeout",
        0,
        1,
        datetime(2019, 4, 23, 17, 39, 19, 323000),
        None,
        None,
        "",
        {"silence": "129565"},
    )
    assert onset(finding, rules["zookeeper-client-session-timeout"]) == datetime(2019, 4, 23, 17, 37, 9, 758000)


@pytest.mark.parametrize("stuck", ["99999999999999", "1e400", "nan", "inf"])
def test_a_duration_no_calendar_holds_places_the_finding_at_its_own_time(stuck):
    """A soft lockup "stuck for 99999999999999s" (hostile or corrupt input) goes back further than year 1: the
    onset is then the finding's own time, and correlation goes on (it was an OverflowError)."""
    from flinkdoctor.diagnosis.correlate import correlate

    rules = {r.id: r for r in load_rules()}
    when = datetime(2019, 4, 23, 17, 39, 19)
    lockup = Finding("kernel-soft-lockup", 0, 1, when, "tm-1", None, "", {"stuck": stuck})
    assert onset(lockup, rules["kernel-soft-lockup"]) == when
    heartbeat = Finding("taskmanager-heartbeat-timeout", 1, 5, when, "tm-1", None, "")
    counts = {"kernel-soft-lockup": 1, "taskmanager-heartbeat-timeout": 1}
    assert correlate([lockup, heartbeat], counts, rules)


def test_block_offsets_number_lines_across_blocks():
    assert block_offsets({3: [(0, 10), (1000, 5), (2000, 7)]}) == {(3, 0): 0, (3, 1000): 10, (3, 2000): 15}


def test_layout_detection_on_seed_lines():
    assert (
        detect_layout(["Apr 23 17:39:19 hadoop-080-037 kernel: NMI watchdog: BUG: soft lockup - CPU#12 stuck"])
        == "syslog"
    )
    assert (
        detect_layout(
            [
                "2020-10-16 17:05:07,612 INFO org.apache.flink.runtime.taskexecutor.TaskExecutor - "
                "JobManager for job 1bb3b7bdcfbc39cf760064ed9736ea80 lost leadership."
            ]
        )
        == "flink-log4j1"
    )
    assert detect_layout(["java.io.InterruptedIOException: x", "\tat a.b(C.java:1)"]) == "plain"


def test_secrets_are_redacted():
    line = (
        "sasl.jaas.config = org.apache.kafka.common.security.plain.PlainLoginModule required "
        'username="svc" password="hunter2";'
    )
    assert "hunter2" not in mask(line)
    assert "hunter2" not in mask("ssl.truststore.password = hunter2")
    assert mask("Checkpoint 5 of job 1 expired") == "Checkpoint 5 of job 1 expired"


def test_the_scan_masks_the_texts_that_need_it_each_in_its_own_row():
    import pyarrow as pa

    from flinkdoctor.scan.scanner import _masked

    # a real Flink 2.1.1 configuration dump line (lab run checkpoint-timeout); the secret values are planted
    head = "2026-11-23 07:49:51,900 INFO  org.apache.flink.configuration.GlobalConfiguration           [] - "
    texts = [
        head + "Loading configuration property: state.backend.type, hashmap",
        head + "Loading configuration property: s3.secret-key, AKIAIOSFODNN7SECRET1",
        head + "Loading configuration property: taskmanager.numberOfTaskSlots, 2",
        head
        + 'Loading configuration property: properties.sasl.jaas.config, PlainLoginModule required password="pw-77";',
        head + "Loading configuration property: rest.port, 41731",
    ]
    expected = [mask(text) for text in texts]
    assert sum(a != b for a, b in zip(texts, expected, strict=True)) == 2
    masked, changed = _masked(pa.array(texts))
    assert masked.to_pylist() == expected
    assert changed.tolist() == [a != b for a, b in zip(texts, expected, strict=True)]  # rows to match again
    masked, changed = _masked(pa.array(texts).slice(1))  # an array that starts at an offset
    assert masked.to_pylist() == expected[1:]
    assert changed.tolist() == [a != b for a, b in zip(texts[1:], expected[1:], strict=True)]


def test_the_pass_names_every_event_whose_text_the_masks_trigger_matches():
    """The scan runs the masks' trigger (RE2) only on the events the pass names for it: every event whose text
    (CRLF read as LF) it matches must be named, whatever the case folding, blanks or line ends; an event without a
    secret's word is not. Real 1.20.3 lines and the hostile corpus's planted secrets."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from flinkdoctor.safety.masking import TRIGGER_RE2
    from flinkdoctor.scan.prefilter import scan
    from hostile_input import CONFIG_LINE, HEADER_SECRET, PRIVATE_KEY, SECRETS, URL_SECRETS

    head = EXPIRED.decode().split(" - ")[0] + " - "
    secrets = [CONFIG_LINE.format(key=k, value=v) for k, v in SECRETS.values()]
    secrets += [head + url for url in URL_SECRETS] + [head + "request header " + HEADER_SECRET]
    secrets += [head + "key material\n-----BEGIN PRIVATE KEY-----\n" + PRIVATE_KEY + "\n-----END PRIVATE KEY-----"]
    secrets += [  # folds RE2 makes (Kelvin sign, long s), Python's blanks, a key and its = on two lines
        head + "to\u212aen=abc",
        head + "pa\u017f\u017fword: x",
        head + "SECRET\u00a0= x",
        head + "connector password\n  = hunter2",
        head + "ASIA" + "Y" * 16,
    ]
    plain = [EXPIRED.decode().rstrip("\n"), TRIGGERING.decode().rstrip("\n"), CAUSED_BY.decode().rstrip("\n")]
    plain += [head + "restoring from hdfs://namenode:8020/flink/checkpoints/chk-12"]
    texts = secrets + plain
    for line_end in ("\n", "\r\n"):
        events = [(text + "\n").replace("\n", line_end).encode() for text in texts]
        begin = np.cumsum([0] + [len(e) for e in events[:-1]]).astype(np.int64)
        first_line_end = np.array([b + e.index(b"\n") + 1 for b, e in zip(begin, events, strict=True)], dtype=np.int64)
        prefilter = build_prefilter(load_rules())
        hits = scan(prefilter, np.frombuffer(b"".join(events), dtype=np.uint8), begin, first_line_end)
        assert prefilter.trigger is not None
        named = set(hits.by_pattern.get(prefilter.trigger, np.zeros(0)).tolist())
        matched = pc.match_substring_regex(pa.array(texts), TRIGGER_RE2).to_numpy(zero_copy_only=False)
        assert matched[: len(secrets)].all() and not matched[len(secrets) :].any()
        assert named == set(range(len(secrets)))


_TRIGGER_PIECES = (
    # the trigger's own words, in other cases and with the folds RE2 makes (Kelvin sign for k, long s for s)
    *("private key-----", "configuration property: ", "authorization", "bearer", "akia", "asia"),
    *("password", "PASSWORD", "pa\u017f\u017fword", "secret", "token", "to\u212aen", "access-key", "sasl.jaas.config"),
    # what may stand between a key and its separator, or around a URL's user info
    *("\t", " ", "\x0b", "\x1c", "\x85", "\xa0", "\u2028", "\u3000", "\n", "\r\n", "_", ".", "-", '"', "'"),
    *("=", ":", "://", "@", "/", "user", "9", "\u00e9", "\u4e2d", "Exception", "hdfs://namenode:8020/chk-1"),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(st.sampled_from(_TRIGGER_PIECES), max_size=8).map("".join), min_size=1, max_size=6))
def test_the_pass_names_every_event_the_masks_trigger_matches_in_any_text(texts):
    """The property behind the scan's masking: RE2 runs the trigger only on the events the pass names, so the
    pass must name every event whose text RE2 matches (more is allowed), whatever the pieces of a secret's shape
    are put together: folds, Python's blanks, separators and line ends mixed."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from flinkdoctor.safety.masking import TRIGGER_RE2
    from flinkdoctor.scan.prefilter import scan

    head = EXPIRED.decode().split(" - ")[0] + " - "
    events = [(head + text + "\n").encode() for text in texts]
    begin = np.cumsum([0] + [len(e) for e in events[:-1]]).astype(np.int64)
    first_line_end = np.array([b + e.index(b"\n") + 1 for b, e in zip(begin, events, strict=True)], dtype=np.int64)
    prefilter = _PREFILTER()
    hits = scan(prefilter, np.frombuffer(b"".join(events), dtype=np.uint8), begin, first_line_end)
    assert prefilter.trigger is not None
    named = set(hits.by_pattern.get(prefilter.trigger, np.zeros(0)).tolist())
    texts_as_read = [(head + text).replace("\r\n", "\n") for text in texts]
    matched = pc.match_substring_regex(pa.array(texts_as_read), TRIGGER_RE2).to_numpy(zero_copy_only=False)
    assert set(np.flatnonzero(matched).tolist()) <= named


@functools.cache
def _PREFILTER():  # noqa: N802 (a constant, built once: the rules' database takes a second)
    return build_prefilter(load_rules())


@pytest.mark.parametrize(
    "regex, compiles, problem",
    [
        (r"Checkpoint (?<id>\d+) expired", True, None),
        (r"(x", False, "bad regex '(x'"),
        (r"(a+)+b", True, "can backtrack catastrophically"),
    ],
)
def test_every_loader_refuses_the_same_regexes(regex, compiles, problem):
    """Rules, metrics, layouts and shapes all check their regexes with regexes.checked."""
    from flinkdoctor.knowledge.regexes import checked

    compiled, found = checked(regex)
    assert (compiled is not None) == compiles
    assert (found is None) if problem is None else (found is not None and problem in found)


def test_a_message_below_the_first_line_is_matched_on_its_line():
    """Every line is matchable: a `message` regex that does not match the header's message is tried on each later
    line that is no stack frame (here a pasted event whose second line quotes the JobManager's message, both lines
    as Flink 1.20.3 prints them: tests/data/lab/1.20.3/checkpoint-timeout.tar.gz)."""
    from flinkdoctor.scan.matcher import Fields, build_matcher

    rule = next(r for r in load_rules() if r.id == "checkpoint-expired")
    matcher = build_matcher([rule], catalogue=None)
    trigger = (
        "Triggering checkpoint 1 (type=CheckpointType{name='Checkpoint', sharingFilesStrategy=FORWARD_BACKWARD}) "
        "@ 1795345922802 for job 1fdf09bfd9a6f5522794ffa2f96c327e."
    )
    expired = "Checkpoint 1 of job 1fdf09bfd9a6f5522794ffa2f96c327e expired before completing."
    numbers = list(range(len(rule.signatures)))
    quoted = Fields(f"{trigger}\n    {expired}", trigger, None, None, None, "text")
    (found,) = matcher.match(quoted, numbers)
    assert found[0] == "checkpoint-expired" and found[2] == 1 and found[1].get("checkpoint") == "1"
    alone = Fields(trigger, trigger, None, None, None, "text")
    assert matcher.match(alone, numbers) == []
    header = Fields(expired, expired, "INFO", "org.apache.flink.runtime.checkpoint.CheckpointCoordinator", "", "text")
    assert [(rule_id, idx) for rule_id, _, idx in matcher.match(header, numbers)] == [("checkpoint-expired", 0)]


def test_one_damaged_header_does_not_hand_a_log_to_a_layout_of_times_only():
    """A real Flink JobManager log (tests/data/shapes/decorated, its quotes taken off) with Latin-1 bytes in one
    header (shown as U+FFFD): its layout still reads levels and loggers, not only the times (dated-text)."""
    from conftest import DATA

    lines = [
        line.removeprefix("> ") for line in (DATA / "shapes/decorated/jobmanager-quoted.txt").read_text().split("\n")
    ]
    clean = detect_layout(lines)
    lines[0] = lines[0].replace("DefaultPluginManager", "DefaultPluginMa\ufffd\ufffde \ufffdberschrittennager")
    assert clean == detect_layout(lines) == "flink-log4j2"


@pytest.mark.parametrize("first", ["network-host-unreachable", "taskmanager-heartbeat-timeout"])
def test_of_two_causes_that_explain_each_other_without_times_the_earlier_line_is_the_root(first):
    """A log without dates (time-only stamps): two cause rules that explain each other cannot be ordered by time;
    the one found first in the source they share is the root cause, never neither (then a symptom was derived)."""
    from flinkdoctor.diagnosis.correlate import correlate

    rules = {r.id: r for r in load_rules()}
    pair = ["network-host-unreachable", "taskmanager-heartbeat-timeout"]
    order = [first, *(r for r in pair if r != first)]
    findings = [Finding(rule, 0, line, None, None, None, "") for line, rule in enumerate(order, 10)]
    roots = correlate(findings, {rule: 1 for rule in pair}, rules)
    assert [root.rule.id for root in roots] == [first]


def test_an_event_without_a_level_is_tried_by_the_signatures_that_name_none(tmp_path, rules):
    """The scan tries a signature on an event only where its kind and level are admitted (Matcher.admitted), an
    event without a level given as `None` past the levels' codes: the rule cases of events whose level was left
    out (a person's timeline, a dated line) match in the scan as their `NONE` signatures say."""
    from flinkdoctor.analytics import load_metrics
    from flinkdoctor.scan.matcher import NO_LEVEL, build_matcher
    from flinkdoctor.scan.scanner import Part, scan_part

    matcher = build_matcher(rules, tuple(m.line for m in load_metrics()), catalogue=None)
    cases = [
        (rule.id, case)
        for rule in rules
        if any(NO_LEVEL in (sig.level or ()) for sig in rule.signatures)
        for case in rule.cases
        if case.expect_match and case.layout == "dated-text"
    ]
    assert len(cases) >= 2
    for number, (rule, case) in enumerate(cases):
        path = tmp_path / f"case-{number}.log"
        path.write_text(case.text, encoding="utf-8")
        size = path.stat().st_size
        part = Part(0, str(path), 0, size, size, "dated-text", False, True, case.kind or "flink-taskmanager")
        batches = [out for out in scan_part(part, matcher.prefilter, matcher) if not hasattr(out, "lines")]
        events = [row for batch in batches for row in batch.to_pylist()]
        assert any(event["level"] is None for event in events), case.source
        assert rule in {m["rule"] for event in events for m in event["matches"]}, case.source


def _pairwise_edge(cause_rule, causes, effect_rule, effects):
    """The reference: every (cause, effect) pair tried in order, each cause's onset read again for each effect (the
    form _edge had before it found a cause's effects by time)."""
    from flinkdoctor.diagnosis.correlate import _covers, _in_scope

    for relation in cause_rule.explains:
        if not _covers(relation, effect_rule):
            continue
        for cause in causes:
            for effect in effects:
                start = onset(cause, cause_rule)
                if start is None or effect.time is None:
                    placed = True
                else:
                    end = (cause.time or start) + timedelta(milliseconds=relation.after_ms)
                    placed = start - timedelta(milliseconds=relation.before_ms) <= effect.time <= end
                if _in_scope(relation.scope, cause, effect) and placed:
                    return cause, effect
    return None


_SECONDS = st.one_of(st.none(), st.integers(0, 600))  # a finding's time: seconds into a ten-minute incident


@st.composite
def _instances(draw, rule):
    """A rule's kept instances: times (some missing, some equal), hosts, jobs, sources and an onset capture."""
    out = []
    for line in range(draw(st.integers(0, 12))):
        seconds = draw(_SECONDS)
        time = None if seconds is None else datetime(2026, 11, 27, 20) + timedelta(seconds=seconds)
        stuck = draw(st.one_of(st.none(), st.sampled_from(["0", "1500", "90000", "x"])))
        captures = {} if stuck is None else {"stuck": stuck}
        host, job = draw(st.sampled_from([None, "", "tm-1", "tm-2"])), draw(st.sampled_from([None, "j1", "j2"]))
        out.append(Finding(rule, draw(st.integers(0, 2)), line, time, host, job, "", captures))
    return out


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_causes_effects_found_by_time_are_the_pairs_tried_in_order(data):
    """correlate._edge finds each cause's effects by time: the pair it gives (and so the chain's instance) is the
    first pair in the lists' order that the rule's relations accept, as trying every pair gave, for any scope,
    window, onset, missing time or host, and more than one relation to the same rule."""
    import dataclasses

    from flinkdoctor.diagnosis.correlate import _edge
    from flinkdoctor.knowledge.rulebook import Capture, Relation

    relation = st.builds(
        Relation,
        rule=st.just("effect"),
        category=st.none(),
        scope=st.sampled_from(["source", "host", "job", "cluster"]),
        before_ms=st.sampled_from([0, 1000, 60_000, 300_000]),
        after_ms=st.sampled_from([0, 1000, 60_000, 300_000]),
    )
    template = next(r for r in load_rules() if r.role == "cause")
    cause_rule = dataclasses.replace(
        template,
        id="cause",
        onset=data.draw(st.sampled_from([None, "stuck"])),
        captures={"stuck": Capture("stuck", unit=data.draw(st.sampled_from(["ms", "s", None])))},
        explains=tuple(data.draw(st.lists(relation, min_size=1, max_size=3))),
    )
    effect_rule = dataclasses.replace(template, id="effect")
    causes, effects = data.draw(_instances("cause")), data.draw(_instances("effect"))
    found, expected = (
        _edge(cause_rule, causes, effect_rule, effects),
        _pairwise_edge(cause_rule, causes, effect_rule, effects),
    )
    assert (found is None) == (expected is None)
    if found is not None and expected is not None:  # the very instances (equal findings may be distinct ones)
        assert found[0] is expected[0] and found[1] is expected[1]
