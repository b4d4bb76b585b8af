"""The benchmark's bundles, built from the real lines of the fault lab's recorded runs (tests/data/lab) only.

Shapes (bench.py runs each on its axis):

- `lab`: the lab-dense corpus of the earlier sessions (bench.build): the steady-state events of all 66 recorded
  runs drawn at random, about 3 % of them multi-line stack traces (35 % of the bytes). Nearly every event is a
  candidate of some rule: the worst case for a scan that keeps candidates.
- `production`: a long healthy run with a few incidents in it. Groups of four 100 MB files, one JobManager and
  three TaskManagers of one cluster running one job: the JobManager's log is the healthy 1.20.3 run's checkpoint
  cycle (trigger, complete, source coordinator) repeated with fresh checkpoint numbers every 10 s, with the job
  INFO lines of the lab's JobManagers between; the TaskManagers' logs are the lab's TaskManager INFO lines that
  tell no failure; both with a WARN of the healthy runs now and then. Three incidents, each the whole job section
  of a failing 1.20.3 run (JobManager and TaskManager, re-timed, its own job), sit in three groups (at a quarter,
  half and three quarters of the bundle).
- `jobs`: one JobManager log of a session cluster that ran N jobs one after the other, each the healthy run's
  job section (submission, scheduling, checkpoints, cancellation) with its own job id and as many checkpoint
  cycles as fit its share of the bytes: the same bytes with 1 job or 100,000.
- `files`: the production corpus's events cut into N rolled files (`taskmanager.log.17`), same bytes and events.
- `checkpoints`: one job's JobManager log with C checkpoints (events per job).
"""

from __future__ import annotations

import random
import re
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cache, cached_property
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LAB = ROOT / "tests" / "data" / "lab"
HEADER = re.compile(r"^(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3})(\s+([A-Z]+)\s+(\S+)\s+\[[^\]]*\]\s+-\s.*)$")
HEX32 = re.compile(r"\b[0-9a-f]{32}\b")
EVENT_START = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3} ", re.M)
FILE_BYTES = 100 * 1024 * 1024
TIME = "%Y-%m-%d %H:%M:%S,"
# start-up and shut-down output: printed once per process, not part of a long run's steady state
STARTUP = re.compile(
    r"GlobalConfiguration|EnvironmentInformation|ClusterEntrypoint|TaskManagerRunner|BootstrapTools|"
    r"Loading configuration property|Classpath:|Program Arguments:|JVM Options:|PluginManager|Pekko|pekko|Remoting|"
    r"RpcService|BlobServer|MetricRegistry|DelegationToken|security|FileSystem"
)
# an INFO line that tells of a failure is no healthy line
FAILURE_WORDS = re.compile(r"(?i)fail|exception|error|lost|timeout|timed out|expired|declin|cancel|unreachable|kill")
CHECKPOINT = re.compile(r"((?:[Cc]heckpoint|chk-) ?)(\d+)\b")
EPOCH_MS = re.compile(r"@ \d{13}\b")
CHECKPOINT_INTERVAL = timedelta(seconds=10)
INCIDENTS = ("checkpoint-timeout", "heap-oom", "zookeeper-freeze")  # failing 1.20.3 runs, one per incident


def stamp(at: datetime) -> str:
    day = f"{at.year:04d}-{at.month:02d}-{at.day:02d}"
    return f"{day} {at.hour:02d}:{at.minute:02d}:{at.second:02d},{at.microsecond // 1000:03d}"


@dataclass(frozen=True)
class Event:
    """A recorded event: its time, level, logger and lines (the first a log4j header)."""

    time: datetime
    level: str
    logger: str
    lines: tuple[str, ...]

    @cached_property
    def tail(self) -> str:
        """The text after the time stamp."""
        head = HEADER.match(self.lines[0])
        return "\n".join([head.group(2), *self.lines[1:]]) + "\n"  # type: ignore[union-attr]

    def text(self, at: datetime, subs: tuple[tuple[re.Pattern, object], ...] = ()) -> str:
        """The event printed at `at`, each substitution applied to every line."""
        text = stamp(at) + self.tail
        for pattern, replacement in subs:
            text = pattern.sub(replacement, text)  # type: ignore[call-overload]
        return text


