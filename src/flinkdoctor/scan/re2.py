"""A regex as RE2 reads it, where RE2 finds exactly what Python's `re` finds: to run it over whole Arrow arrays.

The scan tasks take header fields and the metrics' captures with RE2 over arrays (pyarrow.compute), not with
Python per event. RE2 differs from Python's `re`: its \\d, \\w, \\s and \\b are ASCII, its case folding is
Unicode's (Python also folds `i` onto `İ` and `ı`), its `$` is only the end of the text, and it has no
look-around, back reference, possessive quantifier or atomic group. So the regex is written anew from Python's
parse tree of it: classes as the explicit sets of characters the running Python puts in them (\\d: decimal,
\\w: alphanumeric or `_`, \\s: space, by str methods, which are what `re` uses), case-insensitive letters as the
letters Python folds together, anchors as Python means them, groups without a name not capturing. A construct
RE2 cannot mean the same way (\\b, \\B, look-arounds, back references, possessive and atomic parts, long
bounded repeats, case folding outside ASCII) makes it None: Python's `re` then runs that regex.

A group that always matches the same number of characters at the same place from the text's start (a header's
timestamp) is cut out there instead of captured (positional_groups): RE2 captures up to four groups in its fast
one-pass engine, and a Flink header has five.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Callable
from functools import cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from ..knowledge.regexes import NodeArg, parse, sre, sre_parse

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import pyarrow as pa

CLASSES_FILE = "knowledge/unicode_classes.json"  # the classes for one Unicode version (write_classes)
MAX_REPEAT = 1000  # RE2's bound on a counted repeat
FOLDS = {"i": (0x130, 0x131), "k": (0x212A,), "s": (0x17F,)}  # what Python's IGNORECASE adds to ASCII letters
SPECIAL = set("\\^$.|?*+()[]{}-/")


class Inexact(ValueError):
    """A construct RE2 would read otherwise than Python's `re`."""


@cache
def re2_regex(java: str, ascii_only: bool = False, uncaptured: frozenset[str] = frozenset()) -> str | None:
    """The regex in RE2's syntax, finding the same matches and named groups as Python's `re`; None if RE2
    cannot (module docstring). `ascii_only`: the same on texts of ASCII characters only, where its classes need
    no characters outside ASCII (RE2 runs such classes several times faster). `uncaptured`: named groups
    written as groups that capture nothing (`positional_groups` takes them)."""
    tree = parse(java)
    names = {number: name for name, number in tree.state.groupdict.items() if name not in uncaptured}
    if tree.state.flags & (sre.SRE_FLAG_ASCII | sre.SRE_FLAG_LOCALE):
        return None
    try:
        text = "".join(_node(op, av, tree.state.flags, names) for op, av in tree)
    except Inexact:
        return None
    return ASCII_CLASS.sub(_ascii_part, text) if ascii_only else text


def extract(
    values: pa.Array,
    java: str,
    ascii_only_regex: str | None = None,
    regex: str | None = None,
    by_position: bool = False,
) -> pa.Array:
    """pyarrow.compute.extract_regex of the regex (re2_regex, which must not be None) over `values`: its ASCII
    rows with the regex's ASCII form, the others with the whole one. `by_position`: on the ASCII rows, the
    groups `positional_groups` finds are cut out at their places instead of captured (_positional)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    whole = regex or re2_regex(java)

    def fast(ascii_rows: pa.Array) -> pa.Array:
        if by_position and 0 < len(positional_groups(java)) < len(group_names(java)):
            return _positional(ascii_rows, java)  # (Arrow's extraction needs a group left to capture)
        return pc.extract_regex(ascii_rows, ascii_only_regex or re2_regex(java, True))

    plain = ascii_rows(values)
    if plain.all():
        return fast(values)
    if not plain.any():
        return pc.extract_regex(values, whole)
    at_plain, at_other = np.flatnonzero(plain), np.flatnonzero(~plain)
    both = pa.concat_arrays(
        [
            fast(values.take(pa.array(at_plain))),
            pc.extract_regex(values.take(pa.array(at_other)), whole),
        ]
    )
    back = np.empty(len(values), dtype=np.int64)
    back[np.concatenate([at_plain, at_other])] = np.arange(len(values))
    return both.take(pa.array(back))


def ascii_rows(values: pa.Array) -> npt.NDArray[np.bool_]:
    """Per value of the string array, whether it is ASCII (a null: true). numpy first finds the largest byte the
    values span, a pass of a few milliseconds over a part's text: when it is below 128 every value is ASCII
    (nearly every log), without Arrow's test of each value, which cost 20-30 ms a production batch."""
    import numpy as np
    import pyarrow as pa

    large = pa.types.is_large_string(values.type)
    if not isinstance(values, pa.Array) or not (large or pa.types.is_string(values.type)):
        return _arrows_ascii_rows(values)  # (a chunked array, a string view: their buffers are laid out otherwise)
    offsets = np.frombuffer(values.buffers()[1], dtype=np.int64 if large else np.int32)
    lo, hi = (int(offsets[values.offset]), int(offsets[values.offset + len(values)])) if len(values) else (0, 0)
    data = values.buffers()[2]
    if hi == lo or np.frombuffer(data, dtype=np.uint8)[lo:hi].max() < 128:
        return np.ones(len(values), dtype=bool)
    return _arrows_ascii_rows(values)


