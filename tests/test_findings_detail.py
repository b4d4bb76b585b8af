"""The chosen events in detail (diagnosis/findings._rows_in_detail): the driver details the rows it read from the
events table's files itself where its answer is certain to be Spark's (_in_detail's: the entities' Java regexes,
the event's text cut, each item's line, the time as Spark's rows give it), and hands Spark only the rest."""

from __future__ import annotations

from types import SimpleNamespace

JOB = "0123456789abcdef0123456789abcdef"
LONG = "x" * 700  # a line longer than the 600 characters an item's line keeps
TEXTS = [  # (the event's text, its matches' and hits' line indexes)
    (f"Job {JOB} switched from RUNNING to FAILED\n\tat a.b(C.java:1)", [0, 1]),
    (f"ERROR jobId={JOB}_x\nJob {JOB} failed.", [1]),  # `\b`: the first id runs on into a word
    (f"Job my job name ({JOB}) failed\nchk-17 of hdfs://nn:8020/ck/{JOB}/chk-17's", [0, 1]),
    ("Checkpoint\x1c12 expired\ncheckpoint 34 of job", [0, 1]),  # \x1c: whitespace to Python's str, not to Java's \s
    ("Checkpoint\x0b56 declined\r\ncontainer_e01_1700000000000_0001_01_000002 lost", [0, 1]),  # \x0b: Java's \s
    ("No lease on /user/flink/ck/a b (inode 1)\nfile:/tmp/x'y", [0, 1]),
    (f"\n{LONG}\nJob {JOB} failed\n\n", [1, 2, 4]),  # empty lines at both ends
    ("job " + "\n".join(f"line {i} " + "y" * 60 for i in range(400)), [0, 399]),  # longer than the cut: head, tail
    ("z" * 19_999 + "\n", [0, 1]),  # 20,000 characters: kept whole
    ("checkpoint 7 of " + "w" * 30_000 + f" Job {JOB}", [0]),
    (f"Job {JOB}é failed\nCheckpoint 9é", [0, 1]),  # not ASCII: Spark's (Java's `\b` by JVM version)
    ("plain event without entities", [0]),
]


def _rows(raw_time_at: int | None = None):
    """An Arrow table shaped as rows_of_files gives (the table's columns _in_detail reads), one event per TEXTS
    item, each with a match per index (captures: some, none, null) and a hit on its first line; the event at
    `raw_time_at` has the raw `ts` its task left for Spark to parse."""
    import pyarrow as pa

    match = pa.struct([("rule", pa.string()), ("captures", pa.map_(pa.string(), pa.string())), ("idx", pa.int32())])
    schema = pa.schema(
        [("sid", pa.int32()), ("bundle", pa.int32()), ("block", pa.int64()), ("first_rel", pa.int64())]
        + [("last_rel", pa.int64()), ("ts", pa.string()), ("time", pa.int64()), ("host", pa.string())]
        + [("level", pa.string()), ("text", pa.string()), ("matches", pa.list_(match))]
        + [("entries", pa.list_(pa.struct([("entry", pa.string()), ("idx", pa.int32())])))]
    )
    rows = []
    for n, (text, lines) in enumerate(TEXTS):
        captures = [[("job", JOB), ("n", str(n))], [], None][n % 3]
        raw = n == raw_time_at
        rows.append(
            {
                "sid": n % 2,
                "bundle": 0,
                "block": n // 4,
                "first_rel": 10 * n,
                "last_rel": 10 * n + text.count("\n"),
                "ts": "2026-11-27 10:00:00,123" if raw else None,
                "time": None if raw or n == 5 else 1_764_237_600_000_000 + 1_001 * n,
                "host": None if n % 2 else f"host-{n}",
                "level": "ERROR",
                "text": text,
                "matches": [{"rule": f"rule-{k % 2}", "captures": captures, "idx": i} for k, i in enumerate(lines)],
                "entries": None if n == 3 else [{"entry": "flink:1", "idx": lines[0]}],
            }
        )
    return pa.Table.from_pylist(rows, schema)


def _stored():
    from flinkdoctor.scan.events import EventsResult, TimeReading

    return EventsResult("", {}, {}, TimeReading(by_layout={"flink-log4j2": [0, 1]}))


