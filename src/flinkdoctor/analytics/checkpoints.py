"""Checkpoint analytics per job: the series of durations and sizes, percentiles against the timeout and the interval,
the trend, the failure period, and checkpoints that outlast the interval.

Points come from the JobManager's lines (triggered, completed, expired, declined, failed, in 1.x and 2.x wording),
from timed steps a TaskManager or HDFS client logged (closing a chk-N file), and from REST checkpoint history.
The timeout and interval come from the effective configuration (REST, the job's own, wins), else from the log
itself: the time from "Triggering checkpoint N" to "Checkpoint N ... expired" is the timeout, the gap between
triggers the interval.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from functools import cached_property
from typing import Any

from ..knowledge.vocabulary import CheckpointStatus
from ..sources.ingest import Manifest
from .config import Effective, duration_ms
from .metrics import Measure, Windows
from .model import (
    CheckpointAnalytics,
    CheckpointJob,
    CheckpointPoint,
    CheckpointTrend,
    FailurePattern,
    Limit,
    iso,
)

STATUS_OF: dict[str, CheckpointStatus] = {
    "checkpoint-completed": "completed",
    "checkpoint-expired": "expired",
    "checkpoint-declined": "declined",
    "checkpoint-failed": "failed",
}
REST_STATUS: dict[str, CheckpointStatus] = {"completed": "completed", "failed": "failed", "in_progress": "in_progress"}
FAILED = ("expired", "declined", "failed")
PRECEDENCE = {"completed": 0, "expired": 1, "declined": 2, "failed": 3, "in_progress": 4}  # one status per checkpoint
UNKNOWN_JOB = "unknown job"
NEAR_TIMEOUT = 0.8  # p95 above this share of the timeout is a finding
TREND_MIN_POINTS, TREND_MIN_SPAN_H, TREND_MIN_R = 5, 0.5, 0.5
PERIODIC_MIN_GAPS, PERIODIC_MAX_SPREAD = 3, 0.25  # at least 4 failures, gaps within 25 % of their median
EPISODE_S = 1.0  # failures closer than this are one episode (the same failure read from two sources)
SHARES = {"p50": 0.5, "p90": 0.9, "p95": 0.95, "p99": 0.99, "max": 1.0}  # the percentiles of completed durations
SMALL = 1_024  # a job of at most this many triggers and completions is analysed with the others (Bulk.prepare)
PREPARED = 8_192  # jobs whose figures Bulk.prepare takes at a time
SERIES_MAX = 10_000  # points of all jobs' series in the report, shared evenly; more are thinned (_series)
OVER_SHOWN = 1_000  # checkpoints longer than the interval given as evidence (the earliest and the latest half)


@dataclass(slots=True)
class Point:
    """A checkpoint point with where it was read (sid None: a REST document)."""

    job: str
    id: int | None
    time: datetime | None
    status: CheckpointStatus
    duration_ms: float | None
    size_bytes: int | None
    file: str
    line: int
    stage: str = "checkpoint"
    sid: int | None = None
    host: str | None = None
    text: str = ""
    stamp: str | None = field(default=None, compare=False)  # `time` as the report writes it, made in bulk (points)


@dataclass
class JobAnalysis:
    """A job's analytics, and the points that back its findings (evidence)."""

    report: CheckpointJob
    evidence: dict[str, list[Point]]  # finding rule id -> the points that show it
    longest_ms: float = 0  # the longest completed checkpoint or timed step (expired ones last the timeout)


@dataclass(slots=True)
class Figures:
    """A small job's figures, taken with every other small job's at once (Bulk.prepare, grouped.py): what
    Completed's methods give for the job when no other point of it is listed."""

    timed: int  # completions with a duration
    percentiles: dict[str, float]
    longest: float | None  # the longest duration (None: none)
    no_trend: bool  # too few timed points, or too short a span, for a trend
    series: list[Point]  # the series' points


