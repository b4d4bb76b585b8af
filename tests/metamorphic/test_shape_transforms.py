"""The transformations of the shape-invariance suite write each shape as real software or a real paste does
(pure functions, no Spark). Where a real example of a shape is in tests/data, the transformation of the plain form
reproduces it."""

from __future__ import annotations

import json
import re

import pytest
import yaml
from shape_events import exceptions, read_events
from shape_transforms import (
    TRANSFORMS,
    ci_markers,
    cli_output,
    docker_json,
    json_lines_ecs,
    json_pretty,
    kubectl_events,
    line_numbers,
    localized_zh_cn,
    mail_wrap,
    operator_status,
    quote,
    sql_client,
    time_only,
    trace_head,
    trace_tail,
    tui_box,
    web_ui_exception,
)

from conftest import DATA

LAB_EXCERPT = (DATA / "shapes" / "decorated" / "jobmanager.log").read_text("utf-8")  # a real failure, plain
SEED_002 = (DATA / "seeds" / "002" / "taskmanager.log").read_text("utf-8")  # a pasted trace, 8-space frames
D23 = (DATA / "incidents" / "d23" / "bundle" / "taskmanager.log").read_text("utf-8")  # posted from a zh-CN system
D23_ENGLISH = D23.removeprefix(">").replace("拒绝连接 (Connection refused)", "Connection refused (Connection refused)")


def _case(text: str = LAB_EXCERPT, name: str = "log/jobmanager.log") -> dict[str, str]:
    return {name: text}


def test_every_transformation_names_where_its_shape_comes_from():
    names = [t.name for t in TRANSFORMS]
    assert len(names) == len(set(names))
    for transform in TRANSFORMS:
        assert len(transform.source) > 60, transform.name


@pytest.mark.parametrize("transform", TRANSFORMS, ids=lambda t: t.name)
def test_the_reference_is_plain_and_the_shape_differs(transform):
    pairs = [transform.reshape(_case(text)) for text in (LAB_EXCERPT, SEED_002, D23_ENGLISH)]
    pair = next((p for p in pairs if p is not None), None)
    assert pair is not None
    reference, shaped = pair
    assert reference and shaped and reference != shaped
    plain = LAB_EXCERPT + SEED_002 + D23_ENGLISH
    for text in reference.values():  # every reference line is a line (or part of one) of the plain input
        assert all(line.strip() in plain for line in text.splitlines()), transform.name


def test_quote_and_line_numbers_come_off_exactly():
    _, quoted = quote(_case())
    assert [line.removeprefix("> ") for line in quoted["log/jobmanager.log"].splitlines()] == LAB_EXCERPT.splitlines()
    _, numbered = line_numbers(_case())
    lines = numbered["log/jobmanager.log"].splitlines()
    assert all(re.match(r"^ {0,5}\d{1,6}\t", line) for line in lines)
    assert [line.split("\t", 1)[1] for line in lines] == LAB_EXCERPT.splitlines()


def test_localized_messages_are_glibc_zh_cn_as_in_incident_d23():
    """d23 was posted from a zh-CN system; its English form localizes back to exactly what was posted."""
    _, shaped = localized_zh_cn({"tm.log": D23_ENGLISH})
    assert shaped["tm.log"] == D23.removeprefix(">")


def test_web_ui_view_is_a_time_line_then_the_trace_as_seed_001():
    copied = (DATA / "seeds" / "001" / "webui-root-exception.txt").read_text("utf-8").splitlines()
    reference, shaped = web_ui_exception(_case())
    (text,) = list(shaped.values())[:1]
    lines = text.splitlines()
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", lines[0]) and re.fullmatch(
        r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", copied[0]
    )
    assert lines[1:] == list(reference.values())[0].splitlines()
    assert re.match(r"^[\w.]+(Exception|Error)\b", lines[1]) and re.match(r"^[\w.]+Exception\b", copied[1])


def test_cli_output_prints_flinks_banner_as_incident_d02():
    posted = (DATA / "incidents" / "d02" / "bundle" / "flink-client.log").read_text("utf-8").splitlines()
    _, shaped = cli_output(_case())
    lines = next(iter(shaped.values())).splitlines()
    assert lines[0].startswith("$ ./bin/flink run ")
    assert lines[2:5] == posted[0:3]  # the dashes, the sentence, the blank line


def test_sql_client_prints_the_innermost_exception_as_incident_d16():
    posted = (DATA / "incidents" / "d16" / "bundle" / "sql-client.log").read_text("utf-8").splitlines()
    reference, shaped = sql_client(_case())
    lines = next(iter(shaped.values())).splitlines()
    assert lines[1] == posted[0]
    assert lines[2] == next(iter(reference.values())).strip()
    assert lines[2].startswith("java.io.IOException: Could not create storage directory for BLOB store")


def test_json_lines_carry_the_event_as_the_ecs_template_does():
    real = json.loads((DATA / "shapes" / "json" / "jobmanager-ecs.json").read_text("utf-8").splitlines()[0])
    _, shaped = json_lines_ecs(_case())
    records = [json.loads(line) for line in shaped["log/jobmanager.log"].splitlines()]
    assert len(records) == len(read_events(LAB_EXCERPT))
    assert set(records[0]) <= set(real) | {"error.type", "error.message", "error.stack_trace"}
    failed = next(r for r in records if r["log.level"] == "ERROR")
    assert failed["@timestamp"] == "2026-11-23T08:01:18.554Z"
    assert failed["error.stack_trace"].startswith("org.apache.flink.runtime.entrypoint.ClusterEntrypointException")
    assert "\n\tat " in failed["error.stack_trace"]


