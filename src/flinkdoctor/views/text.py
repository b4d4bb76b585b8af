"""Text helpers the views share: the message of a log line without its header, cut at a word boundary."""

from __future__ import annotations

import re

LEVEL = r"(?:TRACE|DEBUG|INFO|WARN|WARNING|ERROR|FATAL)"
# the log header of the layouts flinkdoctor reads, up to the message: Flink's log4j pattern
# (`2026-11-22 11:08:47,766 INFO  org.apache.flink.X [] - message`), the seeds' custom log4j
# (`[INFO ] 2019-04-23 17:39:19,347(437903259) --> [thread] a.b.C.m(C.java:1356): message`), and syslog
# (`Apr 23 17:39:19 host kernel: message`)
HEADERS = [
    re.compile(rf"^\d{{4}}-\d\d-\d\d[ T][\d:.,]+\s+{LEVEL}\s+\S+\s+(?:\[[^\]]*\]\s+)?-\s+"),
    re.compile(rf"^\[{LEVEL}\s*\][^>]{{0,80}}-->\s+\[[^\]]*\]\s+\S+?\(\S*?:?\d*\):\s+"),
    re.compile(r"^[A-Z][a-z]{2}\s+\d{1,2}\s+[\d:]{8}\s+\S+\s+[\w./-]+(?:\[\d+\])?:\s+"),
]


def message_of(text: str) -> str:
    """The message of a log line: its header (time, level, logger, thread) dropped when the layout is known."""
    for header in HEADERS:
        found = header.match(text)
        if found and found.end() < len(text):
            return text[found.end() :]
    return text


def shorten(text: str, width: int) -> str:
    """`text` on one line, at most `width` characters, cut at a word boundary (a long word alone is cut)."""
    text = " ".join(text.split())
    if len(text) <= width:
        return text
    cut = text.rfind(" ", 0, width)
    return (text[:cut] if cut > width * 3 // 4 else text[: width - 1]) + "…"
