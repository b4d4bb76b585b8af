"""`json.JSONEncoder(indent=2, ensure_ascii=False)`'s very text, made in pieces without its pure-Python cost.

Python 3.11's json indents only in pure Python: a generator per container, every token handed up through each
level (64.7 M calls for the 170 MB of a report of 100,000 jobs). Here a container that holds only strings,
numbers, booleans and None (nearly every one in a report: a checkpoint, the counts, the sentences) is written by
json's C encoder in one call, its item separator carrying the newline and the indent of its depth; only
containers of containers are walked here, one item at a time. A value of any other type (a subclass, one json
writes through `default`) is written by the reference encoder itself and indented to its depth: json escapes a
newline inside a string, so every newline of its text is one the layout put there.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from functools import cache
from json.encoder import encode_basestring  # (ensure_ascii=False's: the C function where there is one)
from typing import Any

__all__ = ["indented_pieces"]

INDENT = "  "
_REFERENCE = json.JSONEncoder(indent=2, ensure_ascii=False)
_PLAIN = frozenset({str, int, float, bool, type(None)})  # a flat container's values: the C encoder's own types
_KEYS = frozenset({str})
_LITERAL: dict[Any, str] = {None: "null", True: "true", False: "false"}
_FLAT = frozenset({list, tuple, dict})  # written by the C encoder when all they hold is _PLAIN
# json's C encoder (what JSONEncoder.encode runs when it does not indent), if this Python has it; its arguments:
# markers, default, string encoder, indent, key separator, item separator, sort_keys, skipkeys, allow_nan
_C_ENCODER: Callable[..., Callable[[Any, int], Any]] | None = getattr(json.encoder, "c_make_encoder", None)


def indented_pieces(node: Any, batch: int = 4096) -> Iterator[str]:
    """The text of `json.dumps(node, indent=2, ensure_ascii=False)`, in pieces of about `batch` parts each: a
    sequence a list subclass makes as it is read (a report's jobs, one at a time) is never held whole."""
    parts: list[str] = []
    stack: list[_Open] = []
    markers: set[int] = set()
    _write(node, 0, parts, stack, markers)
    while stack:
        top = stack[-1]
        depth, lead, between, is_dict = top.depth, top.lead, top.between, top.is_dict
        for item in top.items:
            if is_dict:
                key, item = item
                parts.append(lead + encode_basestring(key) + ": ")
            else:
                parts.append(lead)
            lead = between
            kind = type(item)
            if kind is str:  # (the commonest values: written here, not through _write)
                parts.append(encode_basestring(item))
            elif item is None:
                parts.append("null")
            elif kind is int:
                parts.append(int.__repr__(item))
            elif _write(item, depth, parts, stack, markers):
                break  # its items first
            if len(parts) >= batch:
                yield "".join(parts)
                parts.clear()
        else:
            parts.append(top.end)
            markers.discard(id(top.container))
            stack.pop()
            continue
        top.lead = lead
    yield "".join(parts)


class _Open:
    """A container being written: what is left of its items, and what goes before the next and after the last."""

    __slots__ = ("container", "items", "depth", "is_dict", "lead", "between", "end")

    def __init__(self, container: Any, depth: int, is_dict: bool) -> None:
        self.container, self.depth, self.is_dict = container, depth, is_dict
        self.items: Iterator[Any] = iter(container.items() if is_dict else container)
        self.lead = _newline(depth)
        self.between = "," + self.lead
        self.end = _newline(depth - 1) + ("}" if is_dict else "]")


def _write(node: Any, depth: int, parts: list[str], stack: list[_Open], markers: set[int]) -> bool:
    """`node` at indent level `depth`: its whole text into `parts` (False), or its opening there and the
    container on `stack` (True: a list or dict of containers, whose items the caller writes one at a time)."""
    kind = type(node)
    if kind is str:
        parts.append(encode_basestring(node))
    elif kind is float:
        parts.append(_flat(depth)((node,))[1:-1])
    elif kind in _PLAIN:
        parts.append(_LITERAL[node] if node is None or kind is bool else int.__repr__(node))
    elif (kind is dict and _KEYS.issuperset(map(type, node))) or isinstance(node, (list, tuple)):
        if not node:
            parts.append("{}" if kind is dict else "[]")
        elif kind in _FLAT and _PLAIN.issuperset(map(type, node.values() if kind is dict else node)):
            text = _flat(depth)(node)
            parts.append(text[0] + _newline(depth + 1) + text[1:-1] + _newline(depth) + text[-1])
        else:
            if id(node) in markers:
                raise ValueError("Circular reference detected")
            markers.add(id(node))
            parts.append("{" if kind is dict else "[")
            stack.append(_Open(node, depth + 1, kind is dict))
            return True
    else:  # a subclass, a mapping with keys not strings, a type for `default`: the reference's text, at this depth
        parts.append("".join(_REFERENCE.iterencode(node)).replace("\n", _newline(depth)))
    return False


@cache
def _newline(depth: int) -> str:
    return "\n" + INDENT * depth


@cache
def _flat(depth: int) -> Callable[[Any], str]:
    """json's encoder of a flat container at `depth`, each item after the first on its own line (the caller puts
    the first and the end on theirs): the C encoder `JSONEncoder.encode` uses without indent, made once."""
    separator = "," + _newline(depth + 1)
    if _C_ENCODER is None:  # a Python without json's C part: the same text, slower
        return json.JSONEncoder(ensure_ascii=False, separators=(separator, ": ")).encode
    encode = _C_ENCODER(None, _REFERENCE.default, encode_basestring, None, ": ", separator, False, False, True)
    return lambda node: "".join(encode(node, 0))
