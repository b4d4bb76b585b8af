"""Generate a fleet of job bundles from real recordings, with planted shared-infrastructure incidents.

Every bundle is a copy of a recorded lab run (tests/data/lab: the healthy runs, and a few failure runs as
one-off incidents) with a fresh job id (every 32-hex id is replaced), its own host (the host name in Flink's
log file names, `flink-<user>-<service>-<n>-<host>.log`, and in the lines) and its times shifted to its own
start. Planted on top, re-timed and re-hosted copies of real lines:

- a storage incident: seed 000's failed checkpoint event (the slow HDFS close, tests/data/seeds/000/jobmanager.log)
  in the TaskManager log of several jobs on different hosts, at the same minutes, on the same HDFS NameNode;
- a host incident: seed 003's kernel soft lockup (tests/data/seeds/003/messages) in the `messages` of several
  jobs on the same host at the same moment.

Decoys that must NOT be called shared: one job alone with a soft lockup; the same soft lockup on two different
hosts at the same time; the storage event on two jobs days apart. One bundle is a cut archive (a read failure).

Usage: python tests/fleetgen.py ROOT --bundles 40 [--seed 14] [--plan plan.json]
"""

from __future__ import annotations

import argparse
import io
import json
import random
import re
import shutil
import tarfile
import tempfile
from datetime import datetime, timedelta
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"
LAB = DATA / "lab"
HEALTHY = [LAB / "1.20.3" / "healthy.tar.gz", LAB / "2.1.1" / "healthy.tar.gz"]
ONE_OFF = [LAB / "1.20.3" / "checkpoint-timeout.tar.gz", LAB / "2.1.1" / "heap-oom.tar.gz"]
SEED_HDFS = DATA / "seeds" / "000" / "jobmanager.log"
SEED_LOCKUP = DATA / "seeds" / "003" / "messages"
SEED_HOST = "hadoop-080-037"
NAMENODE = "nn-shared.example.com:8020"
WEEK_START = datetime(2026, 11, 16, 0, 0, 0)

STAMP = re.compile(rb"\b(20\d\d-\d\d-\d\d)[ T](\d\d:\d\d:\d\d)")
EPOCH_MS = re.compile(rb"(?<![\d.])(1[7-8]\d{11})(?!\d)")
HEX32 = re.compile(rb"\b[0-9a-f]{32}\b")
SYSLOG_STAMP = re.compile(rb"^[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d", re.M)


class Recording:
    """One recorded lab run, unpacked once: its files and its first log time."""

    def __init__(self, archive: Path, into: Path):
        with tarfile.open(archive) as tar:
            tar.extractall(into, filter="data")
        self.folder = next(p for p in into.iterdir() if p.is_dir())
        self.files = sorted(p for p in self.folder.rglob("*") if p.is_file())
        self.start = min(
            datetime.strptime(m.group(1).decode() + " " + m.group(2).decode(), "%Y-%m-%d %H:%M:%S")
            for p in self.files
            if p.suffix == ".log"
            for m in [STAMP.search(p.read_bytes())]
            if m
        )


def _retime(data: bytes, shift: timedelta) -> bytes:
    def stamp(m: re.Match) -> bytes:
        t = datetime.strptime(m.group(1).decode() + " " + m.group(2).decode(), "%Y-%m-%d %H:%M:%S") + shift
        sep = m.group(0)[10:11]
        return t.strftime("%Y-%m-%d").encode() + sep + t.strftime("%H:%M:%S").encode()

    data = STAMP.sub(stamp, data)
    ms = int(shift.total_seconds() * 1000)
    return EPOCH_MS.sub(lambda m: str(int(m.group(1)) + ms).encode(), data)


