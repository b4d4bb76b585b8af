"""The plain input of a shape, read into events: what a transformation reshapes.

A case's files are plain logs (or plain pasted text). Their events are read here with the product's own line
layouts (layouts.yaml), which the seeds', the lab's and the layouts' own tests hold right on plain input: the
header fields of a timed line (time, level, logger, thread, message), and its further lines. Within an event the
lines that belong to a stack trace are told apart from the message's further lines by what they are (an exception
line, a frame, `Caused by:`, `... N more`), as a person reading the log does. Untimed text (a pasted trace) is cut
where a new trace or a new unindented line starts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timezone

from flinkdoctor.sources.layouts import detect_layout, layout_by_id

FRAME = re.compile(r"^\s+at\s+\S|^\s*\.\.\. ?\d* ?(?:more|common frames omitted)\b")
CAUSE = re.compile(r"^\s*(?:Caused by|Suppressed):\s")
_CLASS = r"(?:[a-zA-Z_$][\w$]*\.)+[A-Z][\w$]*"
EXCEPTION = re.compile(
    rf"^\s*(?:Caused by:\s*)?(?P<cls>{_CLASS}(?:Exception|Error|Throwable|Failure)\w*)(?::\s?(?P<msg>.*)|\s*$)"
)
STAMP = re.compile(r"(?P<date>\d{4}-\d\d-\d\d)[ T](?P<time>\d\d:\d\d:\d\d)(?:[,.](?P<ms>\d{1,9}))?")


@dataclass
class Event:
    lines: list[str]
    fields: dict[str, str] = field(default_factory=dict)  # header fields of a timed layout; {} when untimed

    @property
    def header(self) -> str | None:
        return self.lines[0] if self.fields else None

    @property
    def message(self) -> list[str]:
        """The message's lines: the header's message and the further lines before a trace (all lines when
        untimed and no trace)."""
        body = self.lines[1:] if self.fields else self.lines
        start = trace_start(body)
        head = [self.fields.get("msg", "")] if self.fields else []
        return head + body[: len(body) if start is None else start]

    @property
    def trace(self) -> list[str]:
        """The stack trace's lines, from its first exception line (empty when the event holds none)."""
        body = self.lines[1:] if self.fields else self.lines
        start = trace_start(body)
        if start is None and self.fields and EXCEPTION.match(self.fields.get("msg", "")):
            return [self.fields["msg"], *body]  # the message is the exception (a REST or web UI copy)
        return [] if start is None else body[start:]

    @property
    def time(self) -> datetime | None:
        """The header's time as UTC (log times are read as UTC, flinkdoctor's default zone), or None."""
        m = STAMP.search(self.fields.get("ts", ""))
        if not m:
            return None
        ms = (m["ms"] or "0")[:3].ljust(3, "0")
        return datetime.strptime(f"{m['date']} {m['time']}.{ms}", "%Y-%m-%d %H:%M:%S.%f").replace(tzinfo=timezone.utc)


def trace_start(lines: list[str]) -> int | None:
    """Index of the first exception line that a frame, a `Caused by` or the end follows (a trace's head)."""
    for i, line in enumerate(lines):
        if EXCEPTION.match(line) and (i + 1 == len(lines) or FRAME.match(lines[i + 1]) or CAUSE.match(lines[i + 1])):
            return i
    for i, line in enumerate(lines):
        if EXCEPTION.match(line) or CAUSE.match(line):
            return i
    return None


def layout_of(lines: list[str]) -> str:
    return detect_layout(lines[:2000])


def read_events(text: str) -> list[Event]:
    """The events of a plain file, in order; every line in exactly one event."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    layout = layout_by_id(layout_of(lines))
    events: list[Event] = []
    if layout.timed and layout.id != "plain":
        regex = layout.python_regex
        for line in lines:
            m = regex.match(line)
            if m or not events:
                fields = {k: v for k, v in m.groupdict().items() if v is not None} if m else {}
                events.append(Event([line], fields))
            else:
                events[-1].lines.append(line)
        return events
    for line in lines:  # untimed: a new event at an unindented line that does not continue a trace
        continues = FRAME.match(line) or CAUSE.match(line) or line[:1] in (" ", "\t")
        if not events or (not continues and line.strip()):
            events.append(Event([line]))
        else:
            events[-1].lines.append(line)
    return events


def exceptions(trace: list[str]) -> list[tuple[str, str | None]]:
    """(class, message or None) of each exception of a trace, outermost first: the first, then every Caused by
    (a Suppressed one is not in the chain); a message's further lines (before the next frame) belong to it."""
    found: list[tuple[str, str | None]] = []
    open_message = False
    for line in trace:
        m = EXCEPTION.match(line)
        if m and not line.lstrip().startswith("Suppressed:"):
            found.append((m["cls"], m["msg"]))
            open_message = True
        elif FRAME.match(line) or CAUSE.match(line):
            open_message = False
        elif open_message and found:
            cls, msg = found[-1]
            found[-1] = (cls, f"{msg or ''}\n{line}")
    return found
