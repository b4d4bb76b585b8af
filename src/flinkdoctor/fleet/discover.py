"""Discover: every entry directly under a root is one job's bundle (a folder or an archive); its content hash
says whether the lake already holds it."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError


@dataclass(frozen=True)
class Bundle:
    name: str  # the entry's name under its root: how a person knows the job
    path: Path
    digest: str | None  # sha256 of the relative paths and bytes of its files; None when unreadable
    error: str | None = None

    @property
    def bundle_id(self) -> str:
        return (self.digest or hashlib.sha256(str(self.path).encode()).hexdigest())[:20]


def discover(roots: list[str | Path]) -> list[Bundle]:
    """The bundles under the roots, in name order; a root that does not exist is a usage error, an entry that
    cannot be read is a bundle with its reason (recorded, never a stop)."""
    bundles = []
    for root in map(Path, roots):
        if not root.is_dir():
            raise InputError(f"{root}: not a folder of bundles")
        for entry in sorted(root.iterdir()):
            if entry.name.startswith("."):
                continue
            try:
                bundles.append(Bundle(entry.name, entry, content_digest(entry)))
            except OSError as err:
                bundles.append(Bundle(entry.name, entry, None, f"cannot read: {err.strerror or err}"))
    return bundles


def content_digest(path: Path) -> str:
    """sha256 over each file's relative path and bytes: the same bundle copied elsewhere hashes the same."""
    digest = hashlib.sha256()
    files = [path] if not path.is_dir() else sorted(p for p in path.rglob("*") if p.is_file() or p.is_symlink())
    for file in files:
        digest.update(file.relative_to(path).as_posix().encode() + b"\0" if file != path else b"\0")
        with open(file, "rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
    return digest.hexdigest()
