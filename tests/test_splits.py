"""Byte-range splits: an event that straddles a range boundary comes out once, whole, with exact file line
numbers, and every line is counted once, whatever the split size. Real logs from the recorded lab runs."""

from __future__ import annotations

import os
import tarfile
from pathlib import Path

import pytest

from flinkdoctor.scan.events import block_offsets, file_line
from flinkdoctor.scan.prefilter import build_prefilter
from flinkdoctor.scan.scanner import Part, PartStats, scan_part
from flinkdoctor.sources.ingest import Source
from flinkdoctor.sources.staging import MAX_LINE_BYTES, stage

DATA = Path(__file__).parent / "data"
LAB = DATA / "lab" / "1.20.3" / "heap-oom.tar.gz"


@pytest.fixture(scope="module")
def prefilter(rules):
    return build_prefilter(rules)


def _lab_log(tmp_path: Path, name: str) -> Path:
    with tarfile.open(LAB) as archive:
        member = next(m for m in archive.getmembers() if m.name.endswith(name))
        data = archive.extractfile(member).read()
    path = tmp_path / "source.log"
    path.write_bytes(data)
    return path


def _scan(path: Path, split: int, prefilter, layout="flink-log4j2", pieces=False):
    """Kept events as (file first line, file last line, text, sigs, orphan) and the summed stats. The WARN+ events
    nothing can match are kept per range, the first and last of each logger, message and level standing for all
    (scanner._warned_groups): merged across ranges into (first line of the first, last line of the last, the
    first's text, [], orphan, how many), they are the same whatever the ranges."""
    size = path.stat().st_size
    source = Source(id=7, path="x", kind="flink-jobmanager", layout=layout, staged=str(path))
    rows, stats, blocks = [], {"lines": 0, "unparsed": 0, "events": 0}, {}
    for start in range(0, max(size, 1), split):
        part = Part(7, str(path), start, min(start + split, size), size, layout, pieces, True)
        for out in scan_part(part, prefilter):
            if isinstance(out, PartStats):
                blocks.setdefault(7, []).append((out.block, out.lines))
                for key in stats:
                    stats[key] += getattr(out, key)
            else:
                rows += out.to_pylist()
    offsets = block_offsets(blocks)
    events, warned = [], {}
    for r in rows:
        event = (
            file_line(source, offsets, r["block"], r["first_rel"]),
            file_line(source, offsets, r["block"], r["last_rel"]),
            r["text"],
            r["sigs"],
            r["orphan"],
        )
        if r["sigs"]:
            events.append(event)
            continue
        group = warned.setdefault((r["logger"], r["message"], r["level"]), [event, event, 0])
        group[0] = min(group[0], event)
        group[1] = max(group[1], event)
        group[2] += r["repeats"]
    for first, last, count in warned.values():
        events.append((first[0], last[1], first[2], first[3], first[4], count))
    return sorted(events, key=lambda e: e[:2]), stats


def test_events_straddling_ranges_come_out_once_whole_with_file_line_numbers(tmp_path, prefilter):
    path = _lab_log(tmp_path, "standalonesession-0-vm.log")
    data = path.read_bytes()
    lines = data.decode("utf-8").split("\n")
    whole, whole_stats = _scan(path, len(data), prefilter)
    assert whole_stats["lines"] == data.count(b"\n")
    traces = [e for e in whole if e[1] > e[0]]
    assert traces, "the log holds multi-line events (stack traces)"
    for first, last, text, sigs, *_ in whole:  # the text is the file's lines, numbered as in the file
        assert text.split("\n")[0] == lines[first - 1]
        if sigs:  # (a group of WARN+ events spans from its first to its last)
            assert text.split("\n")[-1] == lines[min(last, first + 999) - 1]
    for split in (97, 1000, 4096, 65536):
        events, stats = _scan(path, split, prefilter)
        assert stats == whole_stats, split
        assert events == whole, split


def test_a_read_ahead_too_short_for_the_last_event_is_doubled_until_it_ends(tmp_path, prefilter, monkeypatch):
    from flinkdoctor.scan import scanner

    path = _lab_log(tmp_path, "standalonesession-0-vm.log")
    whole = _scan(path, path.stat().st_size, prefilter)
    monkeypatch.setattr(scanner, "EXTEND", 16)  # shorter than any line: most parts read past their end again
    for split in (97, 4096):
        assert _scan(path, split, prefilter) == whole, split


