"""How the findings lap chooses each rule's and catalogue entry's evidence (diagnosis/findings.chosen_of_events):
each task keeps its matches' KEEP_PER_RULE earliest and latest per group over Arrow (`_choose`), the driver
chooses among those. It must choose exactly what one aggregation over every match chose before: the same counts
and the same instances, ties between events of the same time broken by place the same way."""

from __future__ import annotations

import random

import pytest

from conftest import DATA

ORDER_KEYS = ("sid", "block", "first_rel")


def _reference(rows: list[dict], by: tuple[str, ...], keep: int) -> tuple[dict, dict]:
    """Every row sorted in the documented order (time known, time, source, range, line), then per group its count
    and the keys of its first and last `keep`: what the choice must give, written the plain way."""
    groups: dict[tuple, list[dict]] = {}
    for row in sorted(rows, key=lambda r: (r["at"] is not None, r["at"] or 0, *(r[k] for k in ORDER_KEYS))):
        groups.setdefault(tuple(row[k] for k in by), []).append(row)
    counts = {group: len(members) for group, members in groups.items()}
    chosen = {
        group: {tuple(r[k] for k in ORDER_KEYS) for r in members[:keep] + members[-keep:]}
        for group, members in groups.items()
    }
    return counts, chosen


def _of(table, by: tuple[str, ...]) -> tuple[dict, dict]:
    counts: dict[tuple, int] = {}
    chosen: dict[tuple, set] = {}
    for row in table.to_pylist():
        group = tuple(row[k] for k in by)
        counts[group] = counts.get(group, 0) + row["cnt"]
        chosen.setdefault(group, set()).add(tuple(row[k] for k in ORDER_KEYS))
    return counts, chosen


@pytest.mark.parametrize("keep", [1, 2, 5])
def test_choice_over_parts_is_the_choice_over_every_match(keep):
    """Keys with many ties (a few distinct times, unknown times, the same time in several sources and ranges),
    several bundles and groups of every size: chosen in parts then merged, or all at once, each group gets the
    count and the first and last `keep` of the plain sort."""
    import pyarrow as pa

    from flinkdoctor.diagnosis.findings import _choose

    draw = random.Random(keep)
    rows = [
        {
            "bundle": draw.choice([0, 1, 2]),
            "rule": draw.choice(["checkpoint-expired", "job-restarting", "task-failed"][: draw.randint(1, 3)]),
            "sid": draw.randint(0, 3),
            "block": draw.choice([0, 134217728]),
            "first_rel": draw.randint(0, 40),
            "at": draw.choice([None, 1_700_000_000_000_000, 1_700_000_000_001_000, 1_700_000_000_001_000]),
            "cnt": 1,
        }
        for _ in range(3000)
    ]
    by = ("bundle", "rule")
    schema = pa.schema(
        [("bundle", pa.int32()), ("rule", pa.string()), ("sid", pa.int32()), ("block", pa.int64())]
        + [("first_rel", pa.int64()), ("at", pa.int64()), ("cnt", pa.int64())]
    )
    expected = _reference(rows, by, keep)
    assert max(expected[0].values()) > 2 * keep  # groups larger than what is kept of them
    whole = _choose(pa.Table.from_pylist(rows, schema), by, keep)
    parts = [_choose(pa.Table.from_pylist(rows[i::3], schema), by, keep) for i in range(3)]
    merged = _choose(pa.concat_tables(parts), by, keep)
    assert _of(whole, by) == expected
    assert _of(merged, by) == expected
    assert merged.num_rows == sum(min(n, 2 * keep) for n in expected[0].values())  # a row once, even when both


