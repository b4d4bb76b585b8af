"""The scan tasks' own Parquet files (scan/taskfile.py): the columns of distinct values written without a
dictionary, every other column with one, and every row read back as the task scanned it, on a real lab run."""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest
from test_catalogue_scan import small_catalogue

from conftest import DATA

pytestmark = pytest.mark.unit


def _task(rules, work: Path, bundle: str, log_name: str, first: bytes = b""):
    """The log of the bundle's member whose name holds `log_name` (`first` before its first line), scanned by
    scanner.run as one task, its events' file and measured rows written to `work`/events and `work`/measures: its
    matcher, plan and measured rows' spec."""
    import dataclasses

    import pyarrow as pa

    from flinkdoctor.analytics.metrics import load_metrics, measured_rows
    from flinkdoctor.scan.events import SPLIT_BYTES, plan
    from flinkdoctor.scan.matcher import build_matcher
    from flinkdoctor.scan.scanner import part_rows, run
    from flinkdoctor.sources.ingest import ingest

    with tarfile.open(DATA / "lab" / "1.20.3" / bundle) as archive:
        member = next(m for m in archive.getmembers() if "/log/" in m.name and log_name in m.name)
        log = work / Path(member.name).name
        log.write_bytes(first + archive.extractfile(member).read())  # type: ignore[union-attr]
    metrics = load_metrics()
    matcher = build_matcher(rules, tuple(m.line for m in metrics), catalogue=small_catalogue())
    tasks = plan(ingest([log], work / "in").text_sources, SPLIT_BYTES)
    spec = dataclasses.replace(measured_rows(metrics), out_dir=str(work / "measures"))
    (work / "measures").mkdir()
    (work / "events").mkdir()
    ids = pa.record_batch([pa.array([0], pa.int64())], names=["id"])
    list(run(iter([ids]), part_rows(tasks), matcher.prefilter, str(work / "events"), matcher, spec))
    return matcher, tasks, spec


@pytest.fixture(scope="module")
def scanned(rules, tmp_path_factory):
    """A real lab JobManager log (checkpoints measured, a failure matched) scanned as one task: its events' batches,
    its measured rows, and the folders the task wrote them to."""
    from flinkdoctor.scan.measured import flat_rows
    from flinkdoctor.scan.scanner import PartStats, scan_part

    work = tmp_path_factory.mktemp("taskfiles")
    matcher, tasks, spec = _task(rules, work, "checkpoint-timeout.tar.gz", "standalonesession")
    batches = [out for part in tasks[0] for out in scan_part(part, matcher.prefilter, matcher)]
    batches = [b for b in batches if not isinstance(b, PartStats)]
    rows = [flat_rows(b, spec, tasks[0][0].layout)[0] for b in batches]
    return batches, [r for r in rows if r is not None], work, spec


def _encodings(path: Path) -> dict[str, set[str]]:
    import pyarrow.parquet as pq

    found: dict[str, set[str]] = {}
    meta = pq.ParquetFile(path).metadata
    for group in range(meta.num_row_groups):
        for i in range(meta.num_columns):
            column = meta.row_group(group).column(i)
            found.setdefault(column.path_in_schema, set()).update(column.encodings)
    return found


def test_leaf_paths_are_the_ones_parquet_writes(scanned):
    """leaf_paths names each column as the written file does, and each plain column is one of them (a renamed
    column would otherwise get its dictionary back unnoticed)."""
    import pyarrow as pa

    from flinkdoctor.scan import measured, scanner
    from flinkdoctor.scan.taskfile import leaf_paths

    _, _, work, spec = scanned
    events = scanner._schema().append(pa.field("time", pa.int64()))  # (the file's own: times.with_time)
    for path, schema, plain in (
        (work / "events" / "part-00000.parquet", events, scanner.PLAIN_COLUMNS),
        (work / "measures" / "part-00000.parquet", measured.schema(spec.captured), measured.PLAIN_COLUMNS),
    ):
        written = list(_encodings(path))
        assert leaf_paths(schema) == written
        assert plain <= set(written)


