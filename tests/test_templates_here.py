"""The templates lap on the driver (unexplained.templates_of_files): the events table's files read by pyarrow,
grouped by message, masked, grouped by template, merged file by file, to the templates Spark's two shuffles give.
The unit tests check it against a brute-force grouping of the same rows; the Spark ones against collect_templates'
Spark path on random tables, and its ASCII masks against Java's regexes."""

from __future__ import annotations

import string
from datetime import datetime
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flinkdoctor.diagnosis import unexplained
from flinkdoctor.diagnosis.unexplained import (
    LEVEL_ORDER,
    MASKS,
    SEVERITY,
    Template,
    ascii_template,
    template_of,
    templates_of_files,
)
from flinkdoctor.safety.masking import mask
from flinkdoctor.scan.events import WARN_LEVELS
from flinkdoctor.sources.ingest import Manifest, Source

QUICK = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
SPARK = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

# pieces of messages: what the masks look for, near misses, and what Java and Python classes disagree on
FRAGMENTS = (
    "job ",
    "Job ",
    "0x1f",
    "deadbeef1",
    "0123456789abcdef0123456789abcdef",
    "10.0.0.1",
    ":8080",
    "/tmp/x.log",
    "hdfs://nn:8020/p",
    "a.b/c",
    "@1a2b3c4d",
    "3.14",
    "1,000",
    "42",
    "\u0663\u0664",  # Arabic-Indic digits: Python's \d, not Java's
    "\u00e9",
    "e\u0301",  # a non-spacing mark: Java's \b counts it a word character after a letter
    "\u8fde\u63a5",  # CJK letters: Java's \b (isLetterOrDigit), not its \w
    "\x1c",  # Python's \s, not Java's
    "\x0b",
    "\u00a0",
    "\u2003",
    "_",
    " ",
    "\t",
    ",",
    "(",
    "=",
    ":",
    "-",
    "x",
)
MESSAGES = st.one_of(st.none(), st.lists(st.sampled_from(FRAGMENTS), max_size=8).map("".join))
LEVELS = ("WARN", "WARNING", "ERROR", "FATAL", "SEVERE", "CRITICAL", "INFO", None)
LOGGERS = (None, "", "org.a.B", "org.\u00e9.X")
BLOCK_LINES = 100  # each range's lines: more than any first_rel drawn, so a source's events have distinct lines
SOURCES = {  # sid -> (bundle, fixed line); sid 3 is in no source nor range (with_file_lines: no base)
    0: (0, None),
    1: (0, None),
    2: (1, 1),  # a derived source: every event on its one line
    3: (1, None),
}


def manifest_and_blocks(tmp: Path) -> tuple[Manifest, dict[int, list[tuple[int, int]]]]:
    sources = tuple(
        Source(id=sid, path=f"s{sid}.log", kind="flink-jobmanager", line_offset=10 * sid, fixed_line=fixed)
        for sid, (_, fixed) in SOURCES.items()
        if sid != 3
    )
    blocks = {sid: [(0, BLOCK_LINES), (1000, BLOCK_LINES)] for sid in (0, 1, 2)}
    return Manifest(sources, tmp, None), blocks


def line_of(sid: int, block: int, first_rel: int) -> int:
    """with_file_lines' line, for the sources above."""
    if SOURCES[sid][1] is not None:
        return SOURCES[sid][1]
    if sid == 3:
        return first_rel
    return 10 * sid + (BLOCK_LINES if block else 0) + first_rel


