"""Functions templates can call (``{{ now_utc() }}``), bound to an injected clock.

Every macro that needs the current time reads it from the :class:`Clock` given
to :func:`build_macros`, never from the system directly, so a test with a
:class:`~framework.temporal.clock.FixedClock` is deterministic.

The macros are airbyte-cdk 7.39.1's, with its results on every input it accepts
(``tests/parity/test_template_parity.py`` compares them). Some inputs it refuses
are read here (datetime text that is not ISO 8601, epoch seconds as digits);
tests/parity/README.md lists them. Jinja's own globals that airbyte-cdk keeps
(:data:`JINJA_GLOBALS`) are global too; ``range`` is not.
"""

from __future__ import annotations

import builtins
import math
import re
import uuid
from collections.abc import Callable, Mapping
from datetime import date, datetime, time, timedelta, timezone
from types import MappingProxyType
from typing import TYPE_CHECKING, Any
from urllib.parse import quote_plus
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from jinja2.utils import Cycler, Joiner, Namespace, generate_lorem_ipsum

import framework.interpolation.limits as limits
from framework.temporal import datetime_formats
from framework.temporal.clock import Clock
from framework.temporal.durations import parse_duration

if TYPE_CHECKING:
    import isodate

__all__ = ["DEFAULT_DAY_DELTA_FORMAT", "GLOBALS", "JINJA_GLOBALS", "MACROS", "build_globals", "build_macros",
           "to_datetime"]

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
    "sanitize_url",
    "camel_case_to_snake_case",
    "generate_uuid",
)

#: Jinja's own globals that airbyte-cdk leaves in place (it removes ``range`` only), each with
#: its signature and what it gives.
JINJA_GLOBALS: Mapping[str, tuple[str, str]] = MappingProxyType({
    "dict": ("dict(**items)", "A mapping of the keyword arguments: `dict(a=1)` is `{'a': 1}`."),
    "namespace": ("namespace(**attributes)",
                  "An object whose attributes `{% set ns.x = ... %}` can change inside a loop."),
    "cycler": ("cycler(*items)", "Gives `items` in turn: `.next()`, `.current`, `.reset()`."),
    "joiner": ("joiner(sep=', ')", "Empty text on the first call, `sep` on every later one."),
    "lipsum": ("lipsum(n=5, html=True, min=20, max=100)", "`n` paragraphs of lorem ipsum text."),
})

#: Every global name of a template: the macros, then Jinja's globals.
GLOBALS: tuple[str, ...] = MACROS + tuple(JINJA_GLOBALS)

_MAX_LIPSUM_WORDS = 100_000

_EPOCH_TEXT = re.compile(r"-?\d+")
_CAPITAL = re.compile(r"(?<!^)(?=[A-Z])")


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

    Text is read as ISO 8601 first (``dateutil``'s ``isoparse``, as airbyte-cdk
    reads it, so ``20220114`` is a date); text made only of digits that is not
    ISO 8601 is epoch seconds; any other text is read by ``dateutil``'s parser,
    with missing parts taken from today's date on ``clock``. Naive results are UTC.
    """
    if isinstance(value, datetime):
        return _utc(value)
    if isinstance(value, date):
        return datetime.combine(value, time(), tzinfo=timezone.utc)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return _from_epoch_seconds(value)
    if not isinstance(value, str):
        raise TypeError(f"expected a datetime or datetime text, got {type(value).__name__}")
    from dateutil import parser as dateutil_parser  # here: validate-manifest never needs it

    try:
        return _utc(dateutil_parser.isoparse(value))
    except (ValueError, OverflowError):
        pass
    text = value.strip()
    if _EPOCH_TEXT.fullmatch(text):
        return _from_epoch_seconds(int(text))
    today = clock.now().replace(hour=0, minute=0, second=0, microsecond=0, tzinfo=None)
    try:
        return _utc(dateutil_parser.parse(text, default=today))
    except (ValueError, OverflowError) as exc:
        raise ValueError(f"cannot read {value!r} as a datetime") from exc


def _parse_with(value: Any, input_format: str) -> datetime:
    """Text parsed with a strptime format keeps the offset it carries (naive is UTC), as airbyte-cdk
    reads it; what strptime cannot read (Airbyte's ``%ms``...) goes to the framework's parser."""
    if isinstance(value, str):
        try:
            parsed = datetime.strptime(value, input_format)
        except (ValueError, TypeError):
            pass
        else:
            return parsed if parsed.utcoffset() is not None else parsed.replace(tzinfo=timezone.utc)
    return datetime_formats.parse_datetime(value, input_format)


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

    def timestamp(dt: Any) -> int | float:
        """Epoch seconds: a number truncated to an int, datetime text (UTC when it has no offset) a float."""
        if isinstance(dt, (int, float)) and not isinstance(dt, bool):
            if not math.isfinite(dt):
                raise ValueError(f"{dt!r} is not a finite number")
            return int(dt)
        return to_datetime(dt, clock).timestamp()

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
        (Airbyte's extras such as ``%ms`` included), keeping an offset the text
        carries; otherwise text is read as in :func:`str_to_datetime` and numbers
        as epoch seconds. A datetime keeps its offset. Always returns text.
        """
        if isinstance(dt, datetime):
            instant = dt if dt.utcoffset() is not None else dt.replace(tzinfo=timezone.utc)
        elif input_format is not None and not isinstance(dt, date):
            instant = _parse_with(dt, input_format)
        else:
            instant = to_datetime(dt, clock)
        return str(datetime_formats.format_datetime(instant, format))

    def str_to_datetime(s: Any) -> datetime:
        """ISO 8601 text as an aware UTC datetime (naive is UTC); other datetime text and epoch digits too."""
        return to_datetime(s, clock)

    def sanitize_url(value: str) -> str:
        """Text made safe for a URL part: reserved characters percent-encoded, spaces as `+`."""
        if not isinstance(value, (str, bytes)):
            raise TypeError(f"sanitize_url takes text, not {type(value).__name__}")
        return quote_plus(value)

    def camel_case_to_snake_case(value: str) -> str:
        """`CamelCase` as `camel_case`: `_` before every ASCII capital but the first character, then lowercase."""
        if not isinstance(value, str):
            raise TypeError(f"camel_case_to_snake_case takes text, not {type(value).__name__}")
        return _CAPITAL.sub("_", value).lower()

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
        "sanitize_url": sanitize_url,
        "camel_case_to_snake_case": camel_case_to_snake_case,
        "generate_uuid": generate_uuid,
    }
    assert tuple(macros) == MACROS
    return macros


def _lipsum(n: int = 5, html: bool = True, min: int = 20, max: int = 100) -> str:  # noqa: A002
    """`n` paragraphs of lorem ipsum text (Jinja's ``lipsum``), refused when it would be huge."""
    for value in (n, min, max):
        if not isinstance(value, int) or isinstance(value, bool):
            raise TypeError("lipsum takes whole numbers")
    if builtins.max(n, 0) * builtins.max(max, min, 0) > _MAX_LIPSUM_WORDS:
        raise limits.TemplateLimitError(f"lipsum would write over {_MAX_LIPSUM_WORDS:,} words")
    return str(generate_lorem_ipsum(n=n, html=html, min=min, max=max))


def build_globals(clock: Clock) -> dict[str, Any]:
    """Every global of a template: the macros (bound to ``clock``) and :data:`JINJA_GLOBALS`."""
    names: dict[str, Any] = build_macros(clock)
    names.update({"dict": dict, "namespace": Namespace, "cycler": Cycler, "joiner": Joiner, "lipsum": _lipsum})
    assert tuple(names) == GLOBALS
    return names
