"""collect(): one bundle from a running cluster's REST API: snapshots of the cluster, its jobs and TaskManagers,
then the logs of the JobManager and every TaskManager (the last `max_log_bytes` of each).

Nothing the cluster answers is trusted: a failed request is a line in the collector's log and an entry in
collect.json, never a crash; a TaskManager that goes away mid-collection is noted and the rest is collected; names
become safe path parts. Only an unreachable JobManager (nothing at all can be collected) raises.
"""

from __future__ import annotations

import os
import re
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from . import endpoints as ep
from .bundle import BundleWriter, stamp
from .client import RestClient, RestError, Tail, redact, segment
from .names import host_of, safe_name

DEFAULT_MAX_LOG_BYTES = 64 * 1024 * 1024
# the log of one Flink daemon, as bin/flink-daemon.sh names it: flink-<user>-<daemon>-<instance>-<host>.log
DAEMON_LOG = re.compile(r"-(standalonesession|standalonejob|taskexecutor|zookeeper|historyserver|sql-gateway)-(\d+)-")


@dataclass
class CollectResult:
    path: Path  # the archive (or folder)
    seconds: float
    flink_version: str | None
    jobs: list[str]
    taskmanagers: int
    logs: int
    notes: list[str] = field(default_factory=list)  # what could not be fetched, what was cut


class Unreachable(RestError):
    """The JobManager answers nothing: there is no bundle to write."""


@dataclass
class _Log:
    component: str  # jobmanager | taskmanager
    host: str
    owner: str  # "" for the JobManager, the TaskManager id otherwise
    name: str
    size: int | None
    url: str


