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

from typing import TYPE_CHECKING

from .errors import FlinkdoctorError, InputError, RuleError, UsageError, WorkDirError

if TYPE_CHECKING:
    from .report.model import Report

    __version__: str


def __getattr__(name: str) -> object:
    """`flinkdoctor.Report` and `__version__`, worked out when first asked for (PEP 562), then globals of the
    module like the others (typing.get_type_hints of `diagnose` reads the globals, not this). A Spark worker
    imports the package for the scan and reads neither (the version's lookup in the installed packages' metadata
    cost each worker 0.03 s)."""
    if name == "Report":
        from .report.model import Report

        globals()["Report"] = Report
        return Report
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            found = version("flinkdoctor")
        except PackageNotFoundError:  # run from a source tree that was not installed
            found = "0+unknown"
        globals()["__version__"] = found
        return found
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
