"""REST snapshots and the bundle an operator would hand over: logs, .out files, REST JSON, config.

REST bodies are stored byte for byte as the JobManager sent them; what we add about the run
(scenario, versions, times, requests made) goes to lab.json, never into Flink's own files.
"""

from __future__ import annotations

import http.client
import json
import shutil
import tarfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

# file stem -> REST path ({job} is the job id)
ENDPOINTS = {
    "overview": "/overview",
    "jobs-overview": "/jobs/overview",
    "jobmanager-config": "/jobmanager/config",
    "taskmanagers": "/taskmanagers",
    "job": "/jobs/{job}",
    "job-checkpoints": "/jobs/{job}/checkpoints",
    "job-checkpoints-config": "/jobs/{job}/checkpoints/config",
    "job-exceptions": "/jobs/{job}/exceptions",
    "job-config": "/jobs/{job}/config",
}


def snapshot(rest_url: str, job_id: str | None, dest: Path, timeout: float = 5.0) -> list[dict]:
    """Fetch every endpoint into dest/<stem>.json; return what happened for each (for lab.json).

    A frozen JobManager does not answer: the failure is recorded, not raised, because that silence
    is itself what the scenario shows.
    """
    dest.mkdir(parents=True, exist_ok=True)
    records = []
    for stem, path in ENDPOINTS.items():
        if "{job}" in path and not job_id:
            continue
        url_path = path.format(job=job_id)
        rec: dict[str, Any] = {"file": f"{dest.name}/{stem}.json", "path": url_path, "time": _now()}
        try:
            with urllib.request.urlopen(rest_url + url_path, timeout=timeout) as r:
                body = r.read()
            (dest / f"{stem}.json").write_bytes(body)
            rec["status"] = 200
        except urllib.error.HTTPError as e:
            rec["status"] = e.code
            rec.pop("file")
        except (OSError, http.client.HTTPException) as e:  # timeout, refused: the JobManager is not answering
            rec["error"] = f"{type(e).__name__}: {e}"
            rec.pop("file")
            records.append(rec)
            break
        records.append(rec)
    return records


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def finish(run_dir: Path, meta: dict, tar: bool) -> Path:
    """Drop the run's scratch space, write lab.json; with `tar`, replace the folder by <run_dir>.tar.gz."""
    shutil.rmtree(run_dir / "tmp", ignore_errors=True)
    (run_dir / "lab.json").write_text(json.dumps(meta, indent=2) + "\n")
    if not tar:
        return run_dir
    archive = run_dir.with_name(run_dir.name + ".tar.gz")
    with tarfile.open(archive, "w:gz", compresslevel=9) as tf:
        for p in sorted(run_dir.rglob("*")):
            if p.is_file():
                tf.add(p, arcname=f"{run_dir.name}/{p.relative_to(run_dir)}")
    shutil.rmtree(run_dir)
    return archive
