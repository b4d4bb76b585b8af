"""Every error flinkdoctor raises on purpose, and the exit code each one maps to.

Exit codes are an interface: CI and alerting read them, so a crash must never look like a finding.

    FlinkdoctorError                 (never raised itself)
    ├── UsageError          exit 2   a bad option value (checked before Spark starts)
    │   ├── RuleError       exit 2   rule or layout files that fail validation (file:line: reason, every problem)
    │   └── WorkDirError    exit 2   a work dir that is not flinkdoctor's own (it is never emptied), or that
    │                                cannot be created or written
    ├── InputError          exit 3   input that cannot be read: a missing path, nothing readable, an unsafe
    │                                archive, one that would unpack too large or fill the disk
    └── OutputClosed        exit 141 stdout's reader went away (`| head`): nothing more is said

    anything else                    exit 4   an internal error: one line on stderr, the traceback in a log file
    SIGINT / SIGTERM                 exit 130 / 143   interrupted or terminated: what the run wrote is removed

A failure of the run's surroundings is said in the contract's words wherever it surfaces, a Spark task included
(`translate`, called as the run's work dir is cleaned up): a full disk under the work dir is a WorkDirError, an
input file that changed or went away while it was read an InputError.

Exit 0 means the command did its work (an analysis whatever it found); exit 1 is a check the user asked for that
said no, and nothing else: `--fail-on` found a root cause of the chosen categories, `rules test` a case that
failed, `server status` no server running.
"""

from __future__ import annotations

import errno

EXIT_OK = 0
EXIT_CHECK_FAILED = 1  # --fail-on matched, a rules test case failed, no server running
EXIT_USAGE = 2
EXIT_INPUT = 3
EXIT_INTERNAL = 4
EXIT_CLOSED = 141  # 128 + SIGPIPE: what a shell shows for a process that wrote into a pipe nobody reads


class FlinkdoctorError(Exception):
    """Base of the errors flinkdoctor raises on purpose; `exit_code` is what the CLI exits with."""

    exit_code = EXIT_INTERNAL


class UsageError(FlinkdoctorError):
    """An option value that cannot be used (a time zone, a version, a year, a rules folder)."""

    exit_code = EXIT_USAGE


class RuleError(UsageError):
    """One or more rule or layout files are invalid; the message lists each problem as file:line: reason."""


class InputError(FlinkdoctorError):
    """Input that cannot be read at all; the message names the file and the reason."""

    exit_code = EXIT_INPUT


class OutputClosed(FlinkdoctorError):
    """stdout's reader went away (`... | head`): exit 141, as a process that SIGPIPE ends, and quietly. Python
    ignores SIGPIPE and click and rich turn the BrokenPipeError into exit 1, which is `--fail-on`'s finding."""

    exit_code = EXIT_CLOSED


class WorkDirError(UsageError):
    """The work dir is not flinkdoctor's own (it would be emptied) or cannot be written."""


class InputChanged(OSError):
    """An input file that went away or changed size while it was read (raised in a scan task)."""

    MARK = "input changed while it was read: "

    def __init__(self, path: str, how: str):
        super().__init__(f"{self.MARK}{path} ({how})")

    @classmethod
    def unreadable(cls, path: str, err: OSError) -> InputChanged:
        """The input gone, or unreadable now (replaced by a folder, its permissions taken): named by the reason
        only, as an OS message repeats the path raw."""
        if isinstance(err, FileNotFoundError):
            return cls(path, "it is gone")
        return cls(path, f"it cannot be read now: {err.strerror or type(err).__name__}")


DISK_FULL = {errno.ENOSPC: "no space left", errno.EFBIG: "file size limit", errno.EDQUOT: "disk quota"}
# the same, as a Spark task's failure reports it (its text is all the driver gets)
_DISK_FULL_TEXT = ("No space left on device", "File too large", "Disk quota exceeded")


def is_disk_full(err: BaseException) -> bool:
    return (isinstance(err, OSError) and err.errno in DISK_FULL) or any(t in str(err) for t in _DISK_FULL_TEXT)


def translate(err: BaseException, work_dir: object) -> FlinkdoctorError | None:
    """The contract's error for a failure of the run's surroundings (a full disk, an input that changed), or
    None for any other failure (an internal error)."""
    if isinstance(err, FlinkdoctorError):
        return None
    text = str(err)
    if InputChanged.MARK in text:
        changed = text.split(InputChanged.MARK, 1)[1].split("\n", 1)[0]
        return InputError(
            f"{changed.split(' (', 1)[0]}: the input changed while it was read ({changed.split(' (', 1)[-1]}"
        )
    if is_disk_full(err):
        reason = next((t for t in _DISK_FULL_TEXT if t in text), None) or getattr(err, "strerror", None) or text
        return WorkDirError(f"{work_dir}: cannot write to the work dir: {reason} (free space there or use --work-dir)")
    return None
