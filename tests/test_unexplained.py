"""Unexplained errors (issue #10 part 4): templates of real lab lines, ranking against the shipped healthy baseline,
the report's section in JSON and terminal, and `rules suggest` drafting a rule whose case passes."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path
from unittest import mock

import jsonschema
import pytest

from conftest import DATA

LAB = DATA / "lab"
FAILED = LAB / "1.20.3" / "zookeeper-freeze.tar.gz"  # ZooKeeper SIGSTOPped: rare ZooKeeper errors at the failure
HEALTHY_WARN = "No tokens obtained so skipping notifications"  # printed by every healthy lab run


def lines_of(archive: Path, needle: str) -> list[str]:
    """Real lines of a recorded bundle that hold `needle`."""
    found = []
    with tarfile.open(archive) as tar:
        for member in tar.getmembers():
            if member.isfile() and member.name.endswith(".log"):
                handle = tar.extractfile(member)
                text = io.TextIOWrapper(handle, encoding="utf-8", errors="replace") if handle else []
                found += [line.rstrip("\n") for line in text if needle in line]
    return found


def message(line: str) -> str:
    return line.split(" - ", 1)[1]


def test_templates_of_real_lines_mask_the_variable_parts():
    from flinkdoctor.diagnosis.unexplained import template_of

    completed = lines_of(FAILED, "Completed checkpoint")
    assert len(completed) >= 2
    templates = {template_of(message(line)) for line in completed}
    assert templates == {
        "Completed checkpoint <NUM> for job <ID> (<NUM> bytes, checkpointDuration=<NUM> ms, finalizationTime=<NUM> ms)."
    }
    (signal,) = lines_of(LAB / "2.1.1" / "healthy.tar.gz", "RECEIVED SIGNAL")[:1]
    assert template_of(message(signal)) == "RECEIVED SIGNAL <NUM>: SIGTERM. Shutting down as requested."


def test_baseline_is_from_the_healthy_runs_of_both_versions():
    from flinkdoctor.diagnosis.unexplained import baseline

    known = baseline()
    assert sorted(known.runs) == ["1.20.3/healthy.tar.gz", "2.1.1/healthy.tar.gz"]
    key = f"org.apache.flink.runtime.security.token.DefaultDelegationTokenManager {HEALTHY_WARN}"
    assert known.rarity(key) == 0.0
    assert known.rarity("org.example.Never seen") == 1.0


@pytest.fixture(scope="module")
def failed_run(spark, rules, tmp_path_factory):
    """The failed bundle's report, and what the driver's templates_of_files gave during it."""
    from flinkdoctor.diagnosis import unexplained
    from flinkdoctor.pipeline import diagnose

    original, given = unexplained.templates_of_files, []

    def spied(*args, **kwargs):
        given.append(original(*args, **kwargs))
        return given[-1]

    with mock.patch.object(unexplained, "templates_of_files", spied):
        report = diagnose([FAILED], spark=spark, rules=rules, work_dir=tmp_path_factory.mktemp("work"))
    return report, given


@pytest.fixture(scope="module")
def failed_report(failed_run):
    return failed_run[0]


def test_a_local_master_s_templates_are_read_by_the_driver(failed_run):
    """The pipeline gives collect_templates the scan's table: on a local master the driver reads its files (no
    Spark job), and the report's unexplained errors are of those templates."""
    report, given = failed_run
    (templates,) = given
    assert templates is not None
    shown = {(e.template, e.count) for e in report.unexplained_errors}
    assert shown and shown <= {(t.template, t.count) for t in templates}


def test_a_rare_error_near_the_failure_outranks_a_frequent_healthy_warn(spark, rules, tmp_path):
    from flinkdoctor.diagnosis.unexplained import baseline, collect_templates, rank
    from flinkdoctor.scan.events import build_events
    from flinkdoctor.scan.prefilter import build_prefilter
    from flinkdoctor.sources.ingest import ingest

    manifest = ingest([FAILED], tmp_path)
    events = build_events(spark, manifest, tmp_path, build_prefilter(rules))
    templates = collect_templates(events.table(spark), events.blocks, manifest)
    healthy = next(t for t in templates if t.template == HEALTHY_WARN)
    failed_at = next(t for t in templates if "Authentication failed" in t.template).first  # ZooKeeper lost
    ranked = rank(templates, baseline(), failed_at)
    order = [r.template.template for r in ranked]
    assert order.index("Authentication failed") < order.index(HEALTHY_WARN)
    assert ranked[order.index(HEALTHY_WARN)].rarity == 0.0
    assert healthy.count == len(lines_of(FAILED, HEALTHY_WARN))


