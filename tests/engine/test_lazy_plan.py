"""Planning as parent pages arrive: lazy groups, parents read side by side, bounded memory, and the same state.

``StreamSync.units()`` makes the units as the parent's pages come (the Spark
pipeline's form, with :func:`lazy_groups`); ``plan()`` lists them all
(protocol mode, the DataFrame reader). Both must give the same units and,
folded in any order, the same state.
"""

from __future__ import annotations

import threading
import time
from datetime import datetime, timedelta

import pytest
from engine.incremental_kit import (
    T0,
    Shop,
    accounts,
    at,
    orders,
    parent,
    source,
    stream,
    substream,
    write,
)
from hypothesis import given, settings
from hypothesis import strategies as st

import framework.engine.sync as sync_module
from framework.components.slices import StreamSlice
from framework.engine.connector import open_connector
from framework.engine.partition_states import DigestSet, _Compacted, day_of
from framework.engine.plan import contiguous_groups, lazy_groups
from framework.engine.prefetch import ordered_pages
from framework.engine.results import UnitResult, fold_results
from framework.engine.sync import StreamSync, Unit
from framework.temporal.clock import FixedClock

# -- lazy_groups --------------------------------------------------------------------------------


def _units(count: int) -> list[Unit]:
    return [Unit(index, StreamSlice({"n": index}), index, 0) for index in range(count)]


@settings(deadline=None, max_examples=200)
@given(st.integers(0, 120), st.integers(1, 8), st.integers(1, 12))
def test_lazy_groups_are_the_eager_groups_when_the_plan_fits_the_look_ahead(count, at_most, max_size):
    plan = _units(count)
    pulled = []
    groups = list(lazy_groups((pulled.append(u) or u for u in plan), at_most, max_size))
    assert [u for group in groups for u in group] == plan  # every unit once, in order
    if count == 0:
        assert groups == []
    elif count <= at_most * max_size:
        assert groups == contiguous_groups(plan, at_most)
    else:
        assert all(len(group) == max_size for group in groups[:-1]) and 0 < len(groups[-1]) <= max_size


def test_lazy_groups_look_ahead_no_further_than_they_must():
    pulled = []

    def plan():
        for unit in _units(1000):
            pulled.append(unit)
            yield unit

    groups = lazy_groups(plan(), 2, 10)
    first = next(groups)
    assert len(first) == 10 and len(pulled) == 21  # the look-ahead (2 x 10) and one more: too big to split whole
    next(groups)
    next(groups)
    assert len(pulled) == 30  # then only what each group needs


def test_lazy_groups_refuse_nonsense_sizes():
    with pytest.raises(ValueError, match="at_most >= 1"):
        list(lazy_groups([], 0, 5))


# -- ordered_pages ------------------------------------------------------------------------------


@settings(deadline=None, max_examples=25)
@given(st.lists(st.lists(st.floats(0, 0.003), max_size=4), max_size=8), st.integers(1, 4))
def test_ordered_pages_hand_on_every_page_in_the_units_order(delays, readers):
    def read(unit: int):
        for page, delay in enumerate(delays[unit]):
            time.sleep(delay)
            yield (unit, page)

    got = [(unit, list(pages)) for unit, pages in ordered_pages(range(len(delays)), read, readers)]
    assert got == [(unit, [(unit, page) for page in range(len(d))]) for unit, d in enumerate(delays)]


def test_ordered_pages_read_units_side_by_side_and_raise_a_units_error_in_its_place():
    running, most = [0], [0]
    lock = threading.Lock()

    def read(unit: int):
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        try:
            time.sleep(0.05)
            if unit == 5:
                raise RuntimeError("unit 5 failed")
            yield unit
        finally:
            with lock:
                running[0] -= 1

    seen = []
    with pytest.raises(RuntimeError, match="unit 5 failed"):
        for _unit, pages in ordered_pages(range(8), read, readers=4):
            seen.extend(pages)
    assert seen == [0, 1, 2, 3, 4]  # everything before the failed unit, in order
    assert most[0] > 1


