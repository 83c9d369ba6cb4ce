"""Reading a sync's units, one at a time or several at once.

:func:`read_units` yields each page of records as a :class:`Page` and the end
of each unit as a :class:`UnitEnd`, in the order the caller should handle
them. With ``concurrency`` 1 everything happens in the caller's thread, in
plan order. With more, worker threads take units in plan order and hand pages
over through a bounded queue (so a slow consumer holds the readers back and
memory stays flat). A unit's end comes after all its pages, and the caller
marks the unit finished only after it has handled them: that is what lets
state advance safely, over the contiguous run of finished units.

The first error stops the workers (they finish the request in flight and
then quit) and is raised in the caller's thread; so does an error of the
caller, or the caller dropping the iterator.
"""

from __future__ import annotations

import contextvars
import queue
import threading
import time
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from msgspec import Struct

from framework.components.job_slots import prefetch, release

if TYPE_CHECKING:
    from framework.engine.plan import Sync

__all__ = ["Page", "UnitEnd", "read_units"]

#: How long the caller waits, in all, for workers to quit after an error.
JOIN_SECONDS = 2.0


class Page(Struct, frozen=True):
    """A page of ``unit``'s records (never empty)."""

    unit: Any  # a unit of the sync's plan
    records: list[dict[str, Any]]


class UnitEnd(Struct, frozen=True):
    """Every page of ``unit`` has been handed over."""

    unit: Any


class _Failed(Struct, frozen=True):
    error: BaseException


class _Quit(Struct, frozen=True):
    """A worker is done."""


_Item = Page | UnitEnd | _Failed | _Quit


def read_units(sync: Sync, units: Sequence[Any], concurrency: int = 1) -> Iterator[Page | UnitEnd]:
    """The pages and ends of ``units`` (see the module docstring)."""
    stream = getattr(sync, "stream", None)
    slices = [unit.slice for unit in units if hasattr(unit, "slice")]
    prefetch(stream, slices, getattr(sync, "config", {}))  # asynchronous jobs: created together, polled together
    try:
        yield from _read_units(sync, units, concurrency)
    finally:
        release(stream, slices)  # the jobs of units left unread: aborted, their slots freed


def _read_units(sync: Sync, units: Sequence[Any], concurrency: int) -> Iterator[Page | UnitEnd]:
    if concurrency <= 1 or len(units) <= 1:
        for unit in units:
            for records in sync.read(unit):
                yield Page(unit, records)
            yield UnitEnd(unit)
        return
    yield from _threaded(sync, units, min(concurrency, len(units)))


def _threaded(sync: Sync, units: Sequence[Any], concurrency: int) -> Iterator[Page | UnitEnd]:
    pages: queue.Queue[_Item] = queue.Queue(maxsize=concurrency * 4)
    todo = iter(units)
    take = threading.Lock()
    stop = threading.Event()

    def put(item: _Item) -> bool:
        while not stop.is_set():
            try:
                pages.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def next_unit() -> Any:
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
                        if not put(Page(unit, records)):
                            return
                    if not put(UnitEnd(unit)):
                        return
                except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
                    put(_Failed(exc))
                    return
        finally:
            put(_Quit())

    # each in a copy of the caller's context: what it set for the read (a page watcher, say) holds there too
    workers = [threading.Thread(target=contextvars.copy_context().run, args=(work,), daemon=True,
                                name=f"reader-{i}") for i in range(concurrency)]
    for worker in workers:
        worker.start()
    running = len(workers)
    try:
        while running:
            item = pages.get()
            if isinstance(item, _Quit):
                running -= 1
            elif isinstance(item, _Failed):
                raise item.error
            else:
                yield item
    finally:
        stop.set()
        deadline = time.monotonic() + JOIN_SECONDS
        for worker in workers:
            worker.join(timeout=max(0.0, deadline - time.monotonic()))
