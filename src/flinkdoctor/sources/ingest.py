"""Ingest: turn the user's paths into a manifest of sources staged in the work dir.

Runs on the driver, in plain Python, and never reads a whole log: it walks folders, unpacks archives safely
(archives.py), splits YARN aggregated logs into one source per container and log type (yarn.py), classifies each
source by its content first and its name second (classify.py), and stages it for Spark (staging.py): plain UTF-8
text is read where it is, and a text source that needs a copy (decoded, gunzipped, read in its shape) is written
as `<id>.log` under `<work>/sources/`. A file that cannot be read is a counted skip with its reason, never a crash.
"""

from __future__ import annotations

import gzip
import os
import re
import zlib
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, TypedDict

from ..errors import InputError, is_disk_full
from ..jsondata import JSONObject
from ..runtime.workdir import fresh_folder, remove
from . import yarn
from .archives import Budget, is_archive, unpack
from .classify import COLLECT_LOG_MARKER, HEAD_BYTES, classify, host_from_path, structured
from .layouts import detect_layout, layout_by_id
from .rest import render, rest_events
from .shapes import LineMap, is_record, plan, reads_as
from .staging import restage, shown, stage

DEFAULT_MAX_UNPACKED = 20 * 1024**3
YEAR_RE = re.compile(rb"\b((?:19|20)\d\d)-\d\d-\d\d[ T]\d\d:\d\d")
SYSLOG_HOST = re.compile(r"^[A-Z][a-z]{2}\s+\d+\s+[\d:]+\s+(\S+)\s")
ROLLED = re.compile(r"^(.+)\.\d+$")  # a rolled file: jobmanager.log.1, flink-...-taskexecutor-0-host.log.12


@dataclass(frozen=True)
class Source:
    """One source as ingest read it; never changed afterwards (a fleet's combined view renumbers copies)."""

    id: int
    path: str  # as the user sees it, relative to the bundle
    kind: str
    layout: str | None = None  # None for structured sources (JSON, config)
    staged: str | None = None  # file Spark reads: a copy in the work dir, or the input itself (`in_place`)
    in_place: bool = False  # `staged` is the file walked (an input, or an archive's member), read where it is
    host: str | None = None
    container: str | None = None
    log_type: str | None = None  # the file name inside a YARN aggregated log
    line_offset: int = 0  # line number in `path` of the line before this source's first line
    size: int = 0
    binary: bool = False
    derived: bool = False  # written by flinkdoctor from a structured source (REST JSON); not input lines
    fixed_line: int | None = None  # evidence line for every event of a derived source (the JSON's line)
    lines: int = 0  # of a structured source (a text source's lines are counted by the scan)
    unparsed: int = 0
    encoding: str | None = None  # when not UTF-8 (decoded while staging)
    truncated: str | None = None  # why the source ends early (a cut .gz), when it does
    split_lines: int = 0  # over-long lines split into pieces while staging
    shape: str | None = None  # how staging read an unusual shape (shapes.py): "cri, json records", ...
    document: object = field(default=None, repr=False)  # parsed JSON / config, for the analyzers
    line_map: LineMap | None = field(default=None, repr=False)  # staged line -> line of `path` (shapes.py)

    def summary(self) -> JSONObject:
        data = asdict(self)
        data.pop("document")
        data.pop("line_map")
        return data

    def file_line(self, staged_line: int) -> int:
        """The line of `path` that staged line `staged_line` (1-based) came from: what evidence cites."""
        if self.fixed_line:
            return self.fixed_line
        return self.line_offset + (self.line_map.original(staged_line) if self.line_map else staged_line)


class _Place(TypedDict):
    """Where a source's lines come from beyond its file (a YARN part's container and offset): Source fields."""

    host: str | None
    container: str | None
    log_type: str | None
    line_offset: int


