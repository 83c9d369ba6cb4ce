"""Single JSON values to the values of the typed columns, or :class:`Unfit`.

Each converter takes a JSON value that is not ``None`` and returns what the
Arrow column holds, or raises :class:`Unfit` (:class:`TooLarge` for an
integer outside 64 bits), which the caller turns into a null and a change.
The *lenient* converters follow Airbyte's destinations (its value coercer):

==================== ==================================================================
type                 accepted
==================== ==================================================================
string               a string; any other value becomes its JSON text (``1`` -> ``"1"``,
                     ``true`` -> ``"true"``, objects and arrays as JSON)
boolean              ``true`` and ``false`` only
integer              an integer in signed 64 bits; a number without a fraction
                     (``1.0``); the text of an integer (``"12"``, ``"+7"``, ``"007"``)
number               a number; the text of a decimal number (``"1.5"``, ``"1e3"``)
date                 ISO 8601 text: a date, or a date-time whose date is taken as written;
                     also ``YYYY/MM/DD`` and ``YYYY.MM.DD``
time with timezone   ISO 8601 text of a time of day; with an offset it is converted to
                     UTC (``"04:00:00+05:30"`` -> 22:30 UTC), without one taken as UTC
time without tz      the same, but an offset is ignored: the wall-clock time is kept
timestamp with tz    ISO 8601 text of a date-time (or a date: midnight); with an offset
                     converted to UTC, without one taken as UTC
timestamp without tz the same, but an offset is ignored: the wall-clock time is kept
==================== ==================================================================

Dates are days since 1970-01-01, times microseconds since midnight,
timestamps microseconds since 1970-01-01T00:00:00Z. Booleans are never
numbers. The *strict* converters (:data:`STRICT`) are what a union member
accepts: only values whose JSON type is the member's (no text for numbers, no
JSON text for strings).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import date, datetime, time, timedelta, timezone
from typing import Any

import orjson

import framework.typed.types as t

SERIALIZATION_ERROR = "DESTINATION_SERIALIZATION_ERROR"
FIELD_SIZE_LIMITATION = "DESTINATION_FIELD_SIZE_LIMITATION"

INT64_MIN, INT64_MAX = -(2 ** 63), 2 ** 63 - 1
EPOCH = datetime(1970, 1, 1)
EPOCH_UTC = datetime(1970, 1, 1, tzinfo=timezone.utc)
EPOCH_ORDINAL = EPOCH.toordinal()
MICROSECOND = timedelta(microseconds=1)
DAY_MICROS = 86_400_000_000

_INTEGER_TEXT = re.compile(r"[+-]?[0-9]+")
_DECIMAL_TEXT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
# What Python's fromisoformat refuses but Airbyte reads: `/` or `.` between the parts of a date.
_SLASHED = re.compile(
    r"(\d{4})[/.](\d{2})[/.](\d{2})"
    r"(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?)?"
    r"(Z|[+-]\d{2}(?::?\d{2})?)?"
)


class Unfit(Exception):
    """A value does not fit its type; it is nulled with this ``reason``."""

    reason = SERIALIZATION_ERROR


class TooLarge(Unfit):
    """A number is outside what the column's type holds."""

    reason = FIELD_SIZE_LIMITATION


def reason_of(error: BaseException) -> str:
    """The change reason for any error a converter raised."""
    return error.reason if isinstance(error, Unfit) else SERIALIZATION_ERROR


# ------------------------------------------------------------------ JSON text


def json_text(value: Any) -> str:
    """Compact JSON text of a JSON value, keys in the order given."""
    try:
        return orjson.dumps(value).decode()
    except TypeError:  # integers beyond 64 bits, which orjson refuses
        try:
            return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        except (TypeError, ValueError) as error:
            raise Unfit(str(error)) from None


def finite_json(value: Any) -> str:
    """:func:`json_text` of a column's value; one holding NaN or Infinity (Airbyte's reader takes them, JSON
    text has none, and orjson would write them as null without a word) does not fit: nulled with a change."""
    text = json_text(value)
    if "null" in text and _not_finite(value):
        raise Unfit("holds NaN or Infinity, which JSON text cannot carry")
    return text


def _not_finite(value: Any) -> bool:
    if value.__class__ is float:
        return value != value or value in (_INF, _NEG_INF)
    if value.__class__ is dict:
        return any(_not_finite(item) for item in value.values())
    if value.__class__ is list:
        return any(_not_finite(item) for item in value)
    return False


def non_finite_fields(value: Any, path: str = "") -> list[str]:
    """Where ``value`` (a record) holds NaN or Infinity: ``a.b``, ``items[2]`` (JSON text writes them as null)."""
    if value.__class__ is float:
        return [path] if value != value or value in (_INF, _NEG_INF) else []
    found: list[str] = []
    if value.__class__ is dict:
        for key, item in value.items():
            found.extend(non_finite_fields(item, f"{path}.{key}" if path else str(key)))
    elif value.__class__ is list:
        for index, item in enumerate(value):
            found.extend(non_finite_fields(item, f"{path}[{index}]"))
    return found


def any_json(value: Any) -> str:
    return finite_json(value)


def object_json(value: Any) -> str:
    if value.__class__ is not dict:
        raise Unfit("not an object")
    return finite_json(value)


def array_json(value: Any) -> str:
    if value.__class__ is not list:
        raise Unfit("not an array")
    return finite_json(value)


