"""A Spark Python worker's first task, as a fresh worker runs it: what the worker pays once (bench/RESULTS.md).

    python bench/worker_start.py FILE [--part 0] [--runs 3] [--profile 40]

The scan's task function is pickled as events.build_events pickles it (cloudpickle: the matcher with the catalogue
index by its file, the measured rows' spec, the part's row), then each run is a fresh process that imports
pyspark.worker and sets a TaskContext, as a forked worker does, unpickles the function and runs the task twice.
Prints the CPU seconds of each step (`first_s`: unpickling and the first task; `again_s`: the task once more, the
worker warm) and the best of the runs; `--profile N`: the first run's unpickling and first task profiled.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from dataclasses import replace
from functools import partial
from pathlib import Path

WORKER = r"""
import cProfile, json, pstats, sys, time
started = time.process_time()
import pyspark.worker  # what the daemon's forked child imports before its first task
from pyspark import TaskContext, cloudpickle
import pyarrow as pa
TaskContext._getOrCreate()
imported = time.process_time()
payload = open(sys.argv[1], "rb").read()
ids = pa.ipc.open_stream(open(sys.argv[1] + ".ids", "rb").read()).read_next_batch()
profile = cProfile.Profile() if int(sys.argv[2]) else None
if profile: profile.enable()
t0 = time.process_time()
task = cloudpickle.loads(payload)
t1 = time.process_time()
for _ in task(iter([ids])): pass
t2 = time.process_time()
if profile: profile.disable()
task = cloudpickle.loads(payload)
t3 = time.process_time()
for _ in task(iter([ids])): pass
t4 = time.process_time()
print(json.dumps({"pyspark_s": round(imported - started, 3), "unpickle_s": round(t1 - t0, 3),
                  "first_s": round(t2 - t0, 3), "again_s": round(t4 - t3, 3)}))
if profile:
    pstats.Stats(profile, stream=sys.stderr).sort_stats("cumulative").print_stats(int(sys.argv[2]))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file")
    parser.add_argument("--part", type=int, default=0)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--profile", type=int, default=0, help="rows of the first run's profile (0: none)")
    args = parser.parse_args()

    import pyarrow as pa
    from pyspark import cloudpickle

    from flinkdoctor.analytics.metrics import load_metrics, measured_rows
    from flinkdoctor.knowledge.rulebook import load_rules
    from flinkdoctor.scan.catalogue import for_tasks
    from flinkdoctor.scan.events import SPLIT_BYTES, plan
    from flinkdoctor.scan.matcher import build_matcher
    from flinkdoctor.scan.scanner import part_rows, run
    from flinkdoctor.sources.ingest import ingest

    metrics = load_metrics()
    matcher = build_matcher(load_rules(), tuple(m.line for m in metrics))
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        manifest = ingest([args.file], work / "in")
        part = [p for task in plan(manifest.text_sources, SPLIT_BYTES) for p in task][args.part]
        (work / "events").mkdir()
        (work / "measures").mkdir()
        task = partial(
            run,
            plan=part_rows([[part]]),
            prefilter=matcher.prefilter,
            out_dir=str(work / "events"),
            matcher=replace(matcher, catalogue=for_tasks(matcher.catalogue, work)),
            measured=replace(measured_rows(metrics), out_dir=str(work / "measures")),
        )
        pickled = work / "task.pickle"
        pickled.write_bytes(cloudpickle.dumps(task))
        ids = pa.record_batch([pa.array([0], pa.int64())], names=["id"])
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, ids.schema) as stream:
            stream.write_batch(ids)
        Path(f"{pickled}.ids").write_bytes(sink.getvalue().to_pybytes())
        found = []
        for i in range(args.runs):
            profile = str(args.profile if i == 0 else 0)
            done = subprocess.run([sys.executable, "-c", WORKER, str(pickled), profile], capture_output=True, text=True)
            if done.returncode:
                sys.exit(done.stderr)
            print(done.stdout.strip(), flush=True)
            if i == 0 and args.profile:
                print(done.stderr)
            found.append(json.loads(done.stdout))
        print("best", json.dumps({key: min(f[key] for f in found) for key in found[0]}))


if __name__ == "__main__":
    main()
