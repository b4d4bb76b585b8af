"""Match (inside the scan tasks): the rules' regexes over the events the prefilter kept, while the bytes are at hand.

A rule matches an event when one of its signatures does: the event is of a source kind the rule reads, its level
is one the signature names, and each of the signature's regexes finds a match in its field (the whole text, the
header's message, logger or thread, or one exception of the chain). The first signature that matches gives the
captures and the line that matched. Only the signatures the prefilter named for the event (each of their regexes
can match in it) are tried, so most events try none.

Every line is matchable: a `message` regex is tried on the header's message (a headerless event's: its first
line), and when it does not match there, on each later line of the event that is no stack frame (`at ...`,
`... N more`), without its leading blanks, in order; the first line it matches is the finding's line. A message
pasted below a timestamp line, or quoted inside a longer event, is read like a logged one.

The metrics' line regexes (analytics/metrics.py) are numbered here too; measure.py takes their measures.

The regexes are the rules' Java regexes read by Python's `re` (regexes.python_regex: the dialect the rule loader
already checks them in). Running them here, where the text already is, instead of in the JVM over the written
events table, took matching a GB of logs from about 19 s to about 2 s (bench/RESULTS.md). The rule cases
(`flinkdoctor rules test`) run this same path.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, fields
from functools import cached_property
from typing import TYPE_CHECKING, Literal, TypeAlias

from ..knowledge.regexes import python_regex
from .catalogue import CatalogueIndex, Entries, catalogue_index, shipped_index
from .prefilter import Positions, Prefilter, build_prefilter, signature_numbers

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from ..knowledge.rulebook import Rule

Flags: TypeAlias = "npt.NDArray[np.bool_]"  # one flag per (signature, event) pair
Hit: TypeAlias = tuple[str, dict[str, str], int]  # a rule's id, its captures, the index of the matching line

# The exception chain of an event (its own exception and every "Caused by"), for `exception` signatures.
EXCEPTION_LINE = (
    r"(?m)^(?:\s*Caused by: |\s*)?((?:[a-zA-Z_$][\w$]*\.)+[A-Z][\w$]*(?:Exception|Error|Throwable"
    r"|Failure)(?:\{[^\n]*|:[^\n]*)?)$"
)
_COMMA_UNDERSCORE = re.compile(r"[,_]")
# decisions a signature keeps (_Signature._decided), all dropped when full: a lab part repeats a few hundred
# messages per signature; the keys are header fields, so a worker holds at most this many of them per signature
DECIDED_PER_SIGNATURE = 1024
_UNDECIDED = object()
NO_LEVEL = "NONE"  # what a signature's `level` names an event without a level (vocabulary.Level)
# a stack frame or the count of frames left out: no message on such a line
FRAME_REGEX = r"\s*(?:at\s+\S|\.\.\.\s+\d+\s+(?:more|common frames omitted))"
FRAME = re.compile(FRAME_REGEX)
# a line after the first that is no frame, found in an event's whole text: FRAME with its blanks kept within the
# line, so it reads each line as FRAME reads the line alone
MESSAGE_LINE = re.compile("\n(?!" + FRAME_REGEX.replace("\\s", "[^\\S\\n]") + ")([^\n]*)")


@dataclass
class Fields:
    """What signatures read of one event, as the events table has it: the text, the header's fields (None for a
    headerless event), the source's kind, and the exception chain, worked out when a signature first asks."""

    text: str
    message: str
    level: str | None
    logger: str | None
    thread: str | None
    kind: str

    @cached_property
    def exception(self) -> list[str]:
        return python_regex(EXCEPTION_LINE).findall(self.text)

    @cached_property
    def message_lines(self) -> list[tuple[int, str]]:
        """(index, text without leading blanks) of the event's lines below its first that are no stack frame:
        where a message is looked for when the header's message does not hold it (a pasted or mis-cut text
        prints its messages on any line)."""
        text, found, index, done = self.text, [], 0, 0
        for hit in MESSAGE_LINE.finditer(text):  # frames are skipped by the regex, not line by line in Python
            index += text.count("\n", done, hit.start() + 1)
            done = hit.start() + 1
            if (line := hit.group(1)).strip():
                found.append((index, line.lstrip()))
        return found


