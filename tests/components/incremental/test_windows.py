"""Cutting a datetime range into windows: the seed's table, calendar steps, guards and properties."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from itertools import pairwise

import isodate
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from framework.components.incremental.windows import datetime_windows
from framework.errors import ConfigError, DurationError

UTC = timezone.utc
US = timedelta(microseconds=1)


def at(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)


def test_seed_table_p1d_from_jan_1_to_jan_5():
    windows = datetime_windows(at(2022, 1, 1), at(2022, 1, 5), timedelta(days=1), US)
    assert windows == [
        (at(2022, 1, 1), at(2022, 1, 1, 23, 59, 59, 999999)),
        (at(2022, 1, 2), at(2022, 1, 2, 23, 59, 59, 999999)),
        (at(2022, 1, 3), at(2022, 1, 3, 23, 59, 59, 999999)),
        (at(2022, 1, 4), at(2022, 1, 4, 23, 59, 59, 999999)),
        (at(2022, 1, 5), at(2022, 1, 5)),
    ]


def test_start_after_end_gives_no_window():
    assert datetime_windows(at(2022, 1, 2), at(2022, 1, 1), timedelta(days=1), US) == []


def test_no_step_gives_the_whole_range():
    assert datetime_windows(at(2022, 1, 1), at(2023, 6, 1), None, None) == [(at(2022, 1, 1), at(2023, 6, 1))]


def test_start_equal_to_end_is_one_instant():
    assert datetime_windows(at(2022, 1, 1), at(2022, 1, 1), timedelta(days=1), US) == [
        (at(2022, 1, 1), at(2022, 1, 1))
    ]


def test_a_window_ending_exactly_at_the_end_is_the_last():
    windows = datetime_windows(at(2022, 1, 1), at(2022, 1, 2, 23, 59, 59), timedelta(days=1), timedelta(seconds=1))
    assert windows == [
        (at(2022, 1, 1), at(2022, 1, 1, 23, 59, 59)),
        (at(2022, 1, 2), at(2022, 1, 2, 23, 59, 59)),
    ]


def test_calendar_months_follow_the_calendar_without_drifting():
    windows = datetime_windows(at(2022, 1, 31), at(2022, 5, 10), isodate.Duration(months=1), timedelta(days=1))
    assert [w[0] for w in windows] == [at(2022, 1, 31), at(2022, 2, 28), at(2022, 3, 31), at(2022, 4, 30)]
    assert windows[0][1] == at(2022, 2, 27)
    assert windows[-1][1] == at(2022, 5, 10)


def test_an_end_inside_the_granularity_gap_closes_the_last_window():
    windows = datetime_windows(at(2022, 1, 1), at(2022, 1, 1, 0, 0, 1, 500000), timedelta(seconds=1), timedelta(seconds=1))
    assert windows == [(at(2022, 1, 1), at(2022, 1, 1)), (at(2022, 1, 1, 0, 0, 1), at(2022, 1, 1, 0, 0, 1, 500000))]


def test_calendar_years_over_a_leap_day():
    windows = datetime_windows(at(2020, 2, 29), at(2023, 1, 1), isodate.Duration(years=1), US)
    assert [w[0] for w in windows] == [at(2020, 2, 29), at(2021, 2, 28), at(2022, 2, 28)]


def test_no_granularity_makes_windows_touch():
    windows = datetime_windows(at(2022, 1, 1), at(2022, 1, 3), timedelta(days=1), None)
    assert windows == [(at(2022, 1, 1), at(2022, 1, 2)), (at(2022, 1, 2), at(2022, 1, 3))]


def test_granularity_equal_to_step_gives_single_instants():
    windows = datetime_windows(at(2022, 1, 1), at(2022, 1, 3), timedelta(days=1), timedelta(days=1))
    assert windows == [(at(2022, 1, d), at(2022, 1, d)) for d in (1, 2, 3)]


def test_granularity_longer_than_step_is_refused():
    with pytest.raises(DurationError, match="longer than step"):
        datetime_windows(at(2022, 1, 1), at(2022, 1, 3), timedelta(hours=1), timedelta(days=1))


@pytest.mark.parametrize("step", [timedelta(0), timedelta(days=-1), isodate.Duration(months=-1)])
def test_a_step_that_does_not_move_forward_is_refused(step):
    with pytest.raises(DurationError, match="positive"):
        datetime_windows(at(2022, 1, 1), at(2022, 1, 3), step, None)


def test_negative_granularity_is_refused():
    with pytest.raises(DurationError, match="negative"):
        datetime_windows(at(2022, 1, 1), at(2022, 1, 3), timedelta(days=1), timedelta(seconds=-1))


def test_an_absurd_number_of_windows_is_refused_before_cutting():
    with pytest.raises(ConfigError, match="more than 1,000,000 windows.*larger `step`"):
        datetime_windows(at(1970, 1, 1), at(2030, 1, 1), timedelta(seconds=1), None)


def test_the_window_limit_applies_to_calendar_steps_too():
    with pytest.raises(ConfigError, match="more than 3 windows"):
        datetime_windows(at(2022, 1, 1), at(2023, 1, 1), isodate.Duration(months=1), US, max_windows=3)
    assert len(datetime_windows(at(2022, 1, 1), at(2022, 3, 15), isodate.Duration(months=1), US, max_windows=3)) == 3


def test_a_range_reaching_the_last_year_ends_cleanly():
    end = datetime.max.replace(tzinfo=UTC)
    windows = datetime_windows(at(9999, 10, 1), end, isodate.Duration(months=1), US)
    assert windows[-1] == (at(9999, 12, 1), end)


# -- properties ---------------------------------------------------------------

GRANULARITIES = [None, timedelta(0), US, timedelta(milliseconds=1), timedelta(seconds=1), timedelta(days=1)]

fixed_steps = st.timedeltas(min_value=timedelta(seconds=1), max_value=timedelta(days=40))
calendar_steps = st.one_of(
    st.integers(1, 14).map(lambda n: isodate.Duration(months=n)),
    st.integers(1, 3).map(lambda n: isodate.Duration(years=n)),
    st.tuples(st.integers(1, 3), st.integers(1, 5)).map(lambda md: isodate.Duration(months=md[0], days=md[1])),
)


def shortest(step) -> timedelta:
    """A lower bound of the step's length (a month is at least 28 days)."""
    if isinstance(step, timedelta):
        return step
    return timedelta(days=28 * int(step.months + 12 * step.years)) + step.tdelta


