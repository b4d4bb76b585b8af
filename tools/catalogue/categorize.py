"""Categories by the curated rules of categories.yaml: the first rule whose conditions hold, with its reason."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from flinkdoctor.knowledge.vocabulary import CATEGORIES

RULES = Path(__file__).with_name("categories.yaml")
CONDITIONS = ("wording", "class", "package", "component", "level")


@dataclass(frozen=True)
class Rule:
    category: str
    reason: str
    wording: re.Pattern | None
    cls: re.Pattern | None
    packages: tuple[str, ...]
    components: frozenset[str]
    levels: frozenset[str]


def load_rules(path: Path = RULES) -> list[Rule]:
    """Read and check the rules: known categories, valid regexes, only known conditions."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    rules = []
    for i, item in enumerate(data["rules"]):
        unknown = set(item) - {*CONDITIONS, "category", "reason"}
        if unknown or item.get("category") not in CATEGORIES or not item.get("reason"):
            raise ValueError(f"{path}: rule {i + 1}: unknown keys {sorted(unknown)} or bad category/reason: {item}")
        if not set(item) & set(CONDITIONS):
            raise ValueError(f"{path}: rule {i + 1} has no condition")

        rules.append(
            Rule(
                category=item["category"],
                reason=item["reason"],
                wording=re.compile(item["wording"]) if "wording" in item else None,
                cls=re.compile(item["class"]) if "class" in item else None,
                packages=_listed(item, "package"),
                components=frozenset(_listed(item, "component")),
                levels=frozenset(_listed(item, "level")),
            )
        )
    return rules


def _listed(item: dict, key: str) -> tuple[str, ...]:
    value = item.get(key, ())
    return (value,) if isinstance(value, str) else tuple(value)


def categorize(rules: list[Rule], kind: str, text: str, cls: str | None, origin: str, component: str,
               level: str | None) -> tuple[str, str]:  # fmt: skip
    """(category, reason) of one entry."""
    subject = text if kind == "exception" else origin
    for rule in rules:
        said = rule.wording.search(text) if rule.wording is not None and kind == "message" else None
        if rule.wording is not None and said is None:
            continue
        if rule.cls is not None and not (cls and rule.cls.search(cls)):
            continue
        prefix = next((p for p in rule.packages if subject.startswith(p)), None)
        if rule.packages and prefix is None:
            continue
        if rule.components and component not in rule.components:
            continue
        if rule.levels and level not in rule.levels:
            continue
        return rule.category, f"{_basis(rule, said, cls, prefix, component)}: {rule.reason}"
    return "other", "no rule: generic"


def _basis(rule: Rule, said: re.Match | None, cls: str | None, prefix: str | None, component: str) -> str:
    """What made the rule hold, in the entry's own terms: the words, the class, the package or the component."""
    if said is not None:
        return f"wording '{said.group()[:50]}'"
    if rule.cls is not None and cls:
        return f"class {cls.rsplit('.', 1)[-1]}"
    if prefix is not None:
        return f"package {prefix.rstrip('.')}"
    return f"component {component}"
