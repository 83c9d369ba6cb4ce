"""Reading units, one at a time or several at once.

:func:`concurrent_pages` is the one threaded reader: given units and
``read_one(unit)`` (an iterator of that unit's pages), it yields each page as
a :class:`Page` and the end of each unit as a :class:`UnitEnd`, in the order
they arrive. With ``concurrency`` 1 (or a single unit) everything happens in
the caller's thread, in plan order. With more, worker threads take units in
plan order and hand pages over through a bounded queue (so a slow consumer
holds the readers back and memory stays flat: at most one page per reader
waiting to be handed over, plus the queue's). A unit's pages come in order and
its end after all of them; pages of different units interleave.

The first error of a reader stops the others (they finish the request in
flight, take no further unit and quit) and is raised in the caller's thread;
an error of the caller, a ``KeyboardInterrupt`` or the caller dropping the
iterator (``GeneratorExit``) stops them too. The readers are daemon threads,
each in a copy of the caller's context (what the caller set, a file landing
say, holds there too), joined briefly when the iterator ends.

Two front ends use it: :func:`read_units` (protocol mode: the caller marks a
unit finished only after it handled the unit's pages, which is what lets state
advance safely, over the contiguous run of finished units) and
:func:`framework.engine.worker.read_group` (a Spark task's units).
"""

from __future__ import annotations

import contextvars
import queue
import threading
import time
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from msgspec import Struct

from framework.components.job_slots import prefetch, release

if TYPE_CHECKING:
    from framework.engine.plan import Sync

__all__ = ["Page", "UnitEnd", "concurrent_pages", "read_units"]

#: How long the caller waits, in all, for workers to quit once the iterator ends.
JOIN_SECONDS = 2.0
#: The queue between readers and caller holds this many items per reader unless told otherwise.
QUEUE_PER_READER = 2


class Page(Struct, frozen=True):
    """A page of ``unit``: what ``read_one(unit)`` yielded (protocol mode: a list of records, never empty)."""

    unit: Any  # a unit of the sync's plan
    records: Any


class UnitEnd(Struct, frozen=True):
    """Every page of ``unit`` has been handed over."""

    unit: Any


class _Failed(Struct, frozen=True):
    error: BaseException


class _Quit(Struct, frozen=True):
    """A worker is done."""


_Item = Page | UnitEnd | _Failed | _Quit
_DONE = object()  # no unit left to take


def read_units(sync: Sync, units: Sequence[Any], concurrency: int = 1) -> Iterator[Page | UnitEnd]:
    """The pages (lists of records) and ends of ``units``, read by ``sync`` (see the module docstring)."""
    stream = getattr(sync, "stream", None)
    slices = [unit.slice for unit in units if hasattr(unit, "slice")]
    prefetch(stream, slices, getattr(sync, "config", {}))  # asynchronous jobs: created together, polled together
    try:
        yield from concurrent_pages(units, sync.read, concurrency, queue_per_reader=4)
    finally:
        release(stream, slices)  # the jobs of units left unread: aborted, their slots freed


def concurrent_pages(units: Sequence[Any], read_one: Callable[[Any], Iterable[Any]], concurrency: int = 1, *,
                     queue_per_reader: int = QUEUE_PER_READER) -> Generator[Page | UnitEnd, None, None]:
    """Each page ``read_one`` yields for ``units`` as a :class:`Page`, and each unit's :class:`UnitEnd`, in
    arrival order, read by ``n = min(concurrency, len(units))`` threads (see the module docstring).

    The queue between them holds ``n * queue_per_reader`` items: besides the page the caller handles, at
    most ``n`` pages (one per reader, read and waiting to be handed over) plus the queue's are in memory.
    """
    if concurrency <= 1 or len(units) <= 1:
        yield from _in_order(units, read_one)
    else:
        readers = min(concurrency, len(units))
        yield from _threaded(units, read_one, readers, max(1, readers * queue_per_reader))


def _in_order(units: Sequence[Any], read_one: Callable[[Any], Iterable[Any]]) -> Iterator[Page | UnitEnd]:
    for unit in units:
        pages = iter(read_one(unit))
        try:
            for page in pages:
                yield Page(unit, page)
        finally:
            _close(pages)
        yield UnitEnd(unit)


def _close(pages: Iterator[Any]) -> None:
    """End a unit's iterator where it ran (a generator's ``finally`` in its own thread and context)."""
    close = getattr(pages, "close", None)
    if close is not None:
        close()


def _threaded(units: Sequence[Any], read_one: Callable[[Any], Iterable[Any]], concurrency: int,
              queue_size: int) -> Iterator[Page | UnitEnd]:
    pages: queue.Queue[_Item] = queue.Queue(maxsize=queue_size)
    todo = iter(units)
    take = threading.Lock()
    stop = threading.Event()  # the caller is gone: nothing more is handed over
    halt = threading.Event()  # a reader failed: the others take no further unit and quit after their request

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
            return next(todo, _DONE)

    def read(unit: Any) -> bool:
        """Hand over ``unit``'s pages and end; False when the worker should quit."""
        unit_pages = iter(read_one(unit))
        try:
            for page in unit_pages:
                if halt.is_set() or not put(Page(unit, page)):
                    return False
        finally:
            _close(unit_pages)
        return put(UnitEnd(unit))

    def work() -> None:
        try:
            while not (stop.is_set() or halt.is_set()):
                unit = next_unit()
                if unit is _DONE or not read(unit):
                    return
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            halt.set()
            put(_Failed(exc))
        finally:
            put(_Quit())

    # each in a copy of the caller's context: what it set for the read (a file landing, say) holds there too
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