class _Collector:
    def __init__(self, client: RestClient, bundle: BundleWriter, max_log_bytes: int):
        self.client = client
        self.bundle = bundle
        self.max_log_bytes = max_log_bytes
        self.rest_dir = f"rest/{stamp()}"
        self.version: str | None = None

    def fetch(self, path: str, relative: str, what: str) -> object | None:
        """GET JSON into rest/<time>/<relative>; None (noted) when there is no answer."""
        try:
            document, body = self.client.get_json(path)
        except RestError as err:
            self.bundle.record(path, status=err.status, error=err.kind, message=str(err))
            reason = "not served by this Flink version" if err.status == 404 else err.kind
            self.bundle.log(f"could not fetch {what} (GET {path}): {reason}: {err}")
            if err.kind in ("refused", "timeout") and what == "the web UI config":
                raise Unreachable(err.path, err.kind, str(err)) from None
            return None
        file = self.bundle.write_json(f"{self.rest_dir}/{relative}.json", document)
        self.bundle.record(path, status=200, bytes=len(body), file=file)
        return document

    def cluster(self) -> dict:
        found = {}
        for stem, path in ep.CLUSTER:
            what = "the web UI config" if stem == "config" else stem
            if stem.endswith("metrics"):
                self.metrics(path, stem, what)
                continue
            document = found[stem] = self.fetch(path, stem, what)
            if stem == "config" and isinstance(document, dict):
                self.version = str(document.get("flink-version") or "") or None
        return found

    def jobs(self, overview: object, only: tuple[str, ...]) -> list[str]:
        jobs = overview.get("jobs") if isinstance(overview, dict) else None
        listed = [j for j in jobs or [] if isinstance(j, dict) and isinstance(j.get("jid"), str)]
        if only:
            chosen = [j for j in listed if j["jid"] in only]
            for missing in set(only) - {j["jid"] for j in chosen}:
                self.bundle.log(f"job {missing} is not listed by /jobs/overview")
        else:
            chosen = [j for j in listed if j.get("state") in ep.ACTIVE_STATES]
        chosen.sort(key=lambda j: -_number(j.get("last-modification")))
        if len(chosen) > ep.MAX_JOBS:
            self.bundle.log(f"{len(chosen)} jobs; collecting the {ep.MAX_JOBS} modified last")
        ids = []
        for job in chosen[: ep.MAX_JOBS]:
            jid = job["jid"]
            folder = f"jobs/{safe_name(jid)}"
            documents = {
                stem: self.fetch(path.format(job=segment(jid)), f"{folder}/{stem}", f"job {jid} {stem}")
                for stem, path in ep.JOB
            }
            for checkpoint in _checkpoints_to_detail(documents.get("checkpoints")):
                self.fetch(
                    ep.CHECKPOINT.format(job=segment(jid), checkpoint=checkpoint),
                    f"{folder}/checkpoint-{checkpoint}",
                    f"job {jid} checkpoint {checkpoint}",
                )
            ids.append(jid)
        return ids

    def taskmanagers(self, listing: object) -> list[tuple[str, str]]:
        """(id, host) of every TaskManager listed; details, metrics and thread dump of each."""
        tms = listing.get("taskmanagers") if isinstance(listing, dict) else None
        found = []
        for tm in tms or []:
            if not isinstance(tm, dict) or not isinstance(tm.get("id"), str):
                continue
            tm_id, host = tm["id"], host_of(tm.get("path") or tm["id"])
            folder = f"taskmanagers/{safe_name(tm_id)}"
            for stem, path in ep.TASKMANAGER:
                if stem == "metrics":
                    self.metrics(path.format(tm=segment(tm_id)), f"{folder}/{stem}", f"TaskManager {tm_id} metrics")
                else:
                    self.fetch(path.format(tm=segment(tm_id)), f"{folder}/{stem}", f"TaskManager {tm_id} {stem}")
            found.append((tm_id, host))
        return found

    def metrics(self, path: str, relative: str, what: str) -> None:
        """Metric ids first, then their values in one request."""
        try:
            names, _ = self.client.get_json(path)
        except RestError as err:
            self.bundle.record(path, status=err.status, error=err.kind, message=str(err))
            self.bundle.log(f"could not list {what} (GET {path}): {err}")
            return
        ids = (
            [m["id"] for m in names if isinstance(m, dict) and isinstance(m.get("id"), str)]
            if isinstance(names, list)
            else []
        )
        query = ""
        for metric in sorted(ids)[: ep.MAX_METRICS]:  # Flink's HTTP server refuses request lines over 4 KiB
            if len(path) + len(query) + len(segment(metric)) > ep.MAX_QUERY:
                break
            query += ("," if query else "?get=") + segment(metric)
        if query:
            self.fetch(path + query, relative, what)

    def log_listing(self, tms: list[tuple[str, str]]) -> list[_Log]:
        """Every log file the JobManager and each TaskManager list, one copy of each file.

        Processes on one host that list the same file names, among them the logs of two Flink daemons
        (flink-<user>-standalonesession-0-<host>.log and ...-taskexecutor-0-...), share one log folder (a standalone
        cluster: the JobManager lists the TaskManagers' logs too, with sizes that grow between listings). Such a
        folder's files are fetched once each, from the process its name says wrote it. Processes with folders of
        their own (YARN containers, pods) keep every file, even when the names are the same (taskmanager.log)."""
        listings = [("jobmanager", self.client.connection.host, "", ep.JOBMANAGER_LOGS)]
        listings += [("taskmanager", host, tm_id, ep.TASKMANAGER_LOGS.format(tm=segment(tm_id))) for tm_id, host in tms]
        folders: dict[tuple[str, frozenset[str]], list[tuple[str, str, dict[str, int | None]]]] = {}
        for component, host, owner, path in listings:
            document = self.fetch(path, f"{component}-logs-{safe_name(owner or host)}", f"the {component} log list")
            entries = document.get("logs") if isinstance(document, dict) else None
            files = {
                e["name"]: e.get("size") if isinstance(e.get("size"), int) else None
                for e in entries or []
                if isinstance(e, dict) and isinstance(e.get("name"), str)
            }
            folders.setdefault((host, frozenset(files)), []).append((component, owner, files))
        logs = []
        for (host, names), group in folders.items():
            shared = len({m.groups() for m in map(DAEMON_LOG.search, names) if m}) >= 2
            for processes in [group] if shared else [[p] for p in group]:
                logs += self._one_each(host, names, processes)
        return logs

    @staticmethod
    def _one_each(host: str, names: frozenset[str], processes: list) -> list[_Log]:
        logs = []
        for name in sorted(names):
            component, owner, files = next((p for p in processes if p[0] == _written_by(name)), processes[0])
            url = (
                ep.JOBMANAGER_LOG.format(name=segment(name))
                if component == "jobmanager"
                else ep.TASKMANAGER_LOG.format(tm=segment(owner), name=segment(name))
            )
            logs.append(_Log(component, host, owner, name, files[name], url))
        return logs

    def fetch_log(self, log: _Log) -> bool:
        where = f"{log.component}/{safe_name(log.host)}" + (f"/{safe_name(log.owner)}" if log.owner else "")
        relative = f"{where}/{safe_name(log.name)}"
        try:
            tail = self.client.get_tail(log.url, self.max_log_bytes)
        except RestError as err:
            self.bundle.record(log.url, status=err.status, error=err.kind, message=str(err))
            gone = f" (TaskManager {log.owner} may have gone away)" if log.owner else ""
            self.bundle.log(f"could not fetch log {log.name} of the {log.component}{gone}: {err}")
            return False
        data = _from_line_start(tail)
        file = self.bundle.write(relative, data)
        entry = self.bundle.record(log.url, status=200, bytes=tail.total, kept=len(data), file=file)
        if tail.truncated:
            entry["truncated"] = f"kept the last {len(data)} of {tail.total} bytes"
            self.bundle.log(
                f"log {file}: kept the last {_mib(len(data))} of {_mib(tail.total)} "
                f"(--max-log-mb {_mib(self.max_log_bytes, unit=False)}); it starts at a line boundary"
            )
        return True