def test_few_warnings_grouped_on_the_driver_give_spark_s_templates(spark, rules, tmp_path):
    """The tasks count the WARN+ events they keep; at most FEW are grouped on the driver, to the same templates."""
    from pyspark.sql import functions as F

    from flinkdoctor.diagnosis.unexplained import collect_templates
    from flinkdoctor.scan.events import WARN_LEVELS, build_events
    from flinkdoctor.scan.prefilter import build_prefilter
    from flinkdoctor.sources.ingest import ingest

    manifest = ingest([FAILED], tmp_path)
    events = build_events(spark, manifest, tmp_path, build_prefilter(rules))
    table, warned = events.table(spark), events.stats["warned"]
    assert warned == table.where(F.col("level").isin(*WARN_LEVELS)).count() > 0
    explained = [(0, 1)]
    here = collect_templates(table, events.blocks, manifest, explained, warned)
    in_spark = collect_templates(table, events.blocks, manifest, explained)
    assert len({t.key for t in here}) > 1
    assert sorted(here, key=lambda t: t.key) == sorted(in_spark, key=lambda t: t.key)


def test_report_shows_the_section_in_json_and_terminal(failed_report):
    from rich.console import Console

    from flinkdoctor.diagnosis.unexplained import RARE, TOP
    from flinkdoctor.views import render_json, render_terminal

    data = json.loads(render_json(failed_report))
    schema = json.loads((Path(__file__).parents[1] / "src/flinkdoctor/schemas/report.schema.json").read_text())
    jsonschema.validate(data, schema)
    errors = data["unexplained_errors"]
    assert 1 <= len(errors) <= TOP
    assert all(e["rarity"] > RARE for e in errors)
    assert HEALTHY_WARN not in {e["template"] for e in errors}
    assert errors[0]["template"] == "Authentication failed" and errors[0]["level"] == "ERROR"
    first = errors[0]["evidence"]
    member = first["file"]
    with tarfile.open(FAILED) as tar:
        handle = tar.extractfile(member)
        assert handle is not None
        assert handle.read().decode().split("\n")[first["line"] - 1] == first["text"]
    console = Console(file=io.StringIO(), width=200, color_system=None)
    render_terminal(failed_report, console)
    shown = console.file.getvalue()
    assert "Unexplained errors" in shown and "Authentication failed" in shown
    assert f"{member}:{first['line']}" in shown


@pytest.mark.parametrize("version", ["1.20.3", "2.1.1"])
def test_healthy_runs_show_no_unexplained_error(diagnose_bundle, version):
    report = diagnose_bundle(LAB / version / "healthy.tar.gz")
    assert report["unexplained_errors"] == []


def test_rules_suggest_drafts_a_valid_rule_whose_case_passes(failed_report, spark, tmp_path):
    import yaml

    from flinkdoctor.cases import run_cases
    from flinkdoctor.knowledge.rulebook import load_rules
    from flinkdoctor.suggest import draft_rule, from_report, to_yaml

    number = next(
        n for n, e in enumerate(failed_report.unexplained_errors, 1) if "<NUM>" in e.template
    )  # a template with a variable part: its capture must match the real line
    draft = from_report(failed_report, number)
    rule = draft_rule(draft)
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / f"{rule['id']}.yaml").write_text(to_yaml(rule), encoding="utf-8")
    loaded = [r for r in load_rules([folder]) if r.id == rule["id"]]  # the schema and the regex checks pass
    assert len(loaded) == 1 and loaded[0].captures
    case = yaml.safe_load((folder / f"{rule['id']}.yaml").read_text())["cases"][0]
    error = failed_report.unexplained_errors[number - 1]
    assert case["match"] == error.evidence.text and case["source"].endswith(f":{error.evidence.line}")
    results = run_cases(spark, loaded, tmp_path / "cases")
    assert results and all(r.passed for r in results)


def test_rules_suggest_from_a_line_on_the_command_line(tmp_path):
    from click.testing import CliRunner

    from flinkdoctor.cli import cli
    from flinkdoctor.knowledge.rulebook import load_rules

    (line,) = lines_of(LAB / "2.1.1" / "healthy.tar.gz", "RECEIVED SIGNAL")[:1]
    result = CliRunner().invoke(cli, ["rules", "suggest", "--line", line, "-o", str(tmp_path)])
    assert result.exit_code == 0, result.output
    (written,) = tmp_path.glob("*.yaml")
    (rule,) = [r for r in load_rules([tmp_path]) if r.path and Path(r.path) == written]
    assert rule.signatures[0].message and "SIGTERM" in rule.signatures[0].message
