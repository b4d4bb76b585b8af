"""Benchmark: `flinkdoctor fleet` over a generated fleet (tests/fleetgen.py) against single `diagnose` runs,
against `diagnose` of the same bytes as one bundle, and against Spark's floor over the same files.

    python bench/fleet_bench.py --bundles 1000 [--sizes 250,500] [--sample 3] [--out /tmp/fleet-bench]

Every run is its own process (a cold JVM, as a user has it); peak RSS is sampled for the driver (python), the
JVM (in local mode the executors run inside it) and the Python workers the executors start. Sizes below
--bundles are served from the same fleet (links to its first bundles), so growth is measured on equal bundles.
Prints a JSON summary and a Markdown table (bench/RESULTS.md, Fleet).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(HERE), str(ROOT / "tests")]

from fleetgen import generate  # noqa: E402

from bench import PeakRss, _descendants  # noqa: E402

FLOOR = """
import sys, time
t0 = time.perf_counter()
from flinkdoctor.runtime.spark import spark_session
from pyspark.sql import functions as F
spark = spark_session()
t1 = time.perf_counter()
frame = spark.read.option("recursiveFileLookup", "true").option("ignoreCorruptFiles", "true").text(sys.argv[1])
n = frame.filter(F.col("value").contains("Exception")).count()
print(t1 - t0, time.perf_counter() - t1, n)
"""


class TreeRss(PeakRss):
    """PeakRss plus the summed RSS of the Python workers (the executors' side of local mode)."""

    def __init__(self, pid: int):
        super().__init__(pid)
        self.workers = 0

    def run(self):
        while self.running:
            total = 0
            for pid in _descendants(self.pid):
                try:
                    status = Path(f"/proc/{pid}/status").read_text()
                except OSError:
                    continue
                name = re.search(r"Name:\s+(\S+)", status)
                rss = re.search(r"VmRSS:\s+(\d+)", status)
                if name and rss and name.group(1).startswith("python"):
                    total += int(rss.group(1)) * 1024
            self.workers = max(self.workers, total)
            super_sample(self)
            time.sleep(0.2)


def super_sample(sampler: PeakRss) -> None:
    for pid in [sampler.pid] + _descendants(sampler.pid):
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        name, rss = re.search(r"Name:\s+(\S+)", status), re.search(r"VmRSS:\s+(\d+)", status)
        if not (name and rss):
            continue
        if name.group(1) == "java":
            sampler.java = max(sampler.java, int(rss.group(1)) * 1024)
        elif pid == sampler.pid:
            sampler.python = max(sampler.python, int(rss.group(1)) * 1024)


def timed(cmd: list[str], env: dict) -> tuple[float, TreeRss, subprocess.CompletedProcess]:
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    sampler = TreeRss(proc.pid)
    sampler.start()
    stdout, stderr = proc.communicate()
    sampler.running = False
    done = subprocess.CompletedProcess(cmd, proc.returncode, stdout, stderr)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:6])}... failed ({proc.returncode}): {stderr[-2000:]}")
    return time.perf_counter() - start, sampler, done


