"""The YAML edge: read a data file of the package (rules, relation sets, layouts, shapes, knowledge), check it against
its JSON schema,
and say what is wrong as `file:line: where: reason`, every problem at once.

Past this edge the data is turned into frozen typed objects (rulebook.Rule, layouts.Layout) and trusted.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Protocol

import yaml

from ..jsondata import JSON, JSONObject

LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's parser when PyYAML has it


class SchemaValidator(Protocol):
    """What is used of a jsonschema validator (jsonschema ships no types: its errors come in untyped)."""

    def iter_errors(self, instance: JSON) -> Iterable[JSON]: ...


@cache
def schema(name: str) -> JSONObject:
    """A schema of the package (schemas/<name>.schema.json), as written."""
    loaded: JSONObject = json.loads(
        resources.files("flinkdoctor").joinpath(f"schemas/{name}.schema.json").read_text("utf-8")
    )
    return loaded


def read_yaml(path: Path | str, text: str, problems: list[str]) -> tuple[JSON, yaml.Node | None]:
    """(data, node) of a YAML document, the node giving line numbers; (None, None) and a problem when invalid.
    A key given twice in one mapping is a problem: YAML would silently keep the last one."""
    loader = LOADER(text)
    try:
        node = loader.get_single_node()
        duplicates = sorted(_duplicate_keys(node))
        if duplicates:
            problems += [
                f"{path}:{line}: duplicate key {key!r} (first at line {first})" for line, key, first in duplicates
            ]
            return None, None
        return (loader.construct_document(node) if node else None), node
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        problems.append(f"{path}:{mark.line + 1 if mark else 1}: invalid YAML: {getattr(err, 'problem', err)}")
        return None, None
    finally:
        loader.dispose()


def _duplicate_keys(root: yaml.Node | None) -> Iterator[tuple[int, str, int]]:
    """(line, key, line of its first occurrence) of every key repeated within one mapping of the node tree."""
    stack: list[yaml.Node] = [root] if root is not None else []
    while stack:
        node = stack.pop()
        if isinstance(node, yaml.MappingNode):
            seen: dict[str, int] = {}
            for key, value in node.value:
                if isinstance(key, yaml.ScalarNode):
                    line = key.start_mark.line + 1
                    if key.value in seen:
                        yield line, key.value, seen[key.value]
                    seen.setdefault(key.value, line)
                stack.append(value)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)


def schema_problems(validator: SchemaValidator, data: JSON, node: yaml.Node | None, path: Path | str) -> list[str]:
    """Every schema violation of `data` as `file:line: where: reason`. For an item that fits none of several
    shapes (oneOf), the reason of the shape it came closest to, at that shape's own location."""
    import jsonschema

    found = []
    for error in validator.iter_errors(data):
        if error.validator in ("oneOf", "anyOf") and error.context:
            error = jsonschema.exceptions.best_match(error.context)
        where = list(error.absolute_path)
        found.append((line_of(node, where), f"{'/'.join(map(str, where)) or '(top)'}: {error.message}"))
    return [f"{path}:{line}: {message}" for line, message in sorted(found)]


def line_of(node: yaml.Node | None, path: Sequence[str | int]) -> int:
    """1-based line of the YAML node at `path` (the nearest existing parent when the key is missing)."""
    line = node.start_mark.line + 1 if node else 1
    for key in path:
        if isinstance(node, yaml.MappingNode):
            match = [v for k, v in node.value if k.value == key]
            if not match:
                break
            node = match[0]
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
            node = node.value[key]
        else:
            break
        line = node.start_mark.line + 1
    return line
