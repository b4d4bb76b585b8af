"""Metrics: named line regexes (knowledge/metrics.yaml) whose every match is measured, not sampled.

A finding keeps a few instances as evidence; a trend or a percentile needs every completed checkpoint. The metrics'
literals join the rules' in the prefilter (so the INFO lines they read reach the events table), and one Spark pass
collects the events that hold them; the regexes then run per line on the driver, over those events only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from functools import cache
from importlib import resources

from ..errors import RuleError
from ..ingest import Manifest
from ..match import block_offsets
from ..prefilter import required_literals
from ..regexes import nested_quantifier, python_regex
from ..rulebook import Signature
from ..validation import line_of, read_yaml, schema, schema_problems

METRICS_FILE = "knowledge/metrics.yaml"


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
            try:
                pattern = python_regex(item["line"])
            except re.error as err:
                problems.append(f"{where}: invalid regex: {err}")
                continue
            backtracks = nested_quantifier(item["line"])
            if backtracks:
                problems.append(f"{where}: regex may backtrack catastrophically: {backtracks}")
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


JOB_IN_EVENT = re.compile(r"/([0-9a-f]{32})/chk-\d+|\bjob ([0-9a-f]{32})\b")


def extract(events, metrics: tuple[Metric, ...], first_number: int, blocks: dict, manifest: Manifest) -> list[Measure]:
    """Every line of the events table that a metric matches. `first_number` is the prefilter number of the first
    metric's signature (they follow the rules'). One Spark pass selects the events; the driver reads their lines."""
    from pyspark.sql import functions as F

    if not metrics:
        return []
    numbers = list(range(first_number, first_number + len(metrics)))
    by_number = dict(zip(numbers, metrics, strict=True))
    wanted = F.arrays_overlap("sigs", F.array(*[F.lit(n) for n in numbers]))
    rows = events.where(wanted).select("sid", "block", "first_rel", "time", "host", "sigs", "text").toLocalIterator()
    offsets = block_offsets(blocks)
    sources = {s.id: s for s in manifest.sources}
    found = []
    for row in rows:
        candidates = [by_number[n] for n in row.sigs if n in by_number]
        text = row.text or ""
        job_hit = JOB_IN_EVENT.search(text)
        event_job = (job_hit.group(1) or job_hit.group(2)) if job_hit else None
        source = sources[row.sid]
        for idx, line in enumerate(text.split("\n")):
            for metric in candidates:
                m = metric.pattern.search(line)
                if not m:
                    continue
                number = source.fixed_line or source.line_offset + offsets.get((row.sid, row.block), 0)
                number += 0 if source.fixed_line else row.first_rel + idx
                captures = {k: v for k, v in m.groupdict().items() if v is not None}
                found.append(
                    Measure(
                        metric.id,
                        metric.measures,
                        row.sid,
                        number,
                        row.time,
                        row.host or source.host,
                        line.rstrip(),
                        captures,
                        event_job,
                    )
                )
    found.sort(key=lambda m: (m.sid, m.line))
    return found
