"""The DatetimeBasedCursor's value logic: windows, state, lookback, parsing, filtering, request options."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from itertools import pairwise

import isodate
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from framework.components.context import BuildContext, builder_of
from framework.components.http.request import RequestParts
from framework.components.incremental import DatetimeCursor
from framework.errors import ConfigError, DatetimeFormatError, DurationError, StateError
from framework.interpolation import TemplateEngine
from framework.models.incremental import DatetimeBasedCursor
from framework.temporal.clock import FixedClock

UTC = timezone.utc
NOW = datetime(2024, 3, 10, 15, 30, 45, 123456, tzinfo=UTC)
ISO_US = "%Y-%m-%dT%H:%M:%S.%f%z"
PATH = ("streams", 0, "retriever", "incremental_sync")


def at(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)


def build(spec: dict, config: dict | None = None, clock: FixedClock | None = None) -> DatetimeCursor:
    clock = clock or FixedClock(NOW)
    ctx = BuildContext(
        config=config or {}, clock=clock, engine=TemplateEngine(clock), transport=object(),
        locate=lambda path: "manifest.yaml:12:7" if path == PATH else None,
    )
    fields = {"cursor_field": "updated_at", "datetime_format": "%Y-%m-%dT%H:%M:%SZ", **spec}
    model = DatetimeBasedCursor.model_validate({"type": "DatetimeBasedCursor", **fields})
    return builder_of("DatetimeBasedCursor")(model, ctx, PATH)


SEED = {
    "start_datetime": "2022-01-01T00:00:00.000000+0000",
    "end_datetime": "2022-01-05T00:00:00.000000+0000",
    "datetime_format": ISO_US,
    "cursor_granularity": "PT0.000001S",
    "step": "P1D",
}


def test_seed_example_gives_the_seed_table():
    cursor = build(SEED)
    assert cursor.windows(None) == [
        {"start_time": "2022-01-01T00:00:00.000000+0000", "end_time": "2022-01-01T23:59:59.999999+0000"},
        {"start_time": "2022-01-02T00:00:00.000000+0000", "end_time": "2022-01-02T23:59:59.999999+0000"},
        {"start_time": "2022-01-03T00:00:00.000000+0000", "end_time": "2022-01-03T23:59:59.999999+0000"},
        {"start_time": "2022-01-04T00:00:00.000000+0000", "end_time": "2022-01-04T23:59:59.999999+0000"},
        {"start_time": "2022-01-05T00:00:00.000000+0000", "end_time": "2022-01-05T00:00:00.000000+0000"},
    ]


def test_partition_field_names_are_configurable():
    cursor = build({**SEED, "partition_field_start": "start_date", "partition_field_end": "end_date"})
    assert cursor.windows(None)[0] == {
        "start_date": "2022-01-01T00:00:00.000000+0000", "end_date": "2022-01-01T23:59:59.999999+0000",
    }


def test_compare_strictly_drops_the_window_whose_start_equals_its_end():
    windows = build({**SEED, "is_compare_strictly": True}).windows(None)
    assert len(windows) == 4
    assert windows[-1]["end_time"] == "2022-01-04T23:59:59.999999+0000"


def test_without_end_the_range_ends_now_by_the_injected_clock():
    clock = FixedClock(at(2022, 1, 3, 12))
    cursor = build({"start_datetime": "2022-01-01T00:00:00Z", "step": "P1D", "cursor_granularity": "PT1S"},
                   clock=clock)
    assert cursor.bounds() == (at(2022, 1, 1), at(2022, 1, 3, 12))
    assert cursor.windows(None)[-1] == {"start_time": "2022-01-03T00:00:00Z", "end_time": "2022-01-03T12:00:00Z"}
    clock.advance(timedelta(days=1))
    assert cursor.windows(None)[-1] == {"start_time": "2022-01-04T00:00:00Z", "end_time": "2022-01-04T12:00:00Z"}


def test_an_end_in_the_future_stops_at_now():
    cursor = build({"start_datetime": "2024-03-09T00:00:00Z", "end_datetime": "2030-01-01T00:00:00Z"})
    assert cursor.bounds() == (at(2024, 3, 9), NOW)
    assert cursor.windows(None) == [{"start_time": "2024-03-09T00:00:00Z", "end_time": "2024-03-10T15:30:45Z"}]


def test_a_start_after_the_end_reads_nothing():
    cursor = build({"start_datetime": "2024-04-01T00:00:00Z"})
    assert cursor.windows(None) == []


def test_bounds_come_from_config_and_min_max_datetimes():
    cursor = build(
        {
            "start_datetime": {"type": "MinMaxDatetime", "datetime": "{{ config['start_date'] }}",
                               "min_datetime": "2020-01-01T00:00:00Z"},
            "end_datetime": {"type": "MinMaxDatetime", "datetime": "{{ config['end_date'] }}",
                             "datetime_format": "%Y-%m-%d"},
        },
        {"start_date": "2015-06-01T00:00:00Z", "end_date": "2021-01-01"},
    )
    assert cursor.bounds() == (at(2020, 1, 1), at(2021, 1, 1))


# -- state and lookback -----------------------------------------------------------

# Bounds with their own format, so that tests may change the cursor's datetime_format.
DAILY = {
    "start_datetime": {"type": "MinMaxDatetime", "datetime": "2022-01-01", "datetime_format": "%Y-%m-%d"},
    "end_datetime": {"type": "MinMaxDatetime", "datetime": "2022-03-01", "datetime_format": "%Y-%m-%d"},
    "step": "P1D",
    "cursor_granularity": "PT1S",
}


def test_a_string_bound_is_read_in_the_cursor_format():
    cursor = build({"start_datetime": "{{ config['start'] }}", "datetime_format": "%s"}, {"start": 1640995200})
    assert cursor.bounds() == (at(2022, 1, 1), NOW)
    with pytest.raises(DatetimeFormatError, match=r"`start_datetime` is '2022-01-01'.*'%s'.*manifest.yaml"):
        build({"start_datetime": "2022-01-01", "datetime_format": "%s"}).bounds()


def test_state_moves_the_start_and_is_read_again_inclusively():
    cursor = build(DAILY)
    windows = cursor.windows(at(2022, 2, 27, 6))
    assert windows[0] == {"start_time": "2022-02-27T06:00:00Z", "end_time": "2022-02-28T05:59:59Z"}
    assert windows[-1]["end_time"] == "2022-03-01T00:00:00Z"


def test_a_state_before_the_start_keeps_the_start():
    assert build(DAILY).windows(at(2021, 6, 1))[0]["start_time"] == "2022-01-01T00:00:00Z"


ONE_INSTANT = {"start_datetime": "2024-01-05T00:00:00Z", "end_datetime": "2024-01-05T00:00:00Z"}
AT_END = at(2024, 1, 5)


@pytest.mark.parametrize("extra", [{}, {"cursor_granularity": "PT0S", "step": "P7D"},
                                   {"cursor_granularity": "PT1S", "step": "P1D", "is_compare_strictly": True}])
def test_a_range_of_one_instant_without_granularity_is_not_read(extra):
    # airbyte-cdk sends no request for since=t&until=t when the cursor has no granularity: first and later syncs
    cursor = build({**ONE_INSTANT, **extra})
    assert cursor.windows(None) == []
    assert cursor.windows(AT_END) == []
    assert build({**ONE_INSTANT, **extra, "start_datetime": "2024-01-01T00:00:00Z"}).windows(AT_END) == []


@pytest.mark.parametrize("extra", [{"cursor_granularity": "PT1S", "step": "P1D"},
                                   {"cursor_granularity": "PT1S", "step": "P1D", "lookback_window": "PT0S"}])
def test_with_a_granularity_the_one_instant_is_read(extra):
    one = [{"start_time": "2024-01-05T00:00:00Z", "end_time": "2024-01-05T00:00:00Z"}]
    assert build({**ONE_INSTANT, **extra}).windows(None) == one
    assert build({**ONE_INSTANT, **extra, "start_datetime": "2024-01-01T00:00:00Z"}).windows(AT_END) == one


def test_a_lookback_that_moves_the_start_before_the_end_reads_the_instant():
    one = [{"start_time": "2024-01-05T00:00:00Z", "end_time": "2024-01-05T00:00:00Z"}]
    # the first sync looks back from the start too (clamped to it): one window, as airbyte-cdk
    assert build({**ONE_INSTANT, "lookback_window": "P1D"}).windows(None) == one
    # a state one lookback past the end starts the range at its end: nothing, as airbyte-cdk
    assert build({**ONE_INSTANT, "lookback_window": "P1D", "start_datetime": "2024-01-01T00:00:00Z"}).windows(
        at(2024, 1, 6)) == []

@given(st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2040, 1, 1), timezones=st.just(UTC)))
@settings(max_examples=60, deadline=None)
def test_start_of_is_the_saved_value_never_below_the_start(saved):
    """What a sync that reads no record keeps (airbyte-cdk's rule): the saved value, or start_datetime when that
    is later or nothing was saved."""
    cursor = build(SEED)
    start = at(2022, 1, 1)
    assert cursor.start_of(None) == start
    assert cursor.start_of(saved) == max(saved, start)


def test_a_state_after_the_end_reads_nothing():
    assert build(DAILY).windows(at(2022, 3, 2)) == []


def test_lookback_reads_again_before_the_state_but_never_before_the_start():
    cursor = build({**DAILY, "lookback_window": "P3D"})
    assert cursor.lookback == timedelta(days=3)
    assert cursor.windows(at(2022, 2, 15))[0]["start_time"] == "2022-02-12T00:00:00Z"
    assert cursor.windows(at(2022, 1, 2))[0]["start_time"] == "2022-01-01T00:00:00Z"


def test_seed_lookback_example_never_reads_before_start_datetime():
    cursor = build({"start_datetime": "2022-02-01T00:00:00.000000+0000",
                    "end_datetime": "2022-03-01T00:00:00.000000+0000", "datetime_format": ISO_US,
                    "cursor_granularity": "PT0.000001S", "lookback_window": "P31D", "step": "P1D"})
    windows = cursor.windows(at(2022, 2, 20))
    assert windows[0] == {"start_time": "2022-02-01T00:00:00.000000+0000",
                          "end_time": "2022-02-01T23:59:59.999999+0000"}
    assert len(windows) == 29


def test_lookback_is_a_template_rendered_at_build_and_may_be_calendar_months():
    cursor = build({**DAILY, "lookback_window": "{{ config['lookback'] }}"}, {"lookback": "P1M"})
    assert cursor.lookback == isodate.Duration(months=1)
    assert cursor.windows(at(2022, 2, 28))[0]["start_time"] == "2022-01-28T00:00:00Z"


def test_a_lookback_that_renders_empty_means_none():
    cursor = build({**DAILY, "lookback_window": "{{ config.get('lookback', '') }}"})
    assert cursor.lookback is None
    assert cursor.windows(at(2022, 2, 15))[0]["start_time"] == "2022-02-15T00:00:00Z"


def test_min_lookback_adds_to_the_lookback_as_airbyte_does():
    """A global substream cursor's saved duration and the manifest's lookback_window add up (cursor difference 3 of tests/parity/README.md)."""
    cursor = build({**DAILY, "lookback_window": "P3D"})
    assert cursor.windows(at(2022, 2, 15), min_lookback=timedelta(days=5))[0]["start_time"] == "2022-02-07T00:00:00Z"
    assert cursor.windows(at(2022, 2, 15), min_lookback=timedelta(days=1))[0]["start_time"] == "2022-02-11T00:00:00Z"
    assert build(DAILY).windows(at(2022, 2, 15), min_lookback=timedelta(days=1))[0]["start_time"] == \
        "2022-02-14T00:00:00Z"


def test_keep_range_is_airbytes_should_be_synced_window():
    cursor = build({**DAILY, "lookback_window": "P3D"})
    start, end = cursor.bounds()
    assert cursor.keep_range(None) == (start, end)  # a first read keeps from start_datetime
    assert cursor.keep_range(at(2022, 2, 15)) == (at(2022, 2, 12), end)
    assert cursor.keep_range(at(2022, 2, 15), timedelta(days=1)) == (at(2022, 2, 11), end)
    # a state before start_datetime: kept from the state itself, not from the lookback before it
    early = at(2021, 6, 1)
    assert early < start
    assert cursor.keep_range(early) == (early, end)


# -- reading values -----------------------------------------------------------------


def test_parse_tries_cursor_formats_in_order_then_datetime_format():
    cursor = build({**DAILY, "datetime_format": "%s",
                    "cursor_datetime_formats": ["%Y-%m-%dT%H:%M:%S.%fZ", "%Y-%m-%d"]})
    assert cursor.formats == ("%Y-%m-%dT%H:%M:%S.%fZ", "%Y-%m-%d", "%s")
    assert cursor.parse("2022-01-01T10:00:00.5Z") == at(2022, 1, 1, 10, 0, 0, 500000)
    assert cursor.parse("2022-01-02") == at(2022, 1, 2)
    assert cursor.parse(1640995200) == at(2022, 1, 1)
    assert cursor.parse("1640995200") == at(2022, 1, 1)
    with pytest.raises(DatetimeFormatError) as caught:
        cursor.parse("last tuesday")
    message = str(caught.value)
    assert "'last tuesday'" in message and "`updated_at`" in message
    assert "'%Y-%m-%dT%H:%M:%S.%fZ', '%Y-%m-%d', '%s'" in message and "cursor_datetime_formats" in message


def test_values_compare_as_instants_not_text():
    cursor = build({**DAILY, "datetime_format": "%Y-%m-%dT%H:%M:%S%z"})
    earlier = cursor.parse("2022-01-01T12:00:00+0500")  # 07:00 UTC
    later = cursor.parse("2022-01-01T09:00:00+0000")
    assert earlier < later  # as text, the first would sort after the second


def test_record_value_is_none_when_missing_or_unreadable():
    cursor = build(DAILY)
    assert cursor.record_value({"updated_at": "2022-01-01T00:00:05Z"}) == at(2022, 1, 1, 0, 0, 5)
    assert cursor.record_value({"id": 1}) is None
    assert cursor.record_value({"updated_at": None}) is None
    assert cursor.record_value({"updated_at": ""}) is None
    assert cursor.record_value({"updated_at": "soon"}) is None


def test_cursor_field_is_a_template():
    cursor = build({**DAILY, "cursor_field": "{{ parameters['cursor'] }}", "$parameters": {"cursor": "modified"}})
    assert cursor.cursor_field == "modified"
    assert cursor.state_of(at(2022, 1, 1)) == {"modified": "2022-01-01T00:00:00Z"}


# -- state -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fmt, kind",
    [("%Y-%m-%dT%H:%M:%SZ", str), (ISO_US, str), ("%Y-%m-%dT%H:%M:%S.%_msZ", str), ("%s", str), ("%ms", str),
     ("%epoch_microseconds", str), ("%s_as_float", str)],
)
def test_state_round_trips_with_a_stable_type(fmt, kind):
    # State is always text, as Airbyte writes it (an epoch cursor too: "1651820889").
    cursor = build({**DAILY, "datetime_format": fmt})
    state = cursor.state_of(at(2022, 5, 6, 7, 8, 9, 123456))
    assert list(state) == ["updated_at"] and type(state["updated_at"]) is kind
    again = cursor.state_of(cursor.state_value(state))
    assert again == state and type(again["updated_at"]) is kind


@settings(max_examples=200, deadline=None)
@given(
    instant=st.datetimes(min_value=datetime(1970, 1, 1), max_value=datetime(2200, 1, 1), timezones=st.just(UTC)),
    fmt=st.sampled_from(["%Y-%m-%dT%H:%M:%SZ", ISO_US, "%Y-%m-%dT%H:%M:%S.%_msZ", "%s", "%ms",
                         "%epoch_microseconds", "%Y-%m-%d"]),
)
def test_state_read_back_is_the_instant_floored_to_the_format(instant, fmt):
    cursor = build({**DAILY, "datetime_format": fmt})
    read = cursor.state_value(cursor.state_of(instant))
    assert read <= instant < read + timedelta(days=1)
    assert cursor.state_of(read) == cursor.state_of(instant)


def test_state_in_another_accepted_shape_is_read():
    cursor = build({**DAILY, "datetime_format": "%s", "cursor_datetime_formats": ["%Y-%m-%dT%H:%M:%SZ"]})
    assert cursor.state_value({"updated_at": 1640995200}) == at(2022, 1, 1)
    assert cursor.state_value({"updated_at": "1640995200"}) == at(2022, 1, 1)
    assert cursor.state_value({"updated_at": 1640995200.9}) == at(2022, 1, 1)
    assert cursor.state_value({"updated_at": "2022-01-01T00:00:00Z"}) == at(2022, 1, 1)
    assert cursor.state_of(at(2022, 1, 1)) == {"updated_at": "1640995200"}


def test_text_state_for_a_text_format_with_digits():
    cursor = build({**DAILY, "datetime_format": "%Y%m%d"})
    assert cursor.state_value({"updated_at": 20220131}) == at(2022, 1, 31)
    assert cursor.state_value({"updated_at": "20220131"}) == at(2022, 1, 31)


@pytest.mark.parametrize("state", [None, {}, {"other": "x"}, {"updated_at": None}, {"updated_at": ""}])
def test_no_saved_value_means_no_state(state):
    assert build(DAILY).state_value(state) is None


def test_an_unreadable_state_names_the_field_and_the_expected_format():
    with pytest.raises(StateError) as caught:
        build(DAILY).state_value({"updated_at": "2022/01/01"})
    message = str(caught.value)
    assert "`updated_at`" in message and "'2022/01/01'" in message
    assert "'%Y-%m-%dT%H:%M:%SZ'" in message and "'2024-01-31T12:30:00Z'" in message


@pytest.mark.parametrize("value", [True, {"nested": 1}, [1]])
def test_a_state_value_of_the_wrong_type_is_refused(value):
    with pytest.raises(StateError):
        build({**DAILY, "datetime_format": "%s"}).state_value({"updated_at": value})


def test_a_state_that_is_not_an_object_is_refused():
    with pytest.raises(StateError, match="should be an object like"):
        build(DAILY).state_value([{"partition": "A", "updated_at": "2022-01-01T00:00:00Z"}])


# -- filtering records ----------------------------------------------------------------


def test_in_window_includes_both_ends():
    cursor = build({**DAILY, "datetime_format": ISO_US, "cursor_granularity": "PT0.000001S"})
    window = cursor.windows(None)[1]
    assert cursor.window_bounds(window) == (at(2022, 1, 2), at(2022, 1, 2, 23, 59, 59, 999999))
    assert cursor.in_window(at(2022, 1, 2), window)
    assert cursor.in_window(at(2022, 1, 2, 23, 59, 59, 999999), window)
    assert not cursor.in_window(at(2022, 1, 3), window)
    assert not cursor.in_window(at(2022, 1, 1, 23, 59, 59, 999999), window)


def test_in_window_keeps_values_finer_than_the_format_up_to_the_next_window():
    cursor = build(DAILY)  # whole seconds, granularity PT1S
    first, second = cursor.windows(None)[:2]
    late = at(2022, 1, 1, 23, 59, 59, 500000)
    assert cursor.in_window(late, first) and not cursor.in_window(late, second)
    assert not cursor.in_window(at(2022, 1, 2), first) and cursor.in_window(at(2022, 1, 2), second)


def test_in_window_reads_epoch_slices():
    cursor = build({**DAILY, "datetime_format": "%s"})
    window = cursor.windows(None)[0]
    assert window == {"start_time": 1640995200, "end_time": 1641081599}
    assert cursor.in_window(at(2022, 1, 1, 12), window)
    assert not cursor.in_window(at(2022, 1, 2, 0, 0, 1), window)


def test_in_window_without_step_covers_the_whole_range():
    cursor = build({"start_datetime": "2022-01-01T00:00:00Z", "end_datetime": "2022-02-01T00:00:00Z"})
    [window] = cursor.windows(None)
    assert cursor.in_window(at(2022, 2, 1), window)
    assert not cursor.in_window(at(2022, 2, 1, 0, 0, 0, 1), window)


# -- requests -----------------------------------------------------------------------------


def test_apply_puts_the_window_where_the_options_say():
    cursor = build({
        **DAILY,
        "datetime_format": "%s",
        "start_time_option": {"type": "RequestOption", "inject_into": "request_parameter",
                              "field_name": "{{ config['prefix'] }}[gte]"},
        "end_time_option": {"type": "RequestOption", "inject_into": "body_json", "field_path": ["filter", "lte"]},
    }, {"prefix": "created"})
    parts = RequestParts()
    window = cursor.windows(None)[0]
    cursor.apply(parts, window)
    assert parts.params == {"created[gte]": 1640995200}
    assert parts.json == {"filter": {"lte": 1641081599}}


def test_apply_without_options_changes_nothing():
    parts = RequestParts()
    build(DAILY).apply(parts, build(DAILY).windows(None)[0])
    assert parts == RequestParts()


def test_flags_are_kept():
    cursor = build({**DAILY, "global_substream_cursor": True, "is_compare_strictly": True})
    assert cursor.global_substream_cursor and cursor.is_compare_strictly
    assert not cursor.is_data_feed and not cursor.is_client_side_incremental
    assert cursor.step == timedelta(days=1) and cursor.granularity == timedelta(seconds=1)


# -- build errors ----------------------------------------------------------------------------


def test_granularity_longer_than_step_is_refused_at_build_with_the_place():
    with pytest.raises(DurationError, match=r"longer than `step` PT1H.*manifest.yaml:12:7"):
        build({**DAILY, "step": "PT1H", "cursor_granularity": "P1D"})


def test_step_and_granularity_may_be_templates_of_the_config():
    cursor = build({**DAILY, "step": "P{{ config.window_days }}D", "cursor_granularity": "{{ config.grain }}"},
                   config={"window_days": 30, "grain": "PT1S"})
    assert cursor.step == timedelta(days=30) and cursor.granularity == timedelta(seconds=1)


def test_a_template_step_that_renders_badly_says_which_field():
    with pytest.raises(DurationError, match="`step`.*manifest.yaml:12:7"):
        build({**DAILY, "step": "P{{ config.window_days }}D"}, config={"window_days": "x"})


def test_a_negative_step_is_refused_at_build():
    with pytest.raises(DurationError, match="positive"):
        build({**DAILY, "step": "-P1D"})


def test_a_bad_lookback_says_which_field():
    with pytest.raises(DurationError, match="`lookback_window`.*P3D"):
        build({**DAILY, "lookback_window": "3 days"})


def test_far_too_many_windows_is_a_clear_error():
    cursor = build({"start_datetime": "1970-01-01T00:00:00Z", "step": "PT1S", "cursor_granularity": "PT1S"})
    with pytest.raises(ConfigError, match="windows"):
        cursor.windows(None)


@settings(max_examples=100, deadline=None)
@given(
    start=st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2023, 1, 1), timezones=st.just(UTC)),
    days=st.integers(0, 400),
    step=st.sampled_from(["P1D", "P7D", "PT6H", "P1M", "P1Y"]),
    state_offset=st.one_of(st.none(), st.integers(-30, 430)),
)
def test_formatted_windows_chain_without_gap(start, days, step, state_offset):
    start = start.replace(microsecond=0)
    end = start + timedelta(days=days)
    cursor = build({"start_datetime": start.strftime("%Y-%m-%dT%H:%M:%SZ"),
                    "end_datetime": end.strftime("%Y-%m-%dT%H:%M:%SZ"),
                    "step": step, "cursor_granularity": "PT1S"})
    state = None if state_offset is None else start + timedelta(days=state_offset)
    windows = cursor.windows(state)
    first = start if state is None else max(start, state)
    if first > end:
        assert windows == []
        return
    bounds = [cursor.window_bounds(w) for w in windows]
    assert bounds[0][0] == first and bounds[-1][1] == end
    for (_, previous_end), (next_start, _) in pairwise(bounds):
        assert next_start == previous_end + timedelta(seconds=1)
