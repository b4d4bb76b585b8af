"""A small part's fixed costs in the scan (scan/scanner.py, scan/measure.py): a bundle of 100,000 rolled files is
100,000 small parts, so what each part pays whatever its size decides the files axis. Two such costs are cut, and
neither may change what is kept: the signatures without candidates are left out of the part's `found` (each was
a pass in `_signature_lists` and the measures), and a metric's regex over few candidate lines is decided by
Python's `re` rather than by Arrow's RE2 kernel, which compiles it on every call. Real JobManager and TaskManager
logs of the lab's 1.20.3 recordings (tests/data/lab), which measure checkpoints."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import lab_logs_of

pytestmark = pytest.mark.unit

RECORDINGS = ("gc-pause", "checkpoint-timeout")  # the JobManager logs measure ~180 and ~100 checkpoint lines


@pytest.fixture(scope="module")
def matcher(rules):
    from flinkdoctor.analytics import load_metrics
    from flinkdoctor.scan.matcher import build_matcher

    return build_matcher(rules, tuple(m.line for m in load_metrics()))


def _scanned(tmp_path: Path, scenario: str, matcher) -> list[dict]:
    from flinkdoctor.scan.events import SPLIT_BYTES, plan
    from flinkdoctor.scan.scanner import PartStats, scan_part
    from flinkdoctor.sources.ingest import ingest

    folder = tmp_path / scenario
    folder.mkdir(parents=True)
    for name, data in lab_logs_of(scenario).items():
        (folder / name).write_bytes(data)
    manifest = ingest([folder], tmp_path / f"{scenario}-in")
    rows = []
    for part in [p for task in plan(manifest.text_sources, SPLIT_BYTES) for p in task]:
        for out in scan_part(part, matcher.prefilter, matcher):
            rows += [vars(out)] if isinstance(out, PartStats) else out.to_pylist()
    return rows


@pytest.mark.parametrize("scenario", RECORDINGS)
def test_python_and_re2_decide_the_same_measured_lines(tmp_path, matcher, monkeypatch, scenario):
    from flinkdoctor.scan import measure

    monkeypatch.setattr(measure, "FEW_LINES", 0)  # RE2 decides every metric's lines
    monkeypatch.setattr(measure, "MOSTLY_MATCHING", 0)
    by_re2 = _scanned(tmp_path / "re2", scenario, matcher)
    monkeypatch.setattr(measure, "FEW_LINES", 10**9)  # Python's `re` decides them
    by_python = _scanned(tmp_path / "python", scenario, matcher)
    measured = [m for row in by_re2 if "measures" in row for m in row["measures"]]
    kinds = {m["metric"] for m in measured}
    assert len(measured) > 50 and len(kinds) > 1  # checkpoints triggered and completed, at least
    assert by_python == by_re2


def test_a_part_passes_on_only_the_signatures_it_has_candidates_of(tmp_path, matcher, monkeypatch):
    from flinkdoctor.scan import scanner

    seen: list[dict] = []
    lists = scanner._signature_lists

    def recording(found, rows, n):
        seen.append(found)
        return lists(found, rows, n)

    monkeypatch.setattr(scanner, "_signature_lists", recording)
    rows = _scanned(tmp_path, "gc-pause", matcher)
    assert seen and any(row.get("sigs") for row in rows)
    assert all(len(events) for found in seen for events in found.values())
    assert max(len(found) for found in seen) < len(matcher.prefilter.signatures) // 2


def test_lines_most_of_which_match_are_decided_by_python(tmp_path, matcher, monkeypatch):
    """A JobManager log's checkpoint lines are events of one line each, nearly all of which a metric's regex
    matches: Python's `re` decides them (RE2 first would only add a pass), with the same measures as RE2's."""
    from flinkdoctor.scan import measure

    decided_by_re2: list[str] = []
    matching = measure.matching

    def counted(values, regex):
        decided_by_re2.append(regex)
        return matching(values, regex)

    monkeypatch.setattr(measure, "matching", counted)
    monkeypatch.setattr(measure, "FEW_LINES", 16)  # the recording's ~180 lines are many
    by_python = _scanned(tmp_path / "python", "gc-pause", matcher)
    one_line = ("Triggering checkpoint", "Completed checkpoint")  # the metrics of events of one line
    assert not [regex for regex in decided_by_re2 if regex.startswith(one_line)]
    monkeypatch.setattr(measure, "MOSTLY_MATCHING", 0)
    by_re2 = _scanned(tmp_path / "re2", "gc-pause", matcher)
    assert decided_by_re2 and by_python == by_re2
    assert sum(len(row.get("measures") or ()) for row in by_python) > 100
