"""stdout or stderr that fails (errors.py): exit codes are an interface, and a closed pipe is not a finding.

- A reader that goes away (`flinkdoctor ... | head`) is exit 141, as for a process SIGPIPE ends, and nothing is
  said: Python ignores SIGPIPE, and click and rich turn the BrokenPipeError into exit 1, `--fail-on`'s code.
- stdout that takes no more (a full disk) is exit 2 with one line, not an internal error.
- stderr that fails loses its line; the run's exit code still says what happened.

Every way out to stdout is tried (outbound: echo, show, show_chunks, show_terminal, the rich console), in process;
the command line in a subprocess whose pipe is closed before it writes."""

from __future__ import annotations

import errno
import io
import os
import subprocess
import sys

import pytest

from conftest import DATA

EXE = [sys.executable, "-m", "flinkdoctor"]


class _Failing:
    """A stream whose writes (or flushes only) fail with `error`."""

    def __init__(self, error: OSError, on_write: bool = True) -> None:
        self.error, self.on_write, self.written = error, on_write, []

    def write(self, text: str) -> int:
        if self.on_write:
            raise self.error
        self.written.append(text)
        return len(text)

    def flush(self) -> None:
        raise self.error

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        raise io.UnsupportedOperation("no file behind it")  # as pytest's own captured streams (not a real fd)


def _ways_out():
    from flinkdoctor.safety import outbound

    def _table(report, console):
        console.print(report["text"])

    return {
        "echo": lambda: outbound.echo("a line"),
        "show": lambda: outbound.show({"text": "x"}, lambda report: report["text"]),
        "show_chunks": lambda: outbound.show_chunks({"text": "x"}, lambda report: iter([report["text"]])),
        "show_terminal": lambda: outbound.show_terminal({"text": "x"}, _table),
        "console": lambda: outbound.console().print("a table"),
    }


@pytest.mark.parametrize("way", sorted(_ways_out()))
@pytest.mark.parametrize("on_write", [True, False], ids=["write", "flush"])
def test_a_closed_stdout_is_output_closed_on_every_way_out(monkeypatch, way, on_write):
    from flinkdoctor.errors import EXIT_CLOSED, OutputClosed

    monkeypatch.setattr(sys, "stdout", _Failing(BrokenPipeError(errno.EPIPE, "Broken pipe"), on_write))
    with pytest.raises(OutputClosed) as closed:
        _ways_out()[way]()
    assert closed.value.exit_code == EXIT_CLOSED == 141


@pytest.mark.parametrize("way", sorted(_ways_out()))
def test_a_full_stdout_is_a_usage_error_naming_it(monkeypatch, way):
    from flinkdoctor.errors import EXIT_USAGE, UsageError

    monkeypatch.setattr(sys, "stdout", _Failing(OSError(errno.ENOSPC, "No space left on device")))
    with pytest.raises(UsageError, match="cannot write to stdout: No space left on device") as failed:
        _ways_out()[way]()
    assert failed.value.exit_code == EXIT_USAGE


def test_a_console_on_another_stream_leaves_its_failure_to_that_streams_owner(monkeypatch):
    """A console on a file of the caller's (`console(file=...)`) failing is not stdout failing: no "cannot write to
    stdout", and stdout is not pointed at /dev/null."""
    from flinkdoctor.errors import UsageError
    from flinkdoctor.safety import outbound

    stdout = io.StringIO()
    monkeypatch.setattr(sys, "stdout", stdout)
    for error in (OSError(errno.ENOSPC, "full"), BrokenPipeError(errno.EPIPE, "Broken pipe")):
        with pytest.raises(OSError) as failed:  # (rich took a closed pipe for stdout's: SystemExit 1)
            outbound.console(file=_Failing(error)).print("a table")
        assert not isinstance(failed.value, (BrokenPipeError, UsageError)) and failed.value.errno == error.errno
    outbound.echo("stdout still writes")
    assert stdout.getvalue() == "stdout still writes\n"


@pytest.mark.parametrize("error", [BrokenPipeError(errno.EPIPE, "Broken pipe"), OSError(errno.ENOSPC, "full")])
def test_a_failing_stderr_loses_its_line_and_nothing_else(monkeypatch, error):
    from flinkdoctor.safety import outbound

    monkeypatch.setattr(sys, "stderr", _Failing(error))
    outbound.echo("flinkdoctor: a message", err=True)
    outbound.console(stderr=True).print("a message")


