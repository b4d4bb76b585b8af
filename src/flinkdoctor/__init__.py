"""flinkdoctor: the root cause of an Apache Flink incident, from its logs, on PySpark.

The public API is small::

    import flinkdoctor
    report = flinkdoctor.diagnose(["incident.tar.gz"])   # a Report (report.to_dict(): its data)
    print(flinkdoctor.render_json(report))               # the JSON contract

Errors are `flinkdoctor.FlinkdoctorError` subclasses (errors.py draws the tree and the exit code of each).
Imports stay light: Spark starts only when `diagnose` runs, and `Report` (report.model, which pulls in the
analytics and the findings) loads when first named, so a Spark worker that imports the scan does not pay for it.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING

from .errors import FlinkdoctorError, InputError, RuleError, UsageError, WorkDirError

if TYPE_CHECKING:
    from .report.model import Report

try:
    __version__ = version("flinkdoctor")
except PackageNotFoundError:  # run from a source tree that was not installed
    __version__ = "0+unknown"


def __getattr__(name: str) -> object:
    """`flinkdoctor.Report`, imported when first asked for (PEP 562), then a global of the module like the others
    (typing.get_type_hints of `diagnose` reads the globals, not this)."""
    if name == "Report":
        from .report.model import Report

        globals()["Report"] = Report
        return Report
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


def diagnose(paths, **options) -> Report:
    """Diagnose a bundle (folders, archives, files); see flinkdoctor.pipeline.diagnose for the options."""
    from .pipeline import diagnose as run

    return run(list(paths), **options)


def render_json(report: Report) -> str:
    from .views import render_json as render

    return render(report)


__all__ = [
    "FlinkdoctorError",
    "InputError",
    "Report",
    "RuleError",
    "UsageError",
    "WorkDirError",
    "__version__",
    "diagnose",
    "render_json",
]
