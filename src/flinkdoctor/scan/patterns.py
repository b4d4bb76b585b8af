"""A rule's or catalogue entry's regex as a Hyperscan pattern that finds every event it can match.

The scan decides which events to cut out by one Hyperscan pass over a part's raw bytes (prefilter.py). For that
pass each regex is rewritten from Python's own parse tree of it into a pattern whose matches are a superset of
the regex's: whenever Python's `re` finds the regex in an event's field (the whole text, a line, the header's
message, an exception line), the pattern is found in the event's bytes. The pass then keeps only events that
some whole pattern matches, not those that merely hold a common word; Python's `re` (and RE2) decide after it.

What the rewrite keeps and what it loosens, so that the superset holds on any text:
- literal characters, classes and repeats exactly for ASCII text (the classes \\d, \\w, \\s are Python's own
  on ASCII, \\s with \\x1c-\\x1f); wherever Python's Unicode classes or case folding could match a character
  outside ASCII, any character outside ASCII (the pattern is compiled for UTF-8, as staged text is);
- anchors, word boundaries and look-arounds are dropped (the regex runs on a field, a part of a line, so `^`
  may fall mid-line in the bytes), possessive quantifiers and atomic groups become plain ones, a back
  reference any text;
- wherever a newline can match, a carriage return may come before it (the text matched has \\n, the bytes \\r\\n);
- parts at either end that can match nothing are dropped and repeats at either end cut to their minimum: the
  question is whether an event holds a match, and fewer end offsets are fewer callbacks.
"""

from __future__ import annotations

from ..knowledge.regexes import ATOMIC, POSSESSIVE, Node, NodeArg, ParseTree, parse, sre

ANY_NON_ASCII = (0x80, 0x10FFFF)
DIGIT = frozenset(range(0x30, 0x3A))
SPACE = frozenset([0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x1C, 0x1D, 0x1E, 0x1F, 0x20])  # Python's \s on ASCII
WORD = frozenset([*DIGIT, *range(0x41, 0x5B), *range(0x61, 0x7B), 0x5F])
ASCII = frozenset(range(128))
NEWLINE = 0x0A
# the characters outside ASCII that Python's case-insensitive matching folds onto an ASCII letter
FOLDS = {"i": (0x130, 0x131), "k": (0x212A,), "s": (0x17F,)}
FOLDED = {code: letter for letter, codes in FOLDS.items() for code in codes}
CATEGORY = {
    sre.CATEGORY_DIGIT: (DIGIT, True),
    sre.CATEGORY_NOT_DIGIT: (ASCII - DIGIT, True),
    sre.CATEGORY_SPACE: (SPACE, True),
    sre.CATEGORY_NOT_SPACE: (ASCII - SPACE, True),
    sre.CATEGORY_WORD: (WORD, True),
    sre.CATEGORY_NOT_WORD: (ASCII - WORD, True),
}
DROPPED = (sre.AT, sre.ASSERT, sre.ASSERT_NOT)
LOOSE_ABOVE = 4  # a repeat bounded above this is compiled without its bound
NEWLINE_MARK = "\\r?"  # written before every one-character node that can match a newline (and nowhere else)
ANY_TEXT = "[\\x{0}-\\x{10ffff}]*"  # a back reference


class Unsupported(ValueError):
    """A construct this rewrite does not know: the caller keeps the regex out of the pass (no filter)."""


def hyperscan_pattern(java: str, whole_text: bool = False) -> str | None:
    """The Hyperscan pattern (ASCII text, for HS_FLAG_UTF8) whose matches cover the regex's; None when the
    regex can match an empty string, so that every event holds a match. `whole_text`: the regex runs on an
    event's whole text, which starts at a line's start in the bytes (or after a piece's NUL marker): a leading
    `^` or `\\A` is kept as such a start, and what follows it is not trimmed."""
    tree = parse(java)
    flags = tree.state.flags
    items = list(tree)
    if whole_text and items and items[0][0] is sre.AT and items[0][1] in (sre.AT_BEGINNING, sre.AT_BEGINNING_STRING):
        rest = _trimmed(items[1:], flags, leading=False)
        return "(?:(?m:^)|\\x{0})" + "".join(_node(op, av, flags) for op, av in rest)
    items = _trimmed(items, flags)
    if not items:
        return None
    return "".join(_node(op, av, flags) for op, av in items)


