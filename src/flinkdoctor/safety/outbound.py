"""Where what flinkdoctor writes leaves it: nothing reaches a terminal, a file, a webhook or a lake table without
passing the one masker (masking.py) here.

    echo(text)                 a line for a person on stdout or stderr
    console()                  a rich Console for the terminal views (report, fleet, rule tables), every write masked
    written()                  a write to stdout or stderr whose failure is an exit code (errors.py), not a crash
    show / show_terminal       a report (a diagnosis, a fleet report) rendered by a view from its masked model
    show_chunks                the same, the view's text made piece by piece (the JSON view of many jobs)

A report reaches stdout whole or not at all: a view that fails part way leaves nothing there (the CLI's exit 4
and one line on stderr say what happened), never half a document a reader might take for an answer.
    write_text / write_bytes   files: crash logs, --html, `rules suggest` drafts, `collect` bundles' logs
    write_json / echo_json / dumps   JSON of a structure (collect.json, REST answers, watch lines, webhook bodies)
    rows(rows)                 rows of a fleet lake table
    mask_file(path)            a file another process wrote (Spark's own log, kept after a failed run)

Text is masked as text (`mask`, or `mask_log` for a log's bytes); a structure is masked before it is serialised
(`scrub`: a key decides about its value, and masking serialised JSON could cut an escape in two). The events
table is the one other way out: the scan tasks mask its text as they cut it from the file (scan/scanner.py).
tests/test_secrets.py checks that no other module calls a write primitive, but for the raw copies of the input
in the work dir, which never outlive the run, and files whose content comes from no input.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, Any, TypeAlias

from ..errors import OutputClosed, UsageError
from .masking import mask, mask_log, scrub

PathArg: TypeAlias = "str | os.PathLike[str]"

__all__ = [
    "console",
    "dumps",
    "echo",
    "echo_json",
    "Masked",
    "mask_file",
    "rows",
    "scrub",
    "show",
    "show_chunks",
    "show_terminal",
    "write_bytes",
    "write_json",
    "write_text",
    "written",
]


class Masked(str):
    """Text that has passed the masker as a structure (`dumps`): written as it is, since masking serialised JSON
    again could cut an escape in two."""


@contextlib.contextmanager
def written(err: bool = False) -> Iterator[None]:
    """A write to stdout (or stderr, `err`) that fails as errors.py says, not as a crash or a finding: a reader
    gone (`| head`) is OutputClosed, exit 141; stdout that takes no more (a full disk) exit 2; stderr's line is
    lost, with no one to say it to. The stream that failed is pointed at /dev/null, so that Python's own flush at
    exit does not fail on it again."""
    try:
        yield
    except OSError as failed:
        stream = sys.stderr if err else sys.stdout
        with contextlib.suppress(OSError, ValueError):  # a stream with no file behind it is left as it is
            number = stream.fileno()
            nowhere = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(nowhere, number)
            finally:
                os.close(nowhere)
        if err:
            return
        if isinstance(failed, BrokenPipeError):
            raise OutputClosed() from None
        raise UsageError(f"cannot write to stdout: {failed.strerror or type(failed).__name__}") from None


def echo(text: str = "", *, err: bool = False, nl: bool = True) -> None:
    """One message for a person, masked (click.echo: the stream's encoding)."""
    import click

    with written(err):
        click.echo(text if isinstance(text, Masked) else mask(text), err=err, nl=nl)


class _MaskedStream:
    """A text stream that masks every write: what a rich Console renders (it writes a whole print at once).
    A failed write or flush of stdout or stderr (`err` False or True) is `written`'s: rich would make a closed
    pipe exit 1. Any other stream's failure (`err` None) is its owner's to say: it is not stdout's."""

    def __init__(self, stream: IO[str], err: bool | None) -> None:
        self._stream = stream
        self._err = err

    def write(self, text: str) -> int:
        with self._failing_as_written():
            return int(self._stream.write(mask(text) or ""))
        return 0

    def flush(self) -> None:
        with self._failing_as_written():
            self._stream.flush()

    def _failing_as_written(self) -> contextlib.AbstractContextManager[None]:
        return _not_stdouts() if self._err is None else written(self._err)

    def __getattr__(self, name: str) -> Any:  # isatty, fileno, encoding: the terminal's own
        return getattr(self._stream, name)


class PipeClosed(OSError):
    """A closed pipe of a stream that is not stdout: rich takes a BrokenPipeError for stdout's (it points stdout
    at /dev/null and exits 1, `--fail-on`'s code). (OSError(EPIPE, ...) itself would be a BrokenPipeError.)"""


@contextlib.contextmanager
def _not_stdouts() -> Iterator[None]:
    try:
        yield
    except BrokenPipeError as err:
        raise PipeClosed(err.errno, err.strerror) from None


def console(stderr: bool = False, file: Any = None, **options: Any) -> Any:
    """A rich Console on stdout (or stderr, or `file`) whose every write is masked; rich decides colour and width
    from the terminal behind it, as for its own streams."""
    from rich.console import Console

    stream = (
        _MaskedStream(file, None) if file is not None else _MaskedStream(sys.stderr if stderr else sys.stdout, stderr)
    )
    return Console(file=stream, stderr=stderr, **options)  # type: ignore[arg-type]


def show(report: Any, view: Callable[[Any], str], *, to: PathArg | None = None, nl: bool = True) -> None:
    """`view(masked report)` (a function to text: JSON, HTML, Markdown) on stdout, or into the file `to`. The
    model is masked here, whoever built it; a model masking.masked_model returned (build_report's), or
    masked_replace made of one, is known to be masked and is not passed over a second time."""
    text = view(scrub(report))
    if to is not None:
        Path(to).write_text(text, encoding="utf-8")
        return
    import click

    with written():
        click.echo(text, nl=nl)


SPOOL_CHARS = 8 << 20  # a document held in memory up to this size while it is made, past it in a temporary file


@contextlib.contextmanager
def _whole_or_nothing(out: Callable[[str], Any]) -> Iterator[_Spool]:
    """A stream for a view that writes as it goes: what it writes is given to `out` only once it has written all
    of it. A view that fails part way (an internal error: exit 4 and one line on stderr, errors.py) leaves nothing
    on stdout, never half a JSON document that a reader might take for a report. Spooled to a file in the
    temporary folder (TMPDIR) past SPOOL_CHARS: a report of 100,000 jobs is not held whole in memory."""
    with tempfile.SpooledTemporaryFile(
        SPOOL_CHARS, mode="w+", encoding="utf-8", errors="surrogatepass", newline=""
    ) as held:
        yield _Spool(held)
        held.seek(0)
        rest = ""
        while text := held.read(1 << 20):
            text, rest = rest + text, ""
            cut = text.rfind("\n") + 1 or len(text)  # whole lines where there are any (a terminal's escapes)
            text, rest = text[:cut], text[cut:]
            out(text)
        if rest:
            out(rest)


class _Spool:
    """The spool's writes: a full or size-limited temporary folder is said as such (exit 2), not as a crash."""

    def __init__(self, held: IO[str]) -> None:
        self.held = held

    def write(self, text: str) -> int:
        try:
            return self.held.write(text)
        except OSError as err:
            raise UsageError(
                f"cannot hold the report in {tempfile.gettempdir()} before writing it out: "
                f"{err.strerror or type(err).__name__} (free space there, or point TMPDIR elsewhere)"
            ) from None


def _echo_piece(text: str) -> None:
    import click

    with written():
        click.echo(text, nl=False)


def show_chunks(report: Any, view: Callable[[Any], Iterable[str]], *, nl: bool = True) -> None:
    """`view(masked report)` (a function to pieces of text: the JSON view's `json_chunks`) on stdout, whole or
    not at all (`_whole_or_nothing`): each piece is let go as it is made, so that a report of 100,000 jobs is
    never held whole as text. The same masking as `show`."""
    with _whole_or_nothing(_echo_piece) as held:
        for piece in view(scrub(report)):
            held.write(piece)
        if nl:
            held.write("\n")


class _HeldStdout:
    """Writes held (`_whole_or_nothing`); anything else asked of it (isatty, fileno, encoding: what a rich Console
    decides colour and width by) is the real stdout's."""

    def __init__(self, held: _Spool) -> None:
        self._held = held

    def write(self, text: str) -> int:
        return self._held.write(text)

    def flush(self) -> None:
        """Nothing leaves before the view is done."""

    def __getattr__(self, name: str) -> Any:
        return getattr(sys.stdout, name)


def show_terminal(report: Any, view: Callable[[Any, Any], None], **options: Any) -> None:
    """`view(masked report, console)` for a view that prints (the terminal's) to a masked console, on stdout
    whole or not at all, as `show_chunks`."""
    with _whole_or_nothing(_to_stdout) as held:  # (as rich wrote: its colour kept, never stripped)
        view(scrub(report), console(file=_HeldStdout(held), **options))
    with written():
        sys.stdout.flush()


def _to_stdout(text: str) -> None:
    with written():
        sys.stdout.write(text)


def write_text(path: PathArg, text: str) -> Path:
    """A text file (a crash log's traceback, a draft rule), masked."""
    target = Path(path)
    target.write_text(text if isinstance(text, Masked) else mask(text) or "", encoding="utf-8")
    return target


def write_bytes(path: PathArg, data: bytes) -> Path:
    """A log's bytes (a collected log), masked line by line; bytes that are not UTF-8 are kept."""
    target = Path(path)
    target.write_bytes(mask_log(data))
    return target


def echo_json(node: Any, **options: Any) -> None:
    """JSON of `node`, masked, on stdout (json.dumps' options)."""
    echo(dumps(node, **options))


def dumps(node: Any, using: Callable[..., str] = json.dumps, **options: Any) -> Masked:
    """JSON text of `node` (or YAML, or any text `using` makes of it) with its secrets masked first; what json's
    `default` makes of a value it has no type for (`default=str` of a SQL row's bytes) is masked as it is made."""
    given = options.get("default")
    if given is not None:
        options["default"] = lambda value: scrub(given(value))
    return Masked(using(scrub(node), **options))


def write_json(path: PathArg, node: Any, **options: Any) -> Path:
    """A JSON file of `node`, masked, with a final newline."""
    target = Path(path)
    write_text(target, Masked(dumps(node, **options) + "\n"))
    return target


def rows(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows for a lake table, masked (a value under a sensitive column name whole, every string as text)."""
    return [scrub(item) for item in items]


def mask_file(path: PathArg) -> None:
    """Mask a file another process wrote (Spark's JVM writes its log itself), in place."""
    target = Path(path)
    if target.is_file():
        target.write_bytes(mask_log(target.read_bytes()))
