"""Reading several units of a stream at once and handing their pages on in order.

:func:`ordered_pages` is how a substream's planning reads a partitioned parent
(a parent whose own router or cursor makes several units): up to ``readers``
units are read at once, each in a thread of its own and at most ``depth``
pages ahead, and the caller gets each unit's pages in the units' order, so
partitions are routed in the same order as when the units were read one after
another. The pages *within* a unit still come one after another: a paginated
request needs the previous page's answer (its token, cursor or link).
"""

from __future__ import annotations

import itertools
import queue
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import Generic, TypeVar

__all__ = ["ordered_pages"]

U = TypeVar("U")
P = TypeVar("P")

_END = object()


class _Reader(Generic[U, P]):
    """One unit being read in a thread: its pages go into a bounded queue, then an end mark (or the error)."""

    def __init__(self, unit: U, read: Callable[[U], Iterable[P]], depth: int, stop: threading.Event):
        self.unit = unit
        self._pages: queue.Queue = queue.Queue(maxsize=depth)
        self._stop = stop
        self._thread = threading.Thread(target=self._run, args=(read,), daemon=True, name="parent-reader")
        self._thread.start()

    def _put(self, item: object) -> bool:
        while not self._stop.is_set():
            try:
                self._pages.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _run(self, read: Callable[[U], Iterable[P]]) -> None:
        try:
            pages = read(self.unit)
            try:
                for page in pages:
                    if not self._put(page):
                        return
            finally:
                close = getattr(pages, "close", None)
                if close is not None:
                    close()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller, raised there
            self._put(_Failure(exc))
            return
        self._put(_END)

    def pages(self) -> Iterator[P]:
        while True:
            item = self._pages.get()
            if item is _END:
                return
            if isinstance(item, _Failure):
                raise item.error
            yield item

    def join(self) -> None:
        self._thread.join()


class _Failure:
    def __init__(self, error: BaseException):
        self.error = error


def ordered_pages(units: Iterable[U], read: Callable[[U], Iterable[P]], readers: int = 4,
                  depth: int = 2) -> Iterator[tuple[U, Iterator[P]]]:
    """``(unit, its pages)`` for each of ``units`` in order, reading up to ``readers`` units at once.

    ``read(unit)`` gives a unit's pages; it runs in a thread and must be safe
    to call from several at once. Each unit's pages are consumed before the
    next unit is handed on (a unit's pages not consumed are skipped). At most
    ``readers`` units are in flight and each at most ``depth`` pages ahead, so
    memory stays bounded. An error reading a unit is raised when its pages
    reach it. With ``readers`` 1 the units are read in the caller's thread.
    Closing the iterator stops the readers.
    """
    if readers <= 1:
        for unit in units:
            yield unit, iter(read(unit))
        return
    stop = threading.Event()
    source = iter(units)
    flight: deque[_Reader[U, P]] = deque()
    try:
        for unit in source:
            flight.append(_Reader(unit, read, depth, stop))
            if len(flight) >= readers:
                break
        while flight:
            reader = flight.popleft()
            pages = reader.pages()
            yield reader.unit, pages
            for _ in pages:  # what the caller left
                pass
            reader.join()
            for unit in itertools.islice(source, 1):
                flight.append(_Reader(unit, read, depth, stop))
    finally:
        stop.set()
        for reader in flight:
            reader.join()
