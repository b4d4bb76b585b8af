"""The bundle being collected: a folder a person can read and `flinkdoctor diagnose` reads, then one archive.

    <name>/collect.json                        what was fetched: each request, its time, status, size, file, error
    <name>/collect.log                         the collector's own log: what it could not fetch and why, what it cut
    <name>/jobmanager/<host>/<log file>        the JobManager's logs (.log, .out, ...), as its REST API lists them
    <name>/taskmanager/<host>/<tm id>/<file>   each TaskManager's logs
    <name>/rest/<UTC time>/...json             REST snapshots, in a folder named by the time they were taken

Every file is written through safety/outbound.py, masked: REST answers as structures (configuration values of
sensitive keys, passwords in URLs, tokens), logs line by line, as diagnose masks what it keeps. The credentials
used to connect are never written: the URL is stored without user-info, headers are not stored, and any file
that happens to contain the password or token gets it replaced.
"""

from __future__ import annotations

import shutil
import tarfile
import time
from datetime import datetime, timezone
from pathlib import Path

from ..safety import outbound
from ..safety.masking import MASK
from ..sources.classify import COLLECT_LOG_MARKER

SCHEMA = "flinkdoctor.collect/v1"


def utc_now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def stamp(when: float | None = None) -> str:
    """A time as a folder or file name part: 20261123T074601Z."""
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(when))


class BundleWriter:
    """Writes one bundle folder; `finish` adds collect.json and collect.log and packs it."""

    def __init__(self, folder: Path, name: str, meta: dict, secrets: tuple[str | None, ...] = ()):
        self.folder = folder
        self.name = name  # the archive's top folder
        self.folder.mkdir(parents=True)
        self.written = 0
        self.meta = {"schema": SCHEMA, **meta, "started": utc_now()}
        self.requests: list[dict] = []
        self.lines: list[str] = []
        self._secrets = [s for s in secrets if s and len(s) >= 4]

    def log(self, message: str) -> None:
        """One line in the collector's log (also what the CLI prints as warnings)."""
        self.lines.append(f"{utc_now()} {' '.join(message.split())}")

    def record(self, path: str, **fields) -> dict:
        entry = {"path": path, "time": utc_now(), **fields}
        self.requests.append(entry)
        return entry

    def write(self, relative: str, data: bytes) -> str:
        """Write a log under the bundle (relative is made of safe names), masked; returns the relative path."""
        outbound.write_bytes(self._target(relative), self._without_credentials(data))
        self.written += 1
        return relative

    def write_json(self, relative: str, document) -> str:
        """Write a JSON document under the bundle, masked; returns the relative path."""
        text = outbound.dumps(document, indent=1, ensure_ascii=False)
        outbound.write_text(self._target(relative), outbound.Masked(self._without_credentials(text) + "\n"))
        self.written += 1
        return relative

    def _target(self, relative: str) -> Path:
        target = self.folder / relative
        if not target.resolve().is_relative_to(self.folder.resolve()):
            raise ValueError(f"refusing to write outside the bundle: {relative!r}")
        target.parent.mkdir(parents=True, exist_ok=True)
        return target

    def _without_credentials(self, data):
        """The password or token used to connect, replaced wherever it shows (bytes or text)."""
        for secret in self._secrets:
            data = data.replace(secret, MASK) if isinstance(data, str) else data.replace(secret.encode(), MASK.encode())
        return data

    def finish(self, archive: Path | None, **summary) -> Path:
        """collect.json and collect.log, then the archive (the folder is removed) or the folder itself."""
        self.meta.update(finished=utc_now(), **summary, requests=self.requests)
        self.write_json("collect.json", self.meta)
        header = f"{COLLECT_LOG_MARKER.decode()} ({self.meta.get('rest_url')}; {len(self.lines)} notes)\n"
        self.write("collect.log", (header + "".join(f"{line}\n" for line in self.lines)).encode("utf-8"))
        if archive is None:
            return self.folder
        partial = archive.with_name(archive.name + ".part")
        with tarfile.open(partial, "w:gz") as tar:
            for path in sorted(self.folder.rglob("*")):
                if path.is_file():
                    tar.add(path, arcname=f"{self.name}/{path.relative_to(self.folder).as_posix()}")
        partial.replace(archive)
        shutil.rmtree(self.folder)
        return archive
