"""The knowledge base: one YAML file per failure signature, validated at load, before Spark starts.

A bad rule file stops the run with `file:line: reason`, every problem at once (not only the first). The YAML is
checked against schemas/rule.schema.json, whose closed vocabularies come from vocabulary.py and layouts.yaml,
and then becomes frozen typed objects: the rest of flinkdoctor reads attributes, never YAML keys. The rule format
(fields, relation sets, fixes per version range) is described in rules/README.md.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import cast

from yaml import Node

from ..errors import RuleError
from ..jsondata import JSON, JSONObject
from ..runtime.userstate import cached, content_key, store
from .regexes import checked, parse, sre
from .validation import SchemaValidator, line_of, read_yaml, schema, schema_problems
from .versions import matches, specifier
from .vocabulary import ATTRIBUTIONS, CATEGORIES, LEVELS, ROLES, SCOPES, SOURCE_KINDS, UNITS, Attribution, Level, Role

MATCH_FIELDS = ("text", "message", "logger", "exception", "thread")
UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
MIN_LITERAL = 4  # shorter runs (": ", "at ") are in almost every event and would only cost time
RELATION_SETS = "relations.yaml"  # at the top of a folder of rules: named relation sets, not a rule


@dataclass(frozen=True)
class Signature:
    """One way a rule matches an event: every regex given must match its field (matcher.py)."""

    text: str | None = None  # the whole event, stack trace included
    message: str | None = None  # the header line's message
    logger: str | None = None
    exception: str | None = None  # any exception of the chain (the event's own and every Caused by)
    thread: str | None = None
    level: tuple[Level, ...] = ()  # one of these levels, when given
    literal: str | None = None  # a substring every match holds, when the regexes imply none

    def regexes(self) -> tuple[tuple[str, str], ...]:
        """(field, regex) of each regex this signature sets, in MATCH_FIELDS order."""
        return tuple((key, getattr(self, key)) for key in MATCH_FIELDS if getattr(self, key) is not None)


@dataclass(frozen=True)
class Capture:
    """A named group of the rule's regexes whose value the finding carries."""

    name: str
    unit: str | None = None


@dataclass(frozen=True)
class Bound:
    """A numeric condition on a capture: the rule fires only when the value lies within."""

    gte: float | None = None
    lte: float | None = None


@dataclass(frozen=True)
class Relation:
    """This rule's findings can explain those of `rule` (or of any rule in `category`) in the same `scope`, when
    the effect falls between `before_ms` before the cause's onset and `after_ms` after its log time."""

    rule: str | None
    category: str | None
    scope: str
    before_ms: int
    after_ms: int
    origin: str = field(default="", compare=False)  # file:line where the relation is written

    @property
    def target(self) -> tuple[str, str]:
        return ("rule", self.rule) if self.rule else ("category", self.category or "")


@dataclass(frozen=True)
class Fix:
    text: str  # may hold {capture} placeholders, filled from the findings
    config: Mapping[str, str] = field(default_factory=dict, hash=False)
    command: str | None = None
    aftermath: bool = False  # also shown when the rule is only a symptom in a chain (clean-up after the cause)
    versions: str | None = None

    def applies_to(self, version: str | None) -> bool:
        return matches(self.versions, version)


@dataclass(frozen=True)
class Case:
    """A real log excerpt the rule must match (`expect_match`) or must not (a near-miss)."""

    text: str
    expect_match: bool
    source: str  # where the excerpt was taken from
    kind: str | None = None  # the source kind to treat it as (default: the rule's first source, else ingest's)
    layout: str | None = None  # the layout to read it with (default: detected)
    line: int = field(default=0, compare=False)


@dataclass(frozen=True)
class Rule:
    id: str
    title: str
    category: str
    role: Role
    signatures: tuple[Signature, ...]
    explanation: str
    references: tuple[str, ...]
    path: str
    sources: tuple[str, ...] = ()
    priority: int = 50
    confidence: float = 0.7
    attribution: Attribution = "signature"
    captures: Mapping[str, Capture] = field(default_factory=dict, hash=False)
    where: Mapping[str, Bound] = field(default_factory=dict, hash=False)
    onset: str | None = None
    explains: tuple[Relation, ...] = ()
    fix: tuple[Fix, ...] = ()
    cases: tuple[Case, ...] = ()
    gap: str | None = None
    versions: str | None = None

    def applies_to(self, version: str | None) -> bool:
        """Does the rule hold for this Flink version (its `versions`)? An unknown version: yes."""
        return matches(self.versions, version)


