"""Report: one typed model of a diagnosis, built from findings and root causes; views render it (views/).

The model's `to_dict()` is its data; the JSON view (views/contract.py) prints it as the JSON contract (schema
flinkdoctor.report/v1, schemas/report.schema.json), adding the sentences it writes; the contract's history, one
minor version after another, is in CHANGELOG.md.

Secrets are masked here, once, as the model is built (`build_report` returns it through masking.masked_model), so
that no view, no library caller and no fleet table can show them, and the way out need not mask it again; making
text inert for a terminal or escaping it for HTML/Markdown is each view's job, since JSON must keep the text exact.
"""

from __future__ import annotations

import copy
import dataclasses
import re
import shlex
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from operator import attrgetter
from typing import Any, TypedDict

from ..analytics.model import CheckpointAnalytics, CheckpointJob, ConfigAudit, iso
from ..diagnosis.correlate import RootCause
from ..diagnosis.fallback import HOW, DerivedCause, Outcome, Unexplained
from ..diagnosis.findings import Finding
from ..diagnosis.unexplained import Ranked
from ..jsondata import JSONObject
from ..knowledge.rulebook import Rule
from ..knowledge.vocabulary import AnsweredBy, Verdict
from ..safety.masking import masked_model
from ..sources.ingest import Manifest, Source
from ..sources.layouts import layout_by_id

SCHEMA = "flinkdoctor.report/v1"
CONTRACT_VERSION = "1.2"  # minor versions of v1 only add optional fields and sections (CHANGELOG.md)
EVIDENCE_PER_FINDING = 5
MOSTLY_UNPARSED = 0.5  # a source with more unparsed lines than this share is named as unreadable
# a value from the input goes into a shell command only when it looks like a path or an id: no spaces, quotes,
# $, ;, |, &, `, parentheses or redirections; it is quoted all the same
PLAUSIBLE_ARGUMENT = re.compile(r"[A-Za-z0-9_./:@%+=,~#-]{1,4096}")
UNSAFE_COMMAND = "the command is not shown: a value from the logs holds characters that are not safe in a shell"


@dataclass(frozen=True)
class Evidence:
    file: str
    line: int
    time: str | None
    text: str
    host: str | None = None


@dataclass(frozen=True)
class ChainStep:
    rule: str
    category: str
    role: str
    depth: int
    evidence: Evidence


@dataclass(frozen=True)
class Fix:
    text: str
    config: dict[str, str] = field(default_factory=dict)
    command: str | None = None
    versions: str | None = None
    for_rule: str | None = None  # an aftermath fix of a rule in the chain (e.g. recover a lease)


@dataclass(frozen=True)
class RootCauseReport:
    rule: str
    category: str
    title: str
    confidence: float
    first_seen: str | None
    host: str | None
    count: int
    explanation: str
    evidence: list[Evidence]
    chain: list[ChainStep]
    fix: list[Fix]
    references: list[str]
    derived: bool = False  # derived from the failure's exception chain: no known signature matched
    answered_by: AnsweredBy = "rule"  # the step of the specificity ladder that answered (README)
    catalogue: str | None = None  # the catalogue entry that answered (knowledge/catalogue), if one did


@dataclass(frozen=True)
class UnexplainedSymptomReport:
    """A symptom no cause in the input explains: what usually causes it, and which evidence would show it."""

    rule: str
    category: str
    title: str
    count: int
    first_seen: str | None
    evidence: list[Evidence]
    usually_caused_by: str  # the rule's explanation
    explained_by: list[str]  # rules that would explain it
    missing: list[str]  # source kinds those rules read that the input lacks


@dataclass(frozen=True)
class UnexplainedErrorReport:
    """A WARN/ERROR template that no rule explains, rare in healthy runs; ranked by rarity and nearness to the
    failure. `template` is the message with its variable parts masked (<NUM>, <ID>, <PATH>, ...)."""

    template: str
    logger: str | None
    level: str
    count: int
    first_seen: str | None
    rarity: float  # 1: no healthy run of the baseline prints it; 0: every one does
    closeness: float  # 1: at the failure (or no failure); halves every minute away
    evidence: Evidence  # its earliest event


@dataclass(frozen=True)
class FindingReport:
    rule: str
    category: str
    role: str
    title: str
    count: int
    first_seen: str | None
    last_seen: str | None
    evidence: list[Evidence]