@cache
def runs() -> dict[tuple[str, str], dict[str, tuple[Event, ...]]]:
    """(version, scenario) -> role (jobmanager, taskmanager, client, zookeeper; a second process: role-1) ->
    its events, from every recorded lab bundle."""
    found: dict[tuple[str, str], dict[str, tuple[Event, ...]]] = {}
    for bundle in sorted(LAB.glob("*/*.tar.gz")):
        roles: dict[str, tuple[Event, ...]] = {}
        with tarfile.open(bundle) as archive:
            for member in archive.getmembers():
                if not (member.isfile() and member.name.endswith(".log")):
                    continue
                name = member.name.rsplit("/", 1)[-1]
                role = next((r for k, r in ROLES if k in name), None)
                if role is None:
                    continue
                if role in roles:
                    role += "-1"
                text = archive.extractfile(member).read().decode("utf-8", "replace")  # type: ignore[union-attr]
                roles[role] = tuple(_events(text))
        found[(bundle.parent.name, bundle.name.removesuffix(".tar.gz"))] = roles
    return found


ROLES = (
    ("standalonesession", "jobmanager"),
    ("taskexecutor", "taskmanager"),
    ("client", "client"),
    ("zookeeper", "zk"),
)


def _events(text: str) -> Iterator[Event]:
    lines: list[str] = []
    head = None
    for line in text.splitlines():
        match = HEADER.match(line)
        if match:
            if head:
                yield _event(head, lines)
            head, lines = match, [line]
        elif head:
            lines.append(line)
    if head:
        yield _event(head, lines)


def _event(head: re.Match, lines: list[str]) -> Event:
    return Event(datetime.strptime(head.group(1) + "000", TIME + "%f"), head.group(3), head.group(4), tuple(lines))


def _job_of(events: tuple[Event, ...]) -> str | None:
    for event in events:
        if "Triggering checkpoint" in event.lines[0] or "Received JobGraph submission" in event.lines[0]:
            found = HEX32.search(event.lines[0])
            if found:
                return found.group(0)
    return None


def job_section(events: tuple[Event, ...]) -> tuple[Event, ...]:
    """The events from the first that names the run's job to the process's shut-down."""
    job = _job_of(events) or ""
    first = next((i for i, e in enumerate(events) if job and job in "\n".join(e.lines)), 0)
    end = next((i for i, e in enumerate(events) if i > first and "RECEIVED SIGNAL" in e.lines[0]), len(events))
    return events[first:end]


@dataclass(frozen=True)
class Lifecycle:
    """The healthy run's job on the JobManager: before its first checkpoint, one checkpoint cycle, after."""

    job: str
    prologue: tuple[Event, ...]
    cycles: tuple[tuple[Event, ...], ...]
    epilogue: tuple[Event, ...]


@cache
def lifecycle(version: str = "1.20.3") -> Lifecycle:
    events = job_section(runs()[(version, "healthy")]["jobmanager"])
    triggers = [i for i, e in enumerate(events) if "Triggering checkpoint" in e.lines[0]]
    end = next(i for i, e in enumerate(events) if "switched from state RUNNING to" in e.lines[0])
    cycles = tuple(events[a:b] for a, b in zip(triggers, [*triggers[1:], end], strict=True) if b - a <= 4)
    last = next(i for i, e in enumerate(events) if i > end and "Closing TaskExecutor connection" in e.lines[0])
    return Lifecycle(_job_of(events) or "", events[: triggers[0]], cycles, events[end:last])


@cache
def pools() -> dict[str, tuple[Event, ...]]:
    """Single-line events of a long healthy run: the JobManager's and TaskManagers' INFO lines that tell no
    failure and are no start-up, and the healthy runs' WARN lines."""
    jm, tm, warn = [], [], []
    for (_, scenario), roles in sorted(runs().items()):
        for role, events in roles.items():
            if scenario == "healthy":
                warn += [e for e in events if e.level == "WARN" and len(e.lines) == 1 and "SIGNAL" not in e.tail]
            for event in job_section(events):
                if len(event.lines) > 1 or STARTUP.search(event.lines[0]) or len(event.lines[0]) > 400:
                    continue
                if event.level == "INFO" and not FAILURE_WORDS.search(event.lines[0]):
                    if role.startswith("jobmanager") and "Triggering checkpoint" not in event.lines[0]:
                        jm.append(event)
                    elif role.startswith("taskmanager"):
                        tm.append(event)
    return {"jobmanager": tuple(jm), "taskmanager": tuple(tm), "warn": tuple(warn)}


