"""Log shapes (shapes.py): detection from the head, reading into plain text, and evidence citing the original.

The fixtures (tests/data/shapes, README there) are real: a Flink 2.1.1 JobManager that failed to start, logged
at once by Flink's own pattern and by log4j's JsonTemplateLayout (ECS, JsonLayout, Logstash templates); a lab
TaskManager log wrapped as Docker's json-file driver and CRI store it; the plain excerpt pasted with decoration.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import DATA, line_at
from flinkdoctor.sources.layouts import detect_layout, layout_by_id
from flinkdoctor.sources.shapes import LineMap, is_record, normalise, plan

SHAPES = DATA / "shapes"
JSON_LOGS = ("jobmanager-ecs.json", "jobmanager-jsonlayout.json", "jobmanager-logstash.json")
WRAPPED = {"taskmanager.docker.log": "docker-json", "taskmanager.cri.log": "cri"}
DECORATED = {
    "jobmanager-quoted.txt": "quote",
    "jobmanager-bullets.txt": ("bullet", "item-indent"),
    "jobmanager-table.txt": "table",
    "jobmanager-indented.txt": "indent:4",
    "jobmanager-kubectl.txt": "kubectl-prefix",
}


def _read(path):
    """(plan, copied lines, line map) of a file."""
    shape = plan(path.read_bytes()[: 256 * 1024])
    assert shape is not None, path
    out: list[bytes] = []
    line_map = normalise(shape, path, out.append)
    return shape, b"".join(out).decode("utf-8").splitlines(), line_map


def _lines(path):
    return path.read_text("utf-8").splitlines()


# -- detection -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [SHAPES / "json/jobmanager.log", SHAPES / "wrapped/taskmanager.log", SHAPES / "decorated/jobmanager.log"]
    + sorted((DATA / "seeds").glob("*.txt")),
    ids=lambda p: p.name,
)
def test_plain_logs_are_read_as_they_are(path):
    assert plan(path.read_bytes()[: 256 * 1024]) is None


@pytest.mark.parametrize("name", JSON_LOGS)
def test_json_lines_become_records_with_their_stack_trace(name):
    shape, lines, line_map = _read(SHAPES / "json" / name)
    assert (shape.records, shape.layout) == ("json", "shape-record")
    header = layout_by_id("shape-record").python_regex
    error = next(i for i, line in enumerate(lines) if header.match(line) and " ERROR " in line)
    m = header.match(lines[error])
    assert m is not None
    assert (m["ts"], m["level"], m["thread"], m["logger"]) == (
        "2026-11-23T08:01:18.554",
        "ERROR",
        "main",
        "org.apache.flink.runtime.entrypoint.ClusterEntrypoint",
    )
    assert m["msg"] == "Could not start cluster entrypoint StandaloneSessionClusterEntrypoint."
    trace = lines[error + 1 : error + 5]
    assert trace[0].startswith("org.apache.flink.runtime.entrypoint.ClusterEntrypointException: Failed to initialize")
    assert all(line.startswith("\tat org.apache.flink.") for line in trace[1:])  # the escaped \n\t, read
    if name != "jobmanager-jsonlayout.json":  # that template keeps the top exception's frames only
        assert any(line.startswith("Caused by: java.io.IOException: Could not create storage") for line in lines)
    # every original line counted, every copied line cites a JSON line holding its record
    original = _lines(SHAPES / "json" / name)
    assert line_map.original_lines == len(original) == 139
    assert line_map.original(error + 1) == 1 + next(i for i, line in enumerate(original) if '"ERROR"' in line)
    assert len(line_map.starts) < 10  # runs, not one entry per line


def test_a_record_time_is_utc_whatever_its_form():
    """ECS and Logstash print ISO text, JsonLayout an epoch second and nanos: one instant, one header time."""
    times = set()
    for name in JSON_LOGS:
        _, lines, _ = _read(SHAPES / "json" / name)
        times.add(lines[0].split(" ", 1)[0])
    assert len(times) == 1 and re.fullmatch(r"@\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}", times.pop())


@pytest.mark.parametrize("name", sorted(WRAPPED))
def test_container_runtime_wrappers_are_taken_off(name):
    """The unwrapped text is the log the container printed, line for line; partial entries are joined."""
    shape, lines, line_map = _read(SHAPES / "wrapped" / name)
    assert shape.wrapper == WRAPPED[name] and shape.layout is None
    plain = _lines(SHAPES / "wrapped/taskmanager.log")
    wrapped = _lines(SHAPES / "wrapped" / name)
    assert len(wrapped) > len(plain)  # some lines were cut into partial entries
    assert lines == plain
    assert detect_layout(lines) == "flink-log4j2"
    assert line_map.original_lines == len(wrapped)
    for number in range(1, len(lines) + 1):  # each line cites the wrapper line it starts on
        head = lines[number - 1][:100]
        assert (
            json.dumps(head)[1:-1][:60] in wrapped[line_map.original(number) - 1]
            or head[:60] in (wrapped[line_map.original(number) - 1])
        )


@pytest.mark.parametrize("name", sorted(DECORATED))
def test_paste_decoration_and_collector_prefixes_are_stripped(name):
    shape, lines, line_map = _read(SHAPES / "decorated" / name)
    assert shape.strips == (DECORATED[name] if isinstance(DECORATED[name], tuple) else (DECORATED[name],))
    plain = _lines(SHAPES / "decorated/jobmanager.log")
    assert lines == plain  # a list item's further lines lose the two blanks that kept them in the item
    assert line_map.original_lines == len(plain) and all(line_map.original(n) == n for n in range(1, len(plain)))


def test_real_pastes_from_public_threads():
    """Incident excerpts as posted: logfmt and terminal-wrapped JSON from an operator, a quote marker, indentation."""
    d13 = _read(DATA / "incidents/d13/bundle/flink-operator.log")
    assert d13[0].records == "logfmt" and d13[1][0].startswith("@2019-06-03T18:10:48.000 ERROR [] ")
    assert "Jobmanager deployment creation failed" in d13[1][0]
    d14 = _read(DATA / "incidents/d14/bundle/flink-operator.log")
    assert d14[0].records == "json" and [line.split(" ")[1] for line in d14[1]] == ["ERROR", "WARN"]
    assert "system:serviceaccount:operator:flinkoperator" in d14[1][0]  # the object joined across the wrap
    assert d14[2].original_lines == 3
    d23 = _read(DATA / "incidents/d23/bundle/taskmanager.log")
    assert d23[0].strips == ("quote",) and d23[1][0].startswith("Caused by: java.net.ConnectException")
    d02 = _read(DATA / "incidents/d02/bundle/jobmanager.log")
    assert d02[0].strips == ("indent:2",) and d02[1][1].startswith("java.lang.VerifyError")


def test_line_map_keeps_runs():
    line_map = LineMap()
    for original in [1, 2, 3, 4, 4, 4, 5, 7, 7, 8]:
        line_map.add(original)
    assert [line_map.original(n) for n in range(1, 11)] == [1, 2, 3, 4, 4, 4, 5, 7, 7, 8]
    assert len(line_map.starts) < 10


def test_one_json_record_is_a_log_not_a_rest_document():
    record = json.loads(_lines(SHAPES / "json/jobmanager-ecs.json")[0])
    assert is_record(record)
    assert not is_record({"jobs": [{"id": "x", "status": "RUNNING"}]})


# -- end to end (Spark) ---------------------------------------------------------------------------------------


def _top(report: dict) -> tuple[str, str] | None:
    return (report["root_causes"][0]["rule"], report["root_causes"][0]["category"]) if report["root_causes"] else None


def _check_evidence(report: dict, path) -> None:
    """Every evidence line cites a line of `path` that holds the evidence's text (escaped, for JSON; of a record's
    header line, the message: the header is how the record was read)."""
    items = [e for root in report["root_causes"] for e in root["evidence"]]
    items += [e for finding in report["findings"] for e in finding["evidence"]]
    assert items
    header = layout_by_id("shape-record").python_regex
    for item in items:
        original = line_at(path, item["line"])
        record = header.match(item["text"])
        text = (record["msg"] if record else item["text"]).strip()[:50]
        assert text in original or json.dumps(text)[1:-1] in original, (item, original)


@pytest.mark.parametrize("name", JSON_LOGS)
def test_same_diagnosis_from_json_lines(diagnose_bundle, name):
    plain = diagnose_bundle(SHAPES / "json/jobmanager.log")
    shaped = diagnose_bundle(SHAPES / "json" / name)
    assert _top(plain) is not None and _top(shaped) == _top(plain)
    assert shaped["input"]["lines"] == 139
    source = shaped["input"]["sources"][0]
    assert source["shape"] == "json records" and source["layout"] == "shape-record" and "untimed" not in source
    assert shaped["root_causes"][0]["first_seen"] == plain["root_causes"][0]["first_seen"]
    _check_evidence(shaped, SHAPES / "json" / name)


@pytest.mark.parametrize("name", sorted(WRAPPED) + sorted(DECORATED))
def test_same_diagnosis_from_wrapped_and_decorated_logs(diagnose_bundle, name):
    folder = "wrapped" if name in WRAPPED else "decorated"
    plain = diagnose_bundle(SHAPES / folder / ("taskmanager.log" if folder == "wrapped" else "jobmanager.log"))
    shaped = diagnose_bundle(SHAPES / folder / name)
    assert _top(plain) is not None and _top(shaped) == _top(plain)
    assert [f["rule"] for f in shaped["findings"]] == [f["rule"] for f in plain["findings"]]
    assert shaped["input"]["lines"] == len(_lines(SHAPES / folder / name))
    assert shaped["input"]["lines_unparsed"] == plain["input"]["lines_unparsed"]
    _check_evidence(shaped, SHAPES / folder / name)


def test_a_source_without_times_is_matched_and_said_to_be_unplaced(diagnose_bundle):
    report = diagnose_bundle(DATA / "incidents/d23/bundle")
    (source,) = report["input"]["sources"]
    assert source["untimed"] is True and source["shape"] == "stripped quote"
    assert report["root_causes"] and report["root_causes"][0]["first_seen"] is None
    assert report["root_causes"][0]["evidence"][0]["line"] == 1


def test_ingest_stages_the_copy_and_keeps_the_map(tmp_path):
    """Staging (driver only): the copy is what Spark reads, the layout is set, file_line cites the original."""
    from flinkdoctor.sources.ingest import ingest

    manifest = ingest([SHAPES / "json", SHAPES / "wrapped"], tmp_path / "work")
    by_name = {s.path: s for s in manifest.sources}
    ecs = by_name["json/jobmanager-ecs.json"]
    assert (ecs.shape, ecs.layout, ecs.kind) == ("json records", "shape-record", "flink-jobmanager")
    staged = _lines(Path(ecs.staged))
    error = next(i for i, line in enumerate(staged, 1) if line.startswith("Caused by: java.io.IOException"))
    assert "Caused by: java.io.IOException" in line_at(SHAPES / "json/jobmanager-ecs.json", ecs.file_line(error))
    plain = by_name["json/jobmanager.log"]
    assert plain.shape is None and plain.line_map is None and plain.in_place  # plain text: read where it is
    assert Path(plain.staged) == (SHAPES / "json" / "jobmanager.log").absolute()
    cri = by_name["wrapped/taskmanager.cri.log"]
    assert (cri.shape, cri.layout, cri.kind) == ("cri", "flink-log4j2", "flink-taskmanager")
    assert cri.line_map is not None and cri.line_map.original_lines == len(
        _lines(SHAPES / "wrapped/taskmanager.cri.log")
    )
    assert (SHAPES / "wrapped/taskmanager.cri.log").read_bytes().startswith(b"20")  # the input is untouched