@dataclass(frozen=True)
class SourceReport:
    path: str
    kind: str
    layout: str | None
    lines: int
    unparsed: int
    host: str | None = None
    container: str | None = None
    log_type: str | None = None
    encoding: str | None = None
    truncated: str | None = None
    split_lines: int = 0
    shape: str | None = None  # how an unusual shape was read (Docker/CRI wrapper, JSON records, stripped prefixes)
    untimed: bool = False  # no wall-clock times: its lines could not be placed in time (nor ordered against others)


@dataclass(frozen=True)
class InputReport:
    files: int
    lines: int
    lines_in_events: int
    lines_unparsed: int
    events: int
    sources: list[SourceReport]

    @property
    def unreadable(self) -> list[SourceReport]:
        """Sources mostly unparsed (or cut short): a diagnosis cannot rest on them, and the report says so."""
        return [s for s in self.sources if s.truncated or (s.lines and s.unparsed > MOSTLY_UNPARSED * s.lines)]


@dataclass(frozen=True)
class Report:
    input: InputReport
    flink_version: str | None
    flink_version_from: str
    root_causes: list[RootCauseReport]
    findings: list[FindingReport]
    skipped: list[dict[str, str]]
    timings: dict[str, float] = field(default_factory=dict)
    work_dir: str | None = None  # only when kept
    verdict: Verdict = "no-failure"
    unexplained_symptoms: list[UnexplainedSymptomReport] = field(default_factory=list)
    unexplained_errors: list[UnexplainedErrorReport] = field(default_factory=list)
    checkpoints: CheckpointAnalytics | None = None
    config_audit: ConfigAudit | None = None

    def to_dict(self) -> JSONObject:
        """The JSON contract."""
        return self.data()

    def data(self, jobs: Callable[[list[CheckpointJob]], list[Any]] | None = None) -> JSONObject:
        """The JSON contract; `jobs` makes the checkpoints' per-job array from the jobs (default: a list of every
        job's dict; a view that writes them one at a time gives a sequence that makes each as it is read)."""
        data: JSONObject = {
            "schema": SCHEMA,
            "contract_version": CONTRACT_VERSION,
            "verdict": self.verdict,
            "input": {
                **{f.name: getattr(self.input, f.name) for f in fields(self.input) if f.name != "sources"},
                "sources": [_source_dict(s) for s in self.input.sources],
                "unreadable": [s.path for s in self.input.unreadable],
            },
            "flink_version": {"version": self.flink_version, "from": self.flink_version_from},
            "root_causes": [_root_dict(r) for r in self.root_causes],
            "findings": [{**asdict(f), "evidence": [asdict(e) for e in f.evidence]} for f in self.findings],
            "skipped": list(self.skipped),
            "unexplained_symptoms": [
                {**asdict(u), "evidence": [asdict(e) for e in u.evidence]} for u in self.unexplained_symptoms
            ],
            "unexplained_errors": [asdict(u) for u in self.unexplained_errors],
        }
        if self.checkpoints is not None:
            data["checkpoints"] = {
                "jobs": (jobs or _job_dicts)(self.checkpoints.jobs),
                "missing": list(self.checkpoints.missing),
            }
        if self.config_audit is not None:
            data["config_audit"] = _audit_dict(self.config_audit)
        if self.timings:
            data["timings"] = dict(self.timings)
        if self.work_dir:
            data["work_dir"] = self.work_dir
        return data


def _job_dicts(jobs: list[CheckpointJob]) -> list[Any]:
    return [job_dict(job) for job in jobs]


def job_dict(job: CheckpointJob) -> JSONObject:
    """One job's checkpoints as the contract holds them: `asdict`'s answer, and the limits in milliseconds."""
    data: JSONObject = plain(job)
    data["timeout_ms"], data["interval_ms"] = job.timeout_ms, job.interval_ms
    return data


def plain(node: Any) -> Any:
    """`dataclasses.asdict`'s answer for a record of plain values (strings, numbers, lists, mappings, records),
    without its deep copy of every value: a report of 100,000 jobs holds millions of them. A record, list or
    mapping of plain values only (a checkpoint, the counts) is copied in one step, not value by value."""
    kind = type(node)
    if kind in _ATOMS:
        return node
    getter = _FIELD_GETTERS.get(kind)
    if getter is None and dataclasses.is_dataclass(node) and not isinstance(node, type):
        getter = _FIELD_GETTERS[kind] = _fields_of(node)
    if getter is not None:
        names, get = getter
        values = get(node)
        if _ATOMS.issuperset(map(type, values)):
            return dict(zip(names, values, strict=True))
        return {name: plain(value) for name, value in zip(names, values, strict=True)}
    if kind is list:
        return list(node) if _ATOMS.issuperset(map(type, node)) else [plain(item) for item in node]
    if kind is dict:
        if _ATOMS.issuperset(map(type, node)) and _ATOMS.issuperset(map(type, node.values())):
            return dict(node)
        return {plain(k): plain(v) for k, v in node.items()}
    if isinstance(node, tuple) and hasattr(node, "_fields"):  # the rest as asdict takes it
        return kind(*[plain(item) for item in node])
    if isinstance(node, (list, tuple)):
        return kind(plain(item) for item in node)
    if isinstance(node, dict):
        return kind((plain(k), plain(v)) for k, v in node.items())
    return copy.deepcopy(node)


