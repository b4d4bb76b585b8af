"""The scan's tasks as Spark runs them (events.run_groups): cheap tasks joined into one Spark task on a local
master, the cheapest last and alone; and scanner.run running a row's tasks one after the other, each its own
file and stats as when alone."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pyarrow as pa
import pytest

from flinkdoctor.scan.events import GROUP_COST, TAIL_TASKS, _cost, _slots, run_groups, run_order
from flinkdoctor.scan.scanner import Part

pytestmark = pytest.mark.unit

MIB = 1024 * 1024


def _task(size: int, kind: str = "flink-taskmanager", sid: int = 0) -> list[Part]:
    return [Part(sid, f"/x/{sid}.log", 0, size, size, "flink-log4j2", False, True, kind)]


def _plan() -> list[list[Part]]:
    """Two JobManager logs of 100 MiB (each costs 200), ten TaskManager logs of 100 MiB and two of 30."""
    sizes = [(100, "flink-jobmanager")] * 2 + [(100, "flink-taskmanager")] * 10 + [(30, "flink-taskmanager")] * 2
    return [_task(s * MIB, kind, sid) for sid, (s, kind) in enumerate(sizes)]


def test_cheap_tasks_are_joined_until_their_cost_and_the_last_run_alone():
    tasks = _plan()
    groups = run_groups(tasks, 2)
    order = run_order(tasks)
    assert [n for group in groups for n in group] == order  # every task once, in run_order's order
    assert [len(group) for group in groups] == [1, 1, 2, 2, 2, 2, 1, 1, 1, 1]
    assert all(len(group) == 1 for group in groups[-TAIL_TASKS * 2 :])
    for group in groups[: -TAIL_TASKS * 2]:  # a group stops once its cost reaches GROUP_COST
        assert sum(_cost(tasks[n]) for n in group[:-1]) < GROUP_COST


def test_the_tail_grows_with_the_slots_and_a_cluster_runs_each_task_alone():
    tasks = _plan()
    assert [len(group) for group in run_groups(tasks, 4)] == [1, 1, 2, 2] + [1] * 8
    assert run_groups(tasks, None) == [[n] for n in run_order(tasks)]
    assert run_groups(tasks[:3], 2) == [[n] for n in run_order(tasks[:3])]  # fewer tasks than the tail


def test_many_small_tasks_are_joined_up_to_the_cost():
    tasks = [_task(10 * MIB, sid=sid) for sid in range(100)]
    groups = run_groups(tasks, 1)
    assert [len(group) for group in groups] == [20, 20, 20, 20, 18, 1, 1]


class _Conf:
    def __init__(self, master: str | None):
        self.master = master

    def get(self, key: str) -> str | None:
        assert key == "spark.master"
        if self.master is None:
            raise RuntimeError("no master")
        return self.master


class _Session:
    def __init__(self, master: str | None, jvm_cores: int | None = None):
        self.conf = _Conf(master)
        if jvm_cores is not None:  # a JVM that sees fewer processors than the machine (a container's limit)
            runtime = SimpleNamespace(availableProcessors=lambda: jvm_cores)
            lang = SimpleNamespace(Runtime=SimpleNamespace(getRuntime=lambda: runtime))
            self.sparkContext = SimpleNamespace(_jvm=SimpleNamespace(java=SimpleNamespace(lang=lang)))


@pytest.mark.parametrize(
    ("master", "slots"),
    [
        ("local", 1),
        ("local[3]", 3),
        ("local[3,2]", 3),
        ("local[*]", None),  # the machine's cores
        ("local[*,4]", None),
        ("spark://host:7077", "cluster"),
        ("local-cluster[2,1,1024]", "cluster"),
        ("yarn", "cluster"),
        (None, "cluster"),
    ],
)
def test_a_local_masters_slots(master, slots):
    import os

    found = _slots(_Session(master))  # type: ignore[arg-type]
    if slots == "cluster":
        assert found is None
    else:
        assert found == (slots or os.cpu_count())


@pytest.mark.parametrize("master", ["local[*]", "local[*,4]"])
def test_local_star_counts_the_jvms_processors(master):
    """`local[*]` runs as many tasks at once as the JVM sees processors, not the machine's cores."""
    assert _slots(_Session(master, jvm_cores=3)) == 3  # type: ignore[arg-type]
    assert _slots(_Session("local[5]", jvm_cores=3)) == 5  # type: ignore[arg-type]


def test_a_row_runs_its_tasks_each_as_alone(rules, tmp_path):
    """scanner.run with `groups`: a row of two tasks writes each task's file and hands each task's stats, the same
    as the two rows of those tasks alone."""
    from flinkdoctor.scan.matcher import build_matcher
    from flinkdoctor.scan.scanner import run

    lines = "".join(f"2026-03-01 00:00:{i % 60:02d},000 WARN  a.B [t] - warning {i}\n" for i in range(50))
    logs = []
    for n in range(3):
        log = tmp_path / f"{n}.log"
        log.write_text(lines + f"2026-03-01 00:01:00,000 ERROR a.B [t] - file {n}\n")
        logs.append(log)
    plan = [[Part(n, str(log), 0, log.stat().st_size, log.stat().st_size, "flink-log4j2", False, True)] for n, log in
            enumerate(logs)]  # fmt: skip
    matcher = build_matcher(rules, (), catalogue=None)

    def scanned(groups, ids: list[int]) -> tuple[list[dict], dict[str, bytes]]:
        out = tmp_path / f"out{len(ids)}"
        out.mkdir()
        batch = pa.record_batch([pa.array(ids, pa.int64())], names=["id"])
        stats = [row for b in run(iter([batch]), plan, matcher.prefilter, str(out), matcher, groups=groups)
                 for row in b.to_pylist()]  # fmt: skip
        for row in stats:
            row["cpu_us"] = 0
        return stats, {f.name: _rows(f) for f in sorted(out.iterdir())}

    joined = scanned([[2, 0], [1]], [0, 1])
    alone = scanned([[2], [0], [1]], [0, 1, 2])
    assert joined == alone
    assert sorted(joined[1]) == ["part-00000.parquet", "part-00001.parquet", "part-00002.parquet"]
    assert [row["sid"] for row in joined[0]] == [2, 0, 1]


def _rows(path: Path) -> bytes:
    import pyarrow.parquet as pq

    return str(pq.read_table(path).to_pylist()).encode()


def test_the_stage_s_built_output_type_is_its_ddl():
    """The scan stage's output type is built in Python (events._output_type, not parsed by the JVM): the same
    fields and types as scanner.OUTPUT_SCHEMA's DDL, which the stage's readers know it by (review17b)."""
    from flinkdoctor.scan.events import _output_type
    from flinkdoctor.scan.scanner import OUTPUT_SCHEMA

    ddl = [field.split() for field in OUTPUT_SCHEMA.split(", ")]
    built = [(field.name, field.dataType.simpleString()) for field in _output_type().fields]
    assert built == [(name, {"long": "bigint"}.get(kind, kind)) for name, kind in ddl]