def first_bytes(java: str) -> frozenset[int]:
    """The bytes a match of hyperscan_pattern(java) (not whole_text) can start with: its ASCII ones, and 0x80
    for any character outside ASCII (the lead byte of its UTF-8); every byte when a back reference can start it.
    A match cannot start on a byte outside the set (the catalogue's pass skips a line's timestamp by it)."""
    tree = parse(java)
    found, _ = _first(_trimmed(list(tree), tree.state.flags), tree.state.flags)
    return frozenset(found)


def _first(items: list[Node] | ParseTree, flags: int) -> tuple[set[int], bool]:
    """The first bytes of the nodes in turn, and whether all of them can match an empty string."""
    found: set[int] = set()
    for op, av in items:
        first, nullable = _first_of(op, av, flags)
        found |= first
        if not nullable:
            return found, False
    return found, True


def _first_of(op: object, av: NodeArg, flags: int) -> tuple[set[int], bool]:
    if op in (sre.LITERAL, sre.NOT_LITERAL, sre.ANY, sre.IN, sre.CATEGORY):
        ascii_, others = _chars(op, av, flags)
        return ascii_ | ({0x80} if others else set()) | ({0x0D} if NEWLINE in ascii_ else set()), False
    if op in DROPPED:
        return set(), True
    if op in (sre.MAX_REPEAT, sre.MIN_REPEAT, POSSESSIVE):
        first, nullable = _first(av[2], flags)
        return first, nullable or av[0] == 0
    if op is sre.SUBPATTERN:
        return _first(av[3], (flags | av[1]) & ~av[2])
    if op is ATOMIC:
        return _first(av, flags)
    if op is sre.BRANCH:
        branches = [_first(branch, flags) for branch in av[1]]
        return set().union(*(first for first, _ in branches)), any(nullable for _, nullable in branches)
    if op in (sre.GROUPREF, sre.GROUPREF_EXISTS):
        return set(range(0x81)), True  # any text (ANY_TEXT), or none
    raise Unsupported(f"regex construct {op}")


def spans_lines(pattern: str) -> bool:
    """Whether a pattern hyperscan_pattern wrote can match a newline, and so run from one line into the next:
    every node that can is written with NEWLINE_MARK, a back reference as ANY_TEXT, and any other character is
    escaped, so neither appears otherwise."""
    return NEWLINE_MARK in pattern or ANY_TEXT in pattern


def _trimmed(items: list[Node], flags: int, leading: bool = True) -> list[Node]:
    """The items without what can match nothing at either end, and the repeats at either end cut to their
    minimum: an event holds a match of the regex only if it holds one of the rest. `leading`: trim the start
    too (not after an anchor that is kept)."""
    items = [(op, av) for op, av in items if op not in DROPPED]
    while leading and items and _nullable(*items[0]):
        items.pop(0)
    while items and _nullable(*items[-1]):
        items.pop()
    for at in ({0} if leading else set()) | {len(items) - 1} if items else ():
        op, av = items[at]
        if op in (sre.MAX_REPEAT, sre.MIN_REPEAT, POSSESSIVE) and av[1] != av[0]:
            items[at] = (sre.MAX_REPEAT, (av[0], av[0], av[2]))
    return _tail_cut(items, flags) if items else items


