"""The readers the shape-invariance suite asked for (sources/shapes.py, sources/kubernetes.py, layouts.yaml), on
the shapes its transformations write of real logs (no Spark): each shape is read back into the plain lines, and a
plain log is still read as it is."""

from __future__ import annotations

import json
import re
import tarfile

import pytest
from shape_transforms import (
    ci_markers,
    compose_prefix,
    docker_json,
    indent,
    kubectl_events,
    kubectl_prefix,
    line_numbers,
    localized_zh_cn,
    mail_wrap,
    operator_status,
    quote,
    time_only,
    timeline,
    tui_box,
)

from conftest import DATA
from flinkdoctor.sources.layouts import detect_layout, layout_by_id
from flinkdoctor.sources.shapes import is_record, normalise, plan

PLAIN = DATA / "shapes" / "decorated" / "jobmanager.log"  # a real failure: Flink 2.1.1's JobManager failing to start
TEXT = PLAIN.read_text("utf-8")
D23 = (DATA / "incidents" / "d23" / "bundle" / "taskmanager.log").read_text("utf-8")


def _read(text: str, tmp_path):
    """(plan, copied lines, line map) of a text as staging reads it."""
    path = tmp_path / "in.log"
    path.write_bytes(text.encode("utf-8"))
    shape = plan(path.read_bytes()[: 256 * 1024])
    out: list[bytes] = []
    line_map = normalise(shape, path, out.append) if shape else None
    lines = b"".join(out).decode("utf-8").splitlines() if shape else text.splitlines()
    return shape, lines, line_map


def _shaped(transform, text: str = TEXT, name: str = "jobmanager.log") -> str:
    pair = transform({name: text})
    assert pair is not None
    return next(iter(pair[1].values()))


def test_line_numbers_come_off(tmp_path):
    shape, lines, line_map = _read(_shaped(line_numbers), tmp_path)
    assert shape.strips == ("line-number",)
    assert lines == TEXT.splitlines()
    grep = "\n".join(f"{n}{':' if 'ERROR' in line else '-'}{line}" for n, line in enumerate(TEXT.splitlines(), 120))
    assert _read(grep, tmp_path)[1] == TEXT.splitlines()  # grep -n with context lines


def test_lines_run_together_behind_jenkins_markers_are_split(tmp_path):
    shape, lines, line_map = _read(_shaped(ci_markers), tmp_path)
    assert shape.split == "jenkins-timestamps"
    assert lines == TEXT.splitlines()
    assert {line_map.original(n) for n in range(1, len(lines) + 1)} == {1}  # all from the one line


def test_a_mail_archives_hard_wrap_is_joined_back(tmp_path):
    shaped = _shaped(mail_wrap)
    shape, lines, line_map = _read(shaped, tmp_path)
    assert shape.unwrap == 80
    header = layout_by_id("flink-log4j2").python_regex
    plain = [line for line in TEXT.splitlines() if header.match(line)]
    read = [line for line in lines if header.match(line)]
    assert len(read) == len(plain)  # every header whole again, its level, logger and message on one line
    assert [re.sub(r"\s+", " ", line) for line in read] == [re.sub(r"\s+", " ", line).strip() for line in plain]
    original = shaped.splitlines()
    for number, line in enumerate(lines, 1):  # each joined line cites the line it starts on
        assert original[line_map.original(number) - 1].split()[0] == line.split()[0]


def test_a_terminal_uis_box_is_taken_off_and_its_folds_joined(tmp_path):
    shape, lines, _ = _read(_shaped(tui_box), tmp_path)
    assert shape.strips == ("table",)
    header = layout_by_id("flink-log4j2").python_regex
    assert sum(1 for line in lines if header.match(line)) == sum(1 for line in TEXT.splitlines() if header.match(line))
    words = [line.split() for line in lines if not re.match(r"^[─┌┐└┘]+$", line)]
    assert [w for ws in words for w in ws] == TEXT.split()


def test_a_timeline_and_time_only_stamps_are_read_by_a_layout(tmp_path):
    shape, lines, _ = _read(_shaped(timeline), tmp_path)
    assert shape.strips == ("bullet", "item-indent") and detect_layout(lines) == "dated-text"
    assert detect_layout(_shaped(time_only).splitlines()) == "log4j-time-only"


def test_localized_error_texts_are_read_with_their_english(tmp_path):
    english = D23.removeprefix(">").replace("拒绝连接 (Connection refused)", "Connection refused")
    shape, lines, _ = _read(_shaped(localized_zh_cn, english, "tm.log"), tmp_path)
    assert shape.localized and lines[0] == "Caused by: java.net.ConnectException: 拒绝连接 (Connection refused)"
    shape, lines, _ = _read(D23, tmp_path)  # as posted: the English is there already, nothing added
    assert lines[0] == ">Caused by: java.net.ConnectException: 拒绝连接 (Connection refused)"[1:]


def test_kubectl_event_rows_put_their_message_on_a_line(tmp_path):
    shape, lines, _ = _read(_shaped(kubectl_events), tmp_path)
    assert shape.event_table
    row = next(i for i, line in enumerate(lines) if line.lstrip().startswith("Warning"))
    assert lines[row].split() == ["Warning", "JobException", "2m", "Job"]
    assert lines[row + 1].startswith("org.apache.flink.runtime.entrypoint.ClusterEntrypointException: Failed to")


