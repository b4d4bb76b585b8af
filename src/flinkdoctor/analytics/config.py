"""The effective configuration and its audit: what the job ran with, and which settings are risky on its version.

Flink applies its configuration in layers, and so does this: the configuration file(s), then the "Loading
configuration property" lines the processes logged at start-up (what they actually read, dynamic properties
included), then the REST answers (the JobManager's configuration, the job's own checkpoint settings, which code
may have set). A later layer wins; the earlier values stay visible as `overridden`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime

from ..knowledge.versions import matches, parse
from ..knowledge.vocabulary import Severity
from ..safety.masking import mask_value
from ..sources.ingest import Manifest
from .knowledge import Check, ConfigKnowledge, Use
from .metrics import Measure
from .model import ConfigAudit, ConfigSetting

# the job's checkpoint settings as REST /jobs/<id>/checkpoints/config names them -> the configuration keys
REST_CHECKPOINT_KEYS = {
    "interval": "execution.checkpointing.interval",
    "timeout": "execution.checkpointing.timeout",
    "min_pause": "execution.checkpointing.min-pause",
    "max_concurrent": "execution.checkpointing.max-concurrent-checkpoints",
    "tolerable_failed_checkpoints": "execution.checkpointing.tolerable-failed-checkpoints",
}
NO_CONFIG = (
    "No configuration in the input: add flink-conf.yaml / config.yaml, the JobManager log from its start (the "
    "'Loading configuration property' lines) or REST /jobmanager/config and /jobs/<id>/checkpoints/config."
)
SEVERITY_ORDER = {"critical": 0, "warning": 1, "info": 2, None: 3}
DURATION = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*")
UNITS_MS = {
    "": 1, "ms": 1, "milli": 1, "millis": 1, "millisecond": 1, "milliseconds": 1,
    "s": 1000, "sec": 1000, "secs": 1000, "second": 1000, "seconds": 1000,
    "m": 60_000, "min": 60_000, "mins": 60_000, "minute": 60_000, "minutes": 60_000,
    "h": 3_600_000, "hour": 3_600_000, "hours": 3_600_000, "d": 86_400_000, "day": 86_400_000, "days": 86_400_000,
}  # fmt: skip


def duration_ms(value: str | None) -> float | None:
    """A Flink duration ('10 s', '600000', '1 min', '3s') in milliseconds; None when it is not one."""
    m = DURATION.fullmatch(str(value)) if value is not None else None
    if not m or m.group(2).lower() not in UNITS_MS:
        return None
    return float(m.group(1)) * UNITS_MS[m.group(2).lower()]


@dataclass
class Assignment:
    """One place that set a key: a config file, a log line, a REST document."""

    key: str
    value: str
    where: str  # "flink-conf.yaml", "jobmanager.log:40", "REST job-checkpoints-config.json"
    sid: int | None = None  # a log line: its source and line, so a finding can show it as evidence
    line: int | None = None
    time: datetime | None = None
    host: str | None = None
    text: str | None = None


@dataclass
class Effective:
    """Every key's assignments in the order Flink applies them; the last one is the effective value."""

    assignments: dict[str, list[Assignment]] = field(default_factory=dict)

    def add(self, item: Assignment) -> None:
        self.assignments.setdefault(item.key, []).append(item)

    def get(self, key: str) -> Assignment | None:
        found = self.assignments.get(key)
        return found[-1] if found else None

    def first(self, keys) -> Assignment | None:
        for key in keys:
            if key in self.assignments:
                return self.get(key)
        return None


