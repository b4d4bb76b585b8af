"""Which Flink version the bundle shows, and which rules and fixes apply to it.

Specifiers such as '>=1.13,<1.17' are PEP 440 specifier sets (packaging), checked when the rule loads. A Flink
version is read leniently: its leading release numbers count ('1.20+' from config keys is 1.20, '1.20-SNAPSHOT'
is 1.20), and a version that shows none is unknown. An unknown version satisfies every specifier, so the report
shows every fix rather than none.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

from ..jsondata import JSON

# Configuration keys that only exist from a version on: their presence in the user's config dates it.
KEYS_SINCE = (
    ("execution.checkpointing.dir", "1.20"),
    ("execution.checkpointing.storage", "1.20"),
    ("state.backend.type", "1.17"),
    ("high-availability.type", "1.17"),
    ("high-availability.zookeeper.client.tolerate-suspended-connections", "1.14"),
    ("state.checkpoint-storage", "1.13"),
    ("taskmanager.memory.process.size", "1.10"),
)
RELEASE = re.compile(r"\s*v?(\d+(?:\.\d+)*)")


def parse(version: str | None) -> Version | None:
    """The release part of a Flink version string, or None when it shows none ('banana', '', None)."""
    m = RELEASE.match(str(version)) if version else None
    return Version(m.group(1)) if m else None


def specifier(spec: str) -> SpecifierSet:
    """A specifier set such as '>=1.13,<1.17'; raises ValueError (with the reason) when it is malformed."""
    try:
        parsed = SpecifierSet(spec)
    except InvalidSpecifier as err:
        raise ValueError(f"invalid version specifier {spec!r}: {err}") from None
    if not len(parsed):
        raise ValueError(f"empty version specifier {spec!r}")
    return parsed


def matches(spec: str | None, version: str | None) -> bool:
    """Does `version` satisfy a spec such as '>=1.13,<1.17'? An unknown version satisfies every spec.

    A bound covers the releases below its own precision, as a Flink user means it: '<=1.17' and '>1.17' read
    1.17.3 as 1.17 (plain PEP 440 would put 1.17.3 above 1.17).
    """
    have = parse(version)
    if not spec or have is None:
        return True
    for bound in specifier(spec):
        width = len(Version(bound.version.rstrip(".*")).release) if bound.operator in ("<=", ">") else 0
        value = Version(".".join(map(str, have.release[:width]))) if width else have
        if not bound.contains(value, prereleases=True):
            return False
    return True


def detect(
    version_captures: list[str], configs: Sequence[Mapping[str, object]], rest_documents: Sequence[JSON]
) -> tuple[str | None, str]:
    """(version, how it was found). Start-up lines and jar names first, then REST JSON, then config keys."""
    if version_captures:
        return Counter(version_captures).most_common(1)[0][0], "log"
    for document in rest_documents:
        found = _find_key(document, "flink-version")
        if found:
            return str(found), "rest"
    best: str | None = None
    for config in configs:
        for key, since in KEYS_SINCE:
            if key in config and (best is None or Version(since) > Version(best)):
                best = since
    if best:
        return f"{best}+", "config"
    return None, "unknown"


def _find_key(document: JSON, key: str) -> JSON:
    """The value under `key` in a parsed REST document, searched depth first past empty ones; None when absent."""
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
