"""One SparkSession for the whole test run (local[2], UI off, few shuffle partitions, UTC), and the markers.

Every test is marked `unit` (no Spark, no subprocess that starts one: the inner loop, `pytest -m unit`), `spark`
(the shared session, or a `flinkdoctor` command that starts its own) or `live` (a real Flink cluster, a Spark
standalone cluster or the warm path's server). A test that starts Spark without the shared fixtures says so with
`@pytest.mark.spark`; the marks of each test are set here, in one place.
"""

from __future__ import annotations

import os
import tarfile
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"
SPARK_FIXTURES = {"spark", "diagnose_bundle"}
LIVE_MODULES = {"test_lab_live.py", "test_live_lab.py", "test_fleet_cluster.py", "test_warm_server.py"}


def pytest_collection_modifyitems(items):
    for item in items:
        if item.path.name in LIVE_MODULES:
            item.add_marker(pytest.mark.live)
        elif item.get_closest_marker("spark") is None and SPARK_FIXTURES.isdisjoint(item.fixturenames):
            item.add_marker(pytest.mark.unit)
        elif item.get_closest_marker("spark") is None:
            item.add_marker(pytest.mark.spark)


@pytest.fixture(scope="session", autouse=True)
def _own_state_dir(tmp_path_factory):
    """flinkdoctor's per-user state (the warm server's file, the rules cache) in this run's folder, not the user's."""
    os.environ["FLINKDOCTOR_STATE_DIR"] = str(tmp_path_factory.mktemp("user-state"))
    os.environ["FLINKDOCTOR_JVM_ARCHIVE"] = "0"  # no class archive written at the run's exit (test_jvm.py tests it)


@pytest.fixture(scope="session")
def spark():
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from flinkdoctor.runtime.spark import spark_session

    session = spark_session("local[2]")
    session.conf.set("spark.sql.shuffle.partitions", "4")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def rules():
    from flinkdoctor.knowledge.rulebook import load_rules

    return load_rules()


@pytest.fixture(scope="session")
def diagnose_bundle(spark, rules, tmp_path_factory):
    """diagnose() on the shared session, memoised per bundle; the report as its JSON contract (a dict)."""
    from flinkdoctor.pipeline import diagnose
    from flinkdoctor.views.contract import contract

    cache = {}

    def run(*paths, **options):
        key = (tuple(str(p) for p in paths), tuple(sorted(options.items())))
        if key not in cache:
            work = tmp_path_factory.mktemp("work")
            cache[key] = contract(diagnose(list(paths), spark=spark, work_dir=work, rules=rules, **options))
        return cache[key]

    return run


@pytest.fixture(scope="session")
def hostile_corpus(tmp_path_factory):
    """The hostile bundles (tests/hostile_input.py), built once: name -> folder."""
    from hostile_input import bomb_among_logs, hostile_bundle

    base = tmp_path_factory.mktemp("hostile-corpus")
    hostile_bundle(base / "hostile")
    return {"hostile": base / "hostile", "bomb-among-logs": bomb_among_logs(base / "bomb-among-logs")}


@pytest.fixture(scope="session")
def hostile(spark, rules, hostile_corpus, tmp_path_factory):
    """One diagnose over the whole hostile bundle, the work dir kept so that it can be searched too; its views."""
    import io

    from rich.console import Console

    from flinkdoctor.pipeline import diagnose
    from flinkdoctor.views import render_html, render_json, render_markdown, render_terminal
    from hostile_input import hostile_files

    work = tmp_path_factory.mktemp("hostile-work")
    bundle = hostile_corpus["hostile"]
    report = diagnose([bundle], spark=spark, rules=rules, work_dir=work, keep_work_dir=True)
    views = {"json": render_json(report), "html": render_html(report), "markdown": render_markdown(report)}
    for name, options in (("plain", {"no_color": True}), ("colour", {"force_terminal": True})):
        out = io.StringIO()
        render_terminal(report, Console(file=out, width=100, **options))
        views[name] = out.getvalue()
    return {"files": hostile_files(bundle), "report": report.to_dict(), "views": views, "work": work}


def line_at(path: Path, number: int) -> str:
    """The text of line `number` (1-based) of a file, as flinkdoctor counts lines (split on \\n, \\r dropped)."""
    with open(path, "rb") as handle:
        for index, raw in enumerate(handle, 1):
            if index == number:
                return raw.rstrip(b"\n").rstrip(b"\r").decode("utf-8", "replace")
    raise AssertionError(f"{path} has fewer than {number} lines")


def lab_logs_of(recording: str, version: str = "1.20.3") -> dict[str, bytes]:
    """A lab recording's Flink logs (its `log/*.log`), by file name."""
    with tarfile.open(DATA / "lab" / version / f"{recording}.tar.gz") as archive:
        return {
            Path(m.name).name: archive.extractfile(m).read()  # type: ignore[union-attr]
            for m in archive.getmembers()
            if m.name.endswith(".log") and "/log/" in m.name
        }
