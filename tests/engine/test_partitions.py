"""Partition routers and per-partition state: list values, parents, products, the 10,000 cap.

Routers are checked on their own (with a hand-made parent reader) and end to end against the
fake shop API; the per-partition state store is checked with properties.
"""

from __future__ import annotations

import base64
import pickle
from datetime import datetime, timedelta, timezone

import pytest
from engine.incremental_kit import (
    Shop,
    accounts,
    assert_states_safe,
    at,
    cursor,
    iso,
    orders,
    parent,
    source,
    stream,
    substream,
    sync,
    write,
)
from hypothesis import given, settings
from hypothesis import strategies as st

import framework.engine.sync as sync_module
from framework.components.http.request import Injection, RequestParts
from framework.components.partitions import (
    ListRouter,
    ParentConfig,
    ProductRouter,
    SubstreamRouter,
)
from framework.components.slices import StreamSlice
from framework.engine.connector import open_connector
from framework.engine.partition_states import COMPACT_KEY, PartitionStates, day_of
from framework.engine.results import UnitResult, fold_results, from_arrow, to_arrow
from framework.engine.sync import StreamSync, read_unit
from framework.engine.worker import PageTyper, read_group
from framework.errors import StateError
from framework.temporal.clock import FixedClock

SECOND = timedelta(seconds=1)


# -- routers on their own ------------------------------------------------------------------------


class _Named:
    def __init__(self, name: str):
        self.name = name


def _parent(key: str = "id", *extra: str, field: str = "account_id", option: Injection | None = None) -> ParentConfig:
    return ParentConfig(stream=_Named("accounts"), parent_key=tuple(key.split("/")), partition_field=field,
                        option=option, incremental_dependency=False,
                        extra_fields=tuple(tuple(e.split("/")) for e in extra))


def _reader(*pages):
    def read_parent(config):
        for index, records in enumerate(pages):
            yield ("accounts", index, {}), records
    return read_parent


def test_list_router_makes_one_partition_per_value_and_puts_it_in_the_request():
    router = ListRouter(("eu", "us"), "region", Injection("request_parameter", ("region",)))
    parts = list(router.partitions(_reader()))
    assert [p.partition for p in parts] == [{"region": "eu"}, {"region": "us"}]
    request = RequestParts(method="GET", url_base="http://x", path="/")
    router.apply(request, StreamSlice({"region": "us"}))
    assert request.params == {"region": "us"}


def test_substream_router_reads_nested_keys_and_extra_fields_and_skips_records_without_the_key():
    router = SubstreamRouter((_parent("owner/id", "name", "owner/name"),))
    pages = ([{"id": 1, "name": "a", "owner": {"id": 7, "name": "ann"}},
              {"id": 2, "name": "b"},  # no owner: skipped
              {"id": 3, "owner": {"id": None}}],  # a null key: skipped
             [{"id": 4, "name": "d", "owner": {"id": 8}}])
    parts = list(router.partitions(_reader(*pages)))
    assert [p.partition for p in parts] == [{"account_id": 7, "parent_slice": {}},
                                           {"account_id": 8, "parent_slice": {}}]
    assert parts[0].extra_fields == {"name": "a", "owner.name": "ann"}
    assert parts[1].extra_fields == {"name": "d", "owner.name": None}
    assert [p.tags for p in parts] == [(("accounts", 0, {}),), (("accounts", 1, {}),)]


def test_substream_keys_may_index_lists():
    router = SubstreamRouter((_parent("ids/1"),))
    parts = list(router.partitions(_reader([{"ids": [5, 6]}, {"ids": [5]}])))
    assert [p.partition["account_id"] for p in parts] == [6]