def test_the_drivers_detail_is_sparks(spark):
    """Every item the driver details is the one Spark's _in_detail gives for the same rows, every field, in the
    same order: the entities (`\\b` after an id, Java's ASCII `\\s` and `\\d`), each item's line (cut at 600, the
    text split at every "\\n", empty lines kept), the event's text (whole up to 20,000 characters, else head and
    tail), the time; the rows it cannot read for certain (not ASCII, a raw time) read by Spark, merged in order.
    Also for chosen instances only."""
    from flinkdoctor.diagnosis import findings as fd

    stored = _stored()
    for raw in (None, 2):
        rows = _rows(raw)
        by_spark = fd._in_detail(stored.rows(spark, rows), None, None)
        assert fd._rows_in_detail(spark, stored, rows) == by_spark
        matches, hits = by_spark
        assert any(m.job_id for m in matches) and any(m.checkpoint_id for m in matches)
        assert any(m.container_id for m in matches) and any(m.hdfs_path for m in matches)
        assert any(fd.OMITTED in m.event_text for m in matches) and hits
        rules = {(m.sid, m.block, m.first_rel, m.rule) for m in matches[::3]}
        entries = {(h.sid, h.block, h.first_rel, h.entry) for h in hits[::2]}
        assert fd._rows_in_detail(spark, stored, rows, rules, entries) == fd._in_detail(
            stored.rows(spark, rows), rules, entries
        )
    assert all(m.time is not None for m in by_spark[0] if m.first_rel == 20)  # the raw time, parsed by Spark


def test_only_what_the_driver_cannot_read_as_spark_goes_to_spark(monkeypatch):
    """Without Spark: the rows Spark gets are those whose text is not ASCII or whose time the task left raw, and
    their items take their rows' places among the driver's."""
    from flinkdoctor.diagnosis import findings as fd

    sent = []

    class Stored:
        def rows(self, spark, rows):
            sent.extend(zip(rows.column("sid").to_pylist(), rows.column("first_rel").to_pylist(), strict=True))
            return rows

    def by_spark(rows, rules, entries):
        def item(row, what):
            return SimpleNamespace(
                sid=row["sid"], block=row["block"], first_rel=row["first_rel"], by="spark", what=what
            )

        listed = rows.to_pylist()
        return [item(r, "match") for r in listed], [item(r, "hit") for r in listed]

    monkeypatch.setattr(fd, "_in_detail", by_spark)
    rows = _rows(raw_time_at=4)
    matches, hits = fd._rows_in_detail(None, Stored(), rows)
    odd = [n for n, (text, _) in enumerate(TEXTS) if not text.isascii()] + [4]
    assert sorted(sent) == sorted((n % 2, 10 * n) for n in odd)
    order = [m.first_rel // 10 for m in matches]
    assert order == sorted(order) and {m.first_rel // 10 for m in matches if getattr(m, "by", "")} == set(odd)
    assert [h.first_rel // 10 for h in hits] == [n for n in range(len(TEXTS)) if n != 3]


def test_entities_are_read_as_java_reads_them():
    """The driver's entities of ASCII texts, as Spark's regexp_extract (Java's regexes) gives them: `\\s` is
    Java's ASCII whitespace, `\\b` ends an id only before a non-word character; no word, no entity."""
    from flinkdoctor.diagnosis import findings as fd

    assert fd._entities_here(f"job {JOB}_a and Checkpoint\x1c3") == dict.fromkeys(fd.ENTITIES)
    found = fd._entities_here(f"Job {JOB}: checkpoint\x0b42 at file:/ck/chk-42 in container_1_2_3_4")
    assert found == {
        "job_id": JOB,
        "checkpoint_id": "42",
        "container_id": "container_1_2_3_4",
        "hdfs_path": "file:/ck/chk-42",
    }
    assert fd._entities_here(f"{JOB} checkpointed 12")["job_id"] is None


def test_an_items_line_outside_the_text_goes_to_spark():
    """An item whose line index is not one of the text's lines (Spark's element_at decides it) is not detailed on
    the driver; the last line is (review18a: `idx <= len(lines)` crashed on the driver instead)."""
    from pyspark.sql.types import TimestampType

    from flinkdoctor.diagnosis import findings as fd

    event = _rows().to_pylist()[0]  # two lines
    for idx, here in ((1, True), (2, False), (-1, False)):
        event["matches"] = [{"rule": "rule-0", "captures": None, "idx": idx}]
        assert (fd._detail_here(event, None, None, TimestampType().fromInternal) is not None) is here
        event["matches"], event["entries"] = [], [{"entry": "flink:1", "idx": idx}]
        assert (fd._detail_here(event, None, None, TimestampType().fromInternal) is not None) is here