def _fields_of(record: Any) -> tuple[tuple[str, ...], Callable[[Any], tuple[Any, ...]]]:
    """A record's field names, and a getter of their values as a tuple (attrgetter's, made once per class)."""
    names = tuple(f.name for f in fields(record))
    get = attrgetter(*names) if len(names) > 1 else (lambda node: tuple(getattr(node, n) for n in names))
    return names, get


_ATOMS = frozenset({str, int, float, bool, type(None)})
_FIELD_GETTERS: dict[type, tuple[tuple[str, ...], Callable[[Any], tuple[Any, ...]]]] = {}


def _audit_dict(audit: ConfigAudit) -> JSONObject:
    return {
        "version": audit.version,
        "settings": [asdict(s) for s in audit.settings],
        "risky": len(audit.risky),
        "missing": list(audit.missing),
    }


def _source_dict(source: SourceReport) -> JSONObject:
    """asdict's answer without its deep copy of every field (all of them plain values): a bundle of 100,000
    rolled files has as many sources."""
    data: JSONObject = {f.name: getattr(source, f.name) for f in _SOURCE_FIELDS}
    for optional in ("encoding", "truncated", "shape"):
        if data[optional] is None:
            del data[optional]
    for flag in ("split_lines", "untimed"):
        if not data[flag]:
            del data[flag]
    return data


_SOURCE_FIELDS = fields(SourceReport)


def _untimed(source: Source) -> bool:
    """A text source whose layout carries no wall-clock time (a pasted trace, dmesg uptimes, records without
    times): its events have no time, so the correlator does not order them against others."""
    if not source.staged or source.binary or source.derived or not source.layout or source.layout == "none":
        return False
    return not layout_by_id(source.layout).timed


def _fix_dict(fix: Fix) -> JSONObject:
    data: JSONObject = {"text": fix.text}
    if fix.config:
        data["config"] = dict(fix.config)
    if fix.command:
        data["command"] = fix.command
    if fix.versions:
        data["versions"] = fix.versions
    if fix.for_rule:
        data["for"] = fix.for_rule
    return data


def _root_dict(root: RootCauseReport) -> JSONObject:
    data = asdict(root)
    data["evidence"] = [asdict(e) for e in root.evidence]
    data["chain"] = [
        {"rule": s.rule, "category": s.category, "role": s.role, "depth": s.depth, **asdict(s.evidence)}
        for s in root.chain
    ]
    data["fix"] = [_fix_dict(f) for f in root.fix]
    return data


def _evidence(finding: Finding, paths: dict[int, str]) -> Evidence:
    return Evidence(
        file=paths[finding.sid],
        line=finding.line,
        time=iso(finding.time),
        text=finding.text or "",
        host=finding.host,
    )


def _fill(template: str, values: Mapping[str, str]) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: str(values.get(m.group(1), f"<{m.group(1)}>")), template)


def command_line(template: str, values: Mapping[str, str]) -> str | None:
    """A fix command with the input's values shell-quoted; None when a value is not a plausible path or id
    (then no command is printed at all: quoting alone would still hand the user a command to paste)."""
    missing = object()

    def value(m: re.Match[str]) -> str:
        found = values.get(m.group(1), missing)
        if found is missing:
            return f"<{m.group(1)}>"
        if not PLAUSIBLE_ARGUMENT.fullmatch(str(found)):
            raise ValueError(m.group(1))
        return shlex.quote(str(found))

    try:
        return re.sub(r"\{(\w+)\}", value, template)
    except ValueError:
        return None


# A rule's fix with the findings' values filled in, before it is masked (_as_fix); `for` names the rule of an
# aftermath fix. Written as a call: `for` is a Python keyword.
FilledFix = TypedDict(
    "FilledFix", {"text": str, "config": dict[str, str], "command": str, "versions": str, "for": str}, total=False
)