def test_closing_ordered_pages_stops_its_readers():
    started = []

    def read(unit: int):
        started.append(unit)
        yield from range(1000)

    pages = ordered_pages(range(100), read, readers=3, depth=1)
    unit, first = next(pages)
    assert next(first) == 0
    pages.close()
    time.sleep(0.3)
    assert len(started) <= 3  # never more than the readers in flight
    assert not [t for t in threading.enumerate() if t.name == "parent-reader"]


# -- lazy planning of a substream ----------------------------------------------------------------


def shop_of(count: int, orders_per_account: int = 1) -> Shop:
    shop = Shop()
    for account in range(1, count + 1):
        shop.add_account(account, at(0))
        for n in range(orders_per_account):
            shop.add_order(account, f"{account}-{n}", at(1 + n, account % 24))
    return shop


def open_sync_of(path: str, config: dict, state=None, name: str = "orders") -> StreamSync:
    connector = open_connector(path, config, sleep=lambda s: None, clock=FixedClock(at(9)))
    return StreamSync(connector.stream(name), config, state, clock=connector.context.clock)


def _shape(unit: Unit) -> tuple:
    return (unit.index, unit.partition, unit.window, dict(unit.slice.partition), dict(unit.slice.cursor_slice),
            unit.prior, unit.floor, unit.ceiling)


def test_units_are_the_plan_and_fold_to_the_same_state(tmp_path, fake_api):
    shop = shop_of(30)
    shop.install(fake_api)
    path = write(tmp_path, source(orders(step="P3D")))
    config = {"base_url": fake_api.url}
    listed = open_sync_of(path, config)
    plan = listed.plan()
    lazy = open_sync_of(path, config)
    made = list(lazy.units())
    assert [_shape(u) for u in made] == [_shape(u) for u in plan]
    for sync, units in ((listed, plan), (lazy, made)):
        fold_results(sync, [UnitResult(u.index, records=1, latest=at(4)) for u in units])
    assert lazy.state(final=True) == listed.state(final=True)
    assert not lazy._partitions and not lazy._open  # nothing left in memory once every unit is done
    with pytest.raises(RuntimeError):
        lazy.plan()


@pytest.fixture(scope="module")
def twelve_accounts(tmp_path_factory):
    from fakes.api_server import FakeApi

    shop = shop_of(12)
    with FakeApi() as api:
        shop.install(api)
        path = write(tmp_path_factory.mktemp("lazy"), source(orders(step="P4D")))
        yield path, {"base_url": api.url}


