"""While `diagnose` waits for the JVM it starts, the driver's own preparation runs beside it: the scan's matcher
is built in a thread (and handed to the pipeline, not built again), and pandas, which SparkContext's start
imports once the JVM is up, is imported in a thread during the JVM's launch. Neither holds up a failure of
the JVM's start, nor prints what it raises."""

from __future__ import annotations

import sys
import threading
import time
from types import SimpleNamespace

import pytest

from conftest import DATA
from flinkdoctor import pipeline
from flinkdoctor.runtime import spark as spark_runtime
from flinkdoctor.runtime.beside import beside

SEED = DATA / "seeds" / "000"


def test_the_matcher_is_built_while_the_jvm_starts_and_used(monkeypatch):
    built = threading.Event()
    seen: dict[str, object] = {}
    matcher = object()

    def rules_matcher(rules):
        seen["thread"] = threading.current_thread().name
        built.set()
        return matcher

    def spark_session(**options):
        # the JVM's start returns only once the matcher was built beside it: one after the other, this waits in vain
        seen["during"] = built.wait(timeout=30)
        return "session"

    class Done(Exception):
        pass

    def diagnose_bundles(spark, manifests, work, rules, **options):
        seen["spark"], seen["matcher"] = spark, options["matcher"]
        raise Done

    monkeypatch.setattr(pipeline, "rules_matcher", rules_matcher)
    monkeypatch.setattr(spark_runtime, "spark_session", spark_session)
    monkeypatch.setattr(pipeline, "diagnose_bundles", diagnose_bundles)
    with pytest.raises(Done):
        pipeline.diagnose([SEED])
    assert seen["during"] is True
    assert seen["thread"] != threading.current_thread().name
    assert seen["spark"] == "session" and seen["matcher"] is matcher


def test_a_failure_to_start_the_jvm_is_not_held_up_by_the_matcher(monkeypatch):
    release = threading.Event()  # the matcher's build (a first run's catalogue compile) never ends in this test

    def rules_matcher(rules):
        release.wait(timeout=60)

    def spark_session(**options):
        raise RuntimeError("Java gateway process exited before sending its port number")

    monkeypatch.setattr(pipeline, "rules_matcher", rules_matcher)
    monkeypatch.setattr(spark_runtime, "spark_session", spark_session)
    started = time.perf_counter()
    with pytest.raises(RuntimeError, match="Java gateway"):
        pipeline.diagnose([SEED])
    took = time.perf_counter() - started
    release.set()
    assert took < 30


def test_the_pipeline_scans_with_the_matcher_handed_to_it(monkeypatch, tmp_path):
    from flinkdoctor.sources.ingest import ingest

    handed = SimpleNamespace(prefilter=object())  # (what the pipeline asks of a matcher before the scan)
    seen = {}

    class Done(Exception):
        pass

    def build_events(spark, manifest, work, prefilter, **options):
        seen["matcher"] = options["matcher"]
        raise Done

    monkeypatch.setattr(pipeline, "build_events", build_events)
    monkeypatch.setattr(pipeline, "rules_matcher", lambda rules: pytest.fail("built again"))
    manifest = ingest([SEED], tmp_path)
    with pytest.raises(Done):
        pipeline.diagnose_bundles(None, [manifest], tmp_path, [], matcher=handed)  # type: ignore[arg-type]
    assert seen["matcher"] is handed


def test_work_beside_runs_in_a_daemon_thread_and_keeps_what_it_raises(capfd):
    def fails():
        assert threading.current_thread().daemon
        raise ModuleNotFoundError("No module named 'pandas'")

    future = beside(fails)
    with pytest.raises(ModuleNotFoundError):
        future.result(timeout=30)
    assert capfd.readouterr().err == ""  # never a thread's traceback on the terminal


def test_a_module_is_imported_beside_the_jvms_start(monkeypatch):
    name = "flinkdoctor_test_meanwhile"
    imported: list[str] = []
    done = threading.Event()

    def import_module(module):
        imported.append(threading.current_thread().name)
        sys.modules[module] = type(sys)(module)
        done.set()

    monkeypatch.setattr("importlib.import_module", import_module)
    monkeypatch.delitem(sys.modules, name, raising=False)
    spark_runtime._import_meanwhile(name)
    assert done.wait(timeout=30)
    assert imported[0] != threading.current_thread().name
    spark_runtime._import_meanwhile(name)  # already imported: not again
    assert len(imported) == 1
    monkeypatch.delitem(sys.modules, name)