def _tail_cut(items: list[Node], flags: int) -> list[Node]:
    """The items with the repeats that end a group or an alternative at their end cut to their minimum, as
    _trimmed cuts one at the top: Hyperscan reports a match at every offset it can end at, so `by (?:\\w+)`
    reports once per letter of the word. Only a repeat of at least one that cannot match a newline is cut: the
    shorter match then ends on the same line as the longer one, so the events and lines the pass finds are the
    same, with fewer reports."""
    op, av = items[-1]
    if op in (sre.MAX_REPEAT, sre.MIN_REPEAT, POSSESSIVE):
        low, high, body = av
        if low == high == 1:
            cut: Node = (sre.MAX_REPEAT, (1, 1, _tail_cut(list(body), flags) if len(body) else body))
        elif low >= 1 and high != low and not _may_match_newline(body, flags):
            cut = (sre.MAX_REPEAT, (low, low, body))
        else:
            return items
    elif op is sre.SUBPATTERN:
        group, add, remove, body = av
        if not len(body):
            return items
        cut = (op, (group, add, remove, _tail_cut(list(body), (flags | add) & ~remove)))
    elif op is ATOMIC:
        cut = (op, _tail_cut(list(av), flags)) if len(av) else (op, av)
    elif op is sre.BRANCH:
        cut = (op, (av[0], [_tail_cut(list(branch), flags) if len(branch) else branch for branch in av[1]]))
    else:
        return items
    return [*items[:-1], cut]


def _may_match_newline(body: ParseTree, flags: int) -> bool:
    """Can a match of the nodes hold a newline."""
    return any(_newline_in(op, av, flags) for op, av in body)


def _newline_in(op: object, av: NodeArg, flags: int) -> bool:
    if op in (sre.LITERAL, sre.NOT_LITERAL, sre.ANY, sre.IN, sre.CATEGORY):
        return NEWLINE in _chars(op, av, flags)[0]
    if op in (sre.MAX_REPEAT, sre.MIN_REPEAT, POSSESSIVE):
        return bool(av[1]) and _may_match_newline(av[2], flags)
    if op is sre.SUBPATTERN:
        return _may_match_newline(av[3], (flags | av[1]) & ~av[2])
    if op is ATOMIC:
        return _may_match_newline(av, flags)
    if op is sre.BRANCH:
        return any(_may_match_newline(branch, flags) for branch in av[1])
    return op not in DROPPED  # a back reference, or what the rewrite does not know: it may


def _nullable(op: object, av: NodeArg) -> bool:
    """Can the node match an empty string."""
    if op in DROPPED:
        return True
    if op in (sre.MAX_REPEAT, sre.MIN_REPEAT, POSSESSIVE):
        return av[0] == 0 or all(_nullable(*item) for item in av[2])
    if op is sre.SUBPATTERN:
        return all(_nullable(*item) for item in av[3])
    if op is ATOMIC:
        return all(_nullable(*item) for item in av)
    if op is sre.BRANCH:
        return any(all(_nullable(*item) for item in branch) for branch in av[1])
    return op in (sre.GROUPREF, sre.GROUPREF_EXISTS)


def _node(op: object, av: NodeArg, flags: int) -> str:  # noqa: C901 (one case per node kind)
    if op in (sre.LITERAL, sre.NOT_LITERAL, sre.ANY, sre.IN, sre.CATEGORY):
        ascii_, others = _chars(op, av, flags)
        one = _set(ascii_, others)
        return f"(?:\\r?{one})" if NEWLINE in ascii_ else one  # the bytes may end lines with \r\n
    if op in DROPPED:
        return ""
    if op in (sre.MAX_REPEAT, sre.MIN_REPEAT, POSSESSIVE):
        low, high, body = av
        inner = _group(body, flags)
        if (low, high) == (1, 1):
            return inner
        if high != low and high > LOOSE_ABOVE:
            high = sre.MAXREPEAT  # a long bounded repeat costs Hyperscan states; without bound it matches more
        return f"{inner}{{{low},{'' if high == sre.MAXREPEAT else high}}}"
    if op is sre.SUBPATTERN:
        _, add, remove, body = av
        return _group(body, (flags | add) & ~remove)
    if op is ATOMIC:
        return _group(av, flags)
    if op is sre.BRANCH:
        return "(?:" + "|".join("".join(_node(o, a, flags) for o, a in branch) for branch in av[1]) + ")"
    if op in (sre.GROUPREF, sre.GROUPREF_EXISTS):
        return ANY_TEXT  # a back reference: any text (a conditional: either branch or none)
    raise Unsupported(f"regex construct {op}")