def test_a_read_that_comes_in_short_pieces_is_read_whole(tmp_path):
    """scanner._read_at fills its array however few bytes each read gives (a remote file system may give less
    than asked); a read that ends before its range does (the file cut shorter) is InputChanged, not what was
    there."""
    import numpy as np

    from flinkdoctor.errors import InputChanged
    from flinkdoctor.scan.scanner import _read_at

    data = bytes(range(256)) * 4
    part = Part(0, str(tmp_path / "trickle.log"), 0, len(data), len(data), "none", False, True)

    class Trickle:  # a file that gives at most 7 bytes a read
        at = 0

        def seek(self, offset: int) -> None:
            self.at = offset

        def readinto(self, buffer: memoryview) -> int:
            piece = data[self.at : self.at + min(7, len(buffer))]
            buffer[: len(piece)] = piece
            self.at += len(piece)
            return len(piece)

    assert _read_at(Trickle(), part, 300, 5).tobytes() == data[5:305]
    into = np.zeros(20, dtype=np.uint8)
    _read_at(Trickle(), part, 20, 100, into)
    assert into.tobytes() == data[100:120]
    with pytest.raises(InputChanged):
        _read_at(Trickle(), part, 300, len(data) - 10)


@pytest.mark.parametrize("layout", ["flink-log4j2", "none"])
def test_a_file_cut_shorter_while_its_part_is_read_is_named(tmp_path, monkeypatch, layout):
    """A log cut shorter after its part was opened (checked then), inside the event that runs past the part's
    end: InputChanged, not a read that doubles for ever waiting for bytes (a task that never ends), nor an
    IndexError, nor (a layout of no events) the lines cut silently lost."""
    from flinkdoctor.errors import InputChanged
    from flinkdoctor.scan import scanner

    source = _lab_log(tmp_path, "standalonesession-0-vm.log")
    data = source.read_bytes()
    trace = data.index(b"\n\tat ") + 1  # a stack trace's first frame: the part ends inside its event
    cut = data.index(b"\n", data.index(b"\n", trace) + 1) + 1  # two frames on, still inside it
    part = Part(0, str(source), 0, trace, len(data), layout, False, True)
    monkeypatch.setattr(scanner, "EXTEND", 16)  # the first read ends before the cut, the next ones past it
    with scanner._open_unchanged(part) as handle, pytest.raises(InputChanged):
        os.truncate(source, cut if layout != "none" else trace // 2)
        scanner._read(handle, part, 0)


def test_head_of_file_before_the_first_header_is_unparsed_and_a_split_never_starts_an_event(tmp_path, prefilter):
    source = _lab_log(tmp_path, "standalonesession-0-vm.log")
    lines = source.read_bytes().split(b"\n")
    trace = next(i for i, line in enumerate(lines) if line.startswith(b"\tat "))
    start = next(i for i in range(trace, 0, -1) if not lines[i].startswith((b"\t", b"Caused by", b"java.")))
    body = b"\n".join(lines[start + 1 : trace + 30] + lines[:200]) + b"\n"  # continuation lines first
    path = tmp_path / "cut.log"
    path.write_bytes(body)
    whole, whole_stats = _scan(path, len(body), prefilter)
    head = next(i for i, line in enumerate(body.split(b"\n")) if line[:4].isdigit())
    assert whole_stats["unparsed"] == head  # timed layout: lines before the first header are in no event
    for split in (50, 333):
        events, stats = _scan(path, split, prefilter)
        assert stats == whole_stats
        assert events == whole


def test_crlf_and_a_last_line_without_newline_are_counted_like_the_file(tmp_path, prefilter):
    source = _lab_log(tmp_path, "standalonesession-0-vm.log")
    raw = source.read_bytes()
    warn = next(line for line in raw.split(b"\n") if b" WARN " in line)  # a kept event, copied to the end
    data = (raw.rstrip(b"\n") + b"\n" + warn).replace(b"\n", b"\r\n")
    path = tmp_path / "crlf.log"
    path.write_bytes(data)
    whole, stats = _scan(path, len(data), prefilter)
    assert stats["lines"] == data.count(b"\n") + 1  # the last line has no newline but is a line
    assert not any("\r" in event[2] for event in whole)
    last_line = warn.decode("utf-8").rstrip("\r")
    copied = next(e for e in whole if e[2].split("\n")[0] == last_line)  # the group of the copied line
    assert copied[1] == stats["lines"]  # it ends on the file's last line, not a character short
    for split in (101, 5000):
        assert _scan(path, split, prefilter) == (whole, stats)


def test_pieces_of_an_over_long_line_count_no_new_line_across_ranges(tmp_path, prefilter):
    source = _lab_log(tmp_path, "standalonesession-0-vm.log")
    lines = source.read_bytes().split(b"\n")[:50]
    long_line = lines[10] + b" " + b"x" * (MAX_LINE_BYTES * 5 // 2)
    raw = tmp_path / "long.log"
    raw.write_bytes(b"\n".join([*lines[:10], long_line, *lines[11:]]) + b"\n")
    staged = stage(raw, tmp_path / "00001.log", head=raw.read_bytes()[:4096], compressed=False)
    assert staged.split_lines == 1
    whole, stats = _scan(staged.path, staged.size, prefilter, pieces=True)
    assert stats["lines"] == raw.read_bytes().count(b"\n")
    for split in (300_001, MAX_LINE_BYTES, MAX_LINE_BYTES + 1):
        assert _scan(staged.path, split, prefilter, pieces=True) == (whole, stats)


def test_build_events_with_tiny_ranges_matches_one_range(spark, tmp_path, prefilter):
    """The Spark path end to end: the events table and line accounting do not depend on the range size."""
    from flinkdoctor.scan.events import build_events
    from flinkdoctor.sources.ingest import ingest

    path = _lab_log(tmp_path, "standalonesession-0-vm.log")
    manifest = ingest([path], tmp_path / "work")
    results = []
    for split in (1 << 30, 777):
        result = build_events(spark, manifest, tmp_path / f"out-{split}", prefilter, split_bytes=split)
        offsets = block_offsets(result.blocks)
        source = manifest.text_sources[0]
        rows = result.table(spark).collect()
        events = sorted(
            (
                file_line(source, offsets, r.block, r.first_rel),
                file_line(source, offsets, r.block, r.last_rel),
                r.text,
                tuple(r.sigs),
                r.level,
                r.time,
            )
            for r in rows
        )
        results.append((events, result.stats))
    assert results[0] == results[1]
    assert results[0][1][manifest.text_sources[0].id]["lines"] == path.read_bytes().count(b"\n")
    assert any(level == "WARN" for *_, level, _t in results[0][0])  # WARN events are kept too


def _real_files():
    """Real logs of several layouts: the seeds and the Loghub samples."""
    return sorted(p for p in [*(DATA / "seeds").rglob("*"), *(DATA / "loghub").rglob("*")] if p.is_file())


def test_bulk_header_test_agrees_with_the_layout_regex_on_real_lines():
    """headers.py decides what the layout's regex decides (run per line by Python's re), on every real line."""
    import numpy as np

    from flinkdoctor.scan.headers import first_byte_table, flag, header_test
    from flinkdoctor.scan.scanner import _lines_array
    from flinkdoctor.sources.layouts import detect_layout, layout_by_id

    seen = set()
    for path in _real_files():
        data = path.read_bytes()
        if b"\x00" in data[:8192] or not data:
            continue
        text = data.decode("utf-8", "replace")
        layout = detect_layout(text.splitlines()[:2000])
        seen.add(layout)
        expected = [layout_by_id(layout).python_regex.match(line) is not None for line in text.split("\n")]
        array = np.frombuffer(data, dtype=np.uint8)
        starts = np.concatenate([[0], np.flatnonzero(array == 10) + 1])
        starts = starts[starts < len(array)]
        test = header_test(layout)
        maybe = first_byte_table(test)[array[starts]]
        got = np.zeros(len(starts), dtype=bool)
        got[maybe] = flag(test, _lines_array(array, starts).take(np.flatnonzero(maybe)))
        assert list(got) == expected[: len(starts)], path
    assert len(seen) >= 4, seen


@pytest.mark.parametrize(
    "ids",
    [
        list(range(100_000)),  # a bundle of rolled files of one layout: one range
        [0, 1, 2, 3, 7, 9, 10, 11, 12, 40],  # runs and ids alone
        list(range(0, 400, 2)),  # every other source (two layouts taking turns): no run at all
        [i for i in range(1000) if i % 5],  # more runs than are written as ranges
        [5],
    ],
)
def test_the_sources_condition_holds_for_exactly_its_sources(ids):
    """The SQL that picks a layout's sources for parsing their times, evaluated by SQLite (the same BETWEEN, IN
    and OR of integers as Spark SQL) for every id around them."""
    import sqlite3

    from flinkdoctor.scan.events import sid_condition

    condition = sid_condition(ids)
    assert condition is not None
    if ids == list(range(len(ids))):
        assert len(condition) < 64  # one range, whatever the number of sources
    with sqlite3.connect(":memory:") as db:
        db.execute("CREATE TABLE t (sid INTEGER)")
        db.executemany("INSERT INTO t VALUES (?)", [(i,) for i in range(-2, max(ids) + 3)])
        picked = [row[0] for row in db.execute(f"SELECT sid FROM t WHERE {condition} ORDER BY sid")]
    assert picked == sorted(ids)
    assert sid_condition([]) is None


def test_the_chosen_events_filter_of_many_ranges_names_their_sources_as_ranges(spark):
    """Past MAX_RANGES_FILTER (sid, block) pairs the chosen events' filter keeps every block of their sources, with
    the sources' ids as runs (events.sid_condition), not one literal each: the same rows for a bundle of thousands
    of files."""
    from flinkdoctor.diagnosis.findings import MAX_RANGES_FILTER, _ranges_of

    chosen = [{"sid": sid, "block": 0} for sid in range(3, 3 + 2 * MAX_RANGES_FILTER)] + [{"sid": 9000, "block": 7}]
    table = spark.createDataFrame([(sid, block) for sid in range(0, 9005) for block in (0, 7)], "sid int, block long")
    kept = {(row.sid, row.block) for row in table.where(_ranges_of(chosen)).collect()}
    wanted = {row["sid"] for row in chosen}
    assert kept == {(sid, block) for sid in wanted for block in (0, 7)}
    assert "BETWEEN" in str(_ranges_of(chosen))