def collect(
    client: RestClient,
    out: Path,
    *,
    max_log_bytes: int = DEFAULT_MAX_LOG_BYTES,
    jobs: tuple[str, ...] = (),
    folder_only: bool = False,
    progress: Callable[[str], None] = lambda message: None,
) -> CollectResult:
    """Collect a bundle into `out` (a .tar.gz path, or a folder with `folder_only`); raises Unreachable when the
    JobManager answers nothing at all."""
    started = time.perf_counter()
    out = Path(out)
    name = out.name.removesuffix(".tar.gz").removesuffix(".tgz")
    folder = out if folder_only else out.with_name(f".{name}.{os.getpid()}.{time.monotonic_ns()}.collecting")
    connection = client.connection
    bundle = BundleWriter(
        folder,
        name,
        {"rest_url": redact(connection.url), "max_log_bytes": max_log_bytes},
        secrets=(connection.password, connection.token),
    )
    collector = _Collector(client, bundle, max_log_bytes)
    try:
        progress(f"collecting from {redact(connection.url)}")
        found = collector.cluster()
        if not bundle.written:
            first = next((r for r in bundle.requests if r.get("error")), {})
            raise Unreachable(first.get("path", "/"), first.get("error", "other"), first.get("message", "no answer"))
        job_ids = collector.jobs(found.get("jobs-overview"), jobs)
        tms = collector.taskmanagers(found.get("taskmanagers"))
        logs = collector.log_listing(tms)
        progress(f"{len(job_ids)} jobs, {len(tms)} TaskManagers, {len(logs)} log files")
        fetched = sum(collector.fetch_log(log) for log in logs)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    seconds = round(time.perf_counter() - started, 3)
    path = bundle.finish(
        None if folder_only else out,
        flink_version=collector.version,
        jobs=job_ids,
        taskmanagers=[tm for tm, _ in tms],
        seconds=seconds,
    )
    notes = [line.split(" ", 1)[1] for line in bundle.lines]
    return CollectResult(path, seconds, collector.version, job_ids, len(tms), fetched, notes)


def _written_by(name: str) -> str | None:
    lowered = name.lower()
    if any(hint in lowered for hint in ("standalonesession", "jobmanager", "standalonejob", "application")):
        return "jobmanager"
    if any(hint in lowered for hint in ("taskexecutor", "taskmanager")):
        return "taskmanager"
    return None


def _checkpoints_to_detail(document: object) -> list[int]:
    """Ids of the latest completed, failed, savepoint and in-progress checkpoints (at most MAX_CHECKPOINT_DETAILS)."""
    if not isinstance(document, dict):
        return []
    ids: list[int] = []
    latest = document.get("latest")
    latest = latest if isinstance(latest, dict) else {}
    for kind in ("failed", "completed", "savepoint", "restored"):
        entry = latest.get(kind)
        if isinstance(entry, dict) and isinstance(entry.get("id"), int):
            ids.append(entry["id"])
    history = document.get("history")
    history = history if isinstance(history, list) else []
    ids += [
        h["id"]
        for h in history
        if isinstance(h, dict) and isinstance(h.get("id"), int) and h.get("status") == "IN_PROGRESS"
    ]
    ids += [h["id"] for h in history if isinstance(h, dict) and isinstance(h.get("id"), int)]
    return list(dict.fromkeys(ids))[: ep.MAX_CHECKPOINT_DETAILS]


def _from_line_start(tail: Tail) -> bytes:
    """A cut log starts at its first whole line."""
    if not tail.truncated:
        return tail.data
    newline = tail.data.find(b"\n")
    return tail.data[newline + 1 :] if 0 <= newline < len(tail.data) - 1 else tail.data


def _number(value: object) -> float:
    return float(value) if isinstance(value, (int, float)) else 0.0


def _mib(size: int, unit: bool = True) -> str:
    text = f"{size / 1024 / 1024:.1f}".removesuffix(".0")
    return f"{text} MiB" if unit else text