def _arrows_ascii_rows(values: pa.Array) -> npt.NDArray[np.bool_]:
    import pyarrow.compute as pc

    ascii: npt.NDArray[np.bool_] = pc.fill_null(pc.string_is_ascii(values), True).to_numpy(zero_copy_only=False)
    return ascii


@cache
def positional_groups(java: str) -> tuple[tuple[str, int, int], ...]:
    """The named groups of `java` that always match the same number of characters at the same place from the
    start of the text, (name, first, end) in characters: a header's timestamp, first in its line. Where the
    regex matches, such a group holds those characters, so it need not be captured: RE2 captures at most four
    groups in its one-pass engine, several times faster than the one it needs for more (a Flink header has
    five). None of them unless the regex is anchored at the text's start: a search may match anywhere else."""
    tree = parse(java)
    if not _anchored(list(tree)):
        return ()
    names = {number: name for name, number in tree.state.groupdict.items()}
    found: list[tuple[str, int, int]] = []
    _positional_in(list(tree), 0, names, found)
    return tuple(found)


def _anchored(items: list[tuple[object, NodeArg]]) -> bool:
    """Whether the regex's first item, inside its leading groups, is `^` (the text's start)."""
    for op, av in items[:1]:
        if op is sre.AT:
            return av in (sre.AT_BEGINNING, sre.AT_BEGINNING_STRING)
        if op is sre.SUBPATTERN:
            return _anchored(list(av[3]))
    return False


def _positional_in(
    items: list[tuple[object, NodeArg]], at: int, names: dict[int, str], found: list[tuple[str, int, int]]
) -> int | None:
    """Walks `items` from character `at` (the text's start when `at` is 0), noting the fixed groups; the place
    after them, or None once a width varies."""
    for op, av in items:
        if op is sre.AT:
            if av not in (sre.AT_BEGINNING, sre.AT_BEGINNING_STRING) or at != 0:
                return None
            continue
        low, high = sre_parse.SubPattern(None, [(op, av)]).getwidth()
        if op is sre.SUBPATTERN and not av[1] and not av[2]:  # a group with no flags of its own
            name = names.get(av[0]) if av[0] is not None else None
            if low == high and name is not None:
                found.append((name, at, at + low))
            elif low != high:
                _positional_in(list(av[3]), at, names, found)
                return None
        elif low != high:
            return None
        at += low
    return at


def _positional(values: pa.Array, java: str) -> pa.Array:
    """extract's result on ASCII-only `values`: the regex without its positional groups captured, those groups
    then cut from each matching text at their places (a character is a byte in ASCII text)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    places = {name: (first, end) for name, first, end in positional_groups(java)}
    regex = re2_regex(java, True, frozenset(places))
    found = pc.extract_regex(values, regex)
    matched = found.is_valid()
    none = pa.scalar(None, values.type)
    names = group_names(java)
    columns = [  # (bytes are characters in ASCII text: a byte slice, cheaper than a slice of code units)
        pc.if_else(matched, byte_slice(values, *places[name]), none) if name in places else found.field(name)
        for name in names
    ]
    return pa.StructArray.from_arrays(columns, names=names, mask=pc.invert(matched))


def byte_slice(values: pa.Array, first: int, end: int) -> pa.Array:
    """Bytes [first, end) of each of the (ASCII) strings."""
    import pyarrow as pa
    import pyarrow.compute as pc

    binary = pa.large_binary() if pa.types.is_large_string(values.type) else pa.binary()
    return pc.binary_slice(values.view(binary), first, end).view(values.type)


@cache
def group_names(java: str) -> tuple[str, ...]:
    """The regex's named groups in their order (parsing it again for every batch cost more than the kernels
    on a small one)."""
    return tuple(name for name, _ in sorted(parse(java).state.groupdict.items(), key=lambda item: item[1]))


def matching(values: pa.Array, java: str) -> npt.NDArray[np.intp]:
    """The positions (numpy) of the rows of `values` the regex (re2_regex, not None) finds a match in: its ASCII
    rows by the regex's ASCII form, the others by the whole one."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    plain = ascii_rows(values)
    found = np.zeros(len(values), dtype=bool)
    for rows, regex in ((np.flatnonzero(plain), re2_regex(java, True)), (np.flatnonzero(~plain), re2_regex(java))):
        if len(rows):
            subset = values if len(rows) == len(values) else values.take(pa.array(rows))
            found[rows] = pc.match_substring_regex(subset, regex).to_numpy(zero_copy_only=False)
    return np.flatnonzero(found)


