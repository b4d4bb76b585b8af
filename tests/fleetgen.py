"""Generate a fleet of job bundles from real recordings: a background of healthy and failing jobs on shared hosts,
ZooKeeper quorums and checkpoint storage, with planted shared incidents of several strengths and decoys.

Every bundle is a copy of a recorded lab run (tests/data/lab, real Flink 1.20.3 and 2.1.1 runs) with a fresh job
id (every 32-hex id is replaced), its times shifted to its own start, re-hosted and re-configured:
- its host: the host name in Flink's log file names (`flink-<user>-<service>-<n>-<host>.log`) and in the lines;
- its checkpoint storage: the recording's `file:///tmp/fdl/runs/<run>/tmp/` (checkpoint, savepoint and HA
  dirs, in the config and in the lines) becomes `hdfs://<namenode>/flink/<job>/`;
- its ZooKeeper quorum: `high-availability.zookeeper.quorum` in the config and in the lines. A recording run
  without HA gets the two HA lines of the zookeeper-freeze recording's config.yaml (`high-availability.type:
  zookeeper`, the quorum) added to its config.yaml, so that every job has a quorum; its logs stay as recorded.

The background: `--background` of the jobs (default 10 %) are failing lab runs, each a scenario drawn at random
from every recorded failure (both versions), the rest healthy runs; each on a random host, quorum and storage,
at a random time in the fleet's `--hours`. About 24 jobs share a host, 240 a quorum, 480 a storage.

Planted incidents, re-timed and re-hosted copies of real lines, each `strength` jobs (2 to 50) on one resource
within three minutes:
- host: seed 003's kernel soft lockup (tests/data/seeds/003/messages) in the `messages` of every job on the host;
- storage: seed 000's failed checkpoint event (the slow HDFS close, tests/data/seeds/000/jobmanager.log) in a
  TaskManager log of every job on the NameNode, `hdfs:/saas/` made `hdfs://<namenode>/saas/`;
- zookeeper: copies of the zookeeper-freeze recording (ZooKeeper stopped past the session timeout) on the quorum.
No planted Kafka incident: no real Kafka log line in tests/data names its brokers.

Decoys that must NOT be called shared: a lockup alone; lockups at one moment on two hosts; the storage event in
two jobs hours apart; ZooKeeper outages at one moment on two quorums. One bundle is a cut archive (a read failure).

Usage: python tests/fleetgen.py ROOT --bundles 1000 [--seed 14] [--incidents 14] [--plan plan.json]
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
VERSIONS = ("1.20.3", "2.1.1")
SEED_HDFS = DATA / "seeds" / "000" / "jobmanager.log"
SEED_LOCKUP = DATA / "seeds" / "003" / "messages"
SEED_HOST = "hadoop-080-037"
WEEK_START = datetime(2026, 11, 16, 0, 0, 0)
STRENGTHS = (2, 3, 4, 5, 6, 8, 10, 13, 16, 20, 25, 30, 40, 50)  # planted incidents' jobs, cycled
KINDS = ("host", "storage", "zookeeper")
CAUSES = {
    "host": "kernel-soft-lockup",
    "storage": "checkpoint-stream-close-failed",
    "zookeeper": "zookeeper-client-session-timeout",
}
JOBS_PER_HOST, JOBS_PER_QUORUM, JOBS_PER_STORAGE = 24, 240, 480
SPREAD = 180  # seconds: a planted incident's jobs are hit within this of each other
APART = 2400  # seconds between planted incidents and decoys on one resource: two windows and more

STAMP = re.compile(rb"\b(20\d\d-\d\d-\d\d)[ T](\d\d:\d\d:\d\d)")
EPOCH_MS = re.compile(rb"(?<![\d.])(1[7-8]\d{11})(?!\d)")
HEX32 = re.compile(rb"\b[0-9a-f]{32}\b")
SYSLOG_STAMP = re.compile(rb"^[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d", re.M)
QUORUM = re.compile(rb"(high-availability\.zookeeper\.quorum(?::|,) ?)\S+")
HA_LINES = re.compile(rb"^high-availability\.(?:type|zookeeper\.quorum): .*\n", re.M)


class Recording:
    """One recorded lab run, unpacked once: its files and its first log time."""

    def __init__(self, archive: Path, into: Path):
        with tarfile.open(archive) as tar:
            tar.extractall(into, filter="data")
        self.scenario = f"{archive.stem.removesuffix('.tar')}-{archive.parent.name}"
        self.folder = next(p for p in into.iterdir() if p.is_dir())
        self.files = {
            p.relative_to(self.folder).as_posix(): p.read_bytes() for p in self.folder.rglob("*") if p.is_file()
        }
        self.start = min(
            datetime.strptime(m.group(1).decode() + " " + m.group(2).decode(), "%Y-%m-%d %H:%M:%S")
            for rel, data in self.files.items()
            if rel.endswith(".log")
            for m in [STAMP.search(data)]
            if m
        )
        self.tmp = f"/tmp/fdl/runs/{self.folder.name}/tmp/".encode()  # the lab's checkpoint/HA/savepoint dirs


def _retime(data: bytes, shift: timedelta) -> bytes:
    def stamp(m: re.Match) -> bytes:
        t = datetime.strptime(m.group(1).decode() + " " + m.group(2).decode(), "%Y-%m-%d %H:%M:%S") + shift
        sep = m.group(0)[10:11]
        return t.strftime("%Y-%m-%d").encode() + sep + t.strftime("%H:%M:%S").encode()

    data = STAMP.sub(stamp, data)
    ms = int(shift.total_seconds() * 1000)
    return EPOCH_MS.sub(lambda m: str(int(m.group(1)) + ms).encode(), data)


def quorum_of(number: int) -> str:
    return ",".join(f"zk-{number:02d}{part}.example.com:2181" for part in "abc")


class Fleet:
    def __init__(self, root: Path, seed: int, size: int, hours: float):
        self.root = root
        self.rng = random.Random(seed)
        self.tmp = Path(tempfile.mkdtemp(prefix="fleetgen-"))
        archives = sorted(LAB.glob("*/*.tar.gz"))
        recordings = [Recording(a, self.tmp / f"r{i}") for i, a in enumerate(archives)]
        self.healthy = [r for r in recordings if r.scenario.startswith("healthy-")]
        self.failing = [r for r in recordings if not r.scenario.startswith("healthy-")]
        self.freeze = [r for r in self.failing if r.scenario.startswith("zookeeper-freeze-")]
        ha = next(r for r in self.freeze if "conf/config.yaml" in r.files).files["conf/config.yaml"]
        self.ha_lines = b"".join(m.group(0) for m in HA_LINES.finditer(ha))  # the two lines, as recorded
        self.hosts = [f"worker-{i:04d}" for i in range(max(4, size // JOBS_PER_HOST))]
        self.quorums = [quorum_of(i) for i in range(max(2, size // JOBS_PER_QUORUM))]
        self.storages = [f"nn-{i:02d}.example.com:8020" for i in range(max(2, size // JOBS_PER_STORAGE))]
        self.range = timedelta(hours=hours)
        self.busy: dict[str, list[datetime]] = {}  # resource -> times of planted incidents and decoys
        self.count = 0
        self.plan: dict = {"bundles": [], "incidents": [], "decoys": [], "failed": [], "recordings": {}}

    def when(self) -> datetime:
        """A time in the fleet's hours, ten minutes clear of either end."""
        return WEEK_START + timedelta(seconds=self.rng.randrange(600, int(self.range.total_seconds()) - 600))

    def fresh_ids(self, data: bytes, ids: dict) -> bytes:
        def repl(m: re.Match) -> bytes:
            return ids.setdefault(m.group(0), b"%032x" % self.rng.getrandbits(128))

        return HEX32.sub(repl, data)

    def bundle(
        self,
        recording: Recording,
        start: datetime,
        host: str | None = None,
        quorum: str | None = None,
        storage: str | None = None,
        extra: dict[str, bytes] | None = None,
    ) -> str:
        """Write one bundle (a folder, every fourth a .tar.gz); returns its name."""
        self.count += 1
        host = host or self.rng.choice(self.hosts)
        quorum = quorum or self.rng.choice(self.quorums)
        storage = storage or self.rng.choice(self.storages)
        name = f"job-{self.count:05d}"
        ids: dict = {}
        shift = start - recording.start
        where = f"hdfs://{storage}/flink/{name}/".encode()
        files: dict[str, bytes] = {}
        for rel, data in recording.files.items():
            data = self.fresh_ids(_retime(data, shift), ids)
            data = data.replace(b"file://" + recording.tmp, where).replace(b"file:" + recording.tmp, where)
            data = QUORUM.sub(lambda m: m.group(1) + quorum.encode(), data)
            if rel == "conf/config.yaml" and not QUORUM.search(data):
                data += QUORUM.sub(lambda m: m.group(1) + quorum.encode(), self.ha_lines)
            files[rel.replace("-vm.", f"-{host}.")] = re.sub(rb"\bvm\b", host.encode(), data)
        for rel, data in (extra or {}).items():
            files[rel] = files.get(rel, b"") + data
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
        self.plan["recordings"][name] = recording.scenario
        return name

    @staticmethod
    def tm_log(host: str) -> str:
        """A second TaskManager's log (the seed keeps its own older layout, so it is a file of its own)."""
        return f"log/flink-root-taskexecutor-1-{host}.log"

    def close_event(self, at: datetime, storage: str) -> bytes:
        """Seed 000's failed checkpoint (the slow HDFS close), at `at`, on the NameNode `storage`."""
        text = SEED_HDFS.read_bytes()
        first = STAMP.search(text)
        assert first is not None
        t0 = datetime.strptime(first.group(1).decode() + " " + first.group(2).decode(), "%Y-%m-%d %H:%M:%S")
        text = _retime(text, at - t0).replace(b"hdfs:/saas/", f"hdfs://{storage}/saas/".encode())
        return text if text.endswith(b"\n") else text + b"\n"

    @staticmethod
    def lockup(host: str, at: datetime) -> bytes:
        """Seed 003's soft lockup report, re-timed to `at` and re-hosted to `host`."""
        text = SEED_LOCKUP.read_bytes().replace(SEED_HOST.encode(), host.encode())
        return SYSLOG_STAMP.sub(at.strftime("%b %d %H:%M:%S").encode(), text)

    def plant(self, kind: str, strength: int, at: datetime, key: str | None = None) -> dict:
        """`strength` jobs hit by one cause on one resource within SPREAD seconds of `at`."""
        rng = self.rng
        names = []
        if kind == "host":
            key = key or rng.choice(self.hosts)
            messages = {"messages": self.lockup(key, at)}  # the host's syslog, the same in every job's bundle
            for _ in range(strength):
                start = at - timedelta(seconds=rng.randrange(30, 90))
                names.append(self.bundle(rng.choice(self.healthy), start, host=key, extra=messages))
        elif kind == "storage":
            key = key or rng.choice(self.storages)
            for _ in range(strength):
                start = at + timedelta(seconds=rng.randrange(SPREAD))
                host = rng.choice(self.hosts)
                extra = {self.tm_log(host): self.close_event(start + timedelta(seconds=30), key)}
                names.append(self.bundle(rng.choice(self.healthy), start, host=host, storage=key, extra=extra))
        else:
            key = key or rng.choice(self.quorums)
            for i in range(strength):
                start = at + timedelta(seconds=rng.randrange(SPREAD))
                names.append(self.bundle(self.freeze[i % len(self.freeze)], start, quorum=key))
        return {"kind": kind, "key": key, "cause": CAUSES[kind], "strength": strength, "jobs": sorted(names)}

    def free(self, kind: str, at: datetime, key: str | None = None) -> tuple[str, datetime]:
        """A resource of `kind` (`key` if given) and a time (`at` if it is free) at which no planted incident or
        decoy is within APART on that resource: incidents on one resource must not merge into one."""
        pool = {"host": self.hosts, "storage": self.storages, "zookeeper": self.quorums}[kind]
        for attempt in range(200):
            chosen = key or self.rng.choice(pool)
            when = at if attempt == 0 else self.when()
            if self.clear(chosen, when):
                self.busy.setdefault(chosen, []).append(when)
                return chosen, when
        raise ValueError(f"no free {kind} for a planted incident: too many incidents for the fleet's hours")

    def clear(self, key: str, at: datetime) -> bool:
        return all(abs((at - other).total_seconds()) > APART for other in self.busy.get(key, []))

    def decoys(self) -> None:
        """The same cause where it is not shared: alone, on two resources at once, or hours apart; never within an
        APART of a planted incident on its resource (there it would be one more job of that incident)."""
        rng = self.rng
        host, at = self.free("host", self.when())
        self.plan["decoys"].append(self.plant("host", 1, at, host))
        for kind, pool in (("host", self.hosts), ("zookeeper", self.quorums)):
            at = self.when()
            clear = [key for key in pool if self.clear(key, at)]
            for key in rng.sample(clear, 2) if len(clear) > 1 else []:
                self.busy.setdefault(key, []).append(at)
                self.plan["decoys"].append(self.plant(kind, 1, at, key))
        storage, first = self.free("storage", WEEK_START + timedelta(seconds=600))
        _, second = self.free("storage", first + self.range / 2, storage)
        for at in (first, second):
            self.plan["decoys"].append(self.plant("storage", 1, at, storage))

    def generate(self, size: int, incidents: list[tuple[str, int]], background: float, decoys: bool) -> dict:
        for kind, strength in incidents:
            key, at = self.free(kind, self.when())
            self.plan["incidents"].append(self.plant(kind, strength, at, key))
        if decoys:
            self.decoys()
        while self.count < size - 1:
            pool = self.failing if self.rng.random() < background else self.healthy
            self.bundle(self.rng.choice(pool), self.when())
        self._cut_archive()
        shutil.rmtree(self.tmp, ignore_errors=True)
        self.plan["incidents"].sort(key=lambda i: (i["kind"], i["key"], i["jobs"]))
        return self.plan

    def _cut_archive(self) -> None:
        """A bundle whose archive was cut in transfer: the fleet must record it as failed and go on."""
        self.count += 1
        name = f"job-{self.count:05d}-cut.tar.gz"
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
            for rel, data in self.healthy[0].files.items():
                info = tarfile.TarInfo(f"cut/{rel}")
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
        (self.root / name).write_bytes(buffer.getvalue()[:2000])
        self.plan["bundles"].append(name)
        self.plan["failed"].append(name)


