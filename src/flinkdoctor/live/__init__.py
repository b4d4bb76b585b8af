"""Live: collect an incident bundle from a running Flink cluster's REST API, and watch a cluster for incidents.

client.py     one HTTP client for the JobManager's REST API (timeouts, retries, TLS, basic/bearer auth)
endpoints.py  what is fetched, and where it goes in the bundle
names.py      names from the REST API made safe as path parts
bundle.py     the bundle being written: files, the collector's own log, collect.json, the archive
collector.py  collect(): every snapshot and log into one bundle
triggers.py   when a poll shows an incident (job state, exceptions, checkpoints), as pure functions
watcher.py    the poll loop: incident -> bundle -> diagnosis -> one JSON line (and a webhook)
commands.py   the click commands (`collect`, `watch`) and the connection options `diagnose --rest` shares
"""

from __future__ import annotations

from .client import Connection, RestClient, RestError
from .collector import CollectResult, collect

__all__ = ["CollectResult", "Connection", "RestClient", "RestError", "collect"]
