"""The measures' rows the scan tasks write (scan/measured.py) are the rows Spark wrote (metrics._reduced): the
same columns, values and times, on real lab runs; and a time the task reads is the one Spark's parsed_time gives,
on every header of every text file under tests/data and on those headers' times made invalid; every other time a
row needs is left to Spark, which then writes the file as before."""

from __future__ import annotations

import tarfile
from pathlib import Path

from conftest import DATA

LAB = DATA / "lab"


def _spec(timezone="UTC", session_utc=True):
    from flinkdoctor.analytics.metrics import load_metrics, measured_rows

    return measured_rows(load_metrics()).__class__(
        **{**measured_rows(load_metrics()).__dict__, "timezone": timezone, "session_utc": session_utc}
    )


def _headers_times(tmp_path: Path) -> dict[str, list[str]]:
    """Per layout, the `ts` of every header line of every text file under tests/data (archives unpacked), as
    ingest detects each file's layout."""
    from flinkdoctor.sources.ingest import ingest
    from flinkdoctor.sources.layouts import layout_by_id

    roots = [DATA / name for name in ("seeds", "incidents", "loghub", "shapes")]
    roots += sorted(LAB.glob("*/*.tar.gz"))
    manifest = ingest(roots, tmp_path / "work")
    found: dict[str, list[str]] = {}
    for source in manifest.text_sources:
        if not source.layout or source.layout == "none":
            continue
        layout = layout_by_id(source.layout)
        regex = layout.python_regex
        if "ts" not in regex.groupindex:
            continue
        text = Path(source.staged).read_text("utf-8", errors="replace")
        found.setdefault(layout.id, []).extend(
            m["ts"] for line in text.splitlines() if (m := regex.match(line)) and m["ts"] is not None
        )
    return found


def _made_invalid(ts: str) -> list[str]:
    """A real time with one digit set to 0 or 9 in each place (month 00 or 19, hour 29, ...), blanks widened, a
    digit of another script, and its date set to 29 February of a common and a leap year."""
    out = []
    for at, char in enumerate(ts):
        if char.isdigit():
            out += [ts[:at] + "0" + ts[at + 1 :], ts[:at] + "9" + ts[at + 1 :]]
    out += [ts.replace(" ", "\t", 1), ts.replace(" ", "  ", 1), "\uff12" + ts[1:], "\u0662" + ts[1:], " " + ts]
    if ts[4:5] == "-" and ts[7:8] == "-":
        out += [f"{year}-02-29{ts[10:]}" for year in ("1900", "2000", "2023", "2024", "1600", "2300")]
    return out


