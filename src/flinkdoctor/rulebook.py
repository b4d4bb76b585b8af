"""The knowledge base: one YAML file per failure signature, validated at load, before Spark starts.

A bad rule file stops the run with `file:line: reason`, every problem at once (not only the first).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path

import jsonschema
import yaml

from .layouts import python_regex

MATCH_FIELDS = ("text", "message", "logger", "exception", "thread")
UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


class RuleError(Exception):
    """One or more rule files are invalid; the message lists each problem as file:line: reason."""


@dataclass(frozen=True)
class Relation:
    rule: str | None
    category: str | None
    scope: str
    before_ms: int
    after_ms: int


@dataclass
class Rule:
    id: str
    title: str
    category: str
    role: str
    signatures: list[dict]
    explanation: str
    references: list[str]
    path: str
    sources: list[str] = field(default_factory=list)
    priority: int = 50
    confidence: float = 0.7
    captures: dict = field(default_factory=dict)
    where: dict = field(default_factory=dict)
    onset: str | None = None
    explains: list[Relation] = field(default_factory=list)
    fix: list[dict] = field(default_factory=list)
    cases: list[dict] = field(default_factory=list)
    gap: str | None = None
    versions: str | None = None

    def literals(self) -> list[str | None]:
        """Per signature, a literal that every match must contain (None when none can be derived)."""
        return [sig.get("literal") or _required_literal(sig) for sig in self.signatures]

    def all_literals(self) -> list[list[str]]:
        """Per signature, every literal a match must contain: the cheap test before its regexes run."""
        return [([sig["literal"]] if sig.get("literal") else []) + _required_literals(sig) for sig in self.signatures]


def duration_ms(text: str) -> int:
    m = re.fullmatch(r"(\d+)(ms|s|m|h|d)", text)
    return int(m.group(1)) * UNIT_MS[m.group(2)]


@lru_cache(maxsize=1)
def _schema() -> dict:
    return json.loads(resources.files("flinkdoctor").joinpath("schemas/rule.schema.json").read_text("utf-8"))


def builtin_rules_dir() -> Path:
    return Path(str(resources.files("flinkdoctor").joinpath("rules")))


def load_rules(extra_dirs: list[str | Path] = (), builtin: bool = True) -> list[Rule]:
    """Load and check every rule; raise RuleError listing all problems with file:line."""
    dirs = ([builtin_rules_dir()] if builtin else []) + [Path(d) for d in extra_dirs]
    problems: list[str] = []
    rules: list[Rule] = []
    for directory in dirs:
        if not directory.is_dir():
            problems.append(f"{directory}: not a folder of rules")
            continue
        for path in sorted(directory.rglob("*.y*ml")):
            rule = _load_file(path, problems)
            if rule:
                rules.append(rule)
    seen: dict[str, str] = {}
    for rule in rules:
        if rule.id in seen:
            problems.append(f"{rule.path}:1: rule id {rule.id!r} is already defined in {seen[rule.id]}")
        seen[rule.id] = rule.path
    categories = {r.category for r in rules} | set(_schema()["properties"]["category"]["enum"])
    for rule in rules:
        for rel in rule.explains:
            if rel.rule and rel.rule not in seen:
                problems.append(f"{rule.path}:1: explains unknown rule {rel.rule!r}")
            if rel.category and rel.category not in categories:
                problems.append(f"{rule.path}:1: explains unknown category {rel.category!r}")
    if problems:
        raise RuleError("\n".join(problems))
    return rules


def _load_file(path: Path, problems: list[str]) -> Rule | None:
    text = path.read_text("utf-8")
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        problems.append(f"{path}:{mark.line + 1 if mark else 1}: invalid YAML: {getattr(err, 'problem', err)}")
        return None
    if not isinstance(data, dict):
        problems.append(f"{path}:1: a rule file holds one mapping")
        return None
    before = len(problems)
    for error in sorted(jsonschema.Draft202012Validator(_schema()).iter_errors(data), key=lambda e: list(e.path)):
        where = "/".join(str(p) for p in error.path) or "(top)"
        problems.append(f"{path}:{_line_of(node, list(error.path))}: {where}: {error.message}")
    if len(problems) > before:
        return None
    if data["id"] != path.stem:
        problems.append(f"{path}:{_line_of(node, ['id'])}: id {data['id']!r} differs from the file name")
    for i, sig in enumerate(data["match"]):
        for key in MATCH_FIELDS:
            if key in sig:
                try:
                    regex = python_regex(sig[key])
                except re.error as err:
                    problems.append(f"{path}:{_line_of(node, ['match', i, key])}: match/{i}/{key}: bad regex "
                                    f"{sig[key]!r}: {err}")
                    continue
                if regex.match(""):
                    problems.append(f"{path}:{_line_of(node, ['match', i, key])}: match/{i}/{key}: "
                                    f"{sig[key]!r} matches an empty message")
                for name in regex.groupindex:
                    if not re.fullmatch(r"[a-zA-Z][a-zA-Z0-9]*", name):
                        problems.append(f"{path}:{_line_of(node, ['match', i, key])}: capture {name!r}: Java "
                                        "group names are letters and digits only")
                    if name not in data.get("captures", {}):
                        problems.append(f"{path}:{_line_of(node, ['match', i, key])}: capture {name!r} is not "
                                        "declared under captures")
    for name in list(data.get("where", {})) + ([data["onset"]] if data.get("onset") else []):
        if name not in data.get("captures", {}):
            problems.append(f"{path}:1: {name!r} is used but not declared under captures")
    kinds = {"match" if "match" in c else "no_match" for c in data["cases"]}
    if data["cases"] and kinds != {"match", "no_match"} and not data.get("gap"):
        problems.append(f"{path}:{_line_of(node, ['cases'])}: cases need both a 'match' and a 'no_match' example")
    if not data["cases"] and not data.get("gap"):
        problems.append(f"{path}:1: a rule without cases must say why under 'gap'")
    if len(problems) > before:
        return None
    return Rule(
        id=data["id"], title=data["title"], category=data["category"], role=data["role"],
        signatures=data["match"], explanation=data["explanation"].strip(), references=data["references"],
        path=str(path), sources=data.get("sources", []), priority=data.get("priority", 50),
        confidence=data.get("confidence", 0.7), captures=data.get("captures", {}), where=data.get("where", {}),
        onset=data.get("onset"), fix=data.get("fix", []), cases=data["cases"], gap=data.get("gap"),
        versions=data.get("versions"),
        explains=[Relation(r.get("rule"), r.get("category"), r.get("scope", "any"),
                           duration_ms(r.get("before", "2m")), duration_ms(r.get("after", "10m")))
                  for r in data.get("explains", [])],
    )


def _line_of(node, path: list) -> int:
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


_META = set("[](){}*+?|^$.\\")


def _required_literal(sig: dict) -> str | None:
    """The longest run of plain characters that any match of the signature's regex must contain.

    Used as a cheap pre-filter before the regex runs. Gives up (None) on alternation or case-insensitivity.
    """
    runs = _required_literals(sig)
    # capitals mark the distinctive part of a Flink message (FAILED, OutOfMemoryError, SUSPENDED): prefer them
    # over longer runs of common words such as ") switched from "
    return max(runs, key=lambda run: len(run) + 3 * sum(ch.isupper() for ch in run)) if runs else None


def _required_literals(sig: dict) -> list[str]:
    """Every run of at least 4 plain characters, outside groups, of the signature's regexes."""
    found: list[str] = []
    for key in ("text", "message", "exception"):
        if key not in sig:
            continue
        regex = sig[key]
        if "(?i" in regex or _has_top_alternation(regex):
            continue
        run, runs, i, depth = "", [], 0, 0
        while i < len(regex):
            ch = regex[i]
            if ch == "\\" and i + 1 < len(regex):
                nxt = regex[i + 1]
                if nxt.isalnum():  # \d, \s, \b, ...: a class or an anchor, not a literal
                    runs.append(run); run = ""
                else:
                    run += nxt if depth == 0 else ""
                i += 2
                continue
            if ch in "*?{" or (ch == "+" and run):
                run = run[:-1]  # the previous character is optional or repeated
                runs.append(run); run = ""
                if ch == "{":
                    i = regex.index("}", i)
            elif ch in "([":
                runs.append(run); run = ""
                if ch == "[":
                    i = _class_end(regex, i)
                else:
                    depth += 1
                    if regex.startswith("(?<", i) and i + 3 < len(regex) and regex[i + 3].isalpha():
                        i = regex.index(">", i)
                    elif regex.startswith("(?:", i):
                        i += 2
            elif ch == ")":
                runs.append(run); run = ""
                depth -= 1
                if i + 1 < len(regex) and regex[i + 1] in "*?{":
                    pass
            elif ch in _META:
                runs.append(run); run = ""
            elif depth == 0:
                run += ch
            i += 1
        runs.append(run)
        found += [r for r in runs if len(r) >= 4 and r not in found]
    return found


def _class_end(regex: str, i: int) -> int:
    j = i + 1
    if j < len(regex) and regex[j] == "^":
        j += 1
    if j < len(regex) and regex[j] == "]":
        j += 1
    while j < len(regex) and regex[j] != "]":
        j += 2 if regex[j] == "\\" else 1
    return j


def _has_top_alternation(regex: str) -> bool:
    depth, i = 0, 0
    while i < len(regex):
        ch = regex[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "[":
            i = _class_end(regex, i) + 1
            continue
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "|" and depth == 0:
            return True
        i += 1
    return False