def _fixes(rule: Rule, version: str | None, values: Mapping[str, str], aftermath_only: bool = False) -> list[FilledFix]:
    fixes: list[FilledFix] = []
    for fix in rule.fix:
        if not fix.applies_to(version) or (aftermath_only and not fix.aftermath):
            continue
        item: FilledFix = {"text": _fill(fix.text, values)}
        if fix.config:
            item["config"] = {k: _fill(str(v), values) for k, v in fix.config.items()}
        command = command_line(fix.command, values) if fix.command else None
        if command:
            item["command"] = command
        elif fix.command:
            item["text"] += " (" + UNSAFE_COMMAND + ")"
        if fix.versions:
            item["versions"] = fix.versions
        if aftermath_only:
            item["for"] = rule.id
        fixes.append(item)
    return fixes


def input_report(manifest: Manifest, stats: Mapping[int, Mapping[str, int]]) -> InputReport:
    """input.*: files, lines (`wc -l` of the originals), lines in events and unparsed, events, and per source the
    same from the scan's `stats` (scan.events.EventsResult.stats); every line is in an event or unparsed, for text
    and structured sources alike."""
    counted: dict[int, tuple[int, int]] = {}  # sid -> (lines, unparsed)
    events = 0
    for source in manifest.sources:
        if source.derived:
            continue  # its lines are the JSON document's, counted there
        if not source.staged:
            counted[source.id] = (source.lines, source.unparsed)
            events += 1 if source.lines else 0  # a JSON document, a config file, a YARN log's framing
            continue
        s = stats.get(source.id, {"lines": 0, "unparsed": 0, "events": 0})
        lines, unparsed = s["lines"], s["unparsed"]
        if source.line_map is not None:  # read into another shape: count the original's lines
            lines = source.line_map.original_lines
            before = source.line_map.original(s["unparsed"] + 1) - 1  # lines before the first placed one
            unparsed = min(lines, before) if s["unparsed"] else 0
        counted[source.id] = (lines, unparsed)
    events += sum(stats.get(s.id, {}).get("events", 0) for s in manifest.sources if s.staged)
    lines = sum(n for n, _ in counted.values())
    unparsed = sum(u for _, u in counted.values())
    return InputReport(
        files=len({s.path for s in manifest.sources if not s.derived}),
        lines=lines,
        lines_in_events=lines - unparsed,
        lines_unparsed=unparsed,
        events=events,
        sources=[_source_report(s, *counted[s.id]) for s in manifest.sources if not s.derived],
    )


def _source_report(s: Source, lines: int, unparsed: int) -> SourceReport:
    return SourceReport(
        path=s.path,
        kind=s.kind,
        layout=s.layout,
        lines=lines,
        unparsed=unparsed,
        host=s.host,
        container=s.container,
        log_type=s.log_type,
        encoding=s.encoding,
        truncated=s.truncated,
        split_lines=s.split_lines,
        shape=s.shape,
        untimed=_untimed(s),
    )


