"""The one SparkSession flinkdoctor uses: local[*] unless spark-submit or --master says otherwise, or a Spark
Connect session when `--remote sc://host:port` says so or `flinkdoctor server` runs one (the warm path)."""

from __future__ import annotations

import os
from contextlib import contextmanager


def spark_session(master: str | None = None, app_name: str = "flinkdoctor", remote: str | None = None):
    from pyspark.sql import SparkSession

    if remote is None and master is None and not os.environ.get("SPARK_ENV_LOADED"):
        from .server import running_url

        remote = running_url()
    if remote:
        return SparkSession.builder.remote(remote).getOrCreate()
    os.environ.setdefault("PYSPARK_PYTHON", _python())
    builder = SparkSession.builder.appName(app_name)
    if master or not os.environ.get("SPARK_ENV_LOADED") and "spark.master" not in _submit_conf():
        builder = builder.master(master or "local[*]")
    for key, value in session_conf().items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def session_conf() -> dict[str, str]:
    """Spark settings of every flinkdoctor session (FLINKDOCTOR_SPARK_CONF=k=v,k=v overrides them)."""
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
    }
    for item in filter(None, os.environ.get("FLINKDOCTOR_SPARK_CONF", "").split(",")):  # k=v,k=v overrides
        key, _, value = item.partition("=")
        conf[key.strip()] = value.strip()
    return conf


@contextmanager
def whole_stage_codegen(spark, enabled: bool):
    """Whole-stage code generation off for a query whose expression outgrows Java's 64 KB method limit: the
    regexes dominate the cost, and Spark would otherwise compile, fail, log a stack trace and fall back."""
    key = "spark.sql.codegen.wholeStage"
    before = spark.conf.get(key)
    spark.conf.set(key, str(enabled).lower())
    try:
        yield
    finally:
        spark.conf.set(key, before)


def _python() -> str:
    import sys

    return sys.executable


def _submit_conf() -> str:
    return os.environ.get("PYSPARK_SUBMIT_ARGS", "")
