"""Match (Spark): every rule compiles to Column expressions, evaluated over the events in one pass.

The rule tests (`flinkdoctor rules test`, tests/test_rule_cases.py) run this same compiled path, so there is no
second matcher that could drift from the product.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial

from .events import block_offsets
from .ingest import Manifest
from .prefilter import signature_numbers
from .regexes import python_regex
from .rulebook import Rule, Signature

# Entities a finding carries (rules capture their own values on top of these); taken from matched events only.
ENTITIES = {
    "job_id": r"(?:[Jj]ob(?: ?[Ii]d)?|responsible for|Job [^(\n]{0,200}\()[ :=]*([0-9a-f]{32})\b",
    "checkpoint_id": r"(?:[Cc]heckpoint|chk-)\s?(\d+)\b",
    "container_id": r"(container_(?:e\d+_)?\d+_\d+_\d+_\d+)",
    "hdfs_path": r"((?:hdfs|viewfs|s3a?|oss|file):/{0,3}[^\s'\"]+|No lease on (/\S+))",
}
# The exception chain of an event (its own exception and every "Caused by"), for `exception` signatures.
EXCEPTION_LINE = (
    r"(?m)^(?:\s*Caused by: |\s*)?((?:[a-zA-Z_$][\w$]*\.)+[A-Z][\w$]*(?:Exception|Error|Throwable"
    r"|Failure)(?:\{[^\n]*|:[^\n]*)?)$"
)

EVENT_TEXT_MAX, EVENT_HEAD, EVENT_TAIL = 20_000, 4_000, 12_000  # chars of an event a finding keeps
OMITTED = "\u2026 lines omitted \u2026"
KEEP_PER_RULE = 40  # earliest and latest instances of each rule kept as evidence; counts stay exact
FEW = 20_000  # up to this many findings are collected whole; more are thinned per rule in Spark


@dataclass
class Finding:
    """One matched event."""

    rule: str
    sid: int
    line: int  # line number in the source file as the user has it
    time: datetime | None
    host: str | None
    job_id: str | None
    text: str  # the line that matched
    captures: dict = field(default_factory=dict)
    checkpoint_id: str | None = None
    hdfs_path: str | None = None
    container_id: str | None = None
    level: str | None = None
    # the whole event, for deriving a cause from its exception chain (fallback.py): head and tail of a long one,
    # with OMITTED between; lines are numbered from event_line (head) and back from event_line + event_lines - 1
    event_text: str = ""
    event_line: int = 0
    event_lines: int = 1
    # file line of the event's i-th line (0-based) when the source was read into another shape (shapes.py): its
    # lines are then not consecutive lines of the file
    line_of: Callable[[int], int] | None = field(default=None, repr=False, compare=False)

    def event_file_line(self, i: int) -> int:
        """The file line of the event's i-th line (0-based)."""
        return self.line_of(i) if self.line_of else self.event_line + i


