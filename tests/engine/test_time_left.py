"""The time-left estimate: pure arithmetic on the work done, checked for every input hypothesis makes."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from hypothesis import given
from hypothesis import strategies as st

from framework.components.slices import StreamSlice
from framework.engine.sync import Unit
from framework.engine.time_left import fraction_done, time_left, unit_work

work = st.floats(min_value=0.0, max_value=1e9, allow_nan=False)
seconds = st.floats(min_value=0.001, max_value=1e6, allow_nan=False)


@given(done=work, planned=work, elapsed=seconds)
def test_time_left_is_never_negative_and_zero_once_all_is_done(done, planned, elapsed):
    left = time_left(done, planned, elapsed)
    if planned <= 0:
        assert left is None
    elif done >= planned:
        assert left == 0.0
    elif done <= 0:
        assert left is None
    else:
        assert left is not None and left >= 0


@given(planned=st.floats(min_value=1.0, max_value=1e9), elapsed=seconds,
       a=st.floats(min_value=0.01, max_value=1.0), b=st.floats(min_value=0.01, max_value=1.0))
def test_more_work_done_in_the_same_time_leaves_less_time(planned, elapsed, a, b):
    low, high = sorted((a * planned, b * planned))
    assert time_left(high, planned, elapsed) <= time_left(low, planned, elapsed) * (1 + 1e-9)


@given(planned=st.floats(min_value=1.0, max_value=1e6), share=st.floats(min_value=0.01, max_value=0.99),
       elapsed=seconds, factor=st.floats(min_value=0.1, max_value=10.0))
def test_the_rest_goes_at_the_pace_so_far(planned, share, elapsed, factor):
    done = share * planned
    left = time_left(done, planned, elapsed)
    # the whole takes elapsed / share; twice as slow, twice as long left
    assert abs((elapsed + left) - elapsed / share) <= 1e-6 * (elapsed / share)
    assert abs(time_left(done, planned, elapsed * factor) - left * factor) <= 1e-6 * left * factor


@given(done=work, planned=work, elapsed=seconds)
def test_nothing_is_estimated_while_the_plan_grows(done, planned, elapsed):
    assert time_left(done, planned, elapsed, planned_all=False) is None
    assert fraction_done(done, planned, planned_all=False) is None


@given(done=work, planned=st.floats(min_value=0.001, max_value=1e9))
def test_the_fraction_done_is_between_zero_and_one(done, planned):
    share = fraction_done(done, planned)
    assert share is not None and 0.0 <= share <= 1.0


class Windows:
    """A cursor whose slices are windows of ``start`` and ``end`` datetimes."""

    def window_bounds(self, cursor_slice):
        return cursor_slice["start"], cursor_slice["end"]


def unit(cursor_slice) -> Unit:
    return Unit(0, StreamSlice({}, cursor_slice), 0, 0)


@given(hours=st.integers(min_value=1, max_value=24 * 366))
def test_a_window_weighs_the_time_it_spans_and_a_partition_weighs_one(hours):
    start = datetime(2024, 1, 1, tzinfo=timezone.utc)
    window = unit({"start": start, "end": start + timedelta(hours=hours)})
    assert unit_work(window, Windows()) == hours * 3600
    assert unit_work(window, None) == 1.0  # no cursor: a partition
    assert unit_work(unit({}), Windows()) == 1.0  # a unit without a window
    assert unit_work(unit({"start": start, "end": start}), Windows()) == 1.0  # an empty window still counts
