"""Who runs a stream's groups: the driver, while Spark starts, then Spark.

A local SparkSession takes about six seconds to start on a small machine,
longer than a whole 200,000-record sync takes once it runs. So the session
starts in the background (:class:`framework.spark.session.SessionStart`) and
:func:`schedule_groups` lets the driver read meanwhile: it takes the stream's
groups one by one, in order, and runs each *here*, in this thread, through
the very same task code a Spark task runs
(:func:`framework.spark.tasks.run_task`: same staged files, same results, and
the caller publishes and saves the state exactly as for a Spark task's).
The moment the session is up, the groups not taken yet go to Spark (one
one-task job each), as many at once as there are slots, the next as one
ends; the group the driver is reading then is finished here. When the driver took the last group before Spark was
up, nothing waits for Spark.

The groups are pulled from their iterable lazily, under a lock (the driver
and the "Spark is up" callback both take from it), and the results come
back in the order the groups finish. Nothing here imports pyspark: the
runners and the session's future are given, so the tests inject them.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from msgspec import Struct

G = TypeVar("G")  # a group
R = TypeVar("R")  # what a group's run answers


class _Woken(Struct, frozen=True):
    """The session is up (or failed): look at the state again."""


class _Failed(Struct, frozen=True):
    """The session could not start: ``error`` is why."""

    error: BaseException


@dataclass(frozen=True)
class _Done(Generic[G, R]):
    """A group that Spark ran: its answer, or the exception its job raised."""

    group: G
    result: R | None
    error: BaseException | None


class _Groups(Generic[G]):
    """The groups, taken one at a time by whoever asks first (index, group), or None when none is left."""

    def __init__(self, groups: Iterable[G]):
        self._iterator = iter(groups)
        self._next = 0
        self._lock = threading.Lock()
        self.exhausted = False

    def take(self) -> tuple[int, G] | None:
        with self._lock:
            if self.exhausted:
                return None
            try:
                group = next(self._iterator)
            except StopIteration:
                self.exhausted = True
                return None
            index, self._next = self._next, self._next + 1
            return index, group


def schedule_groups(groups: Iterable[G], *, here: Callable[[int, G], R], on_spark: Callable[[int, G], R],
                    failed: Callable[[G, BaseException], R], spark: Future[Any], read_here: bool = True,
                    spark_slots: int = 64, cancel: Callable[[], None] | None = None) -> Iterator[R]:
    """Run every group of ``groups`` once; yield each answer as its group finishes (see the module docs).

    ``here(index, group)`` runs a group in this thread, ``on_spark(index, group)`` as a Spark job (in a
    thread of its own); ``index`` is the group's position in ``groups``. At most ``spark_slots`` groups run
    at once, the one the driver reads included, and a group is taken from ``groups`` only when it can
    start, so a plan streamed from parent pages is never held whole. ``spark`` is the session's future:
    until it is done (and while ``read_here``) groups run here, afterwards on Spark. A group whose run
    raised an :class:`Exception` answers ``failed(group, exception)``. A session that failed to start
    raises its error here once a group is left for it. ``cancel()`` is called when the caller stops early
    (an interrupt, an exception, the generator closed) while Spark jobs are running.
    """
    todo: _Groups[G] = _Groups(groups)
    inbox: queue.SimpleQueue[Any] = queue.SimpleQueue()
    lock = threading.Lock()
    # up: the session is there (or failed with nothing left for it); running: groups on Spark now;
    # reading: the driver reads one now (it holds one of the slots)
    state: dict[str, Any] = {"closed": False, "pool": None, "up": False, "running": 0, "reading": False}

    def fill() -> None:  # under the lock, the session up: start groups while slots are free
        while not state["closed"] and state["running"] + state["reading"] < spark_slots:
            item = todo.take()
            if item is None:
                return
            if state["pool"] is None:
                state["pool"] = ThreadPoolExecutor(max_workers=spark_slots, thread_name_prefix="spark-group")
            state["running"] += 1
            state["pool"].submit(_on_spark, on_spark, item[0], item[1], inbox)

    def spark_ready(future: Future[Any]) -> None:  # in the thread that finished the session (or this one)
        with lock:
            if state["closed"]:
                return
            error = future.exception()
            if error is not None:  # raised only if a group is left for Spark
                if not state["reading"] and todo.take() is not None:
                    inbox.put(_Failed(error))
                else:
                    state["failed"] = True
            else:
                fill()
            state["up"] = True
            inbox.put(_Woken())

    spark.add_done_callback(spark_ready)
    try:
        while read_here and not spark.done():
            with lock:
                item = todo.take()
                state["reading"] = item is not None
            if item is None:
                break
            index, group = item
            try:
                answer = here(index, group)
            except Exception as exc:  # noqa: BLE001 - the group's failure, as a Spark job's would be
                answer = failed(group, exc)
            with lock:
                state["reading"] = False
                if state["up"] and "failed" not in state:
                    fill()
            yield answer
            while True:  # what Spark finished meanwhile
                try:
                    message = inbox.get_nowait()
                except queue.Empty:
                    break
                done = _receive(message, state, lock, fill, failed)
                if done is not None:
                    yield done
        if todo.exhausted and not spark.done():
            return  # all read here: Spark is not waited for
        while True:
            with lock:
                if state["up"] and not state["running"]:
                    if "failed" in state and todo.take() is not None:
                        raise spark.exception()  # type: ignore[misc]
                    if todo.exhausted:
                        return
            try:
                message = inbox.get(timeout=0.5)  # a timeout, so that an interrupt is not held up
            except queue.Empty:
                continue
            done = _receive(message, state, lock, fill, failed)
            if done is not None:
                yield done
    except BaseException:
        with lock:
            state["closed"] = True
            started = state["pool"] is not None
        if started and cancel is not None:  # stop the jobs still running; their files never appear
            cancel()
        raise
    finally:
        with lock:
            state["closed"] = True
            pool = state["pool"]
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


def _on_spark(run: Callable[[int, G], R], index: int, group: G, inbox: queue.SimpleQueue[Any]) -> None:
    try:
        inbox.put(_Done(group, run(index, group), None))
    except BaseException as exc:  # noqa: BLE001 - handed to the scheduler, which reports the group as failed
        inbox.put(_Done(group, None, exc))


def _receive(message: Any, state: dict[str, Any], lock: threading.Lock, fill: Callable[[], None],
             failed: Callable[[Any, BaseException], Any]) -> Any:
    """Take one message of the inbox: the answer to yield, or None."""
    if isinstance(message, _Failed):
        raise message.error
    if isinstance(message, _Woken):
        return None
    assert isinstance(message, _Done)
    with lock:  # its slot is free: the next group starts
        state["running"] -= 1
        fill()
    return message.result if message.error is None else failed(message.group, message.error)


__all__ = ["schedule_groups"]
