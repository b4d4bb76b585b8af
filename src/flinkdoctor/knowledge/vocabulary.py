"""The closed vocabularies of the knowledge base and the report, in one place: rule and layout schemas, the
loader, the models and the tests read them from here, so a category or a source kind is added once. Those the
models carry are `Literal` types as well, so the type checker holds every value to its list.

CATEGORIES is the root-cause category contract (reports, dashboards and accuracy scoring group by it), copied
with its descriptions from the project's shared knowledge base (kb/categories.md, the table "Root-cause
categories"); the list grows by decision, not by accident. SOURCE_KINDS are the kinds ingest.py gives a source.
"""

from __future__ import annotations

from typing import Literal, NamedTuple, get_args


class Category(NamedTuple):
    meaning: str  # the root cause is ...
    evidence: str  # typical evidence in logs


CATEGORIES: dict[str, Category] = {
    "checkpoint-timeout": Category(
        "checkpoints do not finish within the checkpoint timeout (large state, slow snapshot, barriers stuck behind "
        "backpressure, timeout/interval set too tight)",
        "`Checkpoint N of job ... expired before completing`; `Checkpoint expired before completing`; `Exceeded "
        "checkpoint tolerable failure threshold`",
    ),
    "checkpoint-declined": Category(
        "a task declines or aborts checkpoints (tasks not running or finished, barrier alignment aborted, snapshot "
        "exception in user code or connector)",
        "`Decline checkpoint`, `Checkpoint was declined`, `tasks not ready`, `CheckpointDeclineTaskNotReadyException`",
    ),
    "checkpoint-storage-slow": Category(
        "the checkpoint storage (HDFS, S3, OSS) is reachable but too slow: writes or closes take longer than the "
        "timeout (e.g. DataNode DirectoryScanner stalls, HDFS-14476)",
        "long close/flush of `chk-N` files, DataNode slow-write / lock-held warnings, periodic failures",
    ),
    "checkpoint-storage-error": Category(
        "writing or reading checkpoint/savepoint data fails (filesystem plugin missing, credentials, permissions, "
        "disk quota, lost lease on a chk-N file)",
        "`Could not materialize checkpoint`, `Could not flush and close the file system output stream`, S3/HDFS "
        "exceptions under the checkpoint path",
    ),
    "state-size-limit": Category(
        "state exceeds a hard limit of the configured backend or storage (the JobManager / memory backend's 5 MB "
        "default, akka/pekko frame size for state handles)",
        "`Size of the state is larger than the maximum permitted memory-backed state`",
    ),
    "state-restore-incompatible": Category(
        "a job cannot restore from a checkpoint or savepoint (operator UID changed, serializer incompatible, missing "
        "files)",
        "`Cannot map checkpoint/savepoint state for operator`, `Failed to rollback to checkpoint/savepoint`, "
        "`StateMigrationException`",
    ),
    "host-stall": Category(
        "the host or JVM stops running the process for seconds: kernel soft/hard lockup, hung task, long GC pause, "
        "swapping",
        "`NMI watchdog: BUG: soft lockup`, `INFO: task ... blocked for more than`, long GC pause lines, `have not "
        "heard from server in N ms` without a network fault",
    ),
    "zookeeper-connectivity": Category(
        "the ZooKeeper client loses or suspends its session (network, ZooKeeper server overload or leader election, "
        "session timeout too low), or the job treats SUSPENDED as lost (FLINK-10052)",
        "`Client session timed out`, `State change: SUSPENDED`/`LOST`, `Connection to ZooKeeper suspended`, `Session "
        "expired`",
    ),
    "ha-leadership-loss": Category(
        "the JobManager / ResourceManager / Dispatcher loses HA leadership for a reason inside HA (Kubernetes HA "
        "ConfigMap conflicts, split brain, lease renewal failures) not better explained by ZooKeeper or a host stall",
        "`lost the leadership`, `was revoked leadership`, `Job leader for job id ... lost leadership`",
    ),
    "taskmanager-lost": Category(
        "a TaskManager disappears (heartbeat timeout, process exit, pod/container removal) and nothing deeper "
        "explains it",
        "`Heartbeat of TaskManager with id ... timed out`, `TaskManager ... disconnected`, `Connection unexpectedly "
        "closed by remote task manager`",
    ),
    "network-failure": Category(
        "connections between JM and TM or between TMs break or are misaddressed (DNS, wrong advertised address, "
        "firewall, pod network)",
        "`Association with remote system ... has failed`, `RemoteTransportException`, `Connection refused` between "
        "Flink processes, `UnknownHostException`",
    ),
    "network-buffers-insufficient": Category(
        "the network stack lacks memory for the job's parallelism / shuffle", "`Insufficient number of network buffers`"
    ),
    "resources-unavailable": Category(
        "slots or TaskManagers cannot be obtained (parallelism above slots, quota, pending pods)",
        "`NoResourceAvailableException`, `Could not acquire the minimum required resources`, `Slot request bulk is "
        "not fulfillable`",
    ),
    "container-memory-killed": Category(
        "YARN, Kubernetes or the kernel OOM killer kills the process for exceeding its memory limit",
        "`is running beyond physical memory limits`, `Container killed on request. Exit code is 143`, `OOMKilled`, "
        "exit code 137, `Out of memory: Killed process`",
    ),
    "jvm-heap-oom": Category(
        "the Java heap is exhausted", "`java.lang.OutOfMemoryError: Java heap space`, `GC overhead limit exceeded`"
    ),
    "jvm-metaspace-oom": Category(
        "Metaspace is exhausted (classloader leaks over restarts, metaspace too small)",
        "`java.lang.OutOfMemoryError: Metaspace`",
    ),
    "jvm-direct-oom": Category(
        "direct / native memory is exhausted, or threads cannot be created",
        "`OutOfMemoryError: Direct buffer memory`, `unable to create new native thread`",
    ),
    "hdfs-lease": Category(
        "an HDFS file written by a sink keeps its lease or stays open-for-write (interrupted close, client keeps "
        "renewing), or lease recovery races",
        "`Interrupted while waiting for data to be acknowledged by pipeline` during close, `OPENFORWRITE` in fsck, "
        "`AlreadyBeingCreatedException`, `LeaseExpiredException` on sink files",
    ),
    "hdfs-unavailable": Category(
        "HDFS itself fails for the job (NameNode safemode/failover, all DataNodes bad, no space)",
        "`All datanodes ... are bad`, `SafeModeException`, `could only be written to 0 of the 1 minReplication nodes`",
    ),
    "kafka-transaction-timeout": Category(
        "the exactly-once Kafka sink fails on transaction timing (`transaction.timeout.ms` above the broker max, "
        "transactions open across long restarts)",
        "`Transaction timeout is larger than the maximum value allowed by the broker`, `ProducerFencedException`, "
        "`InvalidTxnStateException`",
    ),
    "kafka-client-timeout": Category(
        "Kafka clients time out or expire records (broker down or moved, metadata, leader changes, "
        "`delivery.timeout.ms`) and no Flink-side cause explains it",
        "`Expiring N record(s) for`, `Timeout expired while fetching topic metadata`, `TimeoutException` from Kafka "
        "clients",
    ),
    "user-code-error": Category(
        "an exception thrown by the job's own code or data (NPE, parse error, bad record) fails tasks until restarts "
        "run out",
        "user-package frames at the top of the trace, `Recovery is suppressed by`, restart strategy exhausted",
    ),
    "dependency-conflict": Category(
        "classes or methods missing or incompatible on the classpath",
        "`ClassNotFoundException`, `NoSuchMethodError`, `NoClassDefFoundError`, `ClassCastException` across "
        "classloaders",
    ),
    "serialization-error": Category(
        "records or state cannot be (de)serialized",
        "Kryo exceptions, `InvalidClassException`, `NotSerializableException`",
    ),
    "config-invalid": Category(
        "a configuration error stops a process from starting or a feature from working (memory options that do not "
        "add up, unknown option values)",
        "`IllegalConfigurationException`, start-up script errors",
    ),
    "connector-error": Category(
        "a source/sink connector (Hudi, Iceberg, Paimon, JDBC, Elasticsearch, CDC, Pulsar) fails for its own reasons",
        "connector-package frames and messages",
    ),
    "disk-exhausted": Category(
        "local disk or file descriptors run out (RocksDB, spill, logs)",
        "`No space left on device`, `Too many open files`",
    ),
    "other": Category("a real root cause that fits none of the above", ""),
}

