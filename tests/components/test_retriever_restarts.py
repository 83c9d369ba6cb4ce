"""Pagination restarts of the page loop (framework.components.retriever): which slice is read after a
restart, and when restarting is refused."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from framework.components.retriever import (
    MAX_SPLIT_DEPTH,
    PageSizes,
    PaginationResets,
    WindowSplits,
    _Reducer,
    _Restarts,
)
from framework.components.slices import StreamSlice
from framework.errors import ReadError

WINDOW = StreamSlice({"account": 1}, {"start_time": "2024-01-01", "end_time": "2024-01-31"}, {"name": "a"})


class DayCursor:
    partition_field_start = "start_time"

    def record_value(self, record):
        value = record.get("day")
        return None if value is None else datetime(2024, 1, value, tzinfo=timezone.utc)

    def format(self, dt):
        return dt.strftime("%Y-%m-%d")


def test_reset_keeps_the_slice_and_refuses_a_second_restart():
    restarts = _Restarts(PaginationResets(), DayCursor(), WINDOW)
    assert restarts.restart(WINDOW, WINDOW, "RESET_PAGINATION", None) == WINDOW
    with pytest.raises(ReadError, match="2 times for the same slice") as caught:
        restarts.restart(WINDOW, WINDOW, "RESET_PAGINATION", "m.yaml:3:5")
    assert caught.value.failure_type == "system_error" and caught.value.place == "m.yaml:3:5"


def test_split_starts_the_window_at_the_latest_value_and_keeps_partition_and_extra_fields():
    restarts = _Restarts(PaginationResets(split=True), DayCursor(), WINDOW)
    restarts.observe([{"day": 5}, {"day": 9}, {"day": 7}, {"no": "day"}])
    narrowed = restarts.restart(WINDOW, WINDOW, "x", None)
    assert narrowed == StreamSlice({"account": 1}, {"start_time": "2024-01-09", "end_time": "2024-01-31"},
                                   {"name": "a"})
    restarts.observe([{"day": 12}])
    assert restarts.restart(WINDOW, narrowed, "x", None).cursor_slice["start_time"] == "2024-01-12"
    with pytest.raises(ReadError, match="same window without reading further"):
        restarts.restart(WINDOW, restarts.restart(WINDOW, narrowed, "x", None), "x", None)


def test_split_without_any_cursor_value_fails_at_once():
    restarts = _Restarts(PaginationResets(split=True), DayCursor(), WINDOW)
    with pytest.raises(ReadError):
        restarts.restart(WINDOW, WINDOW, "x", None)


def test_split_on_a_slice_without_a_window_behaves_as_reset():
    plain = StreamSlice({"account": 1})
    restarts = _Restarts(PaginationResets(split=True), DayCursor(), plain)
    assert not restarts.split
    assert restarts.restart(plain, plain, "x", None) == plain


@given(st.lists(st.lists(st.integers(min_value=0, max_value=20), max_size=8), max_size=10),
       st.integers(min_value=1, max_value=30))
def test_the_limit_counts_records_since_the_last_restart(pages, limit):
    restarts = _Restarts(PaginationResets(limit=limit), None, WINDOW)
    since = 0
    for page in pages:
        records = [{"n": n} for n in page]
        since += len(records)
        assert restarts.observe(records) == (since >= limit)
        if since >= limit:
            restarts.count = 0  # what restart() does, without its same-slice bookkeeping
            since = 0


# -- page size reductions -------------------------------------------------------------------


def sizes(**more):
    waits = []
    settings = dict(factor=2.0, minimum=1, max_attempts=5, backoff=0.5, retries_at_minimum=0, failure_message=None,
                    restore=False, sleep=waits.append, place="m.yaml:9:7")
    settings.update(more)
    return PageSizes(**settings), waits


@given(st.integers(min_value=2, max_value=5000), st.floats(min_value=1.1, max_value=8),
       st.integers(min_value=1, max_value=50), st.integers(min_value=1, max_value=8))
def test_reductions_shrink_strictly_never_below_the_minimum_and_stop(configured, factor, minimum, attempts):
    settings, waits = sizes(factor=factor, minimum=minimum, max_attempts=attempts, backoff=1.0)
    reducer = _Reducer(settings, configured)
    seen = [configured]
    with pytest.raises(ReadError) as caught:
        while True:
            seen.append(reducer.reduce("too heavy"))
            assert len(seen) <= attempts + 1
    assert all(later < earlier for earlier, later in zip(seen, seen[1:]))
    assert all(size >= minimum for size in seen[1:])
    assert waits == [float(n) for n in range(1, len(seen))]  # backoff times the attempts in a row
    assert caught.value.failure_type in ("transient_error", "config_error")
    assert caught.value.place == "m.yaml:9:7"


def test_a_page_that_gets_through_restarts_the_attempts_and_restores_only_when_asked():
    keeping, _ = sizes(max_attempts=1)
    reducer = _Reducer(keeping, 100)
    assert reducer.reduce(None) == 50
    assert reducer.page_went_through() == 50  # NEVER: the smaller size stays
    assert reducer.reduce(None) == 25  # the attempts started again
    restoring, _ = sizes(restore=True)
    reducer = _Reducer(restoring, 100)
    reducer.reduce(None)
    assert reducer.page_went_through() is None  # AFTER_SUCCESSFUL_PAGE: the configured size again


def test_retries_at_the_minimum_wait_and_keep_the_size_then_fail_with_the_failure_message():
    settings, waits = sizes(minimum=25, retries_at_minimum=2, failure_message="Select fewer fields.")
    reducer = _Reducer(settings, 50)
    assert reducer.reduce(None) == 25
    assert reducer.reduce(None) == 25 and reducer.reduce(None) == 25
    with pytest.raises(ReadError, match=r"smallest page size allowed \(25 records\); the API's answer: slow\. "
                                        r"Select fewer fields\.") as caught:
        reducer.reduce("slow")
    assert caught.value.failure_type == "transient_error" and waits == [0.5, 0.5, 1.0]


def test_a_configured_size_at_the_minimum_is_a_config_error():
    settings, _ = sizes(minimum=10)
    with pytest.raises(ReadError, match="already at or below `minimum_page_size`") as caught:
        _Reducer(settings, 10).reduce(None)
    assert caught.value.failure_type == "config_error"


def test_no_page_size_to_reduce_is_a_config_error():
    settings, _ = sizes()
    with pytest.raises(ReadError, match="sends no page size") as caught:
        _Reducer(settings, None).reduce(None)
    assert caught.value.failure_type == "config_error"


# -- window splits ------------------------------------------------------------------------------


class SecondCursor:
    partition_field_start, partition_field_end = "start_time", "end_time"

    def __init__(self, granularity=timedelta(seconds=1)):
        self.granularity = granularity

    def window_bounds(self, cursor_slice):
        return tuple(datetime.strptime(cursor_slice[k], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
                     for k in ("start_time", "end_time"))

    def format(self, dt):
        return dt.strftime("%Y-%m-%dT%H:%M:%SZ")

    def record_value(self, record):  # pragma: no cover - not used by splits
        return None


def window(start: datetime, end: datetime) -> StreamSlice:
    cursor = SecondCursor()
    return StreamSlice({"account": 1}, {"start_time": cursor.format(start), "end_time": cursor.format(end)}, {"x": 1})


@given(st.integers(min_value=0, max_value=10**6), st.integers(min_value=1, max_value=10**7))
def test_halves_cover_the_window_in_order_meeting_one_granularity_apart(offset, seconds):
    start = datetime(2024, 1, 1, tzinfo=timezone.utc) + timedelta(seconds=offset)
    whole = window(start, start + timedelta(seconds=seconds))
    cursor = SecondCursor()
    first, second = WindowSplits().halves(whole, cursor, 0, None)
    (low, first_end), (second_start, high) = cursor.window_bounds(first.cursor_slice), \
        cursor.window_bounds(second.cursor_slice)
    assert cursor.window_bounds(whole.cursor_slice) == (low, high)
    assert low <= first_end < second_start <= high and second_start - first_end == timedelta(seconds=1)
    assert abs((first_end - low) - (high - second_start)) <= timedelta(seconds=1)
    assert first.partition == second.partition == whole.partition and first.extra_fields == whole.extra_fields


def test_a_window_of_one_granularity_or_within_min_split_window_is_not_split():
    start = datetime(2024, 1, 1, tzinfo=timezone.utc)
    with pytest.raises(ReadError, match="smallest size the cursor's granularity allows; the API's answer: big"):
        WindowSplits().halves(window(start, start), SecondCursor(), 0, "big")
    with pytest.raises(ReadError, match=r"or `min_split_window` allows\. Narrow it\.") as caught:
        WindowSplits(timedelta(days=1), "Narrow it.").halves(window(start, start + timedelta(hours=23)),
                                                              SecondCursor(), 0, None)
    assert caught.value.failure_type == "transient_error"


def test_splits_stop_at_the_depth_limit_and_need_a_window():
    start = datetime(2024, 1, 1, tzinfo=timezone.utc)
    with pytest.raises(ReadError, match=f"after {MAX_SPLIT_DEPTH} splits"):
        WindowSplits().halves(window(start, start + timedelta(days=9)), SecondCursor(), MAX_SPLIT_DEPTH, None)
    with pytest.raises(ReadError, match="reads no datetime windows") as caught:
        WindowSplits().halves(StreamSlice({"account": 1}), None, 0, None)
    assert caught.value.failure_type == "config_error"