@dataclass
class Rows:
    """The fields of many events as columns (a batch's rows), each event's Fields made once, when a signature that
    reads more than its text first asks (its exception chain and message lines are then worked out once)."""

    text: list[str]
    message: list[str]
    level: list[str | None]
    logger: list[str | None]
    thread: list[str | None]
    kind: str
    made: dict[int, Fields] = field(default_factory=dict)

    def fields(self, i: int) -> Fields:
        event = self.made.get(i)
        if event is None:
            event = Fields(self.text[i], self.message[i], self.level[i], self.logger[i], self.thread[i], self.kind)
            self.made[i] = event
        return event


@dataclass(frozen=True)
class _Signature:
    """One signature, compiled to what a task needs: picklable, its regexes compiled once per worker."""

    rule: int  # the rule's position
    rule_id: str
    kinds: frozenset[str] | None  # source kinds the rule reads (None: every kind)
    levels: frozenset[str]
    regexes: tuple[tuple[str, str], ...]  # (field, Java regex), the exception last: it costs the most
    captures: tuple[tuple[str, str, str], ...]  # (name, field, Java regex holding the group)
    where: tuple[tuple[str, float | None, float | None], ...]  # (capture, gte, lte)
    line: str | None  # the text regex, whose match says which line of the event matched

    def admits(self, kind: str, level: str | None) -> bool:
        """Whether the signature reads events of this source kind and level (its regexes aside)."""
        return (self.kinds is None or kind in self.kinds) and (not self.levels or (level or NO_LEVEL) in self.levels)

    @cached_property
    def _compiled(self) -> tuple[tuple[tuple[str, re.Pattern[str]], ...], tuple[tuple[str, int], ...], int | None]:
        """Its regexes compiled, each capture's regex and the line's by position among them: worked out once per
        worker, not looked up by (field, regex) for each of the tens of thousands of events a part tries. The
        same (field, regex) twice finds the same match; the last of them is read, as a dict of them would."""
        at = {pair: i for i, pair in enumerate(self.regexes)}
        return (
            tuple((key, python_regex(regex)) for key, regex in self.regexes),
            tuple((name, at[key, regex]) for name, key, regex in self.captures),
            None if self.line is None else at.get(("text", self.line)),
        )

    def __getstate__(self) -> dict[str, object]:
        """Its fields: what a worker works out and keeps (_compiled, _decided) is not shipped with a task."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @cached_property
    def _decided(self) -> dict[tuple[str | None, str | None, str | None], Hit | None] | None:
        """What it decided per (message, logger, thread), when it reads no text and no exception chain, kept
        for those its message regexes matched in the header's message (no later line of the text read): then
        these fields decide alone, and a lab part repeats a message thousands of times. None: it reads the text."""
        return None if any(key in ("text", "exception") for key, _ in self.regexes) else {}

    def match(self, event: Fields) -> Hit | None:
        """(rule id, captures, index of the matching line) when the signature matches the event. A decision
        kept (_decided) is shared, captures too: the caller reads them."""
        if not self.admits(event.kind, event.level):
            return None
        decided = self._decided
        if decided is None:
            return self._decide(event)[0]
        key = (event.message, event.logger, event.thread)
        hit = decided.get(key, _UNDECIDED)
        if hit is not _UNDECIDED:
            return hit  # type: ignore[return-value]
        hit, by_fields = self._decide(event)
        if by_fields:
            if len(decided) >= DECIDED_PER_SIGNATURE:
                decided.clear()
            decided[key] = hit
        return hit

    def _decide(self, event: Fields) -> tuple[Hit | None, bool]:
        """match's answer, and whether the fields decided it alone (no line below the first read)."""
        regexes, captured, line = self._compiled
        found: list[re.Match[str] | None] = []  # per regex, its match (None: an exception's, never read)
        at = 0  # the line of the message's match
        by_fields = True
        for key, pattern in regexes:
            if key == "exception":
                if not any(pattern.search(e) for e in event.exception):
                    return None, False
                found.append(None)
                continue
            value: str | None = getattr(event, key)
            if value is None:
                return None, by_fields
            hit = pattern.search(value)
            if hit is None and key == "message":
                by_fields = False
                hit, at = next(((h, i) for i, line in event.message_lines if (h := pattern.search(line))), (None, 0))
            if hit is None:
                return None, by_fields
            found.append(hit)
        return self._hit(found, event.text, at), by_fields

    def _hit(self, found: list[re.Match[str] | None], text: str, at: int) -> Hit | None:
        """The hit of regexes that all matched (`found`: per regex, its match), unless a capture is out of the
        bounds `where` sets; `at`: the line of the message's match, where no text regex names the line."""
        _, captured, line = self._compiled
        captures = {name: found[i].group(name) or "" for name, i in captured}  # type: ignore[union-attr]
        for name, gte, lte in self.where:
            number = _number(captures.get(name))
            if number is None or (gte is not None and number < gte) or (lte is not None and number > lte):
                return None
        hit = None if line is None else found[line]
        return self.rule_id, captures, text.count("\n", 0, hit.start()) if hit else at

    @cached_property
    def _text_only(self) -> re.Pattern[str] | None:
        """Its one regex, when that is all it reads and it reads the text: then an event's text decides alone."""
        regexes = self._compiled[0]
        return regexes[0][1] if len(regexes) == 1 and regexes[0][0] == "text" else None

    def match_rows(self, rows: Rows, events: list[int]) -> list[tuple[int, Hit]]:
        """(event, hit) of the `events` (positions in `rows`, whose kind and level it admits) it matches, in order:
        what `match` gives each, a text regex searched over the texts in one loop, not through `match` per event."""
        pattern = self._text_only
        if pattern is None:
            fields = rows.fields
            return [(i, hit) for i in events if (hit := self.match(fields(i))) is not None]
        texts = rows.text
        found = [(i, m) for i in events if (m := pattern.search(texts[i])) is not None]
        return [(i, hit) for i, m in found if (hit := self._hit([m], texts[i], 0)) is not None]


