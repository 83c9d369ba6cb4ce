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
from typing import TYPE_CHECKING, TypeAlias

from msgspec import Struct

from framework.errors import ConfigError, DurationError

__all__ = ["MAX_WINDOWS", "Clamp", "Step", "clamp_of", "clamped_windows", "datetime_windows", "describe_duration",
           "shift"]

if TYPE_CHECKING:  # pragma: no cover
    import isodate  # loaded with the first duration parsed (framework.temporal.durations)

#: A window size or a lookback: a fixed length, or calendar months and years.
Step: TypeAlias = "timedelta | isodate.Duration"

#: More windows than this is a mistake (a one-second step over decades, say), not a sync.
MAX_WINDOWS = 1_000_000

_ZERO = timedelta(0)


def describe_duration(duration: Step) -> str:
    """``duration`` in ISO 8601 (``P1D``), for messages."""
    import isodate

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


# -- clamping: windows aligned on whole days, weeks or months --------------------------------------------------

_DAY = timedelta(days=1)
_WEEKDAYS = ("MONDAY", "TUESDAY", "WEDNESDAY", "THURSDAY", "FRIDAY", "SATURDAY", "SUNDAY")


def _midnight(instant: datetime) -> datetime:
    return instant.replace(hour=0, minute=0, second=0, microsecond=0)


class Clamp(Struct, frozen=True):
    """A DatetimeBasedCursor's ``clamping``: ``DAY``, ``WEEK`` (weeks starting on ``weekday``, 0 = Monday)
    or ``MONTH``, with airbyte-cdk's rounding (facts matched, quirks included):

    * :meth:`up` rounds to the start of the next period, except that an instant
      on the period's first day (a Monday for Monday weeks, the 1st for months)
      goes to that day's midnight; for ``DAY`` it is a plain ceiling;
    * :meth:`down` rounds to the start of the period;
    * the sync ends at ``down(end) - granularity``: the last whole period. The
      granularity is the cursor's, else a second for ``DAY`` and a day for the others.
    """

    target: str
    weekday: int = 0

    def up(self, instant: datetime) -> datetime:
        day = _midnight(instant)
        if self.target == "DAY":
            return day if day == instant else day + _DAY
        if self.target == "WEEK":
            ahead = (self.weekday - instant.weekday()) % 7
            return day + timedelta(days=ahead)
        if instant.day == 1:
            return day
        return day.replace(year=day.year + (day.month == 12), month=day.month % 12 + 1, day=1)

    def down(self, instant: datetime) -> datetime:
        day = _midnight(instant)
        if self.target == "DAY":
            return day
        if self.target == "WEEK":
            return day - timedelta(days=(instant.weekday() - self.weekday) % 7)
        return day.replace(day=1)

    def end(self, end: datetime, granularity: Step | None) -> datetime:
        gap = granularity if granularity is not None else (timedelta(seconds=1) if self.target == "DAY" else _DAY)
        return shift(self.down(end), gap, -1) or end


def clamp_of(target: str, weekday: str | None = None) -> Clamp:
    """The :class:`Clamp` of a rendered ``target`` (``DAY``, ``WEEK``, ``MONTH``); :class:`ConfigError` otherwise."""
    if target not in ("DAY", "WEEK", "MONTH"):
        raise ConfigError(f"clamping `target` rendered {target!r}; it must be DAY, WEEK or MONTH")
    if target != "WEEK":
        return Clamp(target)
    if weekday not in _WEEKDAYS:
        raise ConfigError(f"a WEEK clamping needs `target_details: {{weekday: MONDAY}}` (MONDAY to SUNDAY), "
                          f"not {weekday!r}")
    return Clamp(target, _WEEKDAYS.index(weekday))


def clamped_windows(start: datetime, end: datetime, step: Step | None, granularity: Step | None,
                    clamp: Clamp, *, max_windows: int = MAX_WINDOWS) -> list[tuple[datetime, datetime]]:
    """The windows of ``start .. end`` aligned by ``clamp``, as airbyte-cdk cuts them.

    ``end`` is already the clamped end (:meth:`Clamp.end`). The range starts at
    ``clamp.up(start)``; each window runs from its start to ``clamp.up(start + step)``
    less one granularity, the last one to ``end`` itself.
    """
    if start > end or (start == end and granularity is None):
        return []
    lower = clamp.up(start)
    if lower > end:
        return []
    if step is None or (shift(lower, step) or end) >= end:
        return [(lower, end if granularity is not None else clamp.up(end))]
    windows: list[tuple[datetime, datetime]] = []
    current = lower
    while len(windows) < max_windows:
        reach = shift(current, step)
        upper = end if reach is None else min(reach, end)
        clamped = upper if upper == end else clamp.up(upper)
        last = upper >= end or clamped == end
        low = clamp.up(current)
        if low >= clamped:
            break
        high = shift(clamped, granularity, -1) if granularity is not None and not last else clamped
        windows.append((low, high or clamped))
        if last:
            return windows
        current = clamped
    if len(windows) >= max_windows:
        raise _too_many(start, end, step, max_windows)
    return windows
