"""What a Spark Python worker sets up once, before its first task's work: pyarrow told that it holds no pandas.

pyarrow asks, the first time it converts a Python object in a process (`pa.array` of a list, `pa.table` of a
dict: the scan does both), whether the object is a pandas one, and to know that it imports pandas: 0.3-0.5 s of
CPU in every Python worker, more than a fifth of a production part's whole scan, for objects that never are
pandas ones (flinkdoctor's tasks hold none). So a task's worker lets pyarrow's first look find no pandas
(`without_pandas`). pyarrow remembers that for its quick looks only: a conversion that needs pandas (to_pandas,
Table.from_pandas) still imports it, and then pyarrow knows it is there.
"""

from __future__ import annotations

import importlib.abc
import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType


def prepare_task() -> None:
    """In a Spark task's worker (not on the driver, where a user's pandas objects may reach pyarrow): once per
    process, `without_pandas`."""
    if "pandas" in sys.modules or _Blocked.done:
        return
    from pyspark import TaskContext

    if TaskContext.get() is not None:
        without_pandas()


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
