"""Holding a local driver JVM's start while the driver does not need it, at no CPU cost.

A local sync starts its Spark session in the background while the driver reads
(:class:`framework.spark.session.SessionStart`). When the driver's pace says it
will finish the sync alone before Spark could help, the JVM's start only takes
CPU from it: on a busy machine that is most of the sync's time. :class:`StartPause`
holds the start where it is: a launch not begun waits; a JVM launched (in a
process group of its own: :func:`framework.spark.launch.launch_jvm`) is stopped
with ``SIGSTOP`` and goes on with ``SIGCONT`` when the driver wants it after all.

A start may also begin held for a short while (:data:`LAUNCH_HOLD_S`): the
JVM is launched once that is over, unless the driver said by then whether it
wants Spark. A sync that the driver's first group shows it will finish alone
(every sync of a few pages) then never launches a JVM, nor imports pyspark.

A driver that dies while its JVM is stopped leaves an orphaned process group
with a stopped member: the kernel then sends the group ``SIGHUP`` and
``SIGCONT`` (POSIX), and the JVM ends, as it does when its driver dies (not
when a subreaper in the driver's own session adopts it: that group is not
orphaned, and the JVM stays stopped until the subreaper ends it). Where
``/proc`` cannot list processes (not Linux), a launched JVM is never stopped.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable, Iterable

#: How long a local sync's session start waits, at first, for the driver to say whether it wants Spark (after
#: its first group: :func:`framework.spark.warmup.spark_wanted`). A sync that needs Spark gets it this much
#: later, less what the driver reads meanwhile; one that does not never pays for the JVM's start, nor for
#: pyspark's import (about 0.5 CPU-s before the first group ends; bench/README.md, "a JVM held while not
#: wanted").
LAUNCH_HOLD_S = 0.6


def children(pid: int) -> list[int]:
    """The children of process ``pid`` (of every thread of it), from ``/proc``; OSError where it cannot tell."""
    found: list[int] = []
    for task in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(OSError), open(f"/proc/{pid}/task/{task}/children") as handle:
            found.extend(int(child) for child in handle.read().split())
    return found


def spark_children() -> list[int] | None:
    """This process's children running ``spark-submit`` (or Spark's launcher); None where ``/proc`` cannot tell.
    A child still between fork and exec runs this interpreter: not one yet."""
    try:
        mine = children(os.getpid())
    except OSError:
        return None
    found = []
    for pid in mine:
        with contextlib.suppress(OSError), open(f"/proc/{pid}/cmdline", "rb") as handle:
            command = handle.read()
            if b"spark-submit" in command or b"org.apache.spark" in command:
                found.append(pid)
    return found


def jvm_groups() -> list[int]:
    """The process groups this process launched a driver JVM in: its :func:`spark_children` that lead a group
    of their own. Empty where ``/proc`` cannot tell."""
    own = os.getpgid(0)
    groups = []
    for pid in spark_children() or []:
        with contextlib.suppress(OSError):
            if os.getpgid(pid) == pid != own:
                groups.append(pid)
    return groups


class StartPause:
    """Whether a session's start may go on: :meth:`pause` holds it, :meth:`resume` lets it go on.

    ``groups()`` lists the process groups to stop (default :func:`jvm_groups`); it is asked at each pause,
    so a JVM launched since the last one is found. A group that no longer exists is skipped.
    ``hold`` (seconds) begins it held that long: :meth:`wait` returns when the hold is over unless
    :meth:`pause` or :meth:`resume` said otherwise first.
    """

    def __init__(self, groups: Callable[[], Iterable[int]] = jvm_groups, hold: float = 0.0,
                 clock: Callable[[], float] = time.monotonic):
        self._groups = groups
        self._clock = clock
        self._lock = threading.Lock()
        self._go = threading.Event()
        self._until: float | None = clock() + hold if hold > 0 else None  # the first hold's end
        if self._until is None:
            self._go.set()
        self._stopped: set[int] = set()

    @property
    def paused(self) -> bool:
        return not self._go.is_set()

    def wait(self) -> None:
        """Return once the start may go on: at once unless paused or held; when a hold is over."""
        while not self._go.is_set():
            with self._lock:
                until = self._until
                if until is not None and self._clock() >= until:  # held, and nobody said: the hold is over
                    self._until = None
                    self._go.set()
                    return
            self._go.wait(None if until is None else max(0.0, until - self._clock()))

    def pause(self) -> None:
        """Hold the start: a launch not begun waits in :meth:`wait`; launched JVMs' groups are stopped."""
        with self._lock:
            self._until = None  # until resumed, however long
            self._go.clear()
            for group in self._groups():
                if group not in self._stopped:
                    with contextlib.suppress(OSError):
                        os.killpg(group, signal.SIGSTOP)
                        self._stopped.add(group)

    def resume(self) -> None:
        """Let the start go on: the stopped groups continue, a waiting launch goes."""
        with self._lock:
            self._until = None
            for group in self._stopped:
                with contextlib.suppress(OSError):
                    os.killpg(group, signal.SIGCONT)
            self._stopped.clear()
            self._go.set()

    def end(self) -> None:
        """The start is abandoned: every group it launched is killed (``SIGKILL``, stopped or not: a group
        continued first could fork a process that a kill by listing would miss), and a held launch goes on
        (to find itself abandoned)."""
        with self._lock:
            self._until = None
            for group in {*self._groups(), *self._stopped}:
                with contextlib.suppress(OSError):
                    os.killpg(group, signal.SIGKILL)
            self._stopped.clear()
            self._go.set()


__all__ = ["LAUNCH_HOLD_S", "StartPause", "children", "jvm_groups", "spark_children"]