@pytest.mark.parametrize("chunks", [1, 3])
def test_dense_ranks_over_distinct_values_are_arrows_over_rows(chunks):
    """_choose_exactly ranks each group column over its distinct values (_dense_ranks), not its rows: the ranks
    are pc.rank's dense ones, nulls last, on strings (names first seen in no order), numbers and nulls; and the
    choice's rows come in the groups' order of their values, not the order the names were first seen."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from flinkdoctor.diagnosis.findings import _choose_exactly, _dense_ranks

    draw = random.Random(chunks)
    names = ["task-failed", "checkpoint-expired", None, "job-restarting", "Zeta", "été", ""]
    for values, kind in (
        ([draw.choice(names) for _ in range(600)], pa.string()),
        ([draw.choice([3, None, -1, 7, 0]) for _ in range(600)], pa.int64()),
        ([draw.choice([0.5, None, float("nan"), -0.0, 0.0]) for _ in range(600)], pa.float64()),  # (review17a)
    ):
        step = len(values) // chunks
        column = pa.chunked_array([pa.array(values[k : k + step], kind) for k in range(0, len(values), step)])
        expected = pc.rank(column, "ascending", tiebreaker="dense").to_numpy()
        found = _dense_ranks(column)
        assert found.dtype == expected.dtype and found.tolist() == expected.tolist()
    rows = pa.table(
        {
            "rule": ["task-failed", "checkpoint-expired", "task-failed", "job-restarting"],
            "sid": [0, 0, 0, 0],
            "block": [0, 0, 0, 0],
            "first_rel": [4, 3, 2, 1],
            "at": pa.array([1, 1, 1, 1], pa.int64()),
            "cnt": pa.array([1, 1, 1, 1], pa.int64()),
        }
    )
    chosen = _choose_exactly(rows, ("rule",), 5)
    assert chosen.column("rule").to_pylist() == ["checkpoint-expired", "job-restarting", "task-failed", "task-failed"]
    assert chosen.column("first_rel").to_pylist() == [3, 1, 2, 4] and chosen.column("cnt").to_pylist() == [1, 1, 2, 0]


def test_no_match_chooses_nothing():
    import pyarrow as pa

    from flinkdoctor.diagnosis.findings import _choose

    empty = pa.table(
        {"rule": pa.array([], pa.string()), "sid": pa.array([], pa.int32()), "cnt": pa.array([], pa.int64())}
    )
    assert _choose(empty, ("rule",), 3).num_rows == 0


BUNDLES = [
    DATA / "lab" / "1.20.3" / "network-buffers.tar.gz",
    DATA / "lab" / "2.1.1" / "heap-oom.tar.gz",
    DATA / "lab" / "1.20.3" / "checkpoint-timeout.tar.gz",
    DATA / "incidents" / "d01" / "bundle",
    DATA / "seeds" / "003",
]


def _measured():
    """The measured rows the pipeline has the tasks write: with them, a task writes the times it reads itself."""
    from flinkdoctor.analytics import load_metrics
    from flinkdoctor.analytics.metrics import measured_rows

    return measured_rows(load_metrics())


def _every_key(events):
    """A row per (event, rule) match and per (event, entry) hit, `kind` "rule" or "entry" and `name`: every key
    the choice chooses among, exploded the plain way (the product sends one row per event instead)."""
    from pyspark.sql import functions as F

    def named(kind: str, field: str):
        return lambda item: F.struct(F.lit(kind).alias("kind"), item[field].alias("name"))

    both = F.concat(F.transform("matches", named("rule", "rule")), F.transform("entries", named("entry", "entry")))
    found = events.where((F.size("matches") > 0) | (F.size("entries") > 0))
    return found.select("sid", "bundle", "block", "first_rel", "time", F.explode(both).alias("g")).select(
        "sid", "bundle", "block", "first_rel", "time", "g.kind", "g.name"
    )


def _aggregated(found, by: list[str], keep: int) -> tuple[dict, dict]:
    """The choice as main made it before (one Spark aggregation: min_by/max_by with `keep` per group), the
    reference the new choice must equal."""
    from pyspark.sql import functions as F

    key = F.struct("sid", "block", "first_rel")
    order = F.struct(F.col("time").isNotNull(), "time", "sid", "block", "first_rel")
    groups = found.groupBy(*by).agg(
        F.count(F.lit(1)).alias("cnt"), F.min_by(key, order, keep).alias("e"), F.max_by(key, order, keep).alias("l")
    )
    counts, chosen = {}, {}
    for g in groups.collect():
        group = tuple(g[name] for name in by)
        counts[group] = g.cnt
        chosen[group] = {(k.sid, k.block, k.first_rel) for k in [*g.e, *g.l]}
    return counts, chosen


def test_bundles_together_choose_what_one_aggregation_chose(spark, rules, tmp_path, monkeypatch):
    """Real recordings (two lab versions, an incident, a seed) scanned together as a fleet is: per bundle, rule
    and catalogue entry, the counts and chosen instances equal the one-aggregation choice, for a few kept and
    for the product's KEEP_PER_RULE; the recordings hold ties (matches of one group at one time)."""
    from pyspark.sql import functions as F

    from flinkdoctor.analytics import load_metrics
    from flinkdoctor.diagnosis import findings as fd
    from flinkdoctor.pipeline import combine
    from flinkdoctor.scan.events import build_events
    from flinkdoctor.scan.matcher import build_matcher
    from flinkdoctor.sources.ingest import ingest

    manifests = [ingest([b], tmp_path / f"b{i}") for i, b in enumerate(BUNDLES)]
    combined, _, bundle_of = combine(manifests)
    matcher = build_matcher(rules, tuple(m.line for m in load_metrics()))
    events = build_events(
        spark, combined, tmp_path, matcher.prefilter, matcher=matcher, bundle_of=bundle_of, measured=_measured()
    )
    table = events.table(spark)
    found = _every_key(table)
    by = ["bundle", "kind", "name"]
    tied = found.groupBy(*by, "time").count().where("count > 1 AND time IS NOT NULL").count()
    assert tied > 0
    assert {row.bundle for row in found.select("bundle").distinct().collect()} == set(range(len(BUNDLES)))
    for keep in (1, 3, fd.KEEP_PER_RULE):
        monkeypatch.setattr(fd, "KEEP_PER_RULE", keep)
        rows, groups = fd.chosen_of_events(table, ("rule", "entry"))
        chosen: dict[tuple, set] = {}
        for row in rows:
            chosen.setdefault(tuple(row[k] for k in by), set()).add((row["sid"], row["block"], row["first_rel"]))
        counts = {tuple(g[k] for k in by): g["cnt"] for g in groups}
        assert (counts, chosen) == _aggregated(found, by, keep), keep
    assert found.where(F.col("kind") == "entry").count() > 0 and sum(counts.values()) == found.count()
    # some of these recordings' times only Spark reads (their tasks kept the raw `ts`): the driver leaves the
    # choice to Spark, and still reads the chosen events in detail itself
    assert fd.chosen_of_files(events.files(spark), ("rule", "entry")) is None
    monkeypatch.setattr(fd, "FEW", 0)
    counted = (events.stats["matched"], events.stats["catalogued"])
    by_spark = fd.collect_evidence(table, events.blocks, combined, *counted)
    assert fd.collect_evidence(table, events.blocks, combined, *counted, stored=events) == by_spark


