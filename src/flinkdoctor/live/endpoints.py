"""What the collector fetches from the REST API, and the file each answer goes to in the bundle.

Paths as Flink 1.20 and 2.1 serve them (checked on the fault lab's real clusters, see tests/data/rest/README.md).
An endpoint a version does not serve answers 404: the collector notes it and goes on. `{job}`, `{tm}` and
`{checkpoint}` are filled in per job, TaskManager and checkpoint.
"""

from __future__ import annotations

# (file stem under rest/<time>/, REST path)
CLUSTER = (
    ("config", "/config"),  # the web UI's config: flink-version, time zone
    ("overview", "/overview"),
    ("jobs-overview", "/jobs/overview"),
    ("jobmanager-config", "/jobmanager/config"),
    ("jobmanager-environment", "/jobmanager/environment"),
    ("jobmanager-metrics", "/jobmanager/metrics"),
    ("jobmanager-thread-dump", "/jobmanager/thread-dump"),
    ("taskmanagers", "/taskmanagers"),
)
JOB = (
    ("job", "/jobs/{job}"),
    ("exceptions", "/jobs/{job}/exceptions?maxExceptions=20"),
    ("checkpoints", "/jobs/{job}/checkpoints"),
    ("checkpoints-config", "/jobs/{job}/checkpoints/config"),
    ("config", "/jobs/{job}/config"),
    ("jobmanager-config", "/jobs/{job}/jobmanager/config"),
)
CHECKPOINT = "/jobs/{job}/checkpoints/details/{checkpoint}"
TASKMANAGER = (
    ("details", "/taskmanagers/{tm}"),
    ("metrics", "/taskmanagers/{tm}/metrics"),
    ("thread-dump", "/taskmanagers/{tm}/thread-dump"),
)
JOBMANAGER_LOGS = "/jobmanager/logs"
JOBMANAGER_LOG = "/jobmanager/logs/{name}"
TASKMANAGER_LOGS = "/taskmanagers/{tm}/logs"
TASKMANAGER_LOG = "/taskmanagers/{tm}/logs/{name}"

# Job states worth collecting (running, failing, recently failed); finished and cancelled jobs are history.
ACTIVE_STATES = frozenset(
    {"INITIALIZING", "CREATED", "RUNNING", "FAILING", "FAILED", "CANCELLING", "RESTARTING", "SUSPENDED", "RECONCILING"}
)
MAX_JOBS = 20  # most recently modified first
MAX_CHECKPOINT_DETAILS = 5  # the latest failed, completed and in-progress checkpoints
MAX_METRICS = 200  # metric ids asked for in one ?get= request
MAX_QUERY = 3500  # characters of path and query (Flink's HTTP server refuses request lines over 4096)
