"""The Python daemon of the local sessions flinkdoctor starts (spark.python.daemon.module, conf.session_conf):
PySpark's own, importing PySpark from the installed package rather than from the source-only zips Spark puts first
on its workers' path.

Spark starts its Python daemon, and the daemon forks the workers, with `SPARK_HOME/python/lib/pyspark.zip` and
py4j's zip first on PYTHONPATH. A zip holds only sources and Python caches no bytecode for it: the daemon compiled
PySpark's modules at every start (0.55 s of CPU against 0.10 s from the installed package) and each worker
compiled pyspark.worker's again (0.09 s against 0.007 s), all before a scan task's first byte. With PySpark
installed by pip, SPARK_HOME is that package and the zips are copies of it: then they go behind the installed
packages. Any other PySpark (a Spark distribution's, a cluster's) keeps Spark's own order.
"""

from __future__ import annotations

import sys
from importlib.machinery import PathFinder
from pathlib import Path


def installed_first(path: list[str]) -> list[str]:
    """`path` with the zips of the pip-installed PySpark found on it (its own `python/lib/*.zip`) moved to its end;
    unchanged when no such package is found beside them."""
    zips = [entry for entry in path if entry.endswith(".zip")]
    spec = PathFinder.find_spec("pyspark", [entry for entry in path if entry not in zips])
    if spec is None or not spec.submodule_search_locations:
        return path
    lib = (Path(next(iter(spec.submodule_search_locations))) / "python" / "lib").resolve()
    own = [entry for entry in zips if Path(entry).resolve().parent == lib]
    if not own:
        return path
    return [entry for entry in path if entry not in own] + own


if __name__ == "__main__":
    sys.path[:] = installed_first(sys.path)
    from pyspark.daemon import manager

    manager()
