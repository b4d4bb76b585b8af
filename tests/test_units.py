"""Pure functions, no Spark."""
from __future__ import annotations

from datetime import datetime

import pytest

from flinkdoctor.correlate import onset
from flinkdoctor.layouts import detect_layout
from flinkdoctor.match import Finding, block_offsets
from flinkdoctor.report import redact
from flinkdoctor.rulebook import _required_literal, load_rules
from flinkdoctor.versions import detect, matches


@pytest.mark.parametrize("spec, version, expected", [
    (">=1.14", "1.10.0", False), (">=1.14", "1.20.3", True), ("<1.13", "1.10", True),
    (">=1.13,<1.17", "1.16.3", True), (">=1.13,<1.17", "1.17.0", False), (">=1.20", "2.1.1", True),
    ("<1.9", None, True),
])
def test_version_specs(spec, version, expected):
    assert matches(spec, version) is expected


def test_version_from_config_keys():
    assert detect([], [{"state.backend.type": "rocksdb"}], []) == ("1.17+", "config")
    assert detect(["1.20.3", "1.20.3"], [], []) == ("1.20.3", "log")
    assert detect([], [], [{"flink-version": "2.1.1"}]) == ("2.1.1", "rest")


def test_required_literal():
    assert _required_literal({"text": r"Size of the state is larger than the maximum permitted memory-backed state\. "
                                      r"Size=\s?(?<size>\d+)"}) == "Size of the state is larger than the maximum " \
                                                                   "permitted memory-backed state. Size="
    assert _required_literal({"message": "State change: SUSPENDED"}) == "State change: SUSPENDED"
    assert _required_literal({"text": "a|b"}) is None
    assert _required_literal({"text": "(?i)timeout"}) is None


def test_every_shipped_signature_has_a_prefilter_literal():
    for rule in load_rules():
        assert all(rule.literals()), rule.id


def test_onset_goes_back_by_the_silence():
    rules = {r.id: r for r in load_rules()}
    finding = Finding("zookeeper-client-session-timeout", 0, 1, datetime(2019, 4, 23, 17, 39, 19, 323000), None,
                      None, "", {"silence": "129565"})
    assert onset(finding, rules["zookeeper-client-session-timeout"]) == datetime(2019, 4, 23, 17, 37, 9, 758000)


def test_block_offsets_number_lines_across_blocks():
    assert block_offsets({3: [(0, 10), (1000, 5), (2000, 7)]}) == {(3, 0): 0, (3, 1000): 10, (3, 2000): 15}


def test_layout_detection_on_seed_lines():
    assert detect_layout(["Apr 23 17:39:19 hadoop-080-037 kernel: NMI watchdog: BUG: soft lockup - CPU#12 stuck"]) \
        == "syslog"
    assert detect_layout(["2020-10-16 17:05:07,612 INFO org.apache.flink.runtime.taskexecutor.TaskExecutor - "
                          "JobManager for job 1bb3b7bdcfbc39cf760064ed9736ea80 lost leadership."]) == "flink-log4j1"
    assert detect_layout(["java.io.InterruptedIOException: x", "\tat a.b(C.java:1)"]) == "plain"


def test_secrets_are_redacted():
    line = ('sasl.jaas.config = org.apache.kafka.common.security.plain.PlainLoginModule required '
            'username="svc" password="hunter2";')
    assert "hunter2" not in redact(line)
    assert "hunter2" not in redact("ssl.truststore.password = hunter2")
    assert redact("Checkpoint 5 of job 1 expired") == "Checkpoint 5 of job 1 expired"


def test_prefilter_lists_the_signatures_whose_literals_an_event_holds():
    import pyarrow as pa
    from flinkdoctor import prefilter

    pf = prefilter.Prefilter(
        literals=("heap space", "OutOfMemoryError", "State change: SUSPENDED", "x"),
        header_only=(False, False, True, False),
        signatures=((0, 1), (2,), (3,)))
    text = pa.array(["a\njava.lang.OutOfMemoryError: Java heap space",  # both literals, on a continuation line
                     "State change: SUSPENDED",                         # header-only literal in the header
                     "foo\nState change: SUSPENDED",                     # ... but not in the first line
                     None, "heap space", "OutOfMemoryError: heap", "x"])
    expected = [[0], [1], [], [], [], [], [2]]
    assert prefilter.scan(pf, text).to_pylist() == expected
    assert prefilter.scan(pf, text.slice(1)).to_pylist() == expected[1:]
    # the fallback without Hyperscan finds the same
    event, literal = prefilter._hits_pyarrow(pf, text.fill_null(""))
    assert sorted(zip(event.tolist(), literal.tolist())) == sorted(set(zip(*map(list, prefilter._hits(pf, text)))))


def test_prefilter_signature_without_literals_is_listed_for_every_event():
    import pyarrow as pa
    from flinkdoctor import prefilter

    pf = prefilter.Prefilter(literals=("boom",), header_only=(False,), signatures=((), (0,)))
    assert prefilter.scan(pf, pa.array(["a", "boom"])).to_pylist() == [[0], [0, 1]]


def test_literals_spanning_two_events_count_for_neither():
    import pyarrow as pa
    from flinkdoctor import prefilter

    pf = prefilter.Prefilter(literals=("ab",), header_only=(False,), signatures=((0,),))
    assert prefilter.scan(pf, pa.array(["xa", "bx", "ab"])).to_pylist() == [[], [], [0]]
