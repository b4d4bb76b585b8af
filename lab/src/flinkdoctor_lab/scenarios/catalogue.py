"""Read catalogue.yaml into Scenarios, checking every field before any cluster starts.

All problems are collected and reported together as `catalogue.yaml: <scenario>: <problem>`, so a typo in a
step name or a regex fails the lab at start, not twenty minutes into a matrix run.
"""

from __future__ import annotations

import inspect
import re
import shlex
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import yaml

from .. import LabError
from .base import JAVA_PACKAGE, SETUP_STEPS, STEPS, Scenario

CATALOGUE = Path(__file__).with_name("catalogue.yaml")

REQUIRED = {"name", "summary", "job_args", "inject", "expect"}
OPTIONAL = {"config", "job_class", "setup", "zookeeper", "taskmanagers"}
NAME = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")


class _UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that rejects a key written twice in one mapping (PyYAML keeps the last one silently)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        seen: set = set()
        for key_node, _ in node.value:
            key = key_node.value
            if key != "<<" and key in seen:
                raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep)


def load_catalogue(path: Path = CATALOGUE) -> dict[str, Scenario]:
    """Scenarios by name, in catalogue order; LabError listing every problem if any field is wrong."""
    try:
        doc = yaml.load(path.read_text(), Loader=_UniqueKeyLoader)  # a SafeLoader: no Python objects
    except (OSError, yaml.YAMLError) as e:
        raise LabError(f"{path.name}: {e}".replace("\n", " ")) from e
    if not isinstance(doc, dict) or not isinstance(doc.get("scenarios"), list):
        raise LabError(f"{path.name}: expected a mapping with a `scenarios` list")
    if unknown := sorted(doc.keys() - {"base_config", "shared_config", "scenarios"}):
        raise LabError(f"{path.name}: unknown top-level key(s) {', '.join(unknown)}")
    base = doc.get("base_config") or {}
    problems: list[str] = []
    scenarios: dict[str, Scenario] = {}
    for i, entry in enumerate(doc["scenarios"]):
        name = entry.get("name") if isinstance(entry, dict) else None
        where = f"{path.name}: {name or f'scenario #{i + 1}'}"
        errors: list[str] = []
        scenario = _scenario(entry, base, errors)
        problems += [f"{where}: {e}" for e in errors]
        if scenario and scenario.name in scenarios:
            problems.append(f"{where}: name used twice")
        elif scenario:
            scenarios[scenario.name] = scenario
    if problems:
        raise LabError("; ".join(problems))
    return scenarios


def _scenario(entry: Any, base: dict, errors: list[str]) -> Scenario | None:
    if not isinstance(entry, dict):
        errors.append("expected a mapping")
        return None
    errors += [f"missing field `{f}`" for f in sorted(REQUIRED - entry.keys())]
    errors += [f"unknown field `{f}`" for f in sorted(entry.keys() - REQUIRED - OPTIONAL)]
    if errors:
        return None
    if not (isinstance(entry["name"], str) and NAME.fullmatch(entry["name"])):
        errors.append(f"name {entry['name']!r} is not kebab-case")
    config = entry.get("config") or {}
    if not isinstance(config, dict) or not all(isinstance(v, (str, int, bool)) for v in config.values()):
        errors.append("config must map keys to strings, numbers or booleans")
    if not isinstance(entry["job_args"], str):
        errors.append("job_args must be a string (the job's command line)")
    taskmanagers = entry.get("taskmanagers", 1)
    if not isinstance(taskmanagers, int) or taskmanagers < 1:
        errors.append("taskmanagers must be a number >= 1")
    inject = _bind(entry["inject"], STEPS, "inject", errors)
    setup = _bind(entry["setup"], SETUP_STEPS, "setup", errors) if "setup" in entry else None
    expect = _expectations(entry["expect"], errors)
    if errors:
        return None
    return Scenario(
        name=entry["name"],
        summary=str(entry["summary"]),
        config={**base, **config},
        job_args=shlex.split(entry["job_args"]),
        inject=inject,
        expect=expect,
        zookeeper=bool(entry.get("zookeeper", False)),
        job_class=f"{JAVA_PACKAGE}.{entry.get('job_class', 'LabJob')}",
        taskmanagers=taskmanagers,
        setup=setup,
    )


def _bind(spec: Any, registry: dict[str, Callable[..., None]], field: str, errors: list[str]) -> Any:
    """`name` or `{name: {param: value}}` -> the registered function with its parameters bound."""
    if isinstance(spec, str):
        name, params = spec, {}
    elif _one_pair(spec) and isinstance(next(iter(spec.values())), dict):
        name, params = next(iter(spec.items()))
    else:
        errors.append(f"{field} must be a step name or {{name: {{param: value}}}}, not {spec!r}")
        return None
    fn = registry.get(name)
    if fn is None:
        errors.append(f"{field}: unknown step {name!r}; known: {', '.join(sorted(registry))}")
        return None
    try:
        inspect.signature(fn).bind(None, **params)
    except TypeError as e:
        errors.append(f"{field}: {name}{inspect.signature(fn)}: {e}")
        return None
    return partial(fn, **params) if params else fn


def _expectations(items: Any, errors: list[str]) -> list[str | tuple[str, str]]:
    """'regex' (any log file) or {file-part: 'regex'} -> str or (file-part, regex); every regex must compile."""
    if not isinstance(items, list) or not items:
        errors.append("expect must be a non-empty list")
        return []
    out: list[str | tuple[str, str]] = []
    for item in items:
        if isinstance(item, str):
            where, rx = "", item
        elif _one_pair(item):
            where, rx = next(iter(item.items()))
        else:
            where, rx = "", None
        if not (isinstance(where, str) and isinstance(rx, str)):
            errors.append(f"expect: {item!r} is neither 'regex' nor file-part: 'regex'")
            continue
        try:
            re.compile(rx)
        except re.error as e:
            errors.append(f"expect: {rx!r} does not compile: {e}")
            continue
        out.append((where, rx) if where else rx)
    return out


def _one_pair(item: Any) -> bool:
    return isinstance(item, dict) and len(item) == 1
