"""The measures a scan keeps (scan/measure.py: lines found by RE2 or Python's `re`, captures and each event's job
built over Arrow arrays) are what the plain formula gives: per line of each kept event, per metric in order, the
line regex's match by Python's `re`, the line without trailing blanks, the groups that took part, and the job
JOB_IN_EVENT finds first in the event. Real logs: the lab's gc-pause recording (Flink 1.20.3, tests/data/lab),
its JobManager measuring ~180 checkpoint lines, as recorded, with CRLF line ends, and with a real non-ASCII line
(incidents/d23's TaskManager, `拒绝连接`) in GBK and in UTF-8 after its lines, making events of several lines."""

from __future__ import annotations

import re

import pytest

from conftest import DATA, lab_logs_of

pytestmark = pytest.mark.unit

CHINESE = (DATA / "incidents" / "d23" / "bundle" / "taskmanager.log").read_bytes().splitlines()[0]


@pytest.fixture(scope="module")
def matcher(rules):
    from flinkdoctor.analytics import load_metrics
    from flinkdoctor.scan.matcher import build_matcher

    return build_matcher(rules, tuple(m.line for m in load_metrics()))


def _variant(data: bytes, kind: str) -> bytes:
    if kind == "crlf":
        return data.replace(b"\n", b"\r\n")
    if kind == "non-ascii":
        lines = data.split(b"\n")
        extra = (CHINESE.decode("utf-8").encode("gbk"), CHINESE)
        return b"\n".join(line + b"\n" + extra[i % 2] if i % 3 == 0 else line for i, line in enumerate(lines))
    return data


def _scanned(tmp_path, matcher, kind: str) -> list[dict]:
    from flinkdoctor.scan.events import SPLIT_BYTES, plan
    from flinkdoctor.scan.scanner import PartStats, scan_part
    from flinkdoctor.sources.ingest import ingest

    folder = tmp_path / kind
    folder.mkdir()
    for name, data in lab_logs_of("gc-pause").items():
        (folder / name).write_bytes(_variant(data, kind))
    manifest = ingest([folder], tmp_path / f"{kind}-in")
    rows = []
    for part in [p for task in plan(manifest.text_sources, SPLIT_BYTES) for p in task]:
        scanned = scan_part(part, matcher.prefilter, matcher)
        rows += [row for out in scanned if not isinstance(out, PartStats) for row in out.to_pylist()]
    return rows


def _formula(text: str) -> list[dict]:
    from flinkdoctor.analytics import load_metrics
    from flinkdoctor.knowledge.regexes import python_regex
    from flinkdoctor.scan.measure import JOB_IN_EVENT

    found = re.compile(JOB_IN_EVENT).search(text)
    job = (found.group(1) or found.group(2)) if found else None
    out = []
    for idx, line in enumerate(text.split("\n")):
        for position, metric in enumerate(load_metrics()):
            hit = python_regex(metric.line).search(line)
            if hit:
                captures = {k: v for k, v in hit.groupdict().items() if v is not None}
                out.append({"metric": position, "idx": idx, "line": line.rstrip(), "captures": captures, "job": job})
    return out


@pytest.mark.parametrize("kind", ["recorded", "crlf", "non-ascii"])
@pytest.mark.parametrize("decided_by", ["python", "re2"])
def test_measures_are_the_plain_formulas(tmp_path, matcher, monkeypatch, kind, decided_by):
    from flinkdoctor.scan import measure

    if decided_by == "re2":
        monkeypatch.setattr(measure, "FEW_LINES", 0)
        monkeypatch.setattr(measure, "MOSTLY_MATCHING", 0)
    rows = _scanned(tmp_path, matcher, kind)
    got = [[{**m, "captures": dict(m["captures"])} for m in row["measures"] or ()] for row in rows]
    want = [_formula(row["text"]) for row in rows]  # (every kept event, measured or not)
    assert got == want
    measured = [m for one in got for m in one]
    assert len(measured) > 100 and len({m["metric"] for m in measured}) > 1 and any(m["job"] for m in measured)
    if kind == "non-ascii":
        assert any("\ufffd" in row["text"] and row["measures"] for row in rows)  # GBK bytes shown as U+FFFD
        assert any("拒绝连接" in row["text"] and row["measures"] for row in rows)
    if kind == "crlf":  # the scan reads CRLF line ends as the recorded ones: the same measures
        assert got == [
            [{**m, "captures": dict(m["captures"])} for m in row["measures"] or ()]
            for row in _scanned(tmp_path, matcher, "recorded")
        ]
