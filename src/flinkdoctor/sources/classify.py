"""What a source is: its kind from its content first and its name second; REST JSON and Flink configuration
read as documents. Layouts (how to read a line) are layouts.py's business; this module never reads past a
source's head.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from ..jsondata import JSON, JSONObject

HEAD_BYTES = 256 * 1024
MAX_JSON_BYTES = 64 * 1024 * 1024
CONFIG_NAMES = ("flink-conf.yaml", "config.yaml")
# First line of the log `flinkdoctor collect` writes about its own work (what it could not fetch, what it cut):
# a note for the reader of the bundle, not evidence about the cluster.
COLLECT_LOG_MARKER = b"# flinkdoctor collect log"

# Content markers per source kind: a marker that occurs in a source's first lines votes for its kind.
KIND_MARKERS: dict[str, tuple[str, ...]] = {
    "flink-jobmanager": (
        "ClusterEntrypoint",
        "JobMaster",
        "CheckpointCoordinator",
        "Dispatcher",
        "ResourceManager",
        "ExecutionGraph",
        "CompletedCheckpointStore",
        "JobManagerRunner",
        "CheckpointFailureManager",
        "StandaloneResourceManager",
    ),
    "flink-taskmanager": (
        "TaskExecutor",
        "TaskManagerRunner",
        "org.apache.flink.runtime.taskmanager.Task",
        "StreamTask",
        "TaskSlotTable",
        "BucketingSink",
        "AsyncCheckpointRunnable",
    ),
    "flink-client": ("CliFrontend", "org.apache.flink.client.", "RestClusterClient"),
    "zookeeper": (
        "org.apache.zookeeper.server",
        "QuorumPeer",
        "ZooKeeperServer",
        "FastLeaderElection",
        "NIOServerCnxn",
        "QuorumCnxManager",
    ),
    "hdfs-namenode": ("hdfs.server.namenode", "FSNamesystem", "NameNode", "BlockStateChange"),
    "hdfs-datanode": ("hdfs.server.datanode", "DataNode", "DirectoryScanner", "BlockReceiver"),
    "yarn-nodemanager": ("yarn.server.nodemanager", "ContainersMonitorImpl", "NodeStatusUpdater"),
    "kubernetes": ("OOMKilled", "kubelet", "Back-off restarting failed container", "Liveness probe"),
    "hdfs-fsck": ("FSCK started", "OPENFORWRITE", "Status: HEALTHY", "Status: CORRUPT"),
}
NAME_HINTS: tuple[tuple[str, str], ...] = (
    ("jobmanager", "flink-jobmanager"),
    ("taskmanager", "flink-taskmanager"),
    ("taskexecutor", "flink-taskmanager"),
    ("standalonesession", "flink-jobmanager"),
    ("client", "flink-client"),
    ("zookeeper", "zookeeper"),
    ("namenode", "hdfs-namenode"),
    ("datanode", "hdfs-datanode"),
    ("nodemanager", "yarn-nodemanager"),
    ("dmesg", "kernel"),
    ("kern", "kernel"),
    ("messages", "kernel"),
    ("syslog", "kernel"),
    ("fsck", "hdfs-fsck"),
    ("kubectl", "kubernetes"),
)


def structured(path: Path, name: str, head: bytes, compressed: bool) -> tuple[str, JSON, int] | None:
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
    looks_config = (
        name in CONFIG_NAMES
        or name.endswith((".yaml", ".yml", ".properties"))
        and re.search(rb"^(jobmanager|taskmanager|state|execution|high-availability|rest|parallelism)\.", head, re.M)
        is not None
    )
    if looks_config and len(head) < HEAD_BYTES and not compressed:
        try:
            document = yaml.safe_load(head.decode("utf-8"))
        except (UnicodeDecodeError, yaml.YAMLError):
            document = _flat_config(head.decode("utf-8", "replace"))
        if isinstance(document, dict):
            return "flink-config", flatten_config(document), _count_lines(head)
    return None


def _count_lines(data: bytes) -> int:
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def _flat_config(text: str) -> dict[str, str]:
    """Flink's own flat 'key: value' reader, for flink-conf.yaml files that are not valid YAML."""
    config: dict[str, str] = {}
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if ":" in line:
            key, value = line.split(":", 1)
            config[key.strip()] = value.strip()
    return config


def flatten_config(document: JSONObject, prefix: str = "") -> JSONObject:
    """Nested YAML (Flink 2.x config.yaml) as the flat dotted keys of flink-conf.yaml."""
    flat: JSONObject = {}
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
    votes = marker_votes(text)
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


def marker_votes(text: str) -> dict[str, int]:
    """Per kind, the occurrences of its markers in the text (str.count's, summed), in one pass over it: a head is
    up to HEAD_BYTES and counting each marker on its own read it once per marker (1.3 ms a 100 KB head)."""
    counter = _marker_counter()
    if counter is None:
        return {kind: sum(text.count(marker) for marker in markers) for kind, markers in KIND_MARKERS.items()}
    database, owners = counter
    counts = [0] * len(owners)

    def found(pattern: int, start: int, end: int, flags: int, context: object) -> None:
        counts[pattern] += 1

    database.scan(text.encode("utf-8", "surrogatepass"), match_event_handler=found)
    votes = dict.fromkeys(KIND_MARKERS, 0)
    for kind, count in zip(owners, counts, strict=True):
        votes[kind] += count
    return votes


@cache
def _marker_counter() -> tuple[Any, tuple[str, ...]] | None:
    """(Hyperscan database of every marker, the kind of each pattern), or None without Hyperscan or when a marker
    is not plain ASCII or could overlap itself ('abab'): Hyperscan reports every occurrence, overlapping ones too,
    str.count only the ones that do not overlap; the two agree when no occurrence can overlap another of itself.
    Occurrences of different markers may overlap ('StandaloneResourceManager', 'ResourceManager') and are each
    reported, as str.count counts them."""
    try:
        import hyperscan
    except ImportError:
        return None
    markers = [(kind, marker) for kind, kinds in KIND_MARKERS.items() for marker in kinds]
    if not all(marker.isascii() and not _overlaps_itself(marker) for _, marker in markers):
        return None
    database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    database.compile(
        expressions=[re.escape(marker).encode("ascii") for _, marker in markers],
        ids=list(range(len(markers))),
        elements=len(markers),
        flags=[0] * len(markers),
    )
    return database, tuple(kind for kind, _ in markers)


def _overlaps_itself(marker: str) -> bool:
    """Whether two occurrences of the marker can overlap: some proper prefix of it is also its suffix."""
    return any(marker[:n] == marker[-n:] for n in range(1, len(marker)))


FLINK_LOG_HOST = re.compile(
    r"flink-[^/]*?-(?:standalonesession|taskexecutor|jobmanager|taskmanager|historyserver|client|zookeeper)"
    r"(?:-\d+)?-([A-Za-z0-9][A-Za-z0-9.-]*?)\.(?:log|out)(?:\.\d+)?$"
)


def host_from_path(path: str) -> str | None:
    """Flink names its log files flink-<user>-<service>-<n>-<host>.log: the host the process ran on."""
    m = FLINK_LOG_HOST.search(path)
    return m.group(1) if m else None