def duration_ms(text: str) -> int:
    m = re.fullmatch(r"(\d+)(ms|s|m|h|d)", text)
    if not m:
        raise ValueError(f"not a duration: {text!r}")
    return int(m.group(1)) * UNIT_MS[m.group(2)]


def duration_text(ms: int) -> str:
    """The shortest duration text that duration_ms reads back as `ms` (600000 -> '10m')."""
    for unit, size in sorted(UNIT_MS.items(), key=lambda item: -item[1]):
        if ms % size == 0:
            return f"{ms // size}{unit}"
    return f"{ms}ms"


@lru_cache(maxsize=1)
def rule_schema() -> JSONObject:
    """The rule schema with its closed vocabularies filled in from their one home."""
    full = dict(schema("rule"))
    full["$defs"] = dict(full["$defs"])
    vocabularies = {
        "category": CATEGORIES,
        "role": ROLES,
        "sourceKind": SOURCE_KINDS,
        "level": LEVELS,
        "scope": SCOPES,
        "unit": UNITS,
        "attribution": ATTRIBUTIONS,
    }
    for name, values in vocabularies.items():
        full["$defs"][name] = {**full["$defs"][name], "enum": list(values)}
    return full


@lru_cache(maxsize=2)
def _validator(entry: str) -> SchemaValidator:
    """A validator of a rule file ('rule') or of a relations file ('relationSets'), built once."""
    import jsonschema

    full = rule_schema()
    if entry != "rule":
        full = {"$schema": full["$schema"], "$defs": full["$defs"], "$ref": f"#/$defs/{entry}"}
    validator: SchemaValidator = jsonschema.Draft202012Validator(full)  # jsonschema ships no types
    return validator


def relation_defaults() -> dict[str, str]:
    """scope / before / after of a relation that does not say, as the schema declares them."""
    properties = rule_schema()["$defs"]["relation"]["properties"]
    return {key: properties[key]["default"] for key in ("scope", "before", "after")}


def builtin_rules_dir() -> Path:
    return Path(str(resources.files("flinkdoctor").joinpath("knowledge/rules")))


def load_rules(extra_dirs: Sequence[str | Path] = (), builtin: bool = True) -> list[Rule]:
    """Load and check every rule; raise RuleError listing all problems with file:line.

    Rules that passed are kept in the user's cache (userstate.py) under a digest of the package and the rule
    folders, so an unchanged rulebook is not checked again on the next run."""
    dirs = ([builtin_rules_dir()] if builtin else []) + [Path(d) for d in extra_dirs]
    key = content_key(d.resolve() for d in dirs)
    if (kept := cached("rules", key)) is not None:
        return cast("list[Rule]", kept)  # what store() below kept under this key
    rules = _load(dirs)
    store("rules", key, rules)
    return rules


def _load(dirs: list[Path]) -> list[Rule]:
    problems: list[str] = []
    sets: dict[str, _RawSet] = {}
    files: list[Path] = []
    for directory in dirs:
        if not directory.is_dir():
            problems.append(f"{directory}: not a folder of rules")
            continue
        if (directory / RELATION_SETS).is_file():
            _load_sets(directory / RELATION_SETS, sets, problems)
        files += [p for p in sorted(directory.rglob("*.y*ml")) if p != directory / RELATION_SETS]
    expander = _Expander(sets, problems)
    rules = [rule for rule in (_load_file(path, expander, problems) for path in files) if rule]
    seen: dict[str, str] = {}
    for rule in rules:
        if rule.id in seen:
            problems.append(f"{rule.path}:1: rule id {rule.id!r} is already defined in {seen[rule.id]}")
        seen[rule.id] = rule.path
    for rule in rules:
        for rel in rule.explains:
            if rel.rule and rel.rule not in seen:
                problems.append(f"{rel.origin}: {rule.id} explains unknown rule {rel.rule!r}")
    if problems:
        # a bad set member is reported once, not per user
        raise RuleError("invalid rules:\n" + "\n".join(dict.fromkeys(problems)))
    return rules


# -- relation sets -----------------------------------------------------------------------------------------------


@dataclass
class _RawSet:
    items: list[JSON]  # explains items as written (relations, set names, set references)
    path: Path
    node: Node  # the YAML node of the set, for line numbers


def _load_sets(path: Path, sets: dict[str, _RawSet], problems: list[str]) -> None:
    data, node = read_yaml(path, path.read_text("utf-8"), problems)
    if node is None:
        return
    found = schema_problems(_validator("relationSets"), data, node, path)
    if found:
        problems += found
        return
    for name, body in data.items():
        if name in sets:
            problems.append(
                f"{path}:{line_of(node, [name])}: relation set {name!r} is already defined in {sets[name].path}"
            )
        sets[name] = _RawSet(body["relations"], path, node)