@dataclass(frozen=True)
class Manifest:
    sources: tuple[Source, ...]
    work_dir: Path
    bundle_year: int | None
    skipped: tuple[dict[str, str], ...] = ()  # {path, reason} of each input left out

    @property
    def text_sources(self) -> list[Source]:
        return [s for s in self.sources if s.staged]


class _Walker:
    """Walks the inputs into sources: folders, archives, YARN aggregated logs, plain and gzipped files."""

    def __init__(self, work_dir: Path, max_unpacked: int):
        self.staging = fresh_folder(work_dir / "sources")
        self.unpacked = fresh_folder(work_dir / "unpacked")
        self.budget = Budget(max_unpacked, work_dir)
        self.sources: list[Source] = []
        self.skipped: list[dict[str, str]] = []
        self.years: list[int] = []
        self.archives = 0
        # a rolled family (folder, file name without its roll number) -> the layout its first file read plainly as
        self.families: dict[tuple[str, str], str] = {}

    def skip(self, display: str, reason: str) -> None:
        """`display`: the path as shown (staging.shown), as the sources' paths are."""
        self.skipped.append({"path": display, "reason": reason})

    def add_input(self, path: Path, display: str) -> None:
        if path.is_symlink() and not path.exists():
            self.skip(display, "broken link")
        elif path.is_dir():
            try:
                children = sorted(path.rglob("*"))
            except OSError as err:
                self.skip(display or shown(path.name), f"cannot list the folder: {err.strerror or err}")
                return
            for child in children:
                rel = shown(child.relative_to(path).as_posix())
                rel = f"{display}/{rel}" if display else rel
                if child.is_file():
                    self.add_file(child, rel)
                elif not child.is_dir():
                    self.skip(rel, "not a regular file (broken link, socket, ...)")
        elif path.is_file():
            self.add_file(path, display)
        else:
            raise InputError(f"{path}: no such file or folder")

    def add_file(self, path: Path, display: str) -> None:
        """`display` is "" for the one archive given alone: its members' paths are then the bundle's paths."""
        try:
            if is_archive(path.name):
                self.add_archive(path, display)
                return
            display = display or shown(path.name)
            head, compressed = _head(path)
        except (OSError, EOFError, zlib.error) as err:
            if is_disk_full(err):
                raise  # the work dir's disk, not this file: the run stops (errors.translate)
            self.skip(display or shown(path.name), f"cannot read: {getattr(err, 'strerror', None) or err}")
            return
        if head.startswith(COLLECT_LOG_MARKER):
            self.skip(display, "flinkdoctor collect's own log (what it could not fetch), not evidence")
        elif yarn.looks_aggregated(head):
            self.split_yarn(path, display)
        else:
            self.add_text(path, display, head, compressed=compressed)

    def add_archive(self, path: Path, display: str) -> None:
        """Unpack and walk an archive; an unsafe or oversized one is skipped whole, with nothing left behind."""
        self.archives += 1
        target = self.unpacked / str(self.archives)
        try:
            unpack(path, target, display or path.name, self.budget)
        except InputError as err:
            remove(target)
            self.skip(display or shown(path.name), str(err).removeprefix(f"{display or path.name}: "))
            return
        self.add_input(target, display)

    def split_yarn(self, path: Path, display: str) -> None:
        """One source per container and log type; framing lines become one structured 'yarn-index' source."""
        parts: list[tuple[yarn.YarnPart, Path]] = []

        def destination(part: yarn.YarnPart) -> Path:
            staged = self.staging / f"yarn-{len(parts):05d}.part"
            parts.append((part, staged))
            return staged

        framing = yarn.split(path, destination)
        for part, staged in parts:
            with open(staged, "rb") as handle:
                head = handle.read(HEAD_BYTES)
            name = f"{display}#{part.container or 'container'}/{part.log_type or 'log'}"
            self.add_text(
                staged,
                name,
                head,
                host=part.host,
                container=part.container,
                line_offset=part.start_line,
                shown_path=display,
                logtype=part.log_type,
            )
        self.sources.append(
            Source(id=len(self.sources), path=display, kind="yarn-index", lines=framing, size=path.stat().st_size)
        )

    def add_text(
        self,
        path: Path,
        display: str,
        head: bytes,
        compressed: bool = False,
        host: str | None = None,
        container: str | None = None,
        line_offset: int = 0,
        shown_path: str | None = None,
        logtype: str | None = None,
    ) -> None:
        sid, shown = len(self.sources), shown_path or display
        host = host or host_from_path(display)
        place: _Place = {"host": host, "container": container, "log_type": logtype, "line_offset": line_offset}
        size = path.stat().st_size
        name = (logtype or PurePosixPath(display).name).lower()
        found = structured(path, name, head, compressed)
        if found is not None and is_record(found[1]):
            found = None  # one JSON log record, not a REST document: read it as a JSON-lines log
        if found is not None:
            kind, document, lines = found
            source = Source(sid, shown, kind, size=size, document=document, lines=lines, **place)
            self.sources.append(source)
            if kind == "flink-rest-json":
                self._add_rest_events(source)
            return
        dest = self.staging / f"{sid:05d}.log"  # where a copy goes, if one is needed
        try:  # decoded, gunzipped, over-long lines split: the file Spark reads (a YARN part is ours: moved)
            budget = self.budget.limit - self.budget.used if compressed else None
            staged = stage(
                path,
                dest,
                head=head,
                compressed=compressed,
                max_bytes=budget,
                own=path.parent == self.staging,
                size=size,
            )
        except InputError as err:
            self.skip(display, str(err).removeprefix(f"{path.name}: "))
            return
        if staged.copied and compressed:
            self.budget.charge(staged.size, display)
        if staged.truncated:
            self.skip(display, staged.truncated)
        family = _family(display)
        known = self.families.get(family)
        binary = b"\x00" in staged.head[:8192]
        if known is not None and not binary and reads_as(staged.head, layout_by_id(known).python_regex):
            shape, line_map = None, None  # read as its family's first file was: no shape, the same layout
        else:
            known = None
            shape, line_map = None if binary else plan(staged.head), None
        if shape is not None:  # wrapped, structured or decorated: read into plain text once, here
            staged, line_map = restage(staged, shape, dest)
        head = staged.head
        read: dict[str, Any] = {
            "encoding": None if staged.encoding == "utf-8" else staged.encoding,
            "truncated": staged.truncated,
            "split_lines": staged.split_lines,
            "shape": shape.describe() if shape else None,
            "line_map": line_map,
            "staged": str(staged.path),
            "in_place": staged.in_place,
            "size": size,
        }
        if b"\x00" in head[:8192]:
            self.sources.append(Source(sid, shown, "unknown", "none", binary=True, **place, **read))
            return
        year = YEAR_RE.search(head, 0, 65536)  # the first date's year (findall's first, without the rest)
        self.years += [int(year.group(1))] if year else []
        text = head.decode("utf-8", "replace")
        layout = known or (shape and shape.layout) or detect_layout(text.splitlines()[:2000])
        if shape is None and family not in self.families and "level" in layout_by_id(layout).python_regex.groupindex:
            self.families[family] = layout  # its further rolled files are checked against it (shapes.reads_as)
        if layout == "syslog" and host is None:
            m = SYSLOG_HOST.match(text)
            place["host"] = m.group(1) if m else None
        self.sources.append(Source(sid, shown, classify(name, text, layout), layout, **place, **read))

    def _add_rest_events(self, document_source: Source) -> None:
        """Exceptions and failed checkpoints of a REST snapshot, as a derived text source for the rules."""
        events = rest_events(document_source.document)
        if not events:
            return
        sid = len(self.sources)
        staged = self.staging / f"{sid:05d}.log"
        staged.write_text(render(events), encoding="utf-8")
        self.sources.append(
            Source(
                id=sid,
                path=document_source.path,
                kind="flink-rest-json",
                layout="rest-event",
                staged=str(staged),
                size=staged.stat().st_size,
                derived=True,
                fixed_line=1,
            )
        )


