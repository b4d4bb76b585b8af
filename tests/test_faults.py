"""Faults during a run (issue #27): a full disk under the work dir, an input file that goes away or is cut while it
is read, SIGINT and SIGTERM, Spark's JVM killed. Each ends with one clear line on stderr and the contract's exit
code (never 1, never 0 with a partial report), nothing left behind in the work dir or the temp folder, and no
partial fleet run presented as complete.

A full disk is a file size limit (RLIMIT_FSIZE) on the flinkdoctor process: it works as any user on any Linux, and
a write past it fails as a write on a full disk does (EFBIG in place of ENOSPC); Python ignores SIGXFSZ.
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import DATA

LAB = DATA / "lab" / "1.20.3" / "heap-oom.tar.gz"
SEED4 = DATA / "seeds" / "004" / "taskmanager.log"


def start(args: list[str], tmp: Path, fsize: int | None = None, **popen) -> subprocess.Popen:
    """`flinkdoctor ARGS` as a user runs it, with its own temp folder (TMPDIR) and log folder."""
    (tmp / "temp").mkdir(exist_ok=True)
    (tmp / "logs").mkdir(exist_ok=True)
    env = {
        **os.environ,
        "SPARK_LOCAL_IP": "127.0.0.1",
        "TMPDIR": str(tmp / "temp"),
        "FLINKDOCTOR_LOG_DIR": str(tmp / "logs"),
    }

    def limit():
        if fsize is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))

    return subprocess.Popen(
        [sys.executable, "-m", "flinkdoctor", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env=env,
        preexec_fn=limit,
        **popen,
    )


def finish(proc: subprocess.Popen, timeout: float = 300) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out, err


def one_clear_line(stderr: str) -> str:
    lines = [line for line in stderr.strip().splitlines() if line.startswith("flinkdoctor:")]
    assert lines and "Traceback" not in stderr, stderr[-3000:]
    return lines[-1]


def left_in_temp(tmp: Path) -> list[str]:
    """What a run left in its temp folder (the JVM's own perf data aside: the JDK removes it at exit)."""
    return sorted(str(p.relative_to(tmp)) for p in (tmp / "temp").rglob("*") if "hsperfdata" not in str(p))


def children(pid: int) -> list[int]:
    """The process ids whose parent is `pid` (from /proc)."""
    found = []
    for status in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = status.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(status.parent.name))
    return found


