"""Ingest: turn the user's paths into a manifest of sources staged in the work dir.

Runs on the driver, in plain Python, and never reads a whole log: it walks folders, unpacks archives safely,
splits YARN aggregated logs into one source per container and log type, and classifies each source by its content
first and its name second. Every staged text source is named `<id>.log` (or `.log.gz`) under
`<work>/sources/`, so the Spark stage can recover the source id from the file name alone.
"""
from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import tarfile
import zipfile
from dataclasses import dataclass, field, asdict
from pathlib import Path, PurePosixPath

import yaml

from .layouts import detect_layout
from .rest import render, rest_events

HEAD_BYTES = 256 * 1024
MAX_JSON_BYTES = 64 * 1024 * 1024
DEFAULT_MAX_UNPACKED = 20 * 1024**3


class IngestError(Exception):
    """Input that cannot be read at all (missing path, unsafe or oversized archive)."""


@dataclass
class Source:
    id: int
    path: str                  # as the user sees it, relative to the bundle
    kind: str
    layout: str | None = None  # None for structured sources (JSON, config)
    staged: str | None = None  # file Spark reads
    host: str | None = None
    container: str | None = None
    log_type: str | None = None  # the file name inside a YARN aggregated log
    line_offset: int = 0       # line number in `path` of the line before this source's first line
    size: int = 0
    binary: bool = False
    derived: bool = False      # written by flinkdoctor from a structured source (REST JSON); not input lines
    fixed_line: int | None = None  # evidence line for every event of a derived source (the JSON's line)
    lines: int = 0             # filled for structured sources here, for text sources by the Spark stage
    unparsed: int = 0
    document: object = field(default=None, repr=False)  # parsed JSON / config, for the analyzers

    def summary(self) -> dict:
        data = asdict(self)
        data.pop("document")
        return data


@dataclass
class Manifest:
    sources: list[Source]
    work_dir: Path
    bundle_year: int | None
    skipped: list[dict] = field(default_factory=list)

    @property
    def text_sources(self) -> list[Source]:
        return [s for s in self.sources if s.staged]


# Content markers per source kind: a marker that occurs in a source's first lines votes for its kind.
KIND_MARKERS: dict[str, tuple[str, ...]] = {
    "flink-jobmanager": ("ClusterEntrypoint", "JobMaster", "CheckpointCoordinator", "Dispatcher",
                         "ResourceManager", "ExecutionGraph", "CompletedCheckpointStore", "JobManagerRunner",
                         "CheckpointFailureManager", "StandaloneResourceManager"),
    "flink-taskmanager": ("TaskExecutor", "TaskManagerRunner", "org.apache.flink.runtime.taskmanager.Task",
                          "StreamTask", "TaskSlotTable", "BucketingSink", "AsyncCheckpointRunnable"),
    "flink-client": ("CliFrontend", "org.apache.flink.client.", "RestClusterClient"),
    "zookeeper": ("org.apache.zookeeper.server", "QuorumPeer", "ZooKeeperServer", "FastLeaderElection",
                  "NIOServerCnxn", "QuorumCnxManager"),
    "hdfs-namenode": ("hdfs.server.namenode", "FSNamesystem", "NameNode", "BlockStateChange"),
    "hdfs-datanode": ("hdfs.server.datanode", "DataNode", "DirectoryScanner", "BlockReceiver"),
    "yarn-nodemanager": ("yarn.server.nodemanager", "ContainersMonitorImpl", "NodeStatusUpdater"),
    "kubernetes": ("OOMKilled", "kubelet", "Back-off restarting failed container", "Liveness probe"),
    "hdfs-fsck": ("FSCK started", "OPENFORWRITE", "Status: HEALTHY", "Status: CORRUPT"),
}
NAME_HINTS: tuple[tuple[str, str], ...] = (
    ("jobmanager", "flink-jobmanager"), ("taskmanager", "flink-taskmanager"), ("taskexecutor", "flink-taskmanager"),
    ("standalonesession", "flink-jobmanager"), ("client", "flink-client"), ("zookeeper", "zookeeper"),
    ("namenode", "hdfs-namenode"), ("datanode", "hdfs-datanode"), ("nodemanager", "yarn-nodemanager"),
    ("dmesg", "kernel"), ("kern", "kernel"), ("messages", "kernel"), ("syslog", "kernel"), ("fsck", "hdfs-fsck"),
)
ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar", ".zip", ".tar.bz2", ".tbz2", ".tar.xz", ".txz")
CONFIG_NAMES = ("flink-conf.yaml", "config.yaml")
YEAR_RE = re.compile(rb"\b((?:19|20)\d\d)-\d\d-\d\d[ T]\d\d:\d\d")
YARN_CONTAINER = re.compile(rb"^Container: (container_(?:e\d+_)?\d+_\d+_\d+_\d+) on (\S+?)(?:_(\d+))?\s*$")
YARN_LOGTYPE = re.compile(rb"^Log ?Type:\s?(\S+)\s*$")
YARN_LENGTH = re.compile(rb"^Log ?Length:\s?(\d+)\s*$")
YARN_CONTENTS = re.compile(rb"^Log ?Contents:\s*$")
YARN_END = re.compile(rb"^End of LogType:")