class Fleet:
    def __init__(self, root: Path, seed: int):
        self.root = root
        self.rng = random.Random(seed)
        self.tmp = Path(tempfile.mkdtemp(prefix="fleetgen-"))
        self.healthy = [Recording(a, self.tmp / f"h{i}") for i, a in enumerate(HEALTHY)]
        self.one_off = [Recording(a, self.tmp / f"f{i}") for i, a in enumerate(ONE_OFF)]
        self.count = 0
        self.plan: dict = {"bundles": [], "incidents": [], "failed": []}

    def fresh_ids(self, data: bytes, ids: dict) -> bytes:
        def repl(m: re.Match) -> bytes:
            return ids.setdefault(m.group(0), b"%032x" % self.rng.getrandbits(128))

        return HEX32.sub(repl, data)

    def bundle(self, recording: Recording, host: str, start: datetime, extra: dict[str, bytes] | None = None) -> str:
        """Write one bundle (a folder, every fourth a .tar.gz); returns its name."""
        self.count += 1
        ids: dict = {}
        shift = start - recording.start
        name = f"job-{self.count:04d}"
        files: dict[str, bytes] = {}
        for path in recording.files:
            rel = path.relative_to(recording.folder).as_posix().replace("-vm.", f"-{host}.")
            data = re.sub(rb"\bvm\b", host.encode(), self.fresh_ids(_retime(path.read_bytes(), shift), ids))
            files[rel] = data
        for rel, data in (extra or {}).items():
            if rel in files:
                files[rel] += data
            else:
                files[rel] = data
        if self.count % 4 == 0:
            name += ".tar.gz"
            with tarfile.open(self.root / name, "w:gz") as tar:
                for rel, data in files.items():
                    info = tarfile.TarInfo(f"{name[:-7]}/{rel}")
                    info.size = len(data)
                    tar.addfile(info, io.BytesIO(data))
        else:
            for rel, data in files.items():
                target = self.root / name / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
        self.plan["bundles"].append(name)
        return name

    @staticmethod
    def tm_log(host: str) -> str:
        """A second TaskManager's log (the seed keeps its own older layout, so it is a file of its own)."""
        return f"log/flink-root-taskexecutor-1-{host}.log"

    def close_event(self, at: datetime) -> bytes:
        """Seed 000's failed checkpoint (the slow HDFS close), at `at`, on the shared NameNode."""
        text = SEED_HDFS.read_bytes()
        first = STAMP.search(text)
        assert first is not None
        t0 = datetime.strptime(first.group(1).decode() + " " + first.group(2).decode(), "%Y-%m-%d %H:%M:%S")
        text = _retime(text, at - t0).replace(b"hdfs:/saas/", f"hdfs://{NAMENODE}/saas/".encode())
        return text if text.endswith(b"\n") else text + b"\n"

    def lockup(self, host: str, at: datetime) -> bytes:
        """Seed 003's soft lockup report, re-timed to `at` and re-hosted to `host`."""
        text = SEED_LOCKUP.read_bytes().replace(SEED_HOST.encode(), host.encode())
        return SYSLOG_STAMP.sub(at.strftime("%b %d %H:%M:%S").encode(), text)

    def incident_jobs(self, kind: str, key: str, names: list[str]) -> None:
        self.plan["incidents"].append({"kind": kind, "key": key, "jobs": sorted(names)})

    def generate(self, bundles: int) -> dict:
        rng = self.rng
        # the storage incident: 4 jobs on 4 hosts, the slow close within 3 minutes of each other
        t = WEEK_START + timedelta(days=2, hours=3)
        names = []
        for i in range(4):
            rec = self.healthy[i % 2]
            host = f"worker-s{i}"
            start = t + timedelta(seconds=40 * i)
            extra = {self.tm_log(host): self.close_event(start + timedelta(seconds=30))}
            names.append(self.bundle(rec, host, start, extra))
        self.incident_jobs("storage", NAMENODE, names)
        # the host incident: 3 jobs on one host, one lockup seen in each bundle's copy of the host's messages
        t = WEEK_START + timedelta(days=4, hours=11)
        lockup = {"messages": self.lockup("worker-h1", t + timedelta(seconds=50))}  # the host's log, in every bundle
        names = [self.bundle(self.healthy[i % 2], "worker-h1", t + timedelta(seconds=20 * i), lockup) for i in range(3)]
        self.incident_jobs("host", "worker-h1", names)
        # decoys: a lockup alone; lockups at one time on two hosts; the slow close twice, two days apart
        t = WEEK_START + timedelta(days=1, hours=8)
        self.bundle(self.healthy[0], "worker-d1", t, {"messages": self.lockup("worker-d1", t + timedelta(seconds=40))})
        t = WEEK_START + timedelta(days=5, hours=15)
        for host in ("worker-d2", "worker-d3"):
            self.bundle(self.healthy[1], host, t, {"messages": self.lockup(host, t + timedelta(seconds=40))})
        for i, day in enumerate((0, 2)):
            rec = self.healthy[i]
            t = WEEK_START + timedelta(days=day, hours=20)
            self.bundle(rec, f"worker-d{4 + i}", t, {self.tm_log(f"worker-d{4 + i}"): self.close_event(t)})
        # one-off failures (each on its own host), then healthy runs on a shared pool of hosts
        for i, rec in enumerate(self.one_off):
            self.bundle(rec, f"worker-f{i}", WEEK_START + timedelta(days=3, hours=i * 7))
        pool = [f"worker-{i:02d}" for i in range(max(4, bundles // 8))]
        while self.count < bundles - 1:
            start = WEEK_START + timedelta(seconds=rng.randrange(7 * 86400))
            self.bundle(rng.choice(self.healthy), rng.choice(pool), start)
        self._cut_archive()
        shutil.rmtree(self.tmp, ignore_errors=True)
        return self.plan

    def _cut_archive(self) -> None:
        """A bundle whose archive was cut in transfer: the fleet must record it as failed and go on."""
        self.count += 1
        name = f"job-{self.count:04d}-cut.tar.gz"
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
            for path in self.healthy[0].files:
                tar.add(path, f"cut/{path.relative_to(self.healthy[0].folder).as_posix()}")
        (self.root / name).write_bytes(buffer.getvalue()[:2000])
        self.plan["bundles"].append(name)
        self.plan["failed"].append(name)


def generate(root: Path, bundles: int, seed: int = 14) -> dict:
    """Write a fleet of at least 15 bundles under `root` (created); returns the plan: bundle names, the
    planted incidents (kind, key, jobs) and the bundles that must fail to read."""
    root.mkdir(parents=True, exist_ok=True)
    return Fleet(root, seed).generate(max(bundles, 15))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("--bundles", type=int, default=40)
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--plan", type=Path, help="write the plan (planted incidents) here as JSON")
    args = parser.parse_args()
    plan = generate(args.root, args.bundles, args.seed)
    if args.plan:
        args.plan.write_text(json.dumps(plan, indent=2), encoding="utf-8")
    print(f"{len(plan['bundles'])} bundles, {len(plan['incidents'])} planted incidents under {args.root}")


if __name__ == "__main__":
    main()
