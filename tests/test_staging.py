"""Staging hostile text input: cut gzip streams, UTF-16/32 logs, over-long lines, many small files.

Every input is built from a real fault-lab bundle (a Flink 2.1 TaskManager dying of a heap OOM); what may not
happen is losing lines silently, missing the OOM, or Spark paying per file what it should pay per byte.
"""

from __future__ import annotations

import gzip
import re
import tarfile
import zlib
from pathlib import Path

import pytest

from conftest import DATA, line_at
from flinkdoctor.scan.events import plan
from flinkdoctor.sources.ingest import ingest
from flinkdoctor.sources.staging import MAX_LINE_BYTES, detect_encoding, find_long_line

LAB = DATA / "lab" / "2.1.1"
HEADER = re.compile(rb"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} ")


def wc_l(data: bytes) -> int:
    """Lines as flinkdoctor counts them: what ends in \\n, and a last line without one."""
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


@pytest.fixture(scope="module")
def lab_logs(tmp_path_factory) -> dict[str, bytes]:
    """The heap-oom-exit bundle's Flink logs, by role."""
    target = tmp_path_factory.mktemp("heap-oom-exit")
    with tarfile.open(LAB / "heap-oom-exit.tar.gz") as archive:
        archive.extractall(target, filter="data")
    logs = {}
    for path in target.rglob("log/*.log"):
        role = (
            "taskexecutor"
            if "taskexecutor" in path.name
            else "standalonesession"
            if "standalone" in path.name
            else "client"
        )
        logs[role] = path.read_bytes()
    assert b"java.lang.OutOfMemoryError: Java heap space" in logs["taskexecutor"]
    return logs


def oom_root(report) -> dict:
    return next(r for r in report["root_causes"] if r["rule"] == "jvm-heap-oom")


def assert_evidence_lines(report, rule: str, path: Path):
    evidence = [e for f in report["findings"] if f["rule"] == rule for e in f["evidence"]]
    assert evidence
    for item in evidence:
        assert line_at(path, item["line"]).startswith(item["text"].rstrip()), item


