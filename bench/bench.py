"""Benchmark: flinkdoctor diagnose against Spark's own scan floor and grep, on a bundle built from real lines.

    .venv/bin/python bench/bench.py --size 2G [--out bench/out] [--keep]

The bundle is made of the events of real Flink logs (the fault lab's recorded runs and the seed write-ups):
event templates are replayed with fresh times and ids, about 3 % of them multi-line stack traces, into
100 MB files (Flink's default rolling size) of JobManager and TaskManager logs.
Peak memory is sampled from /proc for the driver (python) and the JVM separately.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tarfile
import threading
import time
from datetime import datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEADER = re.compile(r"^(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3})(\s+[A-Z]+\s+\S+\s+\[[^\]]*\]\s+-\s.*)$")
HEX32 = re.compile(r"\b[0-9a-f]{32}\b")
FILE_BYTES = 100 * 1024 * 1024


# Start-up output (configuration dump, class path, environment) is printed once per process; a long-running
# job's log is its steady state, so these are left out of the replayed templates.
STARTUP = re.compile(
    r"GlobalConfiguration|EnvironmentInformation|ClusterEntrypoint|TaskManagerRunner|"
    r"BootstrapTools|Loading configuration property|Classpath:|Program Arguments:|JVM Options:"
)


def templates() -> tuple[list[list[str]], list[list[str]]]:
    """(single-line events, multi-line events) from the recorded lab runs (log4j2 layout), as lists of lines."""
    single, multi = [], []
    for bundle in sorted((ROOT / "tests" / "data" / "lab").glob("*/*.tar.gz")):
        with tarfile.open(bundle) as archive:
            for member in archive.getmembers():
                if not (member.isfile() and member.name.endswith(".log")):
                    continue
                event: list[str] = []
                for line in archive.extractfile(member).read().decode("utf-8", "replace").splitlines():
                    if HEADER.match(line):
                        if event:
                            (multi if len(event) > 1 else single).append(event)
                        event = [line]
                    elif event:
                        event.append(line)
                if event:
                    (multi if len(event) > 1 else single).append(event)
    single = [e for e in single if len(e[0]) < 400 and not STARTUP.search(e[0])]
    multi = [e for e in multi if not STARTUP.search(e[0])]
    return single, multi


def build(out: Path, size: int, seed: int = 7) -> list[Path]:
    rng = random.Random(seed)
    single, multi = templates()
    if not single:
        sys.exit("bench: no recorded lab bundles under tests/data/lab to take real lines from")
    out.mkdir(parents=True, exist_ok=True)
    files, written, index = [], 0, 0
    clock = datetime(2026, 3, 1, 0, 0, 0)
    while written < size:
        kind = "jobmanager" if index % 4 == 0 else "taskmanager"
        path = out / f"container_{index:03d}" / f"{kind}.log"
        path.parent.mkdir(parents=True, exist_ok=True)
        budget = min(FILE_BYTES, size - written)
        chunks, used = [], 0
        job = f"{rng.getrandbits(128):032x}"
        while used < budget:
            event = rng.choice(multi) if multi and rng.random() < 0.03 else rng.choice(single)
            clock += timedelta(milliseconds=rng.randint(1, 40))
            stamp = clock.strftime("%Y-%m-%d %H:%M:%S,") + f"{clock.microsecond // 1000:03d}"
            head = HEADER.match(event[0])
            text = "\n".join([stamp + head.group(2)] + event[1:]) + "\n"
            text = HEX32.sub(job, text)
            chunks.append(text)
            used += len(text)
        data = "".join(chunks).encode()
        path.write_bytes(data)
        files.append(path)
        written += len(data)
        index += 1
    return files


class PeakRss(threading.Thread):
    """Samples the RSS of a process tree every 0.2 s: the python driver and any java child separately."""

    def __init__(self, pid: int):
        super().__init__(daemon=True)
        self.pid, self.python, self.java, self.running = pid, 0, 0, True

    def run(self):
        while self.running:
            for pid in [self.pid] + _descendants(self.pid):
                try:
                    status = Path(f"/proc/{pid}/status").read_text()
                    rss = int(re.search(r"VmRSS:\s+(\d+)", status).group(1)) * 1024
                    name = re.search(r"Name:\s+(\S+)", status).group(1)
                except (OSError, AttributeError):
                    continue
                if name == "java":
                    self.java = max(self.java, rss)
                elif pid == self.pid:
                    self.python = max(self.python, rss)
            time.sleep(0.2)


def _descendants(pid: int) -> list[int]:
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True).stdout.split()
    kids = [int(p) for p in out]
    return kids + [d for k in kids for d in _descendants(k)]


def timed(cmd: list[str], **kwargs) -> tuple[float, PeakRss, subprocess.CompletedProcess]:
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)
    sampler = PeakRss(proc.pid)
    sampler.start()
    stdout, stderr = proc.communicate()
    sampler.running = False
    return time.perf_counter() - start, sampler, subprocess.CompletedProcess(cmd, proc.returncode, stdout, stderr)


SPARK_FLOOR = """
import sys, time
t0 = time.perf_counter()
from flinkdoctor.spark import spark_session
from pyspark.sql import functions as F
spark = spark_session()
t1 = time.perf_counter()
n = spark.read.text(sys.argv[1:]).filter(F.col("value").contains("Exception")).count()
t2 = time.perf_counter()
print(t1 - t0, t2 - t1, n)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", default="2G", help="bundle size, e.g. 500M, 2G (default 2G)")
    parser.add_argument("--out", default=str(ROOT / "bench" / "out"))
    parser.add_argument("--keep", action="store_true", help="reuse a bundle already built in --out")
    args = parser.parse_args()
    size = int(float(args.size[:-1]) * {"M": 2**20, "G": 2**30}[args.size[-1].upper()])
    bundle = Path(args.out) / f"bundle-{args.size}"
    files = sorted(bundle.rglob("*.log")) if args.keep and bundle.exists() else build(bundle, size)
    total = sum(f.stat().st_size for f in files)
    lines = int(
        subprocess.run(
            ["bash", "-c", f"cat {' '.join(map(str, files))} | wc -l"], capture_output=True, text=True
        ).stdout
    )
    py = str(ROOT / ".venv" / "bin" / "python")
    env = {
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PATH": "/usr/bin:/bin",
        **{k: os.environ[k] for k in ("PYTHONPATH", "FLINKDOCTOR_SPARK_CONF") if k in os.environ},
    }
    results = {"bytes": total, "lines": lines, "files": len(files)}

    seconds, _, grep = timed(["grep", "-c", "Exception", *map(str, files)])
    results["grep_literal_s"] = seconds
    seconds, _, _ = timed(
        ["grep", "-c", "-E", "Exception|expired before|lost the leadership|soft lockup|Heartbeat of", *map(str, files)]
    )
    results["grep_5_alternatives_s"] = seconds
    seconds, _, floor = timed([py, "-c", SPARK_FLOOR, *map(str, files)], env=env)
    session_s, scan_s, _ = floor.stdout.split()
    results.update(
        spark_floor_total_s=seconds, spark_floor_session_s=float(session_s), spark_floor_scan_s=float(scan_s)
    )
    seconds, rss, run = timed(
        [
            py,
            "-m",
            "flinkdoctor",
            "diagnose",
            str(bundle),
            "--format",
            "json",
            "--work-dir",
            str(Path(args.out) / "work"),
        ],
        env=env,
    )
    if run.returncode != 0:
        sys.exit(f"diagnose failed:\n{run.stderr[-3000:]}")
    report = json.loads(run.stdout)
    results.update(
        diagnose_s=seconds,
        driver_peak_rss=rss.python,
        jvm_peak_rss=rss.java,
        timings=report.get("timings"),
        counted_lines=report["input"]["lines"],
        root_causes=[r["rule"] for r in report["root_causes"]],
    )
    mb = total / 2**20
    scan_floor = float(scan_s)
    print(json.dumps(results, indent=2))
    print(f"\n{mb:,.0f} MB, {lines:,} lines in {len(files)} files")
    print(f"diagnose end to end   {seconds:7.1f} s  {mb / seconds:7.1f} MB/s  {lines / seconds:11,.0f} lines/s")
    print(
        f"spark floor (scan)    {scan_floor:7.1f} s  {mb / scan_floor:7.1f} MB/s  {lines / scan_floor:11,.0f} lines/s"
        f"   (+{float(session_s):.1f} s session)"
    )
    print(f"grep -c literal       {results['grep_literal_s']:7.1f} s  {mb / results['grep_literal_s']:7.1f} MB/s")
    print(
        f"grep -c -E 5 alts     {results['grep_5_alternatives_s']:7.1f} s  "
        f"{mb / results['grep_5_alternatives_s']:7.1f} MB/s"
    )
    print(
        f"peak RSS driver {rss.python / 2**30:.2f} GiB, JVM {rss.java / 2**30:.2f} GiB; "
        f"counted lines {report['input']['lines']:,} (wc -l {lines:,})"
    )


if __name__ == "__main__":
    main()
