"""SIGTERM and SIGHUP handled as Ctrl-C is.

Schedulers stop a job with SIGTERM (Airflow, Kubernetes, systemd), and a
closed terminal sends SIGHUP; by default either ends Python at once, with no
message, staging left behind and a ``.tmp`` file half written. While a command
runs, :func:`terminating_as_interrupt` turns the first of them into
:class:`Terminated`, a ``KeyboardInterrupt``: every path that cleans up after
Ctrl-C (the scheduler's threads, the pipeline's staging, the Spark session)
cleans up after it too, and the command answers ``128 + signal`` (143 for
SIGTERM, 129 for SIGHUP) with one line, as it answers 130 for Ctrl-C. A
second signal while that cleanup runs is ignored (SIGKILL still ends it).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType
from typing import Any

__all__ = ["SIGNALS", "Terminated", "exit_code", "interruption", "terminating_as_interrupt"]

#: The signals handled as Ctrl-C, besides SIGINT itself.
SIGNALS: tuple[signal.Signals, ...] = tuple(
    getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))


class Terminated(KeyboardInterrupt):
    """The process was asked to stop by ``signum`` (SIGTERM or SIGHUP)."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name


def exit_code(interrupt: KeyboardInterrupt) -> int:
    """What a command answers after ``interrupt``: 128 plus the signal's number (130 for Ctrl-C)."""
    return 128 + (interrupt.signum if isinstance(interrupt, Terminated) else signal.SIGINT)


def interruption(interrupt: KeyboardInterrupt) -> str:
    """How a message names ``interrupt``: ``interrupted`` (Ctrl-C) or ``terminated by SIGTERM``."""
    return f"terminated by {interrupt.name}" if isinstance(interrupt, Terminated) else "interrupted"


@contextlib.contextmanager
def terminating_as_interrupt() -> Iterator[None]:
    """SIGTERM and SIGHUP raise :class:`Terminated` in the main thread while the block runs; the handlers
    before it are put back after. Outside the main thread (where Python takes no handler) nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    raised = False

    def handler(signum: int, frame: FrameType | None) -> None:
        nonlocal raised
        if raised:  # the cleanup of the first one is running: let it finish
            return
        raised = True
        raise Terminated(signum)

    before: dict[signal.Signals, Any] = {}
    try:
        for signum in SIGNALS:
            before[signum] = signal.signal(signum, handler)
        yield
    finally:
        for signum, previous in before.items():
            signal.signal(signum, previous)