# a class as re2_regex writes it; _ascii_part keeps only its ASCII members
ASCII_CLASS = re.compile(r"\[(\^?)((?:[^\]\\]|\\x\{[0-9a-f]+\})(?:-(?:[^\]\\]|\\x\{[0-9a-f]+\}))?)*\]")
ITEM = re.compile(r"([^\\]|\\x\{([0-9a-f]+)\})(?:-([^\\]|\\x\{([0-9a-f]+)\}))?")


def _ascii_part(found: re.Match[str]) -> str:
    kept = []
    for item in ITEM.finditer(found.group(0)[1 + len(found.group(1)) : -1]):
        low = int(item.group(2), 16) if item.group(2) else ord(item.group(1))
        if low >= 128:
            continue
        if item.group(3) is None:
            kept.append(item.group(0))
            continue
        high = int(item.group(4), 16) if item.group(4) else ord(item.group(3))
        kept.append(item.group(1) + "-" + (_char(min(high, 127))))
    if not kept:  # no ASCII member: a class that matches no ASCII character (or, negated, every one)
        return "[\\x{0}-\\x{7f}]" if found.group(1) else "[^\\x{0}-\\x{10ffff}]"
    return f"[{found.group(1)}{''.join(kept)}]"


def _node(op: object, av: NodeArg, flags: int, names: dict[int, str]) -> str:  # noqa: C901 (one case per node kind)
    fold = bool(flags & sre.SRE_FLAG_IGNORECASE)
    if op is sre.LITERAL:
        return _class(_literal(av, fold), False)
    if op is sre.NOT_LITERAL:
        return _class(_literal(av, fold), True)
    if op is sre.ANY:
        return "(?s:.)" if flags & sre.SRE_FLAG_DOTALL else "."
    if op is sre.CATEGORY:
        return _class(_category(av), False)
    if op is sre.IN:
        items = list(av)
        negate = bool(items) and items[0][0] is sre.NEGATE
        ranges: list[tuple[int, int]] = []
        for kind, value in items[1:] if negate else items:
            if kind is sre.LITERAL:
                ranges += _literal(value, fold)
            elif kind is sre.RANGE:
                ranges += _range(value[0], value[1], fold)
            elif kind is sre.CATEGORY:
                ranges += _category(value)
            else:
                raise Inexact(f"class item {kind}")
        return _class(ranges, negate)
    if op is sre.AT:
        return _anchor(av, flags)
    if op in (sre.MAX_REPEAT, sre.MIN_REPEAT):
        low, high, body = av
        if high != sre.MAXREPEAT and high > MAX_REPEAT or low > MAX_REPEAT:
            raise Inexact("a repeat beyond RE2's bound")
        inner = "(?:" + "".join(_node(o, a, flags, names) for o, a in body) + ")"
        count = f"{{{low},{'' if high == sre.MAXREPEAT else high}}}"
        return inner + count + ("?" if op is sre.MIN_REPEAT else "")
    if op is sre.SUBPATTERN:
        group, add, remove, body = av
        if add & (sre.SRE_FLAG_ASCII | sre.SRE_FLAG_LOCALE):
            raise Inexact("ASCII classes in a group")
        inner = "".join(_node(o, a, (flags | add) & ~remove, names) for o, a in body)
        name = names.get(group) if group is not None else None
        return f"(?P<{name}>{inner})" if name else f"(?:{inner})"
    if op is sre.BRANCH:
        return "(?:" + "|".join("".join(_node(o, a, flags, names) for o, a in b) for b in av[1]) + ")"
    raise Inexact(f"regex construct {op}")  # look-around, back reference, possessive, atomic, conditional