def build_report(
    manifest: Manifest,
    given: InputReport,
    findings: list[Finding],
    counts: dict[str, int],
    roots: list[RootCause],
    rules: dict[str, Rule],
    version: str | None,
    version_source: str,
    timings: Mapping[str, float] | None = None,
    work_dir: str | None = None,
    outcome: Outcome | None = None,
    unexplained: list[Ranked] | None = None,
    checkpoints: CheckpointAnalytics | None = None,
    config_audit: ConfigAudit | None = None,
) -> Report:
    paths = {s.id: s.path for s in manifest.sources}
    values: dict[str, str] = {}
    for finding in findings:  # captures of every finding fill placeholders such as {hdfs_file}
        for key, value in finding.captures.items():
            if value:
                values.setdefault(key, value)
        if finding.hdfs_path:
            values.setdefault("hdfs_path", finding.hdfs_path)

    root_causes = []
    for root in roots:
        own = dict(values)
        for instance in root.instances:
            own.update({k: v for k, v in instance.captures.items() if v})
        root_causes.append(
            RootCauseReport(
                rule=root.rule.id,
                category=root.rule.category,
                title=root.rule.title,
                confidence=root.confidence,
                first_seen=iso(min((f.time for f in root.instances if f.time), default=None)),
                host=root.instances[0].host,
                count=root.count,
                explanation=root.rule.explanation,
                evidence=[_evidence(f, paths) for f in root.instances[:EVIDENCE_PER_FINDING]],
                chain=[
                    ChainStep(rule.id, rule.category, rule.role, depth, _evidence(instance, paths))
                    for rule, instance, depth in root.chain
                ],
                fix=[
                    _as_fix(item)
                    for item in _fixes(root.rule, version, own)
                    + [fix for rule, _, _ in root.chain for fix in _fixes(rule, version, own, aftermath_only=True)]
                ],
                references=list(root.rule.references),
                answered_by="frame-package" if root.rule.attribution == "frame" else "rule",
            )
        )

    by_rule: dict[str, list[Finding]] = {}
    for finding in findings:
        by_rule.setdefault(finding.rule, []).append(finding)
    finding_rows = []
    for rule_id, instances in sorted(by_rule.items(), key=lambda kv: (_first_time(kv[1]), kv[0])):
        rule = rules[rule_id]
        times = [f.time for f in instances if f.time]
        finding_rows.append(
            FindingReport(
                rule=rule_id,
                category=rule.category,
                role=rule.role,
                title=rule.title,
                count=counts.get(rule_id, len(instances)),
                first_seen=iso(min(times)) if times else None,
                last_seen=iso(max(times)) if times else None,
                evidence=[_evidence(f, paths) for f in instances if f.line > 0][:EVIDENCE_PER_FINDING],
            )
        )

    derived = outcome.derived if outcome else []
    kinds = {s.kind for s in manifest.sources}
    derived_roots = [_derived_root(cause, paths, kinds, rules) for cause in derived]
    report: Report = masked_model(  # every string masked, each setting of a sensitive key whole; known as masked
        Report(
            input=given,
            flink_version=version,
            flink_version_from=version_source,
            root_causes=_with_aftermath(
                [*derived_roots, *root_causes] if outcome and outcome.derived_first else [*root_causes, *derived_roots],
                findings,
                rules,
                version,
                values,
            ),
            findings=finding_rows,
            skipped=[{k: str(v) for k, v in item.items()} for item in manifest.skipped],
            timings=dict(timings or {}),
            work_dir=work_dir,
            verdict=outcome.verdict if outcome else ("known-cause" if root_causes else "no-failure"),
            unexplained_symptoms=[_unexplained(u, paths) for u in (outcome.unexplained if outcome else [])],
            unexplained_errors=[_unexplained_error(r, paths) for r in unexplained or []],
            checkpoints=checkpoints,
            config_audit=config_audit,
        )
    )
    return report


def _with_aftermath(
    roots: list[RootCauseReport],
    findings: list[Finding],
    rules: dict[str, Rule],
    version: str | None,
    values: Mapping[str, str],
) -> list[RootCauseReport]:
    """The first root cause with the aftermath fixes of every rule the evidence shows, not only of its chain: a
    file left open-for-write loses data whatever the cause was, so recovering it is part of the answer."""
    if not roots:
        return roots
    first = roots[0]
    given = {first.rule} | {fix.for_rule for fix in first.fix if fix.for_rule}
    present = sorted({f.rule for f in findings if f.rule in rules and any(x.aftermath for x in rules[f.rule].fix)})
    extra = [
        _as_fix(item)
        for rule_id in present
        if rule_id not in given
        for item in _fixes(rules[rule_id], version, values, aftermath_only=True)
    ]
    return [replace(first, fix=first.fix + extra), *roots[1:]] if extra else roots


def _as_fix(item: FilledFix) -> Fix:
    """A filled fix, masked: its text and values come partly from the logs."""
    return Fix(
        text=item["text"],
        config={k: str(v) for k, v in item.get("config", {}).items()},
        command=item.get("command"),
        versions=item.get("versions"),
        for_rule=item.get("for"),
    )


def _first_time(instances: list[Finding]) -> str:
    times = [f.time for f in instances if f.time]
    return min(times).isoformat() if times else "9999"


DERIVED_RULE = "exception-chain"  # the `rule` of a root cause derived from a failure's exception chain