def test_several_routers_give_the_cartesian_product():
    regions = ListRouter(("eu", "us"), "region", Injection("request_parameter", ("region",)))
    kinds = ListRouter(("a", "b", "c"), "kind", Injection("header", ("X-Kind",)))
    product = ProductRouter((regions, kinds))
    parts = list(product.partitions(_reader()))
    assert [p.partition for p in parts] == [{"region": r, "kind": k} for r in ("eu", "us") for k in ("a", "b", "c")]
    request = RequestParts(method="GET", url_base="http://x", path="/")
    product.apply(request, StreamSlice({"region": "eu", "kind": "c"}))
    assert request.params == {"region": "eu"} and request.headers == {"X-Kind": "c"}


# -- routers end to end -------------------------------------------------------------------------


def region_shop() -> Shop:
    shop = Shop()
    for region, day in (("eu", 1), ("eu", 4), ("us", 2), ("asia", 3)):
        shop.add_order(region, f"{region}-{day}", at(day))
    return shop


def list_router(values, field: str = "region", **more) -> dict:
    return {"type": "ListPartitionRouter", "values": values, "cursor_field": field,
            "request_option": {"type": "RequestOption", "inject_into": "request_parameter", "field_name": field},
            **more}


def test_list_partition_router_sends_each_value_and_keeps_a_cursor_per_value(tmp_path, fake_api):
    shop = region_shop()
    fake_api.route("GET", "/orders", lambda r: {"data": shop.serve(shop.orders.get(r.param("region"), []), r)})
    manifest = source(stream("orders", "/orders", incremental=cursor(step="P5D"),
                             router=list_router("{{ config.regions }}")))
    run = sync(write(tmp_path, manifest), fake_api, config={"regions": ["eu", "us", "nowhere"]})
    assert not run.failed, run.errors()
    assert [(r.param("region"), r.param("start")) for r in run.requests] == [
        ("eu", iso(at(0))), ("eu", iso(at(5))), ("us", iso(at(0))), ("us", iso(at(5))),
        ("nowhere", iso(at(0))), ("nowhere", iso(at(5)))]
    assert sorted(run.ids()) == ["eu-1", "eu-4", "us-2"]
    assert run.state["states"] == [
        {"partition": {"region": "eu"}, "cursor": {"updated_at": iso(at(4))}},
        {"partition": {"region": "us"}, "cursor": {"updated_at": iso(at(2))}},
        {"partition": {"region": "nowhere"}, "cursor": {"updated_at": iso(at(0))}},  # no record: its start
    ]


def test_a_list_of_routers_reads_every_combination(tmp_path, fake_api):
    shop = Shop()
    shop.orders = {"eu": [{"id": "eu-a", "account": "eu", "kind": "a", "updated_at": iso(at(1))},
                          {"id": "eu-b", "account": "eu", "kind": "b", "updated_at": iso(at(2))}],
                   "us": [{"id": "us-b", "account": "us", "kind": "b", "updated_at": iso(at(3))}]}
    fake_api.route("GET", "/orders", lambda r: {"data": shop.serve(
        [o for o in shop.orders.get(r.param("region"), []) if o["kind"] == r.param("kind")], r)})
    manifest = source(stream("orders", "/orders", incremental=cursor(step=None, cursor_granularity=None),
                             router=[list_router(["eu", "us"]), list_router(["a", "b"], "kind")]))
    run = sync(write(tmp_path, manifest), fake_api)
    assert [(r.param("region"), r.param("kind")) for r in run.requests] == [
        ("eu", "a"), ("eu", "b"), ("us", "a"), ("us", "b")]
    assert run.ids() == ["eu-a", "eu-b", "us-b"]
    assert [e["partition"] for e in run.state["states"]] == [  # us-a read no record: kept at its start
        {"region": "eu", "kind": "a"}, {"region": "eu", "kind": "b"}, {"region": "us", "kind": "a"},
        {"region": "us", "kind": "b"}]


