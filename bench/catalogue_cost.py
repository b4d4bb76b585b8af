"""What the failure catalogue's pass costs a diagnosis: the same bundles diagnosed with and without it, in one
Spark session, alternately, and the driver's cost of the catalogue's index with its cache cold and warm.

    python bench/catalogue_cost.py BUNDLE... [--runs 3]

Run it under the Spark lock (flock /tmp/flinkdoctor-spark.lock ...). Per bundle it prints the best of `runs` of
each (the whole diagnose_bundles, and its scan), the catalogue's hits, and the difference.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

INDEX = """
import time
t0 = time.perf_counter()
from flinkdoctor.scan.catalogue import shipped_index
index = shipped_index()
t1 = time.perf_counter()
from flinkdoctor.knowledge.catalogue import load_catalogue
load_catalogue()
t2 = time.perf_counter()
print(t1 - t0, t2 - t1, len(index.patterns), len(index.compiled or b""))
"""


def index_cost() -> dict:
    """The scan's index of the shipped catalogue (what build_matcher asks for), then the catalogue itself (what
    the diagnosis' fallback loads when it derives a cause), in fresh processes: a state folder without them (the
    index is compiled and stored), then the same folder again (read back)."""
    with tempfile.TemporaryDirectory() as state:
        env = {**os.environ, "FLINKDOCTOR_STATE_DIR": state}
        out = {}
        for name in ("cold", "warm"):
            start = time.perf_counter()
            run = subprocess.run([sys.executable, "-c", INDEX], env=env, capture_output=True, text=True, check=True)
            index_s, load_s, patterns, size = run.stdout.split()
            out[name] = {
                "process_s": round(time.perf_counter() - start, 2),
                "load_catalogue_s": round(float(load_s), 2),
                "index_s": round(float(index_s), 2),
            }
        out["patterns"], out["database_bytes"] = int(patterns), int(size)
        return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("bundles", nargs="+")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    print(json.dumps({"index": index_cost()}), flush=True)

    import flinkdoctor.pipeline as pipeline
    from flinkdoctor.knowledge.rulebook import load_rules
    from flinkdoctor.runtime.spark import spark_session
    from flinkdoctor.scan.matcher import build_matcher
    from flinkdoctor.sources.ingest import ingest

    spark = spark_session()
    rules = load_rules()
    for bundle in args.bundles:
        with tempfile.TemporaryDirectory() as work:
            manifest = ingest([bundle], Path(work) / "in")
            best: dict[str, dict] = {}
            for run in range(args.runs):
                for catalogue in ("shipped", None) if run % 2 == 0 else (None, "shipped"):
                    pipeline.build_matcher = lambda r, m, c=catalogue: build_matcher(r, m, c)
                    start = time.perf_counter()
                    done = pipeline.diagnose_bundles(spark, [manifest], Path(work) / f"w{run}-{catalogue}", rules)
                    seconds = time.perf_counter() - start
                    name = "with" if catalogue else "without"
                    timings = done.reports[0].timings
                    row = {
                        "total_s": round(seconds, 2),
                        "events_s": timings["events_s"],
                        "catalogued": done.events.stats.get("catalogued", 0),
                        "hits": sum(h.count for h in done.catalogue_hits[0]),
                        "entries": len(done.catalogue_hits[0]),
                        "root_causes": [r.rule for r in done.reports[0].root_causes],
                    }
                    if name not in best or row["total_s"] < best[name]["total_s"]:
                        best[name] = row
            added = round(best["with"]["total_s"] - best["without"]["total_s"], 2)
            print(json.dumps({"bundle": bundle, **best, "added_s": added}), flush=True)


if __name__ == "__main__":
    main()
