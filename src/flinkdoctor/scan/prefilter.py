"""Which events some signature or catalogue entry can match: one Hyperscan pass over a part's raw bytes.

Hyperscan compiles the regexes themselves (patterns.py rewrites each into a pattern whose matches cover the
regex's on any text; Hyperscan's prefilter mode takes a construct it cannot run exactly), so an event is a
candidate of a signature only when each of the signature's regexes can match in it, not because it holds a
common word such as `Exception`. The same pass finds the level words of the headers (the WARN+ test) and the
catalogue's entries, and the events whose text the masks' trigger can match (masking.TRIGGER_RE2: RE2 then
decides on those only, not on every kept text). Python's `re` (matcher.py) then decides on the candidates only.

Per match Hyperscan reports its end offset; the event is the one that offset falls in. A match that starts in
one event and ends in the next makes the next a candidate it may not be: the matcher sorts that out. No match
inside an event is missed, so no event that a regex matches is skipped. A pattern whose matches can be read from
another's (uncaught-exception's `...Exception: \\S` from `...Exception`'s ends) is not run: _derivations.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, TypeAlias

from ..runtime.userstate import cached, store
from ..safety.masking import TRIGGER_RE2
from .checked import Checked, escaped, fail_pattern, groups, member_of, parsed
from .patterns import Unsupported, hyperscan_pattern

if TYPE_CHECKING:
    import hyperscan
    import numpy as np
    import numpy.typing as npt
    import pyarrow as pa

    from ..knowledge.rulebook import Rule, Signature

Bytes: TypeAlias = "npt.NDArray[np.uint8]"  # a part's bytes
Positions: TypeAlias = "npt.NDArray[np.int64]"  # byte offsets or event numbers, ascending
Flags: TypeAlias = "npt.NDArray[np.bool_]"

# the words a header's level can be at WARN or above (headers.WARN_WORDS), in both cases: found in the same pass
LEVEL_WORDS = ("CRITICAL", "ERROR", "FATAL", "SEVERE", "WARN", "WARNING")
PREFILTERED = ("text", "message", "exception")  # the fields whose regexes the pass looks for


@dataclass(frozen=True)
class Prefilter:
    patterns: tuple[str, ...]  # Hyperscan patterns, numbered by position; first the level words
    signatures: tuple[tuple[int, ...], ...]  # per signature (rules in order, then the extra ones): its patterns
    words: tuple[str, ...] = field(default=(), compare=False)  # the level words, patterns 0..len(words)-1
    compiled: bytes | None = field(default=None, repr=False, compare=False)  # the database, serialized
    # per signature, the patterns of its `message` regexes: the matcher tries such a regex on single lines only
    messages: tuple[tuple[int, ...], ...] = field(default=(), compare=False)
    trigger: int | None = field(default=None, compare=False)  # the masks' trigger's pattern (None: not in the pass)
    # the patterns the pass reads from others' matches (_derivations), and the database's own patterns: (number,
    # pattern) with the derivations' triggers numbered after `patterns` (empty: every pattern, none derived)
    derived: tuple[Derived, ...] = field(default=(), compare=False)
    scanned: tuple[tuple[int, str], ...] = field(default=(), compare=False)
    # the metric patterns the pass finds by their literal start and their failures (checked.py), not by running them
    checked: tuple[Checked, ...] = field(default=(), compare=False)


@dataclass(frozen=True)
class Derived:
    """A pattern the pass does not run: its matches are read from those of `base`, which it runs (_derivations).
    With `then`: the base's matches followed by the bytes `then` and one character of the class `last` (a
    Python regex), ending after that character. Without: the base's own matches, unless a `triggers` pattern
    matched in the part, a prefix that the pattern may start with and the base may not (then the pattern itself
    is run over the part)."""

    number: int
    base: int
    then: bytes | None = None
    last: str | None = None
    triggers: tuple[int, ...] = ()


def build_prefilter(rules: list[Rule], extra: Sequence[Signature] = ()) -> Prefilter:
    """Number the patterns: the level words, then each regex of the signatures (the `extra` ones, the metrics'
    lines, after every rule's, so the rules' numbers do not depend on them). A signature's `literal` is a pattern
    too. The same regex is one pattern, however many use it. The database is compiled here, on the driver, and
    its bytes go to the tasks. The masks' trigger is a pattern too, after the signatures'. The numbers are the
    same in every process (a signature's new patterns numbered in sorted order, not a set's, which follows the
    string hash's seed): the compiled database is kept by a digest of the patterns in their order (serialized)."""
    words = tuple(word for upper in LEVEL_WORDS for word in (upper, upper.lower()))
    # the signatures' patterns are numbered after the level words and never share a word's number, even when one
    # is the same text (`\bERROR\b`): a word's hits count only on an event's first line, a signature's anywhere
    ids: dict[str, int] = {}
    signatures, messages = [], []
    for sig in [sig for rule in rules for sig in rule.signatures] + list(extra):
        regexes = [(regex, key == "text") for key, regex in sig.regexes() if key in PREFILTERED]
        regexes += [(re.escape(sig.literal), False)] if sig.literal else []
        found = {pattern for pattern in (hyperscan_pattern(*r) for r in regexes) if pattern is not None}
        if not found:
            raise ValueError(f"a signature whose regexes can all match an empty text: {sig}")
        signatures.append(tuple(sorted(ids.setdefault(p, len(words) + len(ids)) for p in sorted(found))))
        message = {hyperscan_pattern(regex) for key, regex in sig.regexes() if key == "message"}
        messages.append(tuple(sorted(ids[p] for p in message if p is not None)))
    trigger_pattern = _trigger_pattern()
    trigger = None if trigger_pattern is None else ids.setdefault(trigger_pattern, len(words) + len(ids))
    patterns = tuple(re.escape(word) for word in words) + tuple(sorted(ids, key=ids.__getitem__))
    kept = {len(words) + n for n in range(len(ids))} - {p for ps in messages for p in ps} - {trigger}
    derived, scanned = _derivations(patterns, sorted(kept))
    metric = {p for sig in signatures[len(signatures) - len(extra) :] for p in sig}
    read = {d.number for d in derived} | {d.base for d in derived}  # (their offsets are read: _derived)
    checks, scanned = _checks(patterns, sorted((kept & metric) - read), scanned)
    return Prefilter(
        patterns,
        tuple(signatures),
        words,
        serialized(
            tuple(p for _, p in scanned),
            ids=[n for n, _ in scanned],
            single=frozenset(m for group in checks for m in group.marks),
        ),
        messages=tuple(messages),
        trigger=trigger,
        derived=derived,
        scanned=scanned,
        checked=checks,
    )


def _checks(
    patterns: tuple[str, ...], eligible: list[int], scanned: tuple[tuple[int, str], ...]
) -> tuple[tuple[Checked, ...], tuple[tuple[int, str], ...]]:
    """The groups of `eligible` patterns the pass finds by their literal start and failures (checked.py), and the
    patterns it runs: the groups' members replaced by each group's literal and failure pattern, numbered after
    every other pattern. Only metric patterns are eligible (a measured line is frequent; a rule's literal start
    may be common where its pattern is not), and only those whose offsets nothing reads."""
    found = groups(patterns, eligible, max(n for n, _ in scanned) + 1)
    members = {n for group in found for n in group.members}
    out = [(n, p) for n, p in scanned if n not in members]
    for group in found:
        rests = [parsed(patterns[n]) for n in group.members]
        out.append((group.found, escaped(group.literal)))
        out.append((group.failed, fail_pattern(group.literal, [r[1] for r in rests if r is not None])))
        out += [(m, escaped(mark)) for m, mark in zip(group.marks, group.mark_texts, strict=True)]
    return tuple(found), tuple(out)


LINE_START = "(?:(?m:^)|\\x{0})"  # a `^` or `\A` regex's start as patterns.py writes it (whole_text)
_CHAR = r"(?:\\x\{[0-9a-f]+\}|[0-9A-Za-z_ ])"  # one character as patterns.py writes it (_char)
_FOLLOW = re.compile(rf"({_CHAR}+)(\[(?:{_CHAR}|-)+\])")  # literal characters, then a class of one
_NEWLINE_LAST = "(?:\\r?\\x{a})"  # a newline (the bytes may put a carriage return before it), patterns.py's


def _derivations(
    patterns: tuple[str, ...], eligible: list[int]
) -> tuple[tuple[Derived, ...], tuple[tuple[int, str], ...]]:
    """The patterns of `eligible` the pass can read from another's matches instead of running them, and the
    patterns it runs (number, pattern). Hyperscan's cost is per pattern verified after a literal: a rule that
    writes the same exception line several ways (uncaught-exception's six: 0.07 of a lab part's 0.31 s pass)
    costs each time. Two forms, both exact (every match's end the same as the pattern's own):
    - `B` + literal characters + a class of one (`...Exception: \\S` after `...Exception`): the base B's ends
      followed by those bytes and such a character;
    - `^(?:A1|A2|...)?R` beside `^R` (`\\A(?:@\\S++ |<a date line>)?...` as the pass writes `\\A`: any line
      start): an alternative ending in a newline adds no end (after it `^R` matches from the next line's start);
      any other adds ends only where `^` + its first character is found, a trigger run in the pass: when none
      matched in a part, the pattern's ends are ^R's.
    Only patterns no `message` regex and no other use reads (their matches' lines are read: _message_tries) are
    derived, and only from patterns the pass runs."""
    derived: dict[int, Derived] = {}
    bases: set[int] = set()
    triggers: dict[str, int] = {}
    for number in eligible:
        pattern = patterns[number]
        for base in eligible:
            if base == number or base in derived or number in bases:
                continue
            follow = _follow(pattern, patterns[base])
            if follow is not None:
                derived[number] = Derived(number, base, *follow)
            else:
                alternatives = _optional_prefix(pattern, patterns[base])
                if alternatives is None:
                    continue
                found = [
                    triggers.setdefault(LINE_START + _first_atom(a), len(patterns) + len(triggers))
                    for a in alternatives
                    if a and not _ends_in_newline(a)
                ]
                derived[number] = Derived(number, base, triggers=tuple(found))
            bases.add(base)
            break
    scanned = [(n, p) for n, p in enumerate(patterns) if n not in derived]
    scanned += [(n, t) for t, n in triggers.items()]
    return tuple(derived.values()), tuple(scanned)


def _follow(pattern: str, base: str) -> tuple[bytes, str] | None:
    """(bytes, class) when `pattern` is `base` followed by literal characters and a class of one character (a
    `base` with a top-level `|` is not: `foo|bar: [x]` also matches `foo` alone)."""
    if not base or not pattern.startswith(base) or _top_level(base) != [base]:
        return None
    if base[-1] not in ")]}" and not base[-1].isalnum():
        return None
    follow = _FOLLOW.fullmatch(pattern[len(base) :])
    if follow is None:
        return None
    then = "".join(_unescaped(c) for c in re.findall(_CHAR, follow[1])).encode("utf-8")
    return then, re.sub(r"\\x\{([0-9a-f]+)\}", lambda m: f"\\U{int(m[1], 16):08x}", follow[2])


def _unescaped(char: str) -> str:
    return chr(int(char[3:-1], 16)) if char.startswith("\\x{") else char


def _optional_prefix(pattern: str, base: str) -> list[str] | None:
    """The alternatives A1, A2... when `pattern` is `^(?:A1|A2|...){0,1}R` and `base` is `^R` (^: LINE_START)."""
    if not (base.startswith(LINE_START) and pattern.startswith(LINE_START + "(?:") and len(pattern) > len(base)):
        return None
    rest = base[len(LINE_START) :]
    if not pattern.endswith(rest) or not pattern[: len(pattern) - len(rest)].endswith("){0,1}"):
        return None
    group = pattern[len(LINE_START) : len(pattern) - len(rest) - len("{0,1}")]
    parts = _group_of(group)
    while parts is not None and len(parts) == 1 and _group_of(parts[0]) is not None:  # (?:(?:A|B)): its A, B
        parts = _group_of(parts[0])
    return parts


def _group_of(text: str) -> list[str] | None:
    """The alternatives of `text` when it is one group `(?:...)`, else None."""
    if not text.startswith("(?:") or not text.endswith(")") or _top_level(text[3:-1]) is None:
        return None
    return _top_level(text[3:-1])


def _top_level(text: str) -> list[str] | None:
    """`text` split at its `|` outside groups and classes (None: its groups do not balance)."""
    parts, depth, start, at, in_class = [], 0, 0, 0, False
    while at < len(text):
        char = text[at]
        if char == "\\":
            at += 2
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth < 0:
                return None
        elif char == "|" and depth == 0:
            parts.append(text[start:at])
            start = at + 1
        at += 1
    return parts + [text[start:]] if depth == 0 and not in_class else None


def _ends_in_newline(alternative: str) -> bool:
    """Whether every match of the alternative ends with a newline: its last item, at its top level, is one."""
    if not alternative.endswith(_NEWLINE_LAST):
        return False
    head = alternative[: -len(_NEWLINE_LAST)]
    return _top_level(head) == [head]


def _first_atom(alternative: str) -> str:
    """The alternative's first character when it is one not repeated (a match of it starts with that character),
    else the whole alternative."""
    first = re.match(_CHAR, alternative)
    if first is None or alternative[first.end() : first.end() + 1] == "{":
        return alternative
    return first[0]


def _trigger_pattern() -> str | None:
    """The masks' trigger as a pattern of the pass: its matches cover RE2's on an event's whole text (hyperscan_pattern
    covers Python's `re`, whose case folding and classes hold RE2's here: the same explicit classes, and folds of
    ASCII letters that include RE2's K and long s), so an event the pass does not name has no text to mask. None:
    the trigger can match an empty text, or holds a construct the rewrite does not know (every text is tested)."""
    try:
        return hyperscan_pattern(TRIGGER_RE2, whole_text=True)
    except Unsupported:
        return None


def signature_numbers(rules: list[Rule]) -> list[list[int]]:
    """Per rule, the numbers its signatures have in the Prefilter built from the same rules."""
    numbers, n = [], 0
    for rule in rules:
        numbers.append(list(range(n, n + len(rule.signatures))))
        n += len(rule.signatures)
    return numbers


@dataclass
class Hits:
    """What one pass over a part's events found: per pattern, the (unique, ascending) events it matched in,
    and the events whose first line holds a level word."""

    events: int
    by_pattern: dict[int, Positions]
    level_words: Positions
    # every match of a signature's pattern: its pattern and the offset just past its last byte, by that offset
    # (the pass's order; a derived pattern's among them: _derived; a checked pattern's ends where its literal
    # start does, in the same line: _checked)
    which: Positions | None = None
    stop: Positions | None = None

    def signature_events(self, pattern_ids: tuple[int, ...]) -> Positions:
        """The events holding every one of the patterns."""
        import numpy as np

        found: Positions | None = None
        for pattern in pattern_ids:
            events = self.by_pattern.get(pattern)
            if events is None:
                return np.zeros(0, dtype=np.int64)
            found = events if found is None else np.intersect1d(found, events, assume_unique=True)
        return found if found is not None else np.zeros(0, dtype=np.int64)


def scan(
    prefilter: Prefilter,
    data: Bytes,
    begin: Positions,
    first_line_end: Positions,
    files: Positions | None = None,
) -> Hits:
    """One Hyperscan pass over the events: byte spans of the numpy uint8 `data` starting at `begin` (in order,
    back to back, the last to the end of `data`); `first_line_end`: where each event's first line ends.
    `files`: where each of several files joined in `data` starts (scanner.scan_parts); each is scanned on its
    own, so no match runs from one file into the next."""
    import numpy as np

    n = len(begin)
    none = np.zeros(0, dtype=np.int64)
    if not n:
        return Hits(0, {}, none)
    compiled = database(prefilter)
    if compiled is None:
        return _scan_re2(prefilter, data, begin, first_line_end)
    bounds = [int(begin[0]), len(data)] if files is None else [*files.tolist(), len(data)]
    segments = [(lo, hi) for lo, hi in zip(bounds[:-1], bounds[1:], strict=True) if hi > lo]  # the files scanned
    which, stop, last = _pass(compiled, data, segments)
    if prefilter.checked and prefilter.scanned:
        which, stop, last = _checked(prefilter, data, segments, which, stop, last)
    if prefilter.derived:
        which, stop = _derived(prefilter, data, segments, which, stop, last)
    if not len(which):
        return Hits(n, {}, none)
    event = np.searchsorted(begin, stop - 1, side="right") - 1  # the event holding the match's last byte
    words = which < len(prefilter.words)
    level_words = distinct(event[words & (stop <= first_line_end[event])])
    hits = _hits(n, which[~words], event[~words], level_words)
    hits.which, hits.stop = which[~words], stop[~words]
    return hits


def _pass(
    compiled: hyperscan.Database, data: Bytes, segments: list[tuple[int, int]]
) -> tuple[Positions, Positions, Positions]:
    """Every match in the segments [lo, hi) of `data`, each scanned on its own: its pattern, the offset just
    past its last byte, and the end of its segment."""
    import numpy as np

    ids: list[int] = []
    ends: list[int] = []

    def on_match(  # (once per match: the fewest operations, each list's append bound once)
        pattern_id: int,
        start: int,
        stop: int,
        flags: int,
        context: object,
        of_pattern: Callable[[int], None] = ids.append,
        of_end: Callable[[int], None] = ends.append,
    ) -> None:
        of_pattern(pattern_id)
        of_end(stop)

    counts = []  # each segment's matches (their ends are in the segment)
    for lo, hi in segments:
        found = len(ends)
        compiled.scan(data.data[lo:hi], match_event_handler=on_match)  # type: ignore[type-var]  # stub: str|bytes; any buffer scans
        counts.append(len(ends) - found)
    which = np.array(ids, dtype=np.int64)
    stop = np.array(ends, dtype=np.int64) + np.repeat(np.array([lo for lo, _ in segments], dtype=np.int64), counts)
    last = np.repeat(np.array([hi for _, hi in segments], dtype=np.int64), counts)
    return which, stop, last


def _derived(
    prefilter: Prefilter,
    data: Bytes,
    segments: list[tuple[int, int]],
    which: Positions,
    stop: Positions,
    last: Positions,
) -> tuple[Positions, Positions]:
    """The pass's matches with the derived patterns' (Derived) among them, in the order of their ends, as the
    pass gives its own, and without the derivations' triggers."""
    import numpy as np

    triggered = which >= len(prefilter.patterns)
    fired = bool(triggered.any())
    exact = [d.number for d in prefilter.derived if d.triggers] if fired else []
    found_which, found_stop = [np.zeros(0, dtype=np.int64)], [np.zeros(0, dtype=np.int64)]
    if exact:  # a prefix a derivation cannot read: those patterns run over the part themselves
        ran, ran_stop, _ = _pass(_compiled_alone(tuple(prefilter.patterns[d] for d in exact)), data, segments)
        found_which.append(np.array(exact, dtype=np.int64)[ran])
        found_stop.append(ran_stop)
    for d in prefilter.derived:
        if d.number not in exact:
            at = which == d.base
            ends = stop[at] if d.then is None else _followed(data, stop[at], last[at], d.then, d.last or "")
            found_which.append(np.full(len(ends), d.number, dtype=np.int64))
            found_stop.append(ends)
    if fired:
        which, stop = which[~triggered], stop[~triggered]
    more_which, more_stop = np.concatenate(found_which), np.concatenate(found_stop)
    which, stop = _by_end(stop, more_stop, (which, more_which), (stop, more_stop))
    return which, stop


def _by_end(stop: Positions, more_stop: Positions, *columns: tuple[Positions, Positions]) -> tuple[Positions, ...]:
    """The pass's matches (ending at `stop`, in order) with more matches (ending at `more_stop`, any order) put
    among them in the order of their ends, each after the pass's own ending at the same offset: per column, the
    pass's values and the more's, merged."""
    import numpy as np

    order = np.argsort(more_stop, kind="stable")
    at = np.searchsorted(stop, more_stop[order], side="right")
    return tuple(np.insert(mine, at, theirs[order]) for mine, theirs in columns)


def _checked(
    prefilter: Prefilter,
    data: Bytes,
    segments: list[tuple[int, int]],
    which: Positions,
    stop: Positions,
    last: Positions,
) -> tuple[Positions, Positions, Positions]:
    """The pass's matches with the checked groups' members' (checked.py) among them, in the order of their ends,
    and without the groups' own reports. An occurrence of a group's literal in a line without a failure report
    is a match of the member member_of names, reported at the literal's end; a line with one is run through
    the members' patterns themselves (their matches cannot leave the line)."""
    import numpy as np

    dropped = np.zeros(len(which), dtype=bool)
    which = which.copy()
    more: list[tuple[Positions, Positions, Positions]] = []
    starts = np.array([lo for lo, _ in segments], dtype=np.int64)
    for group in prefilter.checked:
        at = np.flatnonzero(which == group.found)
        failed = which == group.failed
        dropped |= failed
        fails = stop[failed]
        # (the lines no member matches; many: the members run over the whole part)
        lines = list(segments) if len(fails) > MANY_FAILURES else _failed_lines(data, fails, segments)
        if lines:  # the occurrences in those lines: the members' own matches there instead
            inside = _ending_in(stop[at], lines)
            dropped[at[inside]] = True
            at = at[~inside]
            alone = _compiled_alone(tuple(prefilter.patterns[n] for n in group.members))
            ran, ran_stop, ran_last = _pass(alone, data, lines)
            more.append((np.array(group.members, dtype=np.int64)[ran], ran_stop, ran_last))
        members = np.array(group.members, dtype=np.int64)
        if not group.marks:
            which[at] = members[0]
            continue
        # per segment, the members whose mark (a literal every match of theirs holds) it holds: one, and every
        # occurrence there is that member's; more, and member_of tells them apart
        segment = np.searchsorted(starts, stop[at], side="right") - 1
        marked = np.zeros((len(segments), len(members)), dtype=bool)
        for index, mark in enumerate(group.marks):
            here = np.flatnonzero(which == mark)
            dropped[here] = True
            marked[np.searchsorted(starts, stop[here], side="right") - 1, index] = True
        alone_here = marked.sum(axis=1) == 1
        sole = alone_here[segment]
        which[at[sole]] = members[marked[segment[sole]].argmax(axis=1)]
        which[at[~sole]] = members[member_of(data, stop[at[~sole]], group)]
    which, stop, last = which[~dropped], stop[~dropped], last[~dropped]
    if not more:
        return which, stop, last
    more_which, more_stop, more_last = (np.concatenate([m[k] for m in more]) for k in range(3))
    which, stop, last = _by_end(stop, more_stop, (which, more_which), (stop, more_stop), (last, more_last))
    return which, stop, last


MANY_FAILURES = 256  # more failure reports in a part: not a line at a time (hostile input costs one more scan)


def _failed_lines(data: Bytes, fails: Positions, segments: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The lines (sorted, distinct spans) holding the failure reports ending at `fails`: each line found once, not
    once per failure in it (a long line of many failures is read once)."""
    lines: list[tuple[int, int]] = []
    for end in sorted(fails.tolist()):
        if not lines or not lines[-1][0] <= end - 1 < lines[-1][1]:
            lines.append(_line_at(data, end - 1, segments))
    return lines


def _ending_in(ends: Positions, spans: list[tuple[int, int]]) -> Flags:
    """Per match end, whether it is in one of `spans` (sorted, not overlapping): lo < end <= hi, by one search,
    not a pass over the ends per span (thousands of joined files' segments)."""
    import numpy as np

    los = np.array([lo for lo, _ in spans], dtype=np.int64)
    his = np.array([hi for _, hi in spans], dtype=np.int64)
    span = np.searchsorted(los, ends, side="left") - 1  # the last span starting before the end
    inside: Flags = (span >= 0) & (ends <= his[np.maximum(span, 0)])
    return inside


def _line_at(data: Bytes, at: int, segments: list[tuple[int, int]]) -> tuple[int, int]:
    """The byte span [start, end) of the line holding byte `at` (its newline included), within its segment."""
    import numpy as np

    lo, hi = next((lo, hi) for lo, hi in segments if lo <= at < hi)
    start = at
    while start > lo:
        chunk = data[max(lo, start - 4096) : start]
        newlines = np.flatnonzero(chunk == 10)
        if len(newlines):
            start = start - len(chunk) + int(newlines[-1]) + 1
            break
        start -= len(chunk)
    end = at
    while end < hi:
        chunk = data[end : min(hi, end + 4096)]
        newlines = np.flatnonzero(chunk == 10)
        if len(newlines):
            end += int(newlines[0]) + 1
            break
        end += len(chunk)
    return max(start, lo), min(end, hi)


@lru_cache(maxsize=8)
def _compiled_alone(patterns: tuple[str, ...]) -> hyperscan.Database:
    """The derived patterns themselves, each reported by its position, compiled in this process when a part
    needs them (a trigger matched: rare)."""
    database = compile_patterns(patterns)
    assert database is not None
    return database


def _followed(data: Bytes, ends: Positions, last: Positions, then: bytes, one: str) -> Positions:
    """The ends of the matches that continue each of `ends` with the bytes `then` and one character of the class
    `one` (up to their segment's end, `last`): the offset just past that character."""
    import numpy as np

    size = len(then)
    ok = ends + size < last  # room for `then` and a character's first byte
    for at, byte in enumerate(then):
        ok[ok] = data[ends[ok] + at] == byte
    lead = np.zeros(len(ends), dtype=np.int64)
    lead[ok] = data[ends[ok] + size]
    table = np.array([re.fullmatch(one, chr(b)) is not None for b in range(128)])
    ascii_ = ok & (lead < 0x80)
    ascii_[ascii_] = table[lead[ascii_]]
    out = ends[ascii_] + size + 1
    wide = np.flatnonzero(ok & (lead >= 0x80))  # a character of several bytes (the data is valid UTF-8)
    if len(wide):
        more = []
        for at in wide.tolist():
            start = int(ends[at]) + size
            width = 2 if lead[at] < 0xE0 else 3 if lead[at] < 0xF0 else 4
            try:
                char = bytes(data[start : start + width]).decode("utf-8")
            except UnicodeDecodeError:  # (not UTF-8: Hyperscan's matches are not defined on it)
                continue
            if start + width <= last[at] and len(char) == 1 and re.fullmatch(one, char):
                more.append(start + width)
        out = np.sort(np.concatenate([out, np.array(more, dtype=np.int64)]))
    return out


def distinct(values: Positions) -> Positions:
    """np.unique(values) by a sort: numpy 2's np.unique hashes first, and took six times as long on the hundreds
    of thousands of matches of a part (a tenth of a production part's scan)."""
    import numpy as np

    ordered = np.sort(values)
    return ordered[np.append(True, ordered[1:] != ordered[:-1])] if len(ordered) else ordered


def _hits(n: int, which: Positions, event: Positions, level_words: Positions) -> Hits:
    """Hits of the (pattern, event) pairs found, each pair counted once."""
    import numpy as np

    pattern, event = _pairs(n, which, event)  # sorted by pattern, then event
    cuts = np.flatnonzero(np.diff(pattern)) + 1
    if not len(pattern):
        return Hits(n, {}, level_words)
    firsts = np.append(0, cuts)
    by_pattern = {int(pattern[at]): events for at, events in zip(firsts, np.split(event, cuts), strict=True)}
    return Hits(n, by_pattern, level_words)


def _pairs(n: int, which: Positions, event: Positions) -> tuple[Positions, Positions]:
    """The distinct (pattern, event) pairs of the matches, sorted by pattern, then event. Hyperscan reports a
    scan's matches by their end, so their events ascend: then a stable sort by the pattern's number alone (a
    radix sort of small numbers) orders the pairs, where sorting (pattern * n + event) cost a part's 200,000
    matches three times as much; matches in another order (the RE2 pass's) take that sort."""
    import numpy as np

    if len(event) > 1 and not (event[1:] >= event[:-1]).all():
        return np.divmod(distinct(which * n + event), n)
    if not len(event):
        return which, event
    order = np.argsort(which.astype(np.int16 if which.max() < 1 << 15 else np.int64), kind="stable")
    pattern, event = which[order], event[order]
    first = np.append(True, (pattern[1:] != pattern[:-1]) | (event[1:] != event[:-1]))
    return pattern[first], event[first]


def _scan_re2(prefilter: Prefilter, data: Bytes, begin: Positions, first_line_end: Positions) -> Hits:
    """The same pass without Hyperscan (a platform without its wheel): RE2, which reads the same pattern syntax,
    over the events as an Arrow array, one pattern at a time (slower by the number of patterns)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    def spans(
        ends: Positions,
    ) -> pa.LargeStringArray:  # back-to-back spans from `begin`, as strings over `data` (no copy)
        offsets = np.append(begin, ends[-1]).astype(np.int64)
        return pa.LargeStringArray.from_buffers(len(begin), pa.py_buffer(offsets), pa.py_buffer(data))

    events = spans(np.append(begin[1:], len(data)))
    first_lines = pa.array(
        [bytes(data[a:b]).decode("utf-8", "replace") for a, b in zip(begin, first_line_end, strict=True)]
    )
    words: set[int] = set()
    for word in prefilter.words:
        words.update(np.flatnonzero(pc.match_substring(first_lines, word).to_numpy(zero_copy_only=False)).tolist())
    which: list[Positions] = []
    event: list[Positions] = []
    for number, pattern in enumerate(prefilter.patterns[len(prefilter.words) :], start=len(prefilter.words)):
        hit = np.flatnonzero(pc.match_substring_regex(events, pattern).to_numpy(zero_copy_only=False))
        which.append(np.full(len(hit), number, dtype=np.int64))
        event.append(hit)
    empty = np.zeros(0, dtype=np.int64)
    return _hits(
        len(begin),
        np.concatenate([empty, *which]),
        np.concatenate([empty, *event]),
        np.array(sorted(words), dtype=np.int64),
    )


def database(prefilter: Prefilter) -> hyperscan.Database | None:
    """The prefilter's database in this process (None without Hyperscan)."""
    scanned = prefilter.scanned or tuple(enumerate(prefilter.patterns))
    single = frozenset(m for group in prefilter.checked for m in group.marks) if prefilter.scanned else frozenset()
    return _loaded(tuple(p for _, p in scanned), tuple(n for n, _ in scanned), prefilter.compiled, single)


@lru_cache(maxsize=4)
def _loaded(
    patterns: tuple[str, ...], ids: tuple[int, ...], compiled: bytes | None, single: frozenset[int] = frozenset()
) -> hyperscan.Database | None:
    """Loaded from the bytes the driver compiled (once per worker process), else compiled here (a worker on
    another platform, or a prefilter built without them), each pattern reported by its id."""
    if compiled is not None:
        import hyperscan

        try:
            database = hyperscan.loadb(compiled, hyperscan.HS_MODE_BLOCK)
            database.scratch = hyperscan.Scratch(database)  # a loaded database has none
            return database
        except hyperscan.error:
            pass
    try:
        return compiled_with_modes(patterns, ids, single)[0]
    except ImportError:
        return None


def serialized(
    patterns: tuple[str, ...],
    name: str = "hyperscan-rules",
    ids: Sequence[int] | None = None,
    single: frozenset[int] = frozenset(),
) -> bytes | None:
    """The patterns' database compiled and serialized (each pattern reported by its `ids`, default its
    position; those of `single` reported once per scan), kept in the user's state folder by a digest of the
    patterns and ids (compiling the rules' takes a third of a second, a catalogue's many seconds); None without
    Hyperscan."""
    try:
        import hyperscan
    except ImportError:
        return None
    named = patterns if ids is None else (*patterns, *map(str, ids))
    named = (*named, "single", *map(str, sorted(single))) if single else named
    key = hashlib.sha256("\0".join(named).encode("utf-8")).hexdigest()[:32]
    found = cached(name, key)
    if isinstance(found, bytes):
        return found
    compiled = hyperscan.dumpb(compiled_with_modes(patterns, ids, single)[0])
    store(name, key, compiled)
    return compiled


def compile_patterns(patterns: tuple[str, ...], ids: Sequence[int] | None = None) -> hyperscan.Database | None:
    """The patterns compiled for Hyperscan's block mode, each reported by its `ids` (default: its position; None
    without Hyperscan). A pattern Hyperscan cannot compile exactly is compiled in its prefilter mode (a superset
    of its matches, which is all the pass needs)."""
    try:
        import hyperscan  # noqa: F401 (only whether it is there)
    except ImportError:
        return None
    return compiled_with_modes(patterns, ids)[0]


def compiled_with_modes(
    patterns: tuple[str, ...], ids: Sequence[int] | None = None, single: frozenset[int] = frozenset()
) -> tuple[hyperscan.Database, frozenset[int]]:
    """compile_patterns' database (Hyperscan must be there), each pattern reported by its `ids` (default: its
    position; those of `single` once per scan), and the positions of the patterns it compiled in prefilter
    mode."""
    import hyperscan

    numbers = list(range(len(patterns)) if ids is None else ids)
    exact = hyperscan.HS_FLAG_UTF8
    flags = [exact | (hyperscan.HS_FLAG_SINGLEMATCH if n in single else 0) for n in numbers]
    try:
        return _compiled(patterns, flags, numbers), frozenset()
    except hyperscan.error:
        for i, pattern in enumerate(patterns):  # find the ones that need the prefilter mode
            try:
                _compiled((pattern,), [exact], [0])
            except hyperscan.error:
                flags[i] |= hyperscan.HS_FLAG_PREFILTER
        prefiltered = hyperscan.HS_FLAG_PREFILTER
        return _compiled(patterns, flags, numbers), frozenset(i for i, f in enumerate(flags) if f & prefiltered)


def _compiled(patterns: tuple[str, ...], flags: list[int], ids: list[int]) -> hyperscan.Database:
    import hyperscan

    db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    db.compile(
        expressions=[p.encode("ascii") for p in patterns],
        ids=ids,
        elements=len(patterns),
        flags=flags,
    )
    return db


def spans(data: Bytes | pa.Buffer, begin: Positions, end: Positions) -> pa.StringArray:
    """The byte spans [begin, end) of `data` as a pyarrow string array (one copy)."""
    import numpy as np
    import pyarrow as pa

    bounds = np.empty(2 * len(begin) + 1, dtype=np.int64)
    bounds[0:-1:2], bounds[1::2], bounds[-1] = begin, end, end[-1] if len(end) else 0
    both = pa.LargeStringArray.from_buffers(len(bounds) - 1, pa.py_buffer(bounds), pa.py_buffer(data))
    return both.take(pa.array(np.arange(0, len(bounds) - 1, 2))).cast(pa.string())
