"""Incremental syncs end to end, as a user runs them: a dated API, a first sync, new and updated
records, a second sync. Each test checks the requests (window bounds), the records and the state.

The shop (``streams.incremental_kit``) serves orders filtered by ``start``/``end``; the clock is
fixed, so windows end where the test says.
"""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from engine.incremental_kit import (
    ISO,
    NOW,
    Shop,
    accounts,
    assert_states_safe,
    at,
    cursor,
    iso,
    key,
    orders,
    parent,
    source,
    stream,
    substream,
    sync,
    window_pairs,
    write,
)

from framework.temporal.clock import FixedClock

SECOND = timedelta(seconds=1)


def single(**cursor_more) -> dict:
    return stream("orders", "/orders", incremental=cursor(**cursor_more))


def small_shop(**more) -> Shop:
    shop = Shop(**more)
    shop.add_order(1, "o1", at(0, 10))
    shop.add_order(1, "o2", at(2, 3))
    shop.add_order(2, "o3", at(2, 5))
    shop.add_order(2, "o4", at(6))
    return shop


# -- the seed's window table -------------------------------------------------------------------


def test_the_seed_window_table_is_what_the_api_receives(tmp_path, fake_api):
    fake_api.route("GET", "/orders", {"data": []})
    manifest = source(stream("orders", "/orders", incremental=cursor(
        start_datetime="2022-01-01T00:00:00.000000+0000",
        end_datetime="2022-01-05T00:00:00.000000+0000",
        datetime_format="%Y-%m-%dT%H:%M:%S.%f%z",
        cursor_granularity="PT0.000001S",
        step="P1D",
        partition_field_start="start_date",
        partition_field_end="end_date",
    )))
    manifest["streams"][0]["retriever"]["requester"]["request_parameters"] = {
        "from": "{{ stream_interval.start_date }}", "to": "{{ stream_slice.end_date }}"}
    run = sync(write(tmp_path, manifest), fake_api)
    assert not run.failed, run.errors()
    table = [
        ("2022-01-01T00:00:00.000000+0000", "2022-01-01T23:59:59.999999+0000"),
        ("2022-01-02T00:00:00.000000+0000", "2022-01-02T23:59:59.999999+0000"),
        ("2022-01-03T00:00:00.000000+0000", "2022-01-03T23:59:59.999999+0000"),
        ("2022-01-04T00:00:00.000000+0000", "2022-01-04T23:59:59.999999+0000"),
        ("2022-01-05T00:00:00.000000+0000", "2022-01-05T00:00:00.000000+0000"),
    ]
    assert run.windows() == table
    assert [(r.param("from"), r.param("to")) for r in run.requests] == table  # partition_field_start/end
    # no record: the state keeps where the sync started (start_datetime), as airbyte-cdk writes it
    assert run.state == {"updated_at": "2022-01-01T00:00:00.000000+0000"}


# -- one partition -------------------------------------------------------------------------------


def test_a_sync_that_reads_no_record_keeps_its_start_never_an_older_state(tmp_path, fake_api):
    Shop().install(fake_api)
    path = write(tmp_path, source(single()))
    assert sync(path, fake_api).state == {"updated_at": iso(at(0))}  # nothing saved: start_datetime
    # a saved value before start_datetime (the start was moved since): the start, as airbyte-cdk keeps it
    assert sync(path, fake_api, {"updated_at": "2023-06-01T00:00:00Z"}).state == {"updated_at": iso(at(0))}
    assert sync(path, fake_api, {"updated_at": iso(at(3))}).state == {"updated_at": iso(at(3))}  # its own value



def test_first_and_second_sync_read_only_what_changed(tmp_path, fake_api):
    shop = small_shop()
    shop.install(fake_api)
    path = write(tmp_path, source(single()))

    first = sync(path, fake_api)
    assert first.windows() == window_pairs(range(9)) + [(iso(NOW), iso(NOW))]
    assert first.ids() == ["o1", "o2", "o3", "o4"]
    assert first.state == {"updated_at": iso(at(6))}
    assert_states_safe(first, shop)

    shop.add_order(3, "o5", at(10, 1))  # new
    shop.update_order("o2", at(11))  # updated: it moves to day 11
    shop.add_order(3, "o6", at(6))  # late, at the very instant of the state
    second = sync(path, fake_api, first.state, now=at(12))
    # The next sync starts at the state, inclusive, and runs to the new now.
    assert second.windows() == window_pairs(range(6, 12)) + [(iso(at(12)), iso(at(12)))]
    assert second.ids() == ["o4", "o6", "o5", "o2"]
    assert second.state == {"updated_at": iso(at(11))}
    assert_states_safe(second, shop, first)


