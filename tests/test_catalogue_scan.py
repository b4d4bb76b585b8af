"""Catalogue entries matched in the one scan, and their hits aggregated as the rules' matches are (scan/catalogue.py,
diagnosis/findings.collect_catalogue_hits), on a real lab recording with a small catalogue in the fixed shape
(tests/data/catalogue/scan-test.json: entries as tools/catalogue generated them from the code that prints them)."""

from __future__ import annotations

import json
import tarfile
from types import SimpleNamespace

import pytest

from conftest import DATA

BUNDLE = DATA / "lab" / "1.20.3" / "network-buffers.tar.gz"
NO_TOKENS, BUFFERS, IO_EXCEPTION, SWITCHED = (
    "flink:07a12763ccc8",
    "flink:8a030b9dd455",
    "jdk:eae3171d2a0a",
    "flink:c8e958a5b1b3",
)


def small_catalogue():
    entries = json.loads((DATA / "catalogue" / "scan-test.json").read_text("utf-8"))["entries"]
    return SimpleNamespace(entries=tuple(SimpleNamespace(**entry) for entry in entries))


def logs(tmp_path):
    with tarfile.open(BUNDLE) as archive:
        archive.extractall(tmp_path, filter="data")
    return {p.name: p.read_text("utf-8").split("\n") for p in tmp_path.rglob("*.log")}


@pytest.fixture(scope="module")
def hits(spark, rules, tmp_path_factory):
    from flinkdoctor.analytics import load_metrics
    from flinkdoctor.diagnosis.findings import collect_catalogue_hits
    from flinkdoctor.scan.events import build_events
    from flinkdoctor.scan.matcher import build_matcher
    from flinkdoctor.sources.ingest import ingest

    work = tmp_path_factory.mktemp("catalogue")
    manifest = ingest([BUNDLE], work)
    matcher = build_matcher(rules, tuple(m.line for m in load_metrics()), catalogue=small_catalogue())
    events = build_events(spark, manifest, work, matcher.prefilter, matcher=matcher)
    found = collect_catalogue_hits(events.table(spark), events.blocks, manifest, events.stats["catalogued"])
    return {hit.entry: hit for hit in found}, manifest, events.stats


def test_a_warning_the_code_logs_is_a_hit_each_time(hits, tmp_path):
    """DefaultDelegationTokenManager's WARN line: one hit per line printed, each instance that line."""
    found, manifest, _ = hits
    lines = logs(tmp_path)
    printed = [(name, n + 1) for name, text in lines.items() for n, line in enumerate(text) if NO_TOKENS_TEXT in line]
    hit = found[NO_TOKENS]
    assert hit.count == len(printed) > 0
    paths = {s.id: s.path.rsplit("/", 1)[-1] for s in manifest.sources}
    assert sorted((paths[i.sid], i.line) for i in hit.instances) == sorted(printed)
    assert all(i.level == "WARN" and i.text.endswith(NO_TOKENS_TEXT) and i.time for i in hit.instances)


def test_a_message_below_the_first_line_of_a_trace_is_a_hit_on_its_line(hits, tmp_path):
    """The thrown message sits on a `Caused by:` line of a stack trace: the hit names that line, and the same
    event's exception class (an `exception` entry) is a hit too; no stack frame is ever a hit's line."""
    found, manifest, _ = hits
    lines = logs(tmp_path)
    paths = {s.id: s.path.rsplit("/", 1)[-1] for s in manifest.sources}
    for entry, needle in (
        (BUFFERS, "Insufficient number of network buffers: required"),
        (IO_EXCEPTION, "java.io.IOException"),
    ):
        hit = found[entry]
        in_logs = [i for i in hit.instances if paths[i.sid] in lines]  # (the REST answers' traces are hits too)
        assert hit.count >= len(in_logs) >= 1
        for instance in in_logs:
            printed = lines[paths[instance.sid]][instance.line - 1]
            assert needle in printed and not printed.lstrip().startswith("at ")
            assert instance.text == printed.rstrip()[:600]
            assert instance.event_line <= instance.line < instance.event_line + instance.event_lines


def test_healthy_info_lines_are_no_hits(hits, tmp_path):
    """The Task's state change (WARN in Flink 1.11, INFO since) matches every `switched from` INFO line of a
    healthy start; only events that can be failure evidence (WARN+, a trace, no header) are hits."""
    found, _, _ = hits
    lines = logs(tmp_path)
    switched = sum(1 for text in lines.values() for line in text if " INFO " in line and ") switched from " in line)
    assert switched > 10
    hit = found.get(SWITCHED)
    assert hit is None or all(i.level in ("WARN", "ERROR") or i.event_lines > 1 for i in hit.instances)
    assert hit is None or hit.count < switched


def test_without_a_catalogue_the_scan_records_no_hit(hits):
    from flinkdoctor.scan.matcher import build_matcher

    assert build_matcher([], catalogue=None).catalogue is None
    assert hits[2]["catalogued"] == sum(h.count for h in hits[0].values())


NO_TOKENS_TEXT = "No tokens obtained so skipping notifications"