def _closed_reader(*args: str, stderr_closed: bool = False, exe=EXE) -> subprocess.CompletedProcess:
    """The command with its stdout (or stderr) a pipe whose reader is gone before it writes; stdout buffered, as
    a user's Python has it (PYTHONUNBUFFERED would hide what is left in the buffer at exit)."""
    read, write = os.pipe()
    os.close(read)
    env = {key: value for key, value in os.environ.items() if key != "PYTHONUNBUFFERED"}
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    streams = (
        {"stderr": write, "stdout": subprocess.PIPE} if stderr_closed else {"stdout": write, "stderr": subprocess.PIPE}
    )
    try:
        done = subprocess.run([*exe, *args], env=env, timeout=600, **streams)
    finally:
        os.close(write)
    return done


def test_a_reader_gone_is_exit_141_and_silent_not_exit_1():
    done = _closed_reader("rules", "list")
    assert (done.returncode, done.stderr) == (141, b"")


SMALL_TERMINAL_REPORT = """
import sys
from flinkdoctor.errors import OutputClosed
from flinkdoctor.safety import outbound
try:
    outbound.show_terminal({}, lambda report, console: console.print("a report shorter than the stream's buffer"))
except OutputClosed as closed:  # as the CLI's main
    sys.exit(closed.exit_code)
"""


def test_what_is_left_in_the_buffer_does_not_fail_again_at_exit():
    """A short report stays in stdout's buffer until its flush fails; Python's own flush at exit would fail on it
    again (exit 120, 'Exception ignored' on stderr) were the stream not pointed elsewhere."""
    done = _closed_reader("-c", SMALL_TERMINAL_REPORT, exe=[sys.executable])
    assert (done.returncode, done.stderr) == (141, b"")


def test_a_full_stdout_is_exit_2_with_one_line():
    with open(os.devnull.replace("null", "full"), "w") as full:
        done = subprocess.run([*EXE, "rules", "list"], stdout=full, stderr=subprocess.PIPE, timeout=600)
    assert done.returncode == 2
    assert done.stderr == b"flinkdoctor: cannot write to stdout: No space left on device\n"


@pytest.mark.parametrize(
    "args", [("--help",), ("--version",), ("fleet", "query", "--help"), ("rules", "suggest", "--help")]
)
def test_help_and_version_fail_as_every_other_output(args):
    """click prints them itself: into a closed pipe its own handler exited 1, `--fail-on`'s code; into a full disk
    they were an internal error with a crash log."""
    done = _closed_reader(*args)
    assert (done.returncode, done.stderr) == (141, b"")
    with open(os.devnull.replace("null", "full"), "w") as full:
        done = subprocess.run([*EXE, *args], stdout=full, stderr=subprocess.PIPE, timeout=600)
    assert (done.returncode, done.stderr) == (2, b"flinkdoctor: cannot write to stdout: No space left on device\n")


@pytest.mark.parametrize(
    "args", [("rules", "show", "no-such-rule"), ("no-such-command",)], ids=["ours", "click's usage error"]
)
def test_an_error_said_to_a_closed_or_full_stderr_keeps_its_exit_code(args):
    done = _closed_reader(*args, stderr_closed=True)
    assert (done.returncode, done.stdout) == (2, b"")
    with open(os.devnull.replace("null", "full"), "w") as full:
        done = subprocess.run([*EXE, *args], stdout=subprocess.PIPE, stderr=full, timeout=600)
    assert (done.returncode, done.stdout) == (2, b"")


@pytest.mark.spark  # starts Spark in a subprocess
def test_a_finding_into_a_closed_pipe_is_not_reported_as_the_finding():
    """`--fail-on` matches here (exit 1 when the report is read, tests/test_cli.py); with no one reading it, 141."""
    done = _closed_reader("diagnose", str(DATA / "seeds" / "003"), "--format", "json", "--fail-on", "host-stall")
    assert (done.returncode, done.stderr) == (141, b"")


TERMINATED_WHILE_RUNNING = """
import os, signal, time
import flinkdoctor.cli as cli
def terminated(*args, **kwargs):  # SIGTERM while the command runs, before anything went to stderr
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(5)
cli.load_rules = terminated
cli.main(["rules", "list"])
"""


def test_a_signal_with_a_failing_stderr_keeps_the_signals_exit_code(tmp_path):
    """click writes ^C's blank line to stderr itself: a closed or full stderr made that an internal error, exit 4
    with a crash log (review14b), where SIGTERM is 143."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONUNBUFFERED"}
    env["FLINKDOCTOR_LOG_DIR"] = str(tmp_path)
    done = _closed_reader("-c", TERMINATED_WHILE_RUNNING, stderr_closed=True, exe=[sys.executable])
    assert done.returncode == 143
    with open(os.devnull.replace("null", "full"), "w") as full:
        done = subprocess.run(
            [sys.executable, "-c", TERMINATED_WHILE_RUNNING], stdout=subprocess.PIPE, stderr=full, env=env, timeout=60
        )
    assert done.returncode == 143 and not list(tmp_path.iterdir())  # no crash log
