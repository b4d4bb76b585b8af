"""The analytics' knowledge as frozen typed objects: the findings they add (knowledge/analytics-findings.yaml) and
configuration keys per version with the risky-setting checks (knowledge/config-keys.yaml). Validated at load
against schemas/analytics.schema.json, version specifiers and categories included, every problem at once."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import resources

from ..errors import RuleError
from ..knowledge.rulebook import Rule
from ..knowledge.validation import line_of, read_yaml, schema, schema_problems
from ..knowledge.versions import specifier
from ..knowledge.vocabulary import CATEGORIES, Severity

FINDINGS_FILE = "knowledge/analytics-findings.yaml"
CONFIG_FILE = "knowledge/config-keys.yaml"


@dataclass(frozen=True)
class Rename:
    old: str
    new: str
    since: str
    removed: str | None = None


@dataclass(frozen=True)
class Use:
    """The version-right way to set it: `key: value` (and `with`, a key that must come along) on `versions`."""

    key: str
    value: str
    versions: str | None = None
    with_key: str | None = None
    text: str | None = None


@dataclass(frozen=True)
class Check:
    id: str
    kind: str
    severity: Severity
    keys: tuple[str, ...]
    note: str
    use: tuple[Use, ...]
    versions: str | None = None
    values: tuple[str, ...] = ()
    dirs: tuple[str, ...] = ()
    ha: tuple[str, ...] = ()
    factor: float = 1.0


@dataclass(frozen=True)
class ConfigKnowledge:
    renames: tuple[Rename, ...]
    since: Mapping[str, str] = field(hash=False)
    defaults: Mapping[str, float] = field(hash=False)
    checks: tuple[Check, ...]


def _load(name: str, problems: list[str]):
    import jsonschema

    text = resources.files("flinkdoctor").joinpath(name).read_text("utf-8")
    data, node = read_yaml(name, text, problems)
    if data is not None:
        found = schema_problems(jsonschema.Draft202012Validator(schema("analytics")), data, node, name)
        problems += found
        if found:
            return None, node
    return data, node


@cache
def analytics_rules() -> dict[str, Rule]:
    """The analytics' findings as rules of role `context` (no signatures: the analytics find them)."""
    problems: list[str] = []
    data, node = _load(FINDINGS_FILE, problems)
    rules = {}
    for n, item in enumerate((data or {}).get("findings", [])):
        if item["category"] not in CATEGORIES:
            where = line_of(node, ["findings", n, "category"])
            problems.append(f"{FINDINGS_FILE}:{where}: unknown category {item['category']!r}")
        rules[item["id"]] = Rule(
            id=item["id"],
            title=item["title"],
            category=item["category"],
            role="context",
            signatures=(),
            explanation=" ".join(item["explanation"].split()),
            references=(),
            path=FINDINGS_FILE,
        )
    if problems:
        raise RuleError("\n".join(problems))
    return rules


@cache
def config_knowledge() -> ConfigKnowledge:
    problems: list[str] = []
    data, node = _load(CONFIG_FILE, problems)
    data = data or {}
    known = analytics_rules()
    checks = []
    for n, item in enumerate(data.get("checks", [])):
        where = f"{CONFIG_FILE}:{line_of(node, ['checks', n])}"
        if item["id"] not in known:
            problems.append(f"{where}: check {item['id']!r} has no finding in {FINDINGS_FILE}")
        specs = [item.get("versions")] + [use.get("versions") for use in item["use"]]
        for spec in filter(None, specs):
            try:
                specifier(spec)
            except ValueError as err:
                problems.append(f"{where}: {err}")
        checks.append(
            Check(
                id=item["id"],
                kind=item["kind"],
                severity=item["severity"],
                keys=tuple(item["keys"]),
                note=" ".join(item["note"].split()),
                use=tuple(
                    Use(u["key"], u["value"], u.get("versions"), u.get("with"), u.get("text")) for u in item["use"]
                ),
                versions=item.get("versions"),
                values=tuple(item.get("values", ())),
                dirs=tuple(item.get("dirs", ())),
                ha=tuple(item.get("ha", ())),
                factor=float(item.get("factor", 1.0)),
            )
        )
    if problems:
        raise RuleError("\n".join(problems))
    return ConfigKnowledge(
        renames=tuple(Rename(r["old"], r["new"], str(r["since"]), r.get("removed")) for r in data.get("renames", [])),
        since={s["key"]: str(s["since"]) for s in data.get("since", [])},
        defaults={k: float(v) for k, v in data.get("defaults", {}).items()},
        checks=tuple(checks),
    )