def test_a_substream_times_a_list_carries_both_partitions(tmp_path, fake_api):
    shop = Shop()
    shop.add_account(1, at(0))
    shop.add_account(2, at(1))
    shop.install(fake_api)
    router = [substream(parent(accounts(step=None, cursor_granularity=None))), list_router(["x", "y"], "kind")]
    manifest = source(orders(router, step=None, cursor_granularity=None))
    run = sync(write(tmp_path, manifest), fake_api)
    child = [(r.path, r.param("kind")) for r in run.requests if r.path.endswith("/orders")]
    assert child == [("/accounts/1/orders", "x"), ("/accounts/1/orders", "y"),
                     ("/accounts/2/orders", "x"), ("/accounts/2/orders", "y")]


def test_nested_parent_keys_extra_fields_and_parent_slices_reach_the_child(tmp_path, fake_api):
    fake_api.route("GET", "/teams", lambda r: {"data": {
        "red": [{"id": 1, "lead": {"id": 10, "name": "Ann"}, "name": "one"},
                {"id": 2, "name": "no lead"},  # no lead/id: no partition
                {"id": 3, "lead": {"id": 10, "name": "Ann"}, "name": "three"}],  # the same lead again
        "blue": [{"id": 4, "lead": {"id": 11, "name": "Bo"}, "name": "four"}],
    }[r.param("color")]})
    fake_api.route("GET", "/leads/{lead}/orders", lambda r: {"data": [
        {"id": f"{r.path_params['lead']}-{r.param('who')}", "updated_at": iso(at(1))}]})
    teams = stream("teams", "/teams", router=list_router(["red", "blue"], "color"))
    child = stream("orders", "/leads/{{ stream_partition.lead_id }}/orders",
                   incremental=cursor(step=None, cursor_granularity=None),
                   router=substream(parent(teams, parent_key="lead/id", partition_field="lead_id",
                                           extra_fields=[["name"], ["lead", "name"]])))
    child["retriever"]["requester"]["request_parameters"] = {
        "who": "{{ stream_slice.extra_fields['lead.name'] }}"}
    run = sync(write(tmp_path, source(child)), fake_api)
    assert not run.failed, run.errors()
    assert [r.path for r in run.requests if "/leads/" in r.path] == ["/leads/10/orders", "/leads/11/orders"]
    assert run.ids() == ["10-Ann", "11-Bo"]
    assert [e["partition"] for e in run.state["states"]] == [
        {"lead_id": 10, "parent_slice": {"color": "red"}},
        {"lead_id": 11, "parent_slice": {"color": "blue"}},
    ]


# -- the cap on per-partition states -----------------------------------------------------------


def ten_accounts() -> Shop:
    shop = Shop()
    for account in range(1, 11):
        shop.add_account(account, at(0))
        shop.add_order(account, f"{account}-old", at(1, account))
        shop.add_order(account, f"{account}-new", at(5, account))
    return shop


def test_past_the_cap_partitions_are_compacted_not_read_again_in_full(tmp_path, fake_api, monkeypatch):
    monkeypatch.setattr(sync_module, "MAX_PARTITION_STATES", 3)
    shop = ten_accounts()
    shop.install(fake_api)
    path = write(tmp_path, source(orders(step="P2D")))
    first = sync(path, fake_api)
    assert [e["partition"]["account_id"] for e in first.state["states"]] == [8, 9, 10]  # finished last
    (group,) = first.state[COMPACT_KEY]  # accounts 1..7, all last seen on day 5
    assert group["cursor"] == {"updated_at": iso(at(5))}
    assert len(base64.b64decode(group["digests"])) == 7 * 8  # 8 bytes a partition
    assert_states_safe(first, shop)

    shop.add_account(11, at(0))
    shop.add_order(11, "11-old", at(1))
    second = sync(path, fake_api, first.state)
    starts = {a: second.windows(f"/accounts/{a}/orders")[0][0] for a in range(1, 12)}
    assert {starts[a] for a in range(1, 8)} == {iso(at(5))}  # compacted: from the day of their cursor
    assert [starts[a] for a in (8, 9, 10)] == [iso(at(5, a)) for a in (8, 9, 10)]  # in full: their cursor
    assert starts[11] == iso(at(0))  # new: from start_datetime
    assert "11-old" in second.ids()
    assert not {f"{a}-old" for a in range(1, 11)} & set(second.ids())  # nothing old read again
    assert len(second.state["states"]) == 3 and second.state[COMPACT_KEY]