def test_bundles_diagnosed_together_get_each_the_hits_it_gets_alone(spark, rules, tmp_path):
    """The one diagnosis core with the shipped catalogue: two lab runs scanned together (as a fleet is) give each
    bundle the catalogue hits it gets alone, counts and instances, none of the other's."""
    from flinkdoctor.pipeline import diagnose_bundles
    from flinkdoctor.sources.ingest import ingest

    bundles = [BUNDLE, DATA / "lab" / "2.1.1" / "heap-oom.tar.gz"]
    manifests = [ingest([b], tmp_path / f"b{i}") for i, b in enumerate(bundles)]
    together = diagnose_bundles(spark, manifests, tmp_path / "together", rules)

    def seen(hits, manifest):
        paths = {s.id: s.path.rsplit("/", 1)[-1] for s in manifest.sources}
        return {hit.entry: (hit.count, [(paths[i.sid], i.line, i.time, i.text) for i in hit.instances]) for hit in hits}

    for b, bundle in enumerate(bundles):
        alone = diagnose_bundles(spark, [ingest([bundle], tmp_path / f"a{b}")], tmp_path / f"alone{b}", rules)
        mine = seen(together.catalogue_hits[b], together.manifest)
        assert mine == seen(alone.catalogue_hits[0], alone.manifest), bundle
        assert mine and all(hit.bundle == b for hit in together.catalogue_hits[b])
        own = {s.id for s in together.manifest.sources if together.bundle_of[s.id] == b}
        assert all(i.sid in own for hit in together.catalogue_hits[b] for i in hit.instances)


def _scanned(spark, rules, tmp_path):
    """BUNDLE scanned with the small catalogue: its manifest, events, table and the tasks' counts."""
    from flinkdoctor.analytics import load_metrics
    from flinkdoctor.scan.events import build_events
    from flinkdoctor.scan.matcher import build_matcher
    from flinkdoctor.sources.ingest import ingest

    manifest = ingest([BUNDLE], tmp_path)
    matcher = build_matcher(rules, tuple(m.line for m in load_metrics()), catalogue=small_catalogue())
    events = build_events(spark, manifest, tmp_path, matcher.prefilter, matcher=matcher)
    return manifest, events, events.table(spark), events.stats["matched"], events.stats["catalogued"]


def _shown(findings, counts, hits):
    """Every field of the findings, the counts and every field of the hits' instances, comparable."""
    return (
        sorted(
            (f.rule, f.sid, f.line, f.time, f.text, f.job_id, f.event_text, f.host, f.level, f.event_line)
            + (f.event_lines, sorted(f.captures.items()), f.checkpoint_id, f.container_id, f.hdfs_path)
            for f in findings
        ),
        counts,
        [
            (
                h.bundle,
                h.entry,
                h.count,
                [(i.sid, i.line, i.time, i.text, i.event_text, i.host, i.level, i.event_lines) for i in h.instances],
            )
            for h in hits
        ],
    )


def test_rules_and_catalogue_read_their_chosen_events_once(spark, rules, tmp_path, monkeypatch):
    """Both chosen by aggregation (FEW 0, KEEP_PER_RULE 2: few instances of many): the findings and the hits of
    collect_evidence are those of collect_findings and collect_catalogue_hits, every field, and the events they
    chose are read from the table once for the two, not once each."""
    from flinkdoctor.diagnosis import findings as fd

    manifest, events, table, matched, catalogued = _scanned(spark, rules, tmp_path)
    monkeypatch.setattr(fd, "FEW", 0)
    monkeypatch.setattr(fd, "KEEP_PER_RULE", 2)
    reads = []
    original = fd.chosen_events_of
    monkeypatch.setattr(fd, "chosen_events_of", lambda *args: reads.append(1) or original(*args))
    apart = _shown(
        *fd.collect_findings(table, events.blocks, manifest, matched),
        fd.collect_catalogue_hits(table, events.blocks, manifest, catalogued),
    )
    assert len(reads) == 2
    together = _shown(*fd.collect_evidence(table, events.blocks, manifest, matched, catalogued))
    assert len(reads) == 3
    assert together == apart
    assert apart[0] and len(apart[2]) >= 2 and any(h[2] > 2 * 2 for h in apart[2])  # some entry had more than shown


def test_few_matches_and_hits_are_read_in_one_job(spark, rules, tmp_path, monkeypatch):
    """Few matches and few hits (the tasks' counts under FEW): the findings, counts and hits of collect_evidence are
    those of collect_findings and collect_catalogue_hits, every field and in the same order, from one read of the
    events that hold either (each event's text decoded once for both, not once per kind)."""
    from flinkdoctor.diagnosis import findings as fd

    manifest, events, table, matched, catalogued = _scanned(spark, rules, tmp_path)
    assert 0 < matched <= fd.FEW and 0 < catalogued <= fd.FEW
    found, counts = fd.collect_findings(table, events.blocks, manifest, matched)
    hits = fd.collect_catalogue_hits(table, events.blocks, manifest, catalogued)
    reads, whole = [], []
    original = fd._in_detail
    monkeypatch.setattr(fd, "_in_detail", lambda *args: reads.append(1) or original(*args))
    monkeypatch.setattr(fd, "match_events", lambda *args, **kw: whole.append(1))
    monkeypatch.setattr(fd, "catalogue_events", lambda *args, **kw: whole.append(1))
    together = fd.collect_evidence(table, events.blocks, manifest, matched, catalogued)
    assert (len(reads), whole) == (1, [])
    assert [(f.rule, f.sid, f.line) for f in together[0]] == [(f.rule, f.sid, f.line) for f in found]  # the order
    assert _shown(*together) == _shown(found, counts, hits)
    assert sum(counts.values()) == matched and sum(h.count for h in hits) == catalogued