@dataclass(frozen=True)
class Matcher:
    """Every rule's signatures and every metric's line regex, numbered as their prefilter numbers them, and the
    failure catalogue's index (catalogue.py)."""

    prefilter: Prefilter
    signatures: dict[int, _Signature]
    metrics: dict[int, tuple[int, str, str]]  # signature number -> (the metric's position, line regex, a literal)
    catalogue: CatalogueIndex | None = None

    def match(self, event: Fields, numbers: Iterable[int]) -> list[Hit]:
        """The rules the event matches, in rule order, each with its first matching signature's captures and
        line; `numbers`: the signatures the prefilter named for it, ascending."""
        matched: list[Hit] = []
        done = -1
        for number in numbers:
            signature = self.signatures.get(number)  # None: a metric's signature (analytics read those)
            if signature is None or signature.rule == done:
                continue
            hit = signature.match(event)
            if hit:
                matched.append(hit)
                done = signature.rule
        return matched

    def match_rows(self, rows: Rows, events: Positions, numbers: Positions) -> dict[int, list[Hit]]:
        """Per event of `rows` (its position) that a rule matches, what `match` gives it, from the pairs
        (events[j], numbers[j]) sorted by event, then signature, each one its signature admits (`admitted`): each
        signature tried on its events in one loop (_Signature.match_rows), the signatures in order, so that a
        rule's later signatures are not tried where an earlier one matched, as `match` skips them."""
        import numpy as np

        if not len(numbers):
            return {}
        order = np.argsort(numbers, kind="stable")  # by signature, then event
        by_number, of = numbers[order], events[order]
        cuts = np.flatnonzero(by_number[1:] != by_number[:-1]) + 1
        matched: dict[int, list[Hit]] = {}
        rule, taken = -1, set[int]()  # the rule of the signatures tried last, and the events one of them matched
        for number, at in zip(by_number[np.append(0, cuts)].tolist(), np.split(of, cuts), strict=True):
            signature = self.signatures.get(number)  # None: a metric's signature (analytics read those)
            if signature is None:
                continue
            if signature.rule != rule:
                rule, taken = signature.rule, set[int]()
            tried = at.tolist()
            if taken:
                tried = [i for i in tried if i not in taken]
            for i, hit in signature.match_rows(rows, tried):
                matched.setdefault(i, []).append(hit)  # (signatures in order: each event's hits in rule order)
                taken.add(i)
        return matched

    def admitted(self, numbers: Positions, levels: Sequence[str | None], level_of: Positions, kind: str) -> Flags:
        """Per (signature, event) pair, whether the signature admits the event's source kind and level
        (_Signature.admits), its event's level given as its position in `levels`: decided for each distinct
        signature and level once, so a pair that cannot match is not tried per event in Python (a lab part's
        uncaught-exception signatures name ERROR or no level, and are candidates of every stack trace)."""
        import numpy as np

        distinct, at = np.unique(numbers, return_inverse=True)
        table = np.array(
            [[self._admits(number, kind, level) for level in levels] for number in distinct.tolist()], dtype=bool
        ).reshape(len(distinct), len(levels))
        admitted: Flags = table[at, level_of]
        return admitted

    def _admits(self, number: int, kind: str, level: str | None) -> bool:
        return self.signatures[number].admits(kind, level)  # (a rule's: the scan gives no metric's number)

    @cached_property
    def first_metric(self) -> int:
        return min(self.metrics, default=1 << 62)


