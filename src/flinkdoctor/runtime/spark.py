"""The one SparkSession flinkdoctor uses: local[*] unless spark-submit or --master says otherwise, or a Spark
Connect session when `--remote sc://host:port` says so or `flinkdoctor server` runs one (the warm path).

Spark's own output (its banner, log4j WARN lines, stack traces it logs and recovers from) is not the user's: the
JVM flinkdoctor starts writes its stdout and stderr to a log file (`spark_log()`), removed at exit unless a run
failed, in which case the error message names it. `verbose=True` (the CLI's --verbose) lets it through.
"""

from __future__ import annotations

import atexit
import os
import re
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

_LOG: dict[str, Path | bool] = {}


def _quiet_broadcast_failures() -> None:
    """PySpark prints the traceback of a broadcast it cannot write (a full disk under the work dir) to stderr
    before it raises the error; the error reaches the CLI, which says what happened in one line (exit 2)."""
    from pyspark.core import broadcast

    broadcast.print_exec = lambda stream: None  # the module-level function it calls


def spark_session(
    master: str | None = None,
    app_name: str = "flinkdoctor",
    remote: str | None = None,
    verbose: bool = False,
) -> SparkSession:
    """The session; `verbose` lets the output of a JVM this call starts through to the terminal."""
    from pyspark import SparkContext
    from pyspark.errors import PySparkRuntimeError
    from pyspark.sql import SparkSession

    from .conf import session_conf
    from .jvm import java_options

    _quiet_broadcast_failures()
    _utc_driver()
    if remote:
        return SparkSession.builder.remote(remote).getOrCreate()
    if master is None and not os.environ.get("SPARK_ENV_LOADED") and (shared := _server_session()) is not None:
        return shared
    os.environ.setdefault("PYSPARK_PYTHON", _python())
    builder = SparkSession.builder.appName(app_name)
    local = False
    if master or not os.environ.get("SPARK_ENV_LOADED") and "spark.master" not in _submit_conf():
        builder = builder.master(master or "local[*]")
        local = (master or "local[*]").startswith("local")
    conf = session_conf(local)
    starts_jvm = SparkContext._gateway is None and not os.environ.get("PYSPARK_GATEWAY_PORT")
    ours = starts_jvm and "spark.driver.extraJavaOptions" not in conf and not _users_java_options()
    if ours and (options := java_options(conf["spark.driver.memory"])):
        conf["spark.driver.extraJavaOptions"] = options
    for key, value in conf.items():
        builder = builder.config(key, value)
    if starts_jvm:
        _import_meanwhile("pandas")
    with _jvm_output_to_log(verbose):
        try:
            spark = builder.getOrCreate()
        except PySparkRuntimeError:
            if not ours or not conf.get("spark.driver.extraJavaOptions"):
                raise
            spark = builder.config("spark.driver.extraJavaOptions", "").getOrCreate()  # a JVM that refused ours
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _utc_driver() -> None:
    """Set this process's time zone to UTC. Spark's collect gives a timestamp as a naive time in the process's zone
    (TimestampType.fromInternal), while the session's zone is UTC (conf.py) and every time the report writes is
    UTC: on a machine set to another zone each finding's time moved by the zone's offset (TZ=America/New_York: the
    demo's chain four hours early) and no longer lined up with the analytics' times, read as UTC from Arrow."""
    if os.environ.get("TZ") != "UTC":
        os.environ["TZ"] = "UTC"  # (inherited by the JVM and the Python workers this process starts)
        time.tzset()


def _import_meanwhile(module: str) -> None:
    """Import `module` in a thread while this one waits for the JVM to start (~2.5 s of polling): SparkContext's
    start imports pandas right after (PySpark's converter of numpy arrays asks pyspark.testing whether pandas is
    installed, which imports it: 0.5 s of the driver's time otherwise)."""
    import importlib

    from .beside import beside

    if module not in sys.modules:
        beside(importlib.import_module, module)  # (a failure here: the main thread's own import says it)


def _server_session() -> SparkSession | None:
    """The session of the server `flinkdoctor server start` runs, if one runs; a new one if that was closed."""
    from pyspark.errors import PySparkException
    from pyspark.sql import SparkSession

    from .server import renew_session, running_url

    url = running_url()
    if url is None:
        return None
    spark = SparkSession.builder.remote(url).getOrCreate()
    try:
        _ = spark.version  # one round trip: a closed session answers INVALID_HANDLE.SESSION_CLOSED at once
    except PySparkException as err:
        if "SESSION_CLOSED" not in str(err) or (url := renew_session()) is None:
            raise
        # nothing to release on the server: stop only drops the client and its role as the default session
        spark.release_session_on_close = False  # type: ignore[attr-defined]
        spark.stop()
        spark = SparkSession.builder.remote(url).getOrCreate()
    return spark


def spark_log() -> Path | None:
    """The file the JVM's output goes to, when flinkdoctor started the JVM quietly."""
    path = _LOG.get("path")
    return path if isinstance(path, Path) else None


def keep_spark_log() -> Path | None:
    """Keep the JVM's log after exit (a run failed: it may say why) and return where it is."""
    _LOG["keep"] = True
    return spark_log()


@contextmanager
def _jvm_output_to_log(verbose: bool) -> Iterator[None]:
    """While the JVM starts, point file descriptors 1 and 2 at a log file: the JVM inherits them and keeps them
    for its life, and ours are restored at once. Nothing to do when the JVM already runs (spark-submit, a second
    session) or when the user asked to see Spark's output."""
    from pyspark import SparkContext

    if verbose or SparkContext._gateway is not None:
        yield
        return
    folder = Path(os.environ.get("FLINKDOCTOR_LOG_DIR") or tempfile.gettempdir())
    path = folder / f"flinkdoctor-spark-{os.getpid()}.log"
    with open(path, "ab") as log:
        _LOG["path"] = path
        atexit.register(_remove_log, path)
        sys.stdout.flush()
        sys.stderr.flush()
        saved = [os.dup(1), os.dup(2)]
        try:
            os.dup2(log.fileno(), 1)
            os.dup2(log.fileno(), 2)
            yield
        finally:
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)


def _remove_log(path: Path) -> None:
    if not _LOG.get("keep"):
        path.unlink(missing_ok=True)


def _python() -> str:
    import sys

    return sys.executable


def _users_java_options() -> bool:
    """Whether the user gave the driver JVM options elsewhere, which ours would replace: spark-submit's arguments,
    or spark-defaults.conf (Spark's launcher reads it from SPARK_CONF_DIR, else SPARK_HOME/conf)."""
    from pyspark.find_spark_home import _find_spark_home

    submit = _submit_conf()
    if "spark.driver.extraJavaOptions" in submit or "--driver-java-options" in submit:
        return True
    folder = Path(os.environ.get("SPARK_CONF_DIR") or Path(_find_spark_home()) / "conf")
    try:
        text = (folder / "spark-defaults.conf").read_text(errors="replace")
    except OSError:
        return False
    return re.search(r"(?m)^[ \t]*spark\.driver\.extraJavaOptions[ \t=:]", text) is not None


def _submit_conf() -> str:
    return os.environ.get("PYSPARK_SUBMIT_ARGS", "")
