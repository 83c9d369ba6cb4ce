"""Datetime formats: Python's strftime/strptime directives plus Airbyte's extras.

A *format* is either a plain strftime/strptime pattern (``%Y-%m-%dT%H:%M:%S%z``)
or one of the whole-format specials that describe a number since the Unix
epoch. The specials only have their special meaning when they are the entire
format string:

==================== ========================== ===============================
format               ``format_datetime`` gives  ``parse_datetime`` accepts
==================== ========================== ===============================
``%s``               ``int`` epoch seconds      an integer (int, text, or a
                                                float that is truncated)
``%ms``              ``int`` epoch milliseconds an integer
``%epoch_microseconds`` ``int`` epoch µs        an integer
``%s_as_float``      ``float`` epoch seconds    any number
==================== ========================== ===============================

Every other format returns ``str``; a caller that always wants text can wrap
the result in ``str()``. Epoch values are floored (never rounded) to their unit.

Two directives are understood *inside* a larger format as well:

* ``%_ms`` - milliseconds as exactly three digits when formatting (the
  microseconds are truncated, ``.123456`` -> ``123``); when parsing it reads like
  ``%f`` (one to six fractional digits), which is how Airbyte's CDK treats it.
* ``%s`` - epoch seconds, always computed in UTC (glibc would use local time).
* ``%:z`` - the UTC offset with a colon (``+05:30``), on every Python version.

``%Y`` (and ``%G``) is always written with at least four digits, so that years
before 1000 survive a round trip through ``strptime``.

Parsing always returns an aware datetime in UTC: naive results are taken to be
UTC already, aware ones are converted, so values compare as instants.
Formatting a naive datetime treats it as UTC.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta, timezone
from functools import lru_cache
from typing import Literal

from msgspec import Struct

from framework.errors import DatetimeFormatError

__all__ = [
    "EPOCH",
    "FormatProblem",
    "STANDARD_DIRECTIVES",
    "WHOLE_FORMAT_SPECIALS",
    "INLINE_SPECIALS",
    "format_datetime",
    "format_problems",
    "parse_datetime",
    "parse_with_formats",
]

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)

#: Single-letter directives documented for Python's strftime/strptime (plus ``%%``).
STANDARD_DIRECTIVES: frozenset[str] = frozenset("aAwdbBmyYHIpMSfzZjUWcxX%GuV")

#: Formats that are special only when they are the entire format string.
WHOLE_FORMAT_SPECIALS: tuple[str, ...] = ("%s", "%ms", "%s_as_float", "%epoch_microseconds")

#: Directives with a framework-defined meaning anywhere inside a format.
INLINE_SPECIALS: tuple[str, ...] = ("%_ms", "%:z", "%s")

DatetimeValue = str | int | float
FormattedValue = str | int | float

# Directives that glibc's strftime knows but Python's strptime rejects, with the
# portable spelling to use instead.
_PLATFORM_ONLY: dict[str, str] = {
    "e": "%d",
    "k": "%H",
    "l": "%I",
    "P": "%p",
    "h": "%b",
    "F": "%Y-%m-%d",
    "T": "%H:%M:%S",
    "D": "%m/%d/%y",
    "R": "%H:%M",
    "r": "%I:%M:%S %p",
    "C": "%Y",
    "g": "%G",
    "n": "a newline character",
    "t": "a tab character",
    "L": "%_ms",
    "N": "%f",
    "Q": "%ms",
}

_GNU_FLAGS = "-_0^#"


class FormatProblem(Struct, frozen=True):
    """Something wrong with a datetime format string.

    ``offset`` is the 0-based index in the format where the directive starts,
    ``directive`` the offending text (``%Q``), ``message`` a sentence saying what is
    wrong and ``fix`` a suggested replacement when there is an obvious one.
    ``severity`` is ``"warning"`` for directives that only work on some platforms.
    """

    offset: int
    directive: str
    message: str
    fix: str | None = None
    severity: Literal["error", "warning"] = "error"


class _Token(Struct, frozen=True):
    """One piece of a format: literal ``text`` or a ``directive`` code (no ``%``)."""

    kind: Literal["text", "directive"]
    value: str
    offset: int


def _suggest_unknown(code: str) -> str | None:
    """Best replacement for an unknown single-character directive, if one is clear."""
    if code in _PLATFORM_ONLY:
        return _PLATFORM_ONLY[code]
    swapped = code.swapcase()
    if swapped in STANDARD_DIRECTIVES and swapped != code:
        return "%" + swapped
    return None


def _suggest_word(word: str) -> str | None:
    """did-you-mean for a multi-character token such as ``%epoch_ms``."""
    candidates = list(WHOLE_FORMAT_SPECIALS) + list(INLINE_SPECIALS)
    matches = difflib.get_close_matches(word, candidates, n=1, cutoff=0.6)
    return matches[0] if matches else None


@lru_cache(maxsize=512)
def _tokenize(fmt: str) -> tuple[tuple[_Token, ...], tuple[FormatProblem, ...]]:
    tokens: list[_Token] = []
    problems: list[FormatProblem] = []
    text_start = 0
    i = 0
    n = len(fmt)

    def flush_text(end: int) -> None:
        if end > text_start:
            tokens.append(_Token("text", fmt[text_start:end], text_start))

    while i < n:
        if fmt[i] != "%":
            i += 1
            continue
        flush_text(i)
        if i + 1 >= n:
            problems.append(
                FormatProblem(
                    i, "%", "lone `%` at the end of the format", "write `%%` for a literal percent sign"
                )
            )
            i += 1
            text_start = i
            continue
        rest = fmt[i:]
        misplaced = next(
            (s for s in ("%s_as_float", "%epoch_microseconds") if rest.startswith(s)), None
        )
        if rest.startswith("%_ms"):
            tokens.append(_Token("directive", "_ms", i))
            i += 4
        elif rest.startswith("%:z"):
            tokens.append(_Token("directive", ":z", i))
            i += 3
        elif misplaced is not None:
            problems.append(
                FormatProblem(
                    i,
                    misplaced,
                    f"`{misplaced}` is only valid as the whole format, not inside a larger one",
                    f"use `{misplaced}` on its own",
                )
            )
            i += len(misplaced)
        else:
            code = fmt[i + 1]
            if code in STANDARD_DIRECTIVES or code == "s":
                tokens.append(_Token("directive", code, i))
                i += 2
            elif code in _GNU_FLAGS and i + 2 < n and fmt[i + 2] in STANDARD_DIRECTIVES:
                directive = fmt[i : i + 3]
                problems.append(
                    FormatProblem(
                        i,
                        directive,
                        f"`{directive}` uses a glibc-only padding flag; it formats on Linux "
                        "but cannot be parsed",
                        f"use `%{fmt[i + 2]}`",
                        severity="warning",
                    )
                )
                tokens.append(_Token("directive", directive[1:], i))
                i += 3
            else:
                directive = "%" + code
                word = re.match(r"%(?::[A-Za-z]|[A-Za-z_]+)", rest)
                suggestion = None
                if word is not None and len(word.group()) > 2:
                    suggestion = _suggest_word(word.group())
                    if suggestion is not None:
                        directive = word.group()
                if suggestion is None:
                    suggestion = _suggest_unknown(code)
                message = f"unknown directive `{directive}`"
                fix = None
                if suggestion is not None:
                    if suggestion.startswith("%"):
                        message += f"; did you mean `{suggestion}`?"
                        fix = f"replace `{directive}` with `{suggestion}`"
                    else:
                        message += f"; write {suggestion} literally"
                        fix = f"replace `{directive}` with {suggestion}"
                problems.append(FormatProblem(i, directive, message, fix))
                i += 2
        text_start = i
    flush_text(n)
    return tuple(tokens), tuple(problems)


@lru_cache(maxsize=512)
def _problems(fmt: str) -> tuple[FormatProblem, ...]:
    if fmt in WHOLE_FORMAT_SPECIALS:
        return ()
    if fmt == "":
        return (FormatProblem(0, "", "the format is empty", "write a format such as `%Y-%m-%d`"),)
    return _tokenize(fmt)[1]


def format_problems(fmt: str) -> list[FormatProblem]:
    """Statically check a format string; an empty list means it is usable."""
    return list(_problems(fmt))


def _raise_on_errors(fmt: str) -> None:
    errors = [p for p in _problems(fmt) if p.severity == "error"]
    if errors:
        detail = "; ".join(f"{p.message} (at offset {p.offset})" for p in errors)
        raise DatetimeFormatError(f"invalid datetime format {fmt!r}: {detail}")


# ---------------------------------------------------------------------------
# Formatting


def _as_utc_aware(dt: datetime) -> datetime:
    return dt.replace(tzinfo=timezone.utc) if dt.tzinfo is None else dt


def _epoch_units(dt: datetime, unit: timedelta) -> int:
    return (_as_utc_aware(dt) - EPOCH) // unit


def _colon_offset(dt: datetime) -> str:
    offset = dt.utcoffset()
    if offset is None:
        return ""
    sign = "-" if offset < timedelta(0) else "+"
    offset = abs(offset)
    hours, remainder = divmod(offset, timedelta(hours=1))
    minutes, remainder = divmod(remainder, timedelta(minutes=1))
    text = f"{sign}{hours:02d}:{minutes:02d}"
    if remainder:
        seconds = remainder.seconds
        text += f":{seconds:02d}"
        if remainder.microseconds:
            text += f".{remainder.microseconds:06d}"
    return text


_Segment = str | Callable[[datetime], str]

_CUSTOM_FORMATTERS: dict[str, Callable[[datetime], str]] = {
    "Y": lambda dt: f"{dt.year:04d}",
    "G": lambda dt: f"{dt.isocalendar()[0]:04d}",
    "_ms": lambda dt: f"{dt.microsecond // 1000:03d}",
    ":z": _colon_offset,
    "s": lambda dt: str(_epoch_units(dt, timedelta(seconds=1))),
}


@lru_cache(maxsize=512)
def _format_plan(fmt: str) -> tuple[_Segment, ...]:
    """Split a format into strftime chunks and framework-computed pieces."""
    tokens, _ = _tokenize(fmt)
    plan: list[_Segment] = []
    chunk = ""
    for token in tokens:
        if token.kind == "directive" and token.value in _CUSTOM_FORMATTERS:
            if chunk:
                plan.append(chunk)
                chunk = ""
            plan.append(_CUSTOM_FORMATTERS[token.value])
        elif token.kind == "directive":
            chunk += "%" + token.value
        else:
            chunk += token.value
    if chunk:
        plan.append(chunk)
    return tuple(plan)


def format_datetime(dt: datetime, fmt: str) -> FormattedValue:
    """Format ``dt`` with ``fmt``.

    Returns ``int`` for ``%s``, ``%ms`` and ``%epoch_microseconds``, ``float`` for
    ``%s_as_float`` and ``str`` for every other format. Naive datetimes are UTC.
    Raises :class:`DatetimeFormatError` for an invalid format.
    """
    if not isinstance(dt, datetime):
        raise DatetimeFormatError(f"cannot format {dt!r} with {fmt!r}: expected a datetime")
    if fmt == "%s":
        return _epoch_units(dt, timedelta(seconds=1))
    if fmt == "%ms":
        return _epoch_units(dt, timedelta(milliseconds=1))
    if fmt == "%epoch_microseconds":
        return _epoch_units(dt, timedelta(microseconds=1))
    if fmt == "%s_as_float":
        return _as_utc_aware(dt).timestamp()
    _raise_on_errors(fmt)
    aware = _as_utc_aware(dt)
    try:
        return "".join(
            segment(aware) if callable(segment) else aware.strftime(segment)
            for segment in _format_plan(fmt)
        )
    except (ValueError, OverflowError) as exc:
        raise DatetimeFormatError(f"cannot format {dt.isoformat()} with {fmt!r}: {exc}") from exc


# ---------------------------------------------------------------------------
# Parsing


def _to_utc(dt: datetime) -> datetime:
    if dt.tzinfo is None or dt.utcoffset() is None:
        return dt.replace(tzinfo=timezone.utc)
    return dt.astimezone(timezone.utc)


def _integer(value: DatetimeValue, fmt: str) -> int:
    if isinstance(value, bool):
        raise DatetimeFormatError(f"cannot parse {value!r} with format {fmt!r}: expected a number")
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise DatetimeFormatError(f"cannot parse {value!r} with format {fmt!r}: not a finite number")
        return int(value)
    try:
        return int(str(value).strip())
    except ValueError:
        hint = "; use `%s_as_float` for fractional seconds" if fmt == "%s" else ""
        raise DatetimeFormatError(
            f"cannot parse {value!r} with format {fmt!r}: expected an integer{hint}"
        ) from None


def _parse_epoch(value: DatetimeValue, fmt: str) -> datetime:
    try:
        if fmt == "%s_as_float":
            if isinstance(value, bool):
                raise ValueError("expected a number")
            return datetime.fromtimestamp(float(value), tz=timezone.utc)
        number = _integer(value, fmt)
        unit = {
            "%s": timedelta(seconds=1),
            "%ms": timedelta(milliseconds=1),
            "%epoch_microseconds": timedelta(microseconds=1),
        }[fmt]
        return EPOCH + number * unit
    except DatetimeFormatError:
        raise
    except (ValueError, OverflowError, OSError, TypeError) as exc:
        raise DatetimeFormatError(f"cannot parse {value!r} with format {fmt!r}: {exc}") from exc


@lru_cache(maxsize=512)
def _parse_plan(fmt: str) -> tuple[str, str | re.Pattern[str]]:
    """``("strptime", pattern)`` or, when ``%s`` is inline, ``("regex", compiled)``."""
    tokens, _ = _tokenize(fmt)
    if not any(t.kind == "directive" and t.value == "s" for t in tokens):
        parts = []
        for token in tokens:
            if token.kind == "text":
                parts.append(token.value)
            elif token.value == "_ms":
                parts.append("%f")
            elif token.value == ":z":
                parts.append("%z")
            else:
                parts.append("%" + token.value)
        return "strptime", "".join(parts)
    # An inline %s fixes the instant on its own; a fractional part may refine it.
    pattern = []
    named: set[str] = set()
    for token in tokens:
        if token.kind == "text":
            pattern.append(re.escape(token.value))
        elif token.value in ("s", "f", "_ms"):
            group = "s" if token.value == "s" else "f"
            body = r"[+-]?\d+" if group == "s" else r"\d{1,6}"
            pattern.append(f"(?P<{group}>{body})" if group not in named else body)
            named.add(group)
        elif token.value == "%":
            pattern.append("%")
        else:
            pattern.append(r".+?")
    return "regex", re.compile("".join(pattern), re.DOTALL)


def parse_datetime(value: DatetimeValue, fmt: str) -> datetime:
    """Parse ``value`` with ``fmt`` into an aware UTC datetime.

    Raises :class:`DatetimeFormatError` naming the value and the format.
    """
    if fmt in WHOLE_FORMAT_SPECIALS:
        return _parse_epoch(value, fmt)
    _raise_on_errors(fmt)
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise DatetimeFormatError(
            f"cannot parse {value!r} with format {fmt!r}: expected text or a number"
        )
    text = value if isinstance(value, str) else str(value)
    kind, plan = _parse_plan(fmt)
    try:
        if kind == "strptime":
            assert isinstance(plan, str)
            return _to_utc(datetime.strptime(text, plan))
        assert isinstance(plan, re.Pattern)
        match = plan.fullmatch(text)
        if match is None:
            raise ValueError("the text does not match the format")
        instant = EPOCH + timedelta(seconds=int(match.group("s")))
        fraction = match.groupdict().get("f")
        if fraction:
            instant += timedelta(microseconds=int(fraction.ljust(6, "0")))
        return instant
    except (ValueError, OverflowError) as exc:
        raise DatetimeFormatError(f"cannot parse {value!r} with format {fmt!r}: {exc}") from exc


def parse_with_formats(value: DatetimeValue, formats: Sequence[str]) -> datetime:
    """Parse ``value`` with the first of ``formats`` that fits, tried in order."""
    if isinstance(formats, str):
        formats = [formats]
    if not formats:
        raise DatetimeFormatError(f"cannot parse {value!r}: no datetime formats were given")
    for fmt in formats:
        try:
            return parse_datetime(value, fmt)
        except DatetimeFormatError:
            continue
    tried = ", ".join(repr(f) for f in formats)
    raise DatetimeFormatError(f"cannot parse {value!r} with any of the formats {tried}")
