"""The scan keeps the same events by every path it can take (scan/scanner.py, scan/prefilter.py): the masks run
only on the rows the Hyperscan pass names for their trigger, and a machine without Hyperscan scans by RE2 over
Arrow instead. Both are checked on a real lab JobManager log (1.20.3, checkpoints measured) with the hostile
corpus's secrets planted among its lines, far from the part's first rows, and on its INFO lines alone (a healthy
stretch of a production log: no event starts with a level word of the WARN+ test)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from conftest import lab_logs_of
from hostile_input import CONFIG_LINE, HEADER_SECRET, SECRET_VALUES, SECRETS, URL_SECRETS

pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")
def matcher(rules):
    from flinkdoctor.analytics import load_metrics
    from flinkdoctor.scan.matcher import build_matcher

    return build_matcher(rules, tuple(m.line for m in load_metrics()))


def _jobmanager_lines() -> list[str]:
    return lab_logs_of("gc-pause")["flink-root-standalonesession-0-vm.log"].decode().splitlines(keepends=True)


def _with_secrets() -> bytes:
    """The log with each planted secret line inserted after the first two thirds of it: the configuration's as
    Flink prints them, the others behind a real WARN line's header (a WARN+ event is always kept)."""
    lines = _jobmanager_lines()
    header = next(line for line in lines if line[24:29] == "WARN ").split(" - ")[0] + " - "
    planted = [CONFIG_LINE.format(key=k, value=v) for k, v in SECRETS.values()]
    planted += [header + "connecting to " + url for url in URL_SECRETS]
    planted += [header + "request header " + HEADER_SECRET]
    at = 2 * len(lines) // 3
    return "".join(lines[:at] + [line + "\n" for line in planted] + lines[at:]).encode()


def _info_only() -> bytes:
    return "".join(line for line in _jobmanager_lines() if line[24:29] == "INFO ").encode()


def _scanned(tmp_path: Path, data: bytes, prefilter, matcher) -> list[dict]:
    from flinkdoctor.scan.events import SPLIT_BYTES, plan
    from flinkdoctor.scan.scanner import PartStats, scan_part
    from flinkdoctor.sources.ingest import ingest

    folder = tmp_path / "in"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "jobmanager.log").write_bytes(data)
    manifest = ingest([folder], tmp_path / "ingested")
    rows = []
    for part in [p for task in plan(manifest.text_sources, SPLIT_BYTES) for p in task]:
        for out in scan_part(part, prefilter, matcher):
            rows += [vars(out)] if isinstance(out, PartStats) else out.to_pylist()
    return rows


def test_the_rows_the_pass_names_are_masked_as_if_every_row_were_tried(tmp_path, matcher, monkeypatch):
    """The masks' trigger by RE2 on the named rows only gives the rows of RE2 on every kept row: each planted
    secret masked in its own row, every other row as it was."""
    from flinkdoctor.scan import scanner

    data = _with_secrets()
    named = _scanned(tmp_path / "named", data, matcher.prefilter, matcher)
    monkeypatch.setattr(scanner, "_maskable", lambda prefilter, hits: None)  # RE2 tries every kept text
    tried = _scanned(tmp_path / "tried", data, matcher.prefilter, matcher)
    texts = [row["text"] for row in named if "text" in row]
    assert named == tried
    assert len(texts) > 100 and sum("****" in text for text in texts) >= 5
    assert not [value for value in SECRET_VALUES for text in texts if value in text]
    masked_rows = [i for i, text in enumerate(texts) if "****" in text]
    assert min(masked_rows) > 10  # (not the part's first rows: a row's place in the subset is not its place)


@pytest.mark.parametrize("log", [_with_secrets, _info_only], ids=["secrets", "info-only"])
def test_a_machine_without_hyperscan_keeps_the_same_events(tmp_path, matcher, monkeypatch, log):
    """Without Hyperscan the pass runs by RE2 over Arrow (prefilter._scan_re2): the same kept events, signatures,
    measures and masked texts, also where no event's first line holds a level word."""
    import dataclasses

    data = log()
    by_hyperscan = _scanned(tmp_path / "hyperscan", data, matcher.prefilter, matcher)
    monkeypatch.setitem(sys.modules, "hyperscan", None)  # `import hyperscan` fails, as where it is not installed
    without = dataclasses.replace(matcher.prefilter, compiled=None)
    by_re2 = _scanned(tmp_path / "re2", data, without, matcher)
    assert by_re2 == by_hyperscan
    assert sum(len(row.get("measures") or ()) for row in by_re2) > 50


def test_small_batches_keep_the_rows_of_one_batch(tmp_path, matcher, monkeypatch):
    """A part's kept events cut into batches of a few events each (every batch reads only its own candidates:
    scanner._within) give the rows, signatures, matches and measures of one batch holding them all."""
    from flinkdoctor.scan import scanner

    candidates: list[int] = []  # per batch, the candidates it was given (all signatures')
    batch = scanner._Events._batch

    def counted(self, part, begin, end, found, *rest):
        candidates.append(sum(len(events) for events in found.values()))
        return batch(self, part, begin, end, found, *rest)

    monkeypatch.setattr(scanner._Events, "_batch", counted)
    data = _with_secrets()
    whole = _scanned(tmp_path / "whole", data, matcher.prefilter, matcher)
    given, candidates[:] = sum(candidates), []
    monkeypatch.setattr(scanner, "OUT_EVENTS", 7)
    cut = _scanned(tmp_path / "cut", data, matcher.prefilter, matcher)
    assert cut == whole
    assert len(whole) > 7 * 10 and sum(len(row.get("measures") or ()) for row in whole) > 50
    assert sum(len(row.get("matches") or ()) for row in whole) > 5
    assert len(candidates) > 10 and sum(candidates) == given > 0  # (each candidate given to one batch, not to all)