@st.composite
def tables(draw: st.DrawFn, times: bool = True) -> tuple[list[list[dict[str, Any]]], list[tuple[int, int]]]:
    """Events in files (each a list of rows) and explained (sid, line) pairs. Times are few (ties) but for the
    derived source's events, which share a line: a tie in Spark's whole `order` is Spark's own choice."""
    pool = draw(st.lists(MESSAGES, min_size=1, max_size=6))
    places = draw(
        st.lists(
            st.tuples(st.sampled_from(sorted(SOURCES)), st.sampled_from([0, 1000]), st.integers(0, BLOCK_LINES - 1)),
            min_size=1,
            max_size=40,
            unique=True,
        )
    )
    files = draw(st.integers(1, 3))
    out: list[list[dict[str, Any]]] = [[] for _ in range(files)]
    explained = []
    for sid, block, rel in places:
        block = 0 if sid == 3 else block  # sid 3's lines are its first_rel: one range, distinct lines
        level = draw(st.sampled_from(LEVELS if times else [lv for lv in LEVELS if lv != "CRITICAL"]))
        if sid == 2:
            time = 1_700_000_000_000_000 + 2 * rel + (1 if block else 0)
        else:
            time = draw(st.one_of(st.none(), st.sampled_from([1_700_000_000_000_000, 1_700_000_000_000_007, -5])))
        row = {
            "sid": sid,
            "bundle": SOURCES[sid][0],
            "block": block,
            "first_rel": rel,
            "last_rel": rel,
            "level": level,
            "logger": draw(st.sampled_from(LOGGERS)),
            "message": draw(st.sampled_from(pool)),
            "host": draw(st.sampled_from([None, "h1", "h\u00e9"])),
            "head": draw(st.sampled_from([None, "", "head: secret=hunter2", "h\u00e9ad"])),
            "repeats": draw(st.sampled_from([1, 1, 2, 7, None])),
            "time": time,
            "ts": None,
        }
        out[draw(st.integers(0, files - 1))].append(row)
        if draw(st.integers(0, 4)) == 0:
            explained.append((sid, line_of(sid, block, rel)))
    return out, explained + [(0, 99_999)]


