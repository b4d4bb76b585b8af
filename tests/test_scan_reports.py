"""The scan's per-byte work cut without changing what it keeps (scan/patterns.py, scan/matcher.py).

- A repeat that ends a group or an alternative at the end of a Hyperscan pattern is cut to its minimum, as one at
  the top already was: Hyperscan reports a match at every offset it can end at (`suppressed by (?:\\w+...|\\w+)`
  reported once per letter). The cut patterns must end on the same lines with fewer reports.
- An event's message lines (below its first, no stack frame) are found by one regex over its text.

Real logs of a lab recording (tests/data/lab/1.20.3/network-buffers.tar.gz: a JobManager log whose restart
strategy gave up, a TaskManager log of traces), as recorded, with CRLF line ends, with a GBK message on each
IOException line, and with a secret on each such line (hostile_input's)."""

from __future__ import annotations

import tarfile
from pathlib import Path

import numpy as np
import pytest

from conftest import DATA
from hostile_input import URL_SECRETS

pytestmark = pytest.mark.unit

BUNDLE = DATA / "lab" / "1.20.3" / "network-buffers.tar.gz"
LOGS = ("flink-root-standalonesession-0-vm.log", "flink-root-taskexecutor-0-vm.log")
GBK = "磁盘空间不足".encode("gbk")  # an OS message in a Chinese locale's encoding: not UTF-8
VARIANTS = ("as recorded", "crlf", "gbk", "secret")


def _logs() -> dict[str, bytes]:
    with tarfile.open(BUNDLE) as archive:
        return {
            Path(m.name).name: archive.extractfile(m).read()  # type: ignore[union-attr]
            for m in archive.getmembers()
            if Path(m.name).name in LOGS
        }


def _variant(data: bytes, variant: str) -> bytes:
    io_line = b"java.io.IOException"
    if variant == "crlf":
        return data.replace(b"\n", b"\r\n")
    if variant in ("gbk", "secret"):
        extra = GBK if variant == "gbk" else URL_SECRETS[0].encode()
        return b"\n".join(line + b" " + extra if io_line in line else line for line in data.split(b"\n"))
    return data


def _uncut(items, flags):
    return items


def _reports(patterns: tuple[str, ...], data: bytes) -> tuple[int, set[tuple[int, int]]]:
    """(how many reports, the (pattern, line) pairs of their last bytes) of the patterns over `data`."""
    from flinkdoctor.scan.prefilter import compile_patterns

    database = compile_patterns(patterns)
    ends: list[tuple[int, int]] = []
    database.scan(data, match_event_handler=lambda i, a, b, f, c: ends.append((i, b)))
    newlines = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 10)
    lines = {(i, int(np.searchsorted(newlines, b - 1))) for i, b in ends}
    return len(ends), lines


@pytest.mark.parametrize("variant", VARIANTS)
def test_cut_patterns_end_on_the_same_lines_with_fewer_reports(rules, monkeypatch, variant):
    """Every rule's and metric's pattern, cut and uncut, over real logs: the same (pattern, line) pairs."""
    pytest.importorskip("hyperscan")
    from flinkdoctor.analytics import load_metrics
    from flinkdoctor.knowledge.rulebook import Signature
    from flinkdoctor.scan import patterns
    from flinkdoctor.scan.prefilter import build_prefilter

    extra = [Signature(text=m.line) for m in load_metrics()]
    cut = build_prefilter(rules, extra).patterns
    monkeypatch.setattr(patterns, "_tail_cut", _uncut)
    uncut = build_prefilter(rules, extra).patterns
    assert len(cut) == len(uncut) and sum(a != b for a, b in zip(cut, uncut, strict=True)) >= 10
    counts = []
    for name, data in _logs().items():
        count_cut, lines_cut = _reports(cut, _variant(data, variant))
        count_uncut, lines_uncut = _reports(uncut, _variant(data, variant))
        assert lines_cut == lines_uncut, name
        assert count_cut <= count_uncut, name
        counts.append((count_cut, count_uncut))
    assert sum(c for c, _ in counts) < sum(u for _, u in counts)


def test_the_restart_strategy_is_reported_once_per_line_not_per_letter(rules):
    """`Recovery is suppressed by FixedDelayRestartBackoffTimeStrategy(...)`: once per line (twice: its two
    alternatives end at different offsets), not once per letter of the strategy's name."""
    pytest.importorskip("hyperscan")
    from flinkdoctor.scan.patterns import hyperscan_pattern

    rule = next(r for r in rules if r.id == "restart-strategy-exhausted")
    pattern = hyperscan_pattern(rule.signatures[0].text)
    data = _logs()[LOGS[0]]
    count, lines = _reports((pattern,), data)
    assert len(lines) == data.count(b"Recovery is suppressed by") == 3
    assert count <= 2 * len(lines)


@pytest.mark.parametrize("variant", VARIANTS)
def test_message_lines_are_the_lines_that_are_no_frame(variant):
    """An event's lines below its first that are no stack frame, found by one regex over its text, are those of
    splitting it into lines and testing each with FRAME: every event of real logs, as split by their headers."""
    import re

    from flinkdoctor.scan.matcher import FRAME, Fields

    data = b"".join(_variant(d, variant) for d in _logs().values()).decode("utf-8", "replace")
    data = data.replace("\r\n", "\n")  # as the scan's events hold their text
    events = re.split(r"\n(?=\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} )", data)
    assert len(events) > 1000
    frames = 0
    for text in events:
        lines = text.split("\n")
        expected = [(i, line.lstrip()) for i, line in enumerate(lines[1:], 1) if line.strip() and not FRAME.match(line)]
        assert Fields(text, "", None, None, None, "flink-taskmanager").message_lines == expected
        frames += sum(1 for line in lines[1:] if FRAME.match(line))
    assert frames > 500
