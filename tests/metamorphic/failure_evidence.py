"""Inputs that hold a failure, and inputs that do not, for the never-no-failure property.

Failure evidence, each as a small bundle of its own, taken from real logs (the lab recordings, the seeds, the
incidents) or printed by the code that prints it (data/README.md):

- `trace`: a stack trace as pasted, alone (the trace of every event that holds one);
- `exception`: an exception class with its message, one line alone;
- `exception-dated`, `exception-untimed`, `exception-quoted`: an event logged at ERROR or FATAL with its exception
  (a class and its message) but no frames, as a person's timeline or a write-up quotes it: the time and the
  message with the level and the logger left out, then the exception line (`exception-dated`); the same without
  the time (`exception-untimed`); the dated form behind Markdown's quote markers (`exception-quoted`);
- `error-line`: an event at ERROR or FATAL, with its header, alone; a JUL SEVERE record;
- `exit`: a process that exits non-zero or is killed;
- `failed-state`: a task or job that switches to FAILED, a pod in an error state;
- `shell-error`: an error line of Flink's bin/ scripts;
- `warning-event`: a Kubernetes Warning event in `kubectl describe` (the operator's JobException rows);
- `inserted`: a healthy run's log with one failure event of another run appended (a failure in noise).

And the converse, `healthy`: the healthy lab runs whole (WARN lines, some routine traces), which are no failure.

Evidence of one kind that differs only in numbers, ids and paths is taken once (its first occurrence).
"""

from __future__ import annotations

import re
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from shape_events import EXCEPTION, Event, exceptions, read_events
from shape_transforms import kubectl_events

from conftest import DATA

HERE = Path(__file__).parent
LAB = DATA / "lab"
VOLATILE = re.compile(r"\b[0-9a-f]{8,}\b|\d+|/[\w./-]+|@[\w.-]+|\[[^\]]*\]")
FAILED_STATE = re.compile(r"switched from (?:state )?[A-Z_]+ to FAILED\b")
EXIT = re.compile(r"with exit code [1-9]\d*")
HEALTHY_TAIL = 300  # lines of a healthy log a failure event is appended to
LOG4J_TIME = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}")  # the time of a dated line (layout dated-text)


@dataclass(frozen=True)
class Evidence:
    kind: str
    source: str  # where it was taken from
    files: dict[str, str]
    file: str  # the file that holds the evidence ...
    lines: tuple[int, int]  # ... and its lines (first, last), 1-based
    failure: bool = True  # False: routine, no failure


def _template(kind: str, text: str) -> tuple[str, str]:
    return kind, VOLATILE.sub("#", text)[:300]


def _lab_logs() -> Iterator[tuple[str, str, str]]:
    """(recording, file path in it, text) of every log of every lab recording."""
    for bundle in sorted(LAB.glob("*/*.tar.gz")):
        with tarfile.open(bundle) as archive:
            for member in archive.getmembers():
                if member.isfile() and member.name.endswith((".log", ".out")):
                    text = archive.extractfile(member).read().decode("utf-8", "replace")  # type: ignore[union-attr]
                    yield f"lab/{bundle.parent.name}/{bundle.name[:-7]}", member.name, text


def _small_logs() -> Iterator[tuple[str, str, str]]:
    folders = [(f"seed/{p.name}", p) for p in sorted((DATA / "seeds").glob("0*"))]
    folders += [(f"incident/{p.name}", p / "bundle") for p in sorted((DATA / "incidents").glob("d*"))]
    for name, folder in folders:
        for path in sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix not in (".yaml", ".json")):
            yield name, path.relative_to(folder).as_posix(), path.read_text("utf-8")


def _alone(kind: str, source: str, name: str, lines: list[str], failure: bool = True) -> Evidence:
    return Evidence(kind, source, {name: "\n".join(lines) + "\n"}, name, (1, len(lines)), failure)


def _from_event(source: str, path: str, event: Event) -> Iterator[tuple[tuple[str, str], Evidence]]:
    name = PurePosixPath(path).name
    level = event.fields.get("level", "")
    trace = [line for line in event.trace if line.strip()]
    if level in ("ERROR", "FATAL"):
        yield _template("error-line", event.lines[0]), _alone("error-line", source, name, event.lines)
    state = FAILED_STATE.search(event.fields.get("msg", "")) if event.fields else None
    if state:
        key = ("failed-state", f"{event.fields.get('logger')} {state.group()} {bool(trace)}")
        yield key, _alone("failed-state", source, name, event.lines[:1])
    if event.fields and EXIT.search(event.fields.get("msg", "")):
        yield _template("exit", event.fields["msg"]), _alone("exit", source, name, event.lines[:1])
    if trace and EXCEPTION.match(trace[0]):
        key = " ".join(cls for cls, _ in exceptions(trace))
        yield ("trace", key), _alone("trace", source, "trace.txt", trace)
        cls, message = exceptions(trace)[0]
        line = f"{cls}: {message}" if message else cls
        yield _template("exception", line), _alone("exception", source, "exception.txt", [line])
    if level in ("ERROR", "FATAL") and trace and EXCEPTION.match(trace[0]):
        yield from _without_level(source, event, trace[0])


