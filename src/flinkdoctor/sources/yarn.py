"""YARN aggregated logs (`yarn logs -applicationId ...`): one file holding every container's log files.

Split into one part per container and log type, streamed to its own file, with the line number in the original
file where the part starts, so evidence points into the file the user has. The framing lines (Container:,
LogType:, LogLength:, separators) are counted, not matched.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

CONTAINER = re.compile(rb"^Container: (container_(?:e\d+_)?\d+_\d+_\d+_\d+) on (\S+?)(?:_(\d+))?\s*$")
LOGTYPE = re.compile(rb"^Log ?Type:\s?(\S+)\s*$")
LENGTH = re.compile(rb"^Log ?Length:\s?(\d+)\s*$")
CONTENTS = re.compile(rb"^Log ?Contents:\s*$")
END = re.compile(rb"^End of LogType:")
CHUNK = 1 << 20


@dataclass(frozen=True)
class YarnPart:
    container: str | None
    host: str | None
    log_type: str | None
    start_line: int  # line number (in the aggregated file) of the line before the part's first line


def looks_aggregated(head: bytes) -> bool:
    return bool(CONTAINER.search(head.split(b"\n", 1)[0])) or (
        b"\nContainer: container_" in head[:8192] and b"LogType:" in head
    )


def split(path: Path, destination: Callable[[YarnPart], Path]) -> int:
    """Write each part to `destination(part)`; returns the number of framing lines."""
    framing = 0
    container = host = logtype = None
    length = None
    line_no = 0
    with open(path, "rb") as handle:
        while raw := handle.readline():
            line_no += 1
            line = raw.rstrip(b"\r\n")
            framing += 1
            if m := CONTAINER.match(line):
                container, host = m.group(1).decode(), m.group(2).decode("utf-8", "replace")
            elif m := LOGTYPE.match(line):
                logtype, length = m.group(1).decode("utf-8", "replace"), None
            elif m := LENGTH.match(line):
                length = int(m.group(1))
            elif CONTENTS.match(line):
                part = YarnPart(container, host, logtype, line_no)
                with open(destination(part), "wb") as out:
                    line_no += _copy_content(handle, out, length)
    return framing


def _copy_content(handle: BinaryIO, out: BinaryIO, length: int | None) -> int:
    """Copy one part (LogLength bytes, or up to the next framing line); returns the lines copied."""
    lines = 0
    if length is not None:
        remaining = length
        while remaining > 0 and (chunk := handle.read(min(CHUNK, remaining))):
            out.write(chunk)
            lines += chunk.count(b"\n")
            remaining -= len(chunk)
        return lines
    while True:
        pos = handle.tell()
        raw = handle.readline()
        stripped = raw.rstrip(b"\r\n")
        if not raw or END.match(raw) or CONTAINER.match(stripped) or LOGTYPE.match(stripped):
            handle.seek(pos)
            return lines
        out.write(raw)
        lines += 1
