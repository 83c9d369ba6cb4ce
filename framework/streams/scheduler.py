"""Reading a sync's units, one at a time or several at once.

:func:`read_units` yields pages of records as ``("records", unit, records)``
and the end of each unit as ``("done", unit, None)``, in the order the caller
should handle them. With ``concurrency`` 1 everything happens in the caller's
thread, in plan order. With more, worker threads read units and hand pages
over through a bounded queue (so a slow consumer holds the readers back and
memory stays flat); the caller marks a unit done only after it has handled
the unit's pages, which is what lets state advance safely. The first error
stops the workers and is raised in the caller's thread.
"""

from __future__ import annotations

import queue
import threading
from typing import Any, Iterator, Sequence

from framework.streams.sync import StreamSync, Unit

_END = object()


def read_units(sync: StreamSync, units: Sequence[Unit], concurrency: int = 1) -> Iterator[tuple[str, Unit, Any]]:
    if concurrency <= 1 or len(units) <= 1:
        for unit in units:
            for records in sync.read(unit):
                yield "records", unit, records
            yield "done", unit, None
        return
    yield from _threaded(sync, units, concurrency)


def _threaded(sync: StreamSync, units: Sequence[Unit], concurrency: int) -> Iterator[tuple[str, Unit, Any]]:
    pages: queue.Queue = queue.Queue(maxsize=concurrency * 4)
    todo: queue.Queue = queue.Queue()
    for unit in units:
        todo.put(unit)
    stop = threading.Event()

    def put(item: Any) -> bool:
        while not stop.is_set():
            try:
                pages.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def work() -> None:
        try:
            while not stop.is_set():
                try:
                    unit = todo.get_nowait()
                except queue.Empty:
                    return
                try:
                    for records in sync.read(unit):
                        if not put(("records", unit, records)):
                            return
                    put(("done", unit, None))
                except BaseException as exc:  # handed to the caller's thread
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
        for worker in workers:
            worker.join(timeout=5)


__all__ = ["read_units"]
