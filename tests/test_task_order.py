"""What the scan's tasks cost outside their own work: the order Spark runs them in (the costliest first, each
task keeping its number and its files) and what a Python worker imports to run one (not the report model)."""

from __future__ import annotations

import pickle
import subprocess
import sys
from functools import partial
from pathlib import Path

import pytest

from conftest import lab_logs_of

pytestmark = pytest.mark.unit

# what a worker that runs a scan task never needs: the report's model and the stages after the scan
AFTER_THE_SCAN = ("flinkdoctor.report", "flinkdoctor.analytics", "flinkdoctor.diagnosis", "flinkdoctor.pipeline")


def _lab_tasks(folder: Path, split_bytes: int) -> list:
    """A real lab run's JobManager, TaskManager and client logs, planned in ranges of `split_bytes`."""
    from flinkdoctor.scan.events import plan
    from flinkdoctor.sources.ingest import ingest

    folder.mkdir()
    for name, data in lab_logs_of("heap-oom").items():
        (folder / name).write_bytes(data)
    return plan(ingest([folder], folder.parent / "in").text_sources, split_bytes)


def test_tasks_run_costliest_first_jobmanager_bytes_counted_twice_ties_in_plan_order(tmp_path):
    from flinkdoctor.scan.events import JOBMANAGER_COST, run_order

    tasks = _lab_tasks(tmp_path / "logs", 16 * 1024)
    kinds = {part.kind for task in tasks for part in task}
    assert {"flink-jobmanager", "flink-taskmanager"} <= kinds

    def cost(number: int) -> int:
        weight = {"flink-jobmanager": JOBMANAGER_COST}
        return sum((p.end - p.start) * weight.get(p.kind, 1) for p in tasks[number])

    order = run_order(tasks)
    assert sorted(order) == list(range(len(tasks)))
    assert order != sorted(order)  # (the plan's own order is not already the costliest first)
    keys = [(-cost(number), number) for number in order]
    assert keys == sorted(keys)
    # the JobManager's full ranges before the client's and the TaskManager's of the same bytes (the client's
    # log is planned first)
    full = [tasks[n][0].kind for n in order if sum(p.end - p.start for p in tasks[n]) == 16 * 1024]
    jobmanager = full.count("flink-jobmanager")
    assert tasks[0][0].kind == "flink-client" and 0 < jobmanager < len(full)
    assert full[:jobmanager] == ["flink-jobmanager"] * jobmanager
    assert run_order(_lab_tasks(tmp_path / "again", 16 * 1024)) == order


def test_a_task_run_out_of_plan_order_keeps_its_number_files_and_stats(rules, tmp_path):
    """Row r runs tasks groups[r], here each alone in run_order: each task writes the same file, under the same
    name, as in plan order."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from flinkdoctor.scan.events import run_order
    from flinkdoctor.scan.matcher import build_matcher
    from flinkdoctor.scan.scanner import part_rows, run

    tasks = _lab_tasks(tmp_path / "logs", 64 * 1024)
    matcher = build_matcher(rules, catalogue=None)
    order = run_order(tasks)
    rows = pa.record_batch([pa.array(range(len(tasks)), pa.int64())], names=["id"])
    written = {}
    for name, ordered in (("plan", None), ("costliest", order)):
        out = tmp_path / name
        out.mkdir()
        groups = None if ordered is None else [[number] for number in ordered]
        stats = run(iter([rows]), part_rows(tasks), matcher.prefilter, str(out), matcher, groups=groups)
        by_task = [[_without_cpu(row) for row in batch.to_pylist()] for batch in stats]
        if ordered is not None:  # (row r's stats are task order[r]'s)
            by_task = [by_task[order.index(task)] for task in range(len(tasks))]
        files = {path.name: pq.read_table(path) for path in sorted(out.iterdir())}
        written[name] = (by_task, files)
    assert len(written["plan"][1]) == len(tasks)
    assert written["costliest"][0] == written["plan"][0]
    assert written["costliest"][1].keys() == written["plan"][1].keys()
    for file, table in written["plan"][1].items():
        assert written["costliest"][1][file].equals(table)


def _without_cpu(row: dict) -> dict:
    return {key: value for key, value in row.items() if key != "cpu_us"}


def test_a_task_reports_its_cpu_once_on_its_first_parts_row(rules, tmp_path):
    """The events lap's own measure (timings' scan_tasks_cpu_s): each task's CPU on its first row, so the driver's
    sum counts a task of many parts once."""
    import pyarrow as pa

    from flinkdoctor.scan.matcher import build_matcher
    from flinkdoctor.scan.scanner import part_rows, run

    tasks = _lab_tasks(tmp_path / "logs", 64 * 1024 * 1024)  # (the client's, JobManager's, TaskManager's logs)
    assert [len(task) for task in tasks] == [3]
    matcher = build_matcher(rules, catalogue=None)
    out = tmp_path / "out"
    out.mkdir()
    rows = pa.record_batch([pa.array([0], pa.int64())], names=["id"])
    (batch,) = run(iter([rows]), part_rows(tasks), matcher.prefilter, str(out), matcher)
    cpu_us = batch.column("cpu_us").to_pylist()
    assert len(cpu_us) == 3 and cpu_us[0] > 0 and cpu_us[1:] == [0, 0]
    assert cpu_us[0] < 120 * 10**6  # (microseconds: a part of 180 kB takes well under two minutes)


def _printed(code: str) -> str:
    """What `code` prints, run in a fresh interpreter (this one has imported everything)."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120).stdout


def test_a_worker_unpickling_the_scan_function_does_not_import_the_report_model(rules, tmp_path):
    """A Python worker imports what the scan task's function names, and flinkdoctor/__init__: not report.model,
    whose analytics and findings cost each worker half a second."""
    from flinkdoctor.scan.matcher import build_matcher
    from flinkdoctor.scan.scanner import part_rows, run

    matcher = build_matcher(rules, catalogue=None)
    tasks = _lab_tasks(tmp_path / "logs", 64 * 1024)
    function = tmp_path / "scan.pickle"
    function.write_bytes(
        pickle.dumps(partial(run, plan=part_rows(tasks), prefilter=matcher.prefilter, out_dir="x", matcher=matcher))
    )
    listed = "print(*sorted(m for m in sys.modules if m.startswith('flinkdoctor')))"
    for code in (
        f"import pickle, sys; pickle.loads(open({str(function)!r}, 'rb').read()); {listed}",
        f"import sys, flinkdoctor.scan.scanner; {listed}",
    ):
        modules = set(_printed(code).split())
        assert "flinkdoctor.scan.scanner" in modules
        assert not {m for m in modules if m.startswith(AFTER_THE_SCAN)}


def test_flinkdoctor_report_is_still_the_report_model():
    code = (
        "import sys, typing, flinkdoctor\n"
        "assert not any(m.startswith('flinkdoctor.report') for m in sys.modules)\n"
        "assert 'Report' in dir(flinkdoctor)\n"
        "from flinkdoctor import Report\n"
        "assert typing.get_type_hints(flinkdoctor.diagnose)['return'] is Report  # (once named: a global then)\n"
        "from flinkdoctor.report.model import Report as Model\n"
        "assert Report is Model and flinkdoctor.Report is Model and 'Report' in flinkdoctor.__all__\n"
        "try:\n"
        "    flinkdoctor.Nothing\n"
        "except AttributeError as err:\n"
        "    print(err)\n"
    )
    assert _printed(code).strip() == "module 'flinkdoctor' has no attribute 'Nothing'"