def _fresh_id(rng: random.Random) -> str:
    return f"{rng.getrandbits(128):032x}"


class Roller:
    """Writes a stream of text into files of about `limit` bytes: `name`, then `name.1`, `name.2`, ...
    (as log4j rolls them), a buffer at a time."""

    def __init__(self, folder: Path, name: str, limit: int = 1 << 62):
        self.folder, self.name, self.limit = folder, name, limit
        self.files: list[Path] = []
        self.chunks: list[str] = []
        self.buffered = 0
        self.used = 0  # bytes in the current file
        self.total = 0  # bytes in all files
        self.handle = None

    def write(self, text: str) -> None:
        if self.handle is None:
            self.folder.mkdir(parents=True, exist_ok=True)
            path = self.folder / (self.name if not self.files else f"{self.name}.{len(self.files)}")
            self.handle = path.open("w", encoding="utf-8")
            self.files.append(path)
        self.chunks.append(text)
        self.buffered += len(text)
        self.used += len(text)
        self.total += len(text)
        if self.buffered >= 1 << 22:
            self._drain()
        if self.used >= self.limit:
            self.flush()

    def _drain(self) -> None:
        if self.handle is not None:
            self.handle.write("".join(self.chunks))
        self.chunks, self.buffered = [], 0

    def flush(self) -> None:
        """Ends the current file."""
        self._drain()
        if self.handle is not None:
            self.handle.close()
        self.handle, self.used = None, 0


@cache
def _cycle_templates(cycles: tuple[tuple[Event, ...], ...], job: str) -> tuple[tuple[tuple[timedelta, str], ...], ...]:
    """Each cycle's events as (offset from its trigger, format string of the text after the time stamp with
    {n} for the checkpoint number, {e} for the trigger's epoch milliseconds, {j} for the job)."""
    out = []
    for cycle in cycles:
        events = []
        for event in cycle:
            text = event.tail.replace("{", "{{").replace("}", "}}")
            text = CHECKPOINT.sub(lambda m: m.group(1) + "{n}", text)
            text = EPOCH_MS.sub("@ {e}", text).replace(job, "{j}")
            events.append((event.time - cycle[0].time, text))
        out.append(tuple(events))
    return tuple(out)


def checkpoint_cycle(rng: random.Random, number: int, at: datetime, job: str, cycles) -> str:
    """One checkpoint cycle of the healthy run (trigger, complete, source coordinator), as checkpoint `number`
    of `job`, its events spaced as they were recorded."""
    cycle = rng.choice(_cycle_templates(cycles, lifecycle().job))
    epoch = int((at - datetime(1970, 1, 1)).total_seconds() * 1000)
    return "".join(stamp(at + offset) + text.format(n=number, e=epoch, j=job) for offset, text in cycle)


def _incident(scenario: str, role: str, start: datetime, rng: random.Random) -> tuple[str, datetime]:
    """A failing run's job section on one role, re-timed to start at `start`, its job renamed: (text, end)."""
    events = job_section(runs()[("1.20.3", scenario)][role])
    job = _job_of(runs()[("1.20.3", scenario)]["jobmanager"]) or "-"
    subs = ((re.compile(job), _fresh_id(rng)),)
    base = events[0].time
    text = "".join(event.text(start + (event.time - base), subs) for event in events)
    return text, start + (events[-1].time - base)