@settings(deadline=None, max_examples=30)
@given(st.randoms(use_true_random=False), st.integers(1, 12), st.sampled_from([1, 3, 12]), st.integers(1, 5))
def test_state_after_folding_groups_in_any_order_claims_only_what_finished(twelve_accounts, rng, size, limit, cut):
    """Groups come back in any order and only some of them: the state never claims an unfinished window, never
    loses a finished partition, and once all are back it is the in-order state (up to the order of the kept list)."""
    path, config = twelve_accounts
    old = sync_module.MAX_PARTITION_STATES
    sync_module.MAX_PARTITION_STATES = limit
    try:
        sync = open_sync_of(path, config)
        groups = list(lazy_groups(sync.units(), 3, size))
        latest = {u.index: at(1 + u.window * 4, u.partition % 24) for g in groups for u in g}
        order = list(range(len(groups)))
        rng.shuffle(order)
        back = order[:max(1, len(order) * cut // 5)]
        for g in back:
            fold_results(sync, [UnitResult(u.index, records=1, latest=latest[u.index]) for u in groups[g]])
        done = {u.index for g in back for u in groups[g]}
        resumed = _resume_points(path, config, sync.state())
        everything = [u for g in groups for u in g]
        for p_index in {u.partition for u in everything}:
            windows = sorted((u for u in everything if u.partition == p_index), key=lambda u: u.window)
            account = windows[0].slice.partition["account_id"]
            claim = resumed[account]
            contiguous = []
            for unit in windows:
                if unit.index not in done:
                    break
                contiguous.append(unit)
            if claim is not None:  # never past what the contiguous finished windows read
                assert claim <= max((latest[u.index] for u in contiguous), default=T0)
            else:  # a partition whose first window finished is never forgotten
                assert not contiguous, f"partition {p_index}: its first window finished but the state forgot it"
        if len(back) == len(groups):  # all back: where the next sync starts is the in-order fold's (or its day)
            again = open_sync_of(path, config)
            for unit in again.plan():
                again.observe(unit, latest[unit.index], 1)
                again.done(unit)
            final = _resume_points(path, config, sync.state(final=True))
            expected = _resume_points(path, config, again.state(final=True))
            assert {a: day_of(v) for a, v in final.items()} == {a: day_of(v) for a, v in expected.items()}
            if limit >= 12:
                assert final == expected
    finally:
        sync_module.MAX_PARTITION_STATES = old


def _resume_points(path: str, config: dict, state: dict | None) -> dict:
    """Account -> the cursor value the next sync starts it from (None: from start_datetime)."""
    again = open_sync_of(path, config, state)
    return {account: again._prior_for({"account_id": account, "parent_slice": {}})[0] for account in range(1, 13)}


def test_memory_stays_bounded_while_units_stream_and_finish(tmp_path, fake_api):
    """3,000 partitions from a paged parent: with groups done as they come, the sync never holds more than the
    groups in flight (open units, partitions not done) and drops routing's digests at the end."""
    shop = shop_of(3000)
    shop.page_size = 100
    shop.install(fake_api)
    path = write(tmp_path, source(stream("orders", "/accounts/{{ stream_partition.account_id }}/orders",
                                         incremental=_one_window(),
                                         router=substream(parent(stream("accounts", "/accounts", paginate=True)))),))
    # the kit's paginator pages by 2: a page size of 100 here
    text = open(path).read().replace("page_size: 2", "page_size: 100")
    open(path, "w").write(text)
    sync = open_sync_of(path, {"base_url": fake_api.url})
    most_open = most_partitions = count = 0
    in_flight: list[list[Unit]] = []
    for group in lazy_groups(sync.units(), 4, 50):
        count += len(group)
        in_flight.append(group)
        if len(in_flight) == 4:
            done = in_flight.pop(0)
            fold_results(sync, [UnitResult(u.index, records=1, latest=at(2)) for u in done])
        most_open = max(most_open, len(sync._open))
        most_partitions = max(most_partitions, len(sync._partitions))
    for group in in_flight:
        fold_results(sync, [UnitResult(u.index, records=1, latest=at(2)) for u in group])
    assert count == 3000
    assert most_open <= 4 * 50 + 4 * 50 + 100  # groups in flight, the look-ahead, one parent page
    assert most_partitions <= most_open
    assert not sync._open and not sync._partitions and not sync._seen_digests
    state = sync.state(final=True)
    assert len(state["states"]) == 3000 or state.get("compacted_partitions")


def _one_window() -> dict:
    from engine.incremental_kit import cursor

    return cursor(step="P10000D", end_datetime="2024-01-09T00:00:00Z")


def test_a_partitioned_parent_is_read_side_by_side_in_the_plans_order(tmp_path, fake_api):
    """A parent with four partitions (a list router): units() reads them at once, plan() one after another;
    both route the same partitions in the same order."""
    regions = ["north", "south", "east", "west"]
    running, most = [0], [0]
    lock = threading.Lock()

    def accounts_of(request):
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.1)
        with lock:
            running[0] -= 1
        region = request.param("region")
        return {"data": [{"id": f"{region}-{n}"} for n in range(3)]}

    fake_api.route("GET", "/accounts", accounts_of)
    fake_api.route("GET", "/accounts/{account}/orders", lambda r: {"data": []})
    region_router = {"type": "ListPartitionRouter", "cursor_field": "region", "values": regions,
                     "request_option": {"type": "RequestOption", "inject_into": "request_parameter",
                                        "field_name": "region"}}
    parent_stream = stream("accounts", "/accounts", router=region_router)
    path = write(tmp_path, source(orders(router=substream(parent(parent_stream)), step="P10D")))
    config = {"base_url": fake_api.url}
    listed = [dict(u.slice.partition) for u in open_sync_of(path, config).plan()]
    assert most[0] == 1  # plan(): one parent unit after another
    most[0] = 0
    lazy = [dict(u.slice.partition) for u in open_sync_of(path, config).units()]
    assert lazy == listed
    assert [p["account_id"] for p in lazy] == [f"{r}-{n}" for r in regions for n in range(3)]
    assert most[0] > 1  # units(): the parent's partitions side by side


def test_a_repeated_partition_holds_its_second_parent_unit_until_read(tmp_path, fake_api):
    """Two parent windows list the same account: one partition, and the second parent window is not finished
    (its parent state does not move) before that partition's units are."""
    fake_api.route("GET", "/accounts/{account}/orders", lambda r: {"data": []})
    fake_api.route("GET", "/accounts", lambda r: {"data": [{"id": 1, "updated_at": r.param("end")},
                                                            {"id": 2, "updated_at": r.param("end")}]})
    path = write(tmp_path, source(orders(router=substream(parent(accounts(step="P1D", end_datetime="2024-01-02T23:59:59Z"),
                                                                 incremental_dependency=True)), step="P10D")))
    sync = open_sync_of(path, {"base_url": fake_api.url}, state={"parent_state": {"accounts": {"updated_at": "2024-01-01T00:00:00Z"}}})
    made = list(sync.units())
    assert sorted({u.slice.partition["account_id"] for u in made}) == [1, 2]
    assert len({u.partition for u in made}) == 2  # each account once, though both parent windows list both
    first, *rest = made
    fold_results(sync, [UnitResult(u.index, records=0) for u in rest])
    assert sync.state()["parent_state"]["accounts"]["updated_at"] == "2024-01-01T00:00:00Z"  # held by account 1
    fold_results(sync, [UnitResult(first.index, records=0)])
    assert sync.state()["parent_state"]["accounts"]["updated_at"] > "2024-01-02"


# -- the compact store -----------------------------------------------------------------------------


@settings(deadline=None, max_examples=150)
@given(st.lists(st.tuples(st.sampled_from(["file", "remove"]), st.integers(0, 40), st.integers(0, 6)),
                max_size=120), st.integers(1, 7))
def test_the_compact_store_is_a_dict_whatever_its_merges(operations, merge_at):
    """Filed, removed and looked up across merges of its arrays, it answers as a plain dict with the
    earlier-day rule would; its groups hold every digest once, under its day, sorted."""
    compact = _Compacted()
    compact.MERGE_AT = merge_at  # type: ignore[misc]
    model: dict[bytes, datetime] = {}
    for op, n, day in operations:
        digest = n.to_bytes(8, "big") if n % 2 else (n * 0x0101010101).to_bytes(8, "little")
        moment = T0 + timedelta(days=day)
        if op == "file":
            compact.file(digest, moment)
            if digest not in model or model[digest] > moment:
                model[digest] = moment
        else:
            compact.remove(digest)
            model.pop(digest, None)
        assert compact.get(digest) == model.get(digest)
    assert len(compact) == len(model)
    grouped: dict[datetime, list[bytes]] = {}
    import base64

    for day, text in compact.groups():
        raw = base64.b64decode(text)
        grouped[day] = [raw[i:i + 8] for i in range(0, len(raw), 8)]
    assert list(grouped) == sorted(grouped)
    for digests in grouped.values():
        assert digests == sorted(digests)
    assert {d: day for day, ds in grouped.items() for d in ds} == model
    assert all(day_of(day) == day for day in grouped)


@settings(deadline=None, max_examples=100)
@given(st.lists(st.integers(0, 60)), st.integers(1, 9))
def test_the_digest_set_is_a_set_whatever_its_merges(numbers, merge_at):
    digests = DigestSet()
    digests.MERGE_AT = merge_at  # type: ignore[misc]
    model: set[bytes] = set()
    for n in numbers:
        digest = (n * 0x0102030405).to_bytes(8, "little")
        assert digests.add(digest) is (digest not in model)
        model.add(digest)
        assert len(digests) == len(model)
