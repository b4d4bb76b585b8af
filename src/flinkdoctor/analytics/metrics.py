"""Metrics: named line regexes (knowledge/metrics.yaml) whose every match is measured, not sampled.

A finding keeps a few instances as evidence; a trend or a percentile needs every completed checkpoint. The metrics'
literals join the rules' in the prefilter (so the INFO lines they read reach the events table), and the scan
tasks run their regexes on each line of the events that hold them (matcher.py); Spark keeps, for the driver, one
line per checkpoint.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import cache
from importlib import resources
from typing import Any, TypeVar

from ..errors import RuleError
from ..knowledge.regexes import checked
from ..knowledge.rulebook import Signature, required_literals
from ..knowledge.validation import line_of, read_yaml, schema, schema_problems
from ..scan.events import EventsResult, block_offsets, file_line
from ..scan.measured import MeasuredRows, times_left
from ..sources.ingest import Manifest

METRICS_FILE = "knowledge/metrics.yaml"
_Item = TypeVar("_Item")


@dataclass(frozen=True)
class Metric:
    id: str
    measures: str  # what a match means: checkpoint-completed, storage-close, config-property, ...
    line: str  # the regex as written (Java syntax)
    pattern: re.Pattern = field(compare=False, hash=False, repr=False)

    @property
    def signature(self) -> Signature:
        """The metric as a signature over the whole event text: its literals go to the prefilter."""
        return Signature(text=self.line)


@dataclass(frozen=True)
class Measure:
    """One matched line: the metric, where it is, its time and its captures."""

    metric: str
    measures: str
    sid: int
    line: int
    time: datetime | None
    host: str | None
    text: str
    captures: dict[str, str]
    event_job: str | None = None  # a job id elsewhere in the same event (a chk-N path), when the line names none


@cache
def load_metrics() -> tuple[Metric, ...]:
    """The metrics of the package, checked against their schema; a bad file stops the run with file:line."""
    import jsonschema

    path = resources.files("flinkdoctor").joinpath(METRICS_FILE)
    problems: list[str] = []
    data, node = read_yaml(METRICS_FILE, path.read_text("utf-8"), problems)
    if data is not None:
        problems += schema_problems(jsonschema.Draft202012Validator(schema("metrics")), data, node, METRICS_FILE)
    metrics: list[Metric] = []
    if not problems:
        for n, item in enumerate(data["metrics"]):
            where = f"{METRICS_FILE}:{line_of(node, ['metrics', n, 'line'])}: {item['id']}"
            pattern, problem = checked(item["line"])
            if problem:
                problems.append(f"{where}: {problem}")
            if pattern is None:
                continue
            if not required_literals(Signature(text=item["line"])):
                problems.append(f"{where}: the regex implies no literal, so the prefilter would pass every event")
            metrics.append(Metric(item["id"], item["measures"], item["line"], pattern))
        ids = [m.id for m in metrics]
        problems += [
            f"{METRICS_FILE}: metric {i!r} is defined twice" for i in sorted({i for i in ids if ids.count(i) > 1})
        ]
    if problems:
        raise RuleError("\n".join(problems))
    return tuple(metrics)


def _columns(table) -> list[list]:
    """The Arrow table's columns as Python lists; times as naive UTC datetimes, as Spark's rows give them."""
    import pyarrow as pa

    columns = []
    for column in table.columns:
        if pa.types.is_timestamp(column.type):
            column = column.cast(pa.timestamp(column.type.unit))
        columns.append(column.to_pylist())
    return columns


FEW = 20_000  # up to this many measured lines go to the driver whole; more are reduced in Spark first


def extract(
    events,
    metrics: tuple[Metric, ...],
    blocks: dict,
    manifest: Manifest,
    measured: int | None = None,
    stored: EventsResult | None = None,
) -> Measured:
    """The measured lines the analytics read: the scan tasks measured every line (matcher.py). When they counted
    more than FEW (`measured`), Spark keeps what `_reduced` says of each kind, so the driver holds one line per
    checkpoint, not one per log line; fewer are read whole (the analytics merge them the same way, without the
    cost of a first aggregation in a fresh JVM). `stored`, the events table as the scan wrote it (the times the
    tasks read, and the raw `ts` of the others):
    a line's time is then parsed only for the lines whose time is read; the scan tasks may have written the
    measures' rows themselves (`measured_rows`), which are then read as they are, and are then the only place
    of the lines only a metric measures (scanner._events_rows): every path reads them there (_measured)."""

    import pyarrow as pa

    if not metrics or measured == 0:
        return Measured()
    many = texts = None
    if measured is not None and measured <= FEW:
        frame, time = _measured(events, stored)
        table = frame.select("sid", "block", "first_rel", time.alias("time"), "host", "m.*").toArrow()
    else:
        texts = _scanned(stored, measured)
        if texts is not None:  # the rows the scan tasks wrote: no Spark job
            table, many = _read_split(texts, metrics, blocks, manifest)
        else:
            frame = _reduced(events, metrics, stored)
            table, many, texts = _through_parquet(frame, events, metrics, blocks, manifest, stored)
        at = table.schema.get_field_index("line")  # the few other rows' lines, read back from the file
        table = table.drop_columns(["line"]).add_column(at, "line", pa.array(texts.read(table.column("line"))))
    offsets = block_offsets(blocks)
    sources = {s.id: s for s in manifest.sources}
    found = Measured()
    found.checkpoints = many
    found.texts = texts if many is not None else None
    for sid, block, first_rel, time, host, number, idx, line, captures, job in zip(*_columns(table), strict=True):
        source, metric = sources[sid], metrics[number]
        found.append(
            Measure(  # (the many: _split_columnar)
                metric.id,
                metric.measures,
                sid,
                file_line(source, offsets, block, first_rel + idx),
                time,
                host or source.host,
                line,
                _in_group_order(metric, captures),
                job,
            )
        )
    found.sort(key=lambda m: (m.sid, m.line))
    return found


def _in_group_order(metric: Metric, captures) -> dict[str, str]:
    """A measure's captures as a dict, in the order of its regex's groups, as the scan gives them (the tasks'
    rows give a trigger's and a completion's as columns: CAPTURED's order)."""
    found = dict(captures or ())
    order = metric.pattern.groupindex
    return dict(sorted(found.items(), key=lambda item: order.get(item[0], len(order))))


class Measured(list):
    """The measures (a list of Measure), and, when there were many, the checkpoints' triggers and completions as
    columns instead (`checkpoints`, columns.Columns, or Windows of them; checkpoints.py reads them in bulk): a
    long run has millions.
    Their lines' text stays in the file Spark wrote (`texts`): only the few a report shows are read back."""

    checkpoints = None
    texts: Texts | None = None

    def by_bundle(self, bundle_of: dict[int, int], bundles: int) -> list[Measured]:
        """The measures of each bundle diagnosed together (source id -> bundle), the columns split as well."""
        import numpy as np

        if bundles == 1:  # (diagnose: one bundle, its measures as they are, no pass over the columns)
            return [self]
        split = [Measured() for _ in range(bundles)]
        if isinstance(self.checkpoints, Windows):  # (a fleet's: every window at once, split by source as before)
            self.checkpoints = self.checkpoints.whole()
        for measured in split:
            measured.texts = self.texts
        for measure in self:
            split[bundle_of[measure.sid]].append(measure)
        if self.checkpoints is not None:
            owner_of = np.zeros(max(bundle_of, default=0) + 1, dtype=np.int64)
            owner_of[np.fromiter(bundle_of, np.int64, len(bundle_of))] = np.fromiter(bundle_of.values(), np.int64)
            columns = self.checkpoints
            triggers, completions = owner_of[columns.t_sid], owner_of[columns.c_sid]
            for b, measured in enumerate(split):
                measured.checkpoints = columns.where(triggers == b, completions == b)
        return split


COLUMNAR = ("checkpoint-trigger", "checkpoint-completed")  # the kinds a long run has millions of
# the kinds _reduced writes unreduced, for the driver to reduce (None: every kind, and Spark runs no aggregate;
# (): Spark reduces all, the driver finds nothing more)
WRITTEN: tuple[str, ...] | None = None


CAPTURED = ("job", "checkpoint", "epoch_ms", "duration_ms", "bytes")  # the triggers' and completions' captures


def _split_columnar(table, metrics: tuple[Metric, ...], blocks: dict, manifest: Manifest):
    """(the rows of other kinds, the triggers and completions as typed columns: kind, job, checkpoint, time,
    epoch_ms, duration_ms, bytes, sid, line (in the file), host, text). The captures of the triggers and
    completions are the string columns `_reduced` writes (`c_job`, ...); the strings kept (metric, kind, job,
    host) are dictionary-encoded, so a long run's millions of rows cost their numbers and a code each."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    side = _sides(metrics)[table.column("metric").to_numpy()]  # (no string made per row for its kind)
    bulk = side >= 0
    grouped = "bundle" in table.schema.names  # (the file's rows are not reduced yet: the keys go along)
    rest, rows = table.filter(pa.array(~bulk)), table
    mixed = pa.array(bulk) if rest.num_rows else None  # (a long run's batch is only triggers and completions)
    rest = rest.drop_columns([f"c_{key}" for key in CAPTURED])  # (bundle: _reduce_rest)

    def only(values):
        """A column of every row as the triggers' and completions' only: the batch's few other rows are left out
        of the columns made, not out of the batch (a copy of its every string column, ~40 % of this split)."""
        return values if mixed is None else values.filter(mixed)

    def capture(key: str):
        return rows.column(f"c_{key}")

    sources = {s.id: s for s in manifest.sources}
    kept = slice(None) if mixed is None else np.flatnonzero(bulk)  # (the lines of the triggers and completions only)
    sid = rows.column("sid").to_numpy().astype(np.int64)[kept]
    staged = _range_starts(blocks, sid, rows.column("block").to_numpy().astype(np.int64)[kept])
    staged += rows.column("first_rel").to_numpy()[kept] + rows.column("idx").to_numpy()[kept]
    line = np.empty(len(sid), dtype=np.int64)
    order = np.argsort(sid, kind="stable")  # per source, not per row: arrays of lines (each row visited once)
    ids, first = np.unique(sid[order], return_index=True)
    for source_id, at in zip(ids.tolist(), np.split(order, first)[1:], strict=True):  # (first[0] is 0)
        source = sources[source_id]
        if source.fixed_line:
            line[at] = source.fixed_line
        elif source.line_map is not None:
            line[at] = [source.file_line(int(n)) for n in staged[at].tolist()]
        else:
            line[at] = source.line_offset + staged[at]
    host_of: list[str | None] = [None] * (max(sources, default=0) + 1)
    for source in sources.values():
        host_of[source.id] = source.host
    hosts = only(rows.column("host"))  # (every source's host unknown: the line's or none, no per-row coalesce)
    if any(host is not None for host in host_of):
        hosts = pc.coalesce(hosts, pa.array(host_of, pa.string()).take(pa.array(sid)))
    job = only(capture("job"))  # (a long run's every trigger and completion names its job: no per-row coalesce)
    if job.null_count:
        job = pc.coalesce(job, only(rows.column("job")), pa.scalar("unknown job"))
    metric = rows.column("metric").combine_chunks()
    columns = pa.table(
        {  # (the strings kept encoded from the rows kept: their dictionaries hold only those rows' values)
            "metric": pa.DictionaryArray.from_arrays(only(metric), [m.id for m in metrics]),
            "kind": pa.DictionaryArray.from_arrays(pa.array(side[bulk], pa.int32()), list(COLUMNAR)),
            "job": pc.dictionary_encode(job),
            "checkpoint": only(_numbers(capture("checkpoint"), pa.int64(), int)),
            "time": only(rows.column("time")),
            "epoch_ms": only(_numbers(capture("epoch_ms"), pa.int64(), int)),
            "duration_ms": only(_numbers(capture("duration_ms"), pa.float64(), float)),
            "bytes": only(_numbers(capture("bytes"), pa.int64(), int)),
            "sid": only(rows.column("sid")),
            "line": pa.array(line),
            "host": pc.dictionary_encode(hosts),
            "text": only(rows.column("line")),  # (a row of the measures' file: Texts reads the line)
        }
    )
    if grouped:  # what _reduced groups and orders by (columns.Builder reduces by them)
        for name, values in (
            ("bundle", rows.column("bundle")),
            ("group_checkpoint", capture("checkpoint")),
            ("block", rows.column("block")),
            ("rel", pc.add(rows.column("first_rel"), rows.column("idx"))),
            ("untimed", pc.is_null(capture("duration_ms"))),
        ):
            columns = columns.append_column(name, only(values))
    return rest, columns


def _range_starts(blocks: dict, sid, block):
    """Per row (numpy arrays of source ids and ranges), the lines of its file before its range (as
    block_offsets gives them; 0 for a range it does not list), looked up in bulk: a long run has millions."""
    import numpy as np

    offsets = block_offsets(blocks)
    keys = np.fromiter((s << 32 | b for s, b in offsets), np.int64, len(offsets))
    values = np.fromiter(offsets.values(), np.int64, len(offsets))
    order = np.argsort(keys)
    keys, values = keys[order], values[order]
    wanted = sid << 32 | block
    at = np.minimum(np.searchsorted(keys, wanted), max(len(keys) - 1, 0))
    found = (keys[at] == wanted) if len(keys) else np.zeros(len(wanted), bool)
    return np.where(found, values[at] if len(keys) else 0, 0).astype(np.int64)


def _numbers(values, kind, read):
    """Captured digits as numbers: by Arrow, or, where it cannot read one (digits of another script, which
    Python's int() and float() read, as the analytics do per measure), by Python; null what neither reads."""
    import pyarrow as pa

    try:
        return values.cast(kind)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        out = []
        for value in values.to_pylist():
            try:
                number = read(value) if value else None
            except ValueError:
                number = None
            if isinstance(number, int) and not -(2**63) <= number < 2**63:  # more digits than a long holds
                number = None
            out.append(number)
        return pa.array(out, kind)


def measured_rows(metrics: tuple[Metric, ...]) -> MeasuredRows:
    """What the scan tasks need to write `_reduced`'s rows themselves (scan/measured.py): its kinds, the triggers'
    and completions' captured columns, the trigger that stamps its own epoch (it needs no time, nor a duration
    or size)."""
    kinds = tuple(m.measures for m in metrics)
    return MeasuredRows("", kinds, COLUMNAR, "checkpoint-trigger", CAPTURED, ("duration_ms", "bytes"))


def _scanned(stored: EventsResult | None, measured: int | None) -> Texts | None:
    """The measures' rows as the scan tasks wrote them, when they wrote every row (`measured`, as they counted)
    and left no row's time to Spark (scan/measured.py); None otherwise: Spark writes them (`_reduced`). The
    tests' reference (WRITTEN a tuple) is Spark's aggregate: Spark writes them then too."""
    from ..scan.taskfile import filesystem_of

    if stored is None or stored.measured is None or measured is None or WRITTEN is not None:
        return None
    texts = Texts(*filesystem_of(stored.measured))
    rows = sum(file.metadata.num_rows for file in texts.files)
    if not texts.files or rows != measured or times_left([file.metadata for file in texts.files]):
        return None
    return texts


def _through_parquet(
    frame, events, metrics: tuple[Metric, ...], blocks: dict, manifest: Manifest, stored: EventsResult | None
):
    """(the rows of other kinds, the triggers and completions as columns (_split_columnar), the file's Texts):
    the frame written by Spark beside the events table and read here by pyarrow, a batch at a time, each batch
    split as it is read: a long run measures millions of checkpoints, which collected through the driver's JVM
    would fill its heap, and read whole would hold every row's strings at once. The `line` column holds each
    row's position instead of its text: the text stays in the file (Texts)."""

    from ..scan.taskfile import filesystem_of

    # the events table's folder: the scan's (its tasks may have written no file: every event only measured)
    table = stored.path.rstrip("/") if stored is not None else _parent(min(events.inputFiles()))
    out = _parent(table) + "/measures-by-spark.parquet"  # (beside the tasks' rows)
    frame.write.mode("overwrite").option("parquet.block.size", ROW_GROUP_BYTES).parquet(out)
    filesystem, path = filesystem_of(out.removeprefix("file://") if out.startswith("file:///") else out)
    texts = Texts(filesystem, path)
    return (*_read_split(texts, metrics, blocks, manifest), texts)


def _parent(path: str) -> str:
    """The folder a path (or a URI) is in."""
    return path[: path.rstrip("/").rfind("/")]


def _read_split(texts: Texts, metrics: tuple[Metric, ...], blocks: dict, manifest: Manifest):
    """The measures' file read a batch at a time, each batch split (_split_columnar) as it is read, its `line`
    the row's position: memory holds one batch's strings and the compact columns kept (columns.Columns), not the
    whole file, nor the keys `_reduced` groups by: the few rows that may share a group are read again for theirs
    (columns.Builder.shared). Past WINDOW_ROWS triggers and completions, when the file's row groups can be cut
    between jobs, the columns are not read here but a window of jobs at a time (Windows) by the analysis."""
    schema = texts.files[0].schema_arrow  # (Spark writes a file even for no rows)
    columns = [c for c in schema.names if c not in ("line", "ts")]  # (`ts`: the tasks' rows', for Spark)
    at, known = schema.names.index("line"), (metrics, blocks, manifest)
    plan = Plan.of(texts, metrics)
    keyed = "bundle" in schema.names
    if len(plan.windows) > 1:
        own = [c for c in columns if not c.startswith("c_")]  # (the triggers' and completions' captures: not read)
        rest = _read_batches(texts, own, at, known, None, keyed, plan.others)[0]  # (the groups holding any)
        return rest, Windows(texts, known, plan)
    return _read_columns(texts, known, plan.sizes, None, keyed)


def _read_columns(
    texts: Texts,
    known: tuple,
    sizes: tuple[int, int],
    groups: list[int] | None,
    keyed: bool,
    apart: _Apart | None = None,
):
    """(the rows of other kinds, or None when `groups` are given; the triggers and completions of the row groups
    `groups` (default: all) as columns.Columns): `sizes`, how many triggers and completions they hold; `apart`:
    the carried jobs' rows go to its builder instead (Plan), and `sizes` do not count them."""
    from .columns import Builder, give_back

    schema = texts.files[0].schema_arrow
    columns = [c for c in schema.names if c not in ("line", "ts")]
    at = schema.names.index("line")
    rest, many = _read_batches(texts, columns, at, known, Builder(*sizes), keyed, groups, apart)
    shared = many.shared() if keyed else {}
    if shared:  # a checkpoint's lines read twice, a job's numbers counted again: those rows by their keys
        many.reduce_shared(shared, _shared_rows(texts, known[0], shared, groups, apart))
    del shared
    give_back()
    return rest, many.columns()


def _sides(metrics: tuple[Metric, ...]):
    """Per metric (numpy, by its number), 0 for a trigger, 1 for a completion, -1 for another kind."""
    import numpy as np

    return np.array([COLUMNAR.index(m.measures) if m.measures in COLUMNAR else -1 for m in metrics], np.int8)


WINDOW_ROWS = 1 << 20  # triggers and completions past which the analysis reads them a window of jobs at a time
CARRIED_SHARE = 8  # the jobs that straddle the windows' cuts hold at most WINDOW_ROWS // CARRIED_SHARE rows (Plan)


@dataclass
class Plan:
    """The windows the measures' file's triggers and completions are read in: runs of its row groups (those that
    hold any), each closed at the last cut before it would pass WINDOW_ROWS rows (else at the first after it),
    so that each job is analysed whole from one window. A cut is where no job has rows on both sides, or where
    the jobs that do hold few rows: those jobs are `carried`, their rows kept apart while every window is read
    and analysed last, as one window of their own (CARRIED_SHARE). A production bundle's JobManager logs
    are a job each, one after another in the file, but a few jobs' completions are named in every log (an
    incident's lines copied, a job the JobManager runs beside): without carrying them no cut was found, and
    the driver held every log's columns at once. Jobs whose many rows are interleaved across the file (nowhere
    to cut) make one window: the whole file, read as before."""

    sizes: tuple[int, int]  # triggers, completions in the file
    windows: list[tuple[list[int], tuple[int, int]]]  # (row groups, their triggers and completions not carried)
    jobs: set[str] = field(default_factory=set)  # the jobs of the triggers and completions (several windows)
    others: list[int] = field(default_factory=list)  # the row groups holding rows of other kinds
    carried: list[str] = field(default_factory=list)  # the jobs read beside every window, analysed last
    carried_sizes: tuple[int, int] = (0, 0)  # their triggers and completions

    @staticmethod
    def of(texts: Texts, metrics: tuple[Metric, ...]) -> Plan:
        import numpy as np

        sides = _sides(metrics)
        counts = np.zeros((len(texts.groups), 2), dtype=np.int64)  # per row group its triggers, completions
        others = []
        for g, (file, index) in enumerate(texts.groups):
            side = sides[file.read_row_group(index, columns=["metric"]).column(0).to_numpy()]
            counts[g] = np.count_nonzero(side == 0), np.count_nonzero(side == 1)
            others += [g] if counts[g].sum() < len(side) else []
        sizes = (int(counts[:, 0].sum()), int(counts[:, 1].sum()))
        held = [g for g in range(len(counts)) if counts[g].any()]
        if sum(sizes) <= WINDOW_ROWS:
            return Plan(sizes, [(held, sizes)], others=others)
        rows = _JobRows.of(texts, sides, held)
        carried = np.zeros(len(rows.names), dtype=np.bool_)
        size = counts.sum(axis=1)
        cuts: list[int] = []  # the last row group of each window
        n, window, found = 0, 0, None  # (found: the last place the window can be cut, and who it would carry)
        while n < len(held):
            window += int(size[held[n]])
            if n == len(held) - 1:
                cuts.append(held[n])
                break
            across = rows.across(held[n], carried)
            found = (n, across) if across is not None else found
            if window + int(size[held[n + 1]]) > WINDOW_ROWS and found is not None:
                n, across = found  # (the groups after it are read again for the next window)
                carried |= across
                cuts.append(held[n])
                window, found = 0, None
            n += 1
        windows = []
        for first, last in zip([-1, *cuts[:-1]], cuts, strict=True):
            groups = [g for g in held if first < g <= last]
            windows.append((groups, rows.sizes(groups, ~carried)))
        jobs = {rows.names[j] for j in np.flatnonzero(rows.total)}
        names = [rows.names[j] for j in np.flatnonzero(carried)]
        return Plan(sizes, windows, jobs, others, names, rows.sizes(held, carried))


@dataclass
class _JobRows:
    """Per row group (of those read) and job, its triggers and completions, as four columns: a row per group,
    job and side that has any. The job as _split_columnar names it (the captured one, else the event's, else
    "unknown job"), read as Parquet's dictionary codes: no string made per row."""

    names: list[str]
    group: Any  # numpy int64 each
    job: Any
    side: Any
    count: Any
    first: Any = None  # per job, its first and last row group, and its rows
    last: Any = None
    total: Any = None

    @staticmethod
    def of(texts: Texts, sides, held: list[int]) -> _JobRows:
        import numpy as np
        import pyarrow.compute as pc
        import pyarrow.parquet as pq

        known: dict[str, int] = {}
        found: list[tuple] = []
        coded = {}
        for g in held:
            file, index = texts.groups[g]
            if id(file) not in coded:
                name = texts.names[texts.files.index(file)]
                coded[id(file)] = pq.ParquetFile(
                    name, filesystem=texts.filesystem, read_dictionary=["job", "c_job"], pre_buffer=False
                )
            table = coded[id(file)].read_row_group(index, columns=["metric", "job", "c_job"])
            owner = np.full(table.num_rows, -1, dtype=np.int64)
            for column in ("job", "c_job"):  # (the captured job, read last, wins)
                start = 0
                for chunk in table.column(column).chunks:
                    codes = np.array([known.setdefault(v, len(known)) for v in chunk.dictionary.to_pylist()] + [-1])
                    mapped = codes[pc.fill_null(chunk.indices, len(codes) - 1).to_numpy(zero_copy_only=False)]
                    named = mapped >= 0
                    owner[start : start + len(chunk)][named] = mapped[named]
                    start += len(chunk)
            owner[owner < 0] = known.setdefault("unknown job", len(known))
            side = sides[table.column("metric").to_numpy()]
            counted = np.bincount(owner[side >= 0] * 2 + side[side >= 0], minlength=2 * len(known))
            keys = np.flatnonzero(counted)  # (a count per job and side: no sort of the group's rows)
            found.append((np.full(len(keys), g, dtype=np.int64), keys // 2, keys % 2, counted[keys]))
        group, job, side, count = (np.concatenate(column) for column in zip(*found, strict=True))
        rows = _JobRows(list(known), group, job, side, count)
        rows.first = np.full(len(known), np.iinfo(np.int64).max, dtype=np.int64)
        rows.last = np.full(len(known), -1, dtype=np.int64)
        np.minimum.at(rows.first, job, group)
        np.maximum.at(rows.last, job, group)
        rows.total = np.bincount(job, weights=count, minlength=len(known)).astype(np.int64)
        return rows

    def across(self, g: int, carried):
        """The jobs (a mask) with rows on both sides of a cut after row group `g`, not `carried` already; None
        when they and the carried ones hold more than WINDOW_ROWS // CARRIED_SHARE: no cut there."""
        across = (self.first <= g) & (self.last > g) & ~carried
        if int(self.total[across].sum()) + int(self.total[carried].sum()) > WINDOW_ROWS // CARRIED_SHARE:
            return None
        return across

    def sizes(self, groups: list[int], jobs) -> tuple[int, int]:
        """The triggers and completions of the row groups `groups` of the jobs `jobs` (a mask)."""
        import numpy as np

        picked = np.isin(self.group, groups) & jobs[self.job]
        return int(self.count[picked & (self.side == 0)].sum()), int(self.count[picked & (self.side == 1)].sum())


class Windows:
    """A long run's triggers and completions read a window of jobs at a time (Plan), as columns.Columns: the
    analysis takes each window's jobs and lets its columns go before it reads the next."""

    def __init__(self, texts: Texts, known: tuple, plan: Plan) -> None:
        self.texts, self.known, self.plan = texts, known, plan
        self.jobs = plan.jobs
        self.keyed = "bundle" in texts.files[0].schema_arrow.names

    def __iter__(self) -> Iterator:
        """Each window's columns in order, read when asked (what the window before freed given back first: one
        window held at a time), then the carried jobs' (Plan), set apart while the others were read: with
        their groups' keys (columns.Builder `keyed`), as few as they are, and reduced by them at the end."""
        import pyarrow as pa

        from .columns import Builder, give_back

        plan = self.plan
        apart = None
        if plan.carried:
            apart = _Apart(pa.array(plan.carried, pa.string()), Builder(*plan.carried_sizes, keyed=self.keyed))
        for groups, sizes in plan.windows:
            give_back()
            yield _read_columns(self.texts, self.known, sizes, groups, self.keyed, apart)[1]
        if apart is not None:
            give_back()
            yield apart.builder.columns()

    def whole(self):
        """Every window's columns as one columns.Columns (bundles diagnosed together: split by their sources)."""
        groups = [g for window, _ in self.plan.windows for g in window]
        return _read_columns(self.texts, self.known, self.plan.sizes, groups, self.keyed)[1]


@dataclass
class _Apart:
    """The carried jobs (Plan.carried) and the builder their rows go to while the windows are read."""

    jobs: Any  # an Arrow array of their names
    builder: Any  # columns.Builder

    def members(self, names):
        """Per row of a column of job names (numpy), whether it is a carried job's."""
        import pyarrow.compute as pc

        from .columns import _encoded

        encoded = _encoded(names)
        member = pc.is_in(encoded.dictionary, value_set=self.jobs).to_numpy(zero_copy_only=False)
        return member[pc.fill_null(encoded.indices, 0).to_numpy(zero_copy_only=False)]

    def split(self, kept, many) -> None:
        """The rows of `kept` (a table of _split_columnar's columns) added to `many`, the carried jobs' to the
        builder: the few copied, not the others."""
        import pyarrow as pa

        member = self.members(kept.column("job"))
        if not member.any():
            many.add(kept)
            return
        self.builder.add(kept.filter(pa.array(member)))
        many.add(kept, only=~member)


SHARED_KEYS = ("metric", "bundle", "c_checkpoint", "c_duration_ms", "block", "first_rel", "idx")


def _shared_rows(
    texts: Texts,
    metrics: tuple[Metric, ...],
    shared: dict,
    groups: list[int] | None = None,
    apart: _Apart | None = None,
) -> dict:
    """Per side ("t", "c"), a table of the groups' keys (the columns columns.Builder._group_keys reads, as
    _split_columnar makes them) of the triggers or completions at the positions `shared` lists
    (columns.Builder.shared: positions among the side's rows as read, of the row groups `groups`, default all),
    in that order: the file read again, only the keys' columns, and only those rows kept; the rows of the jobs
    `apart` holds are not among the side's rows counted."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    side_of = _sides(metrics)
    wanted = [shared.get("t", np.zeros(0, np.int64)), shared.get("c", np.zeros(0, np.int64))]
    seen = [0, 0]
    found: dict[int, list] = {0: [], 1: []}
    named = SHARED_KEYS if apart is None else (*SHARED_KEYS, "job", "c_job")
    for _, batch in texts.batches(named, BATCH * 4, groups):
        side = side_of[batch.column("metric").to_numpy(zero_copy_only=False)]
        if apart is not None:  # (the job as _split_columnar names it)
            owner = pc.coalesce(batch.column("c_job"), batch.column("job"), pa.scalar("unknown job"))
            side = np.where(apart.members(owner), -1, side)
        for s in (0, 1):
            rows = np.flatnonzero(side == s)
            position = seen[s] + np.arange(len(rows))
            seen[s] += len(rows)
            if len(wanted[s]):
                hit = np.minimum(np.searchsorted(wanted[s], position), len(wanted[s]) - 1)
                picked = rows[wanted[s][hit] == position]
                if len(picked):
                    found[s].append(pa.Table.from_batches([batch]).take(pa.array(picked)))
    keys = {}
    for s, name in ((0, "t"), (1, "c")):
        if not found[s]:  # (a side with no shared row: nothing to reduce)
            continue
        rows = pa.concat_tables(found[s])
        keys[name] = pa.table(
            {
                "checkpoint": _numbers(rows.column("c_checkpoint"), pa.int64(), int),
                "group_checkpoint": rows.column("c_checkpoint"),
                "bundle": rows.column("bundle"),
                "block": rows.column("block"),
                "rel": pc.add(rows.column("first_rel"), rows.column("idx")),
                "untimed": pc.is_null(rows.column("c_duration_ms")),
            }
        )
    return keys


def _read_batches(
    texts: Texts,
    columns: list[str],
    at: int,
    known: tuple,
    many,
    keyed: bool,
    groups: list[int] | None = None,
    apart: _Apart | None = None,
):
    """(the rows of other kinds, reduced, or None when only the row groups `groups` of a window are read; `many`
    with the triggers and completions of every batch added). `many` None: the other kinds' rows only (`columns`
    without the triggers' and completions' captures, which are not decoded), of the row groups `groups` (those
    Plan found holding any: a session cluster's file has none, and its every row would be decoded for them).
    `apart`: the carried jobs' triggers and completions go to its builder, not to `many` (Plan)."""
    import numpy as np
    import pyarrow as pa

    from .columns import give_back

    metrics = known[0]
    sides, schema = _sides(metrics), texts.files[0].schema_arrow
    rests: list | None = [] if groups is None or many is None else None
    held = carried = 0  # rows of other kinds held, of which the groups' winners so far
    pool = pa.default_memory_pool()
    for n, (start, batch) in enumerate(_ahead(texts.batches(columns, BATCH, groups))):
        rows = pa.array(np.arange(start, start + batch.num_rows, dtype=np.int64))
        table = pa.Table.from_batches([batch]).add_column(at, "line", rows)
        if many is None:
            table = _others(table, sides, schema)
        rest, kept = _split_columnar(table, *known)
        if rests is not None:
            rests.append(rest)
            held += rest.num_rows
            if keyed and held >= max(BATCH, 2 * carried):  # a day of declines: memory holds groups, not lines
                rests = [_reduce_rest(pa.concat_tables(rests), metrics, keyed=True)]
                held = carried = rests[0].num_rows
        if many is not None:
            if apart is None:
                many.add(kept)
            else:
                apart.split(kept, many)
        del batch, table, kept, rest
        if n % RELEASED == RELEASED - 1:  # (Arrow's allocator keeps decoded batches' pages: they would add up)
            pool.release_unused()
    give_back()
    if rests is None:
        return None, many
    if not rests:  # no rows: the empty table of the file's schema
        empty = schema.empty_table().select(columns)
        if many is None:
            empty = _others(empty.add_column(at, "line", pa.array([], pa.int64())), sides, schema)
        else:
            empty = empty.add_column(at, "line", pa.array([], pa.int64()))
        rests.append(_split_columnar(empty, *known)[0])
    rest = pa.concat_tables(rests)
    return (_reduce_rest(rest, metrics) if keyed else rest), many


def _ahead(items: Iterator[_Item]) -> Iterator[_Item]:
    """`items` in order, the next one made by a thread while the caller works on this one: Parquet's decoding
    of the next batch (which lets go of the GIL) overlaps the split of this one (Arrow's and numpy's kernels),
    on a second core that Spark leaves idle meanwhile. One item ahead: one more batch held."""
    from concurrent.futures import ThreadPoolExecutor

    def following() -> tuple[_Item] | tuple[()]:
        """The next item as a 1-tuple, () past the last."""
        for item in items:
            return (item,)
        return ()

    with ThreadPoolExecutor(1, thread_name_prefix="flinkdoctor-read-ahead") as reader:
        coming = reader.submit(following)
        while got := coming.result():  # (an error reading is raised here)
            coming = reader.submit(following)
            yield got[0]


def _others(table, sides, schema):
    """The rows of kinds other than the triggers and completions, with the captures' columns (unread: theirs
    are null) as nulls of the file's types."""
    import pyarrow as pa

    table = table.filter(pa.array(sides[table.column("metric").to_numpy(zero_copy_only=False)] < 0))
    for key in CAPTURED:
        field = schema.field(f"c_{key}")
        table = table.append_column(field, pa.nulls(table.num_rows, field.type))
    return table


def _reduce_rest(table, metrics: tuple[Metric, ...], *, keyed: bool = False):
    """The rows of kinds other than the triggers and completions, one per group of `_reduced`, the one its
    aggregate keeps (`min_by` of the same order; no two rows tie: each is a line of its own), in the order read,
    without the `bundle` column (`keyed`: with it, to be reduced again with later rows: the winners of the rows
    read so far and the later rows give the winners of all). Spark wrote them unreduced: an aggregate over them
    alone made Spark read every measured event a second time; the driver reduces them as it reads them."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not table.num_rows:
        return table if keyed else table.drop_columns(["bundle"])
    kinds = [m.measures for m in metrics]
    whole, firsts = table, _firsts_in_bulk(table, metrics)
    if firsts is not None:  # the other rows only, each with its place in the table
        firsts, others = firsts
        table = table.take(pa.array(others))
    time = table.column("time")
    micros = pc.cast(pc.cast(time, pa.timestamp("us", time.type.tz), safe=False), pa.int64()).to_pylist()
    columns = ("bundle", "metric", "captures", "job", "sid", "block", "first_rel", "idx")
    rows = zip(*(table.column(name).to_pylist() for name in columns), micros, strict=True)
    best: dict[tuple, tuple] = {}
    placed = enumerate(rows) if firsts is None else zip(others.tolist(), rows, strict=True)
    for at, (bundle, metric, captures, job, sid, block, first_rel, idx, micro) in placed:
        kind, captured = kinds[metric], dict(captures or ())
        if kind in CHECKPOINT_KINDS or kind in ("checkpoint-trigger", "storage-close"):
            owner = captured.get("job")
            owner = owner if owner is not None else job if job is not None else ""
            group: tuple = (bundle, kind, owner, captured.get("checkpoint"))
            first = int(captured.get("duration_ms") is None) if kind != "checkpoint-trigger" else 0
        elif kind == "config-property":
            value = captured.get("value")
            group = (bundle, kind, captured.get("key") or "", (value or "").strip(" "))  # (Spark's trim: spaces)
            first = micro if micro is not None else -(2**63)
        else:
            group, first = (bundle, kind), 0
        if kind == "checkpoint-trigger":  # (the last line; a trigger is a column, here only if a test says so)
            order = (first, -sid, -block, -(first_rel + idx))
        else:
            order = (first, sid, block, first_rel + idx)
        have = best.get(group)
        if have is None or order < have[0]:
            best[group] = (order, at)
    chosen = [at for _, at in best.values()] + ([] if firsts is None else firsts.tolist())
    kept = whole.take(pa.array(sorted(chosen), pa.int64()))
    return kept if keyed else kept.drop_columns(["bundle"])


def _firsts_in_bulk(table, metrics: tuple[Metric, ...]):
    """(the rows _reduce_rest keeps of the groups of its kinds that need no Python per row, the places of the
    table's other rows), both numpy, or None when there are none, or a key column holds a null (the loop's way
    then: None compares only there). Found by one sort: a checkpoint's end or timed storage close grouped by
    job (captured, else the event's, else none) and checkpoint as captured, the one with a duration first; where
    checkpoints are stored grouped by kind; then file order, ties to the first read. A lab run logs a failure or
    a storage line per checkpoint, most of its other measures, which made a loop over Python rows (the loop
    keeps the triggers, which go by last line, and the configuration's properties)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    ends = (*CHECKPOINT_KINDS, "storage-close")
    looped = ("checkpoint-trigger", "config-property")
    kinds = [m.measures for m in metrics]
    way = np.array([1 if k in ends else 0 if k in looped else 2 for k in kinds] + [0], np.int8)  # 2: by kind alone
    metric = pc.fill_null(table.column("metric"), len(metrics)).to_numpy(zero_copy_only=False)
    bulk = way[metric] > 0
    keys = ("bundle", "sid", "block", "first_rel", "idx")
    if not bulk.any() or any(table.column(name).null_count for name in keys):
        return None
    rows = np.flatnonzero(bulk)
    taken = table.take(pa.array(rows))
    bundle, sid, block, first_rel, idx = (
        taken.column(name).to_numpy(zero_copy_only=False).astype(np.int64) for name in keys
    )
    kind = np.unique(np.array(kinds), return_inverse=True)[1][metric[rows]]
    ended = way[metric[rows]] == 1  # (grouped by job and checkpoint as well)
    captures = taken.column("captures")

    def captured(key: str):
        return pc.map_lookup(captures, pa.scalar(key), "last")  # (dict(captures): the last of a key given twice)

    owner = pc.coalesce(captured("job"), taken.column("job"), pa.scalar(""))
    codes = [_codes(owner), _codes(captured("checkpoint"))]
    owner_code, number_code = (np.where(ended, code, -1) for code in codes)
    untimed = pc.is_null(captured("duration_ms")).to_numpy(zero_copy_only=False)
    first = np.where(ended, untimed, False).astype(np.int8)
    group = (bundle, kind, owner_code, number_code)
    order = np.lexsort((first_rel + idx, block, sid, first, *reversed(group)))  # (stable: ties to the first read)
    same = np.ones(len(rows), dtype=np.bool_)
    for values in group:
        ordered = values[order]
        same[1:] &= ordered[1:] == ordered[:-1]
    same[0] = False
    return rows[order][~same], np.flatnonzero(~bulk)


def _codes(values):
    """A string column's values as numbers (numpy), equal where the strings are, null one of its own."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    encoded = pc.dictionary_encode(values, null_encoding="encode")
    if isinstance(encoded, pa.ChunkedArray):
        encoded = encoded.combine_chunks()
    return encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)


BATCH = 65_536  # rows of the measures' file read at a time
RELEASED = 4  # batches read between two returns of Arrow's freed pages (a row group's worth)
ROW_GROUP_BYTES = 8 << 20  # the measures' file's row groups: Texts reads a group's lines to show one of them
TEXT_BATCH = 16_384  # lines decoded at a time when Texts reads them back


class Texts:
    """The measured lines' text, left in the Parquet file Spark wrote (one row per measure, in the order read):
    a long run's millions of completions need their text only where a report shows one as evidence."""

    def __init__(self, filesystem, path: str):
        import pyarrow.parquet as pq
        from pyarrow import fs

        found = filesystem.get_file_info(fs.FileSelector(path, recursive=False))
        self.filesystem = filesystem
        self.names = sorted(f.path for f in found if f.is_file and f.path.endswith(".parquet"))
        # (pre_buffer: each file would keep its last row group's column chunks, held for the run: a task's MBs)
        self.files = [pq.ParquetFile(name, filesystem=filesystem, pre_buffer=False) for name in self.names]
        self.groups = [(file, g) for file in self.files for g in range(file.num_row_groups)]  # in the order read
        sizes = [file.metadata.row_group(g).num_rows for file, g in self.groups]
        self._starts = [0]
        for size in sizes:
            self._starts.append(self._starts[-1] + size)

    def batches(self, columns: Sequence[str], size: int, groups: list[int] | None = None):
        """(the row, in the order read, of its first row; a batch of `columns`) of the row groups `groups`
        (positions in `self.groups`, ascending; default every one), in order."""
        runs: list[tuple[Any, int, list[int]]] = []  # (file, its first row, row groups in it one after another)
        for g in range(len(self.groups)) if groups is None else groups:
            file, index = self.groups[g]
            if runs and runs[-1][0] is file and runs[-1][2][-1] == index - 1:
                runs[-1][2].append(index)
            else:
                runs.append((file, self._starts[g], [index]))
        for file, start, indexes in runs:
            for batch in file.iter_batches(batch_size=size, row_groups=indexes, columns=columns):
                yield start, batch
                start += batch.num_rows

    def read(self, rows) -> list[str | None]:
        """The text of each row (positions as read, any order, an Arrow or numpy array): each row group that
        holds one is read once, its `line` column only, a batch at a time up to the last row wanted in it, so
        memory holds one batch's lines (a row group's decoded lines are tens of MB)."""
        import numpy as np
        import pyarrow as pa

        pool = pa.default_memory_pool()
        rows = np.asarray(rows, dtype=np.int64)
        out: list[str | None] = [None] * len(rows)
        if not len(rows):
            return out
        group = np.searchsorted(np.asarray(self._starts), rows, side="right") - 1
        order = np.argsort(group, kind="stable")
        cuts = np.flatnonzero(np.diff(group[order])) + 1
        for chunk in np.split(order, cuts):
            g = int(group[chunk[0]])
            file, index = self.groups[g]
            wanted = rows[chunk] - self._starts[g]  # (positions in the group)
            ranked = np.argsort(wanted, kind="stable")
            ordered, start = wanted[ranked], 0
            for batch in file.iter_batches(batch_size=TEXT_BATCH, row_groups=[index], columns=["line"]):
                low, high = np.searchsorted(ordered, [start, start + batch.num_rows])
                picked = ranked[low:high]
                taken = batch.column(0).take(pa.array(wanted[picked] - start)).to_pylist()
                for k, text in zip(chunk[picked].tolist(), taken, strict=True):
                    out[k] = text
                start += batch.num_rows
                if start > ordered[-1]:  # (the group's later rows: not decoded)
                    break
            pool.release_unused()
        return out


CHECKPOINT_KINDS = ("checkpoint-completed", "checkpoint-expired", "checkpoint-declined", "checkpoint-failed")


def _reduced(events, metrics: tuple[Metric, ...], stored: EventsResult | None = None):
    """One measured line per group, the first in the group's order:

    - a trigger: one per job and checkpoint, the last line (a later trigger of the same number wins);
    - a checkpoint's end (completed, expired, declined, failed) and a timed storage close: one per job, checkpoint
      and kind, a line that gives the duration first, then file order;
    - a configuration property: one per key and value, the earliest;
    - where checkpoints are stored (a chk-N path, the memory backend): the first line of each.
    The checkpoint analytics merge these per checkpoint as they would every line (checkpoints._merge). Every
    group is within one bundle (the events' `bundle`), so bundles diagnosed together never merge.

    Spark writes every row as it is (WRITTEN None), and the driver reduces them by these keys and order while it
    reads them: the triggers and completions into its typed columns (columns.Builder: one sort of numbers), the
    other kinds a batch at a time (_reduce_rest). A long run has one trigger and one completion per checkpoint,
    so Spark's aggregate reduced nothing there (`min_by` over a struct sorts every row, in the tasks and after
    the shuffle), and an aggregate over the other kinds alone read every measured event a second time. The
    aggregate below (WRITTEN a tuple: the kinds written, Spark reducing the others) is the reference the tests
    hold the driver's reduction to.

    A line's time is parsed from its raw text by its layout's pattern, the costliest part of a row; a trigger
    that stamps its own epoch (every Flink trigger line) needs none. With `stored` the rows are read from the
    scan's own table and each time parsed after the explode, where it is read (events.table parses every
    event's before), or from the rows the tasks wrote, where they left a time (_measured).
    """
    from pyspark.sql import functions as F

    kind = F.create_map(*[F.lit(x) for n, m in enumerate(metrics) for x in (n, m.measures)])[F.col("m.metric")]
    captures = F.col("m.captures")
    job = F.coalesce(captures["job"], F.col("m.job"), F.lit(""))
    key = F.coalesce(captures["key"], F.lit(""))
    value = F.trim(F.coalesce(captures["value"], F.lit("")))
    group = (
        F.when(
            kind.isin("checkpoint-trigger", *CHECKPOINT_KINDS, "storage-close"),
            F.concat_ws("\0", kind, job, captures["checkpoint"]),
        )
        .when(kind == "config-property", F.concat_ws("\0", kind, key, value))
        .otherwise(kind)
    )
    group = F.concat_ws("\0", F.col("bundle").cast("string"), group)  # bundles diagnosed together stay apart
    sid, block, line = F.col("sid").cast("long"), F.col("block").cast("long"), (F.col("first_rel") + F.col("m.idx"))
    measured, line_time = _measured(events, stored)
    first = F.when(kind == "config-property", F.coalesce(F.unix_micros(line_time), F.lit(-(2**63))))
    first = first.when(kind.isin(*CHECKPOINT_KINDS, "storage-close"), captures["duration_ms"].isNull().cast("long"))
    last = kind == "checkpoint-trigger"  # the last line: file order reversed
    order = F.struct(
        F.coalesce(first, F.lit(0)).alias("k0"),
        F.when(last, -sid).otherwise(sid).alias("k1"),
        F.when(last, -block).otherwise(block).alias("k2"),
        F.when(last, -line).otherwise(line).cast("long").alias("k3"),
    )
    trigger, columnar = kind == "checkpoint-trigger", kind.isin(*COLUMNAR)
    number = captures["checkpoint"]
    stamped = (  # a trigger whose own epoch is its time (columns.Builder: `at`), its number as Flink writes it
        trigger
        & F.coalesce(captures["epoch_ms"].try_cast("long") != 0, F.lit(False))
        & F.coalesce(number == number.try_cast("long").cast("string"), F.lit(False))
    )
    row = F.struct(  # what the driver reads, trimmed before the shuffle: a long run's rows are mostly these
        "sid",
        "bundle",
        "block",
        "first_rel",
        F.when(~stamped, line_time).alias("time"),
        "host",
        F.col("m.metric").alias("metric"),
        F.col("m.idx").alias("idx"),
        F.when(~trigger, F.col("m.line")).alias("line"),  # a trigger gives only its time and captures
        F.when(~columnar, captures).alias("captures"),  # the triggers' and completions': string columns, no map
        F.col("m.job").alias("job"),
        *[
            F.when(columnar & ~(trigger & F.lit(key in ("duration_ms", "bytes"))), captures[key]).alias(f"c_{key}")
            for key in CAPTURED
        ],
    )
    if WRITTEN is None or {m.measures for m in metrics} <= set(WRITTEN):  # every row written, none reduced here
        return measured.select(row.alias("r")).select("r.*")
    written = kind.isin(*WRITTEN)
    rest = measured.where(~F.coalesce(written, F.lit(False)))
    rest = rest.groupBy(group.alias("group")).agg(F.min_by(row, order).alias("r")).select("r.*")
    every = measured.where(written).select(row.alias("r")).select("r.*")  # (reduced by the driver: Builder)
    return rest.unionByName(every)  # (_split_columnar reads the captured columns)


def _measured(events, stored: EventsResult | None = None):
    """(one row per measured line: where its event is, its time and the measure as `m`; the line's time as a
    column of it). From the rows the scan tasks wrote, when they did (`stored.measured`): the events table does
    not hold the events only a metric measures (scanner._events_rows). Else from the events table: its time, or
    with `stored` (the scan's own table) the task's time or the raw `ts`, parsed where it is read."""
    from pyspark.sql import functions as F

    from ..scan.events import stored_time
    from ..scan.scanner import STORED_SCHEMA

    if stored is not None and stored.measured is not None:
        return _task_rows(events.sparkSession, stored), F.col("time")
    when, time = ["time"], F.col("time")
    if stored is not None:
        events = events.sparkSession.read.schema(STORED_SCHEMA).parquet(stored.path)
        when, time = ["time", "ts"], stored_time(stored.times)
    frame = events.where(F.size("measures") > 0).select(
        "sid", "bundle", "block", "first_rel", *when, "host", F.explode("measures").alias("m")
    )
    return frame, time


def _task_rows(spark, stored: EventsResult):
    """The rows the scan tasks wrote (scan/measured.py) as `_measured` gives them: each line's time, the tasks' or,
    where they left it (its raw `ts` kept), parsed here; the triggers' and completions' captures, which the tasks
    wrote as columns, as a map again."""
    from pyspark.sql import functions as F

    from ..scan.events import parsed_time

    if spark.conf.get(NANOS_AS_LONG, None) != "true":
        spark.conf.set(NANOS_AS_LONG, "true")  # (for the session, and left set: NANOS_AS_LONG says why)
    rows = spark.read.schema(TASK_ROWS).parquet(stored.measured)
    entries = F.array(*[F.struct(F.lit(key).alias("k"), F.col(f"c_{key}").alias("v")) for key in CAPTURED])
    columns = F.map_from_entries(F.filter(entries, lambda entry: entry["v"].isNotNull()))
    time = F.coalesce(F.expr("timestamp_micros(time div 1000)"), parsed_time(stored.times))
    measure = F.struct("metric", "idx", "line", F.coalesce("captures", columns).alias("captures"), "job")
    return rows.select("sid", "bundle", "block", "first_rel", time.alias("time"), "host", measure.alias("m"))


# Spark reads the tasks' rows' times (Arrow's nanoseconds) only as numbers, and only with this set. It is set for
# the session and left set: a warm server's diagnoses share one session, and one restoring it while another reads
# would fail the other's read. It only lets a read succeed that fails without it.
NANOS_AS_LONG = "spark.sql.legacy.parquet.nanosAsLong"
# the tasks' rows (scan/measured.py's `schema` of CAPTURED), their times as Spark reads Arrow's nanoseconds
TASK_ROWS = (
    "sid int, bundle int, block long, first_rel long, time long, host string, metric int, idx int, line string, "
    "captures map<string, string>, job string, " + ", ".join(f"c_{key} string" for key in CAPTURED) + ", ts string"
)


def measured_spans(spark, stored: EventsResult) -> dict[int, tuple[datetime, datetime]]:
    """Per source, the first and last time of its measured lines, as the rows the scan tasks wrote give them
    (none when they wrote none): with the events table's, the times of every kept event (scanner._events_rows)."""
    from pyspark.sql import functions as F

    if stored.measured is None:
        return {}
    rows = (
        _task_rows(spark, stored)
        .groupBy("sid")
        .agg(F.min("time").alias("a"), F.max("time").alias("b"))
        .where(F.col("a").isNotNull())
        .collect()
    )
    return {row["sid"]: (row["a"], row["b"]) for row in rows}
