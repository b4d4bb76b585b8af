"""The scan's `head` column (scan/scanner.py): a WARN+ event's first line, which the unexplained errors read for
their evidence instead of the whole `text`. Checked against the files themselves: real JobManager and TaskManager
logs of the lab's 1.20.3 recordings (tests/data/lab), whose WARN and ERROR events include multi-line stack traces."""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest

from conftest import DATA

pytestmark = pytest.mark.unit

RECORDING = "checkpoint-timeout"  # its TaskManager logs a declined checkpoint at WARN with its stack trace


@pytest.fixture(scope="module")
def scanned(rules, tmp_path_factory) -> tuple[list[dict], dict[int, list[str]]]:
    """The kept events of the recording's logs, and each source's lines as the file holds them."""
    from flinkdoctor.analytics import load_metrics
    from flinkdoctor.scan.events import SPLIT_BYTES, plan
    from flinkdoctor.scan.matcher import build_matcher
    from flinkdoctor.scan.scanner import PartStats, scan_part
    from flinkdoctor.sources.ingest import ingest

    matcher = build_matcher(rules, tuple(m.line for m in load_metrics()))
    folder = tmp_path_factory.mktemp("bundle")
    with tarfile.open(DATA / "lab" / "1.20.3" / f"{RECORDING}.tar.gz") as archive:
        for member in archive.getmembers():
            if member.name.endswith(".log") and "/log/" in member.name:
                (folder / Path(member.name).name).write_bytes(archive.extractfile(member).read())  # type: ignore[union-attr]
    manifest = ingest([folder], tmp_path_factory.mktemp("work"))
    lines = {s.id: Path(s.staged).read_text("utf-8").split("\n") for s in manifest.text_sources}
    rows = []
    for part in [p for task in plan(manifest.text_sources, SPLIT_BYTES) for p in task]:
        for out in scan_part(part, matcher.prefilter, matcher):
            rows += [] if isinstance(out, PartStats) else out.to_pylist()
    return rows, lines


def test_a_warn_or_error_event_s_head_is_its_first_line_in_the_file(scanned):
    from flinkdoctor.scan.headers import WARN_WORDS
    from flinkdoctor.scan.scanner import HEAD_MAX

    rows, lines = scanned
    warned = [row for row in rows if row["level"] in WARN_WORDS]
    assert any(row["last_rel"] > row["first_rel"] for row in warned), "a multi-line WARN+ event (a stack trace)"
    for row in warned:
        assert row["block"] == 0  # one range per file: its relative line numbers are the file's
        assert row["head"] == lines[row["sid"]][row["first_rel"] - 1][:HEAD_MAX]


def test_other_events_have_no_head(scanned):
    from flinkdoctor.scan.headers import WARN_WORDS

    rows, _ = scanned
    others = [row for row in rows if row["level"] not in WARN_WORDS]
    assert others, "the recording keeps INFO events a rule matches"
    assert all(row["head"] is None for row in others)
