"""The measures of other kinds than the triggers and completions, reduced by the driver (analytics/metrics.
_reduce_rest) one per group of Spark's aggregate (`_reduced`): the groups that need no Python per row are found by
one sort (_firsts_in_bulk), the others by the loop. Both must keep exactly the rows the loop over every row kept
(the Spark aggregate's, tests/test_analytics.py holds the loop to it)."""

from __future__ import annotations

import random
from datetime import datetime, timedelta

import pytest


def _by_loop(table, metrics, keyed=False):
    """_reduce_rest as a loop over every row (the code before _firsts_in_bulk): the reference."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from flinkdoctor.analytics.metrics import CHECKPOINT_KINDS

    kinds = [m.measures for m in metrics]
    time = table.column("time")
    micros = pc.cast(pc.cast(time, pa.timestamp("us", time.type.tz), safe=False), pa.int64()).to_pylist()
    columns = ("bundle", "metric", "captures", "job", "sid", "block", "first_rel", "idx")
    rows = zip(*(table.column(name).to_pylist() for name in columns), micros, strict=True)
    best: dict[tuple, tuple] = {}
    for at, (bundle, metric, captures, job, sid, block, first_rel, idx, micro) in enumerate(rows):
        kind, captured = kinds[metric], dict(captures or ())
        if kind in CHECKPOINT_KINDS or kind in ("checkpoint-trigger", "storage-close"):
            owner = captured.get("job")
            owner = owner if owner is not None else job if job is not None else ""
            group: tuple = (bundle, kind, owner, captured.get("checkpoint"))
            first = int(captured.get("duration_ms") is None) if kind != "checkpoint-trigger" else 0
        elif kind == "config-property":
            value = captured.get("value")
            group = (bundle, kind, captured.get("key") or "", (value or "").strip(" "))
            first = micro if micro is not None else -(2**63)
        else:
            group, first = (bundle, kind), 0
        if kind == "checkpoint-trigger":
            order = (first, -sid, -block, -(first_rel + idx))
        else:
            order = (first, sid, block, first_rel + idx)
        have = best.get(group)
        if have is None or order < have[0]:
            best[group] = (order, at)
    kept = table.take(pa.array(sorted(at for _, at in best.values()), pa.int64()))
    return kept if keyed else kept.drop_columns(["bundle"])


def _table(draw: random.Random, rows: int, metrics, null_key: bool = False):
    """Rows of every kind, with few jobs, checkpoints, sources and lines (so groups hold several rows and lines
    tie), captures missing, null, given twice or with null values, and the event's job or none."""
    import pyarrow as pa

    def maybe(values):
        return draw.choice([None, *values])

    out = []
    for n in range(rows):
        captures = None
        if draw.random() < 0.9:
            captures = [
                (key, maybe(values))
                for key, values in (
                    ("job", ["a", "b"]),
                    ("checkpoint", ["1", "2", "007"]),
                    ("duration_ms", ["5", "9"]),
                    ("key", ["k", "j"]),
                    ("value", [" v", "v ", "w"]),
                    ("job", ["a", "c"]),
                )
                if draw.random() < 0.6
            ]
        out.append(
            {
                "bundle": draw.choice([0, 1]),
                "sid": draw.randint(0, 2),
                "block": draw.randint(0, 1),
                "first_rel": draw.randint(0, 4),
                "idx": draw.randint(0, 2),
                "time": maybe([datetime(2026, 3, 1) + timedelta(seconds=draw.randint(0, 3))]),
                "metric": draw.randrange(len(metrics)),
                "captures": captures,
                "job": maybe(["a", "b", "d"]),
                "line": n,
            }
        )
    if null_key:
        out[draw.randrange(rows)]["bundle"] = None
    schema = pa.schema(
        [("bundle", pa.int32()), ("sid", pa.int32()), ("block", pa.int64()), ("first_rel", pa.int64())]
        + [("idx", pa.int32()), ("time", pa.timestamp("us")), ("metric", pa.int32())]
        + [("captures", pa.map_(pa.string(), pa.string())), ("job", pa.string()), ("line", pa.int64())]
    )
    return pa.Table.from_pylist(out, schema)


@pytest.mark.parametrize("seed", range(6))
def test_the_rows_found_in_bulk_are_the_loops(seed):
    """On rows of every kind (ties in place, captures missing or given twice, the event's job or none, bundles),
    _reduce_rest keeps exactly the rows the loop over every row keeps, keyed or not; a null in a key column
    leaves every row to the loop (a null bundle: a group of its own there)."""
    import pyarrow as pa

    from flinkdoctor.analytics import metrics as m

    metrics = m.load_metrics()
    draw = random.Random(seed)
    for rows in (1, 7, 300):
        table = _table(draw, rows, metrics)
        if rows > 7:  # (in chunks, as the batches read are concatenated)
            table = pa.concat_tables([table.slice(0, 100), table.slice(100, 150), table.slice(250)])
        for keyed in (False, True):
            assert m._reduce_rest(table, metrics, keyed=keyed).equals(_by_loop(table, metrics, keyed))
    table = _table(draw, 200, metrics, null_key=True)
    assert m._firsts_in_bulk(table, metrics) is None
    assert m._reduce_rest(table, metrics).equals(_by_loop(table, metrics))


def test_the_storage_and_the_checkpoints_ends_are_not_looped_over():
    """The rows of the kinds reduced in bulk (a checkpoint's end, a storage line) are left out of the loop: only
    the triggers' and the configuration's are read as Python rows."""
    from flinkdoctor.analytics import metrics as m

    metrics = m.load_metrics()
    table = _table(random.Random(9), 400, metrics)
    kinds = [metrics[n].measures for n in table.column("metric").to_pylist()]
    looped = [n for n, kind in enumerate(kinds) if kind in ("checkpoint-trigger", "config-property")]
    found = m._firsts_in_bulk(table, metrics)
    assert found is not None and 0 < len(looped) < len(kinds)
    assert found[1].tolist() == looped
