"""What a scan task's Python worker sets up once (runtime/worker.py): pyarrow's look for pandas made with pandas
hidden, so that the worker never pays pandas' import for conversions of plain Python objects; a conversion that
needs pandas still gets it."""

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
import sys
from flinkdoctor.runtime.worker import prepare_task
import pyarrow as pa
prepare_task()
pa.array(["a"])
print("pandas" in sys.modules)
"""


IN_A_TASK = """
import sys, pyspark
pyspark.TaskContext.get = classmethod(lambda cls: object())  # (as inside a Spark task)
from flinkdoctor.runtime.worker import prepare_task
import pyarrow as pa
prepare_task()
pa.array(["a"])
print("pandas" in sys.modules)
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
    """On the driver (no TaskContext) a user's pandas objects may reach pyarrow: its look for pandas is its own."""
    assert _run(ON_THE_DRIVER, own_workers=True) == ["True"]


def test_only_the_workers_of_flinkdoctors_own_sessions_hide_pandas():
    """A session a user hands to diagnose() runs the scan in workers that may later run the user's own code with
    pandas objects: there pyarrow's look is its own; the workers of the sessions flinkdoctor starts hide it."""
    from flinkdoctor.runtime.conf import OWN_WORKERS, session_conf

    assert _run(IN_A_TASK, own_workers=True) == ["False"]
    assert _run(IN_A_TASK) == ["True"]
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
