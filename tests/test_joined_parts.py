"""A task's small files scanned joined (scan/scanner.py `scan_parts`): a bundle of 100,000 rolled files is 100,000
small parts, and each paid the scan's fixed costs (Arrow's RE2 kernels compiled per call for the header fields,
the masks and the job ids, the file's opening, the part's arrays); joined, a task pays them once per layout.
Nothing kept may change: every event keeps its own file's source, bundle, line numbers, header fields, matches,
measures, catalogue entries and repeated-warning group, and every file its own counts, exactly as when each file
is scanned alone (`scan_part`).

Real logs of several layouts and sources, each cut into rolled files of uneven length at line boundaries (so that
some files start inside a stack trace, and the last is cut before its final newline, as a log being written is):
the lab's recordings (tests/data/lab: Flink 1.20.3 and 2.1.1 JobManager, TaskManager, client logs and their .out
files) and Loghub's (tests/data/loghub: Hadoop's with CRLF line ends, Spark, ZooKeeper, HDFS, Linux). One
TaskManager log gets a GBK message after each IOException line (not UTF-8: U+FFFD in its text), another a secret
URL (masking changes those events), as tests/test_catalogue_lines.py does."""

from __future__ import annotations

import itertools
import re
import tarfile
from pathlib import Path

import pytest
from test_catalogue_scan import small_catalogue

from conftest import DATA
from hostile_input import URL_SECRETS

pytestmark = pytest.mark.unit

RECORDINGS = (("1.20.3", "network-buffers"), ("2.1.1", "checkpoint-timeout"), ("1.20.3", "gc-pause"))
LOGHUB = ("Hadoop_2k.log", "Spark_2k.log", "Zookeeper_2k.log", "HDFS_2k.log", "Linux_2k.log")
CUTS = (1, 7, 40, 3, 150, 12, 400, 2, 75)  # lines per rolled file, in turn
GBK = "磁盘空间不足".encode("gbk")  # an OS message in a Chinese locale's encoding


@pytest.fixture(scope="module")
def matcher(rules):
    from flinkdoctor.analytics import load_metrics
    from flinkdoctor.scan.matcher import build_matcher

    return build_matcher(rules, tuple(m.line for m in load_metrics()), catalogue=small_catalogue())


def _logs() -> dict[str, bytes]:
    logs: dict[str, bytes] = {}
    for version, scenario in RECORDINGS:
        with tarfile.open(DATA / "lab" / version / f"{scenario}.tar.gz") as archive:
            for member in archive.getmembers():
                if "/log/" in member.name and member.isfile():
                    logs[f"{scenario}-{version}/{Path(member.name).name}"] = archive.extractfile(member).read()  # type: ignore[union-attr]
    for name in LOGHUB:
        logs[f"loghub/{name}"] = (DATA / "loghub" / name).read_bytes()
    io_line = b"java.io.IOException"
    tm = "network-buffers-1.20.3/flink-root-taskexecutor-0-vm.log"
    logs[tm] = b"\n".join(line + b" " + GBK if io_line in line else line for line in logs[tm].split(b"\n"))
    tm = "gc-pause-1.20.3/flink-root-taskexecutor-0-vm.log"
    secret = URL_SECRETS[0].encode()
    logs[tm] = b"\n".join(line + b" " + secret if b"Exception" in line else line for line in logs[tm].split(b"\n"))
    return logs


def _rolled(folder: Path) -> list[Path]:
    """Each log cut into rolled files (`name.1`, `name.2`...) of CUTS lines in turn; the last one cut before its
    final newline. One folder per log, and the folders in turn, so that a task holds files of every layout."""
    cuts = itertools.cycle(CUTS)
    folders = []
    for name, data in _logs().items():
        lines = [line + b"\n" for line in data.split(b"\n")]
        lines[-1] = lines[-1][:-1]  # after the last newline (b"" when the log ends with one)
        pieces, at = [], 0
        while at < len(lines):
            n = next(cuts)
            pieces.append(b"".join(lines[at : at + n]))
            at += n
        pieces[-1] = pieces[-1].rstrip(b"\r\n")  # an empty log stays one empty file
        target = folder / name.replace("/", "--")
        target.mkdir(parents=True)
        for k, piece in enumerate(pieces, start=1):
            (target / f"{Path(name).name}.{k}").write_bytes(piece)
        folders.append(target)
    return folders


