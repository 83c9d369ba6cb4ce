"""DatetimeBasedCursor at run time: the value logic of incremental reads.

:class:`DatetimeCursor` knows how to turn a saved state into datetime windows,
how to read, compare and write cursor values, and where a window goes in a
request. It holds no sync progress of its own (apart from parse caches), so
one instance serves every partition of a stream; the reader keeps the
latest cursor value seen and asks :meth:`DatetimeCursor.state_of` for the state.

Rules it follows:

* values are compared as instants (aware UTC datetimes), never as text;
* the range read is ``max(start_datetime, state - lookback_window)`` ..
  ``min(end_datetime, now)``, ``now`` coming from the injected clock;
* windows are cut by :func:`~framework.components.incremental.windows.datetime_windows`;
  with ``is_compare_strictly`` a window whose start equals its end is dropped
  (for APIs that refuse such a query); as in airbyte-cdk, a range that is one
  instant (the sync starts where it ends, no lookback) is not read at all
  unless the cursor has a ``cursor_granularity``;
* cursor values in records and state are read with ``cursor_datetime_formats``
  in order, then ``datetime_format``; windows and state are written in
  ``datetime_format`` (an ``int`` for ``%s``, ``%ms``, ``%epoch_microseconds``,
  a ``float`` for ``%s_as_float``, text otherwise).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from framework.components.context import BuildContext, builds
from framework.components.http.request import Injection, RequestParts, injection_of
from framework.components.incremental.date_ranges import (
    Closed,
    is_range_state,
    range_state,
    read_range_state,
    subtract_closed,
)
from framework.components.incremental.min_max import MinMax, min_max_of
from framework.components.incremental.windows import (
    Clamp,
    Step,
    clamp_of,
    clamped_windows,
    datetime_windows,
    describe_duration,
    shift,
)
from framework.errors import ConfigError, DatetimeFormatError, DurationError, StateError, place_suffix
from framework.models.incremental import DatetimeBasedCursor
from framework.temporal.clock import Clock
from framework.temporal.datetime_formats import FormattedValue, format_datetime
from framework.temporal.durations import parse_duration
from framework.temporal.iso_parse import parser_of

__all__ = ["DatetimeCursor"]

_EARLIEST = datetime.min.replace(tzinfo=timezone.utc)
_CACHE_LIMIT = 4096
_PROBE = datetime(2000, 1, 1, tzinfo=timezone.utc)  # an instant to tell a zero duration by
# The instant shown in "write it like ..." hints.
_EXAMPLE = datetime(2024, 1, 31, 12, 30, 0, tzinfo=timezone.utc)


def _utc(dt: datetime) -> datetime:
    if dt.tzinfo is None or dt.utcoffset() is None:
        return dt.replace(tzinfo=timezone.utc)
    return dt.astimezone(timezone.utc)


@dataclass(frozen=True)
class DatetimeCursor:
    """The runtime form of a DatetimeBasedCursor (see the module docstring)."""

    cursor_field: str
    datetime_format: str
    start: MinMax
    end: MinMax | None
    clock: Clock
    step: Step | None = None
    granularity: Step | None = None
    lookback: Step | None = None
    cursor_datetime_formats: tuple[str, ...] = ()
    start_option: Injection | None = None
    end_option: Injection | None = None
    partition_field_start: str = "start_time"
    partition_field_end: str = "end_time"
    # The client-side rules these two ask for are applied where records are read
    # (framework.engine.sync.read_unit, whose per-record loop keeps them inline).
    is_data_feed: bool = False
    is_client_side_incremental: bool = False
    is_compare_strictly: bool = False
    global_substream_cursor: bool = False
    clamp: Clamp | None = None
    catalog_cursor_field: bool = False  # allow_catalog_defined_cursor_field
    place: str | None = None
    # Record and state values are tried against these, in order (cursor formats, then datetime_format).
    formats: tuple[str, ...] = field(init=False)
    _parsers: tuple = field(init=False, repr=False, compare=False)
    _limits: dict = field(init=False, default_factory=dict, repr=False, compare=False)
    _floors: dict = field(init=False, default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        formats = tuple(dict.fromkeys((*self.cursor_datetime_formats, self.datetime_format)))
        object.__setattr__(self, "formats", formats)
        object.__setattr__(self, "_parsers", tuple(parser_of(fmt) for fmt in formats))

    # -- the range and its windows ---------------------------------------

    def bounds(self) -> tuple[datetime, datetime]:
        """``start_datetime`` and ``min(end_datetime, now)``; ``now`` when there is no end. With
        ``clamping`` the end is the last instant of the last whole period before it."""
        now = _utc(self.clock.now())
        start = self.start.value()
        end = now if self.end is None else min(self.end.value(), now)
        if self.clamp is not None:
            end = self.clamp.end(end, self.granularity)
        return start, end

    def windows(self, state_value: datetime | None, *, min_lookback: Step | None = None,
                closed: tuple[Closed, ...] = ()) -> list[dict]:
        """The cursor slices to read, oldest first: ``{partition_field_start: ..., partition_field_end: ...}``.

        The range starts at ``start_datetime`` or, when a state is given, at
        ``state - lookback_window`` if that is later. ``min_lookback`` (a global
        substream cursor passes the previous sync's duration) is looked back
        *as well*: the two add up, as in airbyte-cdk. The parts ``closed``
        covers (finished already, see :meth:`closed_to_skip`) are left out.
        """
        start, end = self.bounds()
        if self._nothing_to_read(start, end, state_value, min_lookback):
            return []
        if state_value is not None:
            start = max(start, self.floor(state_value, min_lookback))
        if self.clamp is not None:
            pairs = clamped_windows(start, end, self.step, self.granularity, self.clamp)
        else:
            pairs = datetime_windows(start, end, self.step, self.granularity)
        if closed:
            pairs = subtract_closed(pairs, closed, self.granularity)
        if self.is_compare_strictly:
            pairs = [(low, high) for low, high in pairs if low < high]
        fmt, start_key, end_key = self.datetime_format, self.partition_field_start, self.partition_field_end
        return [{start_key: format_datetime(low, fmt), end_key: format_datetime(high, fmt)} for low, high in pairs]

    def _nothing_to_read(self, start: datetime, end: datetime, state_value: datetime | None,
                         min_lookback: Step | None) -> bool:
        """airbyte-cdk's rule for a range that is one instant: where the sync starts (the state when it is past
        ``start_datetime``, less the lookback) is its end, and the cursor has no ``cursor_granularity`` (or a
        zero one), so ``since=t&until=t`` would ask for nothing. With a granularity that instant is read (one
        window ``[t, t]``), as it is when a lookback moved the start before the end."""
        if self.granularity is not None and shift(_PROBE, self.granularity) != _PROBE:
            return False
        origin = start if state_value is None or state_value < start else state_value
        return self.floor(origin, min_lookback if state_value is not None else None) == end

    def start_of(self, state_value: datetime | None) -> datetime:
        """Where a sync starts, and the state it keeps when it reads no record: the saved value when it is at or
        after ``start_datetime``, else ``start_datetime`` (airbyte-cdk's rule: its state never falls below
        either)."""
        start = self.start.value()
        return state_value if state_value is not None and state_value >= start else start

    def floor(self, state_value: datetime, min_lookback: Step | None = None) -> datetime:
        """The earliest instant to read again after ``state_value``: ``state - min_lookback - lookback_window``."""
        key = (state_value, min_lookback)
        found = self._floors.get(key)
        if found is None:
            found = state_value
            for back in (min_lookback, self.lookback):
                if back is not None:
                    found = shift(found, back, -1) or _EARLIEST
            if len(self._floors) >= _CACHE_LIMIT:
                self._floors.clear()
            self._floors[key] = found
        return found

    def keep_range(self, state_value: datetime | None, min_lookback: Step | None = None) -> tuple[datetime, datetime]:
        """The cursor values a data feed or a client-side filter keeps, both ends inclusive (airbyte-cdk's rule).

        From ``start_datetime`` on a first read; else from the state minus the
        lookbacks, but not below ``min(state - min_lookback, start_datetime)``.
        Up to the range's end (``min(end_datetime, now)``).
        """
        start, end = self.bounds()
        if state_value is None:
            return start, end
        shifted = state_value if min_lookback is None else (shift(state_value, min_lookback, -1) or _EARLIEST)
        return max(self.floor(state_value, min_lookback), min(shifted, start)), end

    # -- reading and writing values --------------------------------------

    def parse(self, value: Any) -> datetime:
        """Read a cursor value with the first format that fits (``cursor_datetime_formats``, then
        ``datetime_format``); :class:`DatetimeFormatError` names every format tried."""
        found = self._parse(value)
        if found is None:
            tried = ", ".join(repr(f) for f in self.formats)
            raise DatetimeFormatError(
                f"cannot read {value!r} in `{self.cursor_field}` as a datetime: it fits none of the formats "
                f"{tried}; add the format the API uses to `cursor_datetime_formats`"
            )
        return found

    def _parse(self, value: Any) -> datetime | None:
        if isinstance(value, datetime):
            return _utc(value)
        for parse in self._parsers:
            try:
                return parse(value)
            except DatetimeFormatError:
                continue
        return None

    def format(self, dt: datetime) -> FormattedValue:
        """``dt`` in ``datetime_format``: ``int``/``float`` for the epoch formats, else text."""
        return format_datetime(dt, self.datetime_format)

    def record_value(self, record: Mapping[str, Any]) -> datetime | None:
        """The record's cursor value, or ``None`` when it is missing or unreadable."""
        value = record.get(self.cursor_field)
        if value is None or value == "":
            return None
        return self._parse(value)

    def state_value(self, stream_state: Mapping[str, Any] | None) -> datetime | None:
        """The cursor value saved in ``{"<cursor_field>": value}``; ``None`` when there is none.

        Accepts any of the cursor's formats (so an epoch number as ``int`` or text
        for the epoch formats). :class:`StateError` when the value is unreadable.
        """
        if not stream_state:
            return None
        if not isinstance(stream_state, Mapping):
            raise StateError(
                f"the saved state should be an object like {self.state_of(_EXAMPLE)!r}, "
                f"not a {type(stream_state).__name__}; fix it or clear the state"
            )
        if is_range_state(stream_state):  # finished ranges: resume from the first one's value
            return read_range_state(stream_state, self._state_parse, self.granularity)[0]
        value = stream_state.get(self.cursor_field)
        if value is None or value == "":
            return None
        found = None if isinstance(value, bool) else self._parse(value)
        if found is None:
            tried = ", ".join(repr(f) for f in self.formats)
            raise StateError(
                f"the saved state's `{self.cursor_field}` is {value!r}, which fits none of the formats {tried}; "
                f"write it like {self.format(_EXAMPLE)!r} (the cursor's datetime_format "
                f"{self.datetime_format!r}) or clear the state to read from start_datetime"
            )
        return found

    def closed_of(self, stream_state: Mapping[str, Any] | None) -> tuple[Closed, ...]:
        """The finished intervals beyond the resume value of a ``date-range`` state (none for a plain state);
        see :mod:`~framework.components.incremental.date_ranges`."""
        if not is_range_state(stream_state):
            return ()
        assert stream_state is not None
        return read_range_state(stream_state, self._state_parse, self.granularity)[1]

    def closed_to_skip(self, closed: tuple[Closed, ...], state_value: datetime | None,
                       min_lookback: Step | None = None) -> tuple[Closed, ...]:
        """Of the saved finished intervals, those this sync skips: the ones ending after where it starts, the
        last one shortened by the lookbacks (the range after it is read from its end less the lookback, as
        after a resume value)."""
        if not closed:
            return ()
        start = self.bounds()[0]
        if state_value is not None:
            start = max(start, self.floor(state_value, min_lookback))
        kept = [c for c in closed if c.end >= start]
        if kept:  # read again from the last one's end (inclusive, as from a resume value) less the lookbacks
            last = kept[-1]
            end = self.floor(last.end, min_lookback)
            if self.granularity is not None:
                end = shift(end, self.granularity, -1) or end
            kept[-1:] = [Closed(last.start, end, last.latest)] if end >= last.start else []
        return tuple(kept)

    def range_state_of(self, value: datetime | None, closed: tuple[Closed, ...]) -> dict[str, Any]:
        """The ``date-range`` state resuming from ``value`` with the finished intervals ``closed`` beyond it."""
        return range_state(self._state_text, self.start.value(), value, closed)

    def _state_text(self, dt: datetime) -> str:
        value = self.format(dt)
        return value if isinstance(value, str) else str(value)

    def _state_parse(self, value: Any) -> datetime | None:
        return None if isinstance(value, bool) else self._parse(value)

    def state_of(self, dt: datetime) -> dict[str, FormattedValue]:
        """The state that records ``dt``: ``{"<cursor_field>": dt in datetime_format}``.

        Always text, as Airbyte writes it: an epoch format (``%s``, ``%ms``, ...) gives
        ``"1704180600"``, not a number, so state moves between the two systems unchanged.
        """
        value = self.format(dt)
        return {self.cursor_field: value if isinstance(value, str) else str(value)}

    # -- filtering records -------------------------------------------------

    def window_bounds(self, cursor_slice: Mapping[str, Any]) -> tuple[datetime, datetime]:
        """A cursor slice's start and end as datetimes (read back from their formatted values)."""
        low, high, _, _ = self._window_limits(cursor_slice)
        return low, high

    def _window_limits(self, cursor_slice: Mapping[str, Any]) -> tuple[datetime, datetime, datetime, bool]:
        """``(start, end, limit, open)``: a value is in the window when ``start <= value`` and
        ``value < limit`` (``open``) or ``value <= limit``. Cached by the slice's values."""
        key = (cursor_slice.get(self.partition_field_start), cursor_slice.get(self.partition_field_end))
        found = self._limits.get(key)
        if found is None:
            low, high = self.parse(key[0]), self.parse(key[1])
            # The next window starts one granularity after this one's end, so values between the
            # two (finer than the format can say) belong to this window: value < end + granularity.
            limit = None if self.granularity is None else shift(high, self.granularity)
            found = (low, high, limit, True) if limit is not None and limit > high else (low, high, high, False)
            if len(self._limits) >= _CACHE_LIMIT:
                self._limits.clear()
            self._limits[key] = found
        return found

    def in_window(self, record_dt: datetime, cursor_slice: Mapping[str, Any]) -> bool:
        """Whether a record's cursor value falls in the slice's window (client-side filtering).

        ``start <= value <= end``; with a granularity, values finer than the
        format up to the next window's start count too (``value < end + granularity``).
        """
        low, _, limit, open_end = self._window_limits(cursor_slice)
        if record_dt < low:
            return False
        return record_dt < limit if open_end else record_dt <= limit

    # -- requests ----------------------------------------------------------

    def apply(self, parts: RequestParts, cursor_slice: Mapping[str, Any]) -> None:
        """Put the slice's start and end where ``start_time_option``/``end_time_option`` say."""
        if self.start_option is not None:
            self.start_option.apply(parts, cursor_slice.get(self.partition_field_start))
        if self.end_option is not None:
            self.end_option.apply(parts, cursor_slice.get(self.partition_field_end))


# -- building ----------------------------------------------------------------


def _where(place: str | None) -> str:
    return place_suffix(place)


def _rendered(text: str | None, ctx: BuildContext, parameters: Any) -> str | None:
    return None if text is None else str(ctx.render(text, parameters) or "")


def _duration(text: str | None, name: str, place: str | None) -> Step | None:
    if text is None or not text.strip():
        return None
    try:
        return parse_duration(text)
    except DurationError as exc:
        raise DurationError(f"`{name}`: {exc}{_where(place)}") from None


def _check_durations(step: Step | None, granularity: Step | None, lookback: Step | None, place: str | None) -> None:
    probe = datetime(2000, 1, 1, tzinfo=timezone.utc)
    if step is not None and probe + step <= probe:
        raise DurationError(
            f"`step` is {describe_duration(step)}; it must be a positive duration like `P1D`{_where(place)}"
        )
    if granularity is not None and probe + granularity < probe:
        raise DurationError(
            f"`cursor_granularity` is {describe_duration(granularity)}; it must not be negative{_where(place)}"
        )
    if (
        step is not None
        and granularity is not None
        and isinstance(step, timedelta)
        and isinstance(granularity, timedelta)
        and granularity > step
    ):
        raise DurationError(
            f"`cursor_granularity` {describe_duration(granularity)} is longer than `step` "
            f"{describe_duration(step)}; windows would end before they start. Use a granularity "
            f"smaller than the step (the smallest unit of the cursor values, like `PT1S`){_where(place)}"
        )
    if lookback is not None and probe + lookback < probe:
        raise DurationError(
            f"`lookback_window` is {describe_duration(lookback)}; it must not be negative{_where(place)}"
        )


@builds("DatetimeBasedCursor")
def build_datetime_cursor(model: DatetimeBasedCursor, ctx: BuildContext, path: tuple) -> DatetimeCursor:
    place = ctx.place(path)
    parameters = model.parameters
    fmt = model.datetime_format
    start = min_max_of(model.start_datetime, ctx, (*path, "start_datetime"), fmt, "start_datetime", parameters)
    end = None
    if model.end_datetime is not None:
        end = min_max_of(model.end_datetime, ctx, (*path, "end_datetime"), fmt, "end_datetime", parameters)
    lookback = None
    if model.lookback_window is not None:
        lookback = _duration(str(ctx.render(model.lookback_window, parameters) or ""), "lookback_window", place)
    # Airbyte's schema lets both be templates (`P{{ config.window_days }}D`): rendered once, here.
    step = _duration(_rendered(model.step, ctx, parameters), "step", place)
    granularity = _duration(_rendered(model.cursor_granularity, ctx, parameters), "cursor_granularity", place)
    _check_durations(step, granularity, lookback, place)
    clamp = None
    if model.clamping is not None:
        target = str(ctx.render(model.clamping.target, parameters) or "").strip()
        weekday = (model.clamping.target_details or {}).get("weekday")
        try:
            clamp = clamp_of(target, weekday if isinstance(weekday, str) else None)
        except ConfigError as exc:
            raise ConfigError(f"{exc}{_where(ctx.place((*path, 'clamping')) or place)}") from None
    return DatetimeCursor(
        cursor_field=str(ctx.render(model.cursor_field, parameters)),
        datetime_format=fmt,
        start=start,
        end=end,
        clock=ctx.clock,
        step=step,
        granularity=granularity,
        lookback=lookback,
        cursor_datetime_formats=tuple(model.cursor_datetime_formats),
        start_option=None if model.start_time_option is None else injection_of(model.start_time_option, ctx),
        end_option=None if model.end_time_option is None else injection_of(model.end_time_option, ctx),
        partition_field_start=model.partition_field_start,
        partition_field_end=model.partition_field_end,
        is_data_feed=model.is_data_feed,
        is_client_side_incremental=model.is_client_side_incremental,
        is_compare_strictly=model.is_compare_strictly,
        global_substream_cursor=model.global_substream_cursor,
        clamp=clamp,
        catalog_cursor_field=bool(model.allow_catalog_defined_cursor_field),
        place=place,
    )