SHIPPED: Literal["shipped"] = "shipped"


def build_matcher(
    rules: list[Rule], metric_lines: tuple[str, ...] = (), catalogue: Entries | Literal["shipped"] | None = SHIPPED
) -> Matcher:
    """The matcher of `rules` and of the metrics' line regexes, with the prefilter that numbers them (the
    metrics after every rule, so the rules' numbers do not depend on them), and of the failure catalogue (the
    shipped one, another with `entries` of `id` and `regex`, or None)."""
    from ..knowledge.rulebook import Signature, required_literals  # (the driver's: a task unpickles a Matcher)

    prefilter = build_prefilter(rules, [Signature(text=line) for line in metric_lines])
    signatures = {}
    for position, (rule, numbers) in enumerate(zip(rules, signature_numbers(rules), strict=True)):
        for sig, number in zip(rule.signatures, numbers, strict=True):
            regexes = sig.regexes()
            captures = []
            for name in rule.captures:
                for key, regex in regexes:
                    if key != "exception" and name in python_regex(regex).groupindex:
                        captures.append((name, key, regex))
                        break
            signatures[number] = _Signature(
                rule=position,
                rule_id=rule.id,
                kinds=frozenset(rule.sources) if rule.sources else None,
                levels=frozenset(sig.level),
                regexes=tuple(sorted(regexes, key=lambda kv: kv[0] == "exception")),
                captures=tuple(captures),
                where=tuple((name, bound.gte, bound.lte) for name, bound in rule.where.items()),
                line=sig.text,
            )
    first = sum(len(rule.signatures) for rule in rules)
    metrics = {}
    for i, line in enumerate(metric_lines):  # a line can only match if it holds the regex's longest literal
        literal = max(required_literals(Signature(text=line)), key=len, default="")
        metrics[first + i] = (i, line, literal)
    index = shipped_index() if catalogue == SHIPPED else catalogue_index(catalogue)
    return Matcher(prefilter, signatures, metrics, index)


def _number(value: str | None) -> float | None:
    """A capture as a number ("37,829" and "1_000" too), or None."""
    try:
        return float(_COMMA_UNDERSCORE.sub("", value)) if value else None
    except ValueError:
        return None
