"""What a Spark Python worker sets up once, before its first task's work: pyarrow told that it holds no pandas, and
what the worker holds by then kept out of the cycle collector's passes.

pyarrow asks, the first time it converts a Python object in a process (`pa.array` of a list, `pa.table` of a
dict: the scan does both), whether the object is a pandas one, and to know that it imports pandas: 0.3-0.5 s of
CPU in every Python worker, more than a fifth of a production part's whole scan, for objects that never are
pandas ones (flinkdoctor's tasks hold none). So a task's worker lets pyarrow's first look find no pandas
(`without_pandas`). pyarrow then takes no object for a pandas one until a conversion that needs pandas
(to_pandas, Table.from_pandas) imports it: a pandas Series given to `pa.array` before that converts as a plain
sequence (a categorical as strings, a nullable Int64 not at all). So only the workers of the sessions flinkdoctor
starts (conf.OWN_WORKERS), which run only its tasks, do this; a session a user hands to `diagnose` keeps pyarrow's
own look.

PySpark's daemon runs a full collection in a reused worker after each of its tasks: over everything the worker
imported and the failure catalogue's index it read, 16-26 ms of CPU a task (82 tasks at production 8 GiB), for
objects that live as long as the worker. Frozen at its first task (gc.freeze: the collector skips them), a
collection walks only what later tasks made.
"""

from __future__ import annotations

import gc
import importlib.abc
import os
import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType

from .conf import OWN_WORKERS


def prepare_task() -> None:
    """In a Python worker of a session flinkdoctor started (conf.OWN_WORKERS; not on the driver, and not in a
    user's own session, whose workers may later run the user's code with pandas objects): once per process,
    `without_pandas`, then what the worker holds frozen (gc.freeze)."""
    if _Prepared.done or os.environ.get(OWN_WORKERS) != "1":
        return
    from pyspark import TaskContext

    if TaskContext.get() is not None:
        without_pandas()
        gc.freeze()
        _Prepared.done = True


class _Prepared:
    done = False  # whether this process's first task prepared it


def without_pandas() -> None:
    """pyarrow's first look for pandas made now, with pandas hidden, unless pandas is already imported."""
    if "pandas" in sys.modules or _Blocked.done:
        return
    import pyarrow as pa

    blocker = _Blocked()
    sys.meta_path.insert(0, blocker)
    try:
        pa.array([])  # the first conversion of a Python object: pyarrow looks for pandas, once per process
    finally:
        sys.meta_path.remove(blocker)
        _Blocked.done = True


class _Blocked(importlib.abc.MetaPathFinder):
    """An import of pandas fails while it is on sys.meta_path."""

    done = False  # whether pyarrow has looked, in this process

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname == "pandas" or fullname.startswith("pandas."):
            raise ModuleNotFoundError(f"{fullname} is not imported in a scan task", name=fullname)
        return None
