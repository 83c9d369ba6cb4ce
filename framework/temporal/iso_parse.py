"""A fast path for reading cursor values in the common ISO 8601 formats.

``strptime`` costs about ten microseconds a value, which dominates reading a
record's cursor. For the handful of formats most manifests use, a value whose
shape fits the format exactly is read with ``datetime.fromisoformat`` instead
(well under a microsecond); anything else, including values that would need
``strptime``'s leniency (one-digit months, say), goes to
:func:`framework.temporal.datetime_formats.parse_datetime`, so the results never differ.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from framework.temporal.datetime_formats import parse_datetime

__all__ = ["FAST_FORMATS", "parser_of"]

_DATE = r"\d{4}-\d{2}-\d{2}"
_TIME = r"\d{2}:\d{2}:\d{2}"
_FRACTION = r"\.\d{1,6}"
_OFFSET = r"(?:Z|[+-]\d{2}:?\d{2})"

#: Format -> the exact shape of the values the fast path reads.
FAST_FORMATS: dict[str, str] = {
    "%Y-%m-%d": _DATE,
    "%Y-%m-%dT%H:%M:%S": _DATE + "T" + _TIME,
    "%Y-%m-%d %H:%M:%S": _DATE + " " + _TIME,
    "%Y-%m-%dT%H:%M:%SZ": _DATE + "T" + _TIME + "Z",
    "%Y-%m-%dT%H:%M:%S.%f": _DATE + "T" + _TIME + _FRACTION,
    "%Y-%m-%dT%H:%M:%S.%fZ": _DATE + "T" + _TIME + _FRACTION + "Z",
    "%Y-%m-%dT%H:%M:%S.%_msZ": _DATE + "T" + _TIME + _FRACTION + "Z",
    "%Y-%m-%dT%H:%M:%S%z": _DATE + "T" + _TIME + _OFFSET,
    "%Y-%m-%dT%H:%M:%S.%f%z": _DATE + "T" + _TIME + _FRACTION + _OFFSET,
    "%Y-%m-%d %H:%M:%S%z": _DATE + " " + _TIME + _OFFSET,
    "%Y-%m-%dT%H:%M:%S+00:00": _DATE + "T" + _TIME + r"\+00:00",
    "%Y-%m-%dT%H:%M:%S.%f+00:00": _DATE + "T" + _TIME + _FRACTION + r"\+00:00",
}

_UTC = timezone.utc
_SHAPES = {fmt: re.compile(shape, re.ASCII) for fmt, shape in FAST_FORMATS.items()}


def parser_of(fmt: str) -> Callable[[Any], datetime]:
    """A function reading a value in ``fmt`` into an aware UTC datetime, exactly like
    ``parse_datetime(value, fmt)`` (same results, same :class:`DatetimeFormatError`)."""
    shape = _SHAPES.get(fmt)
    if shape is None:
        return lambda value: parse_datetime(value, fmt)
    fits = shape.fullmatch

    def parse(value: Any) -> datetime:
        if type(value) is str and fits(value):
            try:
                found = datetime.fromisoformat(value)
            except ValueError:  # a day 32 or an hour 25: let parse_datetime say so
                return parse_datetime(value, fmt)
            return found.replace(tzinfo=_UTC) if found.tzinfo is None else found.astimezone(_UTC)
        return parse_datetime(value, fmt)

    return parse