# ------------------------------------------------------------------ scalars


def _check_text(value: str) -> str:
    value.encode("utf-8")  # a lone surrogate cannot be written as UTF-8
    return value


def to_string(value: Any) -> str:
    if value.__class__ is str:
        try:
            return _check_text(value)
        except UnicodeEncodeError:
            raise Unfit("not valid Unicode") from None
    return finite_json(value)


def strict_string(value: Any) -> str:
    if value.__class__ is not str:
        raise Unfit("not a string")
    return to_string(value)


def to_boolean(value: Any) -> bool:
    if value.__class__ is not bool:
        raise Unfit("not a boolean")
    return value


def _in_range(number: int) -> int:
    if INT64_MIN <= number <= INT64_MAX:
        return number
    raise TooLarge("outside 64 bits")


def strict_integer(value: Any) -> int:
    kind = value.__class__
    if kind is int:
        return _in_range(value)
    if kind is float and value.is_integer():  # False for nan and infinities
        return _in_range(int(value))
    raise Unfit("not an integer")


def to_integer(value: Any) -> int:
    if value.__class__ is str and _INTEGER_TEXT.fullmatch(value):
        return _in_range(int(value))
    return strict_integer(value)


def strict_number(value: Any) -> float:
    kind = value.__class__
    if kind is float:
        if value != value or value in (_INF, _NEG_INF):  # NaN, Infinity: Airbyte's reader takes them, JSON has none
            raise Unfit("not a finite number (NaN or Infinity)")
        return value
    if kind is int:
        try:
            return float(value)
        except OverflowError:
            raise TooLarge("outside the range of a double") from None
    raise Unfit("not a number")


_INF, _NEG_INF = float("inf"), float("-inf")


def to_number(value: Any) -> float:
    if value.__class__ is str and _DECIMAL_TEXT.fullmatch(value):
        number = float(value)
        if number in (float("inf"), float("-inf")):
            raise TooLarge("outside the range of a double")
        return number
    return strict_number(value)


# ------------------------------------------------------------------ dates and times


def _slashed(value: str) -> datetime:
    match = _SLASHED.fullmatch(value)
    if match is None:
        raise Unfit("not an ISO 8601 date")
    year, month, day, hour, minute, second, fraction, offset = match.groups()
    zone = None
    if offset == "Z":
        zone = timezone.utc
    elif offset:
        digits = offset[1:].replace(":", "")
        delta = timedelta(hours=int(digits[:2]), minutes=int(digits[2:] or 0))
        zone = timezone(-delta if offset[0] == "-" else delta)
    return datetime(int(year), int(month), int(day), int(hour or 0), int(minute or 0), int(second or 0),
                    int((fraction or "0")[:6].ljust(6, "0")), zone)


def parse_datetime(value: Any) -> datetime:
    """An ISO 8601 date-time (or date) text as a datetime, aware when it has an offset."""
    if value.__class__ is not str:
        raise Unfit("not a string")
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return _slashed(value)


def to_date(value: Any) -> int:
    if value.__class__ is not str:
        raise Unfit("not a string")
    try:
        return date.fromisoformat(value).toordinal() - EPOCH_ORDINAL
    except ValueError:
        return parse_datetime(value).toordinal() - EPOCH_ORDINAL


def timestamp_utc(value: Any) -> int:
    parsed = parse_datetime(value)
    return (parsed - (EPOCH if parsed.tzinfo is None else EPOCH_UTC)) // MICROSECOND


def timestamp_wall(value: Any) -> int:
    parsed = parse_datetime(value)
    if parsed.tzinfo is not None:
        parsed = parsed.replace(tzinfo=None)
    return (parsed - EPOCH) // MICROSECOND


def _parse_time(value: Any) -> time:
    if value.__class__ is not str:
        raise Unfit("not a string")
    try:
        return time.fromisoformat(value)
    except ValueError:
        raise Unfit("not an ISO 8601 time") from None


def _wall_micros(parsed: time) -> int:
    return ((parsed.hour * 60 + parsed.minute) * 60 + parsed.second) * 1_000_000 + parsed.microsecond


def time_utc(value: Any) -> int:
    parsed = _parse_time(value)
    offset = parsed.utcoffset()
    micros = _wall_micros(parsed)
    return micros if offset is None else (micros - offset // MICROSECOND) % DAY_MICROS


def time_wall(value: Any) -> int:
    return _wall_micros(_parse_time(value))


Converter = Callable[[Any], Any]

#: What a field of each scalar type accepts (see the module docstring).
LENIENT: dict[type, Converter] = {
    t.String: to_string, t.Boolean: to_boolean, t.Integer: to_integer, t.Number: to_number,
    t.Date: to_date, t.TimeWithTz: time_utc, t.TimeWithoutTz: time_wall,
    t.TimestampWithTz: timestamp_utc, t.TimestampWithoutTz: timestamp_wall,
}

#: What a union member of each scalar type accepts: only its own JSON type.
STRICT: dict[type, Converter] = {
    **LENIENT, t.String: strict_string, t.Integer: strict_integer, t.Number: strict_number,
}


def unknown_converter(kind: str) -> Converter:
    """JSON text of the values an :class:`~framework.typed.types.Unknown` of ``kind`` accepts."""
    return {"object": object_json, "array": array_json}.get(kind, any_json)
