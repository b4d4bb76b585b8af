"""Which Flink version the bundle shows, and which fixes apply to it."""
from __future__ import annotations

import re
from collections import Counter

# Configuration keys that only exist from a version on: their presence in the user's config dates it.
KEYS_SINCE = (
    ("execution.checkpointing.dir", "1.20"), ("execution.checkpointing.storage", "1.20"),
    ("state.backend.type", "1.17"), ("high-availability.type", "1.17"),
    ("high-availability.zookeeper.client.tolerate-suspended-connections", "1.14"),
    ("state.checkpoint-storage", "1.13"), ("taskmanager.memory.process.size", "1.10"),
)


def parse(version: str | None) -> tuple[int, ...] | None:
    if not version:
        return None
    m = re.match(r"(\d+)\.(\d+)(?:\.(\d+))?", str(version))
    return tuple(int(p) for p in m.groups() if p is not None) if m else None


def matches(spec: str | None, version: str | None) -> bool:
    """Does `version` satisfy a spec such as '>=1.13,<1.17'? An unknown version satisfies every spec."""
    if not spec or not version:
        return True
    have = parse(version)
    for part in spec.split(","):
        m = re.match(r"(<=|>=|<|>)(.+)", part.strip())
        op, bound = m.group(1), parse(m.group(2))
        width = len(bound)
        value = have[:width] + (0,) * (width - len(have[:width]))
        ok = {"<": value < bound, "<=": value <= bound, ">": value > bound, ">=": value >= bound}[op]
        if not ok:
            return False
    return True


def detect(version_captures: list[str], configs: list[dict], rest_documents: list[object]) -> tuple[str | None, str]:
    """(version, how it was found). Start-up lines and jar names first, then REST JSON, then config keys."""
    if version_captures:
        return Counter(version_captures).most_common(1)[0][0], "log"
    for document in rest_documents:
        found = _find_key(document, "flink-version")
        if found:
            return str(found), "rest"
    best = None
    for config in configs:
        for key, since in KEYS_SINCE:
            if key in config and (best is None or parse(since) > parse(best)):
                best = since
    if best:
        return f"{best}+", "config"
    return None, "unknown"


def _find_key(document, key):
    if isinstance(document, dict):
        if key in document:
            return document[key]
        for value in document.values():
            found = _find_key(value, key)
            if found:
                return found
    elif isinstance(document, list):
        for value in document:
            found = _find_key(value, key)
            if found:
                return found
    return None
