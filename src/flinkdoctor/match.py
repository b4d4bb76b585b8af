"""Match (Spark): every rule compiles to Column expressions, evaluated over the events in one pass.

The rule tests (`flinkdoctor rules test`, tests/test_rule_cases.py) run this same compiled path, so there is no
second matcher that could drift from the product.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime

from .ingest import Manifest
from .layouts import python_regex
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
    """An RE2/Java regex that every event a rule can match must match: an alternation of each signature's
    literal, anywhere in the event for signatures that read the whole text, in its first line for those that
    read only the header message. None when some signature has no literal (every event is then a candidate).
    """
    anywhere, first_line = set(), set()
    for rule in rules:
        for sig, literal in zip(rule.signatures, rule.literals()):
            if literal is None:
                return None
            (anywhere if "text" in sig or "exception" in sig else first_line).add(re.escape(literal))
    parts = []
    if anywhere:
        parts.append("|".join(sorted(anywhere)))
    if first_line:
        parts.append(r"\A[^\n]*(?:" + "|".join(sorted(first_line)) + ")")
    return "|".join(parts) or None


def sql_str(text: str) -> str:
    """A Spark SQL string literal holding `text` exactly (regexes keep every backslash)."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n") + "'"


def _signature_sql(sig: dict, literals: list[str]) -> str:
    # plain substring tests first: most events fail one, and then no regex runs; a signature that reads only the
    # header message tests the message, not the whole event (a stack trace is thousands of characters)
    where = "text" if "text" in sig or "exception" in sig else "message"
    parts = [f"instr({where}, {sql_str(literal)}) > 0" for literal in literals]
    for key in ("text", "message", "logger", "thread"):
        if key in sig:
            parts.append(f"{key} RLIKE {sql_str(sig[key])}")
    if "exception" in sig:
        parts.append(f"exists(exceptions, e -> e RLIKE {sql_str(sig['exception'])})")
    if "level" in sig:
        parts.append("level IN (" + ", ".join(sql_str(level) for level in sig["level"]) + ")")
    return " AND ".join(parts)


def _capture_sql(rule: Rule, sig: dict) -> dict[str, str]:
    captures = {}
    for name in rule.captures:
        for key in ("text", "message", "logger", "thread"):
            index = python_regex(sig[key]).groupindex.get(name) if key in sig else None
            if index:
                captures[name] = f"regexp_extract({key}, {sql_str(sig[key])}, {index})"
                break
    return captures


def _where_sql(rule: Rule, captures: dict[str, str]) -> str:
    parts = []
    for name, bounds in rule.where.items():
        value = f"try_cast(regexp_replace({captures.get(name, 'NULL')}, '[,_]', '') AS DOUBLE)"
        if "gte" in bounds:
            parts.append(f"{value} >= {float(bounds['gte'])}")
        if "lte" in bounds:
            parts.append(f"{value} <= {float(bounds['lte'])}")
    return " AND ".join(parts)


def _line_index_sql(sig: dict) -> str:
    """Which line of the event matched: the first line holding the text signature, else the header (0)."""
    if "text" not in sig:
        return "0"
    position = f"regexp_instr(text, {sql_str(sig['text'])})"
    return f"greatest(size(split(substring(text, 1, greatest({position} - 1, 0)), '\\n')) - 1, 0)"


def rules_sql(rules: list[Rule], kinds: dict[str, list[int]]) -> str:
    """One SQL expression: the array of (rule, captures, line index) structs of the rules an event matches.

    Built as text and parsed once by Spark: building it through Column calls costs a py4j round trip each.
    """
    per_rule = []
    for rule in rules:
        sids = sorted({sid for kind in rule.sources for sid in kinds.get(kind, [])})
        options = []
        for sig, literals in zip(rule.signatures, rule.all_literals()):
            cond = _signature_sql(sig, literals)
            captures = _capture_sql(rule, sig)
            if rule.where:
                cond += " AND " + _where_sql(rule, captures)
            if rule.sources:
                cond = (f"sid IN ({', '.join(map(str, sids))}) AND " if sids else "false AND ") + cond
            capture_map = ("map(" + ", ".join(f"{sql_str(k)}, {v}" for k, v in captures.items()) + ")") \
                if captures else "CAST(map() AS map<string,string>)"
            options.append(f"CASE WHEN {cond} THEN named_struct('rule', {sql_str(rule.id)}, 'captures', "
                           f"{capture_map}, 'idx', {_line_index_sql(sig)}) END")
        per_rule.append(options[0] if len(options) == 1 else f"coalesce({', '.join(options)})")
    return f"filter(array({', '.join(per_rule)}), h -> h IS NOT NULL)"


def match_events(events, rules: list[Rule], manifest: Manifest):
    """Findings: one row per (event, rule) match, with captures and the matching line's index."""
    from pyspark.sql import functions as F

    kinds: dict[str, list[int]] = {}
    for source in manifest.text_sources:
        kinds.setdefault(source.kind, []).append(source.id)
    found = events.select("*", F.explode(F.expr(rules_sql(rules, kinds))).alias("m"))
    return found.select(
        "sid", "block", "first_rel", "time", "host", "job_id", "checkpoint_id", "hdfs_path", "container_id",
        F.col("m.rule").alias("rule"), F.col("m.captures").alias("captures"), F.col("m.idx").alias("idx"),
        F.substring(F.element_at(F.split("text", "\n"), F.col("m.idx") + 1), 1, 600).alias("line_text"),
    )


def collect_findings(findings_df, blocks: dict, manifest: Manifest) -> tuple[list[Finding], dict[str, int]]:
    """Driver side: the earliest and latest instances of each rule, and every rule's exact count."""
    from pyspark import StorageLevel
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    findings_df = findings_df.persist(StorageLevel.MEMORY_AND_DISK)  # the matching runs once, whatever follows
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
    findings_df.unpersist()
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