def _group(body: ParseTree, flags: int) -> str:
    inner = "".join(_node(o, a, flags) for o, a in body)
    return f"(?:{inner})"


def _chars(op: object, av: NodeArg, flags: int) -> tuple[set[int], list[tuple[int, int]]]:
    """The characters a one-character node matches: exactly its ASCII ones, and ranges of others that hold
    every non-ASCII one it can match."""
    fold = bool(flags & sre.SRE_FLAG_IGNORECASE)
    if op is sre.ANY:
        dotall = bool(flags & sre.SRE_FLAG_DOTALL)
        return set(ASCII if dotall else ASCII - {0x0A}), [ANY_NON_ASCII]
    if op is sre.LITERAL:
        return _literal(av, fold)
    if op is sre.NOT_LITERAL:
        return set(ASCII - _literal(av, fold)[0]), [ANY_NON_ASCII]
    if op is sre.CATEGORY:
        return set(CATEGORY[av][0]), [ANY_NON_ASCII] if CATEGORY[av][1] else []
    items = list(av)
    negate = bool(items) and items[0][0] is sre.NEGATE
    if negate:
        items = items[1:]
    ascii_: set[int] = set()
    others: list[tuple[int, int]] = []
    for kind, value in items:
        if kind is sre.LITERAL:
            a, o = _literal(value, fold)
        elif kind is sre.RANGE:
            a, o = _range(value[0], value[1], fold)
        elif kind is sre.CATEGORY:
            cat, other = CATEGORY[value]
            a, o = set(cat), [ANY_NON_ASCII] if other else []
        else:
            raise Unsupported(f"class item {kind}")
        ascii_ |= a
        others += o
    if negate:
        return set(ASCII - ascii_), [ANY_NON_ASCII]
    return ascii_, others


def _literal(code: int, fold: bool) -> tuple[set[int], list[tuple[int, int]]]:
    if code < 128:
        if not fold or not chr(code).isalpha():
            return {code}, []
        letter = chr(code).lower()
        return {ord(letter), ord(letter.upper())}, [(c, c) for c in FOLDS.get(letter, ())]
    if not fold:
        return set(), [(code, code)]
    folded = FOLDED.get(code)
    return ({ord(folded), ord(folded.upper())} if folded else set()), [ANY_NON_ASCII]


def _range(low: int, high: int, fold: bool) -> tuple[set[int], list[tuple[int, int]]]:
    ascii_ = set(range(low, min(high, 127) + 1))
    others = [(max(low, 128), high)] if high >= 128 else []
    if fold:
        for code in list(ascii_):
            a, o = _literal(code, True)
            ascii_ |= a
            others += o
        if others:
            others = [ANY_NON_ASCII]  # folding outside ASCII: any such character
            ascii_ |= {ord(c) for letter in "iks" for c in (letter, letter.upper())}
    return ascii_, others


def _set(ascii_: set[int], others: list[tuple[int, int]]) -> str:
    """A Hyperscan class (or one escaped character) of the ASCII codes and the ranges outside ASCII."""
    ranges = _ranges(sorted(ascii_)) + _merged(others)
    if len(ranges) == 1 and ranges[0][0] == ranges[0][1]:
        return _char(ranges[0][0])
    if not ranges:
        return "[^\\x{0}-\\x{10ffff}]"  # matches nothing (an empty class)
    return "[" + "".join(_char(a) if a == b else f"{_char(a)}-{_char(b)}" for a, b in ranges) + "]"


def _ranges(codes: list[int]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for code in codes:
        if out and out[-1][1] == code - 1:
            out[-1] = (out[-1][0], code)
        else:
            out.append((code, code))
    return out


def _merged(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for low, high in sorted(ranges):
        if out and low <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], high))
        else:
            out.append((low, high))
    return out


def _char(code: int) -> str:
    if code < 128 and (chr(code).isalnum() or chr(code) in " _"):
        return chr(code)
    return f"\\x{{{code:x}}}"