@dataclass
class Completed:
    """One job's completed checkpoints of a long run, as columns (one row per checkpoint, in time order; integers
    and durations as compact as columns.Held holds them: a duration is compared with a float as float64)."""

    job: str
    ids: Any  # numpy integers, -1: none
    times: Any  # numpy datetime64[us], NaT: none
    durations_ms: Any  # numpy float32 or float64, nan: none
    sizes: Any  # numpy integers, -1: none
    rows: Any  # numpy integers: each row's line in `table` (or in the measures' file, `texts`)
    table: Any  # the lines (an Arrow array), when not left in the file
    paths: dict
    texts: Any = None  # metrics.Texts: the lines left in the measures' file (then `rows` are its rows)
    pending: list = field(default_factory=list)  # (Point, row) whose text Bulk.fill reads, all jobs' at once
    place: tuple = ()  # numpy sid, line, host (a code of `hosts`, -1: none) and the text's row
    hosts: list = field(default_factory=list)
    figures: Figures | None = None  # (a small job's, taken with the others')
    owners: tuple = ()  # (rows of many jobs: each row's job code and the jobs' names)

    def __len__(self) -> int:
        return len(self.ids)

    def contains(self, number: int) -> bool:
        import numpy as np

        at = int(np.searchsorted(self.sorted_ids, number))
        return at < len(self.sorted_ids) and int(self.sorted_ids[at]) == number

    @cached_property
    def sorted_ids(self):
        import numpy as np

        return np.sort(self.ids)

    def percentiles(self, listed: list[float]) -> dict[str, float]:
        """_nearest_ranks of the durations, after those `listed`."""
        if self.figures is not None and not listed:
            return self.figures.percentiles
        return _nearest_ranks(self.durations(listed), SHARES)

    def longest(self) -> float:
        """The longest duration (a job with one)."""
        if self.figures is not None and self.figures.longest is not None:
            return self.figures.longest
        return float(self.durations().max())

    def durations(self, listed: list[float] | None = None):
        """The durations (a copy), after those `listed` (then as float64)."""
        import numpy as np

        found = self.durations_ms[~np.isnan(self.durations_ms)]
        return np.concatenate([np.array(listed, dtype=np.float64), found]) if listed else found

    def timed_count(self) -> int:
        import numpy as np

        if self.figures is not None:
            return self.figures.timed
        return int((~np.isnan(self.durations_ms)).sum())

    def points(self, at) -> list[Point]:
        """Points of the rows `at` (positions), made in bulk."""
        import numpy as np
        import pyarrow as pa

        at = np.asarray(list(at) if not isinstance(at, np.ndarray) else at, dtype=np.int64)
        if not len(at):
            return []
        rows = None
        sids, lines = self.place[0][at].tolist(), self.place[1][at].tolist()
        hosts = [self.hosts[code] for code in self.place[2][at].tolist()]
        if self.texts is not None:  # read later, for every job at once (Bulk.fill)
            rows, texts = self.place[3][at].tolist(), [""] * len(at)
        else:  # (the lines held: `table` is them, by row)
            texts = self.table.take(pa.array(self.rows[at])).to_pylist()
        ids, times = self.ids[at].tolist(), self.times[at].astype("datetime64[us]").tolist()
        stamps = _stamps(self.times[at])
        durations, sizes = self.durations_ms[at].tolist(), self.sizes[at].tolist()
        names = [self.owners[1][code] for code in self.owners[0][at].tolist()] if self.owners else None
        made = [
            Point(
                names[k] if names else self.job,
                ids[k] if ids[k] >= 0 else None,
                times[k],
                "completed",
                None if math.isnan(durations[k]) else durations[k],
                sizes[k] if sizes[k] >= 0 else None,
                self.paths[sids[k]],
                lines[k],
                "checkpoint",
                sids[k],
                hosts[k],
                texts[k] or "",
                stamps[k] if times[k] is not None else None,
            )
            for k in range(len(at))
        ]
        if rows is not None:
            self.pending.extend(zip(made, rows, strict=True))
        return made

    def over(self, ms: float) -> tuple[int, list[Point]]:
        """How many took longer than `ms`, and Points of the earliest and latest OVER_SHOWN of them."""
        import numpy as np

        if self.figures is not None and (self.figures.longest is None or not self.figures.longest > ms):
            return 0, []
        found = np.flatnonzero(self.durations_ms > np.float64(ms))  # (a float32 column: compared as float64)
        shown = (
            found
            if len(found) <= OVER_SHOWN
            else np.concatenate([found[: OVER_SHOWN // 2], found[-(OVER_SHOWN // 2) :]])
        )
        return len(found), self.points(shown)

    def chosen(self) -> list[Point]:
        """The five longest (the earlier of equal ones first) and the last five with a duration."""
        return list(self._chosen)

    @cached_property
    def _chosen(self) -> list[Point]:
        import numpy as np

        timed = np.flatnonzero(~np.isnan(self.durations_ms))
        longest = timed[np.lexsort((timed, -self.durations_ms[timed]))[:5]]
        return self.points(np.unique(np.concatenate([longest, timed[-5:]])))

    def series_with(self, points: list[Point], most: int = SERIES_MAX) -> list[Point]:
        """_series of `points` and these together, with a Point made only for the rows it keeps."""
        import numpy as np

        if self.figures is not None and not points:
            return list(self.figures.series)
        if len(points) + len(self) <= most:
            return sorted(points + self.points(range(len(self))), key=_in_time)
        listed = [p for p in points if p.status == "completed" and p.time is not None]
        rest = [p for p in points if p.status != "completed" or p.time is None]
        untimed = np.isnat(self.times)
        rest += self.points(np.flatnonzero(untimed))  # (kept, as _series keeps untimed ones)
        every = not untimed.any()  # (then the columns themselves: no copy, no index of every row)
        timed = np.arange(0) if every else np.flatnonzero(~untimed)
        del untimed
        pick, count = (slice(None), len(self)) if every else (timed, len(timed))
        if not count and not listed:  # (no completion with a time: the untimed ones, as _series keeps them)
            return sorted(rest, key=_in_time)
        if listed:
            times = np.concatenate([self.times[pick], np.array([p.time for p in listed], "datetime64[us]")])
            ids = np.concatenate([self.ids[pick], np.array([p.id or 0 for p in listed], np.int64)])
            durations = np.concatenate(
                [self.durations_ms[pick], np.array([p.duration_ms or 0 for p in listed], np.float64)]
            )
            order = np.lexsort((ids, times))  # the series order: by time, then checkpoint
            del ids
        else:  # (the columns are in the series order already: by time, then checkpoint)
            times, durations, order = self.times[pick], self.durations_ms[pick], None
        micros = (times if order is None else times[order]).view(np.int64)
        spans = max(1, (most - len(rest)) // 2)
        quotient, remainder = divmod(int(micros[-1] - micros[0]), spans)  # timedelta / int: half to even
        width = quotient + (2 * remainder > spans or (2 * remainder == spans and quotient % 2 == 1))
        value = durations if order is None else durations[order]
        # per span (spans follow the order: each a run of positions) its shortest and its longest, the earliest of
        # equal ones (argmin and argmax give the first); an absent duration counts as 0
        starts = _span_starts(micros, width, spans)
        ends = np.append(starts[1:], len(micros))
        picked: set[int] = set()
        for start, end in zip(starts.tolist(), ends.tolist(), strict=True):
            run = np.nan_to_num(value[start:end], nan=0.0)
            picked.update((start + int(np.argmin(run)), start + int(np.argmax(run))))
        positions = np.array(sorted(picked), dtype=np.int64)
        chosen = positions if order is None else order[positions]
        ours = chosen[chosen < count]
        theirs = [listed[i - count] for i in chosen[chosen >= count].tolist()]
        return sorted(self.points(ours if every else timed[ours]) + theirs + rest, key=_in_time)

    def trend(self, completed: list[Point], timeout: Limit | None) -> CheckpointTrend | None:
        """_trend over these and the job's other completed points, in time order."""
        import numpy as np

        listed = [p for p in completed if p.time and p.duration_ms is not None]
        if not listed and self.figures is not None and self.figures.no_trend:
            return None
        if listed:
            times = np.concatenate([self.times, np.array([p.time for p in listed], "datetime64[us]")])
            values = np.concatenate([self.durations_ms, np.array([p.duration_ms for p in listed])])
            ids = np.concatenate([self.ids, np.array([p.id or 0 for p in listed], np.int64)])
            keep = ~np.isnat(times) & ~np.isnan(values)
            order = np.lexsort((ids[keep], times[keep]))
            times, values = times[keep][order], values[keep][order]
        else:  # (the columns are in this order already: by time, then checkpoint; no copy when all are timed)
            keep = ~np.isnat(self.times) & ~np.isnan(self.durations_ms)
            every = bool(keep.all())
            times = self.times if every else self.times[keep]
            values = self.durations_ms if every else self.durations_ms[keep]
        if len(values) < TREND_MIN_POINTS:
            return None
        hours = np.empty(len(times), dtype=np.float64)
        for at in range(0, len(times), FIT_STEP):  # (a slice at a time: no int64 copies of a long run's times)
            cut = slice(at, at + FIT_STEP)
            hours[cut] = (times[cut] - times[0]).astype("timedelta64[us]").view(np.int64)
        hours /= 10**6
        hours /= 3600
        return _trend_of(hours, values, timeout)


def _span_starts(micros, width: int, spans: int):
    """Where each of _series' time spans starts among `micros` (numpy int64, in time order): the positions whose
    span (the time since the first over `width`, the last span taking the rest; one span when `width` is 0)
    differs from the one before, computed a slice at a time (no float and int64 arrays of a long run's size)."""
    import numpy as np

    found, before = [], -1
    for at in range(0, len(micros), FIT_STEP):
        part = micros[at : at + FIT_STEP]
        span = np.minimum(((part - micros[0]) / width).astype(np.int64), spans - 1) if width else part * 0
        found.append(np.flatnonzero(np.diff(span, prepend=before)) + at)
        before = int(span[-1])
    return np.concatenate(found) if found else np.zeros(0, np.int64)


@dataclass
class Bulk:
    """A long run's triggers and completions (columns.Columns, or a table of metrics._split_columnar's columns),
    sorted once in place and cut by job: each job's columns are slices of them, no copy per job."""

    columns: Any = None
    paths: dict = field(default_factory=dict)
    texts: Any = None  # metrics.Texts: the completions' text, read for the Points made only (fill)
    pending: list = field(default_factory=list)
    small_gaps: dict = field(default_factory=dict)  # job -> its trigger gaps (prepare)
    figures: dict = field(default_factory=dict)  # job -> Figures (prepare)
    _filled: int = 0  # the pending Points keep_shown has kept (those after it: not yet looked at)

    @staticmethod
    def of(checkpoints, paths: dict[int, str], texts=None) -> Bulk:
        from .columns import Columns

        if checkpoints is not None and not isinstance(checkpoints, Columns):
            checkpoints = Columns.of_table(checkpoints) if checkpoints.num_rows else None
        return Bulk(checkpoints, paths, texts) if checkpoints is not None and len(checkpoints) else Bulk()

    def keep_shown(self, analyses: list[JobAnalysis]) -> None:
        """Forget the Points made from the columns that no finding of `analyses` shows (the jobs analysed since
        the last call): only a finding's evidence carries a line's text into the report, a series' points do
        not, and their text would be read from every row group of the measures' file (a long run's series spans
        it whole) while a session cluster's 100,000 jobs' Points were held for it."""
        shown = {id(point) for analysis in analyses for points in analysis.evidence.values() for point in points}
        self.pending[self._filled :] = [entry for entry in self.pending[self._filled :] if id(entry[0]) in shown]
        self._filled = len(self.pending)

    def fill(self) -> None:
        """The text of the Points kept (keep_shown), read from the measures' file in one pass."""
        if self.pending:
            points, rows = zip(*self.pending, strict=True)
            for point, text in zip(points, self.texts.read(rows), strict=True):
                point.text = text or ""
            self.pending.clear()
            self._filled = 0

    @property
    def rows(self) -> int:
        return len(self.columns) if self.columns is not None else 0

    @cached_property
    def _by_job(self) -> dict[str, tuple[int, int, int, int, int]]:
        """Per job, its code, the span of its triggers (by checkpoint) and of its completions (in time order,
        untimed last) in the sorted columns. One sort of all rows and one cut at each job's boundary: a session
        cluster's log has 100,000 jobs, and a pass over every row per job would be quadratic."""
        import numpy as np

        if self.columns is None:
            return {}
        c = self.columns
        c.sort()
        cut_trig = np.searchsorted(c.t_job, np.arange(len(c.jobs) + 1)).tolist()
        cut_done = np.searchsorted(c.c_job, np.arange(len(c.jobs) + 1)).tolist()
        # a trigger without a number names its job only; those with one come last in each job's span
        numbered = np.searchsorted(np.flatnonzero(c.t_number >= 0), cut_trig).tolist()
        return {
            job: (n, numbered[n], numbered[n + 1], cut_done[n], cut_done[n + 1])
            for n, job in enumerate(c.jobs)
            if cut_trig[n] < cut_trig[n + 1] or cut_done[n] < cut_done[n + 1]
        }

    def prepare(self, jobs: list[str], most: int) -> None:
        """The figures of the small `jobs` (of at most SMALL triggers and SMALL completions) that no point or
        trigger outside the bulk names, taken for all of them at once (Figures, grouped.py): a session cluster's
        100,000 jobs of a few checkpoints each cost numpy's calls per job more than their rows. `most`: each job's
        series size, as _job is given it."""
        import numpy as np

        from . import grouped

        spans = [self._by_job[job] for job in jobs if job in self._by_job]
        small = sorted(span for span in spans if span[2] - span[1] <= SMALL and span[4] - span[3] <= SMALL)
        if not small:
            return
        codes, t0, t1, c0, c1 = (np.array(column, dtype=np.int64) for column in zip(*small, strict=True))
        self.small_gaps = self._small_gaps(codes, grouped.ranges(t0, t1))
        self.figures = self._small_figures(grouped.ranges(c0, c1), most)

    def _small_gaps(self, codes, rows) -> dict:
        """Per job of `codes`, its gaps (as `gaps` gives them with none listed); `rows`: their numbered
        triggers'."""
        import numpy as np

        from . import grouped

        c = self.columns
        numbers, times, owner = self._numbered
        owner, numbers, times = owner[rows], numbers[rows], times[rows]
        steps = np.diff(times).astype("timedelta64[us]").astype(np.int64)
        consecutive = (np.diff(numbers) == 1) & (np.diff(owner) == 0)
        gaps = steps[consecutive] / 10**6 * 1000
        present, starts, ends = grouped.runs(owner[:-1][consecutive])
        found = {c.jobs[n]: gaps[:0] for n in codes.tolist()}  # (one trigger: none)
        for n, start, end in zip(present.tolist(), starts.tolist(), ends.tolist(), strict=True):
            found[c.jobs[n]] = gaps[start:end]
        return found

    def _small_figures(self, rows, most: int) -> dict:
        """Per job with completions among `rows` (whole jobs' completions, ascending), its Figures."""
        import numpy as np

        from . import grouped

        c = self.columns
        present, starts, ends = grouped.runs(c.c_job[rows])
        size = ends - starts
        durations, micros = c.c_duration[rows], c.c_time[rows].view(np.int64)
        timed = ~np.isnan(durations)
        group = np.repeat(np.arange(len(present)), size)
        count, percentiles = grouped.nearest_ranks(durations[timed], group[timed], len(present), SHARES)
        longest = np.fmax.reduceat(durations, starts) if len(starts) else durations
        dated = ~np.isnat(c.c_time[rows])
        kept = dated & timed  # (the trend's points: in time order in each job)
        first = np.minimum.reduceat(np.where(kept, micros, np.iinfo(np.int64).max), starts) if len(starts) else size
        last = np.maximum.reduceat(np.where(kept, micros, np.iinfo(np.int64).min), starts) if len(starts) else size
        trended = grouped.counts(kept, starts)
        no_trend = (trended < TREND_MIN_POINTS) | (grouped.hours(last - first) < TREND_MIN_SPAN_H)
        series = self._small_series(rows, group, size, dated, most)
        names, values = [c.jobs[n] for n in present.tolist()], {k: v.tolist() for k, v in percentiles.items()}
        count_, longest_, no_trend_ = count.tolist(), longest.tolist(), no_trend.tolist()
        return {
            name: Figures(
                count_[g],
                {k: values[k][g] for k in SHARES} if count_[g] else {},
                longest_[g] if count_[g] else None,
                no_trend_[g],
                series[g],
            )
            for g, name in enumerate(names)
        }

    def _small_series(self, rows, group, size, dated, most: int) -> list:
        """Per job (group) its series' points as Completed.series_with gives them with no other point listed:
        every row up to `most`; past it the untimed ones and each span's shortest and longest."""
        import numpy as np

        from . import grouped

        c = self.columns
        starts = np.cumsum(size) - size
        timed = grouped.counts(dated, starts)  # (a job's timed rows come first: columns.sort)
        spans = np.maximum(1, (most - (size - timed)) // 2)
        thinned = (size > most) & (timed > 0)
        first = c.c_time[rows].view(np.int64)[starts]
        last = c.c_time[rows].view(np.int64)[np.maximum(starts + timed - 1, 0)]
        width = grouped.span_widths(first, last, spans)
        kept = ~np.repeat(thinned, size) | ~dated  # every row of a job not thinned, the untimed ones of the rest
        thin = np.flatnonzero(np.repeat(thinned, size) & dated)
        at = group[thin]
        span = grouped.spans_of(c.c_time[rows[thin]].view(np.int64), first[at], width[at], spans[at])
        values = np.nan_to_num(c.c_duration[rows[thin]], nan=0.0)
        kept[thin[grouped.first_extremes(values, (span, at))]] = True
        picked = np.flatnonzero(kept)
        whole, made = self._whole(), []
        for cut in range(0, len(picked), FIT_STEP):  # (a slice at a time: no list per field of every Point)
            made += whole.points(rows[picked[cut : cut + FIT_STEP]])
        cuts = np.searchsorted(picked, np.append(starts, len(rows))).tolist()
        return [sorted(made[cuts[g] : cuts[g + 1]], key=_in_time) for g in range(len(size))]

    def _whole(self) -> Completed:
        """Every completion as one Completed, each row's Point of its own job (prepare's)."""
        return self._completions("", slice(None), owners=(self.columns.c_job, self.columns.jobs))

    def _completions(self, job: str, cut: slice, **more) -> Completed:
        """The completions of rows `cut`: slices of the sorted columns, no copy."""
        c = self.columns
        place = (c.c_sid[cut], c.c_line[cut], c.c_host[cut], c.c_row[cut])
        return Completed(
            job,
            c.c_number[cut],
            c.c_time[cut],
            c.c_duration[cut],
            c.c_size[cut],
            c.c_row[cut],
            c.text,
            self.paths,
            self.texts,
            self.pending,
            place,
            self._hosts,
            **more,
        )

    @cached_property
    def _hosts(self) -> list[str | None]:
        """The hosts by code, None last (code -1: none): one list every job's Completed shares (a session
        cluster's 100,000 jobs would each copy it)."""
        return [*self.columns.hosts, None]

    @cached_property
    def _numbered(self) -> tuple:
        """The triggers with a number: their numbers, times and jobs (in the sorted order)."""

        c = self.columns
        numbered = c.t_number >= 0
        if numbered.all():  # (as a log's triggers are: the columns themselves)
            return c.t_number, c.t_at, c.t_job
        return c.t_number[numbered], c.t_at[numbered], c.t_job[numbered]

    def jobs(self) -> set[str]:
        return set(self._by_job)

    def _triggers(self, job: str):
        _, start, end, _, _ = self._by_job[job]
        numbers, times, _ = self._numbered
        return numbers[start:end], times[start:end]

    def trigger_time(self, triggers: dict):
        """A lookup (job, checkpoint) -> its trigger time: the listed triggers, else the bulk's."""
        import numpy as np

        def find(job: str, number: int | None) -> datetime | None:
            found = triggers.get((job, number))
            if found is not None or number is None or job not in self._by_job:
                return found
            numbers, times = self._triggers(job)
            at = int(np.searchsorted(numbers, number))
            if at < len(numbers) and numbers[at] == number:
                return times[at].astype("datetime64[us]").item()
            return None

        return find

    def gaps(self, job: str, listed: list[float]):
        """Milliseconds between the triggers of consecutive checkpoints (as _gaps): the `listed` triggers', then
        the bulk's, in a numpy array (a long run has a million)."""
        import numpy as np

        if job not in self._by_job:
            return listed
        if not listed and job in self.small_gaps:
            return self.small_gaps.pop(job)
        numbers, times = self._triggers(job)
        found = [np.array(listed, dtype=np.float64)]
        for at in range(0, max(len(times) - 1, 0), FIT_STEP):  # (a slice of steps at a time)
            cut = slice(at, min(at + FIT_STEP, len(times) - 1) + 1)
            steps = np.diff(times[cut]).astype("timedelta64[us]").astype(np.int64)
            found.append(steps[np.diff(numbers[cut]) == 1] / 10**6 * 1000)
        return np.concatenate(found)

    def completed(self, job: str) -> Completed | None:
        """The job's completions: slices of the sorted columns, no copy per job."""
        if job not in self._by_job:
            return None
        _, _, _, start, end = self._by_job[job]
        if start == end:
            return None
        return self._completions(job, slice(start, end), figures=self.figures.pop(job, None))  # (popped: not held)

    def any_duration(self) -> bool:
        import numpy as np

        return self.columns is not None and bool((~np.isnan(self.columns.c_duration)).any())


def _epochs64(ms) -> Any:
    """epoch() of each (numpy, of floats: nan when absent) as datetime64[us], NaT when absent or 0."""
    import numpy as np

    values = np.asarray(ms, dtype=np.float64)
    valid = ~np.isnan(values) & (values != 0) & (np.abs(values) < 1e17)
    out = np.full(len(values), np.datetime64("NaT"), dtype="datetime64[us]")
    out[valid] = np.round(values[valid] * 1000).astype(np.int64).astype("datetime64[us]")
    return out


def epoch(ms: str | float | None) -> datetime | None:
    try:
        return datetime.fromtimestamp(float(ms) / 1000, tz=timezone.utc).replace(tzinfo=None) if ms else None
    except (ValueError, OverflowError, OSError):
        return None


def analyse_checkpoints(
    measures: list[Measure], manifest: Manifest, effective: Effective, paths: dict[int, str]
) -> tuple[CheckpointAnalytics, list[JobAnalysis]]:
    """Per job, its analysis. `measures` may carry the triggers and completions of a long run as columns
    (metrics.Measured.checkpoints): read in bulk (Bulk), with Points made only for what the report lists; many
    jobs' a window of whole jobs at a time (metrics.Windows), each window's columns let go before the next."""
    bulk_jobs, bulks = _bulks(getattr(measures, "checkpoints", None), paths, getattr(measures, "texts", None))
    triggers = {}
    for m in measures:
        if m.measures == "checkpoint-trigger" and m.captures.get("job"):
            triggers[(m.captures["job"], _int(m.captures.get("checkpoint")))] = (
                epoch(m.captures.get("epoch_ms")) or m.time
            )
    points, untriggered = _log_points(measures, triggers, paths)
    named = {p.job for p in points if p.job != UNKNOWN_JOB} | {job for job, _ in triggers} | bulk_jobs
    only = next(iter(named)) if len(named) == 1 else None  # a REST answer without a path belongs to the only job
    points += [replace(p, job=only) if only and p.job == UNKNOWN_JOB else p for p in _rest_points(manifest)]
    by_job: dict[str, list[Point]] = {job: [] for job in {job for job, _ in triggers} | bulk_jobs}
    for point in points:  # each job's points and trigger times gathered in one pass: no scan of all per job
        by_job.setdefault(point.job, []).append(point)
    started: dict[str, list[tuple[int, datetime]]] = {}
    for (job, number), at in triggers.items():
        if number is not None and at:
            started.setdefault(job, []).append((number, at))
    most = max(2, SERIES_MAX // max(1, len(by_job)))  # 100,000 jobs of a session cluster: a report of bounded size
    found: dict[str, JobAnalysis] = {}
    jobs = _Jobs(by_job, started, untriggered, Configured.of(effective), most)
    timed = rows = False
    for bulk in bulks:
        found.update(jobs.analysed(sorted(bulk.jobs()), bulk))
        timed, rows = timed or bulk.any_duration(), rows or bool(bulk.rows)
        del bulk  # (a window's columns: not held while the next is read)
    found.update(jobs.analysed(sorted(set(by_job) - set(found)), Bulk()))
    analyses = [found[job] for job in sorted(by_job)]
    missing = []
    if not any(p.duration_ms is not None for p in points) and not timed:
        missing.append(
            "No checkpoint durations in the input: add the JobManager log (its 'Completed checkpoint' and 'expired' "
            "lines) or the REST checkpoint history (/jobs/<id>/checkpoints) to measure them against the timeout and "
            "the interval."
        )
    if (points or rows) and not any(a.report.timeout for a in analyses):
        missing.append(
            "No checkpoint timeout in the input: add the configuration (flink-conf.yaml / config.yaml), the "
            "JobManager log's start-up lines or REST /jobs/<id>/checkpoints/config; a timeout set in the job's code "
            "shows only in REST."
        )
    return CheckpointAnalytics([a.report for a in analyses], missing), analyses


def _bulks(checkpoints, paths: dict[int, str], texts) -> tuple[set[str], Iterator[Bulk]]:
    """(the jobs of the triggers and completions in bulk; their Bulks, one per window of jobs, made as asked)."""
    if isinstance(checkpoints, Windows):
        return checkpoints.jobs, _windows(checkpoints, paths, texts)
    bulk = Bulk.of(checkpoints, paths, texts)
    return bulk.jobs(), iter([bulk])


def _windows(windows, paths: dict[int, str], texts) -> Iterator[Bulk]:
    """Each window's Bulk, read when asked: nothing here holds the one before (its caller lets it go)."""
    for columns in windows:
        yield Bulk(columns, paths, texts)
        del columns  # (not held while the next window is read)


@dataclass
class _Jobs:
    """What every job's analysis reads beside its bulk: its listed points, trigger times, ends whose duration
    waits for a trigger in bulk (`untriggered`), the configured limits, its share of the series."""

    points: dict[str, list[Point]]
    started: dict[str, list[tuple[int, datetime]]]
    untriggered: dict[str, list[Point]]
    configured: Configured
    most: int

    def analysed(self, jobs: list[str], bulk: Bulk) -> dict[str, JobAnalysis]:
        """The analyses of `jobs`, whose rows in bulk are all in `bulk`; the text of their evidence read."""
        found: dict[str, JobAnalysis] = {}
        for first in range(0, len(jobs), PREPARED):  # (the small jobs' figures a share at a time: not all held)
            share = jobs[first : first + PREPARED]
            bulk.prepare([job for job in share if not self.points[job] and job not in self.started], most=self.most)
            for job in share:
                _trigger_durations(self.untriggered.pop(job, []), bulk.trigger_time({}))
                gaps = bulk.gaps(job, _gaps(self.started.get(job, [])))
                found[job] = _job(job, self.points[job], gaps, self.configured, bulk.completed(job), self.most)
            bulk.keep_shown([found[job] for job in share])
        bulk.fill()  # the text of the points the findings show
        return found


def _trigger_durations(points: list[Point], trigger_time) -> None:
    """An end's duration from its trigger (`trigger_time`, the bulk's), where only the bulk has the trigger."""
    for point in points:
        started = trigger_time(point.job, point.id)
        if started and point.time:
            point.duration_ms = (point.time - started).total_seconds() * 1000  # trigger to failure


def _int(text) -> int | None:
    try:
        return int(text)
    except (TypeError, ValueError):
        return None


def _log_points(
    measures: list[Measure], triggers: dict, paths: dict[int, str]
) -> tuple[list[Point], dict[str, list[Point]]]:
    """(a point per measured end of a checkpoint (or timed step), each made once: a long run has millions; per
    job, the ends whose duration is from a trigger that `triggers` does not list, which the bulk may hold)."""
    points: list[Point] = []
    untriggered: dict[str, list[Point]] = {}
    for m in measures:
        if m.measures != "storage-close" and m.measures not in STATUS_OF:
            continue
        captures = m.captures
        job = captures.get("job") or m.event_job or UNKNOWN_JOB
        number = _int(captures.get("checkpoint"))
        duration = float(captures["duration_ms"]) if captures.get("duration_ms") else None
        path = paths[m.sid]
        if m.measures == "storage-close":
            start, end = epoch(captures.get("start_epoch_ms")), epoch(captures.get("end_epoch_ms"))
            if duration is None and start and end:
                duration = (end - start).total_seconds() * 1000
            at = end or m.time
            point = Point(
                job, number, at, "failed", duration, None, path, m.line, "storage-close", m.sid, m.host, m.text
            )
            points.append(point)
            continue
        status = STATUS_OF[m.measures]
        started = triggers.get((job, number))
        if duration is None and started and m.time and status != "completed":
            duration = (m.time - started).total_seconds() * 1000  # trigger to failure
        size = _int(captures.get("bytes"))
        point = Point(job, number, m.time, status, duration, size, path, m.line, "checkpoint", m.sid, m.host, m.text)
        if started is None and number is not None and duration is None and m.time and status != "completed":
            untriggered.setdefault(job, []).append(point)
        points.append(point)
    return points, untriggered


def _rest_points(manifest: Manifest) -> list[Point]:
    """Checkpoint history entries of REST /jobs/<id>/checkpoints answers."""
    points = []
    for source in manifest.sources:
        document = source.document
        if source.kind != "flink-rest-json" or source.derived or not isinstance(document, dict):
            continue
        history = document.get("history")
        if not isinstance(history, list) or "counts" not in document:
            continue
        job = _rest_job(document)
        for entry in history:
            if not isinstance(entry, dict) or entry.get("is_savepoint"):
                continue
            status = REST_STATUS.get(str(entry.get("status", "")).lower())
            if status is None:
                continue
            failure = str(entry.get("failure_message") or "")
            if status == "failed" and "expired" in failure:
                status = "expired"
            ended = entry.get("failure_timestamp") or entry.get("latest_ack_timestamp")
            duration = entry.get("end_to_end_duration")
            size = entry.get("checkpointed_size", entry.get("state_size"))
            points.append(
                Point(
                    job,
                    _int(entry.get("id")),
                    epoch(ended if status != "in_progress" else entry.get("trigger_timestamp")),
                    status,
                    float(duration) if isinstance(duration, (int, float)) and status != "in_progress" else None,
                    int(size) if isinstance(size, (int, float)) else None,
                    f"REST {source.path}",
                    1,
                )
            )
    return points


def _rest_job(document: dict) -> str:
    """REST checkpoint answers do not name the job; a checkpoint path in them does (.../<job id>/chk-N)."""
    import re

    found = re.search(r"/([0-9a-f]{32})/chk-\d+", str(document))
    return found.group(1) if found else UNKNOWN_JOB


def _merge(points: list[Point]) -> list[Point]:
    """One point per checkpoint and stage: a log line over a REST entry, the most telling status first."""
    best: dict[tuple, Point] = {}
    loose = []
    for point in points:
        if point.id is None:
            loose.append(point)
            continue
        key = (point.id, point.stage)
        have = best.get(key)
        rank = (PRECEDENCE[point.status], point.sid is None, point.duration_ms is None)
        if have is None or rank < (PRECEDENCE[have.status], have.sid is None, have.duration_ms is None):
            if have and point.duration_ms is None and have.duration_ms is not None:
                point = replace(point, duration_ms=have.duration_ms)
            best[key] = point
        elif have.duration_ms is None and point.duration_ms is not None:
            best[key] = replace(have, duration_ms=point.duration_ms)
    merged = list(best.values()) + loose
    merged.sort(key=lambda p: (p.time is None, p.time or datetime.min, p.id or 0))
    return merged


SORTED_IN_PYTHON = 64  # up to this many values are sorted as a list: numpy's call costs more (a job's few gaps)


def _median(values) -> float:
    """statistics.median of floats (a list, or a numpy array: a long run's million gaps), sorted as numbers."""
    import numpy as np

    ordered: Any
    if len(values) <= SORTED_IN_PYTHON:  # (a session cluster's 100,000 jobs of a few gaps each)
        ordered = sorted(values.tolist() if isinstance(values, np.ndarray) else values)
    else:
        ordered = np.sort(np.asarray(values, dtype=np.float64))
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return float(ordered[middle])
    return (float(ordered[middle - 1]) + float(ordered[middle])) / 2


def _limits(points, gaps, configured: Configured) -> tuple[Limit | None, Limit | None]:
    """The timeout and interval: configured, else read from the log (expiries; `gaps` between consecutive
    triggers, in ms)."""
    timeout = configured.timeout
    if timeout is None:
        waits = sorted(p.duration_ms for p in points if p.status == "expired" and p.duration_ms and p.sid is not None)
        if waits:
            first = next(p for p in points if p.status == "expired" and p.duration_ms and p.sid is not None)
            timeout = Limit(
                round(statistics.median(waits), -1),
                f"log: from 'Triggering checkpoint' to 'expired' ({first.file}:{first.line})",
            )
    interval = configured.interval
    if interval is None and len(gaps) >= 2:
        interval = Limit(round(_median(gaps), -2), "log: median gap between 'Triggering checkpoint' lines")
    return timeout, interval


def _gaps(started: list[tuple[int, datetime]]) -> list[float]:
    """Milliseconds between the triggers of consecutive checkpoints."""
    starts = sorted(started)
    return [(b[1] - a[1]).total_seconds() * 1000 for a, b in zip(starts, starts[1:], strict=False) if b[0] == a[0] + 1]


@dataclass(frozen=True, slots=True)
class Configured:
    """The configured timeout and interval, read once for every job (a session cluster's 100,000 share them)."""

    timeout: Limit | None
    interval: Limit | None

    @staticmethod
    def of(effective: Effective) -> Configured:
        return Configured(
            _configured(effective, "execution.checkpointing.timeout"),
            _configured(effective, "execution.checkpointing.interval"),
        )


def _configured(effective: Effective, key: str) -> Limit | None:
    found = effective.get(key)
    value = duration_ms(found.value) if found else None
    if found is None or value is None or value <= 0:
        return None
    return Limit(value, f"{found.where} ({key})")


DURATION_MAX = 2.0**53  # ms (285,000 years): past it a float holds no exact integer, and a sum of squares may overflow
FIT_STEP = 65_536  # a long run's durations are summed a slice at a time: no Python float held per checkpoint


MANTISSA_BITS, LOW_BITS, LOWEST_EXPONENT = 53, 26, -1126  # a float64 as an integer times 2**e, e >= this


def _fsum(terms) -> float:
    """math.fsum of the floats of numpy arrays (`terms`: slices of them), with no Python float made per value
    (a long run's millions, five sums a trend). fsum rounds the exact sum once, to nearest even; so does this:
    each finite value is an integer of 53 bits times a power of two (np.frexp); per power, the integers' high and
    low halves are summed as float64 (at most FIT_STEP of them: every partial sum below 2**53, exact), the sums
    added in one Python integer, and the integer divided by the lowest power, which Python rounds correctly. A
    value not finite (never in a trend: _trend_of checks them) gives fsum's answer for it."""
    import numpy as np

    total, odd = 0, []
    for whole in terms:
        whole = np.asarray(whole, dtype=np.float64)
        for at in range(0, len(whole), FIT_STEP):
            part = whole[at : at + FIT_STEP]
            if not np.isfinite(part).all():
                odd += part[~np.isfinite(part)].tolist()
                part = part[np.isfinite(part)]
            mantissa, exponent = np.frexp(part)
            integer = (mantissa * 2.0**MANTISSA_BITS).astype(np.int64)  # (exact: 53 bits)
            power = exponent - MANTISSA_BITS - LOWEST_EXPONENT
            high = np.bincount(power, weights=integer >> LOW_BITS)
            low = np.bincount(power, weights=integer & ((1 << LOW_BITS) - 1))
            for k in np.flatnonzero((high != 0) | (low != 0)).tolist():
                total += ((int(high[k]) << LOW_BITS) + int(low[k])) << k
    return math.fsum(odd) if odd else total / (1 << -LOWEST_EXPONENT)


def _fit(hours, values) -> tuple[float, float, float]:
    """The slope and intercept of statistics.linear_regression(hours, values) and statistics.correlation of them,
    as Python 3.10 and 3.11 compute them (each product rounded to a float, then fsum): the same floats, taken over
    numpy arrays a slice at a time, where the statistics module made a Python float (and a generator step) of
    each of a long run's millions of checkpoints, several times over."""
    import numpy as np

    n = len(values)
    cuts = range(0, n, FIT_STEP)
    xbar = _fsum(hours[at : at + FIT_STEP] for at in cuts) / n
    ybar = _fsum(values[at : at + FIT_STEP] for at in cuts) / n

    def products(a, a_bar, b, b_bar):  # (in float64: a float32 column's values are promoted)
        return ((a[at : at + FIT_STEP] - a_bar) * (b[at : at + FIT_STEP] - b_bar) for at in cuts)

    xbar64, ybar64 = np.float64(xbar), np.float64(ybar)
    sxy = _fsum(products(hours, xbar64, values, ybar64))
    sxx = _fsum(products(hours, xbar64, hours, xbar64))
    syy = _fsum(products(values, ybar64, values, ybar64))
    if not sxx:
        raise statistics.StatisticsError("x is constant")
    slope = sxy / sxx
    spread = math.sqrt(sxx * syy)
    if not spread:
        raise statistics.StatisticsError("at least one of the inputs is constant")
    return slope, ybar - slope * xbar, sxy / spread


def _varies(values) -> bool:
    """More than one distinct value (as len(set(values)) >= 2): a numpy array's."""
    return bool((values != values[0]).any())


def percentile(values: list[float], share: float) -> float:
    """Nearest-rank percentile (a value that occurred)."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def _nearest_ranks(values, shares: dict[str, float]) -> dict[str, float]:
    """percentile() of a numpy array at each share, by name ({} for none): the array is partitioned in place at
    those ranks (each then holds the value a sort would put there), not sorted into a copy."""
    if not len(values):
        return {}
    ranks = {name: max(0, math.ceil(share * len(values)) - 1) for name, share in shares.items()}
    values.partition(sorted(set(ranks.values())))
    return {name: float(values[rank]) for name, rank in ranks.items()}


def _trend(completed: list[Point], timeout: Limit | None) -> CheckpointTrend | None:
    import numpy as np

    timed = [(p.time, p.duration_ms) for p in completed if p.time and p.duration_ms is not None]
    if len(timed) < TREND_MIN_POINTS:
        return None
    start = timed[0][0]
    hours = [(t - start).total_seconds() / 3600 for t, _ in timed]
    return _trend_of(np.array(hours, np.float64), np.array([float(v) for _, v in timed], np.float64), timeout)


def _trend_of(hours, values, timeout: Limit | None) -> CheckpointTrend | None:
    """The trend of completed durations (`values`) over `hours` since the first, in time order (numpy float64
    arrays)."""
    if len(values) < TREND_MIN_POINTS:
        return None
    timed = values
    last = float(hours[-1])
    if last - float(hours[0]) < TREND_MIN_SPAN_H or not _varies(values) or not _varies(hours):
        return None
    if not (abs(values) < DURATION_MAX).all():  # a hostile line's 300 digits: no trend, and no overflow in fsum
        return None
    slope, intercept, r = _fit(hours, values)
    if r < TREND_MIN_R or slope <= 0:
        return CheckpointTrend(round(slope, 1), len(timed), None)
    now = intercept + slope * last
    to_timeout = (timeout.ms - now) / slope if timeout and timeout.ms > now else None
    return CheckpointTrend(round(slope, 1), len(timed), round(to_timeout, 2) if to_timeout is not None else None)


def _failures(points: list[Point], interval: Limit | None) -> tuple[FailurePattern | None, list[Point]]:
    failed = sorted((p for p in points if p.status in FAILED and p.time), key=lambda p: p.time or datetime.min)
    episodes: list[Point] = []
    for point in failed:
        if not episodes or (point.time - episodes[-1].time).total_seconds() > EPISODE_S:  # type: ignore[operator]
            episodes.append(point)
    if not episodes:
        return None, []
    gaps = [(b.time - a.time).total_seconds() for a, b in zip(episodes, episodes[1:], strict=False)]  # type: ignore[operator]
    periodic, period = False, None
    if len(gaps) >= PERIODIC_MIN_GAPS:
        middle = statistics.median(gaps)
        spread = statistics.median(abs(g - middle) for g in gaps) / middle if middle else 1
        shortest = 2 * interval.ms / 1000 if interval else EPISODE_S
        periodic = spread <= PERIODIC_MAX_SPREAD and middle >= shortest
        period = round(middle, 1) if periodic else None
    return FailurePattern(len(failed), periodic, period, [round(g, 1) for g in gaps]), episodes


def _job(
    job: str,
    raw: list[Point],
    gaps: Any,  # a list, or a numpy array (Bulk.gaps)
    configured: Configured,
    bulk: Completed | None = None,
    most: int = SERIES_MAX,
) -> JobAnalysis:
    """One job's analysis from its own points, the gaps between its consecutive triggers, and its completions
    in bulk (a long run's, Completed): those outrank any other point of the same checkpoint (_merge)."""
    if bulk is not None:
        raw = [p for p in raw if not (p.stage == "checkpoint" and p.id is not None and bulk.contains(p.id))]
    points = _merge(raw)
    timeout, interval = _limits(points, gaps, configured)
    counts = _counts(points, len(bulk) if bulk is not None else 0)
    completed = [p for p in points if p.status == "completed" and p.duration_ms is not None]
    durations = [p.duration_ms for p in completed if p.duration_ms is not None]
    if bulk is not None:  # (ranked as numbers, not as a list of a Python float each)
        pct = bulk.percentiles(durations)
    else:
        pct = {name: percentile(durations, share) for name, share in SHARES.items()} if durations else {}
    trend = _trend(completed, timeout) if bulk is None else bulk.trend(completed, timeout)
    failures, episodes = _failures([p for p in points if p.stage == "checkpoint"] or points, interval)
    ended = [p for p in points if p.stage == "checkpoint" and p.duration_ms is not None and p.status != "in_progress"]
    over = [p for p in ended if interval and p.duration_ms > interval.ms]  # type: ignore[operator]
    ended_count, over_count = len(ended), len(over)
    if bulk is not None:
        ended_count += bulk.timed_count()
        more, shown = bulk.over(interval.ms) if interval else (0, [])
        over_count += more
        over = sorted(over + shown, key=_in_time)
    steps = [p for p in points if p.stage != "checkpoint" and p.duration_ms is not None]
    longest = max(steps, key=lambda p: p.duration_ms or 0) if steps else None
    chosen: list[Point] = []  # a long run's longest five and last five: Points made only for evidence

    def with_chosen() -> list[Point]:
        if bulk is not None and not chosen:
            chosen.extend(bulk.chosen())
        return sorted(completed + chosen, key=_in_time) if chosen else completed

    evidence: dict[str, list[Point]] = {}
    if timeout and pct and pct["p95"] >= NEAR_TIMEOUT * timeout.ms:
        evidence["checkpoint-duration-near-timeout"] = sorted(with_chosen(), key=lambda p: -(p.duration_ms or 0))[:5]
    if timeout and longest and (longest.duration_ms or 0) > timeout.ms:
        evidence["checkpoint-step-over-timeout"] = [longest]
    if trend and trend.hours_to_timeout is not None:
        evidence["checkpoint-durations-growing"] = with_chosen()[-5:]
    if failures and failures.periodic:
        evidence["checkpoint-failures-periodic"] = episodes
    if over:  # (a long run's every checkpoint may be: the earliest and latest stand for them)
        evidence["checkpoint-longer-than-interval"] = over if len(over) <= OVER_SHOWN else _ends(over, OVER_SHOWN)
    report = CheckpointJob(
        job=job,
        series=[_public(p) for p in (_series(points, most) if bulk is None else bulk.series_with(points, most))],
        counts=counts,
        timeout=timeout,
        interval=interval,
        percentiles=pct,
        trend=trend,
        failures=failures,
        over_interval=over_count,
        ended=ended_count,
        longest_stage_ms=longest.duration_ms if longest else None,
    )
    measured = [p.duration_ms or 0 for p in points if p.status == "completed" or p.stage != "checkpoint"]
    if bulk is not None and bulk.timed_count():
        measured.append(bulk.longest())
    # a session cluster's 100,000 jobs: no Point kept per job beyond its own lines' and its evidence's
    return JobAnalysis(
        report,
        {k: [p for p in v if p.sid is not None] for k, v in evidence.items()},
        max(measured, default=0),
    )


def _ends(points: list[Point], most: int) -> list[Point]:
    return points[: most // 2] + points[-(most // 2) :]


def _counts(points: list[Point], completed_in_bulk: int) -> dict[str, int]:
    counts: dict[str, int] = {}
    for p in points:
        if p.stage == "checkpoint":
            counts[p.status] = counts.get(p.status, 0) + 1
    if completed_in_bulk:
        counts["completed"] = counts.get("completed", 0) + completed_in_bulk
    return counts


def _in_time(p: Point):
    return (p.time is None, p.time or datetime.min, p.id or 0)


def _series(points: list[Point], most: int = SERIES_MAX) -> list[Point]:
    """The points the report lists: every one, up to `most` (the job's share of SERIES_MAX: a session cluster
    runs thousands of jobs); past it (a long run checkpoints millions of times) every point that did not complete,
    and the completed ones cut into equal time spans, each kept by its shortest and longest: a report of bounded
    size that still shows every failure, spike and dip. Counts, percentiles, trend and findings are taken from
    every point."""
    if len(points) <= most:
        return points
    completed = [p for p in points if p.status == "completed" and p.time is not None]
    rest = [p for p in points if p.status != "completed" or p.time is None]
    spans = max(1, (most - len(rest)) // 2)
    start = completed[0].time if completed else None
    width = (completed[-1].time - start) / spans if completed and start else None  # type: ignore[operator]
    extremes: dict[int, tuple[Point, Point]] = {}
    for point in completed:
        span = min(int((point.time - start) / width), spans - 1) if width else 0  # type: ignore[operator]
        low, high = extremes.get(span, (point, point))
        shorter = (point.duration_ms or 0) < (low.duration_ms or 0)
        longer = (point.duration_ms or 0) > (high.duration_ms or 0)
        extremes[span] = (point if shorter else low, point if longer else high)
    kept = {id(p): p for pair in extremes.values() for p in pair}
    kept.update({id(p): p for p in rest})
    return sorted(kept.values(), key=lambda p: (p.time is None, p.time or datetime.min, p.id or 0))


def _public(p: Point) -> CheckpointPoint:
    size = p.size_bytes
    time = p.stamp if p.stamp is not None else iso(p.time)
    return CheckpointPoint(p.id, time, p.status, p.duration_ms, size, p.file, p.line, p.stage)


def _stamps(times) -> list[str]:
    """model.iso of each time (numpy datetime64, naive UTC), in one numpy call: a session cluster's series are
    hundreds of thousands of points ('NaT' for none: its Point has no time)."""
    import numpy as np

    return np.char.add(np.datetime_as_string(times.astype("datetime64[ms]"), unit="ms"), "Z").tolist()
