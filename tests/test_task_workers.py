"""What a scan task's Python worker sets up once (runtime/worker.py): pyarrow's look for pandas made with pandas
hidden, so that the worker never pays pandas' import for conversions of plain Python objects; a conversion that
needs pandas still gets it; what the worker holds then frozen out of the cycle collector's passes. And the daemon
that forks the workers (runtime/daemon.py) imports PySpark from the installed package, not Spark's zips."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

HIDDEN = """
import sys
from flinkdoctor.runtime.worker import without_pandas
import pyarrow as pa
without_pandas()
pa.array(["a", None]); pa.table({"a": [1, 2]}); pa.record_batch([pa.array([1])], names=["a"])
print("pandas" in sys.modules)
import pandas as pd
table = pa.Table.from_pandas(pd.DataFrame({"a": [1, 2]}))
print(table.column("a").to_pylist(), table.to_pandas()["a"].tolist())
print(pa.array(pd.Series(["x", "y", "x"], dtype="category")).type)
"""

ON_THE_DRIVER = """
import gc, sys
from flinkdoctor.runtime.worker import prepare_task
import pyarrow as pa
prepare_task()
pa.array(["a"])
print("pandas" in sys.modules)
print(gc.get_freeze_count())
"""


IN_A_TASK = """
import gc, sys, pyspark
pyspark.TaskContext.get = classmethod(lambda cls: object())  # (as inside a Spark task)
from flinkdoctor.runtime.worker import prepare_task
import pyarrow as pa
prepare_task()
pa.array(["a"])
print("pandas" in sys.modules)
frozen = gc.get_freeze_count()
made_by_a_task = [[i] for i in range(1000)]
prepare_task()  # the worker's next task: nothing more frozen
print(frozen > 10000, gc.get_freeze_count() == frozen)
"""


def _run(code: str, own_workers: bool = False) -> list[str]:
    from flinkdoctor.runtime.conf import OWN_WORKERS

    env = {k: v for k, v in os.environ.items() if k != OWN_WORKERS} | ({OWN_WORKERS: "1"} if own_workers else {})
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    return done.stdout.splitlines()


def test_a_task_worker_converts_python_objects_without_importing_pandas():
    hidden, converted, categorical = _run(HIDDEN)
    assert hidden == "False"
    assert converted == "[1, 2] [1, 2]"  # pandas' own conversions import it, and work
    assert categorical.startswith("dictionary<values=string")  # then pyarrow knows pandas objects again


def test_outside_a_spark_task_pyarrow_is_left_alone():
    """On the driver (no TaskContext) a user's pandas objects may reach pyarrow: its look for pandas is its own,
    and the driver's objects are the cycle collector's as before (none frozen)."""
    assert _run(ON_THE_DRIVER, own_workers=True) == ["True", "0"]


def test_only_the_workers_of_flinkdoctors_own_sessions_hide_pandas():
    """A session a user hands to diagnose() runs the scan in workers that may later run the user's own code with
    pandas objects: there pyarrow's look is its own; the workers of the sessions flinkdoctor starts hide it."""
    from flinkdoctor.runtime.conf import OWN_WORKERS, session_conf

    assert _run(IN_A_TASK, own_workers=True) == ["False", "True True"]
    assert _run(IN_A_TASK) == ["True", "False True"]
    assert session_conf()[f"spark.executorEnv.{OWN_WORKERS}"] == "1"


@pytest.mark.spark
def test_a_spark_task_converts_python_objects_without_importing_pandas(spark):
    """Inside mapInArrow's function pyspark's TaskContext is set, so prepare_task acts there, and the task's
    conversions import no pandas (unless the worker had it before: workers are reused across tests)."""
    import pyarrow as pa

    def probe(batches):
        from pyspark import TaskContext

        from flinkdoctor.runtime.worker import prepare_task

        had = "pandas" in sys.modules
        prepare_task()
        pa.array(["a"]), pa.table({"a": [1]})
        for _ in batches:
            yield pa.record_batch(
                [pa.array([TaskContext.get() is not None]), pa.array([had or "pandas" not in sys.modules])],
                names=["task", "no_pandas"],
            )

    rows = spark.range(0, 2, 1, 2).mapInArrow(probe, "task boolean, no_pandas boolean").collect()
    assert len(rows) == 2 and all(row["task"] and row["no_pandas"] for row in rows)


@pytest.mark.spark
def test_a_spark_task_runs_the_installed_pyspark(spark):
    """The workers of flinkdoctor's sessions import PySpark from the installed package (runtime/daemon.py), not
    from the source-only zips Spark puts first on their path, which each process compiled again."""
    import pyarrow as pa

    def where(batches):
        import pyspark
        import pyspark.worker

        for _ in batches:
            yield pa.record_batch([pa.array([pyspark.__file__]), pa.array([pyspark.worker.__file__])], names=["a", "b"])

    rows = spark.range(0, 2, 1, 2).mapInArrow(where, "a string, b string").collect()
    assert len(rows) == 2
    assert all(".zip" not in row["a"] and row["b"].endswith(os.path.join("pyspark", "worker.py")) for row in rows)


def test_the_daemon_puts_the_installed_pyspark_before_sparks_zips(tmp_path):
    """Spark puts SPARK_HOME/python/lib's zips first on the workers' path. When SPARK_HOME is the pip-installed
    package found behind them, its zips go last (its modules then import from its compiled files); the zips of
    another PySpark (a Spark distribution's, with no installed package of its own beside them) keep their place."""
    import pyspark

    from flinkdoctor.runtime.daemon import installed_first

    package = os.path.dirname(pyspark.__file__)
    site = os.path.dirname(package)
    lib = os.path.join(package, "python", "lib")
    zips = sorted(os.path.join(lib, name) for name in os.listdir(lib) if name.endswith(".zip"))
    assert any(name.endswith("pyspark.zip") for name in zips)
    assert installed_first([*zips, "/work/src", site]) == ["/work/src", site, *zips]

    distribution = tmp_path / "spark" / "python" / "lib"
    distribution.mkdir(parents=True)
    theirs = [str(distribution / "pyspark.zip"), str(distribution / "py4j-0.10.9.9-src.zip")]
    assert installed_first([*theirs, site]) == [*theirs, site]  # the installed pyspark is not theirs
    assert installed_first([*zips, str(tmp_path)]) == [*zips, str(tmp_path)]  # no installed pyspark found


def test_only_local_sessions_run_flinkdoctors_daemon():
    """A local session's workers start in this machine's environment, where flinkdoctor is installed; a cluster's
    executors may get flinkdoctor only with their tasks (--py-files), after their daemon started: theirs is
    PySpark's own."""
    from flinkdoctor.runtime.conf import session_conf

    assert session_conf(local=True)["spark.python.daemon.module"] == "flinkdoctor.runtime.daemon"
    assert "spark.python.daemon.module" not in session_conf()
