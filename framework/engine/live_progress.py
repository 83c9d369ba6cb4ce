"""Progress of the groups still running: what their tasks read so far, told to the driver while they read.

The driver learns a group's records only when the group's task returns, so a
stream whose first groups hold most of its records was silent until then.
Instead, each task reports as it reads (:class:`TaskTicker`): the records and
pages of its group so far and the units it finished, at most once a second
(its first page at once), through the driver's sync-wide services
(:mod:`framework.coordination`, service :data:`SERVICE`). On the driver a
:class:`LiveTally` keeps those running counts per group until the group's
results are folded into the stream's result, and :func:`ticking` calls the
reporters on a clock, so the rate and the time left move between groups too.

A task that cannot reach the driver (Spark Connect without a coordinator)
reports nothing; its stream's progress then moves as its groups return. A
report that fails turns the task's reporting off: progress never fails a sync.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from msgspec import Struct

__all__ = ["SERVICE", "BackgroundSender", "Live", "LiveTally", "TaskTicker", "ticking"]

log = logging.getLogger(__name__)

#: The name of the driver's progress service.
SERVICE = "sync-progress"

#: Least seconds between two reports of one task (its first page is reported at once).
REPORT_EVERY = 1.0


class Live(Struct, frozen=True):
    """What a stream's running groups read so far: records, pages, units finished and their work."""

    records: int = 0
    pages: int = 0
    units_done: int = 0
    work_done: float = 0.0


class TaskTicker:
    """A task's side: counts its group's pages and finished units, and sends them with ``send`` at most every
    ``every`` seconds. The group is named by its first unit's index (groups are contiguous in plan order)."""

    def __init__(self, stream: str, send: Callable[[tuple[Any, ...]], Any], *, every: float = REPORT_EVERY,
                 clock: Callable[[], float] = time.monotonic):
        self.stream = stream
        self._send = send
        self._every = every
        self._clock = clock
        self._key = -1
        self._records = self._pages = 0
        self._done: list[int] = []
        self._sent_at = float("-inf")
        self.off = False

    def begin(self, units: Sequence[Any]) -> None:
        """The group's units (in plan order)."""
        self._key = min((unit.index for unit in units), default=-1)

    def page(self, records: int) -> None:
        self._records += records
        self._pages += 1
        self._maybe_send()

    def unit_done(self, index: int) -> None:
        self._done.append(index)
        self._maybe_send()

    def close(self) -> None:
        """The group is read: a sender that has a thread ends it."""
        close = getattr(self._send, "close", None)
        if close is not None:
            close()

    def _maybe_send(self) -> None:
        if self.off:
            return
        now = self._clock()
        if now - self._sent_at < self._every:
            return
        self._sent_at = now
        payload = (self.stream, self._key, self._records, self._pages, tuple(self._done))
        try:
            self._send(payload)
        except Exception as exc:  # noqa: BLE001 - progress never fails the read
            log.debug("progress reports stop for this task: %s", exc)
            self.off = True
            return
        self._done.clear()


class BackgroundSender:
    """``send`` run in a thread of its own, so that a read never waits for the driver (a driver that cannot be
    reached, say): a report offered while the last one is still on its way is merged into the next (the newest
    counts, the finished units of both). The first failure stops it; :meth:`close` ends its thread."""

    def __init__(self, send: Callable[[tuple[Any, ...]], Any]):
        self._send = send
        self._pending: tuple[Any, ...] | None = None
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._closed = False
        self._thread: threading.Thread | None = None
        self.off = False

    def __call__(self, payload: tuple[Any, ...]) -> None:
        if self.off or self._closed:
            return
        with self._lock:
            if self._pending is not None:
                payload = (*payload[:4], tuple(self._pending[4]) + tuple(payload[4]))
            self._pending = payload
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="progress-reports", daemon=True)
                self._thread.start()
        self._wake.set()

    def close(self) -> None:
        self._closed = True
        self._wake.set()

    def _run(self) -> None:
        while True:
            self._wake.wait()
            self._wake.clear()
            if self._closed:
                return
            with self._lock:
                payload, self._pending = self._pending, None
            if payload is None:
                continue
            try:
                self._send(payload)
            except Exception as exc:  # noqa: BLE001 - progress never fails the read
                log.debug("progress reports stop for this task: %s", exc)
                self.off = True
                return


class _Group:
    __slots__ = ("done", "pages", "records", "work")

    def __init__(self, work: Mapping[int, float]):
        self.work = dict(work)
        self.records = self.pages = 0
        self.done: set[int] = set()


class LiveTally:
    """The driver's side: the running groups of each stream and what their tasks reported (thread-safe; its
    :meth:`report` is the service's handler)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._groups: dict[str, dict[int, _Group]] = {}

    def started(self, stream: str, work: Mapping[int, float]) -> None:
        """A group of ``stream`` starts: the work of each of its units, by unit index."""
        if not work:
            return
        with self._lock:
            self._groups.setdefault(stream, {})[min(work)] = _Group(work)

    def report(self, payload: Any) -> None:
        """A task's report: ``(stream, group key, records, pages, units finished since its last report)``. A
        report of a group that is over (or unknown) changes nothing."""
        stream, key, records, pages, done = payload
        with self._lock:
            group = self._groups.get(stream, {}).get(key)
            if group is None:
                return
            group.records, group.pages = int(records), int(pages)
            group.done.update(index for index in done if index in group.work)

    def over(self, stream: str, key: int) -> dict[int, float]:
        """The group whose first unit is ``key`` has returned (its results are folded): forgotten; its units'
        work, by index."""
        with self._lock:
            group = self._groups.get(stream, {}).pop(key, None)
        return group.work if group is not None else {}

    def live(self, stream: str) -> Live:
        """What the running groups of ``stream`` read so far."""
        with self._lock:
            groups = list(self._groups.get(stream, {}).values())
            return Live(records=sum(g.records for g in groups), pages=sum(g.pages for g in groups),
                        units_done=sum(len(g.done) for g in groups),
                        work_done=sum(g.work[i] for g in groups for i in g.done))


@contextlib.contextmanager
def ticking(every: float, tick: Callable[[], None]) -> Iterator[None]:
    """Within this block, ``tick()`` runs every ``every`` seconds in a thread of its own (its failures logged)."""
    stop = threading.Event()

    def loop() -> None:
        while not stop.wait(every):
            try:
                tick()
            except Exception as exc:  # noqa: BLE001 - a progress line never stops the sync
                log.debug("a progress tick failed: %s", exc)

    thread = threading.Thread(target=loop, name="progress-ticker", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=5)
