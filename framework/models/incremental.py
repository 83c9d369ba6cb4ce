"""Incremental reads: the datetime cursor and its bounds, and the integer cursor."""

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from framework.models.base import BASE, Component, Model, spec
from framework.models.custom import CustomIncrementalSync
from framework.models.requests import RequestOption

#: Clamping targets, and the weekdays a WEEK target may start on.
CLAMPING_TARGETS = ("DAY", "WEEK", "MONTH")
WEEKDAYS = ("MONDAY", "TUESDAY", "WEDNESDAY", "THURSDAY", "FRIDAY", "SATURDAY", "SUNDAY")


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


class Clamping(Model):
    """Windows aligned on whole days, weeks or months."""

    target: str = spec(
        "`DAY`, `WEEK` or `MONTH` (or a template rendering one): each window starts at the beginning of that "
        "period and ends at the end of one, and the sync ends at the end of the last whole period.",
        "MONTH", template=BASE,
    )
    target_details: Mapping[str, Any] | None = spec(
        "Details of the target: for `WEEK`, `weekday` names the day weeks start on.", {"weekday": "MONDAY"}, None
    )

    @model_validator(mode="after")
    def _known_target(self) -> "Clamping":
        if "{" in self.target:
            return self
        if self.target not in CLAMPING_TARGETS:
            raise ValueError(f"clamping `target` is {self.target!r}; use one of {', '.join(CLAMPING_TARGETS)}")
        if self.target == "WEEK":
            weekday = (self.target_details or {}).get("weekday")
            if weekday not in WEEKDAYS:
                raise ValueError("a `WEEK` clamping needs `target_details: {weekday: MONDAY}` (a day from MONDAY "
                                 f"to SUNDAY), not {weekday!r}")
        return self


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
    clamping: Clamping | None = spec(
        "Align windows on whole days, weeks or months.", {"target": "DAY"}, None
    )
    allow_catalog_defined_cursor_field: bool | None = spec(
        "Let the configured catalog name another cursor field than `cursor_field`.", True, None
    )

    @model_validator(mode="after")
    def _step_pairs_with_granularity(self) -> "DatetimeBasedCursor":
        if (self.step is None) != (self.cursor_granularity is None):
            given, missing = ("step", "cursor_granularity") if self.step else ("cursor_granularity", "step")
            raise ValueError(f"`{given}` needs `{missing}`: give both or neither")
        return self



class IncrementingCountCursor(Component):
    """Reads records whose cursor is an increasing integer (an id, a sequence number) from the last one synced."""

    type: Literal["IncrementingCountCursor"] = spec(
        "Component type.", "IncrementingCountCursor", "IncrementingCountCursor"
    )
    cursor_field: str = spec("Record field holding the integer cursor.", "id", template=BASE)
    start_value: int | str | None = spec(
        "Where the first sync starts (an integer, or a template rendering one); 0 when left out.",
        "{{ config['start_id'] }}", None, template=BASE, result="integer",
    )
    start_value_option: RequestOption | None = spec(
        "Where the value a sync starts from (the saved state, or `start_value`) goes in the request.",
        {"type": "RequestOption", "inject_into": "request_parameter", "field_name": "since_id"},
        None,
    )
    allow_catalog_defined_cursor_field: bool | None = spec(
        "Let the configured catalog name another cursor field than `cursor_field`.", True, None
    )

    @model_validator(mode="after")
    def _integer_start(self) -> "IncrementingCountCursor":
        value = self.start_value
        if isinstance(value, str) and "{" not in value:
            try:
                int(value.strip())
            except ValueError:
                raise ValueError(f"`start_value` is {value!r}; give an integer, or a template that renders "
                                 "one") from None
        return self


# What a stream's `incremental_sync` may be.
IncrementalSync = Annotated[
    DatetimeBasedCursor | IncrementingCountCursor | CustomIncrementalSync, Field(discriminator="type")
]