def wait_for(check, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


@pytest.mark.spark  # a flinkdoctor process that starts its own Spark
def long_bundle(tmp: Path, copies: int = 3000) -> Path:
    """Seed 004's TaskManager log many times over (11 MB): a run long enough to be stopped while it scans."""
    bundle = tmp / "bundle"
    bundle.mkdir()
    lines = SEED4.read_text("utf-8").splitlines()
    with open(bundle / "taskmanager.log", "w", encoding="utf-8") as handle:
        for n in range(copies):
            handle.write("\n".join(f"{line} #{n}" if " WARN " in line else line for line in lines) + "\n")
    return bundle


def scanning(tmp: Path) -> bool:
    """The run's work dir holds its events table: the Spark job of the scan is running."""
    return bool(list((tmp / "temp").glob("flinkdoctor-*/events.parquet")))


def test_a_full_disk_while_unpacking_is_a_work_dir_error(tmp_path):
    """The archive is fine; the disk under the work dir is not: the run stops (exit 2), it is not a bad input."""
    code, out, err = finish(start(["diagnose", str(LAB)], tmp_path, fsize=50_000))
    line = one_clear_line(err)
    assert code == 2 and out == "", err
    assert "cannot write to the work dir" in line and "File too large" in line
    assert left_in_temp(tmp_path) == []


@pytest.mark.spark  # a flinkdoctor process that starts its own Spark
def test_a_full_disk_while_scanning_is_a_work_dir_error(tmp_path):
    """A bundle read in place (nothing staged) whose events table outgrows the limit in a Spark task."""
    bundle = long_bundle(tmp_path, copies=6000)
    code, out, err = finish(start(["diagnose", str(bundle)], tmp_path, fsize=400_000))
    line = one_clear_line(err)
    assert code == 2 and out == "", err
    assert "cannot write to the work dir" in line
    assert left_in_temp(tmp_path) == []


@pytest.mark.parametrize("change", ["removed", "truncated"])
def test_an_input_that_changes_while_it_is_read(spark, tmp_path, monkeypatch, change):
    """Ingest has read the file; then it is removed (a rotated log) or cut shorter: exit 3 with the file named,
    never a count of what was left presented as the input."""
    from click.testing import CliRunner

    import flinkdoctor.pipeline
    from flinkdoctor.cli import main

    bundle = tmp_path / "bundle"
    bundle.mkdir()
    target = bundle / "taskmanager.log"
    target.write_bytes(SEED4.read_bytes())
    real = flinkdoctor.pipeline.ingest

    def ingest_then_change(*args, **kwargs):
        manifest = real(*args, **kwargs)
        if change == "removed":
            target.unlink()
        else:
            target.write_bytes(target.read_bytes()[:1000])
        return manifest

    monkeypatch.setattr(flinkdoctor.pipeline, "ingest", ingest_then_change)
    work = tmp_path / "work"
    with CliRunner().isolation() as streams:
        with pytest.raises(SystemExit) as done:
            main(["diagnose", str(bundle), "--work-dir", str(work)])
        err = streams[1].getvalue().decode()
    line = one_clear_line(err)
    assert done.value.code == 3 and str(target) in line and "changed while it was read" in line, err
    assert not work.exists()  # the run made it: all of it is gone


@pytest.mark.spark  # a flinkdoctor process that starts its own Spark
@pytest.mark.parametrize("sent, code, said", [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")])
def test_a_signal_mid_run_stops_cleanly(tmp_path, sent, code, said):
    """Sent while the run scans: exit 130 / 143, one line, nothing left, no JVM behind."""
    proc = start(["diagnose", str(long_bundle(tmp_path))], tmp_path)
    wait_for(lambda: scanning(tmp_path) or proc.poll() is not None)
    jvm = children(proc.pid)
    proc.send_signal(sent)
    returncode, out, err = finish(proc)
    assert returncode == code and one_clear_line(err) == f"flinkdoctor: {said}", err[-2000:]
    assert out == ""
    wait_for(lambda: not any(Path(f"/proc/{pid}").exists() for pid in jvm), 30)
    assert left_in_temp(tmp_path) == []


@pytest.mark.spark  # a flinkdoctor process that starts its own Spark
def test_the_spark_jvm_killed_mid_run_is_an_internal_error(tmp_path):
    proc = start(["diagnose", str(long_bundle(tmp_path)), "--fail-on", "any"], tmp_path)
    wait_for(lambda: scanning(tmp_path) or proc.poll() is not None)
    for pid in children(proc.pid):
        os.kill(pid, signal.SIGKILL)
    returncode, out, err = finish(proc)
    line = one_clear_line(err)
    assert returncode == 4 and out == "" and line.startswith("flinkdoctor: internal error"), err[-2000:]
    assert left_in_temp(tmp_path) == []


def test_a_fleet_run_cut_short_is_not_presented(spark, rules, tmp_path, monkeypatch):
    """A run that dies before its bundles rows (written last) shows nowhere; the next run does it in full."""
    from flinkdoctor.fleet import lake
    from flinkdoctor.fleet.report import build
    from flinkdoctor.fleet.run import run_fleet

    root = tmp_path / "jobs"
    (root / "job-a").mkdir(parents=True)
    (root / "job-a" / "taskmanager.log").write_bytes(SEED4.read_bytes())
    real = lake.append

    def dies_before_bundles(spark, lake_dir, table, rows):
        if table == "bundles":
            raise OSError(28, "No space left on device")
        real(spark, lake_dir, table, rows)

    monkeypatch.setattr(lake, "append", dies_before_bundles)
    with pytest.raises(Exception, match="No space left on device"):
        run_fleet([root], tmp_path / "lake", rules, spark=spark, work_dir=tmp_path / "work")
    assert (tmp_path / "lake" / "diagnoses").is_dir()  # rows of the cut run are on disk ...
    assert lake.read(tmp_path / "lake", "diagnoses") == [] and build(tmp_path / "lake").causes == []  # ... unread
    monkeypatch.setattr(lake, "append", real)
    result = run_fleet([root], tmp_path / "lake", rules, spark=spark, work_dir=tmp_path / "work")
    assert result.new == 1 and result.skipped == 0  # done again, in full
    causes = build(tmp_path / "lake").causes
    assert [(c.rule, len(c.jobs)) for c in causes][:1] == [("zookeeper-client-session-timeout", 1)]