def _three_copies(spark, rules, tmp_path):
    """A real JobManager log (lab checkpoint-timeout, 1.20.3) copied into three files, scanned as the pipeline
    scans: its manifest and events."""
    from conftest import lab_logs_of
    from flinkdoctor.analytics import load_metrics
    from flinkdoctor.scan.events import build_events
    from flinkdoctor.scan.matcher import build_matcher
    from flinkdoctor.sources.ingest import ingest

    log = next(data for name, data in lab_logs_of("checkpoint-timeout").items() if "standalonesession" in name)
    bundle = tmp_path / "bundle"
    for copy in ("a", "b", "c"):
        (bundle / copy).mkdir(parents=True)
        (bundle / copy / "flink-jobmanager.log").write_bytes(log)
    manifest = ingest([bundle], tmp_path / "work")
    matcher = build_matcher(rules, tuple(m.line for m in load_metrics()))
    work = tmp_path / "work"
    return manifest, build_events(spark, manifest, work, matcher.prefilter, matcher=matcher, measured=_measured())


def test_ties_at_the_cut_are_broken_by_place(spark, rules, tmp_path, monkeypatch):
    """A real JobManager log (lab checkpoint-timeout, 1.20.3) copied into three files: every match has two twins
    at the same time in the other files, so with 1 or 2 kept per group the cut falls inside the ties, and only
    the documented order (time, then source, range, line) says which twin is chosen. The choice from the events'
    name lists (chosen_of_events) must equal the plain sort of every match; the reversed tie order must not."""
    from flinkdoctor.diagnosis import findings as fd

    manifest, events = _three_copies(spark, rules, tmp_path)
    table = events.table(spark)
    every: dict[tuple, list] = {}
    for kind, found in (("rule", fd.match_events(table, detail=False)), ("entry", fd.catalogue_events(table, False))):
        for row in found.collect():
            every.setdefault((row.bundle, kind, row[kind]), []).append(
                (row.time is not None, row.time or 0, row.sid, row.block, row.first_rel)
            )
    assert len({sid for keys in every.values() for _, _, sid, _, _ in keys}) == 3
    for keep in (1, 2):
        monkeypatch.setattr(fd, "KEEP_PER_RULE", keep)
        rows, groups = fd.chosen_of_events(table, ("rule", "entry"))
        assert fd.chosen_of_files(events.files(spark), ("rule", "entry")) == (rows, groups)
        chosen: dict[tuple, set] = {}
        for row in rows:
            group = (row["bundle"], row["kind"], row["name"])
            chosen.setdefault(group, set()).add((row["sid"], row["block"], row["first_rel"]))
        assert {(g["bundle"], g["kind"], g["name"]): g["cnt"] for g in groups} == {g: len(k) for g, k in every.items()}
        plain, reversed_ties = {}, {}
        for group, keys in every.items():
            ordered = sorted(keys)
            plain[group] = {k[2:] for k in ordered[:keep] + ordered[-keep:]}
            flipped = sorted(keys, key=lambda k: (k[0], k[1], -k[2], k[3], k[4]))
            reversed_ties[group] = {k[2:] for k in flipped[:keep] + flipped[-keep:]}
        assert chosen == plain, keep
        assert reversed_ties != plain  # the cut splits ties: a wrong tie order would choose other events


