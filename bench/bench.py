"""Benchmark: flinkdoctor diagnose against Spark's own scan floor and grep, on bundles built from real lines.

    python bench/bench.py [--sizes 1G,8G] [--corpora lab,production] [--jobs 1,100,10000,100000]
                          [--files 1,100,10000,100000] [--checkpoints 10000,100000,1000000] [--axes ...]
                          [--out bench/out] [--keep]

One run measures every axis (bench/corpus.py builds the bundles from the fault lab's real lines):
- bytes: each size of each corpus (`lab`: the lab-dense replay; `production`: a long healthy run with three
  incidents);
- jobs: one JobManager log of --jobs-size bytes (2 GiB: 100,000 whole job lifecycles fit) with 1 to 100,000 jobs;
- files: the production corpus of --files-size bytes cut into 1 to 100,000 rolled files;
- checkpoints (events per job): one job's JobManager log with 10,000 to 1,000,000 checkpoints.
Each point in fresh processes: grep, Spark's whole-process floor (session, then
`spark.read.text(files).filter(contains("Caused by")).count()`), and `flinkdoctor diagnose`; then a seed-sized
bundle cold (a fresh diagnose process against a fresh process of Spark session + one trivial job).
The floor and the baseline are plain Spark (FLINKDOCTOR_JVM_ARCHIVE=0); each is also timed with flinkdoctor's
class archive (jvm.py), which a first, untimed-for-the-goals run writes, as a machine's first run does. The floor
keeps Spark's own JIT (the optimising compiler): flinkdoctor's quick tier (jvm.py) slows a scan the JVM does alone
(production 8 GiB's floor scan 29.4 s with it against 16.6 s without), and would flatter the ratio.
Run it under the heavy lock (flock /tmp/flinkdoctor-heavy.lock ...).

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
import shutil
import subprocess
import sys
import tarfile
import threading
import time
from datetime import datetime, timedelta
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpus  # noqa: E402  (bench/corpus.py, beside this file)

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
    """Samples the RSS of a process tree every 0.2 s: the python driver and any java child separately; and the CPU
    seconds each process of the tree used (at least: a process's last 0.2 s before it exits can be missed), which
    others' work on a shared machine inflates far less than the wall time."""

    TICK = os.sysconf("SC_CLK_TCK")

    def __init__(self, pid: int):
        super().__init__(daemon=True)
        self.pid, self.python, self.java, self.running = pid, 0, 0, True
        self.cpu_of: dict[int, float] = {}

    @property
    def cpu(self) -> float:
        return sum(self.cpu_of.values())

    def run(self):
        while self.running:
            for pid in [self.pid] + _descendants(self.pid):
                try:
                    status = Path(f"/proc/{pid}/status").read_text()
                    rss = int(re.search(r"VmRSS:\s+(\d+)", status).group(1)) * 1024
                    name = re.search(r"Name:\s+(\S+)", status).group(1)
                    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                    self.cpu_of[pid] = (int(fields[11]) + int(fields[12])) / self.TICK  # utime + stime
                except (OSError, AttributeError, IndexError, ValueError):
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
try:
    from flinkdoctor.runtime import jvm
    from flinkdoctor.runtime.spark import spark_session
    jvm.QUICK_TIER = "-XX:TieredStopAtLevel=4"  # Spark's own JIT (4, the default): the quick tier is flinkdoctor's
except ImportError:  # a build before the stage packages (a baseline run)
    from flinkdoctor.spark import spark_session
from pyspark.sql import functions as F
spark = spark_session()
t1 = time.perf_counter()
n = spark.read.text(sys.argv[1:]).filter(F.col("value").contains("Caused by")).count()
t2 = time.perf_counter()
print(t1 - t0, t2 - t1, n)
"""
TRIVIAL_JOB = """
try:
    from flinkdoctor.runtime.spark import spark_session
except ImportError:
    from flinkdoctor.spark import spark_session
print(spark_session().range(10).count())
"""
SEED = ROOT / "tests" / "data" / "seeds" / "000"


def size_of(label: str) -> int:
    return int(float(label[:-1]) * {"M": 2**20, "G": 2**30}[label[-1].upper()])


def bundle_files(bundle: Path, keep: bool, make) -> list[Path]:
    """The bundle's files: those already built (--keep), else `make()` builds them afresh."""
    built = bundle.with_name(bundle.name + ".built")  # beside the bundle: diagnose reads all that is in it
    if keep and built.exists():
        return sorted(p for p in bundle.rglob("*") if p.is_file())
    shutil.rmtree(bundle, ignore_errors=True)
    built.unlink(missing_ok=True)
    files = make()
    built.write_text("")
    return files


def measure(point: dict, bundle: Path, files: list[Path], out: Path, py: str, env: dict, full: bool) -> dict:
    """One point of an axis: the bundle's bytes and lines, grep, Spark's floor (plain; with `full`, also with
    the class archive), and diagnose. Files are handed to grep and Spark's floor by their folder when there are
    many (a command line holds only so many)."""
    total = sum(f.stat().st_size for f in files)
    lines = 0
    for f in files:
        with f.open("rb") as handle:
            lines += sum(chunk.count(b"\n") for chunk in iter(lambda h=handle: h.read(1 << 24), b""))
    results: dict = {**point, "bytes": total, "lines": lines, "files": len(files), "load_before": os.getloadavg()}
    paths = [str(f) for f in files] if len(files) <= 1000 else [str(bundle)]
    grep = ["grep", "-c", "-r", "Caused by", *paths]
    results["grep_literal_s"], _, _ = timed(grep)
    if full:
        results["grep_5_alternatives_s"], _, _ = timed(
            ["grep", "-c", "-r", "-E", "Exception|expired before|lost the leadership|soft lockup|Heartbeat of", *paths]
        )
    seconds, floor_rss, floor = timed([py, "-c", SPARK_FLOOR, *paths], env=plain(env))
    if floor.returncode != 0:
        sys.exit(f"Spark floor failed:\n{floor.stderr[-3000:]}")
    session_s, scan_s, _ = floor.stdout.split()
    results.update(
        floor_s=seconds,
        floor_session_s=float(session_s),
        floor_scan_s=float(scan_s),
        floor_jvm_rss=floor_rss.java,
        floor_cpu_s=floor_rss.cpu,
    )
    if full:
        results["floor_with_archive_s"], _, _ = timed([py, "-c", SPARK_FLOOR, *paths], env=env)
    results.update(diagnose(bundle, out, py, env))
    results["load_after"] = os.getloadavg()  # others' work on the machine (1, 5, 15 minutes)
    return results


def axis_points(args, out: Path) -> list[tuple[dict, Path, object, bool]]:
    """(point, bundle folder, builder, full) for every point of every axis asked for."""
    points: list[tuple[dict, Path, object, bool]] = []
    axes = args.axes.split(",")
    if "bytes" in axes:
        for name in args.corpora.split(","):
            for label in args.sizes.split(","):
                bundle = out / f"{name}-{label}"
                builder = {"lab": build, "production": corpus.build_production}[name]
                make = partial(_sized, builder, size_of(label))
                points.append(({"axis": "bytes", "corpus": name, "size": label}, bundle, make, True))
    if "jobs" in axes:
        for jobs in map(int, args.jobs.split(",")):
            bundle = out / f"jobs-{args.jobs_size}-{jobs}"
            make = lambda b, n=jobs: corpus.build_jobs(b, n, size=size_of(args.jobs_size))  # noqa: E731
            points.append(({"axis": "jobs", "jobs": jobs, "size": args.jobs_size}, bundle, make, False))
    if "files" in axes:
        for count in map(int, args.files.split(",")):
            bundle = out / f"files-{args.files_size}-{count}"
            make = lambda b, n=count: _split_production(b, n, args.files_size, out)  # noqa: E731
            points.append(({"axis": "files", "file_count": count, "size": args.files_size}, bundle, make, False))
    if "checkpoints" in axes:
        for count in map(int, args.checkpoints.split(",")):
            bundle = out / f"checkpoints-{count}"
            make = lambda b, n=count: corpus.build_jobs(b, 1, checkpoints=n)  # noqa: E731
            points.append(({"axis": "checkpoints", "checkpoints": count}, bundle, make, False))
    return points


def _sized(builder, size: int, bundle: Path) -> list[Path]:
    return builder(bundle, size)


def _split_production(bundle: Path, count: int, label: str, out: Path) -> list[Path]:
    """The production corpus of `label` bytes (built once under out/), cut into `count` files."""
    whole = out / f"production-{label}"
    source = bundle_files(whole, True, lambda: corpus.build_production(whole, size_of(label)))
    return corpus.split_files(source, bundle, count)


def plain(env: dict) -> dict:
    """Spark as it starts without flinkdoctor's class archive (jvm.py): the floor and the baseline's own terms."""
    return {**env, "FLINKDOCTOR_JVM_ARCHIVE": "0"}


def first_run(out: Path, py: str, env: dict) -> float:
    """A machine's first local run: it writes the class archive (jvm.py) that the timed runs then map."""
    for old in (out / "state-cold" / "flinkdoctor").glob("jvm-*.jsa"):
        old.unlink()
    seconds, _, _ = timed([py, "-m", "flinkdoctor", "diagnose", str(SEED), "--format", "json"], env=env)
    return seconds


def diagnose(bundle: Path, out: Path, py: str, env: dict, extra: tuple[str, ...] = ()) -> dict:
    command = [py, "-m", "flinkdoctor", "diagnose", str(bundle), "--format", "json", "--work-dir", str(out / "work")]
    seconds, rss, run = timed([*command, *extra], env=env)
    if run.returncode not in (0, 1, 2):  # recorded, and the run goes on with the next point
        return {
            "diagnose_s": seconds,
            "driver_peak_rss": rss.python,
            "jvm_peak_rss": rss.java,
            "failed": run.stderr[-1500:],
            "timings": None,
            "counted_lines": 0,
            "events": None,
            "root_causes": [],
        }
    report = json.loads(run.stdout)
    if os.environ.get("BENCH_REPORTS"):  # the report kept, to compare builds (its `timings` differ by run)
        kept = Path(os.environ["BENCH_REPORTS"]) / f"{bundle.name}.json"
        kept.parent.mkdir(parents=True, exist_ok=True)
        kept.write_text(run.stdout, encoding="utf-8")
    return {
        "diagnose_s": seconds,
        "diagnose_cpu_s": rss.cpu,
        "driver_peak_rss": rss.python,
        "jvm_peak_rss": rss.java,
        "timings": report.get("timings"),
        "counted_lines": report["input"]["lines"],
        "events": report["input"].get("events"),
        "root_causes": [r["rule"] for r in report["root_causes"]],
    }


def seed_cold(out: Path, py: str, env: dict) -> dict:
    trivial, _, _ = timed([py, "-c", TRIVIAL_JOB], env=plain(env))
    with_archive, _, _ = timed([py, "-c", TRIVIAL_JOB], env=env)
    cold = diagnose(SEED, out, py, env)
    without = diagnose(SEED, out, py, plain(env))
    return {
        "seed": SEED.name,
        "session_trivial_job_s": trivial,
        "session_trivial_job_with_archive_s": with_archive,
        "diagnose_without_archive_s": without["diagnose_s"],
        **cold,
    }


def seed_warm(out: Path, py: str, env: dict, runs: int = 3) -> dict:
    """`flinkdoctor server start`, then diagnose the seed bundle `runs` times attached to it, then stop it."""
    state = {**env, "FLINKDOCTOR_STATE_DIR": str(out / "state")}
    started, _, start = timed([py, "-m", "flinkdoctor", "server", "start", "--port", "15077"], env=state)
    if start.returncode != 0:
        return {"server_start_s": started, "error": start.stderr[-2000:]}
    try:
        warm = [diagnose(SEED, out, py, state) for _ in range(runs)]
    except SystemExit as failed:
        return {"server_start_s": started, "error": str(failed)[-2000:]}
    finally:
        subprocess.run([py, "-m", "flinkdoctor", "server", "stop"], env=state, capture_output=True)
    return {
        "server_start_s": started,
        "warm_s": [w["diagnose_s"] for w in warm],
        "root_causes": warm[-1]["root_causes"],
        "timings": warm[-1]["timings"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--axes", default="bytes,jobs,files,checkpoints", help="axes to measure")
    parser.add_argument("--sizes", default="1G,8G", help="bundle sizes of the bytes axis (default 1G,8G)")
    parser.add_argument("--corpora", default="lab,production", help="corpora of the bytes axis")
    parser.add_argument("--jobs", default="1,100,10000,100000", help="distinct jobs in one JobManager log")
    parser.add_argument("--jobs-size", default="2G", help="bytes of the jobs axis' JobManager log")
    parser.add_argument("--files", default="1,100,10000,100000", help="files the production corpus is cut into")
    parser.add_argument("--files-size", default="1G", help="bytes of the files axis' bundle")
    parser.add_argument("--checkpoints", default="10000,100000,1000000", help="checkpoints of one job")
    parser.add_argument("--no-seed", action="store_true", help="skip the seed-sized cold and warm runs")
    parser.add_argument("--out", default=str(ROOT / "bench" / "out"))
    parser.add_argument("--keep", action="store_true", help="reuse bundles already built in --out")
    parser.add_argument("--label", default="", help="a name for this run's rows in results.jsonl")
    parser.add_argument("--build-only", action="store_true", help="build the bundles (no Spark), measure nothing")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    py = sys.executable
    env = {
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PATH": "/usr/bin:/bin",
        "FLINKDOCTOR_STATE_DIR": str(out / "state-cold"),
        **{k: os.environ[k] for k in ("PYTHONPATH", "FLINKDOCTOR_SPARK_CONF", "JAVA_HOME") if k in os.environ},
    }
    if args.build_only:
        for _, bundle, make, _ in axis_points(args, out):
            files = bundle_files(bundle, args.keep, lambda b=bundle, m=make: m(b))
            print(f"{bundle.name}: {len(files)} files, {sum(f.stat().st_size for f in files):,} bytes", flush=True)
        return
    log = (out / "results.jsonl").open("a", encoding="utf-8")
    first = first_run(out, py, env)
    print(json.dumps({"first_run_s": first}), flush=True)
    rows = []
    for point, bundle, make, full in axis_points(args, out):
        files = bundle_files(bundle, args.keep, lambda b=bundle, m=make: m(b))
        rows.append({"label": args.label, **measure(point, bundle, files, out, py, env, full)})
        print(json.dumps(rows[-1]), flush=True)
        log.write(json.dumps(rows[-1]) + "\n")
        log.flush()
    seed = warm = None
    if not args.no_seed:
        seed = seed_cold(out, py, env)
        warm = seed_warm(out, py, env)
        log.write(json.dumps({"seed": seed, "warm": warm}) + "\n")
    print(json.dumps({"rows": rows, "seed": seed, "warm": warm}, indent=2))
    report(rows, seed, warm, first)


def point_name(r: dict) -> str:
    if r["axis"] == "bytes":
        return f"{r['corpus']} {r['size']}"
    if r["axis"] == "files":
        return f"{r['file_count']:,} files"
    return f"{r[r['axis']]:,} {r['axis']}"


def report(rows: list[dict], seed: dict | None, warm: dict | None, first: float) -> None:
    """The run's tables, as bench/RESULTS.md shows them."""
    print()
    print(
        "| axis | point | bytes | lines | files | Spark floor (session + scan) | diagnose | of floor | lines/s "
        "| driver / JVM peak |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['axis']} | {point_name(r)} | {r['bytes'] / 2**30:.2f} GiB | {r['lines']:,} "
            f"(counted {r['counted_lines']:,}) | {r['files']:,} | {r['floor_s']:.1f} s "
            f"({r['floor_session_s']:.1f} + {r['floor_scan_s']:.1f}) | "
            f"{r['diagnose_s']:.1f} s | {100 * r['floor_s'] / r['diagnose_s']:.0f} % | "
            f"{r['lines'] / r['diagnose_s']:,.0f} | "
            f"{r['driver_peak_rss'] / 2**30:.2f} / {r['jvm_peak_rss'] / 2**30:.2f} GiB |"
        )
    for r in rows:
        print(f"{r['axis']} {r.get('corpus', '')} {r.get('size', '')} stages: {r['timings']}; roots {r['root_causes']}")
        if "floor_with_archive_s" in r:
            print(f"  floor with the class archive: {r['floor_with_archive_s']:.1f} s")
    if seed is None or warm is None:
        return
    print(
        f"\nseed {seed['seed']} cold: diagnose {seed['diagnose_s']:.1f} s, session + trivial job "
        f"{seed['session_trivial_job_s']:.1f} s ({seed['diagnose_s'] / seed['session_trivial_job_s']:.2f}x)"
    )
    print(
        f"with the class archive: session + trivial job {seed['session_trivial_job_with_archive_s']:.1f} s "
        f"({seed['diagnose_s'] / seed['session_trivial_job_with_archive_s']:.2f}x); diagnose without it "
        f"{seed['diagnose_without_archive_s']:.1f} s; a machine's first run (writes the archive) {first:.1f} s"
    )
    print(f"seed warm (server started in {warm['server_start_s']:.1f} s): {warm.get('warm_s') or warm.get('error')}")
    print(f"same root causes cold and warm: {warm.get('root_causes') == seed['root_causes']}")


if __name__ == "__main__":
    main()
