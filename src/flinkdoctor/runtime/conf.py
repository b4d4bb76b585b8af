"""The Spark settings of every session flinkdoctor starts: local, or the warm path's server (server.py)."""

from __future__ import annotations

import os

OWN_WORKERS = "FLINKDOCTOR_OWN_WORKERS"  # set in the Python workers of the sessions flinkdoctor starts


def session_conf(local: bool = False) -> dict[str, str]:
    """Spark settings of every flinkdoctor session (FLINKDOCTOR_SPARK_CONF=k=v,k=v overrides them). `local`: the
    session's master is local, so its Python workers start in this machine's environment, where flinkdoctor is
    importable before any task (a cluster's executors may get it only with their tasks: --py-files)."""
    conf = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.shuffle.partitions": "8",
        "spark.sql.adaptive.enabled": "true",
        "spark.driver.memory": os.environ.get("FLINKDOCTOR_DRIVER_MEMORY", "3g"),
        "spark.sql.execution.arrow.maxRecordsPerBatch": "20000",
        "spark.python.worker.reuse": "true",
        "spark.sql.parquet.compression.codec": "lz4_raw",
        # the Python workers of flinkdoctor's own sessions, which run only its tasks (runtime/worker.py)
        f"spark.executorEnv.{OWN_WORKERS}": "1",
    }
    if local:  # PySpark imported from the installed package, not compiled from Spark's zips (runtime/daemon.py)
        conf["spark.python.daemon.module"] = "flinkdoctor.runtime.daemon"
    for item in filter(None, os.environ.get("FLINKDOCTOR_SPARK_CONF", "").split(",")):  # k=v,k=v overrides
        key, _, value = item.partition("=")
        conf[key.strip()] = value.strip()
    return conf