def write(folder: Path, files: list[list[dict[str, Any]]]) -> list[str]:
    """The rows as the scan's events files (every column of the stored schema; what is not given is null)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from flinkdoctor.scan.scanner import _schema

    schema = _schema().append(pa.field("time", pa.int64()))
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for n, rows in enumerate(files):
        columns = {f.name: pa.array([row.get(f.name) for row in rows], f.type) for f in schema}
        path = folder / f"part-{n:05d}.parquet"
        pq.write_table(pa.table(columns, schema=schema), path)
        paths.append(str(path))
    return paths


def at(micros: int | None) -> datetime | None:
    from pyspark.sql.types import TimestampType

    return TimestampType().fromInternal(micros) if micros is not None else None


def brute_force(files: list[list[dict[str, Any]]], explained: list[tuple[int, int]], cap: int) -> list[Template]:
    """The templates by the definition: every WARN+ event not explained, grouped by bundle, logger and masked
    message (template_of's masks with Java's classes: ascii_template, or a Java-like mask of the others); the
    count summed (None when every one is), the most severe level (of equals, the greater name), first and last
    time, the evidence of the earliest by (time known, time, sid, line, block, first_rel); the first `cap` of
    each bundle by (severity descending, count (None first), logger, template)."""
    gone = set(explained)
    groups: dict[tuple[int, str, str], list[dict[str, Any]]] = {}
    for rows in files:
        for row in rows:
            line = line_of(row["sid"], row["block"], row["first_rel"])
            if row["level"] not in WARN_LEVELS:
                continue
            if (row["sid"], line) in gone:
                continue
            key = (row["bundle"], row["logger"] or "", java_like(row["message"] or ""))
            groups.setdefault(key, []).append({**row, "line": line})
    chosen = []
    for bundle in sorted({b for b, _, _ in groups}):
        found = []
        for (b, logger, template), rows in groups.items():
            if b != bundle:
                continue
            counts = [r["repeats"] for r in rows if r["repeats"] is not None]
            times = [r["time"] for r in rows if r["time"] is not None]
            level = max((r["level"] for r in rows), key=lambda lv: (SEVERITY.get(lv, -1), lv))
            first = min(
                rows,
                key=lambda r: (r["time"] is None, r["time"] or 0, r["sid"], r["line"], r["block"], r["first_rel"]),
            )
            found.append((logger, template, level, sum(counts) if counts else None, times, first))
        found.sort(key=lambda f: (-SEVERITY.get(f[2], -1), f[3] is not None, f[3] or 0, f[0], f[1]))
        for logger, template, level, count, times, first in found[:cap]:
            chosen.append(
                Template(
                    logger=logger or None,
                    template=mask(template) or "",
                    level=level,
                    count=count,  # type: ignore[arg-type]
                    first=at(min(times, default=None)),
                    last=at(max(times, default=None)),
                    sid=first["sid"],
                    line=first["line"],
                    time=at(first["time"]),
                    host=first.get("host"),
                    text=mask(first.get("head")) or "",
                )
            )
    return chosen


def java_like(message: str) -> str:
    """A stand-in for Spark's masks of a non-ASCII message in the unit tests (the Spark tests use Spark's own)."""
    return ascii_template(message) if message.isascii() else "~" + ascii_template(message)


def stand_in(messages: list[str]) -> list[str]:
    assert all(not m.isascii() for m in messages), "only non-ASCII messages go to Spark"
    return [java_like(m) for m in messages]


def ordered(templates: list[Template]) -> list[Template]:
    return sorted(templates, key=lambda t: (t.sid in (2, 3), t.key))


@QUICK
@given(
    tables(),
    st.sampled_from([unexplained.MAX_TEMPLATES, 1, 2]),
    st.sampled_from([1, 2, unexplained.PENDING]),
    st.sampled_from([(1, 1), (3, 2), (unexplained.FILE_BATCH, unexplained.GROUPED)]),
)
def test_the_files_templates_are_the_definition_s(tmp_path_factory, drawn, cap, pending, sizes):
    """Merged over files, batches and groups of a file's events, with the non-ASCII messages masked a few at a
    time, any cap: what one grouping of all the rows gives."""
    files, explained = drawn
    folder = tmp_path_factory.mktemp("events")
    manifest, blocks = manifest_and_blocks(folder)
    batch, grouped = sizes
    with (
        mock.patch.object(unexplained, "MAX_TEMPLATES", cap),
        mock.patch.object(unexplained, "PENDING", pending),
        mock.patch.object(unexplained, "FILE_BATCH", batch),
        mock.patch.object(unexplained, "GROUPED", grouped),
    ):
        here = templates_of_files(write(folder, files), blocks, manifest, explained, stand_in)
    assert here is not None
    assert ordered(here) == ordered(brute_force(files, explained, cap))


def test_a_tie_in_spark_s_order_takes_the_scan_s_first_and_of_equal_severities_the_greater_name(tmp_path):
    """Where Spark's min_by and max_by meet a tie they take what they meet first; here the scan's order (block,
    first_rel) decides the evidence, and the name the level: one answer, run after run."""
    manifest, blocks = manifest_and_blocks(tmp_path)
    row = {"sid": 2, "bundle": 1, "logger": "L", "message": "same", "repeats": 1, "time": None, "host": "h"}
    rows = [
        {**row, "block": 1000, "first_rel": 1, "level": "SEVERE", "head": "later"},
        {**row, "block": 0, "first_rel": 5, "level": "CRITICAL", "head": "first"},
        {**row, "block": 0, "first_rel": 7, "level": "SEVERE", "head": "next"},
    ]
    for files in ([rows], [rows[::-1]], [[rows[2]], [rows[0], rows[1]]]):
        (found,) = templates_of_files(write(tmp_path / str(len(files)), files), blocks, manifest, [], stand_in) or []
        assert (found.text, found.level, found.line, found.count) == ("first", "SEVERE", 1, 3)
    assert LEVEL_ORDER[-1] == "FATAL" and LEVEL_ORDER.index("SEVERE") > LEVEL_ORDER.index("CRITICAL")


def test_a_raw_time_leaves_the_templates_to_spark(tmp_path):
    """A WARN+ event whose task left its raw `ts` has a time only Spark reads: None, Spark's way then; an INFO
    one's does not matter."""
    manifest, blocks = manifest_and_blocks(tmp_path)
    row = {"sid": 0, "bundle": 0, "block": 0, "logger": "L", "message": "m", "repeats": 1, "time": None}
    info = {**row, "first_rel": 1, "level": "INFO", "ts": "2026-11-27 10:00:00"}
    warn = {**row, "first_rel": 2, "level": "WARN"}
    assert templates_of_files(write(tmp_path / "a", [[info, warn]]), blocks, manifest, [], stand_in)
    raw = {**warn, "ts": "2026-11-27 10:00:00"}
    assert templates_of_files(write(tmp_path / "b", [[warn], [info, raw]]), blocks, manifest, [], stand_in) is None


