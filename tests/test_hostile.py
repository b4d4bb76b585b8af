"""Hostile input (issue #8): nothing deleted that is not ours, nothing injected into a shell or a terminal, no secret
in any output, every failure its own exit code, every readable line counted.

Planted values (an evil HDFS path, secrets, escape sequences) ride on real log lines of the seeds and the fault
lab: the attack is the value, the line around it is what Flink printed.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import DATA
from hostile_input import (
    ESCAPES,
    EVIL_PATH,
    HEADER_SECRET,
    MARKUP,
    SECRET_VALUES,
    SEED3,
    URL_SECRETS,
    run_cli,
    true_lines,
)


def test_every_readable_line_is_counted_and_the_bomb_skipped(hostile):
    data = hostile["report"]["input"]
    by_path = {s["path"]: s for s in data["sources"]}
    for name, content in hostile["files"].items():
        assert by_path[name]["lines"] == true_lines(content), name
    assert data["lines"] == sum(true_lines(c) for c in hostile["files"].values())
    assert [s["path"] for s in hostile["report"]["skipped"]] == ["bomb.zip"]
    assert "times its size" in hostile["report"]["skipped"][0]["reason"]


def test_the_diagnosis_survives_the_hostile_input(hostile):
    assert hostile["report"]["root_causes"][0]["rule"] == "kernel-soft-lockup"


def test_no_command_is_built_from_an_unsafe_path(hostile):
    fixes = [fix for root in hostile["report"]["root_causes"] for fix in root["fix"]]
    assert not any("curl" in fix.get("command", "") or ";" in fix.get("command", "") for fix in fixes)
    assert any("not safe in a shell" in fix["text"] for fix in fixes)
    assert EVIL_PATH not in hostile["views"]["plain"].split("$ ", 1)[-1].split("\n", 1)[0]


def test_a_plausible_path_is_quoted_into_the_command(diagnose_bundle):
    fixes = [fix for root in diagnose_bundle(SEED3)["root_causes"] for fix in root["fix"]]
    commands = [fix["command"] for fix in fixes if "command" in fix]
    assert (
        "hdfs debug recoverLease -path /data/BaseData/flinksql/TCFlyIntB2BTrade_flight_segment_info/2019/04/23/"
        "tmp-part-0-6.in-progress -retries 3" in commands
    )


def test_no_secret_in_any_view_or_in_the_kept_work_dir(hostile):
    import pyarrow.parquet as pq

    for name, text in hostile["views"].items():
        for secret in SECRET_VALUES:
            assert secret not in text, (name, secret)
    work = hostile["work"]
    assert not (work / "sources").exists() and not (work / "unpacked").exists()  # raw copies never outlive the run
    kept = [p for p in work.rglob("*") if p.is_file()]
    assert kept, "the kept work dir holds the events table"
    for path in kept:
        raw = path.read_bytes()
        assert not any(secret.encode() in raw for secret in SECRET_VALUES), path
        if path.suffix == ".parquet":  # the events table's and the measures' files: every string in them, decoded
            cells = [repr(row) for row in pq.read_table(path).to_pylist()]
            assert not any(secret in cell for cell in cells for secret in SECRET_VALUES), path
    assert any(p.parent.name == "measures.parquet" for p in kept)  # (the measures' rows the tasks wrote: read too)


def test_terminal_view_shows_input_inert(hostile):
    plain, colour = hostile["views"]["plain"], hostile["views"]["colour"]
    assert "\x1b" not in plain
    assert "\x1b]8;" not in colour and "\x1b[2J" not in colour  # no hyperlink, no screen clear from the input
    assert "\\x1b[2J" in plain  # shown, made visible
    assert "[link=http:/evil.example]click[/link].log" in plain.replace("\n", "").replace(" ", "").replace("│", "")


def test_json_view_is_exact_and_valid(hostile):
    raw = hostile["views"]["json"]
    report = json.loads(raw)
    texts = [ev["text"] for root in report["root_causes"] for ev in root["evidence"]]
    assert any(ESCAPES in text for text in texts)  # the planted sequences, exact once parsed
    assert not any(ch in raw for ch in "\x1b\x07\x9b\u202e")  # and never raw in what reaches a terminal


def test_html_view_keeps_planted_markup_as_text(hostile):
    html = hostile["views"]["html"]
    assert "<script>alert" not in html and "<img src=x" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(2)&gt;" in html
    assert "\x1b" not in html and "[link=http:/evil.example]click[/link].log" in html


def test_markdown_view_keeps_planted_markup_as_text(hostile):
    from markdown_it import MarkdownIt

    rendered = MarkdownIt("commonmark").enable("table").render(hostile["views"]["markdown"])
    assert "<script>" not in rendered and "<img" not in rendered and 'href="http://evil' not in rendered
    assert "\x1b" not in hostile["views"]["markdown"]
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in rendered  # shown, as text


# -- the fleet report -----------------------------------------------------------------------------------------------


def hostile_fleet():
    """A fleet report whose every string from the input is hostile: bundle names (a folder's name is anything),
    hosts, a reason quoting an error, a resource key read from a config, the incident's other resources."""
    from flinkdoctor.fleet.report import Answer, CauseSummary, FleetReport, JobHit, SharedIncident

    job = "job" + MARKUP + ESCAPES + "\u202e"
    host = "worker" + ESCAPES
    key = URL_SECRETS[0] + MARKUP
    answers = [
        Answer(job, "b1", "ok", "known-cause", "kernel-soft-lockup", "host-stall", False, "2026-11-16T01:08:20Z", host),
        Answer(job + "2", "b2", "ok", "known-cause", "kernel-soft-lockup", "host-stall", False, None, host),
        Answer("cut" + MARKUP, "b3", "failed", None, None, None, False, None, None, f"{HEADER_SECRET}{ESCAPES}"),
    ]
    incident = SharedIncident(
        1, "storage", key, "rule", "kernel-soft-lockup", "host-stall", "title", "2026-11-16 01:08:20",
        "2026-11-16 01:08:20", [job, job + "2"], [job + "2"], ["kernel-soft-lockup"], 2, 0.1, 3, 3, 100, 1e-6,
        [f"host {URL_SECRETS[1]}{ESCAPES}"],
    )  # fmt: skip
    causes = [CauseSummary("kernel-soft-lockup", "host-stall", "t", [JobHit(job, "b1", None, host)])]
    return FleetReport(3, 2, [{"job": "cut", "reason": HEADER_SECRET}], 0, {"known-cause": 2}, causes, [incident],
                       answers, 15.0, run={"new": 3})  # fmt: skip


def test_fleet_views_mask_secrets_and_keep_input_inert():
    from rich.console import Console

    from flinkdoctor.fleet.views import render_html, render_json, render_terminal

    report = hostile_fleet()
    raw = render_json(report)
    data = json.loads(raw)
    assert data["answers"][0]["job"] == report.answers[0].job  # exact once parsed
    assert not any(ch in raw for ch in "\x1b\x07\x9b\u202e")
    console = Console(record=True, width=80, color_system=None)
    render_terminal(report, console)
    text = console.export_text()
    assert "\x1b" not in text and "\\x1b[2J" in text and "<script>alert(1)</script>" in text
    html = render_html(report)
    assert "<script>alert" not in html and "<img src=x" not in html and "\x1b" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and html.count("<script>") == 1
    for name, view in (("json", raw), ("terminal", text), ("html", html)):
        for secret in SECRET_VALUES:
            assert secret not in view, (name, secret)


# -- the work dir ------------------------------------------------------------------------------------------------


def test_a_work_dir_with_the_users_files_is_refused_and_left_alone(tmp_path):
    work = tmp_path / "work"
    mine = {"sources/x.txt": b"mine", "unpacked/y.txt": b"mine too", "events.parquet/z.txt": b"and this"}
    for name, data in mine.items():
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_bytes(data)
    result = run_cli("diagnose", str(SEED3), "--work-dir", str(work))
    assert result.returncode == 2, result.stderr
    assert "not a flinkdoctor work dir" in result.stderr and "Traceback" not in result.stderr
    for name, data in mine.items():
        assert (work / name).read_bytes() == data


def test_default_work_dir_is_removed_and_keep_says_where(spark, rules, tmp_path, monkeypatch):
    from flinkdoctor.pipeline import diagnose

    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    diagnose([DATA / "seeds" / "004"], spark=spark, rules=rules)
    assert not list(tmp_path.glob("flinkdoctor-*"))
    report = diagnose([DATA / "seeds" / "004"], spark=spark, rules=rules, keep_work_dir=True).to_dict()
    kept = Path(report["work_dir"])
    assert kept.parent == tmp_path and kept.is_dir() and (kept / ".flinkdoctor-work-dir").exists()


def test_an_adopted_empty_work_dir_is_emptied_but_kept(spark, rules, tmp_path):
    from flinkdoctor.pipeline import diagnose

    work = tmp_path / "empty"
    work.mkdir()
    diagnose([DATA / "seeds" / "004"], spark=spark, rules=rules, work_dir=work)
    assert work.is_dir() and not list(work.iterdir())


# -- exit codes: options and unreadable input, before Spark starts ------------------------------------------------


@pytest.mark.parametrize(
    "args, code, words",
    [
        (["--timezone", "Not/AZone"], 2, "unknown time zone"),
        (["--flink-version", "banana"], 2, "not a Flink version"),
        (["--year", "12"], 2, "plausible year"),
        (["--fail-on", "no-such-category"], 2, "unknown category"),
    ],
)
def test_bad_options_are_usage_errors_before_spark(args, code, words):
    result = run_cli("diagnose", str(SEED3), *args)
    assert result.returncode == code, result.stderr
    assert words in result.stderr and "Traceback" not in result.stderr and "Spark" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_read_only_work_dir_is_a_clear_error(tmp_path):
    if os.geteuid() == 0:
        work = Path("/proc/flinkdoctor-work")  # not writable even for root
    else:
        work = tmp_path / "ro"
        work.mkdir(mode=0o500)
    result = run_cli("diagnose", str(SEED3), "--work-dir", str(work))
    assert result.returncode == 2, result.stderr
    assert "work dir" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("make", ["empty-folder", "only-binary", "only-bomb", "broken-link"])
def test_nothing_to_read_exits_3_without_spark(tmp_path, make):
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    if make == "only-binary":
        (bundle / "core.bin").write_bytes(bytes(range(256)) * 40)
    elif make == "only-bomb":
        with zipfile.ZipFile(bundle / "bomb.zip", "w", zipfile.ZIP_DEFLATED) as archive:
            archive.writestr("zeros.log", b"\0" * (128 << 20))
    elif make == "broken-link":
        (bundle / "gone.log").symlink_to(tmp_path / "nowhere.log")
    result = run_cli("diagnose", str(bundle))
    assert result.returncode == 3, result.stderr
    assert "nothing to read" in result.stderr and "Traceback" not in result.stderr
    assert "Spark" not in result.stderr
    assert not list(tmp_path.glob("**/zeros.log"))


@pytest.mark.spark  # starts Spark in a subprocess
def test_an_internal_error_exits_4_with_its_traceback_in_a_log(tmp_path):
    """A crash (here: an events table that Spark cannot write) must never look like a finding (exit 1)."""
    env = {"FLINKDOCTOR_LOG_DIR": str(tmp_path), "FLINKDOCTOR_SPARK_CONF": "spark.sql.parquet.compression.codec=nope"}
    result = run_cli("diagnose", str(DATA / "seeds" / "004"), "--fail-on", "any", env=env)
    assert result.returncode == 4, result.stderr[-2000:]
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("flinkdoctor: internal error") and "Traceback" not in result.stderr
    log = Path(re.search(r"the traceback is in (\S+)", last).group(1))
    assert log.parent == tmp_path and "Traceback" in log.read_text()


# -- archives ------------------------------------------------------------------------------------------------


def test_a_gzip_bomb_among_logs_is_skipped_and_leaves_nothing(diagnose_bundle, hostile_corpus):
    bundle = hostile_corpus["bomb-among-logs"]
    report = diagnose_bundle(bundle)
    assert report["root_causes"][0]["category"] == "zookeeper-connectivity"
    assert [s["path"] for s in report["skipped"]] == ["logs.tar.gz"]


def test_an_archive_over_the_free_disk_is_refused(tmp_path, monkeypatch):
    import shutil as shutil_module

    from flinkdoctor.errors import InputError
    from flinkdoctor.sources.ingest import ingest

    archive = tmp_path / "logs.tar.gz"
    import tarfile

    data = (DATA / "seeds" / "004" / "taskmanager.log").read_bytes()
    with tarfile.open(archive, "w:gz") as handle:
        info = tarfile.TarInfo("taskmanager.log")
        info.size = len(data)
        handle.addfile(info, io.BytesIO(data))
    real = shutil_module.disk_usage
    monkeypatch.setattr(shutil_module, "disk_usage", lambda p: real(p)._replace(free=1 << 20))
    with pytest.raises(InputError, match="bytes free"):
        ingest([archive], tmp_path / "work")
    assert not list((tmp_path / "work" / "unpacked").rglob("*.log"))


def test_gzip_of_a_real_log_is_read(diagnose_bundle, tmp_path):
    target = tmp_path / "jobmanager.log.gz"
    target.write_bytes(gzip.compress((DATA / "seeds" / "004" / "taskmanager.log").read_bytes()))
    report = diagnose_bundle(target)
    assert report["input"]["lines"] == true_lines((DATA / "seeds" / "004" / "taskmanager.log").read_bytes())


# -- the package as spark-submit runs it ----------------------------------------------------------------------------


@pytest.mark.spark  # starts Spark in a subprocess
def test_spark_submit_runs_the_documented_recipe(tmp_path):
    import pyspark

    import flinkdoctor

    assert flinkdoctor.__file__ and flinkdoctor.__version__
    submit = Path(pyspark.__file__).parent / "bin" / "spark-submit"
    main = Path(flinkdoctor.__file__).parent / "__main__.py"
    env = {
        **os.environ,
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
    }
    result = subprocess.run(
        [str(submit), "--master", "local[1]", str(main), "diagnose", str(SEED3), "--format", "json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout)
    assert report["root_causes"][0]["rule"] == "kernel-soft-lockup"