def _derived_root(
    cause: DerivedCause, paths: dict[int, str], kinds: set[str], rules: dict[str, Rule]
) -> RootCauseReport:
    """A root cause read from the failure's own exception chain: the innermost exception is the cause, and the
    words say that no known signature matched."""
    failure, root, how = cause.finding, cause.root, cause.derivation
    where = f"{paths[failure.sid]}:{root.line if root and root.line else failure.line}"
    evidence = []
    if root:
        line, text = root.line or failure.line, root.text or ""
        evidence.append(Evidence(paths[failure.sid], line, iso(failure.time), text, failure.host))
        if how.said:  # the catalogued message that answered is on another line of the event
            said_line, said = how.said
            evidence.append(Evidence(paths[failure.sid], said_line, iso(failure.time), said, failure.host))
    evidence += [_evidence(f, paths) for f in cause.instances if not (root and f is failure and f.line == root.line)]
    if root:
        short = root.cls.rsplit(".", 1)[-1] + (f": {root.message}" if root.message else "")
        title = short[:160]
        thrown = f"{root.cls}: {root.message}" if root.message else root.cls
        explanation = (
            f"Derived from the exception chain, no known signature matched. The failure at {where} ends in "
            f"{thrown}"
            + (f", thrown at {how.frame}" if how.frame else "")
            + ". "
            + (f"This usually means {how.entry.about}. " if how.entry else "")
            + f"The category comes from {HOW[how.tier]}."
        )
    elif how.said:
        line, said = how.said
        title = said.strip()[:160]
        evidence.insert(0, Evidence(paths[failure.sid], line, iso(failure.time), said, failure.host))
        explanation = (
            f"Derived from a message the code prints, no known signature matched. The failure at "
            f"{paths[failure.sid]}:{line} says: {said.strip()[:300]}. "
            + (f"This usually means {how.entry.about}. " if how.entry else "")
            + f"The category comes from {HOW[how.tier]}."
        )
    else:
        title = f"Failure without an exception: {failure.text[:140]}"
        explanation = (
            f"No known signature matched, and the failure at {where} carries no exception to derive a cause from, "
            f"so its category is other."
        )
    return RootCauseReport(
        rule=DERIVED_RULE,
        category=how.category,
        title=title,
        confidence=cause.confidence,
        first_seen=iso(min((f.time for f in cause.instances if f.time), default=None)),
        host=failure.host,
        count=len(cause.instances),
        explanation=explanation,
        evidence=evidence[:EVIDENCE_PER_FINDING],
        chain=[
            ChainStep(f.rule, rules[f.rule].category, rules[f.rule].role, 1, _evidence(f, paths)) for f in cause.trail
        ],
        fix=[Fix(text=text) for text in _derived_fixes(cause, where, kinds)],
        references=[],
        derived=True,
        answered_by=how.answered_by,
        catalogue=how.catalogue,
    )


def _derived_fixes(cause: DerivedCause, where: str, kinds: set[str]) -> list[str]:
    """Generic next steps: where the chain ends, what the table says to look at, and which logs to add."""
    root, how = cause.root, cause.derivation
    fixes = []
    if root:
        thrown_at = f", thrown at {how.frame}" if how.frame else ""
        fixes.append(f"Start from the root exception {root.cls} ({where}){thrown_at}.")
    if how.entry and how.entry.next:
        fixes.append(how.entry.next)
    if "flink-jobmanager" not in kinds:
        fixes.append(
            "Add the JobManager log to the bundle: it records each failure with its whole exception chain and what "
            "the restart strategy decided."
        )
    if "flink-taskmanager" not in kinds:
        fixes.append(
            "Add the log of the TaskManager that ran the failed task: the lines before its exception show what the "
            "task was doing."
        )
    if cause.finding.time is None:
        fixes.append(
            "Give whole log files rather than excerpts: with times, flinkdoctor can link the failure to what happened "
            "before it."
        )
    return fixes


def _unexplained(item: Unexplained, paths: dict[int, str]) -> UnexplainedSymptomReport:
    times = [f.time for f in item.instances if f.time]
    return UnexplainedSymptomReport(
        rule=item.rule.id,
        category=item.rule.category,
        title=item.rule.title,
        count=item.count,
        first_seen=iso(min(times)) if times else None,
        evidence=[_evidence(f, paths) for f in item.instances[:EVIDENCE_PER_FINDING]],
        usually_caused_by=" ".join(item.rule.explanation.split()),
        explained_by=[rule.id for rule in item.causes],
        missing=list(item.missing_kinds),
    )


def _unexplained_error(ranked: Ranked, paths: dict[int, str]) -> UnexplainedErrorReport:
    t = ranked.template
    return UnexplainedErrorReport(
        template=t.template or "",
        logger=t.logger,
        level=t.level,
        count=t.count,
        first_seen=iso(t.first),
        rarity=ranked.rarity,
        closeness=ranked.closeness,
        evidence=Evidence(file=paths[t.sid], line=t.line, time=iso(t.time), text=t.text or "", host=t.host),
    )
