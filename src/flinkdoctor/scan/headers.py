"""Which lines start an event, decided in bulk: each layout's header regex over whole arrays of lines.

A Spark task flags the headers of millions of lines, so no Python runs per line. Two steps, both derived from the
layout's own regex in layouts.yaml: the bytes a header can start with (read from the regex's parse tree) sort
out most continuation lines with one numpy lookup, then the regex decides on the rest, run by RE2 over an Arrow
array (pyarrow.compute). A trailing `(?<msg>.*)$` is left out of that test: it matches any rest of a line, and
leaving it out lets RE2 stop after the header's fields. A regex RE2 cannot run (a look-ahead, as in the `plain`
layout) is run by Python's `re` instead, line by line: such layouts are for pasted text, not gigabytes.

The same parse gives the test for an event at WARN level or above: the `level` group's alternatives cut to
the warning and error words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, TypeAlias

from ..knowledge.regexes import Node, NodeArg, parse, python_regex, sre
from ..sources.layouts import layout_by_id

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import pyarrow as pa

WARN_WORDS = frozenset({"WARN", "WARNING", "ERROR", "FATAL", "SEVERE", "CRITICAL"})
# a tail that matches any rest of a line: leaving it out of the test changes no answer
ANY_TAIL = re.compile(r"\(\?<msg>\.\*\??\)(?:\\s\*)?\$$|\.\*\$$")
LEVEL_GROUP = re.compile(r"\(\?<level>([A-Za-z|]+)\)")
CASE_FLAG = re.compile(r"\(\?[a-zA-Z]*i")  # an inline flag that folds case, global or on a part


@dataclass(frozen=True)
class HeaderTest:
    first: tuple[int, ...] | None  # bytes a header can start with (None: any)
    regex: str  # RE2 (multi-line mode: a line's value ends with its newline)
    re2: bool  # False: RE2 cannot run it; Python's re decides
    warn: str | None  # a header at WARN level or above (None: the layout has no level, or no such level)
    # `regex` anchored at the value's start, for RE2 (None: not the same test): on a value of one line it finds
    # what `regex` finds, and a line that cannot start a header fails at its first byte, not after reading it all
    anchored: str | None = None


@cache
def header_test(layout_id: str) -> HeaderTest:
    layout = layout_by_id(layout_id)
    test = ANY_TAIL.sub("", layout.header)
    warn = None
    match = LEVEL_GROUP.search(test)
    if match:
        kept = [word for word in match.group(1).split("|") if word.upper() in WARN_WORDS]
        if kept:
            warn = f"(?m){test[: match.start(1)]}{'|'.join(kept)}{test[match.end(1) :]}"
    regex = f"(?m){test}"
    re2 = _re2_accepts(regex)
    return HeaderTest(_first_bytes(layout.header), regex, re2, warn, _anchored(test) if re2 else None)


def _anchored(test: str) -> str | None:
    """`(?m)test` anchored at the text's start, when that finds the same in a value of one line (its newline
    last, or none): the regex starts at a line's start, whose only other place in such a value is its end, after
    the newline, where a regex that cannot match an empty text finds nothing."""
    if not test.startswith("^") or parse(python_regex(test).pattern).getwidth()[0] < 1:
        return None
    return f"\\A(?m){test}"


@cache
def flag_unsure(layout_id: str) -> npt.NDArray[np.bool_] | None:
    """Where a header's flag is also the fields' regex's answer: a 256-entry table of the last bytes for which
    it is not said. For an ASCII line that `flag` flagged with HeaderTest.anchored (the line with its end: `\\n`,
    `\\r\\n`, `\\r` or none), the layout's regex without its message, `(?<msg>.*)$`, as Python's `re` reads it
    (re2.re2_regex: the scan's header fields), matches the line without its end from its start, when that is
    not empty and its last byte is not in the table. None: not proven for the layout (a construct outside
    literals, classes of literals and of \\d, \\w and \\s, `.`, groups without flags, alternatives and repeats,
    `^` first; or a regex that does not end in that message).

    Why: on ASCII text every part of such a regex matches in RE2 no character that it does not match in Python
    (RE2's \\s lacks \\v and \\x1c-\\x1f; the rest are the same), so a match RE2 finds within the line Python finds
    too. Else RE2's match went on into the line's end (a `\\s` taking its newline), ending there: then the line's
    last byte is one a part of the regex matches right before a part that can take a line-end character and
    be followed by only such parts up to the match's end (the follow relation of the regex's parts)."""
    header = layout_by_id(layout_id).header
    body = header[: -len(MESSAGE_TAIL)]
    if header_test(layout_id).anchored is None or not header.endswith(MESSAGE_TAIL) or ANY_TAIL.sub("", header) != body:
        return None
    return _unsure_ends(body)


def _unsure_ends(body: str) -> npt.NDArray[np.bool_] | None:
    """flag_unsure's table for a header regex `body` (without its message; None: not proven)."""
    import numpy as np

    plain = SAFE_ESCAPE.sub("", body)  # what RE2 and Python may read otherwise: other escapes, flags, [: and {,
    if "\\" in plain or re.search(r"\(\?(?!:|P?<[A-Za-z])", plain) or "[:" in plain or "{," in plain:
        return None
    parts = _parts(body)
    if parts is None:
        return None
    chars, follow, last = parts
    eol = [p for p, char in enumerate(chars) if char[10] or char[13]]
    tail = {p for p in eol if p in last}  # the parts that can take line-end characters up to a match's end
    grown = True
    while grown:
        more = {p for p in eol if follow[p] & tail} - tail
        tail |= more
        grown = bool(more)
    table = np.zeros(256, dtype=bool)
    for p, char in enumerate(chars):
        if follow[p] & tail:
            table[:128] |= char
    return table


MESSAGE_TAIL = "(?<msg>.*)$"  # a layout's message: the rest of its first line
SAFE_ESCAPE = re.compile(r"\\(?:[dsw]|[^A-Za-z0-9])")  # \d, \w, \s and escaped punctuation: read alike
# the ASCII characters Python's \s matches (RE2's lacks \v and \x1c-\x1f), \d, \w
SPACES = frozenset(c for c in range(128) if chr(c).isspace())
CATEGORIES = {
    sre.CATEGORY_SPACE: SPACES,
    sre.CATEGORY_DIGIT: frozenset(range(48, 58)),
    sre.CATEGORY_WORD: frozenset(c for c in range(128) if chr(c).isalnum() or c == 95),
}

Parts: TypeAlias = "tuple[list[npt.NDArray[np.bool_]], list[set[int]], set[int]]"


def _parts(java: str) -> Parts | None:
    """The regex's character-matching parts (Glushkov's positions): per part the ASCII characters it matches in
    Python or RE2, the parts that can follow it in a match, and the parts that can end a match; None for a
    regex outside flag_unsure's constructs."""
    tree = parse(java)
    items = list(tree)
    if tree.state.flags & ~sre.SRE_FLAG_UNICODE or not items or items[0] != (sre.AT, sre.AT_BEGINNING):
        return None
    chars: list[npt.NDArray[np.bool_]] = []
    follow: list[set[int]] = []
    found = _sequence(items[1:], chars, follow)
    return None if found is None else (chars, follow, found[1])


Span: TypeAlias = tuple[set[int], set[int], bool]  # a piece's first parts, last parts, whether it can be empty


def _sequence(items: list[Node], chars: list[npt.NDArray[np.bool_]], follow: list[set[int]]) -> Span | None:
    first: set[int] = set()
    last: set[int] = set()
    empty = True
    for op, av in items:
        piece = _piece(op, av, chars, follow)
        if piece is None:
            return None
        for p in last:
            follow[p] |= piece[0]
        if empty:
            first |= piece[0]
        last = piece[1] | last if piece[2] else piece[1]
        empty = empty and piece[2]
    return first, last, empty


def _piece(op: object, av: NodeArg, chars: list[npt.NDArray[np.bool_]], follow: list[set[int]]) -> Span | None:
    if op is sre.SUBPATTERN:
        return None if av[1] or av[2] else _sequence(list(av[3]), chars, follow)
    if op is sre.BRANCH:
        branches = [_sequence(list(branch), chars, follow) for branch in av[1]]
        if any(branch is None for branch in branches):
            return None
        spans = [branch for branch in branches if branch is not None]
        return set().union(*(s[0] for s in spans)), set().union(*(s[1] for s in spans)), any(s[2] for s in spans)
    if op in (sre.MAX_REPEAT, sre.MIN_REPEAT):
        low, high, body = av
        inner = _sequence(list(body), chars, follow)
        if inner is None:
            return None
        if high > 1:  # (a counted repeat read as one that repeats freely: more follows, never fewer)
            for p in inner[1]:
                follow[p] |= inner[0]
        return inner[0], inner[1], low == 0 or inner[2]
    char = _chars(op, av)
    if char is None:
        return None
    chars.append(char)
    follow.append(set())
    return {len(chars) - 1}, {len(chars) - 1}, False


def _chars(op: object, av: NodeArg) -> npt.NDArray[np.bool_] | None:
    """The ASCII characters one character-matching part matches in Python (RE2's are no more); None for any
    other part, or a class RE2 reads more broadly (a negated one holding \\s, \\d or \\w)."""
    import numpy as np

    out = np.zeros(128, dtype=bool)
    if op is sre.LITERAL or op is sre.NOT_LITERAL:
        if av < 128:
            out[av] = True
        return ~out if op is sre.NOT_LITERAL else out
    if op is sre.ANY:  # (not the newline: no flag that changes it is let through)
        out[:] = True
        out[10] = False
        return out
    if op is not sre.IN:
        return None
    items = list(av)
    negate = bool(items) and items[0][0] is sre.NEGATE
    for kind, value in items[1:] if negate else items:
        if kind is sre.LITERAL or kind is sre.RANGE:
            low, high = (value, value) if kind is sre.LITERAL else value
            out[min(low, 128) : min(high, 127) + 1] = True
        elif kind is sre.CATEGORY and value in CATEGORIES and not negate:
            out[list(CATEGORIES[value])] = True
        else:
            return None
    return ~out if negate else out


def flag(test: HeaderTest, lines: pa.Array, regex: str | None = None) -> npt.NDArray[np.bool_]:
    """numpy bool per line of `lines` (a pyarrow string array, each value one line, newline included)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    regex = regex or test.regex
    if test.re2:
        found: npt.NDArray[np.bool_] = pc.match_substring_regex(lines, regex).to_numpy(zero_copy_only=False)
        return found
    pattern = python_regex(regex.removeprefix("(?m)"))
    raw = lines.cast(pa.large_binary() if pa.types.is_large_string(lines.type) else pa.binary()).to_pylist()
    return np.array(  # lines read past a part's end are raw bytes: what is not UTF-8 is replaced, not a failure
        [pattern.match(line.decode("utf-8", "replace").rstrip("\r\n")) is not None for line in raw], dtype=bool
    )


@cache
def levels_worded(header: str) -> bool:
    """Whether every level at WARN or above that a layout's `header` regex can give is written in upper or lower
    case, as the pass looks for the level words (prefilter.LEVEL_WORDS): its `level` group is a list of words,
    with no flag that folds case, or it has none. Then an event whose first line holds none of those words is
    below WARN level, whatever its header's fields are."""
    if "(?<level>" not in header:
        return True
    match = LEVEL_GROUP.search(header)
    if match is None or python_regex(header).flags & re.IGNORECASE or CASE_FLAG.search(header):
        return False
    return all(word.isupper() or word.islower() for word in match.group(1).split("|") if word.upper() in WARN_WORDS)


def header_fields(layout_id: str, header: str) -> dict[str, str]:
    """The named fields of a header line by its layout's regex (values never empty), {} when it does not match.
    Python's `re` runs the layout's Java regex, as it runs the rules'."""
    hit = layout_by_id(layout_id).python_regex.search(header)
    return {k: v for k, v in hit.groupdict().items() if v} if hit else {}


def first_byte_table(test: HeaderTest) -> npt.NDArray[np.bool_]:
    """A 256-entry bool table: can a header start with this byte."""
    import numpy as np

    table = np.ones(256, dtype=bool)
    if test.first is not None:
        table[:] = False
        table[list(test.first)] = True
    return table


def _re2_accepts(regex: str) -> bool:
    import pyarrow as pa
    import pyarrow.compute as pc

    try:
        pc.match_substring_regex(pa.array([""]), regex)
    except pa.ArrowInvalid:
        return False
    return True


def _first_bytes(java: str) -> tuple[int, ...] | None:
    """The bytes a match of `java` (anchored at a line start) can begin with, from its parse tree; None when
    not sure (the test then runs on every line)."""
    found = _first(list(parse(python_regex(java).pattern)))
    return None if found is None else tuple(sorted(found))


def _first(items: list[Node]) -> set[int] | None:  # noqa: C901 (one case per node kind)
    for op, av in items:
        if op is sre.AT:
            continue  # ^
        if op is sre.ASSERT_NOT or op is sre.ASSERT:
            continue  # a look-around consumes nothing: the next node decides
        if op is sre.LITERAL:
            return {av} if av < 128 else None
        if op is sre.IN:
            return _class(av)
        if op is sre.SUBPATTERN:
            return _first(list(av[3]))
        if op is sre.BRANCH:
            sets = [_first(list(branch)) for branch in av[1]]
            union: set[int] = set()
            for one in sets:
                if one is None:
                    return None
                union |= one
            return union
        if op in (sre.MAX_REPEAT, sre.MIN_REPEAT) and av[0] >= 1:
            return _first(list(av[2]))
        return None
    return None


def _class(items: list[Node]) -> set[int] | None:
    """ASCII bytes of a character class; None for a negated class or categories other than digits."""
    out: set[int] = set()
    for op, av in items:
        if op is sre.LITERAL and av < 128:
            out.add(av)
        elif op is sre.RANGE and av[1] < 128:
            out.update(range(av[0], av[1] + 1))
        elif op is sre.CATEGORY and av is sre.CATEGORY_DIGIT:
            out.update(range(ord("0"), ord("9") + 1))
        elif op is sre.CATEGORY and av is sre.CATEGORY_NOT_SPACE:
            out.update(b for b in range(256) if b not in b" \t\n\r\f\v")
        else:
            return None
    return out