@pytest.mark.parametrize("few", [True, False])
def test_evidence_read_by_the_driver_is_spark_s(spark, rules, tmp_path, monkeypatch, few):
    """A real JobManager log (lab checkpoint-timeout) in three files, its matches and hits tied in time: the
    evidence with the driver reading the table's files (the choice and the events in detail, `stored`) equals,
    in the same order, the evidence Spark read, with every match and hit read whole (`few`) and with instances
    chosen (FEW 0): the findings, the counts and the catalogue's hits, lines and event texts included. Each
    file is read for detail a row at a time, so that some of its batches hold no wanted event (a lab file
    read 2,048 rows at a time lost every rule's earliest instances to them: see EventsResult.rows)."""
    from flinkdoctor.diagnosis import findings as fd

    manifest, events = _three_copies(spark, rules, tmp_path)
    monkeypatch.setattr(fd, "KEEP_PER_RULE", 2)
    monkeypatch.setattr(fd, "DETAIL_BATCH", 1)
    if not few:
        monkeypatch.setattr(fd, "FEW", 0)
    counted = (events.stats["matched"], events.stats["catalogued"])
    assert counted[0] > 0 and counted[1] > 0
    by_spark = fd.collect_evidence(events.table(spark), events.blocks, manifest, *counted)
    by_driver = fd.collect_evidence(events.table(spark), events.blocks, manifest, *counted, stored=events)
    assert by_driver == by_spark
    findings, counts, hits = by_driver
    assert findings and all(f.event_text for f in findings) and hits
    assert sum(counts.values()) == counted[0]
    assert (len(findings) == counted[0]) == few  # every match read whole, or instances chosen