def test_the_cache_of_templates_is_bounded_and_keeps_them_right(tmp_path):
    """The same message in many files is masked once while remembered; past CACHED the memory starts again."""
    manifest, blocks = manifest_and_blocks(tmp_path)
    row = {"sid": 0, "bundle": 0, "block": 0, "level": "WARN", "logger": "L", "repeats": 1, "time": 1}
    files = [[{**row, "first_rel": n, "message": f"job {n % 3} at /tmp/{n}"}] for n in range(9)]
    with mock.patch.object(unexplained, "CACHED", 2), mock.patch.object(unexplained, "ascii_template") as masked:
        masked.side_effect = ascii_template
        found = templates_of_files(write(tmp_path, files), blocks, manifest, [], stand_in) or []
    assert {(t.template, t.count) for t in found} == {("job <NUM> at <PATH>", 9)}
    assert masked.call_count >= 3


@pytest.mark.parametrize("message", ["failed {} here", "\u8fde\u63a5 {} failed"], ids=["ascii", "non-ascii"])
def test_the_files_templates_are_merged_in_time_linear_in_them(tmp_path, message):
    """Each file's templates wait, and are merged with those so far only once the waiting ones are as many: the
    rows grouped again stay a few times the rows read, however many files (one per scan task) a bundle has.
    Merged as each file came, 60 files of 40 distinct templates each grouped the rows again and again (files x
    templates: 77,960); the answer is the same either way. Non-ASCII messages, which wait grouped by message for
    Spark's masks (PENDING), are merged the same way, not as each file comes."""
    manifest, blocks = manifest_and_blocks(tmp_path)
    row = {"sid": 0, "bundle": 0, "block": 0, "level": "WARN", "logger": "L", "repeats": 1, "time": 1}
    words = [a + b + c for a in string.ascii_lowercase for b in string.ascii_lowercase for c in "mnpqrstvwxz"]
    files = [
        [{**row, "first_rel": n, "message": message.format(words[40 * f + n])} for n in range(40)] for f in range(60)
    ]
    grouped = []
    reduced = unexplained._reduced

    def counted(rows, keys):
        grouped.append(rows.num_rows)
        return reduced(rows, keys)

    with mock.patch.object(unexplained, "WAITING", 100), mock.patch.object(unexplained, "_reduced", counted):
        found = templates_of_files(write(tmp_path, files), blocks, manifest, [], stand_in) or []
    assert len(found) == 60 * 40 and {t.count for t in found} == {1}
    # each file's rows grouped twice in the file (by message, then by template), then merged a few times over
    assert sum(grouped) <= 6 * 60 * 40, sum(grouped)


def test_a_secret_in_a_warning_is_masked_in_its_template_and_its_evidence(tmp_path):
    """The driver's templates leave as Spark's did: the template and its evidence line through the masker."""
    manifest, blocks = manifest_and_blocks(tmp_path)
    row = {"sid": 0, "bundle": 0, "block": 0, "level": "WARN", "logger": "L", "repeats": 1, "time": 1}
    said = "login refused password=Pw-Canary-31 for svc"
    files = [[{**row, "first_rel": 1, "message": said, "head": f"WARN L - {said}"}]]
    (found,) = templates_of_files(write(tmp_path, files), blocks, manifest, [], stand_in) or []
    assert "Canary" not in found.template and "Canary" not in found.text
    assert found.template == "login refused password=****** for svc"


