"""Every error flinkdoctor raises on purpose, and the exit code each one maps to.

Exit codes are an interface: CI and alerting read them, so a crash must never look like a finding.

    FlinkdoctorError                 (never raised itself)
    ├── UsageError          exit 2   a bad option value (checked before Spark starts)
    │   ├── RuleError       exit 2   rule or layout files that fail validation (file:line: reason, every problem)
    │   └── WorkDirError    exit 2   a work dir that is not flinkdoctor's own (it is never emptied), or that
    │                                cannot be created or written
    └── InputError          exit 3   input that cannot be read: a missing path, nothing readable, an unsafe
                                     archive, one that would unpack too large or fill the disk

    anything else                    exit 4   an internal error: one line on stderr, the traceback in a log file

Exit 0 means the analysis ran (whatever it found); exit 1 is reserved for `--fail-on` when a root cause of the
chosen categories is found.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_FOUND = 1
EXIT_USAGE = 2
EXIT_INPUT = 3
EXIT_INTERNAL = 4


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


class WorkDirError(UsageError):
    """The work dir is not flinkdoctor's own (it would be emptied) or cannot be written."""