def _family(display: str) -> tuple[str, str]:
    """The rolled family of a file: its folder and its name without a roll number (`jobmanager.log.3` and
    `jobmanager.log` are one family)."""
    path = PurePosixPath(display)
    rolled = ROLLED.match(path.name)
    return str(path.parent), rolled.group(1) if rolled else path.name


def _head(path: Path) -> tuple[bytes, bool]:
    """(the first bytes of a file, whether it is gzip), decompressed when it is (a cut stream gives what it has)."""
    with open(path, "rb") as handle:
        raw = handle.read(HEAD_BYTES)
    if not raw.startswith(b"\x1f\x8b"):
        return raw, False
    with gzip.open(path, "rb") as stream:
        try:
            return stream.read(HEAD_BYTES), True
        except (EOFError, zlib.error, OSError):
            pass
    # a stream cut within the head: decompress what there is
    return zlib.decompressobj(zlib.MAX_WBITS | 16).decompress(raw, HEAD_BYTES), True


def input_names(inputs: list[Path]) -> list[str]:
    """Each of several inputs' name in the report (shown): its own (taskmanager.log), or, where inputs share one
    (two hosts' taskmanager.log) or one's name is a folder of another's (`logs` and `x/logs/y`), as many of its
    last folders as tell them apart (host-1/taskmanager.log, host-2/taskmanager.log): evidence file:line names one
    input. A few passes over the inputs, each a lookup per name and folder: a shell's glob of 100,000 files (one
    folder, every name its own) is one pass."""
    paths = [os.path.abspath(path) for path in inputs]
    parts = [path.split("/") for path in paths]  # (absolute: the first is "", the root's)
    depth = [1] * len(paths)
    while True:
        names = [path if d >= len(p) else "/".join(p[-d:]) for path, p, d in zip(paths, parts, depth, strict=True)]
        taken = Counter(names)
        folders = {name[:at] for name in names if "/" in name for at, c in enumerate(name) if c == "/" and at}
        clash = [i for i, name in enumerate(names) if taken[name] > 1 or name in folders]
        longer = [i for i in clash if depth[i] < len(parts[i])]
        if not longer:
            return [shown(name) for name in names]
        for i in longer:
            depth[i] += 1