def effective_config(manifest: Manifest, measures: list[Measure], paths: dict[int, str]) -> Effective:
    """The configuration in the order Flink applies it: files, then start-up lines, then REST."""
    result = Effective()
    for source in manifest.sources:
        if source.kind == "flink-config" and isinstance(source.document, dict):
            for key, value in source.document.items():
                result.add(Assignment(str(key), _text(value), source.path))
    lines = sorted(
        (m for m in measures if m.measures == "config-property"), key=lambda m: (m.time or datetime.min, m.sid, m.line)
    )
    seen: set[tuple[str, str]] = set()
    for m in lines:  # every process logs the same file: one assignment per distinct key and value
        key, value = m.captures.get("key", ""), m.captures.get("value", "").strip()
        if key and (key, value) not in seen:
            seen.add((key, value))
            result.add(Assignment(key, value, f"{paths[m.sid]}:{m.line}", m.sid, m.line, m.time, m.host, m.text))
    for source in manifest.sources:
        if source.kind == "flink-rest-json" and not source.derived:
            _rest_config(source.document, f"REST {source.path}", result)
    return result


def _rest_config(document, where: str, result: Effective) -> None:
    if isinstance(document, list) and all(isinstance(i, dict) and "key" in i for i in document):
        for item in document:  # /jobmanager/config
            result.add(Assignment(str(item["key"]), _text(item.get("value")), where))
    elif isinstance(document, dict) and {"interval", "timeout"} <= set(document):
        for name, key in REST_CHECKPOINT_KEYS.items():  # /jobs/<id>/checkpoints/config: the job's own
            if isinstance(document.get(name), (int, float)) and not isinstance(document.get(name), bool):
                result.add(Assignment(key, str(document[name]), where))


def _text(value) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    return "" if value is None else str(value)


@dataclass
class Risk:
    """A risky setting: the check, the assignment it is about (None: the key is not set), and the advice."""

    check_id: str
    severity: Severity
    key: str
    note: str
    suggested: str | None
    assignment: Assignment | None


def audit(
    effective: Effective,
    version: str | None,
    knowledge: ConfigKnowledge,
    checkpointing: bool,
    seen: dict[str, Assignment] | None = None,
) -> tuple[ConfigAudit, list[Risk]]:
    """The effective settings, with the risky ones flagged. `checkpointing`: the job checkpoints at all; `seen`:
    what the logs show the job doing, by what it measures (a chk-N file on a file system, the memory backend)."""
    seen = seen or {}
    risks = [
        risk for check in knowledge.checks for risk in _check(check, effective, version, knowledge, checkpointing, seen)
    ]
    risks += _version_keys(effective, version, knowledge)
    return build_audit(effective, version, risks), risks


def build_audit(effective: Effective, version: str | None, risks: list[Risk]) -> ConfigAudit:
    by_key: dict[str, list[Risk]] = {}
    for risk in risks:
        by_key.setdefault(risk.key, []).append(risk)
    settings = []
    for key in sorted(set(effective.assignments) | set(by_key)):
        current = effective.get(key)
        flagged = sorted(by_key.get(key, []), key=lambda r: SEVERITY_ORDER[r.severity])
        overridden = [
            f"{a.where} = {mask_value(key, a.value)}"
            for a in effective.assignments.get(key, [])[:-1]
            if current is None or a.value != current.value
        ]
        settings.append(
            ConfigSetting(
                key=key,
                value=(mask_value(key, current.value) or "") if current else "",
                source=current.where if current else "not set (default)",
                overridden=overridden,
                severity=flagged[0].severity if flagged else None,
                note=" ".join(r.note for r in flagged),
                suggested_key=next((r.suggested for r in flagged if r.suggested), None),
                rule=flagged[0].check_id if flagged else None,
            )
        )
    settings.sort(key=lambda s: (SEVERITY_ORDER[s.severity], s.key))
    missing = [] if effective.assignments else [NO_CONFIG]
    return ConfigAudit(version=version, settings=settings, missing=missing)


def _uses(check: Check, version: str | None) -> list[Use]:
    return [use for use in check.use if matches(use.versions, version)]


def _advice(check: Check, version: str | None) -> tuple[str, str | None]:
    """The sentence that says what to set on this version, and the key (None when several versions apply)."""
    uses = _uses(check, version)
    parts = []
    for use in uses:
        setting = use.text or f"set {use.key}: {use.value}" + (f" with {use.with_key}" if use.with_key else "")
        parts.append(f"{setting} (Flink {use.versions})" if use.versions and len(uses) > 1 else setting)
    keys = {use.key for use in uses}
    return ("; or ".join(parts) + "." if parts else ""), (keys.pop() if len(keys) == 1 else None)


