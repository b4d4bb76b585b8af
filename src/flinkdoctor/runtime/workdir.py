"""The work dir: where staged sources and the events table go, and the only place flinkdoctor writes.

flinkdoctor deletes only what it created. A folder it creates or adopts (an empty one) gets a marker file; a
folder that holds anything without that marker is refused, so a mistyped `--work-dir ~` cannot empty a home.
After the run everything flinkdoctor wrote is removed unless the user asks to keep it; even then the raw
copies of the input (unpacked archives, staged sources: secrets unmasked) go, and what stays (the events table,
masked) is what a person debugging flinkdoctor needs.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from ..errors import WorkDirError, translate

MARKER = ".flinkdoctor-work-dir"
MARKER_TEXT = "This folder is a flinkdoctor work dir: flinkdoctor may empty it.\n"
RAW_COPIES = ("sources", "unpacked", "packs")  # the input as it was: never outlives the run


def remove(target: Path) -> None:
    """Remove a file, link or folder of ours; a link is removed, never followed."""
    if target.is_symlink() or target.is_file():
        target.unlink()
    elif target.is_dir():
        shutil.rmtree(target)


def fresh_folder(folder: Path) -> Path:
    """An empty folder of ours (an earlier run with this work dir left its own files there: never read them)."""
    remove(folder)
    folder.mkdir(parents=True)
    return folder


class WorkDir:
    """A work dir owned by this run. Use as a context manager: on exit, what this run wrote is removed
    unless `keep`; the folder itself is removed only when this run created it."""

    def __init__(self, path: str | Path | None = None, keep: bool = False):
        self.keep = keep
        if path is None:
            self.path = Path(tempfile.mkdtemp(prefix="flinkdoctor-"))
            self.created = True
        else:
            self.path = Path(path).expanduser().absolute()
            self.created = not self.path.exists()
            self._claim()
        try:
            (self.path / MARKER).write_text(MARKER_TEXT, encoding="utf-8")
        except OSError as err:
            raise WorkDirError(f"{self.path}: cannot write to the work dir: {err.strerror or err}") from err

    def _claim(self) -> None:
        path = self.path
        if path.is_symlink() or (path.exists() and not path.is_dir()):
            raise WorkDirError(f"{path}: the work dir must be a folder (not a file or a link)")
        if not path.exists():
            try:
                path.mkdir(parents=True)
            except OSError as err:
                raise WorkDirError(f"{path}: cannot create the work dir: {err.strerror or err}") from err
            return
        try:
            entries = [p.name for p in path.iterdir()]
        except OSError as err:
            raise WorkDirError(f"{path}: cannot read the work dir: {err.strerror or err}") from err
        if entries and MARKER not in entries:
            raise WorkDirError(
                f"{path}: the work dir is not empty and is not a flinkdoctor work dir; "
                "give an empty or new folder (flinkdoctor deletes only what it created)"
            )

    def clear(self, name: str) -> None:
        """Remove `name` from the work dir (ours: the dir was checked when claimed)."""
        remove(self.path / name)

    def close(self) -> None:
        if self.keep:
            for name in RAW_COPIES:
                self.clear(name)
            return
        if self.created:
            shutil.rmtree(self.path, ignore_errors=True)
            return
        for child in self.path.iterdir():  # an adopted folder: it held only our marker and what we wrote
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child, ignore_errors=True)
            else:
                child.unlink(missing_ok=True)

    def __enter__(self) -> WorkDir:
        return self

    def __exit__(self, kind: object, err: BaseException | None, trace: object) -> None:
        self.close()
        known = translate(err, self.path) if err is not None else None
        if known is not None:  # after the clean-up: a full disk or a changed input, in the contract's words
            raise known from err