@settings(max_examples=300, deadline=None)
@given(
    start=st.datetimes(min_value=datetime(1970, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)),
    step=st.one_of(fixed_steps, calendar_steps),
    granularity=st.sampled_from(GRANULARITIES),
    span=st.floats(min_value=0, max_value=60),
)
def test_windows_cover_the_range_in_order_without_gap_or_overlap(start, step, granularity, span):
    gap = granularity or timedelta(0)
    assume(gap <= shortest(step))
    end = start + shortest(step) * span
    windows = datetime_windows(start, end, step, granularity)

    assert windows, "a range with start <= end has at least one window"
    assert windows[0][0] == start
    assert windows[-1][1] == end
    for low, high in windows:
        assert low <= high
    for k, ((_, previous_end), (next_start, _)) in enumerate(pairwise(windows), start=1):
        assert next_start == previous_end + gap
        assert next_start == start + step * k  # anchored at the range start: no calendar drift
        assert next_start <= end
    assert len(windows) <= 62  # every window but the last spans a whole step


@settings(max_examples=100, deadline=None)
@given(
    start=st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2030, 1, 1), timezones=st.just(UTC)),
    back=st.timedeltas(min_value=US, max_value=timedelta(days=3000)),
    step=st.one_of(fixed_steps, calendar_steps),
)
def test_an_inverted_range_has_no_window(start, back, step):
    assert datetime_windows(start, start - back, step, US) == []
