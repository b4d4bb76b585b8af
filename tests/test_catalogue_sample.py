"""A sample of the catalogue, diagnosed (issue 22, part 3): catalogued messages rendered with realistic values into
a real Flink log's failure event and into a bare pasted trace, each shape diagnosed, the catalogued category
expected.

The failure event is real (a Flink 1.20.3 lab run: a task switched to FAILED, its trace); only its exception line
is replaced by the catalogued class and message, the frames stay. Messages the code logs or prints rather than
throws go into the same log as an ERROR line under the class that logs them, or alone as the raw line a script or
the JVM prints. Every case of the sample runs through one Spark pass (the diagnosis core over many bundles).
"""

from __future__ import annotations

import random
import re

import pytest

from conftest import DATA

pytestmark = pytest.mark.spark

SEED = 22
THROWN, PRINTED = 60, 20  # entries sampled of each kind
MIN_RIGHT = 0.9  # share of the cases whose top cause has the catalogued category (the goal)
PLACEHOLDER = re.compile(r"\{\d*\}|%[-#+ 0,(]*\d*(?:\.\d+)?([a-zA-Z])")
NUMERIC = set("dxXfeEgGo")
VALUES = ("orders-0", "flink-job-7", "tm-3", "payments", "node-12")  # what a user's names look like


def _render(text: str, rng: random.Random) -> str:
    """The message with each placeholder ({}, {0}, %s, %d, ...) filled as the code's formatter would fill it."""

    def value(found: re.Match) -> str:
        kind = found.group(1)
        if kind == "n":
            return " "
        return str(rng.randint(2, 90_000)) if kind in NUMERIC else rng.choice(VALUES)

    return PLACEHOLDER.sub(value, text)


def _failure_event() -> tuple[list[str], int]:
    """A real task failure of a Flink 1.20.3 JobManager log (its header line, the exception line, the frames) and the
    index of the exception line."""
    import tarfile

    with tarfile.open(DATA / "lab" / "1.20.3" / "restart-exhausted.tar.gz") as archive:
        name = next(n for n in archive.getnames() if n.endswith("standalonesession-0-vm.log"))
        lines = archive.extractfile(name).read().decode("utf-8").splitlines()  # type: ignore[union-attr]
    start = next(i for i, line in enumerate(lines) if "switched from RUNNING to FAILED" in line)
    end = next(i for i in range(start + 2, len(lines)) if not lines[i].startswith("\tat "))
    return lines[start:end], 1


def _logger(where: str) -> str | None:
    """The class that logs an entry's message, from its provenance (jar!class or repo@commit:path.java:line); None
    for a script's or the JVM's own output."""
    if "src/main/java/" in where:
        return where.split("src/main/java/", 1)[1].rsplit(".java", 1)[0].replace("/", ".")
    inner = where.split("!", 1)[1] if "!" in where else ""
    return inner if re.fullmatch(r"[\w$]+(?:\.[\w$]+)+", inner) and not inner.endswith(".so") else None


def _sample():
    from flinkdoctor.knowledge.catalogue import load_catalogue

    rng = random.Random(SEED)
    usable = [e for e in load_catalogue().entries if e.kind == "message" and e.category != "other"]
    thrown = [e for e in usable if e.level == "throw" and e.cls]
    printed = [e for e in usable if e.level in ("error", "fatal", "exit", "stderr")]
    return rng.sample(thrown, THROWN) + rng.sample(printed, PRINTED), rng


def _cases(base):
    """(case folder, entry, shape) for each sampled entry in each shape it is printed in; entries whose rendering
    their own regex does not match are counted, not used."""
    base.mkdir(parents=True)
    event, at = _failure_event()
    header = event[0]
    stamp = header[: header.index(" INFO ")]
    entries, rng = _sample()
    cases, unrendered = [], []
    for n, entry in enumerate(entries):
        message = _render(entry.text, rng)
        if not re.search(entry.regex, message):
            unrendered.append(entry.id)
            continue
        logger = _logger(entry.where)
        shapes = {}
        if entry.level == "throw":
            thrown = f"{entry.cls}: {message}"
            shapes["log"] = ("flink-root-standalonesession-0-vm.log", [*event[:at], thrown, *event[at + 1 :]])
            shapes["paste"] = ("trace.txt", [thrown, *event[at + 1 :]])
        elif logger:
            shapes["log"] = ("flink-root-standalonesession-0-vm.log", [f"{stamp} ERROR {logger} [] - {message}"])
        else:  # a script's or the JVM's own output, printed as it is
            shapes["paste"] = ("console.txt", [message])
        for shape, (name, lines) in shapes.items():
            folder = base / f"{n:03d}-{shape}"
            folder.mkdir()
            (folder / name).write_text("\n".join(lines) + "\n", "utf-8")
            cases.append((folder, entry, shape))
    return cases, unrendered


def test_catalogued_messages_are_diagnosed_as_their_category(spark, rules, tmp_path):
    from flinkdoctor.pipeline import diagnose_bundles
    from flinkdoctor.sources.ingest import ingest

    cases, unrendered = _cases(tmp_path / "cases")
    assert len(unrendered) <= (THROWN + PRINTED) // 10, unrendered
    manifests = [ingest([folder], tmp_path / "ingest" / folder.name) for folder, _, _ in cases]
    reports = diagnose_bundles(spark, manifests, tmp_path / "work", rules).reports
    wrong, healthy = [], []
    for (folder, entry, shape), report in zip(cases, reports, strict=True):
        data = report.to_dict()
        top = data["root_causes"][0] if data["root_causes"] else None
        if data["verdict"] == "no-failure":
            healthy.append((folder.name, entry.id))
        elif top is None or top["category"] != entry.category:
            wrong.append((folder.name, shape, entry.id, entry.category, top and top["category"], entry.text[:80]))
    right = 1 - len(wrong + healthy) / len(cases)
    assert not healthy, healthy  # a message the code prints when it fails is never "no failure"
    assert right >= MIN_RIGHT, (f"{right:.0%} of {len(cases)}", wrong)
