"""A `message` regex is tried only where its Hyperscan pattern ended in a line the matcher reads a message on (the
first line, or a later one that is no stack frame: scanner._Events._message_tries). flink-version's third
signature reads the flink-dist jar's name in a message; the same name ends every frame of a Flink trace
(`~[flink-dist-1.20.3.jar:1.20.3]`). Real logs of a lab recording (tests/data/lab/1.20.3/network-buffers.tar.gz,
its TaskManager: 278 such frames and one class path line at start-up)."""

from __future__ import annotations

import tarfile

import pytest

from conftest import DATA

BUNDLE = DATA / "lab" / "1.20.3" / "network-buffers.tar.gz"
TASKMANAGER = "flink-root-taskexecutor-0-vm.log"


def _scanned(tmp_path, matcher, monkeypatch, restricted: bool) -> tuple[list[dict], list[str]]:
    from flinkdoctor.scan import matcher as matching
    from flinkdoctor.scan import scanner
    from flinkdoctor.scan.events import SPLIT_BYTES, plan
    from flinkdoctor.sources.ingest import ingest

    with tarfile.open(BUNDLE) as archive:
        member = next(m for m in archive.getmembers() if m.name.endswith(TASKMANAGER))
        data = archive.extractfile(member).read()
    name = "restricted" if restricted else "every-candidate"
    path = tmp_path / name / "taskmanager.log"
    path.parent.mkdir()
    path.write_bytes(data)
    if not restricted:
        monkeypatch.setattr(scanner._Events, "_message_tries", lambda self, prefilter, hits, found: found)
    tried: list[str] = []
    original = matching._Signature.match

    def counted(self, event):
        if any(key == "message" for key, _ in self.regexes):
            tried.append(event.text)
        return original(self, event)

    monkeypatch.setattr(matching._Signature, "match", counted)
    manifest = ingest([path], tmp_path / name / "in")
    rows = []
    for part in [p for task in plan(manifest.text_sources, SPLIT_BYTES) for p in task]:
        for out in scanner.scan_part(part, matcher.prefilter, matcher):
            if not isinstance(out, scanner.PartStats):
                rows += out.to_pylist()
    monkeypatch.undo()
    return rows, tried


@pytest.fixture(scope="module")
def matcher(rules):
    from flinkdoctor.scan.matcher import build_matcher

    return build_matcher([r for r in rules if r.id == "flink-version"], catalogue=None)


def test_a_message_regex_is_not_tried_on_stack_frames(tmp_path, matcher, monkeypatch):
    every, tried_everywhere = _scanned(tmp_path, matcher, monkeypatch, restricted=False)
    rows, tried = _scanned(tmp_path, matcher, monkeypatch, restricted=True)
    assert rows == every  # the same rows, candidates (`sigs`) and matches
    versions = [m["captures"] for r in rows for m in r["matches"] if m["rule"] == "flink-version"]
    assert [("version", "1.20.3")] in versions  # the class path line at start-up names the jar
    assert len(tried) < len(tried_everywhere)
    assert all("flink-dist-1.20.3.jar" in text.split("\n", 1)[0] for text in tried)  # only first lines hold it
    traces = [text for text in tried_everywhere if "\tat " in text and "jar:1.20.3]" in text]
    assert traces and not any(text in tried for text in traces)
