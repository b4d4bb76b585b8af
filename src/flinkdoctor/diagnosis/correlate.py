"""Correlate (driver, findings only): link findings by the causal relations the rules declare, rank root causes.

A finding can explain another when its rule says so (`explains`: a rule or a category), the two are in the same
scope (host, job, source; unknown counts as compatible) and the effect falls in the window around the cause. The
window opens at the cause's onset, not its log time: a line such as "have not heard from server in 129565ms" or
"stuck for 22s" says the condition began that long before it was written, and a stalled process writes late.
A root cause is a `cause` finding that nothing else present explains; when two explain each other, the earlier
onset wins. Symptoms never outrank their cause.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from ..knowledge.rulebook import Relation, Rule
from .findings import Finding


@dataclass
class RootCause:
    rule: Rule
    instances: list[Finding]
    count: int
    chain: list[tuple[Rule, Finding, int]]  # (rule, instance, depth), in causal then time order
    confidence: float
    score: tuple[int, int, int, datetime] | tuple[()] = field(default=())


def onset(finding: Finding, rule: Rule) -> datetime | None:
    """When the condition a finding reports began: its time less the duration its rule's `onset` capture says
    (a duration no calendar holds, or no number, is read as none: the finding's own time)."""
    if finding.time is None:
        return None
    if rule.onset and finding.captures.get(rule.onset):
        capture = rule.captures.get(rule.onset)
        unit = capture.unit if capture and capture.unit else "ms"
        try:
            amount = float(finding.captures[rule.onset])
            return finding.time - timedelta(milliseconds=amount * (1000 if unit == "s" else 1))
        except (ValueError, OverflowError):  # ("stuck for 99999999999999s", "nan")
            return finding.time
    return finding.time


def _covers(relation: Relation, target: Rule) -> bool:
    return relation.rule == target.id if relation.rule else relation.category == target.category


def _in_scope(scope: str, a: Finding, b: Finding) -> bool:
    if scope == "source":
        return a.sid == b.sid
    if scope == "host":
        return not (a.host and b.host and a.host != b.host)
    if scope == "job":
        return not (a.job_id and b.job_id and a.job_id != b.job_id)
    return True


def _edge(
    cause_rule: Rule, causes: list[Finding], effect_rule: Rule, effects: list[Finding]
) -> tuple[Finding, Finding] | None:
    """The first (cause, effect) pair, causes then effects in their lists' order, that satisfies one of
    cause_rule's relations to effect_rule, or None: the two in the relation's scope, and the effect in the cause's
    window (from its onset less `before_ms` to its log time plus `after_ms`; a cause or an effect without a time
    cannot be placed, so it cannot be ruled out).
    Each cause's onset is read once, and its window finds its effects by time (bisect), not by trying every
    pair: two rules' kept instances (KEEP_PER_RULE earliest and latest each) are mostly far apart in time."""
    relations = [relation for relation in cause_rule.explains if _covers(relation, effect_rule)]
    if not relations or not effects:
        return None
    starts = [onset(cause, cause_rule) for cause in causes]
    untimed = [i for i, effect in enumerate(effects) if effect.time is None]
    by_time: list[tuple[datetime, int]] | None = None  # (sorted only when a cause can be placed in time)
    times: list[datetime] = []
    for relation in relations:
        before, after = timedelta(milliseconds=relation.before_ms), timedelta(milliseconds=relation.after_ms)
        for cause, start in zip(causes, starts, strict=True):
            if start is None:  # a cause without a time: every effect is in its window
                candidates: Iterable[int] = range(len(effects))
            else:
                if by_time is None:
                    by_time = sorted((effect.time, i) for i, effect in enumerate(effects) if effect.time is not None)
                    times = [t for t, _ in by_time]
                low = bisect_left(times, start - before)
                high = bisect_right(times, (cause.time or start) + after)
                candidates = sorted([*untimed, *(i for _, i in by_time[low:high])])
            for i in candidates:
                if _in_scope(relation.scope, cause, effects[i]):
                    return cause, effects[i]
    return None


def _edges(present: list[Rule], by_rule: dict[str, list[Finding]]) -> dict[str, dict[str, Finding]]:
    """cause rule -> effect rule -> the effect instance that links them, over every pair of rules present."""
    edges: dict[str, dict[str, Finding]] = defaultdict(dict)
    for cause_rule in present:
        for effect_rule in present:
            if cause_rule.id != effect_rule.id:
                pair = _edge(cause_rule, by_rule[cause_rule.id], effect_rule, by_rule[effect_rule.id])
                if pair:
                    edges[cause_rule.id][effect_rule.id] = pair[1]
    return edges


def correlate(findings: list[Finding], counts: dict[str, int], rules: dict[str, Rule]) -> list[RootCause]:
    by_rule: dict[str, list[Finding]] = defaultdict(list)
    for finding in findings:
        by_rule[finding.rule].append(finding)
    present = [rules[r] for r in by_rule if rules[r].role != "context"]
    edges = _edges(present, by_rule)

    def first_onset(rule: Rule) -> datetime:
        times = [t for t in (onset(f, rule) for f in by_rule[rule.id]) if t is not None]
        return min(times) if times else datetime.max

    def explained(rule: Rule) -> bool:
        for cause_id, effects in edges.items():
            if rule.id not in effects:
                continue
            mutual = cause_id in edges.get(rule.id, {})
            cause = rules[cause_id]
            if not mutual or _began_first(cause, first_onset(cause), rule, first_onset(rule), by_rule):
                return True
        return False

    roots = []
    for rule in present:
        if rule.role != "cause" or explained(rule):
            continue
        chain = _chain(rule, edges, rules)
        count = counts.get(rule.id, len(by_rule[rule.id]))
        instances = by_rule[rule.id]
        timed = any(f.time for f in instances)
        confidence = min(0.99, rule.confidence + 0.03 * len(chain) - (0 if timed else 0.05))
        root = RootCause(rule, instances, count, chain, round(confidence, 2))
        root.score = (-len(chain), -rule.priority, -count, first_onset(rule))
        roots.append(root)
    roots.sort(key=lambda r: r.score)
    return roots


def _began_first(
    cause: Rule, cause_onset: datetime, rule: Rule, rule_onset: datetime, by_rule: dict[str, list[Finding]]
) -> bool:
    """Of two rules that explain each other, whether `cause` began first: by onset; at the same onset (or when
    neither can be placed in time: a log without dates) by line order in a source both were found in, else by
    priority. Strict, so that one of the two stays a root cause."""
    if cause_onset != rule_onset:
        return cause_onset < rule_onset
    shared = sorted({f.sid for f in by_rule[cause.id]} & {f.sid for f in by_rule[rule.id]})
    if shared:
        first = [min(f.line for f in by_rule[r.id] if f.sid == shared[0]) for r in (cause, rule)]
        if first[0] != first[1]:
            return first[0] < first[1]
    return (-cause.priority, cause.id) < (-rule.priority, rule.id)


def _chain(root: Rule, edges: dict[str, dict[str, Finding]], rules: dict[str, Rule]) -> list[tuple[Rule, Finding, int]]:
    """Breadth-first walk of what the root explains, each rule once, ordered by depth then time."""
    seen = {root.id}
    frontier = [root.id]
    chain = []
    depth = 0
    while frontier:
        depth += 1
        nxt = []
        for cause_id in frontier:
            for effect_id, instance in edges.get(cause_id, {}).items():
                if effect_id not in seen:
                    seen.add(effect_id)
                    chain.append((rules[effect_id], instance, depth))
                    nxt.append(effect_id)
        frontier = nxt
    chain.sort(key=lambda item: (item[2], item[1].time is None, item[1].time or datetime.min))
    return chain
