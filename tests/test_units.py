"""Pure functions, no Spark."""

from __future__ import annotations

from datetime import datetime

import pytest

from flinkdoctor.diagnosis.correlate import onset
from flinkdoctor.diagnosis.findings import Finding, block_offsets, keep_applicable
from flinkdoctor.knowledge.regexes import nested_quantifier
from flinkdoctor.knowledge.rulebook import Signature, load_rules
from flinkdoctor.knowledge.versions import detect, matches, specifier
from flinkdoctor.safety.masking import mask
from flinkdoctor.scan.prefilter import build_prefilter, required_literals
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


def test_every_shipped_signature_has_a_prefilter_literal():
    rules = load_rules()
    prefilter = build_prefilter(rules)
    assert all(prefilter.signatures)
    assert sum(len(r.signatures) for r in rules) == len(prefilter.signatures)


def test_rare_hits_name_the_events_holding_each_literal_where_it_counts():
    """A header-only literal counts only in an event's first line; a part where no literal counts gives none."""
    import numpy as np

    from flinkdoctor.scan.prefilter import Prefilter, rare_hits

    prefilter = Prefilter(("lost the leadership", "Caused by"), (True, False), ((0,), (1,)), (0, 1))
    text = (
        b"2026-03-01 00:00:00,001 INFO x - JobMaster lost the leadership\n"
        b"2026-03-01 00:00:00,002 WARN x - failed\n"
        b"Caused by: java.io.IOException: lost the leadership\n"
    )
    data = np.frombuffer(text, dtype=np.uint8)
    begin = np.array([0, text.index(b"2026", 10)])
    first_line_end = np.array([text.index(b"\n") + 1, text.index(b"\n", begin[1]) + 1])
    found = rare_hits(prefilter, data, begin, first_line_end)
    assert {k: v.tolist() for k, v in found.items()} == {0: [0], 1: [1]}
    assert rare_hits(prefilter, data[begin[1] :], np.array([0]), first_line_end[1:] - begin[1]) == {1: [0]}
    only_header = Prefilter(("lost the leadership",), (True,), ((0,),), (0,))
    assert rare_hits(only_header, data[begin[1] :], np.array([0]), first_line_end[1:] - begin[1]) == {}


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
    assert _masked(pa.array(texts)).to_pylist() == expected
    assert _masked(pa.array(texts).slice(1)).to_pylist() == expected[1:]  # an array that starts at an offset


def _exact(pf, text):
    """exact_signatures of `text` when the first pass hit every event with every rare literal."""
    import numpy as np

    from flinkdoctor.scan import prefilter

    every = np.arange(len(text))
    return prefilter.exact_signatures(pf, {lit: every for lit in pf.rare if lit >= 0}, every, text).to_pylist()


def test_prefilter_lists_the_signatures_whose_literals_an_event_holds():
    import numpy as np
    import pyarrow as pa

    from flinkdoctor.scan import prefilter

    pf = prefilter.Prefilter(
        literals=("heap space", "OutOfMemoryError", "State change: SUSPENDED", "x"),
        header_only=(False, False, True, False),
        signatures=((0, 1), (2,), (3,)),
        rare=(0, 2, 3),
    )
    text = pa.array(
        [
            "a\njava.lang.OutOfMemoryError: Java heap space",  # both literals, on a continuation line
            "State change: SUSPENDED",  # header-only literal in the header
            "foo\nState change: SUSPENDED",  # ... but not in the first line
            None,
            "heap space",
            "OutOfMemoryError: heap",
            "x",
            "x\nOutOfMemoryError heap space x OutOfMemoryError",  # literals repeated: each counts once
        ]
    )
    expected = [[0], [1], [], [], [], [], [2], [0, 2]]
    assert _exact(pf, text) == expected
    assert _exact(pf, text.slice(1)) == expected[1:]
    # only the events the first pass hit are listed
    hit = {0: np.array([0, 4]), 2: np.array([1]), 3: np.array([], dtype=np.int64)}
    assert prefilter.exact_signatures(pf, hit, np.arange(len(text)), text).to_pylist()[:2] == [[0], [1]]
    assert prefilter.exact_signatures(pf, {2: np.array([1])}, np.arange(len(text)), text).to_pylist()[0] == []
    # the fallback without Hyperscan finds the same pairs
    rows = np.arange(len(text))
    event, literal = prefilter._hits_pyarrow(pf, text.fill_null(""))
    found = sorted(set(zip(*map(list, prefilter.literal_hits(pf, text, rows)), strict=True)))
    assert sorted(zip(event.tolist(), literal.tolist(), strict=True)) == found


def test_rules_whose_signature_holds_no_literal_are_refused(tmp_path):
    from flinkdoctor.knowledge.rulebook import RuleError, builtin_rules_dir, load_rules

    source = next(p for p in sorted(builtin_rules_dir().rglob("*.yaml")) if p.name != "relations.yaml")
    text = source.read_text("utf-8")
    assert "match:" in text
    bad = tmp_path / source.name
    bad.write_text(text.replace("match:", "match:\n  - message: '(?i)foo.*bar'", 1), "utf-8")
    with pytest.raises(RuleError, match=r"match/0: no plain text .* add 'literal:'"):
        load_rules([tmp_path], builtin=False)


def test_literals_spanning_two_events_count_for_neither():
    import pyarrow as pa

    from flinkdoctor.scan import prefilter

    pf = prefilter.Prefilter(literals=("ab",), header_only=(False,), signatures=((0,),), rare=(0,))
    assert _exact(pf, pa.array(["xa", "bx", "ab"])) == [[], [], [0]]


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