def _anchor(at: object, flags: int) -> str:
    multiline = bool(flags & sre.SRE_FLAG_MULTILINE)
    if at is sre.AT_BEGINNING:
        return "(?m:^)" if multiline else "\\A"
    if at is sre.AT_BEGINNING_STRING:
        return "\\A"
    if at is sre.AT_END:
        return "(?m:$)" if multiline else "(?:\\n?\\z)"  # Python's `$`: the end, or before a last newline
    if at is sre.AT_END_STRING:
        return "\\z"
    raise Inexact(f"anchor {at}")  # \b and \B: RE2's are ASCII


def _literal(code: int, fold: bool) -> list[tuple[int, int]]:
    char = chr(code)
    if not fold or char.lower() == char.upper() == char and code not in _folded():
        return [(code, code)]
    if code >= 128:
        raise Inexact("case folding outside ASCII")
    letter = char.lower()
    codes = (ord(letter), ord(letter.upper()), *FOLDS.get(letter, ()))
    return [(c, c) for c in codes]


def _range(low: int, high: int, fold: bool) -> list[tuple[int, int]]:
    if not fold:
        return [(low, high)]
    if high >= 128:
        raise Inexact("case folding outside ASCII")
    return [pair for code in range(low, high + 1) for pair in _literal(code, True)]


@cache
def _folded() -> frozenset[int]:
    return frozenset(c for codes in FOLDS.values() for c in codes)


def _category(category: object) -> list[tuple[int, int]]:
    classes = unicode_classes()
    for name, negated in (("digit", sre.CATEGORY_NOT_DIGIT), ("space", sre.CATEGORY_NOT_SPACE)):
        if category is negated:
            return _complement(classes[name])
    if category is sre.CATEGORY_NOT_WORD:
        return _complement(classes["word"])
    plain = {sre.CATEGORY_DIGIT: "digit", sre.CATEGORY_SPACE: "space", sre.CATEGORY_WORD: "word"}.get(category)
    if plain is None:
        raise Inexact(f"category {category}")
    return classes[plain]


def _complement(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out, at = [], 0
    for low, high in ranges:
        if low > at:
            out.append((at, low - 1))
        at = high + 1
    if at <= 0x10FFFF:
        out.append((at, 0x10FFFF))
    return out


def _class(ranges: list[tuple[int, int]], negate: bool) -> str:
    merged: list[tuple[int, int]] = []
    for low, high in sorted(ranges):
        if merged and low <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], high))
        else:
            merged.append((low, high))
    if not negate and len(merged) == 1 and merged[0][0] == merged[0][1]:
        return _char(merged[0][0])
    body = "".join(_char(a) if a == b else f"{_char(a)}-{_char(b)}" for a, b in merged)
    return f"[{'^' if negate else ''}{body}]"


def _char(code: int) -> str:
    char = chr(code)
    if code < 128 and char.isprintable() and char not in SPECIAL:
        return char
    return f"\\x{{{code:x}}}"


@cache
def unicode_classes() -> dict[str, list[tuple[int, int]]]:
    """\\d, \\s and \\w as the running Python's `re` has them, as code point ranges: read from CLASSES_FILE when
    it was written for this Python's Unicode version, else worked out (a quarter of a second)."""
    data = json.loads(resources.files("flinkdoctor").joinpath(CLASSES_FILE).read_text("utf-8"))
    if data.get("unidata_version") == unicodedata.unidata_version:
        return {name: [(pair[0], pair[1]) for pair in data[name]] for name in ("digit", "space", "word")}
    return compute_classes()


def compute_classes() -> dict[str, list[tuple[int, int]]]:
    """The classes from the str methods Python's `re` uses for them (tests/test_re2.py checks they agree)."""
    tests: dict[str, Callable[[str], bool]] = {
        "digit": str.isdecimal,
        "space": str.isspace,
        "word": lambda c: c.isalnum() or c == "_",
    }
    out: dict[str, list[tuple[int, int]]] = {}
    for name, test in tests.items():
        ranges: list[tuple[int, int]] = []
        for code in range(0x110000):
            if test(chr(code)):
                if ranges and ranges[-1][1] == code - 1:
                    ranges[-1] = (ranges[-1][0], code)
                else:
                    ranges.append((code, code))
        out[name] = ranges
    return out


def write_classes(path: str | Path) -> None:
    """Write CLASSES_FILE for the running Python (python -c 'from flinkdoctor.scan.re2 import write_classes;
    write_classes("src/flinkdoctor/knowledge/unicode_classes.json")')."""
    data = {"unidata_version": unicodedata.unidata_version, **compute_classes()}
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(data, handle, separators=(",", ":"))
        handle.write("\n")
