"""Names from the REST API (TaskManager ids, hosts, log file names) made safe as one path part.

The JobManager decides these names, so they are hostile input: `../`, `/`, NUL, control characters, a leading dot
or a name of 10 000 characters must not leave the bundle folder or break a file system. A name that had to change
gets a short hash of the original, so two different names never land on one file.
"""

from __future__ import annotations

import hashlib
import re

UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
MAX_NAME = 120


def safe_name(name: object, fallback: str = "unnamed") -> str:
    """`name` as a file or folder name: [A-Za-z0-9._-] only, no leading dot, at most MAX_NAME characters."""
    text = str(name) if name is not None else ""
    cleaned = UNSAFE.sub("_", text).lstrip(".") or fallback
    if cleaned == text and len(text) <= MAX_NAME:
        return text
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{cleaned[: MAX_NAME - 9]}-{digest}"


def host_of(address: object) -> str:
    """The host in a TaskManager's RPC path (pekko.tcp://flink@host:port/user/rpc/...) or id (host:port-abc)."""
    text = str(address or "")
    m = re.search(r"@([^:/]+)", text) or re.match(r"([^:/]+):\d+", text)
    return m.group(1) if m else "unknown-host"
