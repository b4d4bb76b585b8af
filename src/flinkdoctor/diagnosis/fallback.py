"""When no signature names a cause: derive it from the failure's own exception chain, or say that nothing failed.

A failure in the input is never answered "healthy". After correlate(), if no cause rule explains what happened
but failure evidence is present (findings of the `failure_rules` in knowledge/exceptions.yaml: task and job
transitions to FAILED, uncaught exceptions, pasted traces, errors of tools around Flink), the failure's exception
chain is read from its event and its category taken from the most specific evidence there is (SPECIFICITY, the
ladder the README gives under "How a cause is chosen"): a message the exceptions table or the catalogue of the
code's own messages knows, then an exception class either knows, then the innermost exception's throwing
package, then the first frame in user or connector code; within one step the innermost exception first. A cause
rule whose match rests only on a frame's code (`attribution: frame`) stands on the frame step too: when the
chain says something more specific of another category, the derived cause comes first. Such a cause is marked
derived, carries a lower confidence by its step, and says so in words. Symptom findings that no cause explains
are kept as unexplained symptoms, with the rules that would explain them and the logs they read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from functools import cache
from importlib import resources

from ..errors import RuleError
from ..knowledge.catalogue import Catalogue, load_catalogue
from ..knowledge.catalogue import Entry as CatalogueEntry
from ..knowledge.rulebook import Rule
from ..knowledge.validation import read_yaml, schema, schema_problems
from ..knowledge.vocabulary import ANSWERED_BY, CATEGORIES, AnsweredBy, Verdict
from .correlate import RootCause
from .findings import OMITTED, CatalogueHit, CatalogueInstance, Finding

KNOWLEDGE = "knowledge/exceptions.yaml"
MAX_DERIVED = 3  # distinct derived causes reported, best first
TRANSITION_RULES = ("task-failed", "job-restarting", "restart-strategy-exhausted")  # the failure's own trail
# How specific an answer is, most first: the step decides before time or count does (README, "How a cause is
# chosen"); a derived cause's confidence and its words say which step answered.
SPECIFICITY = {
    1: "a cause rule's own signature",
    2: "a catalogued message",
    3: "a catalogued exception class",
    4: "the innermost exception's throwing package",
    5: "a frame's package",
    6: "an exception class of the job's own code",
    7: "a generic error line",
}
FRAME_STEP = 5  # where a cause rule with `attribution: frame` stands
CONFIDENCE = {2: 0.55, 3: 0.5, 4: 0.45, 5: 0.4, 6: 0.35, 7: 0.3}  # of a derived cause, by its step
HOW = {
    2: "a message the code prints (the exceptions table or the catalogue of the code's own messages)",
    3: "the exception's class (the exceptions table or the catalogue of the code's own exceptions)",
    4: "the package that threw the exception",
    5: "the first frame in user or connector code",
    6: "an exception class of the job's own code",
    7: "nothing more specific than a failure line (category other)",
}
CATALOGUED_RULE = "catalogued-failure"  # the `rule` of a failure line only the catalogue knows (no failure rule)
FAILURE_PRINTS = ("throw", "error", "fatal", "exit", "stderr")  # how code prints a message that can end a job
SHADED = re.compile(r"^org\.apache\.flink\.shaded\.\w+\.")  # Flink's shaded copies (org.apache.flink.shaded.curator5.)
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
    cls: re.Pattern[str] | None = None
    message: re.Pattern[str] | None = None
    packages: tuple[str, ...] = ()
    frames: tuple[str, ...] = ()
    catalogue: str | None = None  # set when the answer is a catalogue entry (its id), not a row of the table


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
    catalogue: str | None = None  # the catalogue entry's id, when the catalogue answered
    said: tuple[int, str] | None = None  # (file line, text) of the catalogued line that answered, outside the chain

    @property
    def answered_by(self) -> AnsweredBy:
        return ANSWERED_BY[self.tier - 1]


@dataclass(frozen=True)
class Said:
    """A catalogued message the scan found on one line of the input (any line of an event, not only its first)."""

    entry: CatalogueEntry
    line: int  # file line
    text: str


@dataclass(frozen=True)
class Catalogued:
    """What the catalogue of the code's own messages found in one bundle: every catalogued line by source and
    file line, and the failure lines no failure rule found (a message the code throws, logs as an error, or prints
    before it exits, in an ERROR or FATAL event or in text without levels)."""

    said: dict[int, dict[int, tuple[Said, ...]]] = field(default_factory=dict)  # sid -> file line -> what it said
    failures: tuple[Finding, ...] = ()  # rule CATALOGUED_RULE

    @classmethod
    def of(cls, hits: list[CatalogueHit], catalogue: Catalogue) -> Catalogued:
        """From the scan's hits of one bundle: each instance's line, and each instance that is a failure (its
        entry is printed as one, of a category other than `other`, in an ERROR or FATAL event or one without a
        level), once per event."""
        said: dict[int, dict[int, list[Said]]] = {}
        failures: dict[tuple[int, int], Finding] = {}
        for hit in hits:
            entry = catalogue.by_id.get(hit.entry)
            if entry is None or entry.kind != "message":
                continue
            for seen in hit.instances:
                said.setdefault(seen.sid, {}).setdefault(seen.line, []).append(Said(entry, seen.line, seen.text))
                failing = entry.level in FAILURE_PRINTS and entry.category != "other"
                if failing and seen.level in (None, "ERROR", "FATAL"):
                    failures.setdefault((seen.sid, seen.event_line), _failure(seen))
        return cls(
            {sid: {n: tuple(items) for n, items in lines.items()} for sid, lines in said.items()},
            tuple(failures.values()),
        )

    def within(self, finding: Finding) -> dict[int, tuple[Said, ...]]:
        """The catalogued lines of a finding's event."""
        lines = self.said.get(finding.sid, {})
        if not lines:
            return {}
        first = finding.event_file_line(0) if finding.event_line else finding.line
        last = finding.event_file_line(finding.event_lines - 1) if finding.event_line else finding.line
        return {n: said for n, said in lines.items() if first <= n <= last}