def _without_level(source: str, event: Event, thrown: str) -> Iterator[tuple[tuple[str, str], Evidence]]:
    """An ERROR event's first line and its exception line (no frames) as a person quotes them: the level and the
    logger left out, with its time, without, and the dated form quoted."""
    match = EXCEPTION.match(thrown)
    message, when = event.fields.get("msg", "").strip(), event.fields.get("ts", "")
    if not (match and match["msg"] and match["msg"].strip() and message and LOG4J_TIME.fullmatch(when)):
        return
    dated = [f"{when} {message}", thrown.strip()]
    key = VOLATILE.sub("#", f"{message} {thrown}")[:300]
    yield ("exception-dated", key), _alone("exception-dated", source, "timeline.md", dated)
    yield ("exception-untimed", key), _alone("exception-untimed", source, "notes.txt", [message, thrown.strip()])
    yield ("exception-quoted", key), _alone("exception-quoted", source, "issue.md", [f"> {line}" for line in dated])


def real_evidence() -> list[Evidence]:
    """Every kind of real evidence, once per template, in a stable order."""
    found: dict[tuple[str, str], Evidence] = {}
    for source, path, text in [*_lab_logs(), *_small_logs()]:
        for event in read_events(text):
            for key, evidence in _from_event(source, path, event):
                found.setdefault(key, evidence)
    return list(found.values())


def printed_evidence() -> list[Evidence]:
    """Evidence printed by the code that prints it (data/README.md), and Kubernetes Warning rows."""
    out = []
    for line in (HERE / "data" / "flink-script-errors.txt").read_text("utf-8").splitlines():
        if line and not line.startswith("#"):
            where, text = line.split("\t", 1)
            out.append(_alone("shell-error", where, "flink-console.out", [text]))
    jul = (HERE / "data" / "jul-severe.log").read_text("utf-8").rstrip("\n").split("\n")
    second = jul.index("", 1) + 1  # the record without an exception
    out.append(_alone("error-line", "data/jul-severe.log", "app.log", jul[:second]))
    out.append(_alone("error-line", "data/jul-severe.log", "app.log", jul[second:]))
    killed = (HERE / "data" / "bash-killed.txt").read_text("utf-8").splitlines()
    out.append(_alone("exit", "data/bash-killed.txt", "taskmanager.out", killed))
    get_all = (DATA / "incidents" / "d12" / "bundle" / "kubectl-get-all.txt").read_text("utf-8").splitlines()
    crash = next(i for i, line in enumerate(get_all) if "CrashLoopBackOff" in line)
    out.append(_alone("failed-state", "incident/d12", "kubectl-get-pods.txt", get_all[1 : crash + 1]))
    return out


def warning_events(evidence: list[Evidence]) -> list[Evidence]:
    """The operator's JobException Warning events, as `kubectl describe` shows them, of some real traces."""
    out = []
    for item in [e for e in evidence if e.kind == "trace"][:20]:
        pair = kubectl_events(item.files)
        if pair is None:
            continue
        text = pair[1]["kubectl-describe.txt"]
        row = next(n for n, line in enumerate(text.split("\n"), 1) if line.lstrip().startswith("Warning"))
        out.append(Evidence("warning-event", item.source, pair[1], "kubectl-describe.txt", (row, row)))
    return out


def inserted(evidence: list[Evidence]) -> list[Evidence]:
    """A failure event in noise: a healthy run's log (its last lines) with an ERROR or FAILED event of a failure
    run appended."""
    healthy = [(s, p, t) for s, p, t in _lab_logs() if s.endswith("/healthy") and p.endswith(".log")]
    picks = [e for e in evidence if e.kind in ("error-line", "failed-state") and e.source.startswith("lab/")][:12]
    out = []
    for n, item in enumerate(picks):
        source, path, text = healthy[n % len(healthy)]
        noise = text.rstrip("\n").split("\n")[-HEALTHY_TAIL:]
        event = item.files[item.file].rstrip("\n").split("\n")
        name = PurePosixPath(path).name
        files = {name: "\n".join(noise + event) + "\n"}
        out.append(
            Evidence("inserted", f"{source} + {item.source}", files, name, (len(noise) + 1, len(noise) + len(event)))
        )
    return out


def healthy_runs() -> list[Evidence]:
    """The healthy lab runs whole: no failure."""
    out = []
    for bundle in sorted(LAB.glob("*/healthy.tar.gz")):
        files = {}
        with tarfile.open(bundle) as archive:
            for member in archive.getmembers():
                if member.isfile():
                    name = str(PurePosixPath(*PurePosixPath(member.name).parts[1:]))
                    files[name] = archive.extractfile(member).read().decode("utf-8")  # type: ignore[union-attr]
        out.append(Evidence("healthy", f"lab/{bundle.parent.name}/healthy", files, "", (0, 0), failure=False))
    return out


def all_evidence() -> list[Evidence]:
    real = real_evidence()
    return real + printed_evidence() + warning_events(real) + inserted(real) + healthy_runs()