def test_distinct_columns_are_written_plain_and_read_back_the_same(scanned):
    """The plain columns hold no dictionary page, the others do; both files read back the task's rows."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from flinkdoctor.scan import measured, scanner
    from flinkdoctor.scan.times import with_time

    batches, rows, work, spec = scanned
    assert rows and batches
    assert {"first_rel", "last_rel", "ts", "time"} <= scanner.PLAIN_COLUMNS  # (a line number, a time: distinct)
    kept = [scanner._events_rows(batch, True) for batch in batches]  # (test below)
    events = pa.Table.from_batches([with_time(batch, "flink-log4j2", spec) for batch in kept])
    assert events.column("time").null_count < events.num_rows // 2  # (the times the task read: test_event_times)
    for path, plain, expected in (
        (work / "events" / "part-00000.parquet", scanner.PLAIN_COLUMNS, events),
        (work / "measures" / "part-00000.parquet", measured.PLAIN_COLUMNS, pa.concat_tables(rows)),
    ):
        for column, encodings in _encodings(path).items():
            if column != "orphan":  # (Parquet has no dictionary of booleans)
                assert ("RLE_DICTIONARY" in encodings) == (column not in plain), column
        assert pq.read_table(path).to_pylist() == expected.to_pylist()


def test_a_trigger_that_stamps_its_epoch_is_written_without_a_time(scanned):
    """Spark's reduction times a trigger by the epoch it prints (`_reduced`): the task reads no time for it (its
    row's time is null, as Spark's aggregate leaves it), and reads one for every other measure of the log."""
    import pyarrow as pa

    _, rows, _, _ = scanned
    table = pa.concat_tables(rows).to_pylist()
    triggers = [row for row in table if row["metric"] == 0]  # (metrics.yaml's first: the checkpoint trigger)
    others = [row for row in table if row["metric"] != 0]
    assert len(triggers) >= 4 and all(row["c_epoch_ms"] for row in triggers)
    assert all(row["time"] is None for row in triggers)
    assert others and all(row["time"] is not None for row in others)


def test_the_columns_spark_filters_on_keep_their_statistics(scanned):
    """Spark skips a task file's row groups by the min and max of the columns it filters on (sid and block for a
    part's events, level for the WARN+ reads): those keep their statistics; the texts and lists, which no filter
    reads by value, are written without."""
    import pyarrow.parquet as pq

    from flinkdoctor.scan.scanner import UNSTATED_COLUMNS

    _, _, work, _ = scanned
    meta = pq.ParquetFile(work / "events" / "part-00000.parquet").metadata
    group = meta.row_group(0)
    stated = {
        group.column(i).path_in_schema.split(".")[0] for i in range(meta.num_columns) if group.column(i).is_stats_set
    }
    assert {"sid", "block", "first_rel", "level", "ts"} <= stated
    assert not stated & UNSTATED_COLUMNS


def test_an_event_only_a_metric_measures_is_written_only_as_its_measured_rows(scanned):
    """Of the events the task kept, those of one line only a metric measures (below WARN, no rule's match, no
    catalogue hit, no group of repeated warnings: here the checkpoints' triggers and completions and configuration
    lines) have no events row, and all their measures as rows; every other kept event has its events row, a
    measured event of more lines too (its other lines are in no measured row). A measured row without a time (a
    trigger stamping its epoch) keeps its event's raw time (`ts`)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from flinkdoctor.scan.headers import WARN_WORDS

    batches, _, work, _ = scanned
    kept = pa.Table.from_batches(batches).to_pylist()
    written = {(r["block"], r["first_rel"]) for r in pq.read_table(work / "events" / "part-00000.parquet").to_pylist()}
    rows = pq.read_table(work / "measures" / "part-00000.parquet").to_pylist()
    measured: dict[tuple[int, int], list[dict]] = {}
    for row in rows:
        measured.setdefault((row["block"], row["first_rel"]), []).append(row)
    only = [
        e
        for e in kept
        if e["measures"] and not e["matches"] and not e["entries"] and e["level"] not in WARN_WORDS
        if e["repeats"] == 1 and e["last_rel"] == e["first_rel"]
    ]
    assert len(only) >= 20 and len(kept) > len(only)  # (each checkpoint's two lines; others)
    assert any(
        e["measures"] and e["last_rel"] > e["first_rel"] and (e["block"], e["first_rel"]) in written for e in kept
    )
    for event in kept:
        key = (event["block"], event["first_rel"])
        assert (key in written) == (event not in only), key
        if event in only:
            assert [(m["metric"], m["idx"]) for m in event["measures"]] == [
                (r["metric"], r["idx"]) for r in measured[key]
            ]
            assert all(r["ts"] == (event["ts"] if r["time"] is None else None) for r in measured[key]), key
    assert len(written) == len(kept) - len(only)
    assert any(r["time"] is None and r["ts"] for r in rows)  # (the triggers: their line's time found from `ts`)


def test_each_reason_to_keep_an_events_row_keeps_it(scanned):
    """A measure-only row of the real log is dropped from the events table; the same row with any one reason to
    be read there (a WARN level, a rule's match, a catalogue hit, a group of repeated warnings, a second line)
    keeps its events row. The values put in are another real row's (its match, its catalogue hit)."""
    import pyarrow as pa

    from flinkdoctor.scan import scanner

    batch = pa.Table.from_batches(scanned[0]).combine_chunks().to_batches()[0]
    rows = batch.to_pylist()
    only = next(
        i for i, r in enumerate(rows) if r["measures"] and scanner._events_rows(batch.slice(i, 1), True).num_rows == 0
    )
    matched = next(r["matches"] for r in rows if r["matches"])
    entries = next(r["entries"] for r in rows if r["entries"])
    row = rows[only]
    variants = {
        "warn": {"level": "WARN"},
        "error": {"level": "ERROR"},
        "match": {"matches": matched},
        "catalogue": {"entries": entries},
        "repeats": {"repeats": 3},
        "two lines": {"last_rel": row["first_rel"] + 1},
    }
    for name, changed in variants.items():
        variant = pa.RecordBatch.from_pylist([{**row, **changed}], schema=batch.schema)
        assert scanner._events_rows(variant, True).num_rows == 1, name
    assert scanner._events_rows(pa.RecordBatch.from_pylist([row], schema=batch.schema), True).num_rows == 0
    # a candidate nothing matched (left in the batch for this one filter: scan_part's `unmatched`) is dropped
    # when a matcher decided the batch, and kept when none did
    unmatched = pa.RecordBatch.from_pylist([{**row, "measures": []}], schema=batch.schema)
    assert scanner._events_rows(unmatched, True).num_rows == 0 and scanner._events_rows(unmatched, False).num_rows == 1


