"""The clock is injected, never read from a hidden ``datetime.now()``.

Components that need the current time take a :class:`Clock`. Production code
uses :class:`SystemClock`; tests use :class:`FixedClock` to make time a value.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Protocol


class Clock(Protocol):
    """Anything that can tell the current instant as an aware UTC datetime."""

    def now(self) -> datetime: ...


class SystemClock:
    """The real wall clock, in UTC."""

    def now(self) -> datetime:
        return datetime.now(timezone.utc)


class FixedClock:
    """A clock that stands still until told to move: deterministic tests."""

    def __init__(self, instant: datetime):
        if instant.tzinfo is None:
            instant = instant.replace(tzinfo=timezone.utc)
        self._instant = instant.astimezone(timezone.utc)

    def now(self) -> datetime:
        return self._instant

    def advance(self, delta: timedelta) -> None:
        self._instant += delta
