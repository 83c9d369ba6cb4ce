"""Cutting a datetime range into consecutive windows of one ``step`` each.

A window is a pair ``(start, end)`` inclusive of both ends. Each window but the
last ends one ``granularity`` before the next one starts, so consecutive
windows neither overlap nor leave a gap at the cursor's precision; the last
window ends exactly at the range's end::

    2022-01-01 .. 2022-01-05, step P1D, granularity PT0.000001S
    -> [01T00:00, 01T23:59:59.999999], ..., [04T00:00, 04T23:59:59.999999],
       [05T00:00, 05T00:00]

Window starts are ``start + k * step``, counted from the range start rather
than from the previous window, so calendar steps (``P1M``) do not drift:
from January 31 the windows start on Jan 31, Feb 28, Mar 31, Apr 30, ...
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TypeAlias

import isodate

from framework.errors import ConfigError, DurationError

__all__ = ["MAX_WINDOWS", "Step", "datetime_windows", "describe_duration", "shift"]

#: A window size or a lookback: a fixed length, or calendar months and years.
Step: TypeAlias = timedelta | isodate.Duration

#: More windows than this is a mistake (a one-second step over decades, say), not a sync.
MAX_WINDOWS = 1_000_000

_ZERO = timedelta(0)


def describe_duration(duration: Step) -> str:
    """``duration`` in ISO 8601 (``P1D``), for messages."""
    try:
        return isodate.duration_isoformat(duration)
    except (TypeError, ValueError):  # pragma: no cover - isodate formats every duration it makes
        return str(duration)


def shift(instant: datetime, duration: Step, times: int = 1) -> datetime | None:
    """``instant + times * duration``, or ``None`` when that falls outside the years 1..9999."""
    try:
        return instant + duration * times
    except (OverflowError, ValueError):
        return None


def _check_step(start: datetime, step: Step, granularity: Step) -> None:
    if isinstance(granularity, timedelta) and granularity < _ZERO:
        raise DurationError(
            f"cursor_granularity {describe_duration(granularity)} is negative; "
            "give the smallest positive step of the cursor values, like `PT1S`"
        )
    ahead = shift(start, step)
    if ahead is not None and ahead <= start:
        raise DurationError(
            f"step {describe_duration(step)} does not move forward; give a positive duration like `P1D`"
        )


def _too_many(start: datetime, end: datetime, step: Step, limit: int) -> ConfigError:
    return ConfigError(
        f"cutting {start.isoformat()} .. {end.isoformat()} into windows of {describe_duration(step)} "
        f"gives more than {limit:,} windows; use a larger `step` or a later start date"
    )


def datetime_windows(
    start: datetime,
    end: datetime,
    step: Step | None,
    granularity: Step | None,
    *,
    max_windows: int = MAX_WINDOWS,
) -> list[tuple[datetime, datetime]]:
    """The windows covering ``start`` .. ``end`` (both inclusive), in order.

    ``start > end`` gives no window; ``step=None`` gives the whole range as one
    window. ``granularity=None`` means zero: a window then ends where the next
    starts. Raises :class:`DurationError` for a step that does not move forward or
    a granularity longer than the step, and :class:`ConfigError` when the range
    would need more than ``max_windows`` windows.
    """
    if start > end:
        return []
    if step is None:
        return [(start, end)]
    gap = _ZERO if granularity is None else granularity
    _check_step(start, step, gap)
    if isinstance(step, timedelta) and (end - start) // step >= max_windows:
        raise _too_many(start, end, step, max_windows)

    windows: list[tuple[datetime, datetime]] = []
    window_start = start
    count = 0
    while True:
        count += 1
        next_start = shift(start, step, count)
        if next_start is None:  # the next window would start after the year 9999
            windows.append((window_start, end))
            return windows
        window_end = shift(next_start, gap, -1)
        if next_start > end or (window_end is not None and window_end >= end):
            windows.append((window_start, end))
            return windows
        if window_end is None or window_end < window_start or next_start <= window_start:
            raise DurationError(
                f"cursor_granularity {describe_duration(gap)} is longer than step {describe_duration(step)}: "
                f"the window starting {window_start.isoformat()} would end before it starts; "
                "use a granularity smaller than the step"
            )
        windows.append((window_start, window_end))
        if len(windows) >= max_windows:
            raise _too_many(start, end, step, max_windows)
        window_start = next_start
