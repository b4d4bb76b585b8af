"""A catalogued failure line cites the line the user has, whatever the paste's shape (diagnosis/fallback.py).

A terminal UI's box folds a long line over several rows, which the reader joins into one (shapes.py): the staged
event's lines are then no longer consecutive lines of the file, and the exception chain read from a catalogued
failure must map each of its lines through the source's line map, as the rules' findings do. The input is a real
Flink 1.20.3 TaskManager log (lab classloader-leak): a thread's uncaught exception at ERROR, the exception's
message one the catalogue knows (the FlinkUserCodeClassLoaders safety net's), several long INFO lines before it.
"""

from __future__ import annotations

import tarfile

from shape_transforms import quote, tui_box

from conftest import DATA

RECORDING = DATA / "lab" / "1.20.3" / "classloader-leak.tar.gz"
THROWN = "java.lang.IllegalStateException: Trying to access closed classloader."
FROM, TO = "Un-registering task and sending final execution state CANCELED", "RECEIVED SIGNAL 15: SIGTERM."


def _excerpt() -> str:
    """The TaskManager log's lines from the last task's cancellation to the uncaught exception's last frame."""
    with tarfile.open(RECORDING) as archive:
        name = next(n for n in archive.getnames() if n.endswith("taskexecutor-0-vm.log"))
        lines = archive.extractfile(name).read().decode("utf-8").splitlines()  # type: ignore[union-attr]
    end = next(i for i, line in enumerate(lines) if TO in line)
    start = max(i for i, line in enumerate(lines[:end]) if FROM in line)
    return "\n".join(lines[start:end]) + "\n"


def _catalogued_failures(spark, rules, tmp_path, text: str):
    from flinkdoctor.diagnosis.fallback import Catalogued
    from flinkdoctor.knowledge.catalogue import load_catalogue
    from flinkdoctor.pipeline import diagnose_bundles
    from flinkdoctor.sources.ingest import ingest

    folder = tmp_path / "paste"
    folder.mkdir(parents=True)
    (folder / "taskmanager.log").write_text(text, "utf-8")
    manifest = ingest([folder], tmp_path / "staged")
    diagnoses = diagnose_bundles(spark, [manifest], tmp_path / "work", rules)
    return Catalogued.of(diagnoses.catalogue_hits[0], load_catalogue()).failures


def test_a_catalogued_failure_in_a_boxed_or_quoted_paste_cites_the_users_lines(spark, rules, tmp_path):
    from flinkdoctor.diagnosis.fallback import exception_chain

    plain = _excerpt()
    files = {"taskmanager.log": plain}
    boxed = tui_box(files)[1]["taskmanager.log"]
    quoted = quote(files)[1]["taskmanager.log"]
    assert len(boxed.splitlines()) > len(plain.splitlines()) + 2  # long lines were folded over several rows
    for shape, text in (("plain", plain), ("boxed", boxed), ("quoted", quoted)):
        lines = text.splitlines()
        where = [n for n, line in enumerate(lines, 1) if line.lstrip("│> ").startswith(THROWN)]
        assert len(where) == 1, (shape, where)
        failures = _catalogued_failures(spark, rules, tmp_path / shape, text)
        failure = next(f for f in failures if THROWN in f.text)
        assert failure.line == where[0], shape
        chain = exception_chain(failure)
        assert chain and chain[0].text.startswith(THROWN), shape
        assert chain[0].line == where[0], (shape, chain[0].line, where[0])
        for thrown in chain:  # every line of the chain cites a line that holds its start
            assert thrown.line is not None and thrown.text[:20] in lines[thrown.line - 1], (shape, thrown)
