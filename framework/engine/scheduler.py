"""Reading a sync's units, one at a time or several at once.

:func:`read_units` yields pages of records as ``("records", unit, records)``
and the end of each unit as ``("done", unit, None)``, in the order the caller
should handle them. With ``concurrency`` 1 everything happens in the caller's
thread, in plan order. With more, worker threads take units in plan order and
hand pages over through a bounded queue (so a slow consumer holds the readers
back and memory stays flat). A unit's ``done`` comes after all its pages, and
the caller marks the unit finished only after it has handled them: that is
what lets state advance safely, over the contiguous run of finished units.

The first error stops the workers (they finish the request in flight and
then quit) and is raised in the caller's thread; so does an error of the
caller, or the caller dropping the iterator.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any

from framework.engine.sync import StreamSync, Unit

__all__ = ["read_units"]

_END = object()
#: How long the caller waits, in all, for workers to quit after an error.
JOIN_SECONDS = 2.0


def read_units(sync: StreamSync, units: Sequence[Unit], concurrency: int = 1) -> Iterator[tuple[str, Unit, Any]]:
    """The pages and ends of ``units`` (see the module docstring)."""
    if concurrency <= 1 or len(units) <= 1:
        for unit in units:
            for records in sync.read(unit):
                yield "records", unit, records
            yield "done", unit, None
        return
    yield from _threaded(sync, units, min(concurrency, len(units)))


def _threaded(sync: StreamSync, units: Sequence[Unit], concurrency: int) -> Iterator[tuple[str, Unit, Any]]:
    pages: queue.Queue = queue.Queue(maxsize=concurrency * 4)
    todo = iter(units)
    take = threading.Lock()
    stop = threading.Event()

    def put(item: Any) -> bool:
        while not stop.is_set():
            try:
                pages.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def next_unit() -> Unit | None:
        with take:
            return next(todo, None)

    def work() -> None:
        try:
            while not stop.is_set():
                unit = next_unit()
                if unit is None:
                    return
                try:
                    for records in sync.read(unit):
                        if not put(("records", unit, records)):
                            return
                    if not put(("done", unit, None)):
                        return
                except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
                    put(("error", unit, exc))
                    return
        finally:
            put((_END, None, None))

    workers = [threading.Thread(target=work, daemon=True, name=f"reader-{i}") for i in range(concurrency)]
    for worker in workers:
        worker.start()
    running = len(workers)
    try:
        while running:
            kind, unit, payload = pages.get()
            if kind is _END:
                running -= 1
            elif kind == "error":
                raise payload
            else:
                yield kind, unit, payload
    finally:
        stop.set()
        deadline = time.monotonic() + JOIN_SECONDS
        for worker in workers:
            worker.join(timeout=max(0.0, deadline - time.monotonic()))
