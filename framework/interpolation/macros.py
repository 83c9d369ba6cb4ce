"""Functions templates can call (``{{ now_utc() }}``), bound to an injected clock.

Every macro that needs the current time reads it from the :class:`Clock` given
to :func:`build_macros`, never from the system directly, so a test with a
:class:`~framework.temporal.clock.FixedClock` is deterministic.
"""

from __future__ import annotations

import builtins
import math
import re
import uuid
from collections.abc import Callable
from datetime import date, datetime, time, timedelta, timezone
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import isodate
from dateutil import parser as dateutil_parser

from framework.temporal import datetime_formats
from framework.temporal.clock import Clock
from framework.temporal.durations import parse_duration

__all__ = ["DEFAULT_DAY_DELTA_FORMAT", "MACROS", "build_macros", "to_datetime"]

DEFAULT_DAY_DELTA_FORMAT = "%Y-%m-%dT%H:%M:%S.%f%z"

#: Names of the macros every template can call.
MACROS: tuple[str, ...] = (
    "now_utc",
    "today_utc",
    "today_with_timezone",
    "timestamp",
    "max",
    "min",
    "day_delta",
    "duration",
    "format_datetime",
    "str_to_datetime",
    "generate_uuid",
)

_EPOCH_TEXT = re.compile(r"-?\d+")


def _utc(dt: datetime) -> datetime:
    if dt.tzinfo is None or dt.utcoffset() is None:
        return dt.replace(tzinfo=timezone.utc)
    return dt.astimezone(timezone.utc)


def _from_epoch_seconds(value: float) -> datetime:
    if isinstance(value, int):
        return datetime_formats.EPOCH + timedelta(seconds=value)
    return datetime.fromtimestamp(value, tz=timezone.utc)


def to_datetime(value: Any, clock: Clock) -> datetime:
    """Read a datetime, a date, epoch seconds or datetime text as an aware UTC datetime.

    Text made only of digits (optionally signed) is epoch seconds; any other text
    is read by ``dateutil``, with missing parts taken from today's date on
    ``clock``. Naive results are UTC.
    """
    if isinstance(value, datetime):
        return _utc(value)
    if isinstance(value, date):
        return datetime.combine(value, time(), tzinfo=timezone.utc)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return _from_epoch_seconds(value)
    if not isinstance(value, str):
        raise TypeError(f"expected a datetime or datetime text, got {type(value).__name__}")
    text = value.strip()
    if _EPOCH_TEXT.fullmatch(text):
        return _from_epoch_seconds(int(text))
    today = clock.now().replace(hour=0, minute=0, second=0, microsecond=0, tzinfo=None)
    try:
        return _utc(dateutil_parser.parse(text, default=today))
    except (ValueError, OverflowError) as exc:
        raise ValueError(f"cannot read {value!r} as a datetime") from exc


def build_macros(clock: Clock) -> dict[str, Callable[..., Any]]:
    """The macro functions, with every notion of "now" taken from ``clock``."""

    def now_utc() -> datetime:
        """The current instant, an aware UTC datetime."""
        return _utc(clock.now())

    def today_utc() -> date:
        """Today's date in UTC."""
        return now_utc().date()

    def today_with_timezone(timezone_name: str) -> date:
        """Today's date in an IANA time zone such as ``"Pacific/Tarawa"``."""
        try:
            zone = ZoneInfo(str(timezone_name))
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise ValueError(f"unknown time zone {timezone_name!r}") from exc
        return now_utc().astimezone(zone).date()

    def timestamp(dt: Any) -> int:
        """Whole epoch seconds of a number (truncated), a datetime, or datetime text."""
        if isinstance(dt, (int, float)) and not isinstance(dt, bool):
            if not math.isfinite(dt):
                raise ValueError(f"{dt!r} is not a finite number")
            return int(dt)
        return int(to_datetime(dt, clock).timestamp())

    def max(*args: Any) -> Any:  # noqa: A001 - the manifest language names it so
        """The largest argument, or the largest item of one iterable argument."""
        return builtins.max(*args)

    def min(*args: Any) -> Any:  # noqa: A001
        """The smallest argument, or the smallest item of one iterable argument."""
        return builtins.min(*args)

    def day_delta(num_days: float, format: str = DEFAULT_DAY_DELTA_FORMAT) -> str:  # noqa: A002
        """Now plus ``num_days`` days (may be negative or fractional), formatted."""
        moved = now_utc() + timedelta(days=num_days)
        return str(datetime_formats.format_datetime(moved, format))

    def duration(text: str) -> timedelta | isodate.Duration:
        """An ISO 8601 duration (``P1D``); months and years stay calendar-aware."""
        return parse_duration(text)

    def format_datetime(dt: Any, format: str, input_format: str | None = None) -> str:  # noqa: A002
        """Re-format ``dt`` (a datetime, date, epoch seconds or text) with ``format``.

        With ``input_format``, text and numbers are parsed with that format first
        (Airbyte's extras such as ``%ms`` included); otherwise text is read as in
        :func:`str_to_datetime` and numbers as epoch seconds. Always returns text.
        """
        if input_format is not None and not isinstance(dt, (datetime, date)):
            instant = datetime_formats.parse_datetime(dt, input_format)
        else:
            instant = to_datetime(dt, clock)
        return str(datetime_formats.format_datetime(instant, format))

    def str_to_datetime(s: Any) -> datetime:
        """Datetime text (or epoch seconds as digits) as an aware UTC datetime."""
        return to_datetime(s, clock)

    def generate_uuid() -> str:
        """A random UUID (version 4) as text."""
        return str(uuid.uuid4())

    macros: dict[str, Callable[..., Any]] = {
        "now_utc": now_utc,
        "today_utc": today_utc,
        "today_with_timezone": today_with_timezone,
        "timestamp": timestamp,
        "max": max,
        "min": min,
        "day_delta": day_delta,
        "duration": duration,
        "format_datetime": format_datetime,
        "str_to_datetime": str_to_datetime,
        "generate_uuid": generate_uuid,
    }
    assert tuple(macros) == MACROS
    return macros
