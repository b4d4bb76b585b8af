"""Work done beside a wait: while the main thread waits for the JVM it starts, the driver's own preparation runs
in a thread. The thread is a daemon's, so a failure of the wait (no Java, a bad master, Ctrl-C) reaches the user at
once, not after the preparation (a first run compiles the failure catalogue's database: ~19 s), and what the
work raises is kept in its future, never printed by the thread."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import TypeVar

_T = TypeVar("_T")


def beside(work: Callable[..., _T], *args: object) -> Future[_T]:
    """`work(*args)` started in a daemon thread; its result (or what it raised) from the future returned."""
    future: Future[_T] = Future()

    def run() -> None:
        future.set_running_or_notify_cancel()
        try:
            future.set_result(work(*args))
        except BaseException as err:  # noqa: BLE001 - handed to whoever asks the future, as an executor does
            future.set_exception(err)

    threading.Thread(target=run, name=f"flinkdoctor-{getattr(work, '__name__', 'work')}", daemon=True).start()
    return future
