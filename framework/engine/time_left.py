"""How much of a stream's sync is done and how long the rest may take: a pure estimate from the work done.

A unit's *work* is what it covers, so that units of different sizes weigh as
they should: a datetime window weighs the seconds it spans (a window of a
month counts thirty times one of a day), any other unit (a router's
partition, a window without bounds) weighs 1. The fraction done is the work
of the finished units over the work planned, and the time left assumes the
rest goes at the pace so far: ``elapsed * (planned - done) / done``.

Nothing is estimated while it cannot be told: before a unit has finished,
or while the plan is still streaming from parent pages (more units may come,
so the planned work is not the total).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

__all__ = ["fraction_done", "time_left", "unit_work"]


def unit_work(unit: Any, cursor: Any) -> float:
    """The work of ``unit`` (a :class:`~framework.engine.sync.Unit`): the seconds its datetime window spans (at
    least one), else 1. ``cursor`` is the stream's cursor (None without one)."""
    bounds = getattr(cursor, "window_bounds", None)
    cursor_slice = getattr(getattr(unit, "slice", None), "cursor_slice", None)
    if bounds is None or not cursor_slice:
        return 1.0
    try:
        low, high = bounds(cursor_slice)
    except Exception:  # noqa: BLE001 - a window that cannot be read back weighs as a partition
        return 1.0
    if isinstance(low, datetime) and isinstance(high, datetime):
        return max((high - low).total_seconds(), 1.0)
    return 1.0


def fraction_done(done: float, planned: float, *, planned_all: bool = True) -> float | None:
    """The share of the work done (0 to 1), or None while the plan is not whole or nothing is planned."""
    if not planned_all or planned <= 0:
        return None
    return min(max(done / planned, 0.0), 1.0)


def time_left(done: float, planned: float, elapsed: float, *, planned_all: bool = True) -> float | None:
    """Seconds left at the pace so far (``done`` work in ``elapsed`` seconds), or None when it cannot be told:
    nothing done yet, no time gone, or the plan not whole. 0 once everything planned is done."""
    if not planned_all or planned <= 0:
        return None
    if done >= planned:
        return 0.0
    if done <= 0 or elapsed <= 0:
        return None
    return elapsed * (planned - done) / done
