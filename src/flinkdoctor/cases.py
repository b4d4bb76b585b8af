"""Rule cases: every rule's real-log examples, run through the same Spark scan tasks and matcher as `diagnose`."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

from .diagnosis.findings import match_events
from .errors import RuleError
from .knowledge.rulebook import Rule
from .scan.events import build_events
from .scan.matcher import build_matcher
from .sources.ingest import Source, ingest
from .sources.layouts import layout_ids


@dataclass
class CaseResult:
    rule: str
    index: int
    expect_match: bool
    matched: bool
    source: str
    text: str

    @property
    def passed(self) -> bool:
        return self.expect_match == self.matched

    @property
    def name(self) -> str:
        return f"{self.rule}[{self.index}:{'match' if self.expect_match else 'no_match'}]"


def run_cases(spark, rules: list[Rule], work_dir: str | Path | None = None) -> list[CaseResult]:
    """One Spark pass over all cases: each case is its own small source file; a case passes when its rule
    fires (or, for a near-miss, does not fire) on that file."""
    unknown = [
        f"{rule.path}:{case.line}: cases: layout {case.layout!r} is not a layout of sources/layouts/layouts.yaml"
        for rule in rules
        for case in rule.cases
        if case.layout and case.layout not in layout_ids()
    ]
    if unknown:
        raise RuleError("\n".join(unknown))
    work = Path(work_dir or tempfile.mkdtemp(prefix="flinkdoctor-cases-"))
    bundle = work / "cases"
    planned = []
    for rule in rules:
        for index, case in enumerate(rule.cases):
            path = bundle / rule.id / f"{index}.log"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(case.text, encoding="utf-8")
            planned.append((rule, index, case, f"{rule.id}/{index}.log"))
    if not planned:
        return []
    read = ingest([bundle], work / "run")
    told = {
        rel: (case.kind or (rule.sources[0] if rule.sources else None), case.layout) for rule, _, case, rel in planned
    }
    manifest = replace(read, sources=tuple(_as_told(s, *told.get(s.path, (None, None))) for s in read.sources))
    by_path = {s.path: s for s in manifest.sources}
    matcher = build_matcher(rules)
    events = build_events(spark, manifest, work / "run", matcher.prefilter, matcher=matcher)
    found = match_events(events.table(spark), detail=False).select("sid", "rule").distinct().collect()
    fired = {(row.sid, row.rule) for row in found}
    results = []
    for rule, index, case, rel in planned:
        sid = by_path[rel].id
        results.append(CaseResult(rule.id, index, case.expect_match, (sid, rule.id) in fired, case.source, case.text))
    return results


def _as_told(source: Source, kind: str | None, layout: str | None) -> Source:
    """The source as its case says to read it: of the rule's kind, in the case's layout (else as ingest found)."""
    return replace(source, kind=kind or source.kind, layout=layout or source.layout)