def test_an_operators_status_error_is_read_as_a_trace(tmp_path):
    shaped = _shaped(operator_status)
    shape, lines, line_map = _read(shaped, tmp_path)
    assert shape.document == "kubernetes-yaml"
    at = lines.index("status.error:")
    assert lines[at + 1].startswith("org.apache.flink.kubernetes.operator.exception.ReconciliationException: ")
    assert lines[at + 2].startswith("Caused by: org.apache.flink.runtime.entrypoint.ClusterEntrypointException")
    assert lines[at + 3] == "Caused by: java.io.IOException: Could not create storage directory for BLOB store in " + (
        "'/opt/run/afile/blobs'."
    )
    assert shaped.splitlines()[line_map.original(at + 2) - 1].startswith("  error: '{")


def test_prefixes_come_off_structured_records_too(tmp_path):
    d13 = (DATA / "incidents" / "d13" / "bundle" / "flink-operator.log").read_text("utf-8")
    shape, lines, _ = _read(_shaped(quote, d13), tmp_path)
    assert (shape.strips, shape.records) == (("quote",), "logfmt")
    assert lines[0].startswith("@2019-06-03T18:10:48.000 ERROR [] ")


def test_a_one_line_container_log_is_a_log_not_a_document():
    line = _shaped(docker_json, D23.splitlines()[0] + "\n", "tm.log").splitlines()[0]
    assert is_record(json.loads(line))


def test_untimed_text_is_cut_into_events_by_what_its_lines_are(tmp_path):
    plain = layout_by_id("plain").python_regex
    starts = {
        "java.lang.IllegalStateException: boom": True,
        "\tat org.apache.flink.Foo.bar(Foo.java:1)": False,
        "at org.apache.flink.Foo.bar(Foo.java:1)": False,  # a frame whose tab a paste lost
        "Caused by: java.io.IOException: x": False,
        "\t... 12 more": False,
        "": True,  # a blank line ends an event
        "  nested: value": False,
        "}": False,
        "  Warning  BackOff  2m (x5 over 4m)  kubelet  Back-off restarting failed container": True,
    }
    assert {line: bool(plain.match(line)) for line in starts} == starts
    # every line indented: the indentation comes off, so its lines are cut as they would be unindented
    shape, lines, _ = _read(_shaped(indent, D23.removeprefix(">")), tmp_path)
    assert shape.strips == ("indent:2",) and lines == D23.removeprefix(">").splitlines()


@pytest.mark.parametrize("transform", [kubectl_prefix, compose_prefix])
def test_a_collector_prefix_comes_off_records_a_terminal_wrapped(transform, tmp_path):
    """A collector's prefix before every line of JSON records a terminal cut at its width (incident d14): the
    records it leaves count as read although no line alone is one, so the prefix comes off and the records keep
    their times."""
    plain = (DATA / "incidents" / "d14" / "bundle" / "flink-operator.log").read_text("utf-8")
    reference = _read(plain, tmp_path)[1]
    shape, lines, _ = _read(_shaped(transform, plain, "flink-operator.log"), tmp_path)
    assert shape.records == "json" and len(shape.strips) == 1
    assert lines == reference and [line.split(" ")[:2] for line in lines] == [
        ["@2020-03-20T13:27:07.000", "ERROR"],
        ["@2020-03-20T13:27:07.000", "WARN"],
    ]


# how the real excerpts are read: the shapes their posts have, and nothing else (no table or config is unwrapped)
POSTED = {
    "incidents/d02/bundle/flink-client.log": "stripped item-indent",  # its Caused-by part indented by two
    "incidents/d02/bundle/jobmanager.log": "stripped indent:2",
    "incidents/d12/bundle/kubectl-describe.txt": "kubectl events",
    "incidents/d13/bundle/flink-operator.log": "logfmt records",
    "incidents/d14/bundle/flink-operator.log": "json records",
    "incidents/d23/bundle/taskmanager.log": "stripped quote",
}


def test_real_excerpts_are_read_in_their_own_shape():
    paths = sorted(DATA.glob("incidents/d*/bundle/*")) + sorted(DATA.glob("seeds/*/*"))
    read = {}
    for path in paths:
        shape = plan(path.read_bytes()[: 256 * 1024])
        if shape is not None:
            read[path.relative_to(DATA).as_posix()] = shape.describe()
    assert read == POSTED


LAB_LOGS = sorted((DATA / "lab").glob("*/*.tar.gz"))


@pytest.mark.parametrize("bundle", LAB_LOGS, ids=[f"{p.parent.name}/{p.name[:-7]}" for p in LAB_LOGS])
def test_plain_lab_logs_are_read_as_they_are(bundle):
    """No real log of the lab takes a shape: a reader that would reshape plain logs would change their answers."""
    with tarfile.open(bundle) as archive:
        for member in archive.getmembers():
            if member.isfile() and member.name.endswith((".log", ".out")):
                head = archive.extractfile(member).read(256 * 1024)
                assert plan(head) is None, member.name