def test_rows_the_driver_read_reach_spark_whole(spark, rules, tmp_path):
    """Rows the driver read come to Spark whole whatever their batches: Spark (4.3) stops reading the Arrow stream
    of createDataFrame at its first empty batch, so a table whose batches include one (a file's batches filtered
    to the wanted rows) must still give every row, in order."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    _, events = _three_copies(spark, rules, tmp_path)
    read = pq.read_table(events.files(spark)[0])
    batch = read.combine_chunks().to_batches()[0]
    assert batch.num_rows > 3
    table = pa.Table.from_batches([batch.slice(0, 3), batch.slice(3, 0), batch.slice(3)])
    got = events.rows(spark, table).select("sid", "block", "first_rel").collect()
    assert [tuple(row) for row in got] == list(zip(*(read.column(k).to_pylist() for k in ORDER_KEYS), strict=True))


def _stored_files(folder, draw: random.Random, files: int) -> list[dict]:
    """Parquet files shaped as the scan's events table (the columns the driver reads of it), events with ties in
    time, unknown times, no or null lists and a name twice in one event; returns every event as a dict."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    match = pa.struct([("rule", pa.string()), ("captures", pa.map_(pa.string(), pa.string())), ("idx", pa.int32())])
    schema = pa.schema(
        [("sid", pa.int32()), ("bundle", pa.int32()), ("block", pa.int64()), ("first_rel", pa.int64())]
        + [("last_rel", pa.int64()), ("matches", pa.list_(match))]
        + [("entries", pa.list_(pa.struct([("entry", pa.string()), ("idx", pa.int32())])))]
        + [("ts", pa.string()), ("level", pa.string()), ("host", pa.string()), ("text", pa.string())]
        + [("time", pa.int64())]
    )
    events = []
    for number in range(files):
        rows = []
        for rel in range(draw.randint(0, 60)):
            names = draw.choice([None, [], ["task-failed"], ["task-failed", "task-failed"], ["job-restarting"]])
            rows.append(
                {
                    "sid": number,
                    "bundle": draw.choice([0, 1]),
                    "block": 0,
                    "first_rel": rel,
                    "last_rel": rel,
                    "matches": None if names is None else [{"rule": n, "captures": [], "idx": 0} for n in names],
                    "entries": draw.choice([None, [], [{"entry": "flink:1", "idx": 0}]]),
                    "ts": None,
                    "level": "ERROR",
                    "host": None,
                    "text": f"event {number}/{rel}",
                    "time": draw.choice([None, 1_700_000_000_000_000, 1_700_000_000_001_000]),
                }
            )
        pq.write_table(pa.Table.from_pylist(rows, schema), folder / f"part-{number:05d}.parquet", row_group_size=7)
        events += rows
    return events


@pytest.mark.parametrize("keep", [1, 3])
def test_the_drivers_read_of_the_files_chooses_and_details_exactly(tmp_path, monkeypatch, keep):
    """Without Spark: chosen_of_files over several files (each chosen from, merged as it comes) gives every
    group's exact count and first and last `keep` (the plain sort of _reference); rows_of_files gives exactly the
    events wanted, or every one holding a match or a hit; an event whose time only Spark reads (a raw `ts`)
    leaves the choice to Spark (None)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from flinkdoctor.diagnosis import findings as fd

    monkeypatch.setattr(fd, "KEEP_PER_RULE", keep)
    monkeypatch.setattr(fd, "DETAIL_BATCH", 5)
    events = _stored_files(tmp_path, random.Random(keep), 4)
    files = sorted(str(p) for p in tmp_path.glob("*.parquet"))
    flat = _matches_flat(events)
    counts, chosen = _reference(flat, ("bundle", "kind", "name"), keep)
    assert max(counts.values()) > 2 * keep
    rows, groups = fd.chosen_of_files(files, ("rule", "entry"))
    assert {(g["bundle"], g["kind"], g["name"]): g["cnt"] for g in groups} == counts
    assert _chosen_by_group(rows) == chosen
    place = {tuple(e[k] for k in ORDER_KEYS): e for e in events}
    wanted = set(random.Random(7).sample(sorted(place), 25))
    read = fd.rows_of_files(files, wanted).to_pylist()
    assert sorted(tuple(r[k] for k in ORDER_KEYS) for r in read) == sorted(wanted)
    assert all(r["text"] == place[tuple(r[k] for k in ORDER_KEYS)]["text"] for r in read)
    held = {p for p, e in place.items() if e["matches"] or e["entries"]}
    assert sorted(tuple(r[k] for k in ORDER_KEYS) for r in fd.rows_of_files(files, None).to_pylist()) == sorted(held)
    raw = pq.read_table(files[0]).to_pylist()
    held_here = next(i for i, e in enumerate(raw) if e["matches"])
    raw[held_here] |= {"time": None, "ts": "2026-11-27 10:00:00,000"}
    pq.write_table(pa.Table.from_pylist(raw, pq.read_schema(files[0])), files[0])
    assert fd.chosen_of_files(files, ("rule", "entry")) is None


def _chosen_by_group(rows) -> dict[tuple, set]:
    """The chosen rows' places per (bundle, kind, name), as _reference gives its choice."""
    found: dict[tuple, set] = {}
    for row in rows:
        found.setdefault((row["bundle"], row["kind"], row["name"]), set()).add(tuple(row[k] for k in ORDER_KEYS))
    return found


