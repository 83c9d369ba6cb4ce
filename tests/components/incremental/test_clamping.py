"""DatetimeBasedCursor `clamping`: rounding to days, weeks and months, and the windows it cuts."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import isodate
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from framework.components.context import BuildContext
from framework.components.incremental.windows import Clamp, clamp_of, clamped_windows
from framework.errors import ConfigError
from framework.interpolation import TemplateEngine
from framework.models import DatetimeBasedCursor
from framework.temporal.clock import FixedClock


def at(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)


DAY, MONDAY, MONTH = Clamp("DAY"), Clamp("WEEK", 0), Clamp("MONTH")


def test_rounding_up_and_down():
    assert DAY.up(at(2024, 1, 1, 10)) == at(2024, 1, 2) and DAY.up(at(2024, 1, 2)) == at(2024, 1, 2)
    assert DAY.down(at(2024, 1, 1, 10)) == at(2024, 1, 1)
    assert MONDAY.up(at(2024, 1, 3)) == at(2024, 1, 8)  # a Wednesday goes to the next Monday
    assert MONDAY.up(at(2024, 1, 8, 10)) == at(2024, 1, 8)  # on a Monday: that day's midnight (airbyte-cdk's)
    assert MONDAY.down(at(2024, 1, 10)) == at(2024, 1, 8)
    assert MONTH.up(at(2024, 1, 15)) == at(2024, 2, 1) and MONTH.up(at(2024, 12, 2)) == at(2025, 1, 1)
    assert MONTH.up(at(2024, 3, 1, 10)) == at(2024, 3, 1)
    assert MONTH.down(at(2024, 3, 31, 23)) == at(2024, 3, 1)


def test_the_sync_ends_with_the_last_whole_period():
    assert DAY.end(at(2024, 1, 6, 5), None) == at(2024, 1, 5, 23, 59, 59)
    assert MONTH.end(at(2024, 4, 10), None) == at(2024, 3, 31)
    assert MONTH.end(at(2024, 4, 10), timedelta(hours=1)) == at(2024, 3, 31, 23)


def test_windows_of_whole_months():
    end = MONTH.end(at(2024, 4, 10), timedelta(days=1))
    assert clamped_windows(at(2024, 1, 15), end, isodate.Duration(months=1), timedelta(days=1), MONTH) == [
        (at(2024, 2, 1), at(2024, 2, 29)), (at(2024, 3, 1), at(2024, 3, 31))]


def test_windows_of_days_two_at_a_time():
    end = DAY.end(at(2024, 1, 6, 5), timedelta(seconds=1))
    assert clamped_windows(at(2024, 1, 1, 10), end, timedelta(days=2), timedelta(seconds=1), DAY) == [
        (at(2024, 1, 2), at(2024, 1, 3, 23, 59, 59)), (at(2024, 1, 4), at(2024, 1, 5, 23, 59, 59))]


def test_a_start_after_the_last_whole_period_reads_nothing():
    assert clamped_windows(at(2024, 1, 5, 1), at(2024, 1, 4, 23, 59, 59), timedelta(days=1),
                           timedelta(seconds=1), DAY) == []


@given(st.datetimes(min_value=datetime(2020, 1, 1), max_value=datetime(2030, 1, 1)),
       st.integers(0, 400), st.integers(1, 40), st.sampled_from([DAY, MONDAY, Clamp("WEEK", 3), MONTH]))
def test_clamped_windows_are_ordered_aligned_and_inside_the_range(start, days, step_days, clamp):
    start = start.replace(tzinfo=UTC)
    gran = timedelta(seconds=1)
    end = clamp.end(start + timedelta(days=days), gran)
    windows = clamped_windows(start, end, timedelta(days=step_days), gran, clamp)
    if not windows:
        assert clamp.up(start) >= end
        return
    for (low, high), following in zip(windows, windows[1:] + [None], strict=True):
        assert clamp.up(start) <= low <= high <= end
        assert low == clamp.up(low)  # every window starts on a period
        if following is not None:
            assert following[0] == high + gran  # no gap, no overlap
    assert windows[-1][1] == end


# -- the model and the builder ----------------------------------------------------------------------------


BASE = {"type": "DatetimeBasedCursor", "cursor_field": "updated_at", "datetime_format": "%Y-%m-%d",
        "start_datetime": "2024-01-15", "end_datetime": "2024-04-10", "step": "P1M", "cursor_granularity": "P1D"}


def build(clamping: dict, config: dict | None = None):
    clock = FixedClock(at(2024, 6, 1))
    ctx = BuildContext(config=config or {}, clock=clock, engine=TemplateEngine(clock), transport=object(),
                       locate=lambda path: "m.yaml:7:3")
    return ctx.build(DatetimeBasedCursor.model_validate({**BASE, "clamping": clamping}), ("incremental_sync",))


def test_the_model_checks_a_plain_target_and_a_weeks_weekday():
    with pytest.raises(ValidationError, match="DAY, WEEK, MONTH"):
        DatetimeBasedCursor.model_validate({**BASE, "clamping": {"target": "YEAR"}})
    with pytest.raises(ValidationError, match="weekday"):
        DatetimeBasedCursor.model_validate({**BASE, "clamping": {"target": "WEEK"}})


def test_a_templated_target_is_checked_when_built():
    cursor = build({"target": "{{ config['period'] }}"}, {"period": "MONTH"})
    assert cursor.windows(None) == [{"start_time": "2024-02-01", "end_time": "2024-02-29"},
                                    {"start_time": "2024-03-01", "end_time": "2024-03-31"}]
    with pytest.raises(ConfigError, match=r"DAY, WEEK or MONTH.*m.yaml:7:3"):
        build({"target": "{{ config['period'] }}"}, {"period": "FORTNIGHT"})
    assert clamp_of("WEEK", "SUNDAY") == Clamp("WEEK", 6)