def test_lookback_reads_again_before_the_state_and_catches_late_records(tmp_path, fake_api):
    shop = small_shop()
    shop.install(fake_api)
    path = write(tmp_path, source(single(lookback_window="P2D")))
    first = sync(path, fake_api)
    assert first.windows()[0] == (iso(at(0)), iso(at(1) - SECOND))  # never before start_datetime
    assert first.state == {"updated_at": iso(at(6))}

    shop.add_order(3, "late", at(4, 12))  # arrived after the first sync, dated inside the lookback
    second = sync(path, fake_api, first.state, now=at(8))
    assert second.windows() == window_pairs(range(4, 8)) + [(iso(at(8)), iso(at(8)))]
    assert second.ids() == ["late", "o4"]
    assert second.state == {"updated_at": iso(at(6))}


def test_a_state_written_in_another_accepted_format_is_read(tmp_path, fake_api):
    small_shop().install(fake_api)
    path = write(tmp_path, source(single(cursor_datetime_formats=["%Y-%m-%d", ISO])))
    run = sync(path, fake_api, {"updated_at": "2024-01-07"})
    assert run.windows()[0] == (iso(at(6)), iso(at(7) - SECOND))
    assert run.state == {"updated_at": iso(at(6))}  # written back in datetime_format


def test_a_state_of_a_shape_no_cursor_reads_is_refused_not_ignored(tmp_path, fake_api):
    small_shop().install(fake_api)
    path = write(tmp_path, source(single()))
    run = sync(path, fake_api, {"cursor": "2024-01-07", "since": 1})
    (error,) = [m["trace"]["error"]["message"] for m in run.messages if m["type"] == "TRACE"
                and m["trace"]["type"] == "ERROR"]
    assert run.failed and not run.requests  # nothing read from the start as if there were no state
    assert "none of the keys this stream's cursor reads (it has `cursor`, `since`; expected {'updated_at': ...})" \
        in error and "clear this stream's state" in error


@pytest.mark.parametrize(("fmt", "epoch", "granularity", "scale"),
                         [("%s", "s", "PT1S", 1), ("%ms", "ms", "PT0.001S", 1000)])
def test_epoch_cursors_send_numbers_and_keep_text_in_state(tmp_path, fake_api, fmt, epoch, granularity, scale):
    shop = small_shop(epoch=epoch)
    shop.install(fake_api)
    start = int(at(0).timestamp()) * scale
    path = write(tmp_path, source(single(datetime_format=fmt, start_datetime=str(start), step="P3D",
                                         cursor_granularity=granularity)))
    first = sync(path, fake_api)
    day = 86400 * scale
    assert first.windows() == [(str(start), str(start + 3 * day - 1)), (str(start + 3 * day), str(start + 6 * day - 1)),
                               (str(start + 6 * day), str(start + 9 * day - 1)),
                               (str(start + 9 * day), str(start + 9 * day))]
    assert first.ids() == ["o1", "o2", "o3", "o4"]
    assert first.state == {"updated_at": str(start + 6 * day)}  # text, as Airbyte writes it

    shop.add_order(3, "o5", at(7))
    second = sync(path, fake_api, first.state)
    assert second.windows()[0] == (str(start + 6 * day), str(start + 9 * day - 1))
    assert second.ids() == ["o4", "o5"]
    assert second.state == {"updated_at": str(start + 7 * day)}


def test_client_side_incremental_keeps_each_record_once_in_its_window(tmp_path, fake_api):
    shop = small_shop()
    shop.add_order(9, "too-old", at(-3))
    shop.add_order(9, "future", at(20))
    # The API cannot filter: every request gets every order.
    fake_api.route("GET", "/orders", lambda r: {"data": [dict(o) for o in shop.all_orders()]})
    path = write(tmp_path, source(single(step="P3D", is_client_side_incremental=True,
                                         start_time_option=None, end_time_option=None)))
    first = sync(path, fake_api)
    assert len(first.requests) == 4  # windows of 3 days from day 0 to day 9
    assert sorted(first.ids()) == ["o1", "o2", "o3", "o4"]  # once each, nothing outside the range
    assert first.state == {"updated_at": iso(at(6))}

    shop.add_order(3, "o5", at(7))
    second = sync(path, fake_api, first.state)
    assert sorted(second.ids()) == ["o4", "o5"]  # only records from the state on
    assert second.state == {"updated_at": iso(at(7))}


