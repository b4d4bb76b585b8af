"""The JSON view: the report contract, exact text, safe to print to a terminal or to paste.

The contract is schema flinkdoctor.report/v1 (schemas/report.schema.json) at minor version CONTRACT_VERSION:
a minor version only adds optional fields and sections, so a reader of an earlier minor version reads a later
one unchanged. The history is in CHANGELOG.md.

`json_chunks` writes the same text in pieces, each job's checkpoints made as they are written: a report of
100,000 jobs is never held whole, as dicts or as text (`render_json` is its pieces joined).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from ..analytics.model import CheckpointJob
from ..jsondata import JSONObject
from ..report.model import CONTRACT_VERSION, SCHEMA, Report, job_dict
from .indented import indented_pieces
from .sentences import checkpoint_sentences

__all__ = ["CONTRACT_VERSION", "SCHEMA", "contract", "json_chunks", "render_json"]

# JSON may carry these raw inside strings; a terminal may act on them (C1 controls such as CSI, DEL, line and
# paragraph separators, bidi overrides). Escaped as \uXXXX, the parsed strings stay the same.
_RAW_UNSAFE = re.compile("[\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")
CHUNK_CHARS = 1 << 20  # json_chunks' pieces: about this many characters, each ending with a whole line
ENCODED_BATCH = 4096  # the encoder's parts (a flat container's text, a key, a line's indent), joined this many


def contract(report: Report) -> dict[str, Any]:
    """The report as the JSON contract: its data (`Report.to_dict()`), and per job the sentences about its
    checkpoints (`summary`, required by v1), which this view writes from the numbers."""
    return report.data(jobs=lambda jobs: [_job(job) for job in jobs])


def _job(job: CheckpointJob) -> JSONObject:
    data = job_dict(job)
    data["summary"] = checkpoint_sentences(data)
    return data


def render_json(report: Report) -> str:
    return "".join(json_chunks(report))


def json_chunks(report: Report) -> Iterator[str]:
    """The JSON view's text in pieces of whole lines (a terminal's escape sequence never cut in two), the same
    text as one `json.dumps(contract(report), indent=2, ensure_ascii=False)`, escaped."""
    data = report.data(jobs=lambda jobs: OneAtATime(jobs, _job))
    held, size = [], 0
    for text in indented_pieces(data, ENCODED_BATCH):
        held.append(text)
        size += len(text)
        if size >= CHUNK_CHARS and "\n" in text:
            text = "".join(held)
            cut = text.rindex("\n") + 1
            yield _escaped(text[:cut])
            held, size = [text[cut:]], len(text) - cut
    yield _escaped("".join(held))


def _escaped(text: str) -> str:
    if text.isascii() and "\x7f" not in text:  # (two passes in C: nearly every piece has nothing to escape)
        return text
    return _RAW_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


class OneAtATime(list):  # type: ignore[type-arg]
    """A list as the JSON encoder reads it (its length, then its items in order) whose items are made as they
    are read and let go once written: `make(item)` of each of `items`. The encoder writes a list subclass as a
    list; nothing else may use it."""

    def __init__(self, items: Sequence[Any], make: Callable[[Any], Any]) -> None:
        super().__init__()
        self._items, self._make = items, make

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[Any]:
        return map(self._make, self._items)