class _Expander:
    """Turns an `explains` list as written (relations, names of relation sets, set references with overrides)
    into the relations it means. A relation written in the rule replaces a set member with the same target."""

    def __init__(self, sets: dict[str, _RawSet], problems: list[str]):
        self.sets, self.problems = sets, problems
        self.defaults = relation_defaults()

    def explains(self, items: list[JSON], path: Path, node: Node) -> tuple[Relation, ...]:
        expanded = self._items(items, path, node, ["explains"], {}, ())
        own = {rel.target for rel, from_set in expanded if not from_set}
        kept = [rel for rel, from_set in expanded if not (from_set and rel.target in own)]
        targets: dict[tuple[str, str], Relation] = {}
        for rel in kept:
            if rel.target in targets:
                self.problems.append(
                    f"{rel.origin}: explains {rel.target[0]} {rel.target[1]!r} twice (also at "
                    f"{targets[rel.target].origin})"
                )
            targets[rel.target] = rel
        return tuple(kept)

    def _items(
        self,
        items: list[JSON],
        path: Path,
        node: Node,
        where: list[str | int],
        override: JSONObject,
        chain: tuple[str, ...],
    ) -> list[tuple[Relation, bool]]:
        out: list[tuple[Relation, bool]] = []
        for i, item in enumerate(items):
            origin = f"{path}:{line_of(node, [*where, i])}"
            if isinstance(item, dict) and "set" not in item:
                values = {**self.defaults, **item, **override}
                out.append(
                    (
                        Relation(
                            item.get("rule"),
                            item.get("category"),
                            values["scope"],
                            duration_ms(values["before"]),
                            duration_ms(values["after"]),
                            origin,
                        ),
                        bool(chain),
                    )
                )
                continue
            name = item if isinstance(item, str) else item["set"]
            if name in chain:
                self.problems.append(f"{origin}: relation set {name!r} includes itself ({' -> '.join(chain)})")
            elif name not in self.sets:
                self.problems.append(
                    f"{origin}: unknown relation set {name!r} (sets: {', '.join(sorted(self.sets)) or 'none'})"
                )
            else:
                inner = {k: v for k, v in item.items() if k != "set"} if isinstance(item, dict) else {}
                raw = self.sets[name]
                out += self._items(
                    raw.items, raw.path, raw.node, [name, "relations"], {**inner, **override}, (*chain, name)
                )
        return out


# -- one rule file ------------------------------------------------------------------------------------------------


def _load_file(path: Path, expander: _Expander, problems: list[str]) -> Rule | None:
    data, node = read_yaml(path, path.read_text("utf-8"), problems)
    if node is None:
        return None
    if not isinstance(data, dict):
        problems.append(f"{path}:1: a rule file holds one mapping")
        return None
    before = len(problems)
    problems += schema_problems(_validator("rule"), data, node, path)
    if len(problems) > before:
        return None
    if data["id"] != path.stem:
        problems.append(f"{path}:{line_of(node, ['id'])}: id {data['id']!r} differs from the file name")
    _check_regexes(path, node, data, problems)
    if len(problems) == before:
        _check_literals(path, node, data, problems)
    _check_versions(path, node, data, problems)
    for name in list(data.get("where", {})) + ([data["onset"]] if data.get("onset") else []):
        if name not in data.get("captures", {}):
            problems.append(f"{path}:1: {name!r} is used but not declared under captures")
    kinds = {"match" if "match" in c else "no_match" for c in data["cases"]}
    if data["cases"] and kinds != {"match", "no_match"} and not data.get("gap"):
        problems.append(f"{path}:{line_of(node, ['cases'])}: cases need both a 'match' and a 'no_match' example")
    if not data["cases"] and not data.get("gap"):
        problems.append(f"{path}:1: a rule without cases must say why under 'gap'")
    explains = expander.explains(data.get("explains", []), path, node)
    if len(problems) > before:
        return None
    top = rule_schema()["properties"]
    return Rule(
        id=data["id"],
        title=data["title"],
        category=data["category"],
        role=data["role"],
        signatures=tuple(Signature(**{**sig, "level": tuple(sig.get("level", ()))}) for sig in data["match"]),
        explanation=data["explanation"].strip(),
        references=tuple(data["references"]),
        path=str(path),
        sources=tuple(data.get("sources", ())),
        priority=data.get("priority", top["priority"]["default"]),
        confidence=data.get("confidence", top["confidence"]["default"]),
        attribution=data.get("attribution", top["attribution"]["default"]),
        captures={name: Capture(name, spec.get("unit")) for name, spec in data.get("captures", {}).items()},
        where={name: Bound(b.get("gte"), b.get("lte")) for name, b in data.get("where", {}).items()},
        onset=data.get("onset"),
        explains=explains,
        fix=_fixes(data.get("fix", [])),
        cases=tuple(
            Case(
                c.get("match", c.get("no_match")),
                "match" in c,
                c["source"],
                c.get("kind"),
                c.get("layout"),
                line_of(node, ["cases", i]),
            )
            for i, c in enumerate(data["cases"])
        ),
        gap=data.get("gap"),
        versions=data.get("versions"),
    )