def test_python_s_own_classes_are_not_java_s():
    """Why the driver masks ASCII messages only, with re.ASCII: Python's \\d, \\w and \\b take the digits and
    letters of every script, its \\s the ASCII separators \\x1c-\\x1f; Java's (Spark's) do not."""
    assert template_of("at /a\x1cb") == "at <PATH>\x1cb" and ascii_template("at /a\x1cb") == "at <PATH>"
    assert template_of("id \u0663\u0664") == "id <NUM>"
    assert [name for name, _ in MASKS][-1] == "NUM"


# --- against Spark ------------------------------------------------------------------------------------------


def spark_templates(spark, messages: list[str]) -> list[str]:
    return unexplained._masked_in_spark(spark, messages)


@pytest.mark.spark
@SPARK
@given(
    st.lists(
        st.one_of(
            st.text(alphabet=st.characters(max_codepoint=127), max_size=60),
            st.lists(st.sampled_from([f for f in FRAGMENTS if f.isascii()] + list(string.printable)), max_size=12).map(
                "".join
            ),
        ),
        min_size=1,
        max_size=300,
    )
)
def test_ascii_masks_are_java_s(spark, messages):
    """On ASCII text, Python's regexes with re.ASCII give template_column's (Java's) templates."""
    assert [ascii_template(m) for m in messages] == spark_templates(spark, messages)


@pytest.mark.spark
def test_non_ascii_text_is_where_python_and_java_part(spark):
    """The cases that send a non-ASCII message to Spark: Java's \\b counts CJK letters and a mark after a letter
    as word characters (Python's ASCII \\b does not), Python's own \\d takes other scripts' digits."""
    messages = ["\u8fde\u63a510.0.0.1", "e\u0301deadbeef1", "id \u0663\u0664"]
    java = spark_templates(spark, messages)
    assert java == ["\u8fde\u63a5<NUM>", "e\u0301deadbeef<NUM>", "id \u0663\u0664"]
    assert [ascii_template(m) for m in messages] != java
    assert [template_of(m) for m in messages] != java


@pytest.mark.spark
@SPARK
@given(tables(times=False), st.sampled_from([unexplained.MAX_TEMPLATES, 2]))
def test_the_driver_s_templates_are_spark_s(spark, tmp_path_factory, drawn, cap):
    """collect_templates read by the driver (`stored`, a local master) against its Spark path, on random tables:
    non-ASCII text, nulls, ties of time, a capped window. (No two levels of one severity in a template: there
    Spark's max_by takes whichever it meets first.)"""
    from flinkdoctor.diagnosis.unexplained import collect_templates
    from flinkdoctor.scan.events import EventsResult

    files, explained = drawn
    folder = tmp_path_factory.mktemp("events")
    manifest, blocks = manifest_and_blocks(folder)
    write(folder, files)
    stored = EventsResult(str(folder), blocks, {})
    table = stored.table(spark)
    context = spark.sparkContext
    group = f"driver-{folder.name}"
    with mock.patch.object(unexplained, "MAX_TEMPLATES", cap):
        context.setJobGroup(group, "the driver's templates")
        try:
            here = collect_templates(table, blocks, manifest, explained, stored=stored)
        finally:
            context.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
        jobs = context.statusTracker().getJobIdsForGroup(group)
        there = collect_templates(table, blocks, manifest, explained)
    assert ordered(here) == ordered(there)
    non_ascii = any(not (row["message"] or "").isascii() for rows in files for row in rows)
    assert bool(jobs) <= non_ascii  # Spark runs the masks of non-ASCII messages only
