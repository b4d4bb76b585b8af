"""Ingest's cost per file, and that what it reads stays the same.

Rolled families (`jobmanager.log`, `jobmanager.log.1`, ...): ingest reads a family's first file in full and
checks each further one against its layout (shapes.reads_as) instead of running every shape's test on it. A
member in another shape must still be read as it would be alone, and the full reading must not be run once per
file of a family that is plainly one layout.

Every log line here is real: the lab's recordings (tests/data/lab), the shape fixtures (tests/data/shapes, real
Flink logs and their real wrappings), and the shape-invariance suite's transformations of them (the shapes real
pastes and shippers give a log, tests/metamorphic/shape_transforms.py)."""

from __future__ import annotations

import sys
import tarfile
from pathlib import Path

import pytest

from flinkdoctor.sources import ingest as ingest_module
from flinkdoctor.sources.classify import HEAD_BYTES, KIND_MARKERS, marker_votes
from flinkdoctor.sources.ingest import ingest

DATA = Path(__file__).parent / "data"
SHAPES = DATA / "shapes"
LAB = DATA / "lab" / "1.20.3" / "heap-oom.tar.gz"
sys.path.insert(0, str(Path(__file__).parent / "metamorphic"))
from shape_transforms import TRANSFORMS  # noqa: E402


def _lab_log(name: str) -> str:
    with tarfile.open(LAB) as tar:
        member = next(m for m in tar.getmembers() if m.name.endswith(name))
        handle = tar.extractfile(member)
        assert handle is not None
        return handle.read().decode("utf-8")