def test_a_data_feed_stops_paging_at_the_first_record_older_than_the_state(tmp_path, fake_api):
    shop = small_shop(newest_first=True, page_size=2)
    shop.install(fake_api)
    feed = stream("orders", "/orders", paginate=True, incremental=cursor(
        step=None, cursor_granularity=None, is_data_feed=True, start_time_option=None, end_time_option=None))
    path = write(tmp_path, source(feed))
    first = sync(path, fake_api)
    assert first.ids() == ["o4", "o3", "o2", "o1"]
    assert [r.param("page") for r in first.requests] == [None, "2", "3"]
    assert first.state == {"updated_at": iso(at(6))}

    shop.add_order(3, "o5", at(8))
    shop.add_order(3, "o6", at(7))
    second = sync(path, fake_api, first.state)
    # Page 1: o5, o6; page 2: o4 (the state's instant, kept) and o3 (older: stop).
    assert [r.param("page") for r in second.requests] == [None, "2"]
    assert second.ids() == ["o5", "o6", "o4"]
    assert second.state == {"updated_at": iso(at(8))}


def test_a_data_feed_with_lookback_pages_on_through_the_lookback(tmp_path, fake_api):
    shop = small_shop(newest_first=True, page_size=2)
    shop.install(fake_api)
    feed = stream("orders", "/orders", paginate=True, incremental=cursor(
        step=None, cursor_granularity=None, is_data_feed=True, lookback_window="P4D",
        start_time_option=None, end_time_option=None))
    path = write(tmp_path, source(feed))
    run = sync(path, fake_api, {"updated_at": iso(at(6))})
    # Page 1: o4, o3; page 2: o2 (inside the lookback: kept) and o1 (older: stop).
    assert run.ids() == ["o4", "o3", "o2"]
    assert [r.param("page") for r in run.requests] == [None, "2"]


# -- partitions: the three state modes --------------------------------------------------------


def shop_with_accounts(**more) -> Shop:
    shop = Shop(**more)
    shop.add_account(1, at(0, 1), name="one")
    shop.add_account(2, at(1, 1), name="two")
    shop.add_account(3, at(3, 1), name="three")
    shop.add_order(1, "a1", at(0, 5))
    shop.add_order(1, "a2", at(4, 5))
    shop.add_order(2, "b1", at(2, 2))
    return shop


def child_windows(run, account: int) -> list[tuple[str | None, str | None]]:
    return run.windows(f"/accounts/{account}/orders")


def test_per_partition_state_is_airbytes_shape_and_each_partition_resumes_at_its_cursor(tmp_path, fake_api):
    shop = shop_with_accounts()
    shop.install(fake_api)
    path = write(tmp_path, source(orders(step="P3D")))
    first = sync(path, fake_api)
    assert first.ids() == ["a1", "a2", "b1"]
    for account in (1, 2, 3):
        assert child_windows(first, account) == [
            (iso(at(0)), iso(at(3) - SECOND)), (iso(at(3)), iso(at(6) - SECOND)),
            (iso(at(6)), iso(at(9) - SECOND)), (iso(at(9)), iso(at(9)))]
    assert first.state == {
        "states": [
            {"partition": {"account_id": 1, "parent_slice": {}}, "cursor": {"updated_at": iso(at(4, 5))}},
            {"partition": {"account_id": 2, "parent_slice": {}}, "cursor": {"updated_at": iso(at(2, 2))}},
            # no record: kept at start_datetime, as airbyte-cdk keeps every partition it read
            {"partition": {"account_id": 3, "parent_slice": {}}, "cursor": {"updated_at": iso(at(0))}},
        ],
        "state": {"updated_at": iso(at(4, 5))},
        "use_global_cursor": False,
        "lookback_window": 0,
    }
    assert_states_safe(first, shop)

    shop.add_order(2, "b2", at(10))
    shop.add_order(3, "c1", at(11))
    second = sync(path, fake_api, first.state, now=at(12))
    assert child_windows(second, 1)[0] == (iso(at(4, 5)), iso(at(7, 5) - SECOND))
    assert child_windows(second, 2)[0] == (iso(at(2, 2)), iso(at(5, 2) - SECOND))
    assert child_windows(second, 3)[0] == (iso(at(0)), iso(at(3) - SECOND))  # no state yet: from the start
    assert sorted(second.ids()) == ["a2", "b1", "b2", "c1"]  # a2 and b1: the cursors' own instants
    assert {(e["partition"]["account_id"], e["cursor"]["updated_at"]) for e in second.state["states"]} == {
        (1, iso(at(4, 5))), (2, iso(at(10))), (3, iso(at(11)))}
    assert second.state["state"] == {"updated_at": iso(at(11))}
    assert_states_safe(second, shop, first)


