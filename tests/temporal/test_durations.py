from datetime import datetime, timedelta, timezone

import isodate
import pytest

from framework.errors import DurationError, FrameworkError
from framework.temporal.durations import duration_problem, is_duration, parse_duration


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("P1D", timedelta(days=1)),
        ("PT1H", timedelta(hours=1)),
        ("PT30M", timedelta(minutes=30)),
        ("PT0.5S", timedelta(milliseconds=500)),
        ("P1W", timedelta(weeks=1)),
        ("P1DT12H", timedelta(days=1, hours=12)),
        ("-P1D", timedelta(days=-1)),
    ],
)
def test_fixed_durations_are_timedeltas(text, expected):
    value = parse_duration(text)
    assert type(value) is timedelta
    assert value == expected


def test_months_stay_calendar_months():
    month = parse_duration("P1M")
    assert isinstance(month, isodate.Duration)
    assert datetime(2024, 1, 31, tzinfo=timezone.utc) + month == datetime(
        2024, 2, 29, tzinfo=timezone.utc
    )
    assert datetime(2024, 3, 15) - month == datetime(2024, 2, 15)


def test_years_stay_calendar_years():
    year = parse_duration("P1Y")
    assert isinstance(year, isodate.Duration)
    assert datetime(2024, 2, 29) + year == datetime(2025, 2, 28)
    assert datetime(2023, 6, 1) + parse_duration("P1Y2M3D") == datetime(2024, 8, 4)


@pytest.mark.parametrize(
    ("text", "suggestion"),
    [
        ("1d", "P1D"),
        ("2h", "PT2H"),
        ("30 minutes", "PT30M"),
        ("1mo", "P1M"),
        ("p1d", "P1D"),
        ("P1H", "PT1H"),
        ("PT2D", "P2D"),
    ],
)
def test_errors_suggest_the_iso_spelling(text, suggestion):
    with pytest.raises(DurationError) as info:
        parse_duration(text)
    message = str(info.value)
    assert f"`{text}` is not an ISO 8601 duration" in message
    assert f"did you mean `{suggestion}`?" in message
    assert "`P1D` (one day)" in message and "`PT1H` (one hour)" in message
    assert isinstance(info.value, FrameworkError)
    assert isinstance(info.value, ValueError)
    assert is_duration(suggestion)


def test_error_without_an_obvious_fix_shows_examples():
    with pytest.raises(DurationError) as info:
        parse_duration("soon")
    assert str(info.value) == (
        "`soon` is not an ISO 8601 duration; write it like `P1D` (one day) or `PT1H` (one hour)"
    )


@pytest.mark.parametrize("value", ["", "   ", None, 5])
def test_empty_and_non_text_values(value):
    with pytest.raises(DurationError):
        parse_duration(value)  # type: ignore[arg-type]
    assert not is_duration(value)
    assert duration_problem(value)


def test_is_duration_and_duration_problem():
    assert is_duration("P1D")
    assert is_duration("P1Y2M")
    assert not is_duration("1 day")
    assert duration_problem("PT5M") is None
    problem = duration_problem("5m")
    assert problem is not None and "PT5M" in problem