def _rolled(text: str, pieces: int) -> list[str]:
    """The log cut into `pieces` files at header lines, as log4j rolls a file between two events."""
    lines = text.splitlines(keepends=True)
    headers = [i for i, line in enumerate(lines) if line[:4].isdigit() and line[4:5] == "-"]
    cuts = [0] + [headers[len(headers) * k // pieces] for k in range(1, pieces)] + [len(lines)]
    return ["".join(lines[a:b]) for a, b in zip(cuts, cuts[1:], strict=False)]


def _read(folder: Path, work: Path) -> dict[str, tuple[str | None, str | None, str]]:
    manifest = ingest([folder], work)
    return {s.path: (s.layout, s.shape, s.kind) for s in manifest.sources if s.staged}


def _each_alone(folder: Path, work: Path, monkeypatch: pytest.MonkeyPatch):
    """What ingest reads when no file is taken on its family's word: every file through the full shape tests."""
    with monkeypatch.context() as patched:
        patched.setattr(ingest_module, "reads_as", lambda head, header: False)
        return _read(folder, work)


class _Counted:
    def __init__(self, function):
        self.function, self.calls = function, 0

    def __call__(self, *args):
        self.calls += 1
        return self.function(*args)


def test_a_family_of_one_layout_is_read_in_full_once_whatever_its_number_of_files(tmp_path, monkeypatch):
    log = _lab_log("standalonesession-0-vm.log")
    full_readings = []
    for pieces in (3, 12):
        folder = tmp_path / f"bundle-{pieces}" / "log"
        folder.mkdir(parents=True)
        for n, piece in enumerate(_rolled(log, pieces)):
            (folder / ("jobmanager.log" + (f".{n}" if n else ""))).write_text(piece, encoding="utf-8")
        plan, detect = _Counted(ingest_module.plan), _Counted(ingest_module.detect_layout)
        monkeypatch.setattr(ingest_module, "plan", plan)
        monkeypatch.setattr(ingest_module, "detect_layout", detect)
        read = _read(folder.parent, tmp_path / f"work-{pieces}")
        monkeypatch.undo()
        assert len(read) == pieces
        assert read == _each_alone(folder.parent, tmp_path / f"alone-{pieces}", monkeypatch)
        assert {layout for layout, _, _ in read.values()} == {"flink-log4j2"}
        full_readings.append((plan.calls, detect.calls))
    # the first file, and one whose first lines hold a multi-line message (checked in full): as many for 12 files
    # as for 3
    assert full_readings[0] == full_readings[1] and full_readings[0][0] <= 2


@pytest.mark.parametrize(
    ("folder", "plain", "others"),
    [
        ("wrapped", "taskmanager.log", ["taskmanager.cri.log", "taskmanager.docker.log"]),
        ("decorated", "jobmanager.log", sorted(p.name for p in (SHAPES / "decorated").glob("jobmanager-*.txt"))),
        ("json", "jobmanager.log", sorted(p.name for p in (SHAPES / "json").glob("*.json"))),
    ],
)
def test_a_rolled_file_in_another_shape_is_read_as_it_would_be_alone(tmp_path, monkeypatch, folder, plain, others):
    """The family's first file is plain; each other shape's real copy of it is a rolled file between plain ones."""
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    members = [plain] + [name for other in others for name in (other, plain)]
    for n, name in enumerate(members):
        target = bundle / ("flink.log" + (f".{n}" if n else ""))
        target.write_bytes((SHAPES / folder / name).read_bytes())
    read = _read(bundle, tmp_path / "work")
    assert read == _each_alone(bundle, tmp_path / "alone", monkeypatch)
    shaped = [read[f"flink.log.{n}"][1] for n, name in enumerate(members) if name != plain]
    assert all(shaped), shaped  # each other shape is taken off, not read as the family's plain layout


def _lab_logs():
    """(recording, text) of the lab's Flink 1.20.3 JobManager and TaskManager logs, those with traces first."""
    logs = []
    for recording in sorted((DATA / "lab" / "1.20.3").glob("*.tar.gz")):
        with tarfile.open(recording) as tar:
            for member in tar.getmembers():
                if member.isfile() and member.name.endswith(("standalonesession-0-vm.log", "taskexecutor-0-vm.log")):
                    handle = tar.extractfile(member)
                    assert handle is not None
                    logs.append((f"{recording.name}!{member.name}", handle.read().decode("utf-8")))
    return sorted(logs, key=lambda log: -log[1].count("\tat "))


@pytest.mark.parametrize("transform", TRANSFORMS, ids=lambda t: t.name)
def test_a_rolled_file_in_any_pasted_shape_is_read_as_it_would_be_alone(tmp_path, monkeypatch, transform):
    """Every shape of the shape-invariance suite, as the second rolled file of a plain family: the part of a lab
    log the shape has something to carry in (a trace, a localizable error text, ...), between two plain parts."""
    for _, log in _lab_logs():
        pieces = _rolled(log, 3)
        middle = max(range(3), key=lambda i: pieces[i].count("\tat "))
        pair = transform.reshape({"jobmanager.log": pieces[middle]})
        if pair is not None:
            break
    else:
        pytest.skip(f"{transform.name} has nothing to carry in any lab log")
    shaped = next(iter(pair[1].values()))
    plain = [piece for i, piece in enumerate(pieces) if i != middle]
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "jobmanager.log").write_text(plain[0], encoding="utf-8")
    (bundle / "jobmanager.log.1").write_text(shaped, encoding="utf-8", newline="")
    (bundle / "jobmanager.log.2").write_text(plain[1], encoding="utf-8")
    read = _read(bundle, tmp_path / "work")
    assert read == _each_alone(bundle, tmp_path / "alone", monkeypatch)


def test_the_markers_counted_in_one_pass_are_counted_as_each_on_its_own():
    """Classification's marker votes, counted in one pass (Hyperscan where it is installed), equal str.count's
    per marker, on the head of every text file of the test data and of the lab's logs."""
    heads = [p.read_bytes()[:HEAD_BYTES] for p in sorted(DATA.rglob("*")) if p.is_file() and p.suffix != ".gz"]
    heads += [text.encode("utf-8")[:HEAD_BYTES] for _, text in _lab_logs()]
    compared = 0
    for head in heads:
        if b"\x00" in head[:8192]:
            continue
        text = head.decode("utf-8", "replace")
        expected = {kind: sum(text.count(marker) for marker in markers) for kind, markers in KIND_MARKERS.items()}
        assert marker_votes(text) == expected
        compared += any(expected.values())
    assert compared > 100