def test_an_airbyte_per_partition_state_is_read_back(tmp_path, fake_api):
    shop_with_accounts().install(fake_api)
    path = write(tmp_path, source(orders(step="P3D")))
    airbyte_state = {
        "states": [
            {"partition": {"account_id": 2, "parent_slice": {}}, "cursor": {"updated_at": iso(at(5))}},
            {"partition": {"parent_slice": {}, "account_id": 1}, "cursor": {"updated_at": iso(at(7, 12))}},
        ],
        "state": {"updated_at": iso(at(7, 12))},
        "use_global_cursor": False,
        "lookback_window": 3600,
        "parent_state": {"accounts": {"updated_at": iso(at(0))}},
    }
    run = sync(path, fake_api, airbyte_state)
    assert child_windows(run, 1) == [(iso(at(7, 12)), iso(at(9)))]
    assert child_windows(run, 2) == [(iso(at(5)), iso(at(8) - SECOND)), (iso(at(8)), iso(at(9)))]
    assert child_windows(run, 3)[0][0] == iso(at(0))  # not in the state: a new partition
    # Partitions keep their cursor; the parent state of a parent read without incremental_dependency
    # is carried over untouched.
    assert run.state["states"][:2] == airbyte_state["states"]
    assert run.state["parent_state"] == airbyte_state["parent_state"]
    assert run.state["use_global_cursor"] is False


def test_a_state_without_a_partition_list_applies_to_every_partition(tmp_path, fake_api):
    shop_with_accounts().install(fake_api)
    path = write(tmp_path, source(orders(step="P3D")))
    run = sync(path, fake_api, {"updated_at": iso(at(7))})  # the state of a stream before it had partitions
    assert {child_windows(run, a)[0] for a in (1, 2, 3)} == {(iso(at(7)), iso(at(9)))}
    # Every partition now has its own entry (even without new records), so none is read in full later.
    assert {e["partition"]["account_id"] for e in run.state["states"]} == {1, 2, 3}


def test_incremental_dependency_reads_the_parent_from_its_state_and_only_changed_parents(tmp_path, fake_api):
    shop = shop_with_accounts()
    shop.install(fake_api)
    path = write(tmp_path, source(orders(substream(parent(accounts(step="P3D"), incremental_dependency=True)),
                                         step="P3D")))
    first = sync(path, fake_api)
    assert first.state == {
        "states": [
            {"partition": {"account_id": 1, "parent_slice": {}}, "cursor": {"updated_at": iso(at(4, 5))}},
            {"partition": {"account_id": 2, "parent_slice": {}}, "cursor": {"updated_at": iso(at(2, 2))}},
            {"partition": {"account_id": 3, "parent_slice": {}}, "cursor": {"updated_at": iso(at(0))}},
        ],
        "state": {"updated_at": iso(at(4, 5))},
        "use_global_cursor": False,
        "lookback_window": 0,
        "parent_state": {"accounts": {"updated_at": iso(at(3, 1))}},
    }
    assert_states_safe(first, shop)

    shop.add_order(1, "a3", at(10), touch_account=True)  # the API moves the parent's cursor with its children
    second = sync(path, fake_api, first.state, now=at(12))
    assert second.windows("/accounts")[0] == (iso(at(3, 1)), iso(at(6, 1) - SECOND))
    assert child_windows(second, 2) == []  # account 2 did not change: its orders are not asked for
    assert child_windows(second, 1)[0][0] == iso(at(4, 5))
    assert sorted(second.ids()) == ["a2", "a3"]
    assert second.state["parent_state"] == {"accounts": {"updated_at": iso(at(10))}}
    # Partitions 2 and 3 were not read; their cursors are carried over.
    assert {(e["partition"]["account_id"], e["cursor"]["updated_at"]) for e in second.state["states"]} == {
        (1, iso(at(10))), (2, iso(at(2, 2))), (3, iso(at(0)))}
    assert_states_safe(second, shop, first)