def default_incidents(size: int) -> list[tuple[str, int]]:
    """Strengths up to an eighth of the fleet, from both ends of that range in turn (2, 50, 3, 40, ...), kinds in
    turn, each taken while the planted jobs stay within a quarter of the fleet; at most three passes: a small
    fleet gets weak and strong incidents, a fleet of 10,000 every strength on every kind of resource."""
    ladder = [strength for strength in STRENGTHS if strength <= max(2, size // 8)]
    half = (len(ladder) + 1) // 2
    order = [s for pair in zip(ladder[:half], ladder[::-1][:half], strict=True) for s in pair][: len(ladder)]
    planted: list[tuple[str, int]] = []
    budget = size // 4
    for number in range(3 * len(order)):
        strength = order[number % len(order)]
        if strength <= budget:
            planted.append((KINDS[len(planted) % len(KINDS)], strength))
            budget -= strength
    return planted


def generate(
    root: Path,
    bundles: int,
    seed: int = 14,
    incidents: list[tuple[str, int]] | None = None,
    background: float = 0.1,
    hours: float = 6.0,
    decoys: bool = True,
) -> dict:
    """Write a fleet of `bundles` bundles (at least the planted ones, the decoys and the cut archive) under `root`
    (created); returns the plan: bundle names, their recordings, the planted incidents (kind, key, cause,
    strength, jobs), the decoys and the bundles that must fail to read."""
    root.mkdir(parents=True, exist_ok=True)
    planted = default_incidents(bundles) if incidents is None else incidents
    return Fleet(root, seed, bundles, hours).generate(bundles, planted, background, decoys)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("--bundles", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--background", type=float, default=0.1, help="share of failing jobs in the background")
    parser.add_argument("--hours", type=float, default=6.0, help="the time the fleet's jobs are spread over")
    parser.add_argument("--incidents", type=int, help="planted incidents (default: by the fleet's size)")
    parser.add_argument("--plan", type=Path, help="write the plan (planted incidents) here as JSON")
    args = parser.parse_args()
    planted = default_incidents(args.bundles)
    if args.incidents is not None:
        planted = [(KINDS[n % len(KINDS)], STRENGTHS[n % len(STRENGTHS)]) for n in range(args.incidents)]
    plan = generate(args.root, args.bundles, args.seed, planted, args.background, args.hours)
    if args.plan:
        args.plan.write_text(json.dumps(plan, indent=2), encoding="utf-8")
    print(f"{len(plan['bundles'])} bundles, {len(plan['incidents'])} planted incidents under {args.root}")


if __name__ == "__main__":
    main()
