"""Kubernetes resources as `kubectl get -o yaml` prints them, read into lines a layout reads.

An operator keeps a job's failure in its custom resource's status, not in a log: the Flink Kubernetes operator
writes `status.error` as its FlinkResourceException in JSON (type, message, the causes in `throwableList`, a stack
trace when enabled), and kubectl prints that JSON as one quoted YAML scalar folded over several lines. Read line by
line, the exception is a YAML string nobody matches. So such a document is parsed (it is small: a resource) and
each field becomes one line, `path: value`, citing the line its value starts on; a string that holds an exception
object becomes the exception's lines, as the JVM prints a trace (`class: message`, then `Caused by: ...` for each
cause, then its frames), so rules and the exception chain read it as any pasted trace. The field names of an
exception object are data (layouts/shapes.yaml, `documents`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import yaml

from ..jsondata import JSONObject

MAX_DOCUMENT_BYTES = 4 * 1024 * 1024  # a resource is small; a longer file is read as text
CLASS = re.compile(r"^(?:[a-zA-Z_$][\w$]*\.)+[A-Z][\w$]*$")


def is_resource(lines: list[str], detect: re.Pattern[str]) -> bool:
    """A head that is a Kubernetes resource in YAML: its `apiVersion:` and `kind:` at the top level."""
    keys = {m.group(1) for line in lines if (m := detect.match(line))}
    return {"apiVersion", "kind"} <= keys


def resource_lines(numbered: list[tuple[int, str]], exception: dict[str, str]) -> Iterator[tuple[int, str]] | None:
    """(original line, text) of the resource's fields, or None when the text is no YAML this reads."""
    text = "\n".join(line for _, line in numbered)
    if len(text) > MAX_DOCUMENT_BYTES:
        return None
    try:
        nodes = list(yaml.compose_all(text, Loader=yaml.SafeLoader))
    except yaml.YAMLError:
        return None
    numbers = [number for number, _ in numbered]
    out: list[tuple[int, str]] = []
    for node in nodes:
        if node is not None:
            _walk(node, "", numbers, exception, out)
    return iter(out)


def _walk(
    node: yaml.Node, path: str, numbers: list[int], exception: dict[str, str], out: list[tuple[int, str]]
) -> None:
    number = numbers[min(node.start_mark.line, len(numbers) - 1)]
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            _walk(value, f"{path}.{key.value}" if path else str(key.value), numbers, exception, out)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _walk(item, f"{path}[{i}]", numbers, exception, out)
    else:
        value = str(node.value)
        trace = _trace(value, exception)
        if trace:
            out.append((number, f"{path}:"))
            out.extend((number, line) for line in trace)
        else:
            lines = value.split("\n") or [""]
            out.append((number, f"{path}: {lines[0]}"))
            out.extend((number, "  " + line) for line in lines[1:])


def _trace(value: str, fields: dict[str, str]) -> list[str]:
    """The lines of an exception object held as JSON in a string, as the JVM prints its trace; [] otherwise."""
    if not value.lstrip().startswith("{"):
        return []
    try:
        found = json.loads(value)
    except ValueError:
        return []
    if not isinstance(found, dict) or not CLASS.match(str(found.get(fields["class"], ""))):
        return []
    lines = _thrown(found, fields)
    trace = found.get(fields["trace"])
    if isinstance(trace, str) and trace.strip():
        return trace.split("\n")  # the JVM's own text: the chain and its frames
    for cause in found.get(fields["causes"]) or []:
        if isinstance(cause, dict) and CLASS.match(str(cause.get(fields["class"], ""))):
            first, *rest = _thrown(cause, fields)
            lines += ["Caused by: " + first, *rest]
    return lines


def _thrown(found: JSONObject, fields: dict[str, str]) -> list[str]:
    message = found.get(fields["message"])
    if message is None:
        return [str(found[fields["class"]])]
    first, *rest = str(message).split("\n")
    return [f"{found[fields['class']]}: {first}", *rest]