# What ingest.py classifies a source as (classify(), the structured sources, the YARN index of an aggregated log).
SOURCE_KINDS: tuple[str, ...] = (
    "flink-jobmanager",
    "flink-taskmanager",
    "flink-client",
    "hdfs-namenode",
    "hdfs-datanode",
    "zookeeper",
    "kernel",
    "yarn-nodemanager",
    "kubernetes",
    "flink-rest-json",
    "flink-config",
    "hdfs-fsck",
    "yarn-index",
    "unknown",
)
# A rule's part in a diagnosis: a cause can be a root cause; a symptom is explained by one; context only informs.
Role = Literal["cause", "symptom", "context"]
ROLES: tuple[Role, ...] = get_args(Role)
# What a rule's match rests on: its own signature (a message, an exception, a state), or only the code a stack
# frame is in (a connector's, the job's own): a `frame` cause ranks below what the failure's own exception says
# more specifically (diagnosis/fallback.py, SPECIFICITY).
Attribution = Literal["signature", "frame"]
ATTRIBUTIONS: tuple[Attribution, ...] = get_args(Attribution)
# Which step of the specificity ladder answered a root cause (README, "How a cause is chosen"), most specific
# first: a cause rule's signature, a catalogued message, a catalogued exception class, the throwing package, a
# frame's package (also a rule with `attribution: frame`), an exception class of the job's own code, a failure line.
AnsweredBy = Literal[
    "rule",
    "catalogued-message",
    "catalogued-class",
    "throwing-package",
    "frame-package",
    "user-class",
    "failure-line",
]
ANSWERED_BY: tuple[AnsweredBy, ...] = get_args(AnsweredBy)
# Log levels a signature can require (layouts upper-case the level they read); NONE: the event has no level (its
# layout reads none, as a person's timeline or a dated line, or it has no header, as a pasted trace).
Level = Literal["TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL", "NONE"]
LEVELS: tuple[Level, ...] = get_args(Level)
# A diagnosis's answer: a signature names the cause; the cause is derived from the failure's own exception chain;
# the input shows no failure.
Verdict = Literal["known-cause", "derived-cause", "no-failure"]
VERDICTS: tuple[Verdict, ...] = get_args(Verdict)
# How a checkpoint ended, as the analytics read it (in_progress: triggered, no end seen).
CheckpointStatus = Literal["completed", "declined", "expired", "failed", "in_progress"]
CHECKPOINT_STATUSES: tuple[CheckpointStatus, ...] = get_args(CheckpointStatus)
# How risky a setting of the configuration audit is.
Severity = Literal["info", "warning", "critical"]
SEVERITIES: tuple[Severity, ...] = get_args(Severity)
# Where a cause and its effect must both be for a relation to link them (unknown host/job counts as compatible).
SCOPES: tuple[str, ...] = ("any", "host", "job", "source")
# Units of a rule's captured values.
UNITS: tuple[str, ...] = ("ms", "s", "bytes", "count", "text")
