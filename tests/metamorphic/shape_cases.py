"""The cases of the shape-invariance suite: every failure of the lab recordings, the seeds and the incidents, each
as the few plain files a user would paste or a shipper would send.

A lab recording is a whole cluster's logs, thousands of lines and REST snapshots; what travels in another shape is
a failure's evidence. So a lab case is the excerpt of its plain diagnosis: every event (header line and its
further lines) that holds a line of the top root cause's evidence or chain, in its own file (the recording's
path less its top folder), in file order. REST snapshots are left out (the logs hold the same exceptions; their
own shape, the web UI's exception view, is a transformation). The seeds and the incidents are excerpts already
(a few dozen lines): each is a case whole, its files as they are; a configuration file goes along unchanged.
Incident d20, a healthy run, is a case too: a shape must not make a failure of it.
"""

from __future__ import annotations

import json
import tarfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from conftest import DATA
from flinkdoctor.sources.layouts import detect_layout, layout_by_id

MAX_EVENT_LINES = 300  # a longer event (a trace of a deep call) keeps its head: users paste what fits
FIXED_SUFFIXES = (".yaml", ".yml", ".json", ".properties", ".xml")  # configuration goes along as it is


@dataclass(frozen=True)
class Case:
    id: str  # lab/1.20.3/heap-oom, seed/003, incident/d12
    files: dict[str, str]  # the logs a shape applies to
    fixed: dict[str, str] = field(default_factory=dict)  # configuration, unchanged by every shape
    answer: str | None = None  # the full input's top category (None: no failure)


def lab_bundles() -> list[Path]:
    return sorted(p for p in (DATA / "lab").glob("*/*.tar.gz") if p.name != "healthy.tar.gz")


def small_inputs() -> list[tuple[str, Path]]:
    seeds = [(f"seed/{p.name}", p) for p in sorted((DATA / "seeds").glob("0*"))]
    incidents = [(f"incident/{p.name}", p / "bundle") for p in sorted((DATA / "incidents").glob("d*"))]
    return seeds + incidents


def answer(report: dict) -> str | None:
    return report["root_causes"][0]["category"] if report["root_causes"] else None


def small_case(case_id: str, folder: Path, report: dict) -> Case:
    files, fixed = {}, {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        name = path.relative_to(folder).as_posix()
        text = path.read_bytes().decode("utf-8")
        (fixed if name.endswith(FIXED_SUFFIXES) else files)[name] = text
    return Case(case_id, files, fixed, answer(report))


def lab_case(bundle: Path, report: dict) -> Case | None:
    """The excerpt of a recording's failure: the events of its top root cause's evidence and chain."""
    if not report["root_causes"]:
        return None
    top = report["root_causes"][0]
    wanted: dict[str, set[int]] = {}
    for item in top["evidence"] + top["chain"]:
        if item.get("file") and item.get("line") and "/rest/" not in f"/{item['file']}":
            wanted.setdefault(item["file"], set()).add(item["line"])
    files = {}
    with tarfile.open(bundle) as tar:
        for path, numbers in sorted(wanted.items()):
            member = tar.extractfile(path)
            if member is None:
                continue
            lines = member.read().decode("utf-8").split("\n")
            excerpt = _events_around(lines, numbers)
            if excerpt:
                files[str(PurePosixPath(*PurePosixPath(path).parts[1:]))] = "\n".join(excerpt) + "\n"
    version = bundle.parent.name
    return Case(f"lab/{version}/{bundle.name.removesuffix('.tar.gz')}", files, {}, answer(report)) if files else None


def _events_around(lines: list[str], numbers: set[int]) -> list[str]:
    """The lines of every event that holds one of `numbers` (1-based), in file order, each event once."""
    if lines and lines[-1] == "":
        lines = lines[:-1]
    header = layout_by_id(detect_layout(lines[:2000])).python_regex
    starts = [i for i, line in enumerate(lines) if header.match(line)]
    spans = set()
    for number in numbers:
        index = number - 1
        begin = max((s for s in starts if s <= index), default=0)
        end = min((s for s in starts if s > begin), default=len(lines))
        spans.add((begin, min(end, begin + MAX_EVENT_LINES)))
    return [line for begin, end in sorted(spans) for line in lines[begin:end]]


def build_cases(diagnose) -> list[Case]:
    """Every case, from the plain diagnoses `diagnose(path) -> report dict` of the full inputs."""
    cases = []
    for bundle in lab_bundles():
        case = lab_case(bundle, diagnose(bundle))
        if case is not None:
            cases.append(case)
    for case_id, folder in small_inputs():
        cases.append(small_case(case_id, folder, diagnose(folder)))
    return cases


def save_cases(cases: list[Case], path: Path) -> None:
    path.write_text(json.dumps([case.__dict__ for case in cases], ensure_ascii=False), "utf-8")


def load_cases(path: Path) -> list[Case]:
    return [Case(**raw) for raw in json.loads(path.read_text("utf-8"))]
