"""Match (Spark): every rule compiles to Column expressions, evaluated over the events in one pass.

The rule tests (`flinkdoctor rules test`, tests/test_rule_cases.py) run this same compiled path, so there is no
second matcher that could drift from the product.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime

from .ingest import Manifest
from .layouts import _python_regex
from .rulebook import Rule

KEEP_PER_RULE = 40  # earliest and latest instances of each rule kept as evidence; counts stay exact
FEW = 20_000        # up to this many findings are collected whole; more are thinned per rule in Spark


@dataclass
class Finding:
    """One matched event."""
    rule: str
    sid: int
    line: int            # line number in the source file as the user has it
    time: datetime | None
    host: str | None
    job_id: str | None
    text: str            # the line that matched
    captures: dict = field(default_factory=dict)
    checkpoint_id: str | None = None
    hdfs_path: str | None = None
    container_id: str | None = None


def prefilter_regex(rules: list[Rule]) -> str | None:
    """An RE2/Java alternation of every signature's literal: an event matching none of them cannot match a rule.

    None when some signature has no literal (then every event is a candidate).
    """
    literals = set()
    for rule in rules:
        for literal in rule.literals():
            if literal is None:
                return None
            literals.add(literal)
    return "|".join(re.escape(lit) for lit in sorted(literals)) if literals else None


def _signature_condition(sig: dict, F):
    cond = F.lit(True)
    for key, column in (("text", "text"), ("message", "message"), ("logger", "logger"), ("thread", "thread")):
        if key in sig:
            cond = cond & F.col(column).rlike(sig[key])
    if "exception" in sig:
        cond = cond & F.exists("exceptions", lambda e: e.rlike(sig["exception"]))
    if "level" in sig:
        cond = cond & F.col("level").isin(sig["level"])
    literal = sig.get("literal")
    if literal:
        cond = F.col("text").contains(literal) & cond
    return cond


def _captures(rule: Rule, sig: dict, F):
    pairs = []
    for name in rule.captures:
        for key in ("text", "message", "logger", "thread"):
            if key in sig and name in _python_regex(sig[key]).groupindex:
                index = _python_regex(sig[key]).groupindex[name]
                pairs += [F.lit(name), F.regexp_extract(F.col(key), sig[key], index)]
                break
    return F.create_map(*pairs) if pairs else F.create_map().cast("map<string,string>")


def _where(rule: Rule, captures, F):
    cond = F.lit(True)
    for name, bounds in rule.where.items():
        value = F.regexp_replace(captures[name], "[,_]", "").try_cast("double")
        if "gte" in bounds:
            cond = cond & (value >= bounds["gte"])
        if "lte" in bounds:
            cond = cond & (value <= bounds["lte"])
    return cond


def _line_index(sig: dict, F):
    """Which line of the event matched: the first line holding the text signature, else the header (0)."""
    if "text" not in sig:
        return F.lit(0)
    pos = F.regexp_instr(F.col("text"), F.lit(sig["text"]))
    return F.greatest(F.size(F.split(F.substring(F.col("text"), 1, F.greatest(pos - 1, F.lit(0))), "\n")) - 1,
                      F.lit(0))


def match_events(events, rules: list[Rule], manifest: Manifest):
    """Findings: one row per (event, rule) match, with captures and the matching line's index."""
    from pyspark.sql import functions as F

    kinds: dict[str, list[int]] = {}
    for source in manifest.text_sources:
        kinds.setdefault(source.kind, []).append(source.id)
    per_rule = []
    for rule in rules:
        options = []
        for sig in rule.signatures:
            captures = _captures(rule, sig, F)
            cond = _signature_condition(sig, F)
            if rule.sources:
                sids = [sid for kind in rule.sources for sid in kinds.get(kind, [])]
                cond = F.col("sid").isin(sids) & cond
            options.append(F.when(cond, F.struct(captures.alias("captures"), _line_index(sig, F).alias("idx"))))
        hit = F.coalesce(*options) if len(options) > 1 else options[0]
        if rule.where:
            hit = F.when(_where(rule, hit["captures"], F), hit)
        per_rule.append(F.when(hit.isNotNull(), F.struct(F.lit(rule.id).alias("rule"),
                                                         hit["captures"].alias("captures"),
                                                         hit["idx"].alias("idx"))))
    hits = F.filter(F.array(*per_rule), lambda h: h.isNotNull())
    found = events.select("*", F.explode(hits).alias("m"))
    return found.select(
        "sid", "block", "first_rel", "time", "host", "job_id", "checkpoint_id", "hdfs_path", "container_id",
        F.col("m.rule").alias("rule"), F.col("m.captures").alias("captures"), F.col("m.idx").alias("idx"),
        F.substring(F.element_at(F.split("text", "\n"), F.col("m.idx") + 1), 1, 600).alias("line_text"),
    )


def collect_findings(findings_df, blocks: dict, manifest: Manifest) -> tuple[list[Finding], dict[str, int]]:
    """Driver side: the earliest and latest instances of each rule, and every rule's exact count."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    rows = findings_df.limit(FEW + 1).collect()  # one stage, no shuffle: the usual case
    if len(rows) > FEW:
        order = Window.partitionBy("rule").orderBy(F.col("time").asc_nulls_first(), "sid", "block", "first_rel")
        ranked = (findings_df
                  .withColumn("rn", F.row_number().over(order))
                  .withColumn("cnt", F.count(F.lit(1)).over(Window.partitionBy("rule"))))
        rows = ranked.where((F.col("rn") <= KEEP_PER_RULE) | (F.col("rn") > F.col("cnt") - KEEP_PER_RULE)).collect()
        counts = {row.rule: row.cnt for row in rows}
    else:
        counts = {}
        for row in rows:
            counts[row.rule] = counts.get(row.rule, 0) + 1
    offsets = block_offsets(blocks)
    sources = {s.id: s for s in manifest.sources}
    findings = []
    for row in rows:
        source = sources[row.sid]
        line = source.fixed_line or \
            source.line_offset + offsets.get((row.sid, row.block), 0) + row.first_rel + row.idx
        findings.append(Finding(
            rule=row.rule, sid=row.sid, line=line, time=row.time, host=row.host or source.host,
            job_id=row.job_id, text=(row.line_text or "").rstrip(), captures=dict(row.captures or {}),
            checkpoint_id=row.checkpoint_id, hdfs_path=row.hdfs_path, container_id=row.container_id))
    findings.sort(key=lambda f: (f.time is None, f.time or datetime.min, f.sid, f.line))
    return findings, counts


def block_offsets(blocks: dict) -> dict[tuple[int, int], int]:
    """Lines in the blocks before each block of a file: turns block-relative line numbers into file ones."""
    offsets = {}
    for sid, spans in blocks.items():
        total = 0
        for block, lines in spans:
            offsets[(sid, block)] = total
            total += lines
    return offsets