def ingest(
    paths: list[str | Path], work_dir: Path, year: int | None = None, max_unpacked: int = DEFAULT_MAX_UNPACKED
) -> Manifest:
    """Stage every input under work_dir and describe it; raises InputError when nothing can be read (a missing
    path, an empty folder, only unsafe archives or binary files)."""
    walker = _Walker(Path(work_dir), max_unpacked)
    inputs = list({os.path.abspath(p): Path(p) for p in paths}.values())  # (an input given twice: read once)
    for path in inputs:
        if not path.exists() and not path.is_symlink():
            raise InputError(f"{path}: no such file or folder")
    # one input: paths relative to it (an archive's member paths); several: each under its own name
    names = [shown(path.name)] if len(inputs) == 1 else input_names(inputs)
    for path, name in zip(inputs, names, strict=True):
        single_container = len(inputs) == 1 and (path.is_dir() or is_archive(path.name))
        walker.add_input(path, "" if single_container else name)
    if not any(not s.binary for s in walker.sources):
        reasons = "; ".join(f"{s['path'] or '.'}: {s['reason']}" for s in walker.skipped[:5])
        raise InputError(f"{', '.join(map(str, paths))}: nothing to read" + (f" ({reasons})" if reasons else ""))
    bundle_year = year or (max(set(walker.years), key=walker.years.count) if walker.years else None)
    return Manifest(tuple(walker.sources), Path(work_dir), bundle_year, tuple(walker.skipped))