def _matches_flat(events: list[dict]) -> list[dict]:
    """One row per (event, rule matched or catalogue entry hit), as the choice ranks them."""
    return [
        {"bundle": e["bundle"], "kind": kind, "name": name, "at": e["time"], **{k: e[k] for k in ORDER_KEYS}}
        for e in events
        for kind, names in (
            ("rule", [m["rule"] for m in e["matches"] or []]),
            ("entry", [h["entry"] for h in e["entries"] or []]),
        )
        for name in names
    ]


@pytest.mark.parametrize("merged", [1, 2, 3, 8])
def test_the_files_choices_are_merged_a_few_at_a_time(tmp_path, monkeypatch, merged):
    """chosen_of_files merges its files' choices MERGED_FILES at a time, not one by one (each merge chooses over
    everything merged so far again): every way, the same counts and instances as one choice over every match,
    and a merge per MERGED_FILES files."""
    from flinkdoctor.diagnosis import findings as fd

    monkeypatch.setattr(fd, "KEEP_PER_RULE", 2)
    monkeypatch.setattr(fd, "MERGED_FILES", merged)
    events = _stored_files(tmp_path, random.Random(11), 7)
    files = sorted(str(p) for p in tmp_path.glob("*.parquet"))
    flat = _matches_flat(events)
    counts, chosen = _reference(flat, ("bundle", "kind", "name"), 2)
    merges = []
    choose = fd._choose
    monkeypatch.setattr(fd, "_choose", lambda table, *args: merges.append(table.num_rows) or choose(table, *args))
    rows, groups = fd.chosen_of_files(files, ("rule", "entry"))
    assert {(g["bundle"], g["kind"], g["name"]): g["cnt"] for g in groups} == counts
    assert _chosen_by_group(rows) == chosen
    assert len(merges) == len(files) + -(-len(files) // merged)  # (a choice per file, then the merges)


def test_the_driver_reads_the_wanted_events_of_many_ranges_in_a_file(tmp_path):
    """rows_of_files finds the events wanted in files whose rows are of several sources and ranges, interleaved:
    exactly those, each of its own (source, range)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from flinkdoctor.diagnosis import findings as fd

    draw = random.Random(5)
    events = _stored_files(tmp_path, draw, 3)
    files = sorted(str(p) for p in tmp_path.glob("*.parquet"))
    everything = []
    for number, path in enumerate(files):
        table = pq.read_table(path)
        n = table.num_rows
        table = table.set_column(0, "sid", pa.array([draw.randint(0, 2) for _ in range(n)], pa.int32()))
        table = table.set_column(2, "block", pa.array([draw.randint(0, 3) for _ in range(n)], pa.int64()))
        table = table.set_column(
            3, "first_rel", pa.array([10 * number + draw.randint(0, 4) for _ in range(n)], pa.int64())
        )
        keys = list(zip(*(table.column(k).to_pylist() for k in ORDER_KEYS), strict=True))
        first = sorted(
            {key: k for k, key in reversed(list(enumerate(keys)))}.values()
        )  # (one event per place, a file's own)
        table = table.take(pa.array(first, pa.int64()))
        pq.write_table(table, path, row_group_size=7)
        everything += table.to_pylist()
    assert len(events) > 30 and len({(e["sid"], e["block"]) for e in everything}) > 8
    place = {tuple(e[k] for k in ORDER_KEYS): e for e in everything}
    for size in (1, 9, len(place) // 2):
        wanted = set(draw.sample(sorted(place), size)) | {(9, 9, 9)}  # (a place no file holds)
        read = fd.rows_of_files(files, wanted).to_pylist()
        assert sorted(tuple(r[k] for k in ORDER_KEYS) for r in read) == sorted(wanted - {(9, 9, 9)})
        assert all(r["text"] == place[tuple(r[k] for k in ORDER_KEYS)]["text"] for r in read)
