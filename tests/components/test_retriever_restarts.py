"""Pagination restarts of the page loop (framework.components.retriever): which slice is read after a
restart, and when restarting is refused."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from framework.components.retriever import PaginationResets, _Restarts
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
