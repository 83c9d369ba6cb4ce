"""MinMaxDatetime at run time: rendering, parsing (epoch formats too), clamping, errors."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from framework.components.context import BuildContext, builder_of
from framework.components.incremental import DEFAULT_FORMAT, MinMax
from framework.errors import ConfigError, DatetimeFormatError
from framework.interpolation import TemplateEngine
from framework.models.incremental import MinMaxDatetime
from framework.temporal.clock import FixedClock

UTC = timezone.utc
NOW = datetime(2024, 3, 10, 15, 30, 45, tzinfo=UTC)


def at(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)


def bound(source, fmt="%Y-%m-%d", low=None, high=None, config=None, parameters=None, now=NOW) -> MinMax:
    engine = TemplateEngine(FixedClock(now))
    variables = {"config": config or {}, "parameters": parameters or {}}
    return MinMax(engine, source, fmt, low, high, variables, name="start_datetime", place="manifest.yaml:3:5")


def test_plain_text_is_parsed_with_the_format():
    assert bound("2022-01-02").value() == at(2022, 1, 2)


def test_config_and_parameters_are_rendered():
    assert bound("{{ config['start'] }}", config={"start": "2021-05-06"}).value() == at(2021, 5, 6)
    assert bound("{{ parameters['since'] }}", parameters={"since": "2020-02-29"}).value() == at(2020, 2, 29)


def test_min_raises_an_earlier_value_and_max_lowers_a_later_one():
    assert bound("2019-01-01", low="2020-01-01").value() == at(2020, 1, 1)
    assert bound("2021-01-01", low="2020-01-01").value() == at(2021, 1, 1)
    assert bound("2030-01-01", high="2025-01-01").value() == at(2025, 1, 1)
    assert bound("2024-01-01", low="2020-01-01", high="2025-01-01").value() == at(2024, 1, 1)


def test_max_wins_when_the_bounds_cross():
    assert bound("2022-01-01", low="2024-01-01", high="2023-01-01").value() == at(2023, 1, 1)


def test_bounds_that_render_empty_are_ignored():
    made = bound("2019-01-01", low="{{ config.get('floor', '') }}", high="{{ config.get('ceiling') or '' }}")
    assert made.value() == at(2019, 1, 1)


def test_time_macros_read_the_engine_clock():
    made = bound("2030-01-01", high="{{ now_utc().strftime('%Y-%m-%d') }}")
    assert made.value() == at(2024, 3, 10)
    assert bound("{{ day_delta(-3, '%Y-%m-%d') }}").value() == at(2024, 3, 7)


def test_naive_values_are_utc_and_offsets_are_converted():
    assert bound("2022-01-01 10:00", "%Y-%m-%d %H:%M").value() == at(2022, 1, 1, 10)
    converted = bound("2022-01-01T10:00:00+0200", "%Y-%m-%dT%H:%M:%S%z").value()
    assert converted == at(2022, 1, 1, 8) and converted.tzinfo == UTC


@pytest.mark.parametrize(
    "fmt, value, low, expected, clamped",
    [
        ("%s", 1_600_000_000, "1650000000", at(2020, 9, 13, 12, 26, 40), at(2022, 4, 15, 5, 20)),
        ("%ms", 1_600_000_000_123, "1650000000000", at(2020, 9, 13, 12, 26, 40, 123000), at(2022, 4, 15, 5, 20)),
        ("%s_as_float", 1_600_000_000.5, "1650000000.25", at(2020, 9, 13, 12, 26, 40, 500000),
         at(2022, 4, 15, 5, 20, 0, 250000)),
        ("%epoch_microseconds", 1_600_000_000_000_001, "1650000000000002", at(2020, 9, 13, 12, 26, 40, 1),
         at(2022, 4, 15, 5, 20, 0, 2)),
        ("%Y-%m-%dT%H:%M:%S.%_msZ", "2020-09-13T12:26:40.123Z", "2022-04-15T05:20:00.007Z",
         at(2020, 9, 13, 12, 26, 40, 123000), at(2022, 4, 15, 5, 20, 0, 7000)),
    ],
)
def test_epoch_and_millisecond_formats_parse_and_clamp(fmt, value, low, expected, clamped):
    config = {"start": value}
    assert bound("{{ config['start'] }}", fmt, config=config).value() == expected
    assert bound("{{ config['start'] }}", fmt, low=low, config=config).value() == clamped
    assert bound("{{ config['start'] }}", fmt, high=low, config=config).value() == expected


@given(
    instants=st.lists(
        st.integers(min_value=0, max_value=4_000_000_000), min_size=3, max_size=3
    ),
    use_low=st.booleans(),
    use_high=st.booleans(),
)
def test_clamping_is_max_then_min(instants, use_low, use_high):
    value, low, high = instants
    low, high = min(low, high), max(low, high)
    made = bound(str(value), "%s", low=str(low) if use_low else None, high=str(high) if use_high else None)
    expected = value
    if use_low:
        expected = max(expected, low)
    if use_high:
        expected = min(expected, high)
    assert made.value() == datetime.fromtimestamp(expected, UTC)


def test_a_value_in_the_wrong_format_names_the_field_value_format_and_place():
    with pytest.raises(DatetimeFormatError) as caught:
        bound("{{ config['start'] }}", "%Y-%m-%dT%H:%M:%SZ", config={"start": "2022-01-01"}).value()
    message = str(caught.value)
    assert "`start_datetime`" in message and "'2022-01-01'" in message
    assert "'%Y-%m-%dT%H:%M:%SZ'" in message and "manifest.yaml:3:5" in message


def test_a_bad_min_is_named_as_such():
    with pytest.raises(DatetimeFormatError, match=r"`start_datetime.min_datetime`"):
        bound("2022-01-01", low="yesterday").value()


def test_an_empty_datetime_is_a_config_error():
    with pytest.raises(ConfigError, match="`start_datetime` rendered empty"):
        bound("{{ config.get('start', '') }}").value()


def test_given_variables_replace_the_captured_ones():
    made = bound("{{ config['start'] }}", config={"start": "2022-01-01"})
    assert made.value({"config": {"start": "2023-07-08"}, "parameters": {}}) == at(2023, 7, 8)


def test_secrets_are_masked_in_messages():
    engine = TemplateEngine(FixedClock(NOW))
    made = MinMax(engine, "{{ config['start'] }}", "%Y-%m-%d", variables={"config": {"start": "hunter2"}},
                  mask=lambda text: text.replace("hunter2", "****"))
    with pytest.raises(DatetimeFormatError) as caught:
        made.value()
    assert "hunter2" not in str(caught.value) and "****" in str(caught.value)


# -- the builder ---------------------------------------------------------------


def build(spec: dict, config: dict | None = None):
    clock = FixedClock(NOW)
    ctx = BuildContext(config=config or {}, clock=clock, engine=TemplateEngine(clock), transport=object())
    model = MinMaxDatetime.model_validate({"type": "MinMaxDatetime", **spec})
    return builder_of("MinMaxDatetime")(model, ctx, ("start_datetime",))


def test_builder_uses_the_model_format_and_bounds():
    made = build(
        {"datetime": "{{ config['start'] }}", "datetime_format": "%Y-%m-%d", "min_datetime": "2020-01-01",
         "$parameters": {"unused": 1}},
        {"start": "2010-01-01"},
    )
    assert made.value() == at(2020, 1, 1)


def test_builder_without_a_format_uses_the_default():
    assert DEFAULT_FORMAT == "%Y-%m-%dT%H:%M:%S.%f%z"
    made = build({"datetime": "2022-01-01T00:00:00.000000+0000"})
    assert made.value() == at(2022, 1, 1)
    with pytest.raises(DatetimeFormatError):
        build({"datetime": "2022-01-01"}).value()


def test_builder_renders_its_own_parameters():
    made = build({"datetime": "{{ parameters['start'] }}", "datetime_format": "%Y", "$parameters": {"start": "2021"}})
    assert made.value() == at(2021, 1, 1)
