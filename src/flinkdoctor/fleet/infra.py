"""The shared infrastructure a bundle or a finding points at: host, storage (the HDFS/S3 authority of a path),
ZooKeeper quorum, Kafka cluster. The resources shared incidents are found on."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..sources.ingest import Source

# the user-info of a URL (`s3a://KEY:SECRET@bucket`) is no part of the storage's identity, and never kept
AUTHORITY = re.compile(r"^(hdfs|viewfs|s3a?|s3n|gs|abfss?|oss|wasbs?)://(?:[^/@\s]*@)?([^/\s'\"@]+)", re.I)
STORAGE_KEYS = (
    "state.checkpoints.dir",
    "execution.checkpointing.dir",
    "state.savepoints.dir",
    "execution.checkpointing.savepoint-dir",
    "high-availability.storageDir",
    "high-availability.storagedir",
)
ZK_KEYS = ("high-availability.zookeeper.quorum",)
KAFKA_TEXT = re.compile(
    r"bootstrap\.servers\s*[=:]\s*\[?([A-Za-z0-9.\-]+:\d+)|node -?\d+ \(([A-Za-z0-9.\-]+)(?:/[\d.]+)?:(\d+)"
)
# categories whose findings are about the storage, the quorum or the Kafka cluster the bundle is configured with
STORAGE_CATEGORIES = ("checkpoint-storage", "hdfs", "savepoint")
ZK_CATEGORIES = ("zookeeper", "ha-")
KAFKA_CATEGORIES = ("kafka",)
# categories whose cause is the job's own (its code, classpath, configuration, state, heap): a host cannot share
# it with the other jobs it runs, so jobs on one host showing it are never a shared incident of that host
JOB_CATEGORIES = frozenset(
    {
        "user-code-error",
        "serialization-error",
        "dependency-conflict",
        "config-invalid",
        "state-restore-incompatible",
        "state-size-limit",
        "jvm-heap-oom",
        "jvm-metaspace-oom",
        "checkpoint-declined",
        "kafka-transaction-timeout",
        "network-buffers-insufficient",
        "connector-error",
        "other",
    }
)


def authority(path: str | None) -> str | None:
    """`hdfs://nn:8020/x` -> `nn:8020`; a path without one (hdfs:/x, file:///x) names no shared storage."""
    m = AUTHORITY.match(path or "")
    return m.group(2).lower() if m else None


def kafka_cluster(text: str | None) -> str | None:
    m = KAFKA_TEXT.search(text or "")
    if not m:
        return None
    return (m.group(1) or f"{m.group(2)}:{m.group(3)}").lower()


def quorum(value: str) -> str:
    """A ZooKeeper quorum as a stable key: its servers sorted (the order in the config is not the identity)."""
    return ",".join(sorted(part.strip().lower() for part in value.split(",") if part.strip()))


def bundle_infra(sources: Sequence[Source]) -> dict[str, set[str]]:
    """Hosts, storage authorities, ZooKeeper quorums and Kafka clusters named by a bundle's files and config."""
    found: dict[str, set[str]] = {"host": set(), "storage": set(), "zookeeper": set(), "kafka": set()}
    for source in sources:
        if source.host:
            found["host"].add(source.host)
        document = source.document
        if source.kind != "flink-config" or not isinstance(document, dict):
            continue
        for key in STORAGE_KEYS:
            if isinstance(document.get(key), str) and authority(document[key]):
                found["storage"].add(authority(document[key]) or "")
        for key in ZK_KEYS:
            if isinstance(document.get(key), str) and document[key].strip():
                found["zookeeper"].add(quorum(document[key]))
    return found


def finding_keys(category: str, host: str | None, hdfs_path: str | None, text: str, infra: dict) -> dict:
    """The infrastructure one finding points at: its own host and path first, the bundle's config second
    (only for categories about that piece of infrastructure)."""
    storage = authority(hdfs_path)
    if storage is None and category.startswith(STORAGE_CATEGORIES) and len(infra["storage"]) == 1:
        storage = next(iter(infra["storage"]))
    zookeeper = next(iter(infra["zookeeper"])) if category.startswith(ZK_CATEGORIES) and infra["zookeeper"] else None
    kafka = kafka_cluster(text) if category.startswith(KAFKA_CATEGORIES) else None
    return {"host": host, "storage": storage, "zookeeper": zookeeper, "kafka": kafka}
