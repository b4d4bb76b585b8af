"""What flinkdoctor keeps between runs for this user: the warm server's state file and the checked rulebook.

One folder: $FLINKDOCTOR_STATE_DIR, else $XDG_STATE_HOME, else ~/.cache, then flinkdoctor/. The rulebook cache
saves the half second that checking every rule file against its schema costs each run; it is keyed by the bytes
of the package and of the rule folders, so any change to code, knowledge or rules is a miss. A cache that cannot
be read or written is only a miss.
"""

from __future__ import annotations

import gc
import hashlib
import os
import pickle
import stat
import tempfile
from collections.abc import Iterable
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
SOURCES = ("*.py", "*.yaml", "*.yml", "*.json")


def state_dir() -> Path:
    base = os.environ.get("FLINKDOCTOR_STATE_DIR") or os.environ.get("XDG_STATE_HOME") or Path.home() / ".cache"
    return Path(base) / "flinkdoctor"


def content_key(folders: Iterable[Path]) -> str:
    """A digest of every source file of the package and of every file under `folders` (path and bytes)."""
    digest = hashlib.sha256()
    for folder in (PACKAGE, *folders):
        digest.update(b"folder\0" + str(folder).encode("utf-8", "surrogateescape") + b"\0")
        paths = sorted({p for pattern in SOURCES for p in folder.rglob(pattern) if "__pycache__" not in p.parts})
        for path in paths:
            digest.update(str(path).encode("utf-8", "surrogateescape") + b"\0")
            try:
                digest.update(path.read_bytes())
            except OSError:
                digest.update(b"\0unreadable")
    return digest.hexdigest()[:32]


def private(info: os.stat_result) -> bool:
    """A file this user owns and no one else can write: the only kind flinkdoctor loads code or data from."""
    return info.st_uid == os.getuid() and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def stored_path(name: str, key: str) -> Path | None:
    """The file `store` keeps `name` for `key` in, if there is one cached() would read."""
    path = state_dir() / f"{name}-{key}.pickle"
    try:
        return path if private(path.stat()) else None
    except OSError:
        return None


def cached(name: str, key: str) -> object:
    """The value stored under `name` for `key`, or None. Only a file this user owns and only this user can write
    is read: it is a pickle. The caller knows what it stored under `name`."""
    return read_stored(state_dir() / f"{name}-{key}.pickle")


def read_stored(path: Path) -> object:
    """What `store` kept in the file at `path`, or None (cached: only a private file is read). Read with the
    cycle collector paused: the tens of thousands of tuples of the catalogue's index (read by every Spark worker)
    started its passes over them, a third of the read."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        if not private(path.stat()):
            return None
        with open(path, "rb") as handle:
            return pickle.load(handle)
    except Exception:  # noqa: BLE001 - any unreadable cache (missing, truncated, from another version) is a miss
        return None
    finally:
        if enabled:
            gc.enable()


def store(name: str, key: str, value: object) -> None:
    """Keep `value` under `name` for `key`, and remove this name's entries for other keys (ours: same pattern)."""
    folder = state_dir()
    temporary = None
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("wb", dir=folder, prefix=f"_{name}-", suffix=".tmp", delete=False) as out:
            temporary = Path(out.name)
            pickle.dump(value, out, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(temporary, folder / f"{name}-{key}.pickle")
        temporary = None
        for old in folder.glob(f"{name}-*.pickle"):
            if old.name != f"{name}-{key}.pickle":
                old.unlink(missing_ok=True)
    except (OSError, pickle.PicklingError, TypeError, AttributeError):
        pass
    finally:
        if temporary is not None:
            temporary.unlink(missing_ok=True)
