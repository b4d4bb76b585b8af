"""Archives unpacked safely: nothing written outside the target, no links, and no decompression bomb.

An archive is refused before anything is written when its members would escape the bundle, when it holds links,
when its declared size is over the budget or over the free disk space, or when it expands more than
MAX_RATIO times its own size (logs compress 5-30x; a bomb 1000x). Sizes in headers can lie, so extraction
streams every member and counts the bytes it really writes against the same budget.
"""

from __future__ import annotations

import re
import shutil
import tarfile
import zipfile
from pathlib import Path, PurePosixPath
from typing import IO

from ..errors import InputError, is_disk_full

ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar", ".zip", ".tar.bz2", ".tbz2", ".tar.xz", ".txz")
MAX_RATIO = 200  # unpacked bytes per archive byte beyond which an archive is a bomb, not logs
DISK_RESERVE = 1 << 30  # leave this much free on the work dir's disk
CHUNK = 1 << 20


def is_archive(name: str) -> bool:
    return name.lower().endswith(ARCHIVE_SUFFIXES)


class Budget:
    """Bytes that archives of one run may still write: the --max-unpacked cap and the free disk space."""

    def __init__(self, limit: int, work_dir: Path):
        self.limit = limit
        self.used = 0
        self.work_dir = work_dir

    def check_declared(self, declared: int, archive_size: int, display: str) -> None:
        if declared > max(archive_size, 1) * MAX_RATIO and declared > 64 * CHUNK:
            raise InputError(
                f"{display}: refusing archive: it would unpack to {declared:,} bytes, "
                f"{declared // max(archive_size, 1):,} times its size (a decompression bomb?)"
            )
        self.charge(declared, display)
        self.used -= declared  # only reserved: extraction charges what it really writes
        free = shutil.disk_usage(self.work_dir).free - DISK_RESERVE
        if declared > free:
            raise InputError(
                f"{display}: refusing archive: it would unpack to {declared:,} bytes and the work "
                f"dir's disk has {max(free, 0):,} bytes free (give --work-dir on a larger disk)"
            )

    def charge(self, size: int, display: str) -> None:
        self.used += size
        if self.used > self.limit:
            raise InputError(
                f"{display}: archives unpack to more than {self.limit:,} bytes, over the limit "
                "(raise it with --max-unpacked)"
            )


def unpack(path: Path, target: Path, display: str, budget: Budget) -> None:
    """Extract `path` into `target` (created), or raise InputError with the archive and the reason."""
    target.mkdir(parents=True, exist_ok=True)
    try:
        if path.name.lower().endswith(".zip"):
            _unzip(path, target, display, budget)
        else:
            _untar(path, target, display, budget)
    except (tarfile.TarError, zipfile.BadZipFile, EOFError, OSError) as err:
        if is_disk_full(err):
            raise  # the work dir's disk, not the archive: the run stops (errors.translate)
        raise InputError(f"{display}: refusing archive: {_reason(err)}") from err


def _reason(err: BaseException) -> str:
    if isinstance(err, OSError) and err.strerror:
        return err.strerror
    return str(err) or type(err).__name__


def _unzip(path: Path, target: Path, display: str, budget: Budget) -> None:
    with zipfile.ZipFile(path) as archive:
        members = [m for m in archive.infolist() if not m.is_dir()]
        for member in members:
            if (member.external_attr >> 16) & 0o170000 == 0o120000:
                raise InputError(f"{display}: refusing archive, member {member.filename!r} is a link")
            check_member_name(member.filename, display)
        budget.check_declared(sum(m.file_size for m in members), path.stat().st_size, display)
        for member in members:
            with archive.open(member) as source:
                _copy(source, target / member.filename, display, budget)


def _untar(path: Path, target: Path, display: str, budget: Budget) -> None:
    with tarfile.open(path) as archive:
        members = archive.getmembers()
        for member in members:
            check_member_name(member.name, display)
            if member.issym() or member.islnk():
                raise InputError(f"{display}: refusing archive, member {member.name!r} is a link")
        files = [m for m in members if m.isfile()]
        budget.check_declared(sum(m.size for m in files), path.stat().st_size, display)
        for member in files:
            source = archive.extractfile(member)
            if source is not None:
                with source:
                    _copy(source, target / member.name, display, budget)


def _copy(source: IO[bytes], destination: Path, display: str, budget: Budget) -> None:
    """Stream one member, charging every byte written (headers can understate a member's size)."""
    destination.parent.mkdir(parents=True, exist_ok=True)
    with open(destination, "xb") as out:
        while chunk := source.read(CHUNK):
            budget.charge(len(chunk), display)
            out.write(chunk)


def check_member_name(name: str, display: str) -> None:
    parts = PurePosixPath(name.replace("\\", "/")).parts
    if name.startswith(("/", "\\")) or ".." in parts or (parts and re.match(r"^[A-Za-z]:", parts[0])):
        raise InputError(f"{display}: refusing archive, member {name!r} would be written outside the bundle")
