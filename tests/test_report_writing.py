"""Writing the report (issue #25, the tail after the last lap): one mask, the JSON view in pieces, inputs read in
place.

- The JSON view is written piece by piece (`views.contract.json_chunks`, `outbound.show_chunks`), each job's
  checkpoints made as they are written: the text must be byte for byte the one document `json.dumps` makes of
  the contract (as the view made it before, with `dataclasses.asdict`), in pieces of whole lines.
- The report model is masked once, as it is built; the way out (outbound.py) passes over it again only when it
  is not the very model the masker returned. A model built by hand, or changed after masking, must be masked at
  the way out: a secret in a job, a source path and an event text never leaves unmasked.
- Plain UTF-8 inputs are read where they are; an input is never written, moved or removed (a copy of one in
  another shape goes to the work dir).

The reports here are built from their model's classes (no log line is hand-written: the event text is the
canaries' planted message, tests/canaries.py); the end-to-end test diagnoses a real lab recording."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from conftest import DATA

SHAPES = DATA / "shapes"
LAB = DATA / "lab" / "1.20.3"


def _job(job: str, file: str, source: str, points: int = 3, failures: bool = True):
    from flinkdoctor.analytics.model import CheckpointJob, CheckpointPoint, CheckpointTrend, FailurePattern, Limit

    series = [
        CheckpointPoint(i, f"2026-04-23T21:2{i}:38.027Z", "completed", 30.0 + i, 7387, file, 100 + i)
        for i in range(1, points + 1)
    ]
    series.append(CheckpointPoint(None, None, "expired", None, None, file, 200, stage="storage-close"))
    return CheckpointJob(
        job=job,
        series=series,
        counts={"completed": points, "expired": 1},
        timeout=Limit(600000.0, f"{source}: execution.checkpointing.timeout"),
        interval=Limit(10000.0, source) if failures else None,
        percentiles={"p50": 31.0, "p90": 32.0, "p95": 33.0, "p99": 33.0, "max": 33.0} if points else {},
        trend=CheckpointTrend(12.5, points, 3.5) if failures else None,
        failures=FailurePattern(2, True, 60.0, [60.0, 61.5]) if failures else None,
        over_interval=0,
        longest_stage_ms=None,
        ended=points,
    )


def _report(job: str = "00002c30ab0aae9d8b28852d52084485", path: str = "jobmanager/jobmanager.log", text: str = ""):
    """A report model as the analytics and build_report leave it (not masked: built here by hand)."""
    from flinkdoctor.analytics.model import CheckpointAnalytics
    from flinkdoctor.report.model import Evidence, FindingReport, InputReport, Report, SourceReport

    jobs = [_job(job, path, "config.yaml"), _job("a" * 32, path, "log: median gap \u2028 ü", failures=False)]
    jobs += [_job(f"{n:032x}", path, "default", points=n % 4) for n in range(40)]
    evidence = Evidence(path, 12, "2026-04-23T21:26:38.027Z", text or "Checkpoint 3 expired", "vm")
    return Report(
        input=InputReport(1, 100, 99, 1, 50, [SourceReport(path, "flink-jobmanager", "flink-log4j2", 100, 1)]),
        flink_version="1.20.3",
        flink_version_from="log",
        root_causes=[],
        findings=[FindingReport("checkpoint-expired", "checkpoint-timeout", "symptom", "t", 1, None, None, [evidence])],
        skipped=[],
        checkpoints=CheckpointAnalytics(jobs, ["REST answers"]),
    )


def _as_before(report) -> str:
    """The JSON view as it was made before it was written in pieces: the whole contract, each job through
    dataclasses.asdict, then one json.dumps."""
    from flinkdoctor.views.contract import _RAW_UNSAFE
    from flinkdoctor.views.sentences import checkpoint_sentences

    data = report.to_dict()
    if report.checkpoints is not None:
        jobs = []
        for job in report.checkpoints.jobs:
            one = dataclasses.asdict(job)
            one["timeout_ms"], one["interval_ms"] = job.timeout_ms, job.interval_ms
            one["summary"] = checkpoint_sentences(one)
            jobs.append(one)
        data["checkpoints"]["jobs"] = jobs
    text = json.dumps(data, indent=2, ensure_ascii=False)
    return _RAW_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def test_the_json_view_in_pieces_is_the_one_document(monkeypatch):
    from flinkdoctor.views import contract

    report = _report()
    whole = contract.render_json(report)
    monkeypatch.setattr(contract, "CHUNK_CHARS", 200)  # many pieces
    monkeypatch.setattr(contract, "ENCODED_BATCH", 16)
    pieces = list(contract.json_chunks(report))
    assert len(pieces) > 50
    assert all(piece.endswith("\n") for piece in pieces[:-1])  # whole lines: no escape sequence cut in two
    assert "".join(pieces) == whole == _as_before(report)
    assert "\\u2028" in whole and "\u2028" not in whole and "ü" in whole  # escaped as before, text kept exact


def test_a_jobs_dict_is_asdicts_and_shares_nothing_with_the_model():
    from flinkdoctor.report.model import job_dict

    for job in (_job("j", "f", "s"), _job("k", "f", "s", points=0, failures=False)):
        made = job_dict(job)
        expected = dataclasses.asdict(job) | {"timeout_ms": job.timeout_ms, "interval_ms": job.interval_ms}
        assert made == expected and list(made) == list(expected)
        made["series"].clear(), made["counts"].clear()  # a view may change its copy: the model stays
        assert job.series and job.counts


PLANTED = {
    "job": "orders password=Pw-Job-4711",  # a job as it is named in the model
    "path": "bundle/jdbc:postgresql://admin:Pw-Path-4712@db/jobmanager.log",  # a source path
    # the canaries' planted message (tests/canaries.py WARN_MESSAGES["jdbc-user-info"])
    "text": "opening jdbc:postgresql://admin:Pw-Text-4713@db.internal:5432/orders",
}
SECRETS = ("Pw-Job-4711", "Pw-Path-4712", "Pw-Text-4713")


def _shown(capsys, report) -> str:
    from flinkdoctor.safety import outbound
    from flinkdoctor.views import json_chunks

    outbound.show_chunks(report, json_chunks)
    return capsys.readouterr().out


def test_a_secret_in_a_job_a_path_and_an_event_text_never_leaves_unmasked(capsys):
    """The way out masks a model it did not mask (built by hand, as a library caller may), and a masked model
    changed afterwards; a model the masker returned leaves as it is, masked once."""
    from flinkdoctor.safety.masking import masked_model, masked_replace, scrub

    raw = _report(PLANTED["job"], PLANTED["path"], PLANTED["text"])
    assert all(secret in json.dumps(raw.to_dict()) for secret in SECRETS)  # planted where the view reads them
    out = _shown(capsys, raw)
    assert not any(secret in out for secret in SECRETS)
    assert "password=******" in out and "admin:******@db" in out
    assert json.loads(out)["checkpoints"]["jobs"][0]["job"] == "orders password=******"

    clean = _report()
    assert scrub(clean) is clean  # needed nothing, so given back, but not trusted from now on:
    clean.findings[0].evidence.append(dataclasses.replace(clean.findings[0].evidence[0], text=PLANTED["text"]))
    assert "Pw-Text-4713" not in _shown(capsys, clean)

    masked = masked_model(raw)
    assert scrub(masked) is masked  # known: not passed over again
    changed = dataclasses.replace(masked, work_dir="/tmp/password=Pw-Dir-4714")
    assert "Pw-Dir-4714" not in _shown(capsys, changed)  # a copy changed after masking is masked again
    given = masked_replace(masked, work_dir="/tmp/password=Pw-Dir-4715", timings={"ingest_s": 1.0})
    assert scrub(given) is given and given.work_dir == "/tmp/password=******"
    # a list changed in place, then the model copied: the copy is masked whole again (the remembered model
    # itself is trusted as it was masked: masked_model's contract is that nothing changes it in place)
    masked.checkpoints.jobs.append(_job("late token=Pw-Late-4716", "f", "s"))
    assert "Pw-Late-4716" not in _shown(capsys, dataclasses.replace(masked))


def test_scrub_gives_back_what_needs_no_masking_and_copies_what_does():
    from flinkdoctor.safety.masking import scrub

    clean = _report()
    assert scrub(clean) is clean
    planted = _report(text=PLANTED["text"])
    done = scrub(planted)
    assert done is not planted and done.checkpoints is planted.checkpoints  # only the changed branch copied
    assert PLANTED["text"] == planted.findings[0].evidence[0].text  # the model given is left as it was
    assert done.findings[0].evidence[0].text == "opening jdbc:postgresql://admin:******@db.internal:5432/orders"


def _listing(folder: Path) -> dict[str, tuple[bytes, int]]:
    files = (p for p in folder.rglob("*") if p.is_file())
    return {p.relative_to(folder).as_posix(): (p.read_bytes(), p.stat().st_mtime_ns) for p in files}


def test_inputs_are_read_in_place_and_never_written(tmp_path):
    """A plain log is read where it is (nothing written for it); a log in another shape is copied into the work
    dir, never beside the input; after the run the bundle holds exactly what it held, byte for byte."""
    from flinkdoctor.runtime.workdir import WorkDir
    from flinkdoctor.sources.ingest import ingest

    bundle = tmp_path / "bundle"
    shutil.copytree(SHAPES / "wrapped", bundle / "wrapped")
    shutil.copytree(SHAPES / "json", bundle / "json")
    before = _listing(bundle)
    with WorkDir(tmp_path / "work") as work:
        manifest = ingest([bundle], work.path)
        by_path = {s.path: s for s in manifest.sources if s.staged}
        plain, cri = by_path["wrapped/taskmanager.log"], by_path["wrapped/taskmanager.cri.log"]
        assert plain.in_place and Path(plain.staged) == (bundle / "wrapped" / "taskmanager.log").absolute()
        assert not cri.in_place and Path(cri.staged).parent == work.path / "sources"  # the shaped copy
        assert {Path(s.staged).parent for s in by_path.values() if not s.in_place} == {work.path / "sources"}
        assert _listing(bundle) == before
    assert _listing(bundle) == before and not (tmp_path / "work" / "sources").exists()


@pytest.mark.parametrize("scenario", ["checkpoint-timeout", "heap-oom"])
def test_the_cli_json_of_a_lab_recording_is_the_one_document(spark, rules, tmp_path, monkeypatch, scenario):
    """`diagnose --format json` (written in pieces) prints the text the view made before in one piece, for a
    real lab recording's report."""
    from click.testing import CliRunner

    import flinkdoctor.pipeline
    from flinkdoctor.cli import main
    from flinkdoctor.pipeline import diagnose
    from flinkdoctor.views import contract

    report = diagnose([LAB / f"{scenario}.tar.gz"], spark=spark, work_dir=tmp_path / "work", rules=rules)
    assert report.checkpoints is not None and report.checkpoints.jobs
    monkeypatch.setattr(flinkdoctor.pipeline, "diagnose", lambda *args, **kwargs: report)
    monkeypatch.setattr(contract, "CHUNK_CHARS", 512)
    with CliRunner().isolation() as streams:
        main(["diagnose", str(LAB / f"{scenario}.tar.gz"), "--format", "json"])
        printed = streams[0].getvalue()
    assert printed == (_as_before(report) + "\n").encode("utf-8")


