"""Patterns the pass finds by their literal start and a pattern of their failures, not by running them.

A metric's line is frequent (a checkpoint's completion: 152,000 in a production JobManager part of 100 MB), and
Hyperscan's cost for such a pattern is twofold: the binding's callback per match, and as much again where it
reports the match from an engine after the literal (`Completed checkpoint \\d+ for job ...`: 0.14 s in a pass of
its own against 0.07 s for its literal start, whose reports are the same in number). A pattern that reports only
where the rest of the pattern fails after the literal costs Hyperscan about what the literal does, and reports
nothing on such lines. So the pass runs, for a group of patterns that start with the same literal L:
- L itself, one report per occurrence (`found`);
- the group's failure pattern (`failed`): L followed by what no member's rest can match (fail_pattern), so it
  reports exactly where an occurrence of L starts no member's match;
- per member of several, a literal each of its matches holds (its mark: ` bytes in `, ` bytes, checkpointDuration=`),
  reported once per scan;
and the members' matches are read from those: an occurrence of L in a line without a failure report is a match
of one member, the only one whose mark the segment holds (a log is of one Flink version), else the one member_of
finds at the byte where the members' rests part (a literal character, distinct per member); a line with a
failure report is run through the members' own patterns (rare). The matches are reported at the literal's end,
not the match's: the same line (the rests cannot hold a newline), so the same event (an event starts at a line's
start, and each joined file is scanned on its own); nothing reads these patterns' offsets but their events: only
patterns no `message` regex, derivation or the masks' trigger reads are checked (prefilter.build_prefilter).

A member's rest must be a sequence the failure pattern can follow exactly: literal ASCII characters and repeats
of one class (ASCII characters, with or without every character outside ASCII, never a newline), a repeat of
variable length followed by an item whose characters it cannot hold (where it stops is certain), the last item
of a fixed length. Any other pattern runs as it is.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

Bytes: TypeAlias = "npt.NDArray[np.uint8]"
Positions: TypeAlias = "npt.NDArray[np.int64]"

MIN_LITERAL = 16  # a shorter literal start may be common in lines the pattern does not match: not checked
NEWLINE = 0x0A
WIDE = "\\x{80}-\\x{10ffff}"  # every character outside ASCII, as patterns.py writes it in a class

_ESCAPED = re.compile(r"\\x\{([0-9a-f]+)\}")
_LITERAL = re.compile(r"\\x\{[0-9a-f]+\}|[0-9A-Za-z_ ]")
_REPEAT = re.compile(r"\(\?:(\(\?:)?\[((?:\\x\{[0-9a-f]+\}|[0-9A-Za-z_ ]|-)+)\]\)\{(\d+),(\d*)\}(\))?")


@dataclass(frozen=True)
class Item:
    """One literal character (low == high == 1, one code) or a repeat of a class: `chars` its ASCII codes,
    `wide` whether every character outside ASCII is in it too."""

    chars: frozenset[int]
    wide: bool
    low: int
    high: int | None  # None: no upper bound

    @property
    def fixed(self) -> bool:
        return self.low == self.high


@dataclass(frozen=True)
class Checked:
    """A group of patterns run as their literal start and their failures (module docstring)."""

    literal: str  # L, ASCII text
    members: tuple[int, ...]  # the patterns' numbers
    shared: tuple[Item, ...]  # the items after L that every member has, up to where they part
    parts: tuple[int, ...]  # per member, the byte its rest continues with after `shared` (one member: empty)
    found: int  # the number L is reported by
    failed: int  # the number the failure pattern is reported by
    # per member (several), a literal each of its matches holds and the number it is reported by, once per scan
    mark_texts: tuple[str, ...] = ()
    marks: tuple[int, ...] = ()


def parsed(pattern: str) -> tuple[str, list[Item]] | None:
    """(L, the items after it) of a pattern patterns.py wrote, when it is a literal start of at least
    MIN_LITERAL characters followed by items the failure pattern can follow (module docstring); else None."""
    at, literal, items = 0, [], []
    while at < len(pattern):
        one = _LITERAL.match(pattern, at)
        repeat = _REPEAT.match(pattern, at)
        if repeat is not None and bool(repeat[1]) == bool(repeat[5]):
            chars, wide = _class(repeat[2])
            if chars is None or NEWLINE in chars:
                return None
            high = int(repeat[4]) if repeat[4] else None
            if (high is not None and high < int(repeat[3])) or int(repeat[3]) < 1:
                return None
            items.append(Item(chars, wide, int(repeat[3]), high))
            at = repeat.end()
        elif one is not None:
            code = _code(one[0])
            if code >= 0x80 or code == NEWLINE:
                return None
            if items:
                items.append(Item(frozenset([code]), False, 1, 1))
            else:
                literal.append(chr(code))
            at = one.end()
        else:
            return None
    if len(literal) < MIN_LITERAL or not items or not _certain(items):
        return None
    return "".join(literal), items


def _code(char: str) -> int:
    escaped = _ESCAPED.fullmatch(char)
    return int(escaped[1], 16) if escaped else ord(char)


def _class(body: str) -> tuple[frozenset[int] | None, bool]:
    """The ASCII codes of a class patterns.py wrote and whether it holds every character outside ASCII (None: it
    holds only some of them)."""
    wide = body.endswith(WIDE)
    if wide:
        body = body[: -len(WIDE)]
    codes = [(_code(m[0]), m.end()) for m in _LITERAL.finditer(body)]
    chars: set[int] = set()
    at = 0
    while at < len(codes):
        code = codes[at][0]
        if at + 1 < len(codes) and body[codes[at][1] : codes[at][1] + 1] == "-":
            chars.update(range(code, codes[at + 1][0] + 1))
            at += 2
        else:
            chars.add(code)
            at += 1
    if any(c >= 0x80 for c in chars) or "".join(_LITERAL.findall(body)).replace("-", "") != body.replace("-", ""):
        return None, False
    return frozenset(chars), wide


def _certain(items: list[Item]) -> bool:
    """Whether each repeat of variable length is followed by an item none of whose characters it holds (so it
    stops at a known byte), and the last item has a fixed length."""
    for item, after in zip(items, items[1:], strict=False):
        if not item.fixed and (item.chars & after.chars or (item.wide and after.wide)):
            return False
    return items[-1].fixed


def groups(patterns: tuple[str, ...], eligible: list[int], first_number: int) -> list[Checked]:
    """The groups of `eligible` patterns that start with the same literal and part at a literal character
    (or are alone), numbering their reports from `first_number` on. A group whose literal another pattern of
    the pass starts with (or starts) is not checked: that pattern's lines would fail every member, each a failure
    report (the old and the new completion lines are checked together, or neither)."""
    by_literal: dict[str, list[tuple[int, list[Item]]]] = {}
    for number in eligible:
        found = parsed(patterns[number])
        if found is not None:
            by_literal.setdefault(found[0], []).append((number, found[1]))
    members = {n for group in by_literal.values() for n, _ in group}
    others = [_literal_start(p) for n, p in enumerate(patterns) if n not in members]
    out: list[Checked] = []
    number = first_number
    for literal, group in by_literal.items():
        if any(other and (other.startswith(literal) or literal.startswith(other)) for other in others):
            continue
        shared, parts = _parting([items for _, items in group])
        if shared is None:
            continue
        texts = tuple(_mark(shared, items[len(shared) :]) for _, items in group) if len(group) > 1 else ()
        out.append(Checked(literal, tuple(n for n, _ in group), tuple(shared), parts, number, number + 1, texts))
        number += 2 + len(texts)
    return [dataclasses.replace(g, marks=tuple(range(g.failed + 1, g.failed + 1 + len(g.mark_texts)))) for g in out]


def _mark(shared: list[Item], rest: list[Item]) -> str:
    """A literal every match of a member holds: the literal characters that end the shared items, the parting
    character, and the literal characters after it (` bytes in `, ` bytes, checkpointDuration=`)."""

    def literal(items: list[Item]) -> str:
        out = ""
        for item in items:
            if not (item.fixed and item.low == 1 and not item.wide and len(item.chars) == 1):
                break
            out += chr(next(iter(item.chars)))
        return out

    return literal(shared[::-1])[::-1] + literal(rest)


def _literal_start(pattern: str) -> str:
    """The literal characters a pattern patterns.py wrote starts with (a repeat's or a group's are not)."""
    out: list[str] = []
    for one in _LITERAL.finditer(pattern):
        if one.start() != sum(len(t) for t in out) or pattern[one.end() : one.end() + 1] == "{":
            break
        out.append(one[0])
    return "".join(chr(_code(t)) for t in out)


def _parting(rests: list[list[Item]]) -> tuple[list[Item] | None, tuple[int, ...]]:
    """The items every rest starts with, and per rest the literal byte it continues with after them: distinct
    per rest, each a literal character (None: the rests do not part so)."""
    if len(rests) == 1:
        return rests[0], ()
    at = 0
    while all(at < len(r) for r in rests) and len({r[at] for r in rests}) == 1:
        at += 1
    nexts = [r[at] if at < len(r) else None for r in rests]
    if any(n is None or not n.fixed or n.low != 1 or n.wide or len(n.chars) != 1 for n in nexts):
        return None, ()
    codes = tuple(next(iter(n.chars)) for n in nexts if n is not None)
    if len(set(codes)) != len(codes):
        return None, ()
    shared = rests[0][:at]
    if shared and not shared[-1].fixed and any(c in shared[-1].chars for c in codes):
        return None, ()
    if any(item.fixed and item.wide for item in shared):
        return None, ()  # (a fixed count of characters outside ASCII: member_of does not walk it)
    return shared, codes


def fail_pattern(literal: str, rests: list[list[Item]]) -> str:
    """The Hyperscan pattern (UTF-8) that matches at an occurrence of `literal` exactly when none of the rests
    matches after it: at the first character where each rest fails (a character it cannot hold there, or the
    data's end). A repeat's failure character after the previous repeat also excludes that repeat's class: the
    previous repeat took every character of its class (where it stops is certain)."""
    return escaped(literal) + _fail_tree([list(r) for r in rests], frozenset(), False)


def _fail_tree(rests: list[list[Item]], before: frozenset[int], before_wide: bool) -> str:
    """The failures of several rests from here: items they share first, then their parting character."""
    heads = {r[0] if r else None for r in rests}
    if len(rests) > 1 and len(heads) > 1:  # they part here: at a literal character each
        codes = sorted(next(iter(r[0].chars)) for r in rests)
        fail = _one_fails(frozenset(codes) | before, before_wide)
        ways = [_char(next(iter(r[0].chars))) + _fail_tree([r[1:]], frozenset(), False) for r in rests]
        return "(?:" + "|".join([fail, *[w for w in ways if w]]) + ")"
    rest = rests[0]
    if not rest:
        return ""
    item = rest[0]
    cls = _set(item.chars, item.wide)
    alternatives = []
    for count in range(item.low):  # too few of the class: the next character is none of it
        excluded = (before, before_wide) if count == 0 else (frozenset(), False)
        alternatives.append(_times(cls, count) + _one_fails(item.chars | excluded[0], item.wide or excluded[1]))
    if item.high is not None and item.high > item.low:  # too many
        alternatives.append(_times(cls, item.high + 1))
    ok = _times(cls, item.low) if item.fixed else f"{cls}{{{item.low},{'' if item.high is None else item.high}}}"
    after = [r[1:] for r in rests] if len(rests) > 1 else [rest[1:]]
    then = _fail_tree(after, frozenset() if item.fixed else item.chars, False if item.fixed else item.wide)
    if then:
        alternatives.append(ok + then)
    return "(?:" + "|".join(alternatives) + ")"


def _one_fails(chars: frozenset[int], wide: bool) -> str:
    """One character that is none of `chars` (nor outside ASCII, when `wide`), or the data's end."""
    inside = "".join(_char(c) for c in sorted(chars)) + (WIDE if wide else "")
    return f"(?:[^{inside}]|\\z)"


def _set(chars: frozenset[int], wide: bool) -> str:
    return "[" + "".join(_char(c) for c in sorted(chars)) + (WIDE if wide else "") + "]"


def _times(cls: str, count: int) -> str:
    return "" if count == 0 else cls if count == 1 else f"{cls}{{{count}}}"


def _char(code: int) -> str:
    return f"\\x{{{code:x}}}"


def escaped(text: str) -> str:
    """`text` as a Hyperscan pattern of its characters, each escaped (`\\x{..}`)."""
    return "".join(_char(ord(c)) for c in text)


def member_of(data: Bytes, ends: Positions, group: Checked) -> Positions:
    """Per occurrence of the group's literal (its end) that starts a member's match, the member's index: the
    shared items walked (a repeat to its first byte outside its class, certain to be there and within the data:
    the occurrence has no failure, so a whole match follows it), then the parting byte."""
    import numpy as np

    if len(group.members) == 1:
        return np.zeros(len(ends), dtype=np.int64)
    at = ends.copy()
    eight = _eights(data)
    for item in group.shared:
        if item.fixed:  # (ASCII only in `shared`: _parting)
            at += item.low
            continue
        table = np.zeros(256, dtype=bool)
        table[list(item.chars)] = True
        if item.wide:
            table[0x80:] = True
        moving = np.arange(len(at))
        for _ in range(SHORT_STEPS):  # eight bytes a step (a run of digits: one or two)
            if not len(moving):
                break
            where = at[moving]
            near = where >= len(eight)  # (the data's last bytes: one a step)
            run = np.zeros(len(moving), dtype=np.int64)
            if not near.all():
                inside = table[eight[where[~near]].view(np.uint8).reshape(-1, 8)]
                run[~near] = np.where(inside.all(axis=1), 8, inside.argmin(axis=1))
            run[near] = table[data[where[near]]]
            at[moving] += run
            moving = moving[np.where(near, run == 1, run == 8)]
        if len(moving):  # longer runs (hostile: a number of millions of digits): each to the next byte outside
            begin = int(at[moving].min())  # the class, found in one pass over the bytes after the first of them
            outside = np.flatnonzero(~table[data[begin:]]) + begin
            found = np.searchsorted(outside, at[moving])
            at[moving] = np.where(found < len(outside), outside[np.minimum(found, len(outside) - 1)], len(data) - 1)
    index = np.full(256, -1, dtype=np.int64)
    index[list(group.parts)] = np.arange(len(group.parts))
    member: Positions = index[data[at]]
    return member


SHORT_STEPS = 8  # member_of's steps of eight bytes before a repeat's end is found in one pass (64 bytes: numbers)


def _eights(data: Bytes) -> npt.NDArray[np.uint64]:
    """The data's eight bytes from each offset, as one little-endian number (a view, no copy)."""
    import numpy as np

    eights: npt.NDArray[np.uint64] = np.ndarray(shape=(max(len(data) - 7, 0),), dtype="<u8", buffer=data, strides=(1,))
    return eights
