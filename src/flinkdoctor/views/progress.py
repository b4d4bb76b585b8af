"""A live progress line on stderr while a diagnosis runs, on a terminal only (never in a pipe or a file).

The stage is read from the outside, so the pipeline stays a straight line: before Spark is up the input is being
read and staged; while Spark runs a job, its stage and tasks done of total are shown (the events table is built
one task per block of input, so that is how much of the input is read); after Spark, the diagnosis is assembled.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

POLL_S = 0.25


def _spark_state() -> str | None:
    """What the running Spark application is doing, or None when no Spark context exists yet."""
    from pyspark import SparkContext

    context = SparkContext._active_spark_context
    if context is None:
        return None
    tracker = context.statusTracker()
    stages = [info for info in (tracker.getStageInfo(i) for i in tracker.getActiveStageIds()) if info]
    if not stages:
        return "assembling the diagnosis"
    done = sum(s.numCompletedTasks for s in stages)
    total = sum(s.numTasks for s in stages)
    return f"reading the logs with Spark: {done} of {total} tasks done"


@contextmanager
def progress(console: Console, enabled: bool) -> Iterator[None]:
    """Show the stage and the time spent while the body runs, when `enabled` (stderr is a terminal)."""
    if not enabled:
        yield
        return
    started = time.monotonic()
    stop = threading.Event()
    seen_spark = [False]

    def text() -> str:
        state = _spark_state()
        if state is None:
            state = "starting Spark" if seen_spark[0] else "reading and staging the input"
        elapsed = time.monotonic() - started
        return f"flinkdoctor: {state} ({elapsed:.0f} s)"

    with console.status(text(), spinner="dots") as status:

        def poll() -> None:
            from pyspark import SparkContext

            while not stop.wait(POLL_S):
                seen_spark[0] = seen_spark[0] or SparkContext._gateway is not None
                status.update(text())

        thread = threading.Thread(target=poll, name="flinkdoctor-progress", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()
