"""The one diagnosis core, as a straight line: sources -> events -> findings -> diagnosis -> report.

`diagnose` (the command, the Python API, `watch`'s incidents) is one bundle through `diagnose_bundles`; `fleet`
is many bundles through the same function. Every Spark stage runs once over all the bundles given (the scan,
the findings, the measures, the unexplained errors), each result keyed by the bundle its source belongs to; the
rest runs per bundle on the driver, over findings only. So a bundle diagnosed in a fleet gets exactly the report
it gets alone: its analytics, configuration audit and unexplained errors included.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeVar

from .analytics import Analytics, analyse, analytics_rules, config_knowledge, extract, load_metrics
from .analytics.columns import give_back
from .analytics.metrics import Measure, measured_rows
from .diagnosis.correlate import RootCause, correlate
from .diagnosis.fallback import Catalogued, Outcome, fallback
from .diagnosis.findings import CatalogueHit, Finding, collect_evidence, keep_applicable
from .diagnosis.unexplained import baseline, collect_templates, explained_events, failure_time, top_templates
from .knowledge.catalogue import load_catalogue
from .knowledge.rulebook import Rule, load_rules
from .knowledge.versions import detect
from .options import check_flink_version, check_timezone, check_year
from .report.model import Report, build_report, input_report
from .runtime.beside import beside
from .runtime.workdir import WorkDir
from .safety.masking import masked_replace
from .scan.events import EventsResult, build_events
from .scan.matcher import Matcher, build_matcher
from .sources.ingest import DEFAULT_MAX_UNPACKED, Manifest, Source, ingest

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def diagnose(
    paths: list[str | Path],
    *,
    spark: SparkSession | None = None,
    work_dir: str | Path | None = None,
    keep_work_dir: bool = False,
    timezone: str = "UTC",
    year: int | None = None,
    rules_dirs: Sequence[str | Path] = (),
    flink_version: str | None = None,
    max_unpacked: int = DEFAULT_MAX_UNPACKED,
    rules: list[Rule] | None = None,
    verbose: bool = False,
) -> Report:
    """Diagnose a bundle and return the report model.

    Raises UsageError for bad options, rules or a work dir that is not flinkdoctor's own, and InputError when
    nothing can be read; all of them before Spark starts. Everything written under the work dir is removed
    afterwards unless `keep_work_dir`. `verbose` lets Spark's own output through when this call starts Spark.
    """
    timezone, year = check_timezone(timezone), check_year(year)
    flink_version = check_flink_version(flink_version)
    rules = rules if rules is not None else load_rules(rules_dirs)  # a bad rule fails here, before Spark starts
    check_knowledge()
    with WorkDir(work_dir, keep=keep_work_dir) as work:
        started = time.perf_counter()
        manifest = ingest(paths, work.path, year=year, max_unpacked=max_unpacked)
        timings = {"ingest_s": round(time.perf_counter() - started, 3)}
        matcher = None
        if spark is None:
            from .runtime.spark import spark_session

            building = beside(rules_matcher, rules)  # while this thread waits for the JVM to start
            spark = spark_session(verbose=verbose)
            matcher = building.result()
        timings["spark_ready_s"] = round(time.perf_counter() - started, 3)
        done = diagnose_bundles(
            spark,
            [manifest],
            work.path,
            rules,
            timezone=timezone,
            flink_version=flink_version,
            started=started,
            matcher=matcher,
        )
        report = done.reports[0]
        return masked_replace(  # still the masked model the way out knows: not masked a second time
            report,
            timings={**timings, **report.timings},
            work_dir=str(work.path) if work.keep else None,
        )


def rules_matcher(rules: list[Rule]) -> Matcher:
    """The scan's matcher of `rules` and the metrics' lines (with the failure catalogue's index): built while
    the JVM starts when `diagnose` starts one (~0.2 s of Python, most of it the prefilter's patterns)."""
    return build_matcher(rules, tuple(metric.line for metric in load_metrics()))


def check_knowledge() -> None:
    """Load (and so check) the analytics' knowledge: a broken file stops the run before Spark starts."""
    load_metrics(), analytics_rules(), config_knowledge()


@dataclass(frozen=True)
class Diagnoses:
    """What diagnose_bundles found: each bundle's report, in the order given, with the findings it rests on
    (the fleet's lake keeps them) and the failure catalogue's hits in it, and the events table of them all."""

    reports: list[Report]
    findings: list[list[Finding]]
    catalogue_hits: list[list[CatalogueHit]]  # per bundle, the catalogue entries its events matched
    events: EventsResult
    manifest: Manifest  # every bundle's sources, numbered as the events table numbers them
    bundle_of: dict[int, int]  # source id (as numbered here) -> the bundle's position


def diagnose_bundles(
    spark: SparkSession,
    manifests: Sequence[Manifest],
    work: Path,
    rules: list[Rule],
    *,
    timezone: str = "UTC",
    flink_version: str | None = None,
    started: float | None = None,
    matcher: Matcher | None = None,
) -> Diagnoses:
    """The one diagnosis core: the bundles' sources (as ingest read them) -> each bundle's report.

    The Spark stages run once over every bundle; each bundle is then diagnosed on its own findings, measures and
    templates: its Flink version (unless `flink_version` says it), the rules that hold for it, the analytics,
    correlation, the fallback and the unexplained errors, exactly as for a bundle alone. `matcher`: the
    `rules_matcher(rules)` built beforehand, if it was."""
    started = time.perf_counter() if started is None else started
    timings: dict[str, float] = {}

    def lap(name: str) -> None:
        timings[name] = round(time.perf_counter() - started, 3)

    combined, views, bundle_of = combine(manifests)
    metrics = load_metrics()
    matcher = matcher or rules_matcher(rules)
    events = build_events(
        spark,
        combined,
        work,
        matcher.prefilter,
        timezone=timezone,
        matcher=matcher,
        bundle_of=bundle_of,
        measured=measured_rows(metrics),
    )
    lap("events_s")
    timings["scan_tasks_cpu_s"] = round(events.tasks_cpu_s, 3)
    table = events.table(spark)
    findings, counts, catalogued = collect_evidence(
        table, events.blocks, combined, events.stats["matched"], events.stats.get("catalogued", 0), stored=events
    )
    give_back()  # what the lap's reads and collects freed: held, the later laps' peaks would stand on it
    hits: list[list[CatalogueHit]] = [[] for _ in manifests]
    for hit in catalogued:
        hits[hit.bundle].append(hit)
    lap("findings_s")
    measures = extract(table, metrics, events.blocks, combined, events.stats.get("measured"), stored=events)
    found = _by_bundle(findings, bundle_of, len(manifests))
    measured = measures.by_bundle(bundle_of, len(manifests))  # (a long run's checkpoints in columns too)
    by_id = {rule.id: rule for rule in rules}
    every = {**analytics_rules(), **by_id}
    analysed = []
    for b, view in enumerate(views):
        own = {rule: n for (bundle, rule), n in counts.items() if bundle == b}
        analysed.append(_analysed(view, found[b], own, measured[b], by_id, flink_version))
    del measures, measured  # a long run's checkpoint columns: let go before the failure catalogue is loaded
    diagnosed = [
        _concluded(view, one, hits[b], every) for b, (view, one) in enumerate(zip(views, analysed, strict=True))
    ]
    del analysed
    lap("analytics_s")
    explained = explained_events(
        f for one in diagnosed for f in [*one.findings, *(f for c in one.outcome.derived for f in c.instances)]
    )
    templates = _by_bundle(
        collect_templates(table, events.blocks, combined, explained, events.stats.get("warned"), stored=events),
        bundle_of,
        len(manifests),
    )
    known = baseline()
    lap("total_s")
    reports = [
        build_report(
            view,
            input_report(view, events.stats),
            one.findings,
            one.counts,
            one.roots,
            every,
            one.version,
            one.version_source,
            timings,
            outcome=one.outcome,
            unexplained=top_templates(templates[b], known, failure_time(one.findings, one.roots, one.outcome)),
            checkpoints=one.analytics.checkpoints,
            config_audit=one.analytics.config_audit,
        )
        for b, (view, one) in enumerate(zip(views, diagnosed, strict=True))
    ]
    return Diagnoses(reports, [one.findings for one in diagnosed], hits, events, combined, bundle_of)


@dataclass(frozen=True)
class _Analysed:
    """One bundle's findings that hold for its version, with the analytics' context findings among them."""

    findings: list[Finding]
    counts: dict[str, int]
    analytics: Analytics
    version: str | None
    version_source: str


@dataclass(frozen=True)
class _One:
    findings: list[Finding]
    counts: dict[str, int]
    roots: list[RootCause]
    outcome: Outcome
    analytics: Analytics
    version: str | None
    version_source: str


def _analysed(
    manifest: Manifest,
    findings: list[Finding],
    counts: dict[str, int],
    measures: list[Measure],
    rules: dict[str, Rule],
    flink_version: str | None,
) -> _Analysed:
    """One bundle on the driver: its version, the rules that hold for it, the analytics. Apart from what
    follows (_concluded) so that a long run's checkpoint columns are let go before the failure catalogue is
    loaded: held together they made the driver's peak (extract's columns and the catalogue's ~65 MiB)."""
    version, version_source = (
        (flink_version, "option")
        if flink_version
        else detect(
            [f.captures["version"] for f in findings if f.rule == "flink-version" and f.captures.get("version")],
            [s.document for s in manifest.sources if s.kind == "flink-config" and isinstance(s.document, dict)],
            [s.document for s in manifest.sources if s.kind == "flink-rest-json"],
        )
    )
    findings, counts = keep_applicable(findings, counts, rules, version)  # rules limited to other versions
    analytics = analyse(measures, manifest, version)  # checkpoint series, configuration audit: context findings
    findings, counts = findings + analytics.findings, {**analytics.counts, **counts}
    return _Analysed(findings, counts, analytics, version, version_source)


def _concluded(manifest: Manifest, one: _Analysed, hits: list[CatalogueHit], every: dict[str, Rule]) -> _One:
    """One analysed bundle's correlation and fallback (the failure catalogue's messages found in it)."""
    roots = correlate(one.findings, one.counts, every)
    catalogued = Catalogued.of(hits, load_catalogue()) if hits else Catalogued()  # the code's own messages found
    outcome = fallback(one.findings, one.counts, roots, every, {s.kind for s in manifest.sources}, catalogued)
    return _One(one.findings, one.counts, roots, outcome, one.analytics, one.version, one.version_source)


def combine(manifests: Sequence[Manifest]) -> tuple[Manifest, list[Manifest], dict[int, int]]:
    """Every bundle's sources in one manifest, numbered one after another (a bundle's sources keep their order);
    each bundle's own manifest with its sources so numbered (its findings' `sid`s point there); each source's
    bundle. One bundle is itself: its sources are numbered from 0 already."""
    if len(manifests) == 1:
        only = manifests[0]
        return only, [only], dict.fromkeys((s.id for s in only.sources), 0)
    every: list[Source] = []
    views, bundle_of, years = [], {}, []
    for b, manifest in enumerate(manifests):
        own = tuple(replace(source, id=len(every) + i) for i, source in enumerate(manifest.sources))
        bundle_of.update(dict.fromkeys((s.id for s in own), b))
        every += own
        views.append(replace(manifest, sources=own))
        years += [manifest.bundle_year] if manifest.bundle_year else []
    year = max(set(years), key=years.count) if years else None  # the year syslog lines without one take
    skipped = tuple(item for manifest in manifests for item in manifest.skipped)
    return Manifest(tuple(every), manifests[0].work_dir, year, skipped), views, bundle_of


class _FromSource(Protocol):
    @property
    def sid(self) -> int: ...


_Item = TypeVar("_Item", bound=_FromSource)


def _by_bundle(items: Sequence[_Item], bundle_of: dict[int, int], bundles: int) -> list[list[_Item]]:
    """Items that carry a source id (`sid`: findings, measures, templates) split by the bundle of their source."""
    split: list[list[_Item]] = [[] for _ in range(bundles)]
    for item in items:
        split[bundle_of[item.sid]].append(item)
    return split
