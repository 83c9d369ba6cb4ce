from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from framework.errors import DatetimeFormatError, FrameworkError
from framework.temporal.datetime_formats import (
    EPOCH,
    FormatProblem,
    format_datetime,
    format_problems,
    parse_datetime,
    parse_with_formats,
)

UTC = timezone.utc

utc_datetimes = st.datetimes(
    min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=st.just(UTC)
)
modern_datetimes = st.datetimes(
    min_value=datetime(1900, 1, 1), max_value=datetime(2200, 1, 1), timezones=st.just(UTC)
)
offsets = st.integers(min_value=-23 * 60 - 59, max_value=23 * 60 + 59).map(
    lambda minutes: timezone(timedelta(minutes=minutes))
)
aware_datetimes = st.datetimes(
    min_value=datetime(2, 1, 1), max_value=datetime(9998, 12, 31), timezones=offsets
)


def floor_to(dt: datetime, unit: timedelta) -> datetime:
    return EPOCH + ((dt - EPOCH) // unit) * unit


# -- round trips -------------------------------------------------------------


@given(utc_datetimes)
def test_epoch_seconds_round_trip_at_second_precision(dt):
    value = format_datetime(dt, "%s")
    assert type(value) is int
    assert parse_datetime(value, "%s") == floor_to(dt, timedelta(seconds=1))
    assert parse_datetime(str(value), "%s") == floor_to(dt, timedelta(seconds=1))


@given(utc_datetimes)
def test_epoch_milliseconds_round_trip_at_millisecond_precision(dt):
    value = format_datetime(dt, "%ms")
    assert type(value) is int
    assert parse_datetime(value, "%ms") == floor_to(dt, timedelta(milliseconds=1))


@given(utc_datetimes)
def test_epoch_microseconds_round_trip_exactly(dt):
    value = format_datetime(dt, "%epoch_microseconds")
    assert type(value) is int
    assert parse_datetime(value, "%epoch_microseconds") == dt
    assert parse_datetime(str(value), "%epoch_microseconds") == dt


@given(modern_datetimes)
def test_epoch_float_round_trips_to_the_microsecond(dt):
    value = format_datetime(dt, "%s_as_float")
    assert type(value) is float
    assert parse_datetime(value, "%s_as_float") == dt
    assert parse_datetime(repr(value), "%s_as_float") == dt


@given(aware_datetimes)
def test_iso_format_with_offset_round_trips_as_the_same_instant(dt):
    fmt = "%Y-%m-%dT%H:%M:%S.%f%z"
    parsed = parse_datetime(format_datetime(dt, fmt), fmt)
    assert parsed == dt
    assert parsed.tzinfo is UTC


@given(aware_datetimes)
def test_colon_offset_round_trips_at_second_precision(dt):
    fmt = "%Y-%m-%dT%H:%M:%S%:z"
    text = format_datetime(dt, fmt)
    assert text[-3] == ":"
    assert parse_datetime(text, fmt) == dt.replace(microsecond=0)


@given(utc_datetimes)
def test_inline_millisecond_directive_round_trips_at_millisecond_precision(dt):
    fmt = "%Y-%m-%dT%H:%M:%S.%_msZ"
    text = format_datetime(dt, fmt)
    assert len(text.rsplit(".", 1)[1]) == 4  # three digits and the Z
    assert parse_datetime(text, fmt) == dt.replace(microsecond=dt.microsecond // 1000 * 1000)


@settings(max_examples=50)
@given(utc_datetimes)
def test_date_only_format_round_trips_at_day_precision(dt):
    assert parse_datetime(format_datetime(dt, "%Y-%m-%d"), "%Y-%m-%d") == dt.replace(
        hour=0, minute=0, second=0, microsecond=0
    )


# -- specific behaviour ------------------------------------------------------


def test_special_formats_return_numbers_and_other_formats_return_text():
    dt = datetime(2024, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
    assert format_datetime(dt, "%s") == 1704164645
    assert format_datetime(dt, "%ms") == 1704164645678
    assert format_datetime(dt, "%epoch_microseconds") == 1704164645678901
    assert format_datetime(dt, "%s_as_float") == 1704164645.678901
    assert format_datetime(dt, "%Y-%m-%d") == "2024-01-02"


def test_millisecond_directive_truncates_to_three_digits():
    dt = datetime(2024, 1, 2, 3, 4, 5, 7999, tzinfo=UTC)
    assert format_datetime(dt, "%H:%M:%S.%_ms") == "03:04:05.007"


def test_millisecond_directive_parses_like_fractional_seconds():
    assert parse_datetime("05.123", "%S.%_ms").microsecond == 123000
    assert parse_datetime("05.5", "%S.%_ms").microsecond == 500000


def test_naive_datetimes_are_utc_both_ways():
    parsed = parse_datetime("2024-01-01 10:00:00", "%Y-%m-%d %H:%M:%S")
    assert parsed == datetime(2024, 1, 1, 10, tzinfo=UTC)
    assert parsed.tzinfo is UTC
    assert format_datetime(datetime(1970, 1, 2), "%s") == 86400
    assert format_datetime(datetime(2024, 1, 1), "%Y %z") == "2024 +0000"


def test_aware_results_are_converted_to_utc():
    parsed = parse_datetime("2024-01-01T05:30:00+05:30", "%Y-%m-%dT%H:%M:%S%z")
    assert parsed.tzinfo is UTC
    assert (parsed.hour, parsed.minute) == (0, 0)
    assert parse_datetime("2024-01-01T00:00:00Z", "%Y-%m-%dT%H:%M:%S%z").tzinfo is UTC


def test_formatting_keeps_the_datetimes_own_offset():
    dt = datetime(2024, 1, 1, 9, tzinfo=timezone(timedelta(hours=5, minutes=30)))
    assert format_datetime(dt, "%H %z %:z") == "09 +0530 +05:30"
    assert format_datetime(dt, "%s") == int((dt - EPOCH).total_seconds())


def test_years_before_1000_are_padded_and_parse_back():
    dt = datetime(5, 3, 4, tzinfo=UTC)
    assert format_datetime(dt, "%Y-%m-%d") == "0005-03-04"
    assert parse_datetime("0005-03-04", "%Y-%m-%d") == dt


def test_epoch_specials_before_1970_floor():
    dt = datetime(1969, 12, 31, 23, 59, 59, 500000, tzinfo=UTC)
    assert format_datetime(dt, "%s") == -1
    assert format_datetime(dt, "%ms") == -500


def test_inline_epoch_seconds_format_and_parse():
    dt = datetime(2024, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
    assert format_datetime(dt, "t=%s") == "t=1704164645"
    assert format_datetime(dt, "%s.%f") == "1704164645.678901"
    assert parse_datetime("1704164645.678901", "%s.%f") == dt
    assert parse_datetime("t=1704164645", "t=%s") == dt.replace(microsecond=0)


def test_percent_literal():
    dt = datetime(2024, 1, 1, tzinfo=UTC)
    assert format_datetime(dt, "100%% %Y") == "100% 2024"
    assert parse_datetime("100% 2024", "100%% %Y") == dt


def test_epoch_seconds_accepts_integers_and_truncates_floats():
    assert parse_datetime(" 60 ", "%s") == EPOCH + timedelta(minutes=1)
    assert parse_datetime(60.9, "%s") == EPOCH + timedelta(minutes=1)


@pytest.mark.parametrize(
    ("value", "fmt"),
    [
        ("1.5", "%s"),
        ("abc", "%ms"),
        (True, "%s"),
        ("abc", "%s_as_float"),
        ("2024-13-01", "%Y-%m-%d"),
        ("2024-01-01", "%d/%m/%Y"),
        (None, "%Y"),
        (10**30, "%s"),
    ],
)
def test_parse_errors_name_the_value_and_the_format(value, fmt):
    with pytest.raises(DatetimeFormatError) as info:
        parse_datetime(value, fmt)
    assert repr(value) in str(info.value)
    assert fmt in str(info.value)
    assert isinstance(info.value, FrameworkError)


def test_fractional_seconds_hint_for_epoch_seconds():
    with pytest.raises(DatetimeFormatError, match="%s_as_float"):
        parse_datetime("1.5", "%s")


def test_invalid_format_is_rejected_when_used():
    with pytest.raises(DatetimeFormatError, match="%Q"):
        format_datetime(datetime(2024, 1, 1), "%Y %Q")
    with pytest.raises(DatetimeFormatError, match="lone"):
        parse_datetime("2024", "%Y%")
    with pytest.raises(DatetimeFormatError):
        format_datetime("2024-01-01", "%Y")  # type: ignore[arg-type]


def test_parse_with_formats_tries_in_order():
    value = "2024-02-03"
    # Both formats fit; the first one decides.
    first = parse_with_formats(value, ["%Y-%m-%d", "%Y-%d-%m"])
    second = parse_with_formats(value, ["%Y-%d-%m", "%Y-%m-%d"])
    assert first == datetime(2024, 2, 3, tzinfo=UTC)
    assert second == datetime(2024, 3, 2, tzinfo=UTC)
    assert parse_with_formats("1700000000", ["%Y-%m-%d", "%s"]) == datetime.fromtimestamp(
        1700000000, UTC
    )


def test_parse_with_formats_lists_every_format_tried():
    with pytest.raises(DatetimeFormatError) as info:
        parse_with_formats("nope", ["%Y-%m-%d", "%s", "%ms"])
    for fmt in ("'%Y-%m-%d'", "'%s'", "'%ms'"):
        assert fmt in str(info.value)
    with pytest.raises(DatetimeFormatError, match="no datetime formats"):
        parse_with_formats("2024", [])


# -- static validation -------------------------------------------------------


@pytest.mark.parametrize(
    "fmt",
    [
        "%Y-%m-%dT%H:%M:%S.%f%z",
        "%Y-%m-%dT%H:%M:%S.%_msZ",
        "%a %A %w %d %b %B %m %y %Y %H %I %p %M %S %f %z %Z %j %U %W %c %x %X %% %G %u %V %:z",
        "%s",
        "%ms",
        "%s_as_float",
        "%epoch_microseconds",
        "%s.%f",
        "plain text",
    ],
)
def test_valid_formats_have_no_problems(fmt):
    assert format_problems(fmt) == []


def test_unknown_directive_with_suggestion():
    (problem,) = format_problems("%Y-%m-%d %Q")
    assert problem == FormatProblem(
        offset=9,
        directive="%Q",
        message="unknown directive `%Q`; did you mean `%ms`?",
        fix="replace `%Q` with `%ms`",
    )


@pytest.mark.parametrize(
    ("fmt", "offset", "directive", "suggestion"),
    [
        ("%Y-%e", 3, "%e", "%d"),
        ("%i:%M", 0, "%i", "%I"),
        ("%T", 0, "%T", "%H:%M:%S"),
        ("%epoch_ms", 0, "%epoch_ms", "%epoch_microseconds"),
        ("%Y%:q", 2, "%:q", "%:z"),
    ],
)
def test_did_you_mean(fmt, offset, directive, suggestion):
    (problem,) = format_problems(fmt)
    assert (problem.offset, problem.directive) == (offset, directive)
    assert f"did you mean `{suggestion}`?" in problem.message
    assert problem.severity == "error"


def test_lone_trailing_percent():
    (problem,) = format_problems("%Y-%m-%")
    assert problem.offset == 6
    assert "lone `%`" in problem.message
    assert "%%" in (problem.fix or "")


def test_whole_format_specials_inside_a_larger_format():
    (problem,) = format_problems("x%s_as_float")
    assert problem.offset == 1
    assert "whole format" in problem.message


def test_platform_flags_are_warnings():
    (problem,) = format_problems("%Y-%-m-%d")
    assert problem.severity == "warning"
    assert problem.offset == 3
    assert format_datetime(datetime(2024, 3, 4), "%Y-%-m") in ("2024-3", "2024-%-m")


def test_empty_format_and_multiple_problems():
    assert format_problems("")[0].message == "the format is empty"
    problems = format_problems("%Q %Y %K %")
    assert [p.offset for p in problems] == [0, 6, 9]
    assert format_problems("%Y") == []