def _rows(outs) -> tuple[list[dict], list[dict]]:
    from flinkdoctor.scan.scanner import PartStats

    rows, stats = [], []
    for out in outs:
        if isinstance(out, PartStats):
            stats.append(vars(out))
        else:
            rows += out.to_pylist()
    key = ("sid", "block", "first_rel", "last_rel")
    rows.sort(key=lambda r: tuple(r[k] for k in key))
    stats.sort(key=lambda s: (s["sid"], s["block"]))
    return rows, stats


@pytest.fixture(scope="module", params=["as rolled", "long lines split"])
def task(request, tmp_path_factory):
    """The one task of the rolled files; "long lines split": staged with lines over 300 bytes split into pieces
    (staging's MAX_LINE_BYTES is 1 MiB; a few real lines are that long), so files hold rows that continue a line."""
    from functools import partial

    from flinkdoctor.scan.events import SPLIT_BYTES, plan
    from flinkdoctor.sources import staging
    from flinkdoctor.sources.ingest import ingest

    work = tmp_path_factory.mktemp("joined")
    with pytest.MonkeyPatch.context() as patch:
        if request.param == "long lines split":
            patch.setattr(staging, "MAX_LINE_BYTES", 300)
            patch.setattr(staging, "find_long_line", partial(staging.find_long_line, cap=300))
        manifest = ingest(_rolled(work / "bundle"), work / "in")
    assert any(s.split_lines for s in manifest.text_sources) == (request.param == "long lines split")
    tasks = plan(manifest.text_sources, SPLIT_BYTES, {s.id: s.id % 3 for s in manifest.text_sources})
    assert len(tasks) == 1  # every file small: one task
    return tasks[0]


def test_the_task_joins_files_of_each_layout(task):
    from flinkdoctor.scan.scanner import _joinable

    groups = _joinable(task)
    joined = [group for group in groups if len(group) > 1]
    assert len(task) > 200
    assert len({part.layout for group in joined for part in group}) >= 4  # Flink's, Hadoop's, ZooKeeper's...
    assert sum(len(group) for group in joined) > 0.9 * len(task)
    for group in joined:
        assert len({(part.layout, part.kind) for part in group}) == 1
        assert all(part.start == 0 and part.end == part.size for part in group)


def test_joined_files_keep_what_each_file_alone_keeps(task, matcher):
    from flinkdoctor.scan.scanner import _joinable, scan_part, scan_parts

    alone_rows, alone_stats = _rows(out for part in task for out in scan_part(part, matcher.prefilter, matcher))
    rows, stats = _rows(out for group in _joinable(task) for out in scan_parts(group, matcher.prefilter, matcher))
    # what the files hold, so that the comparison can fail on each column
    assert len({row["sid"] for row in alone_rows}) > 50 and {row["bundle"] for row in alone_rows} == {0, 1, 2}
    assert any(row["orphan"] for row in alone_rows)  # a file that starts inside an event
    assert any(row["matches"] for row in alone_rows) and any(row["measures"] for row in alone_rows)
    assert any(row["entries"] for row in alone_rows) and any(row["repeats"] > 1 for row in alone_rows)
    if not any(part.pieces for part in task):  # (split, the GBK bytes are in pieces no event keeps)
        assert any("\ufffd" in row["text"] for row in alone_rows)  # the GBK bytes
    assert any("\r" in row["text"] for row in alone_rows) is False  # CRLF as Spark's reader gives it
    assert sum(s["unparsed"] for s in alone_stats) > 0
    assert stats == alone_stats
    for a, b in zip(rows, alone_rows, strict=True):
        assert a == b, (a["sid"], a["first_rel"])


