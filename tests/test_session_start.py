"""While `diagnose` waits for the JVM it starts, the driver's own preparation runs beside it: the scan's matcher
is built in a thread (and handed to the pipeline, not built again), and pandas, which SparkContext's start
imports once the JVM is up, is imported in a thread during the JVM's launch."""

from __future__ import annotations

import sys
import threading

import pytest

from conftest import DATA
from flinkdoctor import pipeline
from flinkdoctor.runtime import spark as spark_runtime

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


def test_a_module_is_imported_beside_the_jvms_start(monkeypatch):
    name = "flinkdoctor_test_meanwhile"
    imported: list[str] = []

    def import_module(module):
        imported.append(threading.current_thread().name)
        sys.modules[module] = type(sys)(module)

    monkeypatch.setattr("importlib.import_module", import_module)
    monkeypatch.delitem(sys.modules, name, raising=False)
    spark_runtime._import_meanwhile(name)
    for thread in threading.enumerate():
        if thread.name.startswith("flinkdoctor-import-"):
            thread.join(timeout=30)
    assert imported and imported[0] != threading.current_thread().name
    spark_runtime._import_meanwhile(name)  # already imported: no thread
    assert len(imported) == 1
    monkeypatch.delitem(sys.modules, name)
