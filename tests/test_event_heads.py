"""The scan's `head` column (scan/scanner.py): a WARN+ event's first line, which the unexplained errors read for
their evidence instead of the whole `text`. Checked against the files themselves: real JobManager and TaskManager
logs of the lab's 1.20.3 recordings (tests/data/lab), whose WARN and ERROR events include multi-line stack traces."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import lab_logs_of

pytestmark = pytest.mark.unit

RECORDING = "checkpoint-timeout"  # its TaskManager logs a declined checkpoint at WARN with its stack trace


def _scan(rules, logs: dict[str, bytes], work: Path) -> tuple[list[dict], dict[int, list[str]]]:
    """The kept events of the logs, scanned as the scan tasks scan them, and each source's lines as the file holds
    them."""
    from flinkdoctor.analytics import load_metrics
    from flinkdoctor.scan.events import SPLIT_BYTES, plan
    from flinkdoctor.scan.matcher import build_matcher
    from flinkdoctor.scan.scanner import PartStats, scan_part
    from flinkdoctor.sources.ingest import ingest

    matcher = build_matcher(rules, tuple(m.line for m in load_metrics()))
    folder = work / "bundle"
    folder.mkdir()
    for name, data in logs.items():
        (folder / name).write_bytes(data)
    manifest = ingest([folder], work / "work")
    lines = {s.id: Path(s.staged).read_text("utf-8").split("\n") for s in manifest.text_sources}
    rows = []
    for part in [p for task in plan(manifest.text_sources, SPLIT_BYTES) for p in task]:
        for out in scan_part(part, matcher.prefilter, matcher):
            rows += [] if isinstance(out, PartStats) else out.to_pylist()
    return rows, lines


@pytest.fixture(scope="module")
def scanned(rules, tmp_path_factory) -> tuple[list[dict], dict[int, list[str]]]:
    """The kept events of the recording's logs, and each source's lines as the file holds them."""
    return _scan(rules, lab_logs_of(RECORDING), tmp_path_factory.mktemp("scan"))


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


def test_a_head_is_its_first_line_cut_at_head_max_characters(rules, tmp_path):
    """RocksDB's unusable local directory is logged at ERROR with the directory as configured
    (`state.backend.rocksdb.localdir`): the recording's logs, with the directory they name replaced by a deeper one
    of non-ASCII names (what Flink prints when it is configured so), hold an ERROR line of more than HEAD_MAX
    characters (and more bytes still). Its head is the line's first HEAD_MAX characters: cut by characters, not
    bytes, never past the first line."""
    from flinkdoctor.scan.scanner import HEAD_MAX

    logs = lab_logs_of("rocksdb-local-dir-unusable")
    named = re.compile(rb"Local DB files directory '([^']+)' does not exist")
    directory = next(m.group(1) for data in logs.values() if (m := named.search(data)))
    deeper = directory + "".join(f"/état-{n:03d}" for n in range(90)).encode("utf-8")
    rows, lines = _scan(rules, {name: data.replace(directory, deeper) for name, data in logs.items()}, tmp_path)
    long = [row for row in rows if row["level"] == "ERROR" and deeper.decode("utf-8") in row["text"]]
    assert long, "the recording logs the unusable directory at ERROR"
    for row in long:
        line = lines[row["sid"]][row["first_rel"] - 1]
        assert len(line) > HEAD_MAX and line.startswith(row["head"])
        assert len(row["head"]) == HEAD_MAX < len(row["head"].encode("utf-8"))