def test_the_task_writes_what_each_file_alone_keeps(task, matcher, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from flinkdoctor.scan.scanner import part_rows, run, scan_part

    alone_rows, alone_stats = _rows(out for part in task for out in scan_part(part, matcher.prefilter, matcher))
    ids = pa.record_batch([pa.array([0], pa.int64())], names=["id"])
    out = list(
        run(iter([ids]), plan=part_rows([task]), prefilter=matcher.prefilter, out_dir=str(tmp_path), matcher=matcher)
    )
    written = pq.read_table(tmp_path / "part-00000.parquet")
    assert written.column("time").null_count == written.num_rows  # (no measured rows, no zones: every time left)
    rows, _ = _rows(written.drop_columns(["time"]).to_batches())
    stats = sorted(out[0].drop_columns(["cpu_us"]).to_pylist(), key=lambda s: (s["sid"], s["block"]))
    assert stats == [{k: s[k] for k in stats[0]} for s in alone_stats]
    assert rows == alone_rows


def test_files_cut_inside_a_character_keep_what_each_alone_keeps(tmp_path, matcher):
    """Rolled by bytes (`split -b`), a file may end inside a UTF-8 character that the next file's first bytes
    complete: joined, the bytes are valid UTF-8, alone neither file is. Each keeps what it keeps alone (U+FFFD
    where its half character is), and the joined scan never hands Arrow or Python invalid UTF-8."""
    from flinkdoctor.scan.events import SPLIT_BYTES, plan
    from flinkdoctor.scan.scanner import _joinable, scan_part, scan_parts
    from flinkdoctor.sources.ingest import ingest

    tm = "network-buffers-1.20.3/flink-root-taskexecutor-0-vm.log"
    data = _logs()[tm].replace(b" " + GBK, b" " + GBK.decode("gbk").encode())  # the message in UTF-8
    cuts, at = [], 0
    for _ in range(6):  # each cut one byte into a character: the next file starts with its continuation bytes
        at = data.index(GBK.decode("gbk").encode(), at + 1) + 1
        cuts.append(at)
    folder = tmp_path / "bundle"
    folder.mkdir()
    for k, (start, end) in enumerate(zip([0, *cuts], [*cuts, len(data)], strict=True), start=1):
        (folder / f"taskmanager.log.{k}").write_bytes(data[start:end])
    manifest = ingest([folder], tmp_path / "in")
    (task,) = plan(manifest.text_sources, SPLIT_BYTES, {s.id: 0 for s in manifest.text_sources})
    assert [len(group) for group in _joinable(task)] == [7]

    alone_rows, alone_stats = _rows(out for part in task for out in scan_part(part, matcher.prefilter, matcher))
    rows, stats = _rows(scan_parts(task, matcher.prefilter, matcher))
    assert sum("\ufffd" in row["text"] for row in alone_rows) >= 6  # each half character, alone
    assert stats == alone_stats
    assert rows == alone_rows


def _two_rolled_files(tmp_path):
    """(the bundle's folder, the lab log, where its second half starts, the one task that joins both halves):
    a JobManager log rolled into two files, as ingest and the plan give them to a task."""
    from flinkdoctor.scan.events import SPLIT_BYTES, plan
    from flinkdoctor.sources.ingest import ingest

    folder = tmp_path / "bundle"
    data = _logs()["gc-pause-1.20.3/flink-root-standalonesession-0-vm.log"]
    folder.mkdir()
    half = data.index(b"\n", len(data) // 2) + 1
    (folder / "jobmanager.log.1").write_bytes(data[:half])
    (folder / "jobmanager.log.2").write_bytes(data[half:])
    manifest = ingest([folder], tmp_path / "in")
    (task,) = plan(manifest.text_sources, SPLIT_BYTES, {s.id: 0 for s in manifest.text_sources})
    return folder, data, half, task


@pytest.mark.parametrize("change", ["removed", "truncated", "made a folder"])
def test_a_joined_file_that_changed_since_ingest_is_named(tmp_path, matcher, change):
    """A rolled file removed, cut shorter or replaced by a folder after ingest (a log rotated under a bundle read
    in place) stops the scan, joined or alone, with InputChanged naming the file the user gave, never a count of
    what was left nor a traceback."""
    from flinkdoctor.errors import InputChanged
    from flinkdoctor.scan.scanner import _joinable, scan_part, scan_parts

    folder, data, half, task = _two_rolled_files(tmp_path)
    assert [len(group) for group in _joinable(task)] == [2]
    changed = folder / "jobmanager.log.2"
    if change == "truncated":
        changed.write_bytes(data[half : half + 100])
    else:
        changed.unlink()
        if change == "made a folder":
            changed.mkdir()
    with pytest.raises(InputChanged, match=re.escape(str(changed))):
        list(scan_parts(task, matcher.prefilter, matcher))
    with pytest.raises(InputChanged, match=re.escape(str(changed))):
        list(scan_part(task[1], matcher.prefilter, matcher))


def test_a_file_named_in_bytes_that_are_not_utf8_is_scanned_as_any_other(tmp_path, matcher):
    """A log whose name is not UTF-8 (a Latin-1 host wrote it) cannot be opened by name through pyarrow or the
    JVM: it is read through a link named by flinkdoctor, and shown with its odd bytes as \\xNN (every output stays
    UTF-8); a name in UTF-8, any script, is read in place. Each keeps what the same bytes keep under a plain name,
    alone and joined."""
    import os

    from flinkdoctor.scan.events import SPLIT_BYTES, plan
    from flinkdoctor.scan.scanner import _joinable, scan_part, scan_parts
    from flinkdoctor.sources.ingest import ingest

    data = _logs()["gc-pause-1.20.3/flink-root-taskexecutor-0-vm.log"]
    names = {
        "plain": b"taskmanager.log",
        "latin-1": "taskmanager-é.log".encode("latin-1"),
        "utf-8": "taskmanager-日志.log".encode(),
    }
    kept = {}
    for case, name in names.items():
        folder = tmp_path / case
        folder.mkdir()
        with open(os.path.join(os.fsencode(folder), name), "wb") as handle:
            handle.write(data)
        manifest = ingest([folder], tmp_path / f"in-{case}")
        (source,) = manifest.text_sources
        assert source.in_place == (case != "latin-1")
        str(source.staged).encode("utf-8")  # a name every file system takes
        assert (
            source.path
            == {"plain": "taskmanager.log", "latin-1": "taskmanager-\\xe9.log", "utf-8": "taskmanager-日志.log"}[case]
        )
        (task,) = plan(manifest.text_sources, SPLIT_BYTES, {source.id: 0})
        alone = _rows(out for part in task for out in scan_part(part, matcher.prefilter, matcher))
        joined = _rows(out for group in _joinable(task) for out in scan_parts(group, matcher.prefilter, matcher))
        assert joined == alone
        kept[case] = alone
    assert kept["latin-1"] == kept["plain"] == kept["utf-8"]
    assert len(kept["plain"][0]) > 10  # the rows compared are many


def test_a_joined_file_read_through_a_file_system_that_gives_fewer_bytes_is_named(tmp_path, matcher, monkeypatch):
    """A file read through pyarrow's file systems (a URI: hdfs://, s3://) that gives fewer bytes than ingest saw,
    though its size said enough when it was opened (cut while it is read), stops the joined scan with
    InputChanged, never a tail of unread bytes scanned as text."""
    import dataclasses

    from flinkdoctor.errors import InputChanged
    from flinkdoctor.scan import scanner

    task = [dataclasses.replace(part, path="file://" + part.path) for part in _two_rolled_files(tmp_path)[3]]
    assert [len(group) for group in scanner._joinable(task)] == [2]
    real = scanner._open

    class Cut:  # its size as ingest saw it, its bytes 100 fewer
        def __init__(self, path: str):
            self.inner, self.whole = real(path), real(path).size()

        def size(self) -> int:
            return int(self.whole)

        def seek(self, offset: int) -> None:
            self.inner.seek(offset)

        def readinto(self, buffer) -> int:
            left = self.whole - 100 - self.inner.tell()
            return int(self.inner.readinto(buffer[: max(left, 0)]))

        def __enter__(self):
            return self

        def __exit__(self, *exc) -> None:
            self.inner.close()

    monkeypatch.setattr(scanner, "_open", Cut)
    with pytest.raises(InputChanged, match="bytes when read"):
        list(scanner.scan_parts(task, matcher.prefilter, matcher))
