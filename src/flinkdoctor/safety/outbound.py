"""Where what flinkdoctor writes leaves it: nothing reaches a terminal, a file, a webhook or a lake table without
passing the one masker (masking.py) here.

    echo(text)                 a line for a person on stdout or stderr
    console()                  a rich Console for the terminal views (report, fleet, rule tables), every write masked
    show / show_terminal       a report (a diagnosis, a fleet report) rendered by a view from its masked model
    show_chunks                the same, the view's text written piece by piece (the JSON view of many jobs)
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

import json
import os
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO, Any, TypeAlias

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
]


class Masked(str):
    """Text that has passed the masker as a structure (`dumps`): written as it is, since masking serialised JSON
    again could cut an escape in two."""


def echo(text: str = "", *, err: bool = False, nl: bool = True) -> None:
    """One message for a person, masked (click.echo: it copes with a closed pipe and the stream's encoding)."""
    import click

    click.echo(text if isinstance(text, Masked) else mask(text), err=err, nl=nl)


class _MaskedStream:
    """A text stream that masks every write: what a rich Console renders (it writes a whole print at once)."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        return int(self._stream.write(mask(text) or ""))

    def __getattr__(self, name: str) -> Any:  # isatty, fileno, flush, encoding: the terminal's own
        return getattr(self._stream, name)


def console(stderr: bool = False, **options: Any) -> Any:
    """A rich Console on stdout (or stderr) whose every write is masked; rich decides colour and width from the
    terminal behind it, as for its own streams."""
    from rich.console import Console

    stream = _MaskedStream(sys.stderr if stderr else sys.stdout)
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

    click.echo(text, nl=nl)


def show_chunks(report: Any, view: Callable[[Any], Iterable[str]], *, nl: bool = True) -> None:
    """`view(masked report)` (a function to pieces of text: the JSON view's `json_chunks`) on stdout, each piece
    written as it is made: a report of 100,000 jobs is never held whole as text. The same masking as `show`."""
    import click

    for piece in view(scrub(report)):
        click.echo(piece, nl=False)
    if nl:
        click.echo("")


def show_terminal(report: Any, view: Callable[[Any, Any], None], **options: Any) -> None:
    """`view(masked report, console)` for a view that prints (the terminal's) to a masked console."""
    view(scrub(report), console(**options))


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
    """JSON text of `node` (or YAML, or any text `using` makes of it) with its secrets masked first."""
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