def sql_str(text: str) -> str:
    """A Spark SQL string literal holding `text` exactly (regexes keep every backslash)."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n") + "'"


def _signature_sql(sig: Signature, number: int) -> str:
    # the prefilter's verdict first: an event without the signature's literals runs none of its regexes
    parts = [f"array_contains(sigs, {number})"]
    if sig.level:  # before the regexes: a WARN stack trace need not be searched for an ERROR signature
        parts.append("level IN (" + ", ".join(sql_str(level) for level in sig.level) + ")")
    for key, regex in sig.regexes():
        if key != "exception":
            parts.append(f"{key} RLIKE {sql_str(regex)}")
    if sig.exception is not None:  # last: searching the chain costs the most
        parts.append(f"exists(exceptions, e -> e RLIKE {sql_str(sig.exception)})")
    return " AND ".join(parts)


def _capture_sql(rule: Rule, sig: Signature) -> dict[str, str]:
    captures = {}
    for name in rule.captures:
        for key, regex in sig.regexes():
            index = python_regex(regex).groupindex.get(name) if key != "exception" else None
            if index:
                captures[name] = f"regexp_extract({key}, {sql_str(regex)}, {index})"
                break
    return captures


def _where_sql(rule: Rule, captures: dict[str, str]) -> str:
    parts = []
    for name, bounds in rule.where.items():
        value = f"try_cast(regexp_replace({captures.get(name, 'NULL')}, '[,_]', '') AS DOUBLE)"
        if bounds.gte is not None:
            parts.append(f"{value} >= {float(bounds.gte)}")
        if bounds.lte is not None:
            parts.append(f"{value} <= {float(bounds.lte)}")
    return " AND ".join(parts)


def _line_index_sql(sig: Signature) -> str:
    """Which line of the event matched: the first line holding the text signature, else the header (0)."""
    if sig.text is None:
        return "0"
    position = f"regexp_instr(text, {sql_str(sig.text)})"
    return f"greatest(size(split(substring(text, 1, greatest({position} - 1, 0)), '\\n')) - 1, 0)"


def rules_sql(rules: list[Rule], kinds: dict[str, list[int]]) -> str:
    """One SQL expression: the array of (rule, captures, line index) structs of the rules an event matches.

    Built as text and parsed once by Spark: building it through Column calls costs a py4j round trip each.
    """
    per_rule = []
    for rule, numbers in zip(rules, signature_numbers(rules), strict=True):
        sids = sorted({sid for kind in rule.sources for sid in kinds.get(kind, [])})
        options = []
        for sig, number in zip(rule.signatures, numbers, strict=True):
            cond = _signature_sql(sig, number)
            captures = _capture_sql(rule, sig)
            if rule.where:
                cond += " AND " + _where_sql(rule, captures)
            if rule.sources:
                cond = (f"sid IN ({', '.join(map(str, sids))}) AND " if sids else "false AND ") + cond
            capture_map = (
                ("map(" + ", ".join(f"{sql_str(k)}, {v}" for k, v in captures.items()) + ")")
                if captures
                else "CAST(map() AS map<string,string>)"
            )
            options.append(
                f"CASE WHEN {cond} THEN named_struct('rule', {sql_str(rule.id)}, 'captures', "
                f"{capture_map}, 'idx', {_line_index_sql(sig)}) END"
            )
        per_rule.append(options[0] if len(options) == 1 else f"coalesce({', '.join(options)})")
    return f"filter(array({', '.join(per_rule)}), h -> h IS NOT NULL)"


def match_events(events, rules: list[Rule], manifest: Manifest, detail: bool = True):
    """Findings: one row per (event, rule) match. With `detail`, also the captures, the matching line and the
    entities (job, checkpoint, container, path); without, only what counting and choosing evidence need."""
    from pyspark.sql import functions as F

    kinds: dict[str, list[int]] = {}
    for source in manifest.text_sources:
        kinds.setdefault(source.kind, []).append(source.id)
    # the exception chain only for events that could match an exception signature: a regex over stack traces
    numbers = [
        n
        for rule, ns in zip(rules, signature_numbers(rules), strict=True)
        for sig, n in zip(rule.signatures, ns, strict=True)
        if sig.exception is not None
    ]
    exceptions = (
        (
            f"CASE WHEN arrays_overlap(sigs, array({', '.join(map(str, numbers))})) "
            f"THEN regexp_extract_all(text, {sql_str(EXCEPTION_LINE)}, 1) END"
        )
        if numbers
        else "NULL"
    )
    found = events.withColumn("exceptions", F.expr(exceptions).cast("array<string>")).select(
        "*", F.explode(F.expr(rules_sql(rules, kinds))).alias("m")
    )
    keys = ["sid", "block", "first_rel", "time", F.col("m.rule").alias("rule")]
    if not detail:
        return found.select(*keys)
    entities = []
    for name, pattern in ENTITIES.items():
        extracted = F.regexp_extract("text", pattern, 1)
        if name == "hdfs_path":
            extracted = F.coalesce(F.nullif(F.regexp_extract("text", pattern, 2), F.lit("")), extracted)
        entities.append(F.nullif(extracted, F.lit("")).alias(name))
    return found.select(
        *keys,
        "host",
        *entities,
        F.col("m.captures").alias("captures"),
        F.col("m.idx").alias("idx"),
        F.substring(F.element_at(F.split("text", "\n"), F.col("m.idx") + 1), 1, 600).alias("line_text"),
        "level",
        (F.col("last_rel") - F.col("first_rel") + 1).alias("event_lines"),
        F.when(F.length("text") <= EVENT_TEXT_MAX, F.col("text"))
        .otherwise(
            F.concat(
                F.substring("text", 1, EVENT_HEAD), F.lit(f"\n{OMITTED}\n"), F.expr(f"substring(text, -{EVENT_TAIL})")
            )
        )
        .alias("event_text"),
    )


def collect_findings(
    events, rules: list[Rule], blocks: dict, manifest: Manifest
) -> tuple[list[Finding], dict[str, int]]:
    """Every rule's exact count, and its earliest and latest instances in detail.

    Matching runs twice: over all events for the counts and the choice of instances (keys only, kept in
    memory), then in detail over just the chosen events. The entities are regexes over whole stack traces:
    taken for every match they cost more than the matching itself.
    """
    from pyspark import StorageLevel
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    found = match_events(events, rules, manifest, detail=False).persist(StorageLevel.MEMORY_AND_DISK)
    rows = found.limit(FEW + 1).collect()  # one stage, no shuffle: the usual case
    if len(rows) > FEW:
        order = Window.partitionBy("rule").orderBy(F.col("time").asc_nulls_first(), "sid", "block", "first_rel")
        ranked = found.withColumn("rn", F.row_number().over(order)).withColumn(
            "cnt", F.count(F.lit(1)).over(Window.partitionBy("rule"))
        )
        rows = ranked.where((F.col("rn") <= KEEP_PER_RULE) | (F.col("rn") > F.col("cnt") - KEEP_PER_RULE)).collect()
        counts = {row.rule: row.cnt for row in rows}
    else:
        counts = {}
        for row in rows:
            counts[row.rule] = counts.get(row.rule, 0) + 1
    found.unpersist()
    return detail_findings(events, rules, blocks, manifest, rows), counts


def detail_findings(events, rules: list[Rule], blocks: dict, manifest: Manifest, rows: list) -> list[Finding]:
    """The chosen matches (rows with sid, block, first_rel, rule) in detail, as findings in time order."""
    from pyspark.sql import functions as F

    keys = ["sid", "block", "first_rel", "rule"]
    spark = events.sparkSession
    chosen = spark.createDataFrame(
        [tuple(row[k] for k in keys) for row in rows], "sid int, block long, first_rel long, rule string"
    )
    chosen_events = events.join(F.broadcast(chosen.select(*keys[:3]).distinct()), keys[:3], "left_semi")
    detailed = (
        (match_events(chosen_events, rules, manifest).join(F.broadcast(chosen), keys, "left_semi").collect())
        if rows
        else []
    )
    offsets = block_offsets(blocks)
    sources = {s.id: s for s in manifest.sources}
    findings = []
    for row in detailed:
        source = sources[row.sid]
        event_line = offsets.get((row.sid, row.block), 0) + row.first_rel  # in the staged file
        line = source.file_line(event_line + row.idx)
        findings.append(
            Finding(
                rule=row.rule,
                sid=row.sid,
                line=line,
                time=row.time,
                host=row.host or source.host,
                job_id=row.job_id,
                text=(row.line_text or "").rstrip(),
                captures=dict(row.captures or {}),
                checkpoint_id=row.checkpoint_id,
                hdfs_path=row.hdfs_path,
                container_id=row.container_id,
                level=row.level,
                event_text=row.event_text or "",
                event_line=source.file_line(event_line),
                event_lines=row.event_lines or 1,
                line_of=partial(_shifted, source.file_line, event_line) if source.line_map is not None else None,
            )
        )
    findings.sort(key=lambda f: (f.time is None, f.time or datetime.min, f.sid, f.line))
    return findings


def _shifted(file_line: Callable[[int], int], first: int, i: int) -> int:
    return file_line(first + i)


def keep_applicable(
    findings: list[Finding], counts: dict[str, int], rules: dict[str, Rule], version: str | None
) -> tuple[list[Finding], dict[str, int]]:
    """The findings and counts of the rules that hold for the Flink version (a rule's `versions`): a message
    that means one thing in 1.x may mean another, or nothing, in 2.x. An unknown version keeps every rule."""
    dropped = {
        rule_id
        for rule_id in {f.rule for f in findings} | set(counts)
        if rule_id in rules and not rules[rule_id].applies_to(version)
    }
    if not dropped:
        return findings, counts
    return (
        [f for f in findings if f.rule not in dropped],
        {rule_id: n for rule_id, n in counts.items() if rule_id not in dropped},
    )