def test_a_time_the_task_reads_is_sparks(spark, tmp_path):
    import numpy as np
    import pyarrow as pa

    from flinkdoctor.scan.events import TimeReading, parsed_time
    from flinkdoctor.scan.times import fixed_fields, read_times
    from flinkdoctor.sources.layouts import load_layouts

    found = _headers_times(tmp_path)
    fixed = {layout.id for layout in load_layouts() if layout.time_format and fixed_fields(layout.time_format)}
    assert {"flink-log4j2", "flink-logback", "zookeeper-server", "hadoop-daemon"} <= fixed
    assert fixed & set(found) >= {"flink-log4j2", "flink-logback"}  # (the layouts of the lab's and seeds' logs)
    checked = 0
    for layout in load_layouts():
        if not (layout.timed and layout.time_format):
            continue
        real = sorted(set(found.get(layout.id, [])))
        every = real + sorted({bad for ts in real[:: max(1, len(real) // 200)] for bad in _made_invalid(ts)})
        every += [None]
        for timezone, session in (("UTC", True), ("Asia/Shanghai", True), ("UTC", False)):
            ts = pa.array(every, pa.string())
            mine, left = read_times(ts, layout.id, _spec(timezone, session))
            frame = spark.createDataFrame(pa.table({"sid": pa.array([0] * len(every), pa.int32()), "ts": ts}))
            times = TimeReading({layout.id: [0]}, 2019, timezone)
            theirs = frame.select(parsed_time(times).alias("t")).toArrow().column("t")
            theirs = theirs.cast(pa.timestamp("us")).to_numpy(zero_copy_only=False).astype("datetime64[ns]")
            read = ~left
            assert (np.isnat(mine[read]) == np.isnat(theirs[read])).all(), layout.id
            same = mine[read][~np.isnat(mine[read])] == theirs[read][~np.isnat(mine[read])]
            assert same.all(), (layout.id, timezone, [e for e, r in zip(every, read, strict=True) if r][:5])
            assert np.isnat(mine[left]).all()  # (a time left is no time here)
            if not session or (timezone != "UTC" and not layout.utc) or layout.id not in fixed:
                assert left[:-1].all(), (layout.id, timezone)  # (the null ts: a null time, wherever it is)
            elif real:
                assert read[: len(real)].all(), layout.id  # every real header's time read here
                assert left[len(real) : -1].any(), layout.id  # the invalid ones left to Spark
                checked += len(real)
    assert checked >= 10_000


EPOCHS = ["1700000000000", "0", "000", "0001", "", None, "\u0661\u0662", "+5", " 5", "1.5", "9" * 19]
NUMBERS = ["7", "0", "007", "00", "", None, "\u0667", "+7", "7 ", "-7", "9" * 19, "9" * 18]


def test_a_trigger_stamped_as_spark_says(spark):
    """Whether a trigger stamps its own epoch (so needs no line time), as `_reduced` decides it in Spark, for
    every pair of these captured epochs and numbers where the task is sure; unsure exactly where a value is
    not null nor 1 to 18 ASCII digits."""
    import numpy as np
    import pyarrow as pa
    from pyspark.sql import functions as F

    from flinkdoctor.scan.measured import _stamped

    pairs = [(e, n) for e in EPOCHS for n in NUMBERS]
    epochs, numbers = pa.array([e for e, _ in pairs], pa.string()), pa.array([n for _, n in pairs], pa.string())
    stamped, unsure = _stamped(epochs, numbers, np.ones(len(pairs), dtype=bool))
    n = F.col("n")
    says = (
        spark.createDataFrame(pa.table({"at": pa.array(range(len(pairs))), "e": epochs, "n": numbers}))
        .select(
            "at",
            (
                F.coalesce(F.col("e").try_cast("long") != 0, F.lit(False))
                & F.coalesce(n == n.try_cast("long").cast("string"), F.lit(False))
            ).alias("s"),
        )
        .toArrow()
        .sort_by("at")
        .column("s")
        .to_pylist()
    )

    def sure(value):
        return value is None or (value.isascii() and value.isdigit() and len(value) <= 18)

    assert unsure.tolist() == [not (sure(e) and sure(n)) for e, n in pairs]
    assert [bool(s) for s, u in zip(stamped, unsure, strict=True) if not u] == [
        s for s, u in zip(says, unsure, strict=True) if not u
    ]
    assert stamped.sum() >= 2 and (~unsure).sum() >= 20


def _lab_inputs(tmp_path: Path) -> list[tuple[str, Path]]:
    """Real lab runs: a 1.20.3 JobManager log given twice (every line measured twice), a 2.1.1 run whose
    checkpoints expire, and 1.20.3 runs whose checkpoints time out, whose handles are deleted, whose state is over
    the memory backend's limit, whose restarts run out."""
    with tarfile.open(LAB / "1.20.3" / "healthy.tar.gz") as archive:
        archive.extractall(tmp_path / "run", filter="data")
    (log,) = (tmp_path / "run").glob("*/log/*standalonesession*.log")
    (tmp_path / "twice" / "again").mkdir(parents=True)
    (tmp_path / "twice" / "jobmanager.log").write_bytes(log.read_bytes())
    (tmp_path / "twice" / "again" / "jobmanager.log").write_bytes(log.read_bytes())
    inputs = [("twice", tmp_path / "twice"), ("expiring", LAB / "2.1.1" / "checkpoint-timeout.tar.gz")]
    more = ("checkpoint-timeout", "ha-checkpoint-handle-deleted", "state-over-memory-limit", "restart-exhausted")
    return inputs + [(name, LAB / "1.20.3" / f"{name}.tar.gz") for name in more]


def test_the_tasks_rows_are_the_rows_spark_writes(spark, rules, tmp_path, monkeypatch):
    """Each real run's measures: the file the tasks wrote holds Spark's rows (the same schema, every row and
    column, in any order), left no time to Spark, and extract() reads it to the same measures, columns and
    texts as through Spark's file."""
    import numpy as np
    import pyarrow as pa

    from flinkdoctor.analytics import extract, load_metrics
    from flinkdoctor.analytics import metrics as m
    from flinkdoctor.scan.events import build_events
    from flinkdoctor.scan.matcher import build_matcher
    from flinkdoctor.scan.measured import times_left
    from flinkdoctor.sources.ingest import ingest

    metrics = load_metrics()
    matcher = build_matcher(rules, tuple(metric.line for metric in metrics))
    monkeypatch.setattr(m, "FEW", 0)  # (the long run's path, whatever the count)
    keys = ["sid", "block", "first_rel", "idx", "metric"]
    compared = 0
    for name, given in _lab_inputs(tmp_path):
        work = tmp_path / f"work-{name}"
        manifest = ingest([given], work)
        events = build_events(
            spark, manifest, work, matcher.prefilter, matcher=matcher, measured=m.measured_rows(metrics)
        )
        lines = events.stats["measured"]
        if not lines:
            continue
        table = events.table(spark)
        scanned = m._scanned(events, lines)
        assert scanned is not None, name
        assert times_left([file.metadata for file in scanned.files]) == 0, name
        mine = pa.concat_tables([file.read() for file in scanned.files]).sort_by([(k, "ascending") for k in keys])
        by_tasks = extract(table, metrics, events.blocks, manifest, lines, stored=events)
        by_tasks_texts = by_tasks.texts.read(by_tasks.checkpoints.c_row)
        # Spark's rows from a scan that wrote none (its events table holds every measured event)
        spark_events = build_events(spark, manifest, tmp_path / f"spark-{name}", matcher.prefilter, matcher=matcher)
        by_spark = extract(spark_events.table(spark), metrics, events.blocks, manifest, lines, stored=spark_events)
        theirs = pa.concat_tables([file.read() for file in by_spark.texts.files])
        theirs = theirs.sort_by([(k, "ascending") for k in keys])
        assert mine.column("ts").null_count < mine.num_rows  # (the lines' raw times where no time: for Spark)
        mine = mine.drop_columns(["ts"])
        assert mine.schema == theirs.schema.remove_metadata(), name
        for column in mine.schema.names:
            assert mine.column(column).to_pylist() == theirs.column(column).to_pylist(), (name, column)
        assert sorted(by_tasks, key=repr) == sorted(by_spark, key=repr), name
        mine_c, theirs_c = by_tasks.checkpoints, by_spark.checkpoints
        for field in ("t_job", "t_number", "t_time", "t_at", "t_sid", "c_job", "c_number", "c_time", "c_duration"):
            assert np.asarray(getattr(mine_c, field)).tobytes() == np.asarray(getattr(theirs_c, field)).tobytes()
        assert mine_c.jobs == theirs_c.jobs and mine_c.hosts == theirs_c.hosts, name
        assert by_tasks_texts == by_spark.texts.read(theirs_c.c_row), name
        compared += mine.num_rows
    assert compared >= 1000


def test_a_time_left_to_spark_has_spark_write_the_file(spark, rules, tmp_path, monkeypatch):
    """A run whose measured lines need a time the task does not read (here: --timezone other than UTC, on a
    layout that prints local times) leaves them to Spark: the tasks' count says so, and extract() reads the
    file Spark writes, with the times Spark parsed."""
    _, found = _left_to_spark(spark, rules, tmp_path, monkeypatch, LAB / "1.20.3" / "healthy.tar.gz")
    assert len(found) >= 10  # (the run's other measures: configuration, restore, ...)


def test_a_time_left_to_spark_where_every_event_is_only_measured(spark, rules, tmp_path, monkeypatch):
    """The same of a log whose every line only a metric measures (a real run's checkpoint triggers and
    completions alone): the tasks write no events file at all, and Spark's file goes beside the table all the
    same (it was placed by the table's files, and there were none: ValueError)."""
    with tarfile.open(LAB / "1.20.3" / "healthy.tar.gz") as archive:
        archive.extractall(tmp_path / "run", filter="data")
    (log,) = (tmp_path / "run").glob("*/log/*standalonesession*.log")
    said = (b" - Triggering checkpoint ", b" - Completed checkpoint ")
    kept = [line for line in log.read_bytes().splitlines(keepends=True) if any(s in line for s in said)]
    assert len(kept) >= 6 and all(b" INFO " in line for line in kept)
    (tmp_path / "checkpoints").mkdir()
    (tmp_path / "checkpoints" / "jobmanager.log").write_bytes(b"".join(kept))
    events, found = _left_to_spark(spark, rules, tmp_path / "scan", monkeypatch, tmp_path / "checkpoints")
    assert len(found.checkpoints.c_time) == len(kept) // 2  # (each checkpoint's completion)
    assert not list(Path(events.path).glob("*.parquet"))  # (no events row: every line only measured)
    from flinkdoctor.analytics.metrics import NANOS_AS_LONG

    assert spark.conf.get(NANOS_AS_LONG) == "true"  # left set: a warm server's diagnoses share one session


def _left_to_spark(spark, rules, tmp_path: Path, monkeypatch, given: Path):
    from flinkdoctor.analytics import extract, load_metrics
    from flinkdoctor.analytics import metrics as m
    from flinkdoctor.scan.events import build_events
    from flinkdoctor.scan.matcher import build_matcher
    from flinkdoctor.sources.ingest import ingest

    metrics = load_metrics()
    matcher = build_matcher(rules, tuple(metric.line for metric in metrics))
    monkeypatch.setattr(m, "FEW", 0)
    manifest = ingest([given], tmp_path)
    events = build_events(
        spark,
        manifest,
        tmp_path,
        matcher.prefilter,
        timezone="Asia/Shanghai",
        matcher=matcher,
        measured=m.measured_rows(metrics),
    )
    lines = events.stats["measured"]
    assert lines and m._scanned(events, lines) is None  # (times left: Spark writes the file)
    found = extract(events.table(spark), metrics, events.blocks, manifest, lines, stored=events)
    assert len(found.checkpoints.c_time) >= 3 and not found.checkpoints.c_time.astype("int64").min() < 0
    first = [f.read() for f in found.texts.files][0]
    assert b"org.apache.spark.version" in (first.schema.metadata or {})  # the file Spark wrote
    # from the tasks' rows (the events table lacks the lines only a metric measures): what Spark gives from a scan
    # that wrote no rows, every measured event in its table, the triggers' and completions' columns and the rest
    reference = build_events(
        spark, manifest, tmp_path / "reference", matcher.prefilter, timezone="Asia/Shanghai", matcher=matcher
    )
    theirs = extract(reference.table(spark), metrics, reference.blocks, manifest, lines, stored=reference)
    assert sorted(found, key=repr) == sorted(theirs, key=repr)
    mine_c, theirs_c = found.checkpoints, theirs.checkpoints
    for field in ("t_job", "t_number", "t_time", "t_at", "c_job", "c_number", "c_time", "c_duration", "c_line"):
        assert getattr(mine_c, field).tobytes() == getattr(theirs_c, field).tobytes(), field
    assert found.texts.read(mine_c.c_row) == theirs.texts.read(theirs_c.c_row)
    assert reference.stats["events"] == events.stats["events"] and reference.measured is None
    return events, found


def _without_trigger_texts(found):
    """The measures, a trigger's text left out: the tasks' rows keep none (it gives only its time and captures,
    and no reader shows it)."""
    import dataclasses

    return sorted(
        (dataclasses.replace(m, text=None) if m.measures == "checkpoint-trigger" else m for m in found), key=repr
    )


def test_the_few_measures_are_read_from_the_tasks_rows(spark, rules, tmp_path, monkeypatch):
    """A run of few measured lines reads them whole from the tasks' rows, each with its line's time (a trigger's
    too, from its raw `ts`, parsed by Spark), its captures in its regex's order and its text: the measures a scan
    that wrote no rows gives from its events table, on real lab runs, with the times the task reads and with every
    time left to Spark (--timezone). The analysis is the same."""
    from flinkdoctor.analytics import analyse, extract, load_metrics
    from flinkdoctor.analytics import metrics as m
    from flinkdoctor.scan.events import build_events
    from flinkdoctor.scan.matcher import build_matcher
    from flinkdoctor.sources.ingest import ingest

    metrics = load_metrics()
    matcher = build_matcher(rules, tuple(metric.line for metric in metrics))
    for name, zone in (("healthy", "UTC"), ("checkpoint-timeout", "UTC"), ("healthy", "Asia/Shanghai")):
        work = tmp_path / f"{name}-{zone.replace('/', '-')}"
        manifest = ingest([LAB / "1.20.3" / f"{name}.tar.gz"], work / "in")
        events = build_events(
            spark,
            manifest,
            work / "rows",
            matcher.prefilter,
            timezone=zone,
            matcher=matcher,
            measured=m.measured_rows(metrics),
        )
        reference = build_events(spark, manifest, work / "table", matcher.prefilter, timezone=zone, matcher=matcher)
        lines = events.stats["measured"]
        assert 0 < lines <= m.FEW and reference.stats["measured"] == lines
        found = extract(events.table(spark), metrics, events.blocks, manifest, lines, stored=events)
        theirs = extract(reference.table(spark), metrics, reference.blocks, manifest, lines, stored=reference)
        assert len(found) == lines and found.checkpoints is None
        assert _without_trigger_texts(found) == _without_trigger_texts(theirs), (name, zone)
        assert sorted(repr(list(x.captures.items())) for x in found) == sorted(
            repr(list(x.captures.items())) for x in theirs
        )
        assert any(x.measures == "checkpoint-trigger" and x.time for x in found)
        assert analyse(found, manifest, None) == analyse(theirs, manifest, None), (name, zone)


def test_a_fixed_time_is_the_calendars():
    """The fixed-width reader against Python's calendar: every day of 1700-2261 at a time of day read, and the
    29th, 30th and 31st of every month of some years, valid or not; patterns other than fixed-width digits are
    not read at all."""
    from datetime import date, datetime, timedelta

    import numpy as np
    import pyarrow as pa

    from flinkdoctor.scan.times import fixed_fields, read_fixed

    days = [date(1700, 1, 1) + timedelta(days=n) for n in range((date(2261, 12, 31) - date(1700, 1, 1)).days + 1)]
    texts = [f"{d.isoformat()} {n % 24:02d}:{n % 60:02d}:{(7 * n) % 60:02d},{n % 1000:03d}" for n, d in enumerate(days)]
    times, read = read_fixed(pa.array(texts), *fixed_fields("yyyy-MM-dd HH:mm:ss,SSS"))
    assert read.all()
    expected = [datetime.strptime(t, "%Y-%m-%d %H:%M:%S,%f") for t in texts]
    assert times.astype("datetime64[us]").tolist() == expected
    odd = [
        f"{y}-{m:02d}-{d} 00:00:00"
        for y in (1900, 2000, 2023, 2024, 2100)
        for m in range(0, 14)
        for d in (0, 29, 30, 31)
    ]
    times, read = read_fixed(pa.array(odd), *fixed_fields("yyyy-MM-dd HH:mm:ss"))

    def valid(text):
        try:
            return datetime.strptime(text, "%Y-%m-%d %H:%M:%S")
        except ValueError:
            return None

    assert [valid(t) for t in odd] == [
        t if r else None for t, r in zip(times.astype("datetime64[us]").tolist(), read, strict=True)
    ]
    assert not read.all() and read.any()
    assert not np.isnat(times[read]).any()
    for pattern in (
        "yyMMdd HHmmss",
        "yyyy MMM d HH:mm:ss",
        "yyyy-MM-dd'T'HH:mm:ss.SSSZ",
        "yyyy-MM-dd HH:mm",
        "yyyy-MM-dd'' HH:mm:ss",
    ):
        assert fixed_fields(pattern) is None, pattern


def test_captures_looked_up_and_nulled_as_arrow_does():
    """One pass over the maps' entries gives Arrow's map_lookup (the first of a key), and nulling rows keeps the
    others' maps, on a sliced map array (as a flattened list's child is)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from flinkdoctor.scan.measured import _looked_up, _nulled

    kind = pa.map_(pa.string(), pa.string())
    maps = pa.array(
        [
            [("x", "0")],
            [("job", "a"), ("checkpoint", "7")],
            [],
            None,
            [("job", "b"), ("job", "c")],
            [("checkpoint", None)],
        ],
        kind,
    )
    for sliced in (maps, maps.slice(1), maps.slice(2, 3)):
        compact = sliced.take(pa.array(np.arange(len(sliced))))
        for read in (compact, sliced):  # (a slice's entries read where they are)
            found = _looked_up(read, ("job", "checkpoint", "none"))
            for key, values in found.items():
                assert values.to_pylist() == pc.map_lookup(sliced, key, "first").to_pylist(), key
        flags = np.arange(len(sliced)) % 2 == 0
        assert _nulled(compact, flags).to_pylist() == [
            None if f else v for f, v in zip(flags, sliced.to_pylist(), strict=True)
        ]


def test_digits_read_as_the_regexes_say():
    """`_digits` (Arrow's ASCII kernels) gives what the regexes `^[0-9]+$` and `^0+$` and a leading `0` say, on
    the captured epochs and numbers above (digits of other scripts, signs, blanks, a line end, too many digits)
    and on zeros of every length."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from flinkdoctor.scan.measured import LONG_DIGITS, _digits

    values = pa.array(EPOCHS + NUMBERS + ["0" * 30, "00\n", "5\n", "\u0660", "0\u0660"], pa.string())
    for sliced in (values, values.slice(3)):

        def regex(pattern: str, values: pa.Array = sliced) -> np.ndarray:
            return pc.fill_null(pc.match_substring_regex(values, pattern), False).to_numpy(zero_copy_only=False)

        length = pc.fill_null(pc.binary_length(sliced), 0).to_numpy(zero_copy_only=False)
        null = ~sliced.is_valid().to_numpy(zero_copy_only=False)
        digits = regex("^[0-9]+$") & (length >= 1) & (length <= LONG_DIGITS)
        found = _digits(sliced)
        assert [f.tolist() for f in found] == [digits.tolist(), regex("^0+$").tolist(), null.tolist()]
        canonical = ~regex("^0") | (length == 1)
        found = _digits(sliced, canonical=True)
        assert [f.tolist() for f in found] == [digits.tolist(), canonical.tolist(), null.tolist()]


def test_the_task_takes_the_captures_beside_its_batches(rules, tmp_path, monkeypatch):
    """A task (scanner.run) writes its measured rows from the measures each batch was built from (scanner.Kept:
    their captures as RE2 gave them, never looked up in the batch's maps: _looked_up fails here), and builds
    the captures' maps only for the rows its events file keeps: both files as the rows and events of the plain
    batches (every map built, the captures looked up) give them, on a real lab JobManager log."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from test_task_files import _task

    from flinkdoctor.scan import measured, scanner
    from flinkdoctor.scan.times import with_time

    def looked_up(*args):
        raise AssertionError("the task looked its captures up in the maps")

    with monkeypatch.context() as patched:
        patched.setattr(measured, "_looked_up", looked_up)
        matcher, tasks, spec = _task(rules, tmp_path, "checkpoint-timeout.tar.gz", "standalonesession")
    found = [scanner.scan_part(part, matcher.prefilter, matcher, True) for part in tasks[0]]
    batches = [out for outs in found for out in outs if not isinstance(out, scanner.PartStats)]
    layout = tasks[0][0].layout
    rows = pa.concat_tables([r for b in batches if (r := measured.flat_rows(b, spec, layout)[0]) is not None])
    written = pq.read_table(tmp_path / "measures" / "part-00000.parquet")
    assert written.to_pylist() == rows.to_pylist() and written.num_rows > 50
    kinds = {spec.kinds[m] for m in written.column("metric").to_pylist()}
    assert {"checkpoint-trigger", "config-property"} <= kinds  # (columns, and maps written)
    events = pa.Table.from_batches([with_time(scanner._events_rows(b, True), layout, spec) for b in batches])
    mapped = [m for ms in events.column("measures").to_pylist() for m in ms if m["captures"]]
    assert pq.read_table(tmp_path / "events" / "part-00000.parquet").to_pylist() == events.to_pylist()
    assert len(mapped) >= 1  # (a row the events file keeps, with its measures' maps)


def test_the_measure_only_rows_worked_out_once_per_batch(rules, tmp_path, monkeypatch):
    """A task with measured rows works out which rows are measure-only once per batch, in _batch from the rows'
    columns and their measures' counts (before the lists are made), and hands the flags to the events file
    (scanner.Kept): the flags are _measure_only of the batch made, on a real lab JobManager log."""
    import numpy as np
    from test_task_files import _task

    from flinkdoctor.scan import scanner

    calls = []
    measure_only = scanner._measure_only

    def counted(column):
        calls.append(1)
        return measure_only(column)

    with monkeypatch.context() as patched:
        patched.setattr(scanner, "_measure_only", counted)
        matcher, tasks, spec = _task(rules, tmp_path, "checkpoint-timeout.tar.gz", "standalonesession")
    found = [out for part in tasks[0] for out in scanner.scan_part(part, matcher.prefilter, matcher, True, True)]
    kept = [out for out in found if isinstance(out, scanner.Kept)]
    assert len(calls) == len(kept) >= 1  # (once per batch: not again for the events file)
    for out in kept:
        assert out.measure_only is not None
        again = scanner._measure_only(out.batch.column).to_numpy(zero_copy_only=False)
        assert out.measure_only.to_numpy(zero_copy_only=False).tolist() == again.tolist()
    flags = np.concatenate([out.measure_only.to_numpy(zero_copy_only=False) for out in kept])
    assert flags.any() and not flags.all()


def test_a_trigger_stamp_read_off_the_triggers_only():
    """_stamped reads the epoch and number of the triggers only (a production batch's completions are half its
    rows): per row, what reading every row gives where it is a trigger, nothing elsewhere."""
    import numpy as np
    import pyarrow as pa

    from flinkdoctor.scan.measured import _digits, _stamped

    rng = np.random.default_rng(18)
    pool = ["1772323201329", "0", "000", "12", "012", "", None, "1x", "٣", "9" * 19, "7"]
    epochs = pa.array([pool[i] for i in rng.integers(0, len(pool), 400)], pa.string())
    numbers = pa.array([pool[i] for i in rng.integers(0, len(pool), 400)], pa.string())
    trigger = rng.random(400) < 0.5
    epoch_digits, epoch_zero, epoch_null = _digits(epochs)  # (what Spark's casts say: the Spark test above)
    number_digits, number_canonical, number_null = _digits(numbers, canonical=True)
    every_stamped = ~epoch_null & ~number_null & epoch_digits & ~epoch_zero & number_digits & number_canonical
    every_unsure = ~((epoch_null | epoch_digits) & (number_null | number_digits))
    stamped, unsure = _stamped(epochs, numbers, trigger)
    assert stamped.tolist() == (every_stamped & trigger).tolist() and stamped.any()
    assert unsure.tolist() == (every_unsure & trigger).tolist() and unsure.any()
    assert [f.tolist() for f in _stamped(epochs, numbers, np.zeros(400, dtype=bool))] == [[False] * 400] * 2


def test_a_measures_kind_looked_up_by_its_position():
    """measured._of_kinds: per measure, whether its metric's kind is one of those wanted; a position outside the
    kinds (negative, or beyond them) is none of them."""
    import numpy as np

    from flinkdoctor.scan.measured import _of_kinds

    kinds = ("a", "b", "a", "c")
    metric = np.array([0, 1, 2, 3, 4, 9, -1, -2, -4, 2], dtype=np.int32)
    assert _of_kinds(metric, kinds, {"a"}).tolist() == [True, False, True] + [False] * 6 + [True]
    assert _of_kinds(metric, kinds, {"b", "c"}).tolist() == [False, True, False, True] + [False] * 6
    assert not _of_kinds(metric, kinds, set()).any()


def test_a_fixed_time_with_a_byte_beside_the_digits_is_not_read():
    """read_fixed: a byte just below or above the digits ('/', ':') in any field's place, or anything but the
    pattern's own byte in a literal's place, leaves the time unread; the digits' values are read."""
    import pyarrow as pa

    from flinkdoctor.scan.times import fixed_fields, read_fixed

    good = "2026-03-01 07:08:09,123"
    texts = [good]
    for at, char in enumerate(good):
        for other in ("/", ":", "0", "9", "-", " "):
            if other != char and not (char.isdigit() and other.isdigit()):
                texts.append(good[:at] + other + good[at + 1 :])
    texts.append(good.replace("07", "19"))
    times, read = read_fixed(pa.array(texts), *fixed_fields("yyyy-MM-dd HH:mm:ss,SSS"))
    assert read.tolist() == [True] + [False] * (len(texts) - 2) + [True]
    assert times[[0, -1]].astype("datetime64[ms]").astype(str).tolist() == [
        "2026-03-01T07:08:09.123",
        "2026-03-01T19:08:09.123",
    ]