def subset(fleet: Path, size: int, into: Path) -> Path:
    """A root holding links to the first `size` bundles of the fleet."""
    if into.exists():
        return into
    into.mkdir(parents=True)
    for entry in sorted(fleet.iterdir())[:size]:
        (into / entry.name).symlink_to(entry.resolve())
    return into


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bundles", type=int, default=1000)
    parser.add_argument("--sizes", default="250,500", help="smaller fleets for the growth curve")
    parser.add_argument("--sample", type=int, default=3, help="single diagnose runs to estimate one bundle's cost")
    parser.add_argument("--out", type=Path, default=Path("/tmp/flinkdoctor-fleet-bench"))
    parser.add_argument("--fresh", action="store_true", help="measure every step again")
    args = parser.parse_args()
    out: Path = args.out
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    py = sys.executable
    fleet = out / f"fleet-{args.bundles}"
    if not fleet.exists():
        started = time.perf_counter()
        generate(fleet, args.bundles)
        print(f"generated {args.bundles} bundles in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    files = [p for p in fleet.rglob("*") if p.is_file()]
    size_bytes = sum(p.stat().st_size for p in files)
    saved = out / f"results-{args.bundles}.json"  # each step is kept: a re-run does only what is missing
    result: dict = json.loads(saved.read_text()) if saved.exists() and not args.fresh else {}
    result.update({"bundles": args.bundles, "files": len(files), "bytes": size_bytes})
    result.setdefault("fleet", {})

    def keep() -> None:
        saved.write_text(json.dumps(result, indent=2))

    sizes = sorted({int(s) for s in args.sizes.split(",") if s} | {args.bundles})
    for size in sizes:
        if str(size) in result["fleet"]:
            continue
        root = fleet if size == args.bundles else subset(fleet, size, out / f"root-{size}")
        lake = out / f"lake-{size}"
        subprocess.run(["rm", "-rf", str(lake)], check=True)
        seconds, rss, done = timed(
            [py, "-m", "flinkdoctor", "fleet", str(root), "--out", str(lake), "--format", "json"], env
        )
        report = json.loads(done.stdout)
        result["fleet"][str(size)] = {
            "wall_s": round(seconds, 1),
            "per_bundle_s": round(seconds / size, 4),
            "timings": report["run"]["timings"],
            "incidents": len(report["incidents"]),
            "driver_rss": rss.python,
            "jvm_rss": rss.java,
            "workers_rss": rss.workers,
        }
        keep()
    if "rerun_nothing_new_s" not in result:
        seconds, _, done = timed(
            [
                py,
                "-m",
                "flinkdoctor",
                "fleet",
                str(fleet),
                "--out",
                str(out / f"lake-{args.bundles}"),
                "--format",
                "json",
            ],
            env,
        )
        result["rerun_nothing_new_s"] = round(seconds, 1)
        keep()

    if "single_cold_s" not in result:
        singles = [p for p in sorted(fleet.iterdir()) if p.is_dir()][: args.sample]
        walls = []
        for bundle in singles:
            seconds, rss, _ = timed([py, "-m", "flinkdoctor", "diagnose", str(bundle), "--format", "json"], env)
            walls.append(seconds)
        result["single_cold_s"] = [round(w, 1) for w in walls]
        keep()
    single = sum(result["single_cold_s"]) / len(result["single_cold_s"])
    result["single_estimate_total_s"] = round(single * args.bundles, 0)

    if "one_bundle" not in result:
        seconds, rss, _ = timed([py, "-m", "flinkdoctor", "diagnose", str(fleet), "--format", "json"], env)
        result["one_bundle"] = {"wall_s": round(seconds, 1), "driver_rss": rss.python, "jvm_rss": rss.java}
        keep()
    if "spark_floor" not in result:
        seconds, _, done = timed([py, "-c", FLOOR, str(fleet)], env)
        session_s, scan_s, _ = done.stdout.split()
        result["spark_floor"] = {"wall_s": round(seconds, 1), "session_s": float(session_s), "scan_s": float(scan_s)}
        keep()

    whole = result["fleet"][str(args.bundles)]
    result["per_bundle_vs_single"] = round(whole["per_bundle_s"] / single, 4)
    result["fleet_vs_one_bundle"] = round(whole["wall_s"] / result["one_bundle"]["wall_s"], 2)
    print(json.dumps(result, indent=2))
    gib = 2**30
    print(
        "\n| bundles | fleet wall | per bundle | driver RSS | JVM RSS | Python workers RSS |\n|---|---|---|---|---|---|"
    )
    for size, row in result["fleet"].items():
        print(
            f"| {size} | {row['wall_s']} s | {row['per_bundle_s'] * 1000:.0f} ms | {row['driver_rss'] / gib:.2f} GiB "
            f"| {row['jvm_rss'] / gib:.2f} GiB | {row['workers_rss'] / gib:.2f} GiB |"
        )


if __name__ == "__main__":
    main()