def test_a_parent_state_of_another_shape_is_read_from_the_parents_start_with_a_warning(tmp_path, fake_api, caplog):
    """A saved `parent_state` none of whose keys the parent's cursor reads (a connection moved from another
    version) does not stop the sync: as airbyte-cdk, the parent is read from its start; a warning names what was
    ignored, the child's own state still applies, and the parent's state is written anew."""
    shop = shop_with_accounts()
    shop.install(fake_api)
    path = write(tmp_path, source(orders(substream(parent(accounts(step="P3D"), incremental_dependency=True)),
                                         step="P3D")))
    first = sync(path, fake_api)
    saved = dict(first.state, parent_state={"accounts": {"last_modified": "2024-01-04", "cursor": "abc"}})
    with caplog.at_level("WARNING", logger="framework.state"):
        second = sync(path, fake_api, saved, now=at(12))
    assert not second.failed, second.errors()
    assert second.windows("/accounts")[0][0] == iso(at(0))  # the parent from its start
    assert child_windows(second, 1)[0][0] == iso(at(4, 5))  # the child from its own state
    assert second.state["parent_state"] == first.state["parent_state"]
    (warning,) = [r.getMessage() for r in caplog.records if r.name == "framework.state"]
    assert "stream `orders`: the saved state of its parent stream `accounts` has none of the keys" in warning
    assert "(`updated_at`)" in warning and '"last_modified":"2024-01-04"' in warning
    assert "`accounts` is read from its start" in warning


def test_global_cursor_moves_only_at_the_end_and_looks_back_the_previous_sync_duration(tmp_path, fake_api):
    shop = shop_with_accounts()
    clock = FixedClock(NOW)

    def tick(request) -> None:  # each child request takes an hour
        if request.path.endswith("/orders"):
            clock.advance(timedelta(hours=1))

    shop.hook = tick
    shop.install(fake_api)
    path = write(tmp_path, source(orders(step="P3D", global_substream_cursor=True)))

    first = sync(path, fake_api, clock=clock)
    assert len([r for r in first.requests if r.path.endswith("/orders")]) == 3 * 4
    *checkpoints, final = first.states()
    assert checkpoints and all("state" not in s for s in checkpoints)  # not moved during the sync
    assert final == {"state": {"updated_at": iso(at(4, 5))}, "use_global_cursor": True,
                     "lookback_window": 12 * 3600}
    assert_states_safe(first, shop)

    shop.add_order(3, "c1", at(10))
    clock = FixedClock(at(12))
    second = sync(path, fake_api, first.state, clock=clock)
    # Every partition starts at the global cursor minus the previous sync's 12 hours.
    for account in (1, 2, 3):
        assert child_windows(second, account)[0] == (iso(at(4, 5) - timedelta(hours=12)),
                                                     iso(at(7, 5) - timedelta(hours=12) - SECOND))
    assert sorted(second.ids()) == ["a2", "c1"]
    assert second.state["state"] == {"updated_at": iso(at(10))}
    hours = len([r for r in second.requests if r.path.endswith("/orders")])
    assert second.state["lookback_window"] == hours * 3600  # this sync's own duration


def test_a_partitioned_data_feed_stops_paging_each_partition_at_its_own_state(tmp_path, fake_api):
    shop = shop_with_accounts(newest_first=True, page_size=2)
    shop.install(fake_api)
    feed = stream("orders", "/accounts/{{ stream_partition.account_id }}/orders", paginate=True,
                  router=substream(), incremental=cursor(step=None, cursor_granularity=None, is_data_feed=True,
                                                         start_time_option=None, end_time_option=None))
    path = write(tmp_path, source(feed))
    first = sync(path, fake_api)
    assert sorted(first.ids()) == ["a1", "a2", "b1"]

    shop.add_order(1, "a3", at(6))
    shop.add_order(1, "a4", at(6, 1))
    second = sync(path, fake_api, first.state)
    # Account 1, newest first: [a4, a3], [a2 (its state: kept), a1 (older: stop)]; no third page.
    assert [r.param("page") for r in second.requests if r.path == "/accounts/1/orders"] == [None, "2"]
    assert second.ids() == ["a4", "a3", "a2", "b1"]
    assert by_partition(second.state)[1] == {"updated_at": iso(at(6, 1))}