def _cli(argv: list[str]) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of the command line run in this process, as a user runs it."""
    from click.testing import CliRunner

    from flinkdoctor.cli import main

    code = 0
    with CliRunner().isolation() as (out, err, _):
        try:
            main(argv)
        except SystemExit as done:
            code = int(done.code or 0)
        return code, out.getvalue().decode(), err.getvalue().decode()


def _fails_part_way(monkeypatch, fmt: str) -> None:
    """A view that fails once it has written a good part of its document (a bug, a full disk under its spool)."""
    from flinkdoctor import views
    from flinkdoctor.views import contract

    if fmt == "json":
        monkeypatch.setattr(contract, "CHUNK_CHARS", 200)  # pieces written long before the failing job
        made, real = [], contract._job

        def job(one):
            made.append(one)
            if len(made) == 30:
                raise RuntimeError("a view's bug on the 30th job")
            return real(one)

        monkeypatch.setattr(contract, "_job", job)
    else:
        printed = views.render_terminal

        def render(report, console):
            printed(report, console)
            raise RuntimeError("a view's bug after the whole report")

        monkeypatch.setattr(views, "render_terminal", render)


@pytest.mark.parametrize("fmt", ["json", "text"])
def test_a_view_that_fails_part_way_leaves_stdout_empty_and_exits_4(tmp_path, monkeypatch, fmt):
    """Exit codes and stdout are the interface: a report half written when the view failed looked like a
    (truncated) answer. Now stdout holds the whole document or nothing; the failure is exit 4 with one line on
    stderr (the traceback in its log file), never 0 or 1 (--fail-on's finding). The same run whole prints the
    one document the view makes."""
    import flinkdoctor.pipeline

    monkeypatch.setenv("FLINKDOCTOR_LOG_DIR", str(tmp_path))
    monkeypatch.setattr(flinkdoctor.pipeline, "diagnose", lambda *args, **kwargs: _report())
    argv = ["diagnose", str(tmp_path), "--format", fmt, "--fail-on", "any"]
    code, out, err = _cli(argv)
    assert code == 0 and out.strip() and not err.strip(), err
    if fmt == "json":
        assert json.loads(out)["checkpoints"]["jobs"][41]["job"] == f"{39:032x}"
    _fails_part_way(monkeypatch, fmt)
    code, out, err = _cli(argv)
    assert (code, out) == (4, ""), out[-300:]
    (line,) = err.strip().splitlines()
    assert line.startswith("flinkdoctor: internal error (RuntimeError: a view's bug") and "Traceback" not in err


def test_json_pieces_past_the_spool_in_memory_reach_stdout_whole(capsys, monkeypatch):
    """A report larger than the part held in memory goes through the temporary file, the same text."""
    from flinkdoctor.safety import outbound
    from flinkdoctor.views import contract, json_chunks

    report = _report()
    monkeypatch.setattr(outbound, "SPOOL_CHARS", 1000)
    outbound.show_chunks(report, json_chunks)
    assert capsys.readouterr().out == contract.render_json(report) + "\n"
    pieces = ["{", '"a": 1', "}\n[", "x" * 3_000_000, "\n", "y" * 10, "ü\n\n", "z"]  # (read back 1 MiB at a time)
    spools, writes = [], []
    spool = outbound._Spool.__init__
    monkeypatch.setattr(outbound._Spool, "__init__", lambda self, held: spools.append(held) or spool(self, held))
    echo = outbound._echo_piece
    monkeypatch.setattr(outbound, "_echo_piece", lambda text: writes.append(len(text)) or echo(text))
    outbound.show_chunks(report, lambda _: iter(pieces), nl=False)
    assert capsys.readouterr().out == "".join(pieces)
    assert spools[0]._rolled  # held in a file, not in memory
    assert max(writes) <= 2 << 20  # a long line without a newline let go a MiB or two at a time, never whole


def test_a_temporary_folder_that_cannot_hold_the_report_is_said_so_exit_2(tmp_path, monkeypatch):
    """A full (or size-limited) TMPDIR while the report is spooled: the run is done and nothing is wrong with
    flinkdoctor, so not an internal error (exit 4), but what to do about it (exit 2), with nothing on stdout."""
    import errno
    import tempfile

    import flinkdoctor.pipeline
    from flinkdoctor.safety import outbound

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(outbound, "SPOOL_CHARS", 1000)
    monkeypatch.setattr(tempfile, "TemporaryFile", full)
    monkeypatch.setattr(flinkdoctor.pipeline, "diagnose", lambda *args, **kwargs: _report())
    code, out, err = _cli(["diagnose", str(tmp_path), "--format", "json"])
    assert (code, out) == (2, "")
    assert "cannot hold the report in" in err and "No space left on device" in err and "Traceback" not in err


QUOTED = ('password=Pw-Quote-4721"tail', "secret-key=Pw-Quote-4722\\", 'Authorization: "Pw-Quote-4723')


def test_a_fleet_report_with_quotes_beside_secrets_is_valid_json_and_html_masked():
    """The fleet's JSON was masked as serialised text: `password=x"y` became `password=******"y` inside a JSON
    string (the mask ate the escape's backslash), so `fleet --format json` printed JSON no reader could parse
    and `--format html`, which reads that JSON back, crashed. Masked as a structure, both hold every text."""
    from datetime import datetime

    from flinkdoctor.fleet.report import Answer, FleetReport
    from flinkdoctor.fleet.views import render_html, render_json

    failed = [
        {"job": f"job-{n}", "reason": reason, "at": datetime(2026, 4, 23, 21, n)} for n, reason in enumerate(QUOTED)
    ]
    answers = [
        Answer(f"job-{n}", f"b{n}", "failed", None, None, None, False, None, None, reason)
        for n, reason in enumerate(QUOTED)
    ]
    report = FleetReport(3, 0, failed, 0, {}, [], [], answers, 15.0, run={"lake": "s3a://lake:Pw-Run-4724@bucket/x"})
    data = json.loads(render_json(report))
    assert [item["reason"] for item in data["failed"]] == [a["reason"] for a in data["answers"]]
    assert data["failed"][0]["reason"] == 'password=******"tail' and data["failed"][0]["at"] == "2026-04-23 21:00:00"
    page = render_html(report)
    for text in (json.dumps(data), page):
        assert "Pw-" not in text


def test_a_value_json_writes_through_its_default_is_masked():
    """`fleet query --sql ... --format json` writes a row's bytes or times with `default=str`: that text is
    masked as it is made, like every string of the rows."""
    from flinkdoctor.safety import outbound

    class Value:  # (a value only `default` turns into text: a Decimal, a time, a driver's own type)
        def __str__(self) -> str:
            return "password=Pw-Row-4727"

    row = {"raw": bytearray(b"jdbc:postgresql://svc:Pw-Row-4725@db/x"), "text": "password=Pw-Row-4726"}
    text = outbound.dumps([row, Value()], indent=2, default=str)
    assert "Pw-Row" not in text and "svc:******@db" in text and json.loads(text)[0]["text"] == "password=******"
    assert json.loads(text)[1] == "password=******"


def test_what_a_model_holds_is_masked_by_its_content_never_passed_by_its_type(capsys):
    """`scrub` passed a named tuple, a set, a deque, a read-only mapping and bytes as they were, by their type,
    secrets and all (and a defaultdict that needed masking crashed it): each is now masked by what it holds, and
    comes back of its own type (a read-only mapping as a dict), the very object when it held nothing to mask. A
    hand-built report with such values leaves masked through the JSON view."""
    import collections
    import types

    from flinkdoctor.safety.masking import scrub

    secret = PLANTED["text"]
    named = collections.namedtuple("Named", "text where")
    held = {
        "named tuple": named(secret, "here"),
        "set": {secret},
        "frozenset": frozenset({secret}),
        "deque": collections.deque([secret], maxlen=5),
        "read-only mapping": types.MappingProxyType({"text": secret}),
        "defaultdict": collections.defaultdict(list, {"text": secret}),
        "bytes": secret.encode(),
        "bytearray": bytearray(secret.encode()),
    }
    for name, value in held.items():
        done = scrub(value)
        assert "Pw-Text-4713" not in repr(done) and "admin:******@db" in repr(done), name
        assert type(done) is (dict if name == "read-only mapping" else type(value)), name
    assert scrub(held["defaultdict"]).default_factory is list and scrub(held["named tuple"]).where == "here"
    assert scrub(held["deque"]).maxlen == 5
    clean = (named("text", "here"), {"text"}, collections.deque(["text"]), b"text")
    assert all(scrub(value) is value for value in clean)

    report = dataclasses.replace(_report(), skipped=[{"path": held["named tuple"], "reason": "a named tuple"}])
    out = _shown(capsys, report)
    assert "Pw-Text-4713" not in out and json.loads(out)["skipped"][0]["path"][1] == "here"