def _check(
    check: Check,
    effective: Effective,
    version: str | None,
    knowledge: ConfigKnowledge,
    checkpointing: bool,
    seen: dict[str, Assignment],
) -> list[Risk]:
    if not matches(check.versions, version):
        return []
    advice, suggested = _advice(check, version)
    found = effective.first(check.keys)
    flagged: Assignment | None = found
    if found is None and not effective.assignments:
        return []  # no configuration in the input at all: an unset key cannot be told from an unseen one
    if check.kind == "state-in-jobmanager-memory":
        has_dir = any(effective.get(key) for key in check.dirs)  # a directory alone selects file storage (1.13+)
        in_memory = found.value.strip() in check.values if found else not has_dir
        on_files, in_heap = seen.get("checkpoint-storage-path"), seen.get("memory-checkpoint-storage")
        if not in_memory or not (checkpointing or found) or (on_files and not in_heap):
            return []  # checkpoint files on a file system: the job set its backend in code
        if in_heap:
            advice = f"The logs show it at work: {in_heap.value} ({in_heap.where}). " + advice
            flagged = in_heap
    elif check.kind == "zero-tolerance":
        if not checkpointing or (found and found.value.strip() not in ("0", "")):
            return []
    elif check.kind == "raised-above-default":
        value = duration_ms(found.value) if found else None
        default = knowledge.defaults.get(found.key) if found else None
        if value is None or not default or value < check.factor * default:
            return []
        advice = f"Default {default / 1000:g} s, set {value / 1000:g} s. " + advice
    elif check.kind == "zookeeper-suspended":
        ha = effective.first(check.ha)
        if not ha or "zookeeper" not in ha.value.lower() or (found and found.value.strip().lower() == "true"):
            return []
        flagged = found or ha
    key = found.key if found else _key_for(check, suggested)
    return [Risk(check.id, check.severity, key, f"{check.note} {advice}".strip(), suggested, flagged)]


def _key_for(check: Check, suggested: str | None) -> str:
    return suggested or check.keys[0]


def _version_keys(effective: Effective, version: str | None, knowledge: ConfigKnowledge) -> list[Risk]:
    """Keys that are not this version's: a 1.x key on 2.x, a renamed or removed key, a key newer than the version."""
    have = parse(version)
    if have is None:
        return []
    risks = []
    renamed = {r.old: r for r in knowledge.renames}
    for key in effective.assignments:
        assignment = effective.get(key)
        rename = renamed.get(key)
        if rename and parse(rename.removed) and have >= parse(rename.removed):  # type: ignore[operator]
            note = f"{key} was removed in Flink {rename.removed}: it has no effect on {version}. Use {rename.new}."
            risks.append(Risk("config-key-of-other-version", "warning", key, note, rename.new, assignment))
        elif rename and have >= parse(rename.since):  # type: ignore[operator]
            major2 = have.release[0] >= 2
            note = (
                f"{key} is a Flink 1.x key; on {version} the key is {rename.new}"
                + (" (the old name is at most a deprecated fallback, and gone for many options)." if major2 else ".")
                if major2
                else f"{key} is deprecated since Flink {rename.since}; use {rename.new}."
            )
            severity: Severity = "warning" if major2 else "info"
            risks.append(Risk("config-key-of-other-version", severity, key, note, rename.new, assignment))
        elif key in knowledge.since and have < parse(knowledge.since[key]):  # type: ignore[operator]
            older = next((r.old for r in knowledge.renames if r.new == key), None)
            note = f"{key} exists only from Flink {knowledge.since[key]}: {version} ignores it" + (
                f"; use {older}." if older else "."
            )
            risks.append(Risk("config-key-of-other-version", "warning", key, note, older, assignment))
    return risks
