"""ISO 8601 durations (``P1D``, ``PT1H``, ``P1M``) as used by manifests.

Parsing is delegated to :mod:`isodate`, so what is accepted matches Airbyte's
CDK. Durations made only of weeks, days and time parts come back as
:class:`datetime.timedelta`; any duration with months or years stays an
:class:`isodate.Duration`, which adds calendar months (``Jan 31 + P1M`` is the
end of February), not a fixed number of days.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import TYPE_CHECKING

from framework.errors import DurationError

if TYPE_CHECKING:
    import isodate

__all__ = ["duration_problem", "is_duration", "parse_duration"]

_EXAMPLES = "write it like `P1D` (one day) or `PT1H` (one hour)"

# Shorthands people write instead of ISO 8601, mapped to (designator, in time part).
_UNITS: dict[str, tuple[str, bool]] = {
    "s": ("S", True), "sec": ("S", True), "secs": ("S", True), "second": ("S", True),
    "seconds": ("S", True),
    "m": ("M", True), "min": ("M", True), "mins": ("M", True), "minute": ("M", True),
    "minutes": ("M", True),
    "h": ("H", True), "hr": ("H", True), "hrs": ("H", True), "hour": ("H", True),
    "hours": ("H", True),
    "d": ("D", False), "day": ("D", False), "days": ("D", False),
    "w": ("W", False), "week": ("W", False), "weeks": ("W", False),
    "mo": ("M", False), "month": ("M", False), "months": ("M", False),
    "y": ("Y", False), "yr": ("Y", False), "year": ("Y", False), "years": ("Y", False),
}
_SHORTHAND = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([A-Za-z]+)\s*$")
_TIME_DESIGNATORS = "HS"


def _suggestion(text: str) -> str | None:
    """A corrected ISO 8601 spelling of ``text`` when the intent is clear."""
    match = _SHORTHAND.match(text)
    if match and match.group(2).lower() in _UNITS:
        designator, in_time = _UNITS[match.group(2).lower()]
        return f"P{'T' if in_time else ''}{match.group(1)}{designator}"
    stripped = text.strip()
    if stripped != text or stripped.upper() != stripped:
        candidate = stripped.upper()
        if _parses(candidate):
            return candidate
    # A time unit before the T, or a date unit after it.
    misplaced = re.fullmatch(r"P(\d+(?:\.\d+)?)([HS])", stripped)
    if misplaced:
        return f"PT{misplaced.group(1)}{misplaced.group(2)}"
    misplaced = re.fullmatch(r"PT(\d+(?:\.\d+)?)([DWY])", stripped)
    if misplaced:
        return f"P{misplaced.group(1)}{misplaced.group(2)}"
    return None


def _parses(text: str) -> bool:
    import isodate  # here, not at import: a manifest without durations never needs it

    try:
        isodate.parse_duration(text)
    except (isodate.ISO8601Error, ValueError, TypeError):
        return False
    return True


def _message(text: object) -> str:
    if not isinstance(text, str):
        return f"{text!r} is not an ISO 8601 duration string; {_EXAMPLES}"
    if not text.strip():
        return f"the duration is empty; {_EXAMPLES}"
    suggestion = _suggestion(text)
    if suggestion is not None:
        return (
            f"`{text}` is not an ISO 8601 duration; did you mean `{suggestion}`? "
            "ISO 8601 durations are written like `P1D` (one day) or `PT1H` (one hour)"
        )
    return f"`{text}` is not an ISO 8601 duration; {_EXAMPLES}"


def parse_duration(text: str) -> timedelta | isodate.Duration:
    """Parse an ISO 8601 duration, raising :class:`DurationError` with a suggested fix."""
    if not isinstance(text, str) or not text.strip():
        raise DurationError(_message(text))
    import isodate

    try:
        return isodate.parse_duration(text)
    except (isodate.ISO8601Error, ValueError, TypeError):
        raise DurationError(_message(text)) from None


def duration_problem(text: object) -> str | None:
    """``None`` when ``text`` is a valid duration, otherwise the message explaining why not."""
    if isinstance(text, str) and text.strip() and _parses(text):
        return None
    return _message(text)


def is_duration(text: object) -> bool:
    """Whether ``text`` is a string holding a valid ISO 8601 duration."""
    return duration_problem(text) is None