def test_pretty_json_is_a_sequence_of_logstash_records():
    real = json.loads((DATA / "shapes" / "json" / "jobmanager-logstash.json").read_text("utf-8").splitlines()[0])
    _, shaped = json_pretty(_case())
    text, decoder, at, records = shaped["log/jobmanager.log"], json.JSONDecoder(), 0, []
    while at < len(text.rstrip()):
        record, at = decoder.raw_decode(text, at)
        records.append(record)
        while at < len(text) and text[at] in " \n":
            at += 1
    assert len(records) == len(read_events(LAB_EXCERPT))
    assert set(records[0]) <= set(real) | {"exception"}
    assert any(r.get("exception", {}).get("stacktrace", "").count("\n\tat ") > 3 for r in records)


def test_docker_json_is_one_object_per_line():
    _, shaped = docker_json(_case())
    lines = shaped["log/jobmanager.log"].splitlines()
    assert [json.loads(line)["log"] for line in lines] == [line + "\n" for line in LAB_EXCERPT.splitlines()]


def test_operator_status_is_yaml_with_the_chain_as_an_embedded_json_string():
    reference, shaped = operator_status(_case())
    resource = yaml.safe_load(next(iter(shaped.values())))
    error = json.loads(resource["status"]["error"])
    chain = exceptions(next(e.trace for e in read_events(LAB_EXCERPT) if e.trace))
    assert [t["type"] for t in error["throwableList"]] == [cls for cls, _ in chain]
    assert error["type"].endswith("ReconciliationException")
    lines = next(iter(shaped.values())).splitlines()
    error = next(i for i, line in enumerate(lines) if line.startswith("  error: '{"))
    assert lines[error + 1].startswith("    ")  # the long scalar folded near column 80, as kubectl prints it
    assert next(iter(reference.values())).splitlines()[1].startswith("Caused by: ")


def test_kubectl_events_rows():
    _, shaped = kubectl_events(_case())
    lines = shaped["kubectl-describe.txt"].splitlines()
    assert lines[0] == "Events:"
    assert lines[1].split() == ["Type", "Reason", "Age", "From", "Message"]
    assert lines[3].split()[:4] == ["Warning", "JobException", "2m", "Job"]
    assert any(line.startswith("... (") and line.endswith("more lines)") for line in lines)


def test_mail_wrap_breaks_at_blanks_before_column_80():
    _, shaped = mail_wrap(_case())
    lines = shaped["log/jobmanager.log"].splitlines()
    assert all(len(line) <= 80 or " " not in line.strip() for line in lines)
    assert "".join(lines).replace(" ", "") == "".join(LAB_EXCERPT.splitlines()).replace(" ", "")
    header = next(i for i, line in enumerate(lines) if line.startswith("2026-11-23 08:01:18,554 ERROR"))
    assert lines[header + 1].startswith("org.apache.flink.runtime.entrypoint.ClusterEntrypoint")  # the header broken


def test_ci_markers_run_the_lines_together():
    _, shaped = ci_markers(_case())
    (line,) = shaped["log/jobmanager.log"].splitlines()
    assert len(re.findall(r"\*\d\d:\d\d:\d\d\* ", line)) == len(LAB_EXCERPT.splitlines())


def test_time_only_leaves_out_the_date_of_headers_only():
    _, shaped = time_only(_case())
    lines = shaped["log/jobmanager.log"].splitlines()
    assert not any(line.startswith("2026-") for line in lines)
    assert sum(1 for line in lines if re.match(r"^\d\d:\d\d:\d\d,\d{3} ", line)) == sum(
        1 for e in read_events(LAB_EXCERPT) if e.fields
    )


def test_trace_cuts_keep_every_exception_line():
    _, head = trace_head(_case())
    assert exceptions(head["log/jobmanager.log"].splitlines()) == exceptions(LAB_EXCERPT.splitlines())
    assert "\t... more" in head["log/jobmanager.log"]
    reference, tail = trace_tail(_case())
    for name, text in tail.items():
        assert text.startswith("Caused by: ") and reference[name].endswith(text)


def test_a_cut_names_the_reference_lines_it_took_away():
    """What a trace cut to its tail removes is each trace's head, up to its first `Caused by` (shape_runner.trials
    records it, and a case whose answer rests only on those lines is no case of the cut)."""
    from shape_runner import Outcome, Trial, _removed, applies

    reference, tail = trace_tail(_case())
    removed = _removed(reference, tail)
    for name, text in reference.items():
        head = len(text.splitlines()) - len(tail[name].splitlines())
        assert head > 0 and {n for file, n in removed if file == name} == set(range(1, head + 1))
    name, first = sorted(removed)[0]
    rule = "restart-strategy-exhausted"
    cited = {"head": (f"bundle/{name}", first), "kept": (f"bundle/{name}", len(reference[name].splitlines()))}
    outcomes = {
        key: Outcome("known-cause", "other", rule, None, frozenset({(*line, rule)})) for key, line in cited.items()
    }
    assert not applies(Trial("case", "trace-tail", False, "head", "shaped", removed), outcomes)
    assert applies(Trial("case", "trace-tail", False, "kept", "shaped", removed), outcomes)
    assert applies(Trial("case", "trace-tail", False, "head", "shaped"), outcomes)  # nothing cut: it applies


def test_tui_box_borders_every_line():
    _, shaped = tui_box(_case())
    lines = shaped["log/jobmanager.log"].splitlines()
    assert lines[0].startswith("┌") and lines[-1].startswith("└")
    assert all(line.startswith("│ ") and line.endswith("│") for line in lines[1:-1])