def _failure(seen: CatalogueInstance) -> Finding:
    """A catalogued failure line as the finding a derived cause is read from (its whole event kept)."""
    return Finding(
        rule=CATALOGUED_RULE,
        sid=seen.sid,
        line=seen.line,
        time=seen.time,
        host=seen.host,
        job_id=None,
        text=seen.text,
        level=seen.level,
        event_text=seen.event_text,
        event_line=seen.event_line,
        event_lines=seen.event_lines,
        line_of=seen.line_of,
    )


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
    derived_first: bool = False  # the derived cause outranks the cause rules' (which only name a frame's code)


@cache
def knowledge() -> Knowledge:
    """The exceptions table, validated against its schema at first use (a broken file is a RuleError)."""

    import jsonschema

    files = resources.files("flinkdoctor")
    text = files.joinpath(KNOWLEDGE).read_text("utf-8")
    problems: list[str] = []
    data, node = read_yaml(KNOWLEDGE, text, problems)
    if data is not None:
        validator = jsonschema.Draft202012Validator(schema("exceptions"))
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


def derive(
    chain: list[Thrown],
    known: Knowledge,
    catalogue: Catalogue | None = None,
    said: dict[int, tuple[Said, ...]] | None = None,
) -> Derivation:
    """The category of a chain, from the most specific evidence there is (SPECIFICITY), the innermost exception
    first within each step. The exceptions table (hand-written, knowledge/exceptions.yaml) is asked before the
    catalogue (generated from the code) on each step; a catalogue entry of category `other` never answers, and
    one whose category comes only from its package or component answers on the package step. `said` holds the
    catalogued messages the scan found on the event's lines: on an exception's own line they answer for that
    exception; on the event's other lines (a log line's message, a script's error) after every exception."""
    said = said or {}
    inner_first = chain[::-1]
    every_frame = [f for thrown in chain for f in thrown.frames]
    frame = _code_frame(inner_first, known) if chain else None
    where = frame[1] if frame else None
    thrown_lines = {thrown.line for thrown in chain}
    elsewhere = [item for n, items in sorted(said.items()) if n not in thrown_lines for item in items]
    for step, ask, reasons in ((2, _by_message, SPECIFIC), (3, _by_class, SPECIFIC), (4, _by_package, GENERAL)):
        for thrown in inner_first:
            found = ask(thrown, known, catalogue, every_frame)
            if found is None:
                found = _said(said.get(thrown.line, ()) if thrown.line else (), reasons, thrown.cls)
            if found is not None:
                return Derivation(found.category, step, found, where, found.catalogue)
        if step != 3 and (other := _said_where(elsewhere, reasons)) is not None:
            entry, item = other
            return Derivation(entry.category, step, entry, where, entry.catalogue, (item.line, item.text))
    if frame:
        owner, name = frame
        return Derivation(owner.category if owner else "user-code-error", 5, owner, name)
    for thrown in inner_first:
        if not thrown.cls.startswith(known.neutral):
            return Derivation("user-code-error", 6, None, None)
    return Derivation("other", 7, None, None)


SPECIFIC = ("class", "wording")  # a catalogue entry's category rests on what the code says
GENERAL = ("package", "component")  # ... or only on where the code lives


def _said(items: tuple[Said, ...] | list[Said], reasons: tuple[str, ...], cls: str | None = None) -> Entry | None:
    found = _said_where(items, reasons, cls)
    return found[0] if found else None