class _Builder:
    def __init__(self, work_dir: Path, max_unpacked: int):
        self.work_dir = work_dir
        self.staging = work_dir / "sources"
        self.unpacked = work_dir / "unpacked"
        for own in (self.staging, self.unpacked):  # an earlier run with this work dir: never read its files
            if own.is_dir() and not own.is_symlink():
                shutil.rmtree(own)
        self.staging.mkdir(parents=True)
        self.max_unpacked = max_unpacked
        self.unpacked_bytes = 0
        self.sources: list[Source] = []
        self.skipped: list[dict] = []
        self.years: list[int] = []
        self.archives = 0

    # -- walking -------------------------------------------------------------------------------------------
    def add_input(self, path: Path, display: str) -> None:
        if path.is_symlink() and not path.exists():
            self.skipped.append({"path": display, "reason": "broken link"})
        elif path.is_dir():
            for child in sorted(path.rglob("*")):
                rel = child.relative_to(path).as_posix()
                rel = f"{display}/{rel}" if display else rel
                if child.is_file():
                    self.add_file(child, rel)
                elif not child.is_dir():
                    self.skipped.append({"path": rel, "reason": "not a regular file (broken link, socket, ...)"})
        elif path.is_file():
            self.add_file(path, display)
        else:
            raise IngestError(f"{path}: no such file or folder")

    def add_file(self, path: Path, display: str) -> None:
        lower = path.name.lower()
        if not display and not lower.endswith(ARCHIVE_SUFFIXES):
            display = path.name
        if lower.endswith(ARCHIVE_SUFFIXES):
            self.archives += 1
            target = self.unpacked / str(self.archives)
            self.unpack(path, target, display)
            self.add_input(target, display)
            return
        if lower.endswith(".gz"):
            with gzip.open(path, "rb") as handle:
                try:
                    head = handle.read(HEAD_BYTES)
                except (OSError, EOFError) as err:
                    self.skipped.append({"path": display, "reason": f"bad gzip: {err}"})
                    return
            self.add_text(path, display, head, compressed=True)
            return
        with open(path, "rb") as handle:
            head = handle.read(HEAD_BYTES)
        if head.startswith(b"\x1f\x8b"):
            self.add_text(path, display, _gunzip_head(path), compressed=True)
        elif YARN_CONTAINER.search(head.split(b"\n", 1)[0]) or (b"\nContainer: container_" in head[:8192]
                                                              and b"LogType:" in head):
            self.split_yarn(path, display)
        else:
            self.add_text(path, display, head)

    # -- archives ------------------------------------------------------------------------------------------
    def unpack(self, path: Path, target: Path, display: str) -> None:
        target.mkdir(parents=True, exist_ok=True)
        if path.name.lower().endswith(".zip"):
            with zipfile.ZipFile(path) as archive:
                members = archive.infolist()
                self._charge(sum(m.file_size for m in members), display)
                for member in members:
                    if (member.external_attr >> 16) & 0o170000 == 0o120000:
                        raise IngestError(f"{display}: refusing archive, member {member.filename!r} is a link")
                    self._check_member(member.filename, display)
                archive.extractall(target)
            return
        try:
            with tarfile.open(path) as archive:
                members = archive.getmembers()
                self._charge(sum(m.size for m in members if m.isfile()), display)
                for member in members:
                    self._check_member(member.name, display)
                    if member.issym() or member.islnk():
                        self._check_member(str(PurePosixPath(member.name).parent / member.linkname), display)
                archive.extractall(target, filter="data")
        except tarfile.TarError as err:
            raise IngestError(f"{display}: refusing archive: {err}") from err

    def _charge(self, size: int, display: str) -> None:
        self.unpacked_bytes += size
        if self.unpacked_bytes > self.max_unpacked:
            raise IngestError(f"{display}: archives unpack to {self.unpacked_bytes} bytes, over the limit of "
                              f"{self.max_unpacked} (raise it with --max-unpacked)")

    @staticmethod
    def _check_member(name: str, display: str) -> None:
        parts = PurePosixPath(name.replace("\\", "/")).parts
        if name.startswith(("/", "\\")) or ".." in parts or (parts and re.match(r"^[A-Za-z]:", parts[0])):
            raise IngestError(f"{display}: refusing archive, member {name!r} would be written outside the bundle")

    # -- YARN aggregated logs ------------------------------------------------------------------------------
    def split_yarn(self, path: Path, display: str) -> None:
        """One source per container and log type; framing lines become one structured 'yarn-index' source."""
        framing = 0
        container = host = logtype = None
        length = None
        line_no = 0
        with open(path, "rb") as handle:
            while True:
                raw = handle.readline()
                if not raw:
                    break
                line_no += 1
                line = raw.rstrip(b"\r\n")
                if m := YARN_CONTAINER.match(line):
                    container, host = m.group(1).decode(), m.group(2).decode()
                    framing += 1
                elif m := YARN_LOGTYPE.match(line):
                    logtype, length = m.group(1).decode("utf-8", "replace"), None
                    framing += 1
                elif m := YARN_LENGTH.match(line):
                    length = int(m.group(1))
                    framing += 1
                elif YARN_CONTENTS.match(line):
                    framing += 1
                    start_line = line_no
                    content, line_no = self._yarn_content(handle, length, line_no)
                    name = f"{display}#{container or 'container'}/{logtype or 'log'}"
                    staged = self.staging / f"{len(self.sources):05d}.log"
                    staged.write_bytes(content)
                    self.add_text(staged, name, content[:HEAD_BYTES], staged_already=True, host=host,
                                  container=container, line_offset=start_line, shown_path=display,
                                  logtype=logtype)
                else:
                    framing += 1  # separators, LogAggregationType, LogLastModifiedTime, End of LogType, blanks
        index = Source(id=len(self.sources), path=display, kind="yarn-index", lines=framing, size=path.stat().st_size)
        self.sources.append(index)

    @staticmethod
    def _yarn_content(handle, length: int | None, line_no: int) -> tuple[bytes, int]:
        if length is not None:
            content = handle.read(length)
            return content, line_no + content.count(b"\n")
        chunks = []
        while True:
            pos = handle.tell()
            raw = handle.readline()
            if not raw or YARN_END.match(raw) or YARN_CONTAINER.match(raw.rstrip(b"\r\n")) \
                    or YARN_LOGTYPE.match(raw.rstrip(b"\r\n")):
                handle.seek(pos)
                break
            chunks.append(raw)
            line_no += 1
        return b"".join(chunks), line_no

    # -- classification ------------------------------------------------------------------------------------
    def add_text(self, path: Path, display: str, head: bytes, compressed: bool = False, staged_already=False,
                 host=None, container=None, line_offset=0, shown_path=None, logtype=None) -> None:
        source = Source(id=len(self.sources), path=shown_path or display, kind="unknown", host=host,
                        container=container, log_type=logtype, line_offset=line_offset,
                        size=path.stat().st_size)
        name = (logtype or PurePosixPath(display).name).lower()
        structured = self._structured(path, name, head, compressed)
        if structured is not None:
            source.kind, source.document, source.lines = structured
            self.sources.append(source)
            if source.kind == "flink-rest-json":
                self._add_rest_events(source)
            return
        if b"\x00" in head[:8192]:
            source.binary, source.layout = True, "none"
        else:
            self.years += [int(y) for y in YEAR_RE.findall(head[:65536])[:1]]
            text = head.decode("utf-8", "replace")
            lines = text.splitlines()[:2000]
            source.layout = detect_layout(lines)
            source.kind = classify(name, text, source.layout)
            if source.layout == "syslog" and source.host is None:
                m = re.match(r"^[A-Z][a-z]{2}\s+\d+\s+[\d:]+\s+(\S+)\s", text)
                source.host = m.group(1) if m else None
        suffix = ".log.gz" if compressed else ".log"
        staged = self.staging / f"{source.id:05d}{suffix}"
        if staged_already and not compressed:
            staged = path
        else:
            os.symlink(path.resolve(), staged)
        source.staged = str(staged)
        self.sources.append(source)

    def _add_rest_events(self, document_source: Source) -> None:
        """Exceptions and failed checkpoints of a REST snapshot, as a derived text source for the rules."""
        events = rest_events(document_source.document)
        if not events:
            return
        derived = Source(id=len(self.sources), path=document_source.path, kind="flink-rest-json",
                         layout="rest-event", derived=True, fixed_line=1)
        staged = self.staging / f"{derived.id:05d}.log"
        staged.write_text(render(events), encoding="utf-8")
        derived.staged, derived.size = str(staged), staged.stat().st_size
        self.sources.append(derived)

    @staticmethod
    def _structured(path: Path, name: str, head: bytes, compressed: bool):
        """(kind, document, lines) for REST JSON and Flink configuration files, else None."""
        stripped = head.lstrip()
        if name.endswith(".json") or stripped[:1] in (b"{", b"["):
            size = path.stat().st_size
            if compressed or size > MAX_JSON_BYTES:
                return None
            data = head if size <= len(head) else path.read_bytes()
            try:
                document = json.loads(data.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError):
                return None  # not JSON after all (a log line starting with '{'): read it as text
            return "flink-rest-json", document, _count_lines(data)
        looks_config = name in CONFIG_NAMES or name.endswith((".yaml", ".yml", ".properties")) and \
            re.search(rb"^(jobmanager|taskmanager|state|execution|high-availability|rest|parallelism)\.",
                      head, re.M) is not None
        if looks_config and len(head) < HEAD_BYTES and not compressed:
            try:
                document = yaml.safe_load(head.decode("utf-8"))
            except (UnicodeDecodeError, yaml.YAMLError):
                document = _flat_config(head.decode("utf-8", "replace"))
            if isinstance(document, dict):
                return "flink-config", flatten_config(document), _count_lines(head)
        return None