def test_candidates_nothing_matched_are_left_out_of_the_events_file(rules, tmp_path):
    """A lab TaskManager log whose pass finds candidates nothing then matches (a stack trace holding a rule's
    words, not its regex): the task leaves them in its batches for the events' file's one filter (scan_part's
    `unmatched`), which writes the rows scan_part keeps, less the measure-only ones; its measured rows are those
    of scan_part's batches."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from flinkdoctor.scan import scanner
    from flinkdoctor.scan.measured import flat_rows
    from flinkdoctor.scan.times import with_time

    matcher, tasks, spec = _task(rules, tmp_path, "network-buffers.tar.gz", "taskexecutor")

    def batches(unmatched: bool) -> list[pa.RecordBatch]:
        found = [scanner.scan_part(part, matcher.prefilter, matcher, unmatched) for part in tasks[0]]
        return [out for outs in found for out in outs if not isinstance(out, scanner.PartStats)]

    kept, every = batches(False), batches(True)
    assert sum(b.num_rows for b in every) > sum(b.num_rows for b in kept)  # (the candidates nothing matched)
    events = pa.Table.from_batches([with_time(scanner._events_rows(b, False), "flink-log4j2", spec) for b in kept])
    assert pq.read_table(tmp_path / "events" / "part-00000.parquet").to_pylist() == events.to_pylist()
    rows = pa.concat_tables([r for b in kept if (r := flat_rows(b, spec, "flink-log4j2")[0]) is not None])
    assert pq.read_table(tmp_path / "measures" / "part-00000.parquet").to_pylist() == rows.to_pylist()


def test_the_header_of_an_event_read_only_for_its_measures_is_taken_only_for_its_time(rules, tmp_path):
    """A real lab JobManager log scanned as the task scans it (scan_part's `unmatched`: the caller leaves out the
    measure-only events and the candidates nothing matched): of each measure-only event (the checkpoints'
    triggers and completions) only `ts` and `host` are taken, its other header fields left null (nothing reads
    them: _Events._only_timed), its time and measures as when every field is taken; every other event the
    task keeps is the same row either way."""
    import pyarrow as pa

    from flinkdoctor.scan import scanner

    matcher, tasks, _ = _task(rules, tmp_path, "checkpoint-timeout.tar.gz", "standalonesession")

    def rows(unmatched: bool) -> dict[tuple[int, int], dict]:
        found = [scanner.scan_part(part, matcher.prefilter, matcher, unmatched) for part in tasks[0]]
        batches = [out for outs in found for out in outs if not isinstance(out, scanner.PartStats)]
        return {(r["block"], r["first_rel"]): r for r in pa.Table.from_batches(batches).to_pylist()}

    every, task = rows(False), rows(True)
    only = {key for key, row in every.items() if not scanner._events_rows(pa.RecordBatch.from_pylist([row]), True)}
    assert len(only) >= 20 and len(every) > len(only)
    unread = ("level", "logger", "thread", "uptime", "message")
    for key, row in every.items():
        if key in only:
            assert task[key] == {**row, **dict.fromkeys(unread)}, key
            assert row["logger"] and row["message"] and row["ts"]
        else:
            assert task[key] == row, key


def test_a_catalogue_candidate_keeps_its_fields_when_the_task_leaves_out_the_measure_only_events(rules, tmp_path):
    """An event below WARN that no rule tries but the failure catalogue names (here a headerless line, as a
    pasted excerpt or a cut log begins: the catalogue entry's own message) keeps every field it has in the task's
    mode: only measure-only events are read for their time alone (review14a: dropping the candidates' test gave
    it no message)."""
    import pyarrow as pa

    from flinkdoctor.scan import scanner

    line = b"No tokens obtained so skipping notifications"  # the catalogue's entry (tests/data/catalogue)
    matcher, tasks, _ = _task(rules, tmp_path, "checkpoint-timeout.tar.gz", "standalonesession", line + b"\n")
    found = [scanner.scan_part(part, matcher.prefilter, matcher, True) for part in tasks[0]]
    batches = [out for outs in found for out in outs if not isinstance(out, scanner.PartStats)]
    first = next(r for r in pa.Table.from_batches(batches).to_pylist() if (r["block"], r["first_rel"]) == (0, 1))
    assert first["message"] == line.decode() and first["entries"]