def _said_where(
    items: tuple[Said, ...] | list[Said], reasons: tuple[str, ...], cls: str | None = None
) -> tuple[Entry, Said] | None:
    """The best catalogued message among a line's (or lines'): one the code throws with this exception's class
    first, then the longest (the most words the code fixed); never one of category other."""
    fitting = [s for s in items if s.entry.category != "other" and _reason(s.entry) in reasons]
    if not fitting:
        return None
    plain = SHADED.sub("", cls) if cls else None
    best = min(fitting, key=lambda s: (s.entry.cls != plain, -len(s.entry.text), s.line, s.entry.id))
    return _catalogued(best.entry), best


def _by_message(thrown: Thrown, known: Knowledge, catalogue: Catalogue | None, frames: list[str]) -> Entry | None:
    """Step 2: a table entry with a message that fits the exception (its class too, when it names one)."""
    for entry in known.entries:
        if entry.message and not entry.packages and _fits(entry, thrown, frames):
            return entry
    return None


def _by_class(thrown: Thrown, known: Knowledge, catalogue: Catalogue | None, frames: list[str]) -> Entry | None:
    """Step 3: a table entry of the exception's class alone, else the catalogue's entry of that class when its
    category rests on the class or its wording."""
    for entry in known.entries:
        if entry.cls and not entry.message and not entry.packages and _fits(entry, thrown, frames):
            return entry
    found = catalogue.by_class.get(SHADED.sub("", thrown.cls)) if catalogue else None
    if found is not None and found.category != "other" and _reason(found) in ("class", "wording"):
        return _catalogued(found)
    return None


def _by_package(thrown: Thrown, known: Knowledge, catalogue: Catalogue | None, frames: list[str]) -> Entry | None:
    """Step 4: a table entry of the exception's package, else the catalogue's entry of its class when its
    category comes from the package or component that defines it."""
    for entry in known.entries:
        if entry.packages and thrown.cls.startswith(entry.packages):
            return entry
    found = catalogue.by_class.get(SHADED.sub("", thrown.cls)) if catalogue else None
    if found is not None and found.category != "other" and _reason(found) in ("package", "component"):
        return _catalogued(found)
    return None


def _reason(entry: CatalogueEntry) -> str:
    """What a catalogue entry's category rests on: class, wording, package, component (or 'no': other)."""
    return entry.reason.split(" ", 1)[0]


def _catalogued(entry: CatalogueEntry) -> Entry:
    """A catalogue entry as the table's kind of answer: its category, what the category means, its fix hint."""
    meaning = CATEGORIES[entry.category].meaning
    return Entry(entry.category, f"{meaning} (catalogued from {entry.where})", entry.fix, catalogue=entry.id)


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
    catalogued: Catalogued | None = None,
) -> Outcome:
    """The verdict, the derived causes and the symptoms no cause explains.

    A cause is derived from the failure's exception chain when no cause rule names one, or when the best one
    only attributes the failure to a frame's code (`attribution: frame`) and the chain says something more
    specific, of another category: then the derived cause comes first (`derived_first`). `catalogued` is what
    the catalogue of the code's own messages found: messages on the failure events' lines, and failure lines no
    failure rule knows (after every failure rule's events)."""
    known = knowledge()
    explained = {rule.id for root in roots for rule, _, _ in root.chain} | {root.rule.id for root in roots}
    derived: list[DerivedCause] = []
    if not roots or roots[0].rule.attribution == "frame":
        derived = _derived(findings, known, load_catalogue(), catalogued or Catalogued())
    # over a frame rule, a more specific derivation comes first only when it says something else: when both name
    # the same category, the rule's answer (its explanation and fixes) stands
    first = bool(derived) and (
        not roots
        or derived[0].derivation.tier < FRAME_STEP
        and derived[0].derivation.category != roots[0].rule.category
    )
    if roots and not first:
        derived = []
    if derived:
        explained |= set(known.failure_rules)
    unexplained = _unexplained(findings, counts, rules, explained, kinds)
    verdict: Verdict = "derived-cause" if first else "known-cause" if roots else "no-failure"
    return Outcome(verdict, derived, unexplained, derived_first=first)


def _derived(
    findings: list[Finding], known: Knowledge, catalogue: Catalogue | None, catalogued: Catalogued
) -> list[DerivedCause]:
    failures = [f for f in findings if f.rule in known.failure_rules]
    found = {(f.sid, f.event_line or f.line) for f in failures}
    failures += [f for f in catalogued.failures if (f.sid, f.event_line or f.line) not in found]
    candidates = []
    for finding in failures:
        chain = exception_chain(finding)
        candidates.append(DerivedCause(finding, chain, derive(chain, known, catalogue, catalogued.within(finding))))
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


def _rank(candidate: DerivedCause, known: Knowledge) -> tuple[bool, int, int, bool, datetime, int, int]:
    """Best first: an event with an exception, of the preferred failure rule, whose category the table knows
    most specifically, earliest (untimed last), then in file order."""
    finding = candidate.finding
    return (
        not candidate.chain,
        known.failure_rules.index(finding.rule) if finding.rule in known.failure_rules else len(known.failure_rules),
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