def build_production(out: Path, size: int, seed: int = 11, file_bytes: int = FILE_BYTES) -> list[Path]:
    """The production-shaped bundle (module docstring): groups of a JobManager and three TaskManagers."""
    rng = random.Random(seed)
    life, pool = lifecycle(), pools()
    groups = max(1, -(-size // (4 * file_bytes)))
    incident_groups = {groups * k // 4: scenario for k, scenario in zip((1, 2, 3), INCIDENTS, strict=True)}
    start = datetime(2026, 3, 1)
    files: list[Path] = []
    written = 0
    for group in range(groups):
        job = _fresh_id(rng)
        incident = incident_groups.get(group)
        for member in range(4):
            budget = min(file_bytes, size - written)
            if budget <= 0:
                break
            role = "jobmanager" if member == 0 else "taskmanager"
            folder = out / f"container_{group:03d}_{member}"
            roller = Roller(folder, f"{role}.log")
            _production_file(roller, rng, role, job, budget, start, life, pool, incident if member < 2 else None)
            roller.flush()
            files += roller.files
            written += roller.total
    return files


def _production_file(roller: Roller, rng, role, job, budget, start, life, pool, incident) -> None:
    """One file of a group: the steady state for `budget` bytes, with the incident in its middle."""
    clock, number = start, 0
    if role == "jobmanager":
        for event in life.prologue:
            roller.write(event.text(clock + (event.time - life.prologue[0].time), ((re.compile(life.job), job),)))
        clock += life.prologue[-1].time - life.prologue[0].time
    lines_between = 0
    while roller.total < budget:
        if incident and roller.total >= budget // 2:
            text, clock = _incident(incident, role, clock + timedelta(seconds=5), rng)
            roller.write(text)
            incident = None
            continue
        if role == "jobmanager":
            number += 1
            roller.write(checkpoint_cycle(rng, number, clock, job, life.cycles))
            clock += CHECKPOINT_INTERVAL
            lines_between += 1
            if lines_between % 50 == 0:  # the job's other INFO lines now and then
                roller.write(rng.choice(pool["jobmanager"]).text(clock - timedelta(seconds=3)))
        else:
            roller.write(rng.choice(pool["taskmanager"]).text(clock))
            clock += timedelta(milliseconds=rng.randint(200, 1000))
            lines_between += 1
        if lines_between % 20_000 == 0:  # a healthy run's warning now and then
            roller.write(rng.choice(pool["warn"]).text(clock))


def build_jobs(out: Path, jobs: int, size: int | None = None, checkpoints: int | None = None, seed: int = 13):
    """One JobManager log of a session cluster that ran `jobs` jobs one after the other: `size` bytes shared
    among them, or `checkpoints` checkpoint cycles each. Each job has its own job and execution graph ids."""
    rng = random.Random(seed)
    life = lifecycle()
    graph = next(e.lines[0] for e in life.prologue if "Created execution graph" in e.lines[0])
    graph_id = HEX32.findall(graph)[0]
    roller = Roller(out / "jobmanager", "jobmanager.log")
    at = datetime(2026, 3, 1)
    fixed = sum(len(e.text(at)) for e in (*life.prologue, *life.epilogue))
    cycle = sum(len(e.text(at)) for c in life.cycles for e in c) / len(life.cycles)
    clock = at
    for index in range(jobs):
        share = (size or 0) * (index + 1) // jobs - roller.total  # what is left for this job
        count = checkpoints if checkpoints is not None else max(1, round((share - fixed) / cycle))
        job = _fresh_id(rng)
        subs = ((re.compile(life.job), job), (re.compile(graph_id), _fresh_id(rng)))
        base = life.prologue[0].time
        for event in life.prologue:
            roller.write(event.text(clock + (event.time - base), subs))
        clock += life.prologue[-1].time - base + timedelta(seconds=1)
        for number in range(1, count + 1):
            roller.write(checkpoint_cycle(rng, number, clock, job, life.cycles))
            clock += CHECKPOINT_INTERVAL
        base = life.epilogue[0].time
        for event in life.epilogue:
            roller.write(event.text(clock + (event.time - base), subs))
        clock += life.epilogue[-1].time - base + timedelta(seconds=1)
    roller.flush()
    return roller.files


def split_files(source: list[Path], out: Path, count: int) -> list[Path]:
    """The events of `source` files cut into `count` files in all (at least one per source), at event starts,
    named as rolled logs (`taskmanager.log`, `taskmanager.log.1`, ...), each source in its own folder."""
    total = sum(p.stat().st_size for p in source)
    files: list[Path] = []
    for index, path in enumerate(source):
        data = path.read_text(encoding="utf-8")
        pieces = max(1, round(count * len(data) / total))
        folder = out / f"{index:03d}-{path.parent.name}"
        roller = Roller(folder, path.name.split(".log")[0] + ".log", max(1, len(data) // pieces))
        starts = [m.start() for m in EVENT_START.finditer(data)] + [len(data)]
        if starts[0] != 0:
            starts.insert(0, 0)
        for a, b in zip(starts, starts[1:], strict=False):
            roller.write(data[a:b])
        roller.flush()
        files += roller.files
    return files