def test_truncated_gzip_keeps_what_precedes_the_cut(diagnose_bundle, lab_logs, tmp_path):
    data = lab_logs["taskexecutor"] + lab_logs["standalonesession"] + lab_logs["client"]
    packed = gzip.compress(data)
    cut = packed[: len(packed) * 6 // 10]
    readable = zlib.decompressobj(zlib.MAX_WBITS | 16).decompress(cut)
    assert b"java.lang.OutOfMemoryError: Java heap space" in readable and len(readable) < len(data)
    path = tmp_path / "flink-root-taskexecutor-0-vm.log.gz"
    path.write_bytes(cut)
    report = diagnose_bundle(path)
    assert report["input"]["lines"] == wc_l(readable)
    assert report["input"]["lines"] == report["input"]["lines_in_events"] + report["input"]["lines_unparsed"]
    assert oom_root(report)["category"] == "jvm-heap-oom"
    (skip,) = [s for s in report["skipped"] if s["path"] == path.name]
    assert "truncated" in skip["reason"] and f"{len(readable):,} bytes" in skip["reason"]
    (source,) = report["input"]["sources"]
    assert source["truncated"] == skip["reason"]


@pytest.mark.parametrize(
    "encoding,bom", [("utf-16-le", True), ("utf-16-le", False), ("utf-16-be", True), ("utf-32-le", False)]
)
def test_utf16_and_utf32_logs_are_decoded(diagnose_bundle, lab_logs, tmp_path, encoding, bom):
    text = lab_logs["taskexecutor"].decode("utf-8")
    path = tmp_path / "flink-root-taskexecutor-0-vm.log"
    path.write_bytes((("\ufeff" if bom else "") + text).encode(encoding))
    report = diagnose_bundle(path)
    assert report["input"]["lines"] == wc_l(lab_logs["taskexecutor"])
    (source,) = report["input"]["sources"]
    assert source["kind"] == "flink-taskmanager" and source["encoding"] == encoding
    assert source["unparsed"] == 0 and not report["input"]["unreadable"]
    assert (
        oom_root(report)["evidence"][0]["line"]
        == lab_logs["taskexecutor"].split(b"\n").index(b"java.lang.OutOfMemoryError: Java heap space") + 1
    )


def test_over_long_line_is_split_and_counted(diagnose_bundle, lab_logs, tmp_path):
    """3 MiB without a newline (the standalonesession log's lines run together), then the real log: the long
    line is split into rows Spark can hold, counted as one line, and the lines after it keep their numbers."""
    flat = lab_logs["standalonesession"].replace(b"\n", b" ")
    long_line = (flat * (3 * MAX_LINE_BYTES // len(flat) + 1))[: 3 * MAX_LINE_BYTES]
    data = long_line + b"\n" + lab_logs["taskexecutor"]
    path = tmp_path / "flink-root-taskexecutor-0-vm.log"
    path.write_bytes(data)
    report = diagnose_bundle(path)
    assert report["input"]["lines"] == wc_l(data)
    assert report["input"]["lines"] == report["input"]["lines_in_events"] + report["input"]["lines_unparsed"]
    (source,) = report["input"]["sources"]
    assert source["split_lines"] == 1
    assert oom_root(report)["category"] == "jvm-heap-oom"
    assert_evidence_lines(report, "jvm-heap-oom", path)


def test_find_long_line_and_detect_encoding(lab_logs, tmp_path):
    """Pure functions, no Spark: the cap is inclusive, and a log in UTF-8 or a binary is left alone."""
    path = tmp_path / "log"
    for length, found in ((MAX_LINE_BYTES, False), (MAX_LINE_BYTES + 1, True)):
        path.write_bytes(lab_logs["client"] + b"x" * length + b"\n" + lab_logs["client"])
        assert (find_long_line(path) == len(lab_logs["client"])) is found
    assert detect_encoding(lab_logs["client"]) is None
    assert detect_encoding(bytes(range(256)) * 16) is None
    assert detect_encoding(lab_logs["client"].decode().encode("utf-16-le")) == "utf-16-le"


def split_into_events(lines: list[bytes], files: int) -> list[list[bytes]]:
    """`files` groups of whole events (a header line and its continuation lines) in file order."""
    groups: list[list[bytes]] = []
    for line in lines:
        if HEADER.match(line) or not groups:
            if len(groups) == files:
                break
            groups.append([])
        groups[-1].append(line)
    assert len(groups) == files
    return groups


def test_many_small_files_are_read_by_few_tasks(diagnose_bundle, tmp_path):
    """5,000 files of one event each against the same lines in one file: the same lines, events and findings,
    and the same work: one scan task reads them all (many files used to cost a Spark listing job and a task per
    32 files). Their cost in seconds is a benchmark's business (bench/bench.py, the files axis), not a test's."""
    lines = []
    for bundle in sorted(LAB.glob("*.tar.gz"))[:20]:
        with tarfile.open(bundle) as archive:
            for member in archive.getmembers():
                if member.name.endswith(".log") and "taskexecutor" in member.name:
                    lines += archive.extractfile(member).read().splitlines()
    groups = split_into_events(lines, 5000)
    one, small = tmp_path / "one", tmp_path / "small"
    one.mkdir()
    small.mkdir()
    (one / "flink-root-taskexecutor-0-vm.log").write_bytes(b"".join(b"\n".join(g) + b"\n" for g in groups))
    for i, group in enumerate(groups):
        (small / f"flink-root-taskexecutor-{i:05d}-vm.log").write_bytes(b"\n".join(group) + b"\n")
    single = diagnose_bundle(one)
    many = diagnose_bundle(small)
    for key in ("lines", "lines_in_events", "lines_unparsed", "events"):
        assert many["input"][key] == single["input"][key], key
    assert many["input"]["files"] == 5000
    assert {(f["rule"], f["count"]) for f in many["findings"]} == {(f["rule"], f["count"]) for f in single["findings"]}
    for finding in many["findings"]:
        for item in finding["evidence"]:
            assert line_at(small / item["file"], item["line"]).startswith(item["text"].rstrip()), item
    manifest = ingest([small], tmp_path / "work")
    assert len(manifest.text_sources) == 5000 and len(plan(manifest.text_sources)) == 1
