"""A message as the code writes it: constant parts and holes, whatever the source (a format string, a logger
template, a string concatenation). From it come the entry's regex and literals, and the test of whether the
constant parts are specific enough to recognise the message in a log.

A template is a tuple whose items are constant strings or HOLE (a value the code fills in). Java's
`String.format` / `Formatter` specifiers, SLF4J's `{}` and concatenation all become HOLE.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

HOLE = None  # a variable part of a message
Part = str | None
Template = tuple[Part, ...]

# A variable part as users paste it: a value, or what they put instead (xx, ***, <topic>, ..., nothing), on one
# line; lazy, so the constant that follows anchors it.
HOLE_REGEX = r"[^\n]*?"
# java.util.Formatter: %[argument_index$][flags][width][.precision]conversion (t/T take one more letter)
FORMAT_SPEC = re.compile(r"%(?:\d+\$|<)?[-#+ 0,(]*\d*(?:\.\d+)?(?:[tT][a-zA-Z]|[a-zA-Z%])")
SLF4J_HOLE = re.compile(r"(\\?)\{\}")
# a run of whitespace that the regex lets vary: two or more blanks, or any tab / line break
LOOSE_SPACE = re.compile(r"[ \t\r\n\f\v]{2,}|[\t\r\n\f\v]")
# a run of non-ASCII characters: one character in Python's str, several bytes in Hyperscan's UTF-8, so the regex
# matches any such run there (the same class means the same thing in both) and a literal stops at it
NON_ASCII = re.compile(r"[^\x00-\x7f]+")
NON_ASCII_REGEX = r"[^\x00-\x7f]+"
LOOSE = re.compile(f"{LOOSE_SPACE.pattern}|{NON_ASCII.pattern}")
WORD = re.compile(r"[A-Za-z]{2,}")
REGEX_SPECIAL = set(".^$*+?{}[]\\|()")

# How specific the constant parts must be to keep a message (measured and reported by the build).
MIN_CONSTANT_CHARS = 15
MIN_WORDS = 3
MIN_LITERAL = 4


def normalise(parts: Iterable[Part]) -> Template:
    """Merge neighbouring constants, collapse neighbouring holes, drop empty constants."""
    out: list[Part] = []
    for part in parts:
        if part == "":
            continue
        if part is HOLE:
            if out and out[-1] is HOLE:
                continue
            out.append(HOLE)
        elif out and out[-1] is not HOLE:
            out[-1] = str(out[-1]) + part
        else:
            out.append(part)
    return tuple(out)


def from_format(text: str) -> Template:
    """A java.util.Formatter format string (String.format, Flink's and Guava's Preconditions)."""
    parts: list[Part] = []
    last = 0
    for match in FORMAT_SPEC.finditer(text):
        parts.append(text[last : match.start()])
        spec = match.group()
        parts.append("%" if spec == "%%" else "\n" if spec == "%n" else HOLE)
        last = match.end()
    parts.append(text[last:])
    return normalise(parts)


def from_slf4j(text: str) -> Template:
    """An SLF4J (and Log4j 2) message template: `{}` is an argument, `\\{}` a literal brace pair."""
    parts: list[Part] = []
    last = 0
    for match in SLF4J_HOLE.finditer(text):
        parts.append(text[last : match.start()])
        parts.append("{}" if match.group(1) else HOLE)
        last = match.end()
    parts.append(text[last:])
    return normalise(parts)


def from_recipe(recipe: str) -> Template:
    """A Java 9+ string concatenation recipe (StringConcatFactory): \\u0001 is an argument, \\u0002 a constant
    argument (rare; read as a hole)."""
    return normalise(HOLE if ch in "\x01\x02" else ch for ch in recipe)


def render(template: Template, hole: str = "{}") -> str:
    """The template as text, holes shown as `hole`."""
    return "".join(hole if part is HOLE else part for part in template)


def line_of(template: Template) -> Template:
    """The one line of a multi-line message that a log line can show: the line with the most constant text.
    A regex matches one line, so a message spanning lines is recognised by its most telling line."""
    lines: list[list[Part]] = [[]]
    for part in template:
        if part is HOLE:
            lines[-1].append(HOLE)
            continue
        pieces = part.split("\n")
        lines[-1].append(pieces[0])
        for piece in pieces[1:]:
            lines.append([piece])
    candidates = [normalise(line) for line in lines]
    return max(candidates, key=lambda t: (constant_chars(t), -candidates.index(t)))


def trimmed(template: Template) -> Template:
    """Without holes and blanks at either end: the regex starts and ends on constant text."""
    parts = list(template)
    while parts and (parts[0] is HOLE or not str(parts[0]).strip()):
        parts.pop(0)
    while parts and (parts[-1] is HOLE or not str(parts[-1]).strip()):
        parts.pop()
    if parts:
        parts[0] = str(parts[0]).lstrip()
        parts[-1] = str(parts[-1]).rstrip()
    return normalise(parts)


def constant_chars(template: Template) -> int:
    return sum(len(part.strip()) for part in template if part is not HOLE)


def words(template: Template) -> int:
    return sum(len(WORD.findall(part)) for part in template if part is not HOLE)


def specific(template: Template) -> bool:
    """Enough constant text to recognise the message: a shorter one matches too much of any log."""
    return (
        constant_chars(template) >= MIN_CONSTANT_CHARS
        and words(template) >= MIN_WORDS
        and any(len(lit) >= MIN_LITERAL for lit in literals(template))
    )


def escape(text: str) -> str:
    """`text` as an exact regex, valid in Python re and Hyperscan (no verbose-mode escapes, no \\Q..\\E)."""
    out = []
    for ch in text:
        if ch in REGEX_SPECIAL:
            out.append("\\" + ch)
        elif ch == " ":
            out.append(" ")
        elif ord(ch) > 0x7E:
            out.append(NON_ASCII_REGEX)
        elif not ch.isprintable():
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    return "".join(out)


def _constant_regex(text: str) -> str:
    out = []
    last = 0
    for match in LOOSE.finditer(text):
        out.append(escape(text[last : match.start()]))
        out.append(NON_ASCII_REGEX if NON_ASCII.match(match.group()) else r"\s+")
        last = match.end()
    out.append(escape(text[last:]))
    return "".join(out)


def to_regex(template: Template) -> str:
    """Constant parts exact (a run of blanks or a line break matches any whitespace run), holes loose."""
    return "".join(HOLE_REGEX if part is HOLE else _constant_regex(part) for part in template)


def literals(template: Template) -> tuple[str, ...]:
    """The constant substrings every match holds, of at least MIN_LITERAL characters, the longest first."""
    found: set[str] = set()
    for part in template:
        if part is HOLE:
            continue
        for piece in LOOSE.split(part):
            if len(piece) >= MIN_LITERAL:
                found.add(piece)
    return tuple(sorted(found, key=lambda s: (-len(s), s)))


def class_regex(name: str, prefixes: Sequence[str] = ()) -> str:
    """An exception class name, also under the shaded prefixes it may carry (Flink's shaded ZooKeeper, ...)."""
    prefix = ""
    if prefixes:
        prefix = "(?:" + "|".join(escape(p) for p in sorted(prefixes)) + ")?"
    # the name ends at a word boundary (a Scala object's name ends in `$`, after which \b cannot hold)
    return prefix + escape(name) + (r"\b" if name[-1:].isalnum() or name[-1:] == "_" else "")