def _fixes(items: list[JSONObject]) -> tuple[Fix, ...]:
    """The fixes as the report lists them: a fix with config_by_version is one fix per version range."""
    fixes = []
    for item in items:
        common = {k: v for k, v in item.items() if k != "config_by_version"}
        for versions, config in item.get("config_by_version", {None: None}).items():
            per_range = {"config": config, "versions": versions} if versions else {}
            fixes.append(Fix(**{**common, **per_range}))
    return tuple(fixes)


def _check_regexes(path: Path, node: Node, data: JSONObject, problems: list[str]) -> None:
    for i, sig in enumerate(data["match"]):
        for key in MATCH_FIELDS:
            if key not in sig:
                continue
            where = f"{path}:{line_of(node, ['match', i, key])}: match/{i}/{key}"
            regex, problem = checked(sig[key])
            if regex is None:
                problems.append(f"{where}: {problem}")
                continue
            if regex.match(""):
                problems.append(f"{where}: {sig[key]!r} matches an empty message")
            if problem:
                problems.append(
                    f"{where}: {problem}; make the inner quantifier possessive (\\w++) or the repeated part unambiguous"
                )
            for name in regex.groupindex:
                if not re.fullmatch(r"[a-zA-Z][a-zA-Z0-9]*", name):
                    problems.append(f"{where}: capture {name!r}: Java group names are letters and digits only")
                if name not in data.get("captures", {}):
                    problems.append(f"{where}: capture {name!r} is not declared under captures")


def _check_literals(path: Path, node: Node, data: JSONObject, problems: list[str]) -> None:
    """Each signature needs a plain substring that every match holds: the scan reads only the events that hold
    one of each signature's (prefilter.py), so a signature without one would never match."""
    for i, sig in enumerate(data["match"]):
        if not required_literals(Signature(**{**sig, "level": ()})):
            problems.append(
                f"{path}:{line_of(node, ['match', i])}: match/{i}: no plain text of 4 or more characters that every "
                "match holds (none outside a group, an alternative or a case-insensitive regex): add 'literal:'"
            )


def _check_versions(path: Path, node: Node, data: JSONObject, problems: list[str]) -> None:
    """Every version specifier parses (a malformed one would silently match nothing or everything)."""
    specs: list[tuple[list[str | int], str]] = [(["versions"], data["versions"])] if "versions" in data else []
    for i, fix in enumerate(data.get("fix", [])):
        if "versions" in fix:
            specs.append((["fix", i, "versions"], fix["versions"]))
        specs += [(["fix", i, "config_by_version", spec], spec) for spec in fix.get("config_by_version", {})]
    for where, spec in specs:
        try:
            specifier(spec)
        except ValueError as err:
            problems.append(f"{path}:{line_of(node, where)}: {'/'.join(map(str, where))}: {err}")


def required_literals(sig: Signature) -> list[str]:
    """Every literal a match of the signature must contain: its own `literal`, and each run of at least
    MIN_LITERAL plain characters at the top level of its text, message and exception regexes.

    Read from the parse tree Python's `re` builds: a run is a sequence of literal characters that is not inside
    a group, an alternative, a class or a quantifier, so every match holds it. A case-insensitive regex gives
    none (its literal could appear in any case). When unsure, fewer literals: the prefilter only skips events.
    """
    found = [sig.literal] if sig.literal else []
    for pattern in (sig.text, sig.message, sig.exception):
        if pattern is None:
            continue
        tree = parse(pattern)
        if tree.state.flags & sre.SRE_FLAG_IGNORECASE:
            continue
        run: list[str] = []
        for op, av in [*tree, (None, None)]:  # a sentinel ends the last run
            if op is sre.LITERAL:
                run.append(chr(av))
                continue
            if len(run) >= MIN_LITERAL and "".join(run) not in found:
                found.append("".join(run))
            run = []
    return found
