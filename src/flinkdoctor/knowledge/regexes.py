"""The regexes of rules and layouts, written in Java's syntax, read with Python's own regex parser.

Rules run in the scan tasks with Python's `re` (matcher.py); layouts' header regexes run in the JVM (field
split) and in the tasks (RE2, or `re`). They are translated to Python once (named groups) to check them at load,
and their parse tree gives the prefilter's required literals and the backtracking check below, not a second
hand-written scanner.
"""

from __future__ import annotations

import importlib
import re
import sys
from functools import cache
from typing import Any, TypeAlias

# Python 3.11+: the parser is private under re; 3.10 has the (now deprecated) top-level modules
_NEW = sys.version_info >= (3, 11)
sre = importlib.import_module("re._constants" if _NEW else "sre_constants")
sre_parse = importlib.import_module("re._parser" if _NEW else "sre_parse")

POSSESSIVE = getattr(sre, "POSSESSIVE_REPEAT", object())  # Python 3.11+
ATOMIC = getattr(sre, "ATOMIC_GROUP", object())
BACKTRACKING = (sre.MAX_REPEAT, sre.MIN_REPEAT)
UNBOUNDED = sre.MAXREPEAT

# A parse tree of Python's regex parser (re._parser.SubPattern) and one node's argument: the parser is a private
# module loaded by name above, so its values come in untyped.
ParseTree: TypeAlias = Any
NodeArg: TypeAlias = Any
Node: TypeAlias = tuple[object, NodeArg]  # one node of a parse tree: (opcode, argument)


@cache
def python_regex(java: str) -> re.Pattern[str]:
    """The Java regex as a compiled Python one (`(?<name>` becomes `(?P<name>`); raises re.error if invalid."""
    return re.compile(_python_syntax(java))


def checked(java: str) -> tuple[re.Pattern[str] | None, str | None]:
    """The regex compiled (None when invalid), and what is wrong with it: invalid, or it can backtrack
    catastrophically. What every loader of regexes (rules, metrics, layouts, shapes) refuses."""
    try:
        compiled = python_regex(java)
    except re.error as err:
        return None, f"bad regex {java!r}: {err}"
    danger = nested_quantifier(java)
    return compiled, (f"{java!r} can backtrack catastrophically: {danger}" if danger else None)


def parse(java: str) -> ParseTree:
    """Python's parse tree (a SubPattern) of a Java regex that python_regex accepts."""
    return sre_parse.parse(_python_syntax(java))


def _python_syntax(java: str) -> str:
    return re.sub(r"\(\?<(?=[A-Za-z])", "(?P<", java)


def nested_quantifier(java: str) -> str | None:
    """What makes `java` backtrack catastrophically, e.g. `(a+)+` or `(\\w*)*`, else None.

    Python's and the JVM's regex engines backtrack: on a line that almost matches, a repeated part whose body
    itself repeats without bound is tried with every split of the text between the two quantifiers, exponential
    in the line length, and one line stalls a whole Spark task. An outer `?` (at most once) is fine, and so is an inner
    possessive quantifier or atomic group, which never gives text back.
    """
    return _nested(parse(java))


def _nested(tree: ParseTree) -> str | None:
    for op, av in tree:
        if op in BACKTRACKING and av[1] > 1 and _has_unbounded(av[2]):
            low, high = av[0], av[1]
            outer = {(0, UNBOUNDED): "*", (1, UNBOUNDED): "+"}.get(
                (low, high), f"{{{low},{'' if high == UNBOUNDED else high}}}"
            )
            return f"a part repeated {outer} holds a quantifier without bound (nested quantifiers, as in (a+)+)"
        found = next(filter(None, (_nested(sub) for sub in _children(op, av))), None)
        if found:
            return found
    return None


def _has_unbounded(tree: ParseTree) -> bool:
    for op, av in tree:
        if op in BACKTRACKING and av[1] == UNBOUNDED:
            return True
        if op is not ATOMIC and any(_has_unbounded(sub) for sub in _children(op, av)):
            return True
    return False


def _children(op: object, av: NodeArg) -> list[ParseTree]:
    """The sub-trees under one node (repeats, groups, alternatives, lookarounds, conditionals, atomic groups)."""
    if op in BACKTRACKING or op is POSSESSIVE:
        return [av[2]]
    if op is sre.SUBPATTERN:
        return [av[-1]]
    if op is sre.BRANCH:
        return list(av[1])
    if op in (sre.ASSERT, sre.ASSERT_NOT):
        return [av[1]]
    if op is ATOMIC:
        return [av]
    if op is sre.GROUPREF_EXISTS:
        return [branch for branch in av[1:] if branch is not None]
    return []