def test_a_saved_use_global_cursor_flag_keeps_the_stream_global(tmp_path, fake_api):
    shop_with_accounts().install(fake_api)
    path = write(tmp_path, source(orders(step="P3D")))
    run = sync(path, fake_api, {"use_global_cursor": True, "state": {"updated_at": iso(at(8))},
                                "lookback_window": 7200})
    assert {child_windows(run, a)[0] for a in (1, 2, 3)} == {(iso(at(7, 22)), iso(at(9)))}
    # no record read: `state` stays, and so does the lookback of the sync that set it (airbyte-cdk's rule)
    assert run.state == {"state": {"updated_at": iso(at(8))}, "use_global_cursor": True, "lookback_window": 7200}


# -- concurrency and checkpoints ---------------------------------------------------------------


def many_accounts_shop() -> Shop:
    shop = Shop()
    for account in range(1, 7):
        shop.add_account(account, at(0, account))
        for day in range(0, 9, 2):
            shop.add_order(account, f"{account}-{day}", at(day, account))
    return shop


def by_partition(state: dict) -> dict:
    return {e["partition"]["account_id"]: e["cursor"] for e in state["states"]}


@pytest.mark.parametrize("how", ["flag", "manifest"])
def test_concurrent_reads_give_the_same_records_and_state_as_sequential_ones(tmp_path, fake_api, how):
    shop = many_accounts_shop()
    shop.install(fake_api)
    sequential = sync(write(tmp_path, source(orders(step="P2D")), "one.yaml"), fake_api)
    if how == "flag":
        concurrent = sync(write(tmp_path, source(orders(step="P2D")), "one.yaml"), fake_api, concurrency=4)
    else:
        concurrent = sync(write(tmp_path, source(orders(step="P2D"), concurrency=4), "four.yaml"), fake_api)
    assert sorted(map(key, concurrent.records())) == sorted(map(key, sequential.records()))
    assert len(concurrent.records()) == len(shop.all_orders())
    assert by_partition(concurrent.state) == by_partition(sequential.state)
    assert {k: v for k, v in concurrent.state.items() if k != "states"} == \
        {k: v for k, v in sequential.state.items() if k != "states"}
    assert_states_safe(concurrent, shop)


def test_with_concurrency_state_waits_for_a_slow_first_window(tmp_path, fake_api):
    shop = many_accounts_shop()
    later_asked = threading.Event()

    def slow_first_window(request) -> None:
        account = request.path_params.get("account")
        if account == "1" and request.param("start") == iso(at(0)):
            later_asked.wait(10)  # answers only once a unit of account 3 was asked for
        elif account == "3":
            later_asked.set()

    shop.hook = slow_first_window
    shop.install(fake_api)
    run = sync(write(tmp_path, source(orders(step="P2D"))), fake_api, concurrency=4)
    assert not run.failed, run.errors()
    first_window_of_1 = next(i for i, m in enumerate(run.messages)
                             if m["type"] == "RECORD" and m["record"]["data"]["id"] == "1-0")
    early = run.messages[:first_window_of_1]
    early_states = [m["state"]["stream"]["stream_state"] for m in early if m["type"] == "STATE"]
    assert any(m["type"] == "RECORD" and m["record"]["data"]["id"] == "1-2" for m in early)
    assert early_states, "later windows finished first, so checkpoints came before account 1's first window"
    # Windows 2.. of account 1 were finished, but its state cannot move before window 1 is: they are kept as
    # finished ranges beyond a first slice that resumes from the start (Airbyte's date-range state).
    account_1 = [by_partition(s)[1] for s in early_states if 1 in by_partition(s)]
    assert account_1, "the windows finished beyond the first one are in the state"
    for entry in account_1:
        assert entry["state_type"] == "date-range"
        first, *beyond = entry["slices"]
        assert first == {"start": iso(at(0)), "end": iso(at(0))} and beyond
        assert all(piece["start"] >= iso(at(2)) for piece in beyond)
    assert_states_safe(run, shop)
    assert by_partition(run.state)[1] == {"updated_at": iso(at(8, 1))}


def test_checkpoints_are_throttled(tmp_path, fake_api):
    many_accounts_shop().install(fake_api)
    path = write(tmp_path, source(orders(step="P2D")))
    every_unit = sync(path, fake_api, checkpoint_seconds=0)
    throttled = sync(path, fake_api, checkpoint_seconds=3600)
    assert len(every_unit.states()) > 6
    assert len(throttled.states()) == 2  # the first finished unit at once, then only the final state
    assert throttled.state == every_unit.state