def test_an_airbyte_state_without_the_compact_part_reads_dropped_partitions_in_full(tmp_path, fake_api, monkeypatch):
    monkeypatch.setattr(sync_module, "MAX_PARTITION_STATES", 3)
    shop = ten_accounts()
    shop.install(fake_api)
    path = write(tmp_path, source(orders(step="P2D")))
    first = sync(path, fake_api)
    airbyte = {k: v for k, v in first.state.items() if k != COMPACT_KEY}  # what Airbyte keeps of it
    second = sync(path, fake_api, airbyte)
    assert {second.windows(f"/accounts/{a}/orders")[0][0] for a in range(1, 8)} == {iso(at(0))}
    assert sorted(set(second.ids()) & {f"{a}-old" for a in range(1, 11)}) == sorted(f"{a}-old" for a in range(1, 8))


def test_a_damaged_compact_part_is_a_state_error(tmp_path, fake_api):
    shop = ten_accounts()
    shop.install(fake_api)
    path = write(tmp_path, source(orders(step="P2D")))
    run = sync(path, fake_api, {"states": [], COMPACT_KEY: [{"cursor": {"updated_at": iso(at(1))},
                                                               "digests": "abc"}]})
    assert run.failed
    assert "compacted_partitions" in run.errors()[0] and "clear that key" in run.errors()[0]


# -- the store's properties --------------------------------------------------------------------

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
puts = st.lists(st.tuples(st.integers(0, 30), st.integers(0, 10 * 24 * 60)), max_size=80)


def _store(limit: int) -> PartitionStates:
    return PartitionStates(limit, lambda dt: {"updated_at": dt.strftime("%Y-%m-%dT%H:%M:%SZ")})


def _read(cursor_state) -> datetime | None:
    text = cursor_state.get("updated_at")
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc) if text else None


@settings(max_examples=150, deadline=None)
@given(puts, st.integers(0, 6))
def test_the_store_never_claims_more_than_was_read_and_never_forgets_a_partition(sequence, limit):
    store = _store(limit)
    last: dict[int, datetime] = {}
    for account, minutes in sequence:
        value = T0 + timedelta(minutes=minutes)
        store.put({"account_id": account}, value)
        last[account] = value
    assert len(store.entries()) <= limit
    # Written out and read back, as the next sync does.
    again = _store(limit)
    for entry in store.entries():
        again.load(entry["partition"], _read(entry["cursor"]), entry["cursor"])
    again.load_compacted(store.compacted(), _read)
    in_full = {e["partition"]["account_id"] for e in store.entries()}
    for account in range(31):
        found = again.value({"account_id": account})
        if account not in last:
            assert found is None  # never seen: a new partition, read from the start
        elif account in in_full:
            assert found == last[account]
        else:  # compacted: never after the true value (that would skip records), at most a day before
            assert found == day_of(last[account])


def test_the_store_keeps_the_newest_in_full_and_files_the_rest_by_day():
    store = _store(2)
    for account, day in ((1, 1), (2, 1), (3, 2), (4, 3)):
        store.put({"account_id": account}, T0 + timedelta(days=day, hours=5))
    assert [e["partition"]["account_id"] for e in store.entries()] == [3, 4]
    assert [g["cursor"] for g in store.compacted()] == [{"updated_at": "2024-01-02T00:00:00Z"}]
    store.put({"account_id": 1}, T0 + timedelta(days=4))  # read again: back in full, out of the compact part
    assert [e["partition"]["account_id"] for e in store.entries()] == [4, 1]
    assert store.value({"account_id": 3}) == T0 + timedelta(days=2)
    assert store.value({"account_id": 2}) == T0 + timedelta(days=1)
    assert store.value({"account_id": 9}) is None