def _gunzip_head(path: Path) -> bytes:
    with gzip.open(path, "rb") as handle:
        return handle.read(HEAD_BYTES)


def _count_lines(data: bytes) -> int:
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def _flat_config(text: str) -> dict:
    """Flink's own flat 'key: value' reader, for flink-conf.yaml files that are not valid YAML."""
    config = {}
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if ":" in line:
            key, value = line.split(":", 1)
            config[key.strip()] = value.strip()
    return config


def flatten_config(document: dict, prefix: str = "") -> dict:
    """Nested YAML (Flink 2.x config.yaml) as the flat dotted keys of flink-conf.yaml."""
    flat = {}
    for key, value in document.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(flatten_config(value, name + "."))
        else:
            flat[name] = value
    return flat


def classify(name: str, text: str, layout: str) -> str:
    """Source kind from content first (marker votes), the file name second."""
    if layout in ("dmesg", "dmesg-human") or (layout == "syslog" and " kernel: " in text):
        return "kernel"
    if layout == "zookeeper-server":
        return "zookeeper"
    votes = {kind: sum(text.count(marker) for marker in markers) for kind, markers in KIND_MARKERS.items()}
    if "flink" not in text.lower():  # ResourceManager, JobMaster, ... are Hadoop words too
        for kind in ("flink-jobmanager", "flink-taskmanager", "flink-client"):
            votes[kind] = 0
    for hint, kind in NAME_HINTS:
        if hint in name:
            votes[kind] = votes.get(kind, 0) + 3
    if layout == "syslog":
        votes["kernel"] = votes.get("kernel", 0) + 1
    kind, score = max(votes.items(), key=lambda item: item[1])
    return kind if score > 0 else "unknown"


def ingest(paths: list[str | Path], work_dir: Path, year: int | None = None,
           max_unpacked: int = DEFAULT_MAX_UNPACKED) -> Manifest:
    """Stage every input under work_dir and describe it; raises IngestError for unreadable input."""
    builder = _Builder(Path(work_dir), max_unpacked)
    paths = [Path(p) for p in paths]
    for path in paths:
        if not path.exists():
            raise IngestError(f"{path}: no such file or folder")
    for path in paths:
        # one input: paths relative to it (an archive's member paths); several: each under its own name
        single_container = len(paths) == 1 and (path.is_dir() or path.name.lower().endswith(ARCHIVE_SUFFIXES))
        builder.add_input(path, "" if single_container else path.name)
    bundle_year = year or (max(set(builder.years), key=builder.years.count) if builder.years else None)
    return Manifest(sources=builder.sources, work_dir=Path(work_dir), bundle_year=bundle_year,
                    skipped=builder.skipped)
