"""When no signature names a cause: derive it from the failure's own exception chain, or say that nothing failed.

A failure in the input is never answered "healthy". After correlate(), if no cause rule explains what happened
but failure evidence is present (findings of the `failure_rules` in knowledge/exceptions.yaml: task and job
transitions to FAILED, uncaught exceptions, pasted traces, errors of tools around Flink), the failure's exception
chain is read from its event: the innermost `Caused by` is the root exception, the first frame in user or
connector code says where it was thrown, and the category comes from the data table in the same file. Such a
cause is marked derived, carries a lower confidence, and says so in words. Symptom findings that no cause
explains are kept as unexplained symptoms, with the rules that would explain them and the logs they read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from functools import cache
from importlib import resources

from ..errors import RuleError
from ..knowledge.rulebook import Rule
from ..knowledge.validation import read_yaml, schema_problems
from ..knowledge.vocabulary import CATEGORIES, Verdict
from .correlate import RootCause
from .findings import OMITTED, Finding

KNOWLEDGE = "knowledge/exceptions.yaml"
SCHEMA = "knowledge/exceptions.schema.json"
MAX_DERIVED = 3  # distinct derived causes reported, best first
TRANSITION_RULES = ("task-failed", "job-restarting", "restart-strategy-exhausted")  # the failure's own trail
# confidence by how the category was found: its class or message, its package, a frame, a user class, nothing
CONFIDENCE = {1: 0.5, 2: 0.45, 3: 0.45, 4: 0.4, 5: 0.35, 6: 0.3}
HOW = {
    1: "the exception's class or message",
    2: "the exception's package",
    3: "the first frame in user or connector code",
    4: "an exception class of the job's own code",
    5: "nothing in the chain (category other)",
    6: "no exception in the input (category other)",
}
# unexplained symptoms are listed beside any verdict: alone they are not a failure (a checkpoint that cannot be
# triggered while a job starts is routine), and their cause is by definition not in the input

_CLASS = r"(?:[a-zA-Z_$][\w$]*\.)+[A-Z][\w$]*"
_THROWN = r"(?:Exception|Error|Throwable|Failure|Fault)\w*"
EXCEPTION = re.compile(
    rf"^(?:@\S+\s)?[>\s]*(?P<caused>Caused by:\s*)?(?P<cls>{_CLASS})(?:\((?P<inner>{_CLASS})\))?(?::\s?(?P<msg>.*))?$"
)
NESTED = re.compile(rf"^(?P<cls>{_CLASS}{_THROWN})(?::\s?(?P<msg>.*))?$")
FRAME = re.compile(r"^[>\s]*at\s+(?:[\w.@-]+/+)?(?P<frame>[\w$.<>]+)\(")
SUPPRESSED = re.compile(r"^(?P<indent>\s*)Suppressed: ")
# exceptions whose message names a class, not a wrapped cause
NAMES_CLASS = re.compile(r"(?:ClassNotFoundException|NoClassDefFoundError|NoSuchMethodError|NoSuchFieldError)$")


@dataclass(frozen=True)
class Entry:
    """One row of the table: what an exception class, message or package says about the category."""

    category: str
    about: str
    next: str | None = None
    cls: re.Pattern | None = None
    message: re.Pattern | None = None
    packages: tuple[str, ...] = ()
    frames: tuple[str, ...] = ()


@dataclass(frozen=True)
class Knowledge:
    failure_rules: tuple[str, ...]  # in order of preference: a task or job transition says the most
    neutral: tuple[str, ...]
    entries: tuple[Entry, ...]


@dataclass(frozen=True)
class Thrown:
    """One exception of a chain, outermost first; `line` is its line in the source file (None if not known)."""

    cls: str
    message: str
    text: str
    line: int | None
    frames: tuple[str, ...] = ()


@dataclass(frozen=True)
class Derivation:
    category: str
    tier: int  # a key of HOW: lower is more specific
    entry: Entry | None
    frame: str | None  # first frame in user or connector code


@dataclass
class DerivedCause:
    finding: Finding  # the failure event the cause was read from
    chain: list[Thrown]  # outermost first; empty when the event holds no exception
    derivation: Derivation
    instances: list[Finding] = field(default_factory=list)  # failure events that end in the same exception
    trail: list[Finding] = field(default_factory=list)  # the failure's transitions (task FAILED, job RESTARTING)

    @property
    def root(self) -> Thrown | None:
        return self.chain[-1] if self.chain else None

    @property
    def confidence(self) -> float:
        return CONFIDENCE[self.derivation.tier]


@dataclass
class Unexplained:
    rule: Rule
    instances: list[Finding]
    count: int
    causes: list[Rule]  # rules that would explain it, had their evidence been in the input
    missing_kinds: list[str]  # source kinds those rules read that the input lacks


@dataclass
class Outcome:
    verdict: Verdict
    derived: list[DerivedCause]
    unexplained: list[Unexplained]


@cache
def knowledge() -> Knowledge:
    """The exceptions table, validated against its schema at first use (a broken file is a RuleError)."""
    import json

    import jsonschema

    files = resources.files("flinkdoctor")
    text = files.joinpath(KNOWLEDGE).read_text("utf-8")
    problems: list[str] = []
    data, node = read_yaml(KNOWLEDGE, text, problems)
    if data is not None:
        validator = jsonschema.Draft202012Validator(json.loads(files.joinpath(SCHEMA).read_text("utf-8")))
        problems += schema_problems(validator, data, node, KNOWLEDGE)
    if not problems:
        unknown = sorted({e["category"] for e in data["entries"]} - set(CATEGORIES))
        problems += [f"{KNOWLEDGE}: unknown category {c!r}" for c in unknown]
    if problems:
        raise RuleError("\n".join(problems))
    return Knowledge(
        failure_rules=tuple(data["failure_rules"]),
        neutral=tuple(data["neutral"]),
        entries=tuple(
            Entry(
                category=e["category"],
                about=e["about"],
                next=e.get("next"),
                cls=re.compile(e["class"]) if "class" in e else None,
                message=re.compile(e["message"]) if "message" in e else None,
                packages=tuple(e.get("packages", ())),
                frames=tuple(e.get("frames", ())),
            )
            for e in data["entries"]
        ),
    )


def exception_chain(finding: Finding, max_event_lines: int = 1000) -> list[Thrown]:
    """The exceptions of a finding's event, outermost first: each line that names an exception (the first one,
    every `Caused by`, and exceptions nested in a message as `A: B: msg`), each with its own stack frames.
    Suppressed exceptions are not part of the causal chain and are skipped."""
    lines = finding.event_text.split("\n") if finding.event_text else [finding.text]
    numbers = _line_numbers(finding, lines, max_event_lines)
    chain: list[Thrown] = []
    frames: list[str] = []
    suppressed: int | None = None  # indentation of a Suppressed: block being skipped
    for index, line in enumerate(lines):
        hidden = SUPPRESSED.match(line)
        if hidden:
            suppressed = len(hidden["indent"])
            continue
        found = EXCEPTION.match(line)
        if suppressed is not None:
            if not (found and found["caused"] and len(line) - len(line.lstrip()) <= suppressed):
                continue
            suppressed = None
        frame = FRAME.match(line)
        if frame:
            frames.append(frame["frame"])
            continue
        if not found or not (found["caused"] or re.search(_THROWN + "$", found["cls"]) or found["inner"]):
            continue
        if chain:
            chain[-1] = Thrown(chain[-1].cls, chain[-1].message, chain[-1].text, chain[-1].line, tuple(frames))
        frames = []
        chain.extend(_nested(found["inner"] or found["cls"], (found["msg"] or "").strip(), line, numbers[index]))
    if chain and frames:
        chain[-1] = Thrown(chain[-1].cls, chain[-1].message, chain[-1].text, chain[-1].line, tuple(frames))
    return chain


def _nested(cls: str, message: str, line: str, number: int | None) -> list[Thrown]:
    """`A: B: msg` is B wrapped in A (Java's default message of a wrapping exception): A, then B."""
    found = [Thrown(cls, message, line.strip(), number)]
    while not NAMES_CLASS.search(found[-1].cls) and (inner := NESTED.match(found[-1].message)) is not None:
        found.append(Thrown(inner["cls"], (inner["msg"] or "").strip(), line.strip(), number))
    return found


def _line_numbers(finding: Finding, lines: list[str], max_event_lines: int) -> list[int | None]:
    """File line of each line of the kept event text: the head counts from the event's first line, the tail
    (after OMITTED) back from its last; unknown when the event was longer than the text kept of it."""
    if OMITTED not in lines:
        return [finding.event_file_line(i) if finding.event_line else None for i in range(len(lines))]
    cut = lines.index(OMITTED)
    head: list[int | None] = [finding.event_file_line(i) if finding.event_line else None for i in range(cut)]
    last = finding.event_lines - 1
    exact = finding.event_line and finding.event_lines <= max_event_lines
    tail = [finding.event_file_line(last - (len(lines) - 1 - i)) if exact else None for i in range(cut + 1, len(lines))]
    return [*head, None, *tail]


def derive(chain: list[Thrown], known: Knowledge) -> Derivation:
    """The category of a chain, from the most specific evidence the table has an answer for (see HOW)."""
    if not chain:
        return Derivation("other", 6, None, None)
    inner_first = chain[::-1]
    every_frame = [f for thrown in chain for f in thrown.frames]
    frame = _code_frame(inner_first, known)
    for thrown in inner_first:
        for entry in known.entries:
            if (entry.cls or entry.message) and not entry.packages and _fits(entry, thrown, every_frame):
                return Derivation(entry.category, 1, entry, frame[1] if frame else None)
    for thrown in inner_first:
        for entry in known.entries:
            if entry.packages and thrown.cls.startswith(entry.packages):
                return Derivation(entry.category, 2, entry, frame[1] if frame else None)
    if frame:
        owner, name = frame
        return Derivation(owner.category if owner else "user-code-error", 3, owner, name)
    for thrown in inner_first:
        if not thrown.cls.startswith(known.neutral):
            return Derivation("user-code-error", 4, None, None)
    return Derivation("other", 5, None, None)


def _fits(entry: Entry, thrown: Thrown, frames: list[str]) -> bool:
    if entry.cls and not entry.cls.search(thrown.cls):
        return False
    if entry.message and not entry.message.search(thrown.message):
        return False
    return not entry.frames or any(f.startswith(entry.frames) for f in frames)


def _code_frame(inner_first: list[Thrown], known: Knowledge) -> tuple[Entry | None, str] | None:
    """(the table entry of its package or None for user code, the frame): the first frame, innermost exception
    first, that is in a connector or client library the table knows, or outside the neutral packages."""
    for thrown in inner_first:
        for frame in thrown.frames:
            entry = next((e for e in known.entries if e.packages and frame.startswith(e.packages)), None)
            if entry or not frame.startswith(known.neutral):
                return entry, frame
    return None


def fallback(
    findings: list[Finding],
    counts: dict[str, int],
    roots: list[RootCause],
    rules: dict[str, Rule],
    kinds: set[str],
) -> Outcome:
    """The verdict, the derived causes (only when no known cause) and the symptoms no cause explains."""
    known = knowledge()
    explained = {rule.id for root in roots for rule, _, _ in root.chain} | {root.rule.id for root in roots}
    derived: list[DerivedCause] = []
    if not roots:
        derived = _derived(findings, known)
        if derived:
            explained |= set(known.failure_rules)
    unexplained = _unexplained(findings, counts, rules, explained, kinds)
    verdict: Verdict = "known-cause" if roots else "derived-cause" if derived else "no-failure"
    return Outcome(verdict, derived, unexplained)


def _derived(findings: list[Finding], known: Knowledge) -> list[DerivedCause]:
    failures = [f for f in findings if f.rule in known.failure_rules]
    candidates = []
    for finding in failures:
        chain = exception_chain(finding)
        candidates.append(DerivedCause(finding, chain, derive(chain, known)))
    candidates.sort(key=lambda c: _rank(c, known))
    groups: dict[tuple[str, str], DerivedCause] = {}
    for candidate in candidates:
        key = (candidate.derivation.category, candidate.root.cls if candidate.root else candidate.finding.rule)
        if key not in groups:
            groups[key] = candidate
        groups[key].instances.append(candidate.finding)
    derived = list(groups.values())[:MAX_DERIVED]
    if derived:
        best = derived[0]
        seen = set()
        for finding in failures:
            if finding.rule in TRANSITION_RULES and finding.rule not in seen and finding is not best.finding:
                seen.add(finding.rule)
                best.trail.append(finding)
    return derived


def _rank(candidate: DerivedCause, known: Knowledge) -> tuple:
    """Best first: an event with an exception, of the preferred failure rule, whose category the table knows
    most specifically, earliest (untimed last), then in file order."""
    finding = candidate.finding
    return (
        not candidate.chain,
        known.failure_rules.index(finding.rule),
        candidate.derivation.tier,
        finding.time is None,
        finding.time or datetime.min,
        finding.sid,
        finding.line,
    )


def _unexplained(
    findings: list[Finding], counts: dict[str, int], rules: dict[str, Rule], explained: set[str], kinds: set[str]
) -> list[Unexplained]:
    """Symptom findings outside every root cause's chain: what would explain them, and the logs that would show it."""
    by_rule: dict[str, list[Finding]] = {}
    for finding in findings:
        by_rule.setdefault(finding.rule, []).append(finding)
    found = []
    for rule_id, instances in by_rule.items():
        rule = rules[rule_id]
        if rule.role != "symptom" or rule_id in explained:
            continue
        causes = [
            other
            for other in rules.values()
            if other.role == "cause"
            and any(r.rule == rule.id if r.rule else r.category == rule.category for r in other.explains)
        ]
        wanted = {kind for cause in causes for kind in cause.sources}
        found.append(Unexplained(rule, instances, counts.get(rule_id, len(instances)), causes, sorted(wanted - kinds)))
    return found
