"""Windows finished beyond the first unfinished one: kept in the state (Airbyte's ``date-range`` slices), and
the next sync reads only the windows no slice covers, whatever order the windows finished in and wherever
the sync stopped."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from engine.incremental_kit import at, cursor, iso, source, stream, write
from hypothesis import given, settings
from hypothesis import strategies as st

from framework.components.incremental.date_ranges import (
    Closed,
    merge_closed,
    range_state,
    read_range_state,
    subtract_closed,
)
from framework.engine.connector import open_connector
from framework.engine.plan import open_sync
from framework.engine.window_progress import WindowProgress
from framework.errors import StateError
from framework.temporal.clock import FixedClock

SECOND = timedelta(seconds=1)
DAY = timedelta(days=1)
NOW = at(10)  # ten one-day windows from day 0, and the instant of day 10 as an eleventh


def parse(value):
    return datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)


def day(n: int) -> tuple[datetime, datetime]:
    return at(n), at(n + 1) - SECOND


# -- the state shape ----------------------------------------------------------------------------------------


def test_a_range_state_reads_back_its_resume_value_and_the_intervals_beyond():
    closed = (Closed(*day(3), at(3, 5)), Closed(at(5), at(7) - SECOND))
    state = range_state(iso, at(0), at(1, 2), closed)
    assert state == {"state_type": "date-range", "slices": [
        {"start": iso(at(0)), "end": iso(at(1, 2)), "most_recent_cursor_value": iso(at(1, 2))},
        {"start": iso(at(3)), "end": iso(at(4) - SECOND), "most_recent_cursor_value": iso(at(3, 5))},
        {"start": iso(at(5)), "end": iso(at(7) - SECOND)}]}
    assert read_range_state(state, parse, SECOND) == (at(1, 2), closed)


def test_reading_merges_touching_slices_and_takes_airbytes_value_of_the_first():
    state = {"state_type": "date-range", "slices": [  # out of order, and touching within the granularity
        {"start": iso(at(4)), "end": iso(at(5) - SECOND)}, {"start": iso(at(0)), "end": iso(at(2))},
        {"start": iso(at(5)), "end": iso(at(6)), "most_recent_cursor_value": iso(at(5, 1))}]}
    value, beyond = read_range_state(state, parse, SECOND)
    assert value == at(2)  # no most_recent_cursor_value: its end
    assert beyond == (Closed(at(4), at(6), at(5, 1)),)
    assert read_range_state({"state_type": "date-range", "slices": []}, parse) == (None, ())


@pytest.mark.parametrize("broken", [{"state_type": "date-range"}, {"state_type": "date-range", "slices": [{}]},
                                    {"state_type": "date-range", "slices": [{"start": "soon", "end": "later"}]}])
def test_a_damaged_range_state_names_what_is_wrong(broken):
    with pytest.raises(StateError, match="slices"):
        read_range_state(broken, lambda v: parse(v) if v[:1].isdigit() else None)


def test_merging_keeps_the_latest_value_of_the_merged_intervals():
    assert merge_closed([Closed(at(0), at(1), at(0, 3)), Closed(at(1), at(2), None), Closed(at(4), at(5))]) == [
        Closed(at(0), at(2), at(0, 3)), Closed(at(4), at(5))]


@pytest.mark.parametrize(("granularity", "expected"), [
    (SECOND, [day(0), (at(1), at(2) - SECOND), (at(3, 12) + SECOND, at(4) - SECOND)]),
    (None, [day(0), day(1), (at(3, 12), at(4) - SECOND)]),  # sharing the boundary instants, as airbyte-cdk
])
def test_subtracting_leaves_the_parts_no_interval_covers(granularity, expected):
    pairs = [day(0), day(1), day(2), day(3)]
    assert subtract_closed(pairs, [Closed(at(2), at(3, 12))], granularity) == expected
    assert subtract_closed(pairs, [Closed(at(0), at(4))], granularity) == []
    assert subtract_closed(pairs, [], granularity) == pairs


def test_progress_lists_the_runs_finished_beyond_the_first_unfinished_window():
    progress = WindowProgress([day(n) for n in range(6)])
    for window in (0, 2, 3, 5):
        progress.observe(window, at(window, 6))
        progress.finish(window)
    assert progress.value() == at(0, 6)
    assert progress.finished_beyond() == (Closed(at(2), at(4) - SECOND, at(3, 6)), Closed(*day(5), at(5, 6)))
    progress.finish(1)
    assert progress.finished_beyond() == (Closed(*day(5), at(5, 6)),)
    progress.finish(4)
    assert progress.finished_beyond() == () and progress.complete


# -- a sync stopped half way, and the next one --------------------------------------------------------------

ROUTER = {"type": "ListPartitionRouter", "values": ["a", "b"], "cursor_field": "shop"}


def connector_of(tmp_path, routed: bool, **cursor_fields):
    manifest = source(stream("orders", "/orders/{{ stream_partition.shop }}" if routed else "/orders",
                             incremental=cursor(**cursor_fields), router=ROUTER if routed else None))
    return open_connector(write(tmp_path, manifest), {"base_url": "http://127.0.0.1:9"}, clock=FixedClock(NOW))


def covered(units) -> list[tuple[object, datetime, datetime]]:
    return [(u.slice.partition.get("shop"), parse(u.slice.cursor_slice["start_time"]), parse(u.slice.cursor_slice["end_time"]))
            for u in units]


def spans(units) -> list[tuple[datetime, datetime]]:
    """The ranges the units read, adjacent ones (one second apart) joined."""
    out: list[tuple[datetime, datetime]] = []
    for _, low, high in sorted(covered(units), key=lambda c: c[1]):
        if out and low <= out[-1][1] + SECOND:
            out[-1] = (out[-1][0], max(out[-1][1], high))
        else:
            out.append((low, high))
    return out


def test_a_stopped_sync_saves_what_finished_beyond_and_the_next_reads_only_the_gaps(tmp_path):
    connector = connector_of(tmp_path, routed=False)
    first = open_sync(connector, connector.stream("orders"), None)
    units = first.plan()
    assert len(units) == 11
    for index in (0, 1, 4, 5, 6, 9):  # 2, 3, 7, 8 and 10 were running when it stopped
        first.observe(units[index], at(index, 23), 5)
        first.done(units[index])
    state = first.state()
    assert state == {"state_type": "date-range", "slices": [
        {"start": iso(at(0)), "end": iso(at(1, 23)), "most_recent_cursor_value": iso(at(1, 23))},
        {"start": iso(at(4)), "end": iso(at(7) - SECOND), "most_recent_cursor_value": iso(at(6, 23))},
        {"start": iso(at(9)), "end": iso(at(10) - SECOND), "most_recent_cursor_value": iso(at(9, 23))}]}
    second = open_sync(connector, connector.stream("orders"), state)
    # the windows, cut from the resume value, around what is finished: the gaps and no more
    # (after the last finished range, from its end, inclusive, as after a resume value: as airbyte-cdk reads it)
    assert spans(second.plan()) == [(at(1, 23), at(4) - SECOND), (at(7), at(9) - SECOND),
                                    (at(10) - SECOND, at(10))]
    for unit in second.plan():
        second.observe(unit, parse(unit.slice.cursor_slice["end_time"]), 1)
        second.done(unit)
    # all read: the plain state again, at the latest value either sync saw
    assert second.state(final=True) == {"updated_at": iso(at(10))}


def test_a_partition_keeps_its_own_finished_windows(tmp_path):
    connector = connector_of(tmp_path, routed=True)
    first = open_sync(connector, connector.stream("orders"), None)
    units = first.plan()
    done = [u for u in units if u.slice.partition["shop"] == "b" and u.window != 1] + [units[0]]
    for unit in done:
        first.observe(unit, at(unit.window, 1))
        first.done(unit)
    state = first.state()
    entries = {e["partition"]["shop"]: e["cursor"] for e in state["states"]}
    assert entries["a"] == {"updated_at": iso(at(0, 1))}
    assert entries["b"]["state_type"] == "date-range"
    second = open_sync(connector, connector.stream("orders"), state)
    left = second.plan()
    assert spans([u for u in left if u.slice.partition["shop"] == "b"]) == [(at(0, 1), at(2) - SECOND),
                                                                            (at(10), at(10))]
    assert spans([u for u in left if u.slice.partition["shop"] == "a"]) == [(at(0, 1), at(10))]


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_any_completion_order_and_crash_point_leaves_exactly_the_unfinished_windows(tmp_path_factory, data):
    routed = data.draw(st.booleans(), label="routed")
    connector = connector_of(tmp_path_factory.mktemp("m"), routed)
    first = open_sync(connector, connector.stream("orders"), None)
    units = first.plan()
    order = data.draw(st.permutations(range(len(units))), label="order")
    crash = data.draw(st.integers(0, len(units)), label="crash after")
    finished = set(order[:crash])
    for index in order[:crash]:
        unit = units[index]
        # every window's latest record at its very end: resuming from it leaves nothing of the window to read
        first.observe(unit, parse(unit.slice.cursor_slice["end_time"]))
        first.done(unit)
    state = first.state()
    second = open_sync(connector, connector.stream("orders"), state)
    again = covered(second.plan())

    def read_again(shop, instant):
        return any(s == shop and low <= instant <= high for s, low, high in again)

    for unit in units:
        shop = unit.slice.partition.get("shop")
        low, high = parse(unit.slice.cursor_slice["start_time"]), parse(unit.slice.cursor_slice["end_time"])
        if unit.index in finished:  # not read again, but for the instant the next window shares with it
            assert not any(read_again(shop, low + k * (high - low) / 4) for k in (1, 2, 3)) or low == high, \
                (unit, again, state)
        else:  # read again, whole
            assert read_again(shop, low) and read_again(shop, high), (unit, again, state)


def test_a_partition_whose_windows_finish_out_of_order_without_records_keeps_its_start(tmp_path):
    """Read side by side, a partition's later windows finish first (a range entry for a while); once all are
    done without a record, it keeps its start, as when its windows finish in order (and as airbyte-cdk)."""
    connector = connector_of(tmp_path, routed=True)
    sync = open_sync(connector, connector.stream("orders"), None)
    units = [u for u in sync.plan() if u.slice.partition["shop"] == "b"]
    for unit in reversed(units[1:]):
        sync.done(unit)
    assert {e["partition"]["shop"] for e in sync.state()["states"]} == {"b"}
    sync.done(units[0])
    cursor = connector.stream("orders").cursor
    assert [e["cursor"] for e in sync.state()["states"]] == [cursor.state_of(cursor.start.value())]