# -- units are values: read anywhere -----------------------------------------------------------


def test_pickled_units_are_read_by_another_connector_and_their_results_give_the_same_state(tmp_path, fake_api):
    shop = Shop()
    shop.add_account(1, at(0))
    shop.add_account(2, at(0))
    shop.add_order(1, "a", at(1))
    shop.add_order(1, "b", at(4))
    shop.add_order(2, "c", at(5))
    shop.install(fake_api)
    path = write(tmp_path, source(orders(step="P3D", lookback_window="PT1H")))
    config = {"base_url": fake_api.url}
    saved = {"states": [{"partition": {"account_id": 1, "parent_slice": {}}, "cursor": {"updated_at": iso(at(4))}}]}

    def new_sync(connector):
        return StreamSync(connector.stream("orders"), config, saved, clock=connector.context.clock)

    here = open_connector(path, config, sleep=lambda s: None, clock=FixedClock(at(9)))
    driver = new_sync(here)
    plan = driver.plan()
    shipped = pickle.loads(pickle.dumps(plan))
    assert shipped == plan
    assert shipped[0].prior == at(4)  # account 1 resumes at its cursor
    # An executor: its own connector from the same manifest and config, nothing else.
    there = open_connector(path, config, sleep=lambda s: None, clock=FixedClock(at(9)))
    ids = []
    for unit in shipped:
        for records, _ in read_unit(there.stream("orders"), config, unit):
            ids += [r["id"] for r in records]
    assert ids == ["b", "c"]
    # The same through the engine's worker side: typed pages and one result per unit, folded on the driver.
    items = list(read_group(there, there.stream("orders"), shipped, PageTyper(None)))
    results = [item for item in items if isinstance(item, UnitResult)]
    assert [r.unit for r in results] == [u.index for u in plan]
    assert sum(item.num_rows for item in items if not isinstance(item, UnitResult)) == 2
    totals = fold_results(driver, from_arrow(to_arrow(results)))
    assert (totals.units_done, totals.records, totals.error) == (len(plan), 2, None)
    local = new_sync(here)
    for unit in local.plan():
        list(local.read(unit))
        local.done(unit)
    assert driver.state(final=True) == local.state(final=True)
    assert by_account(driver.state(final=True)) == {1: iso(at(4)), 2: iso(at(5))}


def by_account(state: dict) -> dict:
    return {e["partition"]["account_id"]: e["cursor"]["updated_at"] for e in state["states"]}


def test_an_unreadable_per_partition_state_names_the_stream_and_the_fix(tmp_path, fake_api):
    Shop().install(fake_api)
    path = write(tmp_path, source(orders(step="P3D")))
    connector = open_connector(path, {"base_url": fake_api.url}, sleep=lambda s: None)
    with pytest.raises(StateError, match="stream `orders`.*states"):
        StreamSync(connector.stream("orders"), {}, {"states": [{"cursor": {}}]})
    with pytest.raises(StateError, match="stream `orders`"):
        StreamSync(connector.stream("orders"), {}, {"states": [{"partition": {"account_id": 1},
                                                               "cursor": {"updated_at": "yesterday"}}]})
    with pytest.raises(StateError, match="`lookback_window` should be a number of seconds"):
        StreamSync(connector.stream("orders"), {}, {"states": [], "lookback_window": "an hour"})
    with pytest.raises(StateError, match="`parent_state` should be an object"):
        StreamSync(connector.stream("orders"), {}, {"parent_state": ["accounts"]})
    assert StreamSync(connector.stream("orders"), {}, {"states": [], "lookback_window": "3600"})._saved_lookback == 3600
    with pytest.raises(StateError, match=r"none of the keys this stream's cursor reads \(it has `events`"):
        StreamSync(connector.stream("orders"), {}, {"events": {"updated_at": "2024-01-15T00:00:00Z"}})
