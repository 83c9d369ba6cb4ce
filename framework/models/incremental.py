"""Incremental reads: the datetime cursor and its bounds."""

from __future__ import annotations

from typing import Literal

from pydantic import model_validator

from framework.models.base import BASE, Component, spec
from framework.models.requests import RequestOption


class MinMaxDatetime(Component):
    """A datetime from a template, clamped between optional bounds."""

    type: Literal["MinMaxDatetime"] = spec("Component type.", "MinMaxDatetime", "MinMaxDatetime")
    datetime: str = spec("Template of the datetime.", "{{ config['start_date'] }}", template=BASE)
    datetime_format: str = spec(
        "Format of `datetime`, `min_datetime` and `max_datetime`; the cursor's `datetime_format` when empty.",
        "%Y-%m-%d",
        "",
        format="strftime",
    )
    min_datetime: str | None = spec(
        "Earliest value allowed; an earlier `datetime` is raised to it.", "2020-01-01", None, template=BASE
    )
    max_datetime: str | None = spec(
        "Latest value allowed; a later `datetime` is lowered to it.", "{{ now_utc().strftime('%Y-%m-%d') }}", None,
        template=BASE,
    )


Bound = MinMaxDatetime | str


class DatetimeBasedCursor(Component):
    """Reads a stream in datetime windows and remembers the latest cursor value seen."""

    type: Literal["DatetimeBasedCursor"] = spec("Component type.", "DatetimeBasedCursor", "DatetimeBasedCursor")
    cursor_field: str = spec("Record field holding the cursor datetime.", "updated_at", template=BASE)
    datetime_format: str = spec(
        "Format of the datetimes sent to the API and written to state; `%s`, `%ms`, `%s_as_float`, "
        "`%epoch_microseconds` for epoch numbers.",
        "%Y-%m-%dT%H:%M:%SZ",
        format="strftime",
    )
    cursor_datetime_formats: tuple[str, ...] = spec(
        "Formats tried in order to read cursor values in records and state; `datetime_format` when empty.",
        ["%Y-%m-%dT%H:%M:%S.%fZ", "%Y-%m-%dT%H:%M:%SZ"],
        (),
        format="strftime",
    )
    start_datetime: Bound = spec(
        "Where the first sync starts: a template string or a MinMaxDatetime.",
        "{{ config['start_date'] }}",
        template=BASE,
        default_type="MinMaxDatetime",
    )
    end_datetime: Bound | None = spec(
        "Where a sync ends; now when left out.", "{{ now_utc().strftime('%Y-%m-%dT%H:%M:%SZ') }}", None,
        template=BASE,
        default_type="MinMaxDatetime",
    )
    step: str | None = spec(
        "ISO 8601 duration of one window; one window for the whole range when left out. Needs `cursor_granularity`.",
        "P1D",
        None,
        format="duration",
    )
    cursor_granularity: str | None = spec(
        "ISO 8601 duration of the smallest cursor step: a window ends this much before the next starts. Needs `step`.",
        "PT1S",
        None,
        format="duration",
    )
    lookback_window: str | None = spec(
        "ISO 8601 duration re-read before the saved state, for records that arrive late.", "P3D", None,
        template=BASE, format="duration",
    )
    start_time_option: RequestOption | None = spec(
        "Where a window's start goes in the request.",
        {"type": "RequestOption", "inject_into": "request_parameter", "field_name": "updated_since"},
        None,
    )
    end_time_option: RequestOption | None = spec(
        "Where a window's end goes in the request.",
        {"type": "RequestOption", "inject_into": "request_parameter", "field_name": "updated_until"},
        None,
    )
    partition_field_start: str = spec(
        "Name of a window's start in `stream_interval`.", "start_time", "start_time"
    )
    partition_field_end: str = spec("Name of a window's end in `stream_interval`.", "end_time", "end_time")
    is_data_feed: bool = spec(
        "The API returns newest first with no date filter: stop paging at the first record older than the state.",
        True,
        False,
    )
    is_client_side_incremental: bool = spec(
        "The API cannot filter by date: drop records older than the state on the client.", True, False
    )
    is_compare_strictly: bool = spec(
        "Drop windows whose start equals their end.", True, False
    )
    global_substream_cursor: bool = spec(
        "Keep one cursor for all partitions instead of one per partition.", True, False
    )

    @model_validator(mode="after")
    def _step_pairs_with_granularity(self) -> DatetimeBasedCursor:
        if (self.step is None) != (self.cursor_granularity is None):
            given, missing = ("step", "cursor_granularity") if self.step else ("cursor_granularity", "step")
            raise ValueError(f"`{given}` needs `{missing}`: give both or neither")
        return self

