"""The example shop API (examples/shop/api.py) and the example connector read against it.

The API's endpoints, auth, pagination, filters and rate limit are checked
over HTTP on an ephemeral port; then examples/shop/manifest.yaml is read in
protocol mode (no Spark) against it, once from scratch and once more,
incrementally, after the API got new data.
"""

from __future__ import annotations

import http.client
import importlib.util
import io
import json
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from framework.cli.run import main as run_manifest

REPO = Path(__file__).resolve().parents[2]
SHOP_DIR = REPO / "examples" / "shop"
MANIFEST = SHOP_DIR / "manifest.yaml"


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


shop_api = _load("shop_api_example", SHOP_DIR / "api.py")
demo_steps = _load("shop_demo_steps_example", SHOP_DIR / "demo_steps.py")

NOW = datetime(2024, 6, 1, 12, 0, 0, tzinfo=timezone.utc)
AUTH = {"Authorization": f"Bearer {shop_api.API_KEY}"}


@pytest.fixture
def api():
    with shop_api.ShopApi(now=NOW) as running:
        yield running


def call(api, path: str, headers=AUTH, method: str = "GET", connection=None):
    conn = connection or http.client.HTTPConnection(api.server.server_address[0], api.server.server_address[1])
    conn.request(method, path, headers=dict(headers or {}))
    response = conn.getresponse()
    body = orjson.loads(response.read())
    if connection is None:
        conn.close()
    return response, body


# -- the data --------------------------------------------------------------------------------


def test_the_data_is_deterministic_and_only_its_dates_follow_now():
    first, again = shop_api.generate(NOW), shop_api.generate(NOW)
    assert first.accounts == again.accounts and first.orders == again.orders and first.events == again.events
    later = shop_api.generate(NOW + timedelta(days=3))
    assert later.counts() == first.counts()
    assert [a["name"] for a in later.accounts] == [a["name"] for a in first.accounts]
    assert later.accounts[0]["updated_at"] != first.accounts[0]["updated_at"]
    other = shop_api.generate(NOW, seed=8)
    assert other.accounts != first.accounts
    counts = first.counts()
    assert counts["accounts"] == 50 and 500 <= counts["orders"] <= 1000 and 0 < counts["heartbeats"] < counts["events"]


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), days=st.integers(-400, 400))
def test_the_data_lies_in_the_history_and_accounts_move_with_their_orders(seed, days):
    now = NOW + timedelta(days=days)
    shop = shop_api.generate(now, seed)
    low = shop_api._text(now - shop_api.HISTORY)
    high = shop_api._text(now - shop_api.QUIET_PERIOD)
    assert shop.mark == now - shop_api.QUIET_PERIOD
    for account in shop.accounts:
        assert low <= account["created_at"] <= account["updated_at"] <= high
        orders = shop.orders[account["id"]]
        assert all(o["updated_at"] <= account["updated_at"] for o in orders)
        for order in orders:
            assert order["ordered_at"] <= order["updated_at"]
            assert order["line_items"] and "account_id" not in order
            digits = 0 if order["currency"] == "JPY" else 2
            assert order["total"] == round(sum(i["quantity"] * i["unit_price"] for i in order["line_items"]), digits)
    assert all(low <= e["occurred_at"] <= high for e in shop.events)
    assert [e["occurred_at"] for e in shop.events] == sorted(e["occurred_at"] for e in shop.events)
    assert len({e["id"] for e in shop.events}) == len(shop.events)
    all_orders = [o["id"] for items in shop.orders.values() for o in items]
    assert sorted(all_orders) == list(range(1, len(all_orders) + 1))


def test_advance_adds_data_after_the_newest_item_and_says_what_changed():
    shop = shop_api.generate(NOW)
    before_accounts = {a["id"]: a for a in shop.accounts}
    before_orders = {o["id"]: o for items in shop.orders.values() for o in items}
    before_counts, mark = shop.counts(), shop.mark
    at = NOW + timedelta(minutes=1)
    added = shop.advance(at)
    assert added["now"] == "2024-06-01T12:01:00Z" and shop.mark == at
    after = shop.counts()
    assert after["accounts"] == before_counts["accounts"] + added["accounts"]["new"] == 53
    assert after["orders"] == before_counts["orders"] + added["orders"]["new"] == before_counts["orders"] + 30
    assert after["events"] == before_counts["events"] + added["events"]["new"]
    assert added["events"]["heartbeats"] == 1
    after_orders = {o["id"]: o for items in shop.orders.values() for o in items}
    changed = [i for i, o in before_orders.items() if after_orders[i] != o]
    assert len(changed) == added["orders"]["changed"] == 12
    for order_id in changed:
        old, new = before_orders[order_id], after_orders[order_id]
        assert new["status"] == shop_api._next_status(old["status"])
        assert shop_api._text(mark) < new["updated_at"] <= added["now"]
    moved = [a for a in shop.accounts if a["id"] in before_accounts and a != before_accounts[a["id"]]]
    assert len(moved) == added["accounts"]["changed"]
    for account in shop.accounts:
        newest = max((o["updated_at"] for o in shop.orders[account["id"]]), default=account["created_at"])
        assert account["updated_at"] >= newest
    new_events = shop.events[before_counts["events"]:]
    assert all(shop_api._text(mark) < e["occurred_at"] <= added["now"] for e in new_events)
    # the same seed adds the same amounts again
    assert shop_api.generate(NOW).advance(at) == added


# -- HTTP: auth, pagination, filters -------------------------------------------------------------


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer wrong"}, {"Authorization": shop_api.API_KEY}])
def test_a_missing_or_wrong_key_gets_401(api, headers):
    response, body = call(api, "/accounts", headers=headers)
    assert response.status == 401
    assert response.getheader("WWW-Authenticate", "").startswith("Bearer")
    assert "API key" in body["error"] and shop_api.API_KEY not in body["error"]


def test_answers_keep_the_connection_alive_with_a_content_length(api):
    conn = http.client.HTTPConnection(*api.server.server_address[:2])
    first, _ = call(api, "/accounts?limit=1", connection=conn)
    sock = conn.sock
    second, body = call(api, "/accounts?limit=2", connection=conn)
    assert conn.sock is sock  # the same connection served both
    assert first.status == second.status == 200 and len(body["data"]) == 2
    assert int(second.getheader("Content-Length")) > 0 and second.getheader("Content-Type") == "application/json"
    conn.close()


def test_cursor_pages_walk_every_account_once_oldest_change_first(api):
    seen, cursor, pages = [], None, 0
    while True:
        _, body = call(api, "/accounts?limit=7" + (f"&cursor={cursor}" if cursor else ""))
        seen += body["data"]
        pages += 1
        cursor = body["next_cursor"]
        if cursor is None:
            break
    assert pages == 8 and [a["id"] for a in seen] == [a["id"] for a in api.shop.accounts]
    keys = [(a["updated_at"], a["id"]) for a in seen]
    assert keys == sorted(keys) and len(set(keys)) == 50


def test_limits_are_checked_and_capped(api):
    _, body = call(api, "/accounts?limit=1000")
    assert len(body["data"]) == 50 and body["next_cursor"] is None  # capped at 100: one page
    _, body = call(api, "/accounts")
    assert len(body["data"]) == 50
    _, body = call(api, "/accounts?limit=10")
    assert len(body["data"]) == 10 and body["next_cursor"]
    for query, word in (("limit=0", "at least 1"), ("limit=ten", "whole number"), ("cursor=%21%21", "cursor")):
        response, body = call(api, f"/accounts?{query}")
        assert response.status == 400 and word in body["error"]


def test_updated_since_and_until_are_inclusive(api):
    account = api.shop.accounts[20]
    stamp = account["updated_at"]
    _, since = call(api, f"/accounts?limit=100&updated_since={stamp}")
    _, until = call(api, f"/accounts?limit=100&updated_until={stamp}")
    assert since["data"][0]["updated_at"] == stamp and until["data"][-1]["updated_at"] == stamp
    assert all(a["updated_at"] >= stamp for a in since["data"])
    ids = {a["id"] for a in since["data"]} | {a["id"] for a in until["data"]}
    assert ids == {a["id"] for a in api.shop.accounts}
    _, exact = call(api, f"/accounts?updated_since={stamp}&updated_until={stamp}")
    assert account["id"] in [a["id"] for a in exact["data"]]
    offset = stamp.replace("Z", "+02:00")  # the same wall time two hours east: two hours earlier
    _, shifted = call(api, f"/accounts?limit=100&updated_until={offset.replace('+', '%2B')}")
    assert all(a["updated_at"] < stamp for a in shifted["data"])
    response, body = call(api, "/accounts?updated_since=yesterday")
    assert response.status == 400 and "ISO 8601" in body["error"]


def test_orders_of_an_account_filter_and_page_like_accounts(api):
    account_id = max(api.shop.orders, key=lambda k: len(api.shop.orders[k]))
    orders = api.shop.orders[account_id]
    _, first = call(api, f"/accounts/{account_id}/orders?limit=3")
    _, second = call(api, f"/accounts/{account_id}/orders?limit=3&cursor={first['next_cursor']}")
    assert [o["id"] for o in first["data"] + second["data"]] == [o["id"] for o in orders[:6]]
    middle = orders[len(orders) // 2]["updated_at"]
    _, later = call(api, f"/accounts/{account_id}/orders?updated_since={middle}&limit=100")
    assert [o["id"] for o in later["data"]] == [o["id"] for o in orders if o["updated_at"] >= middle]
    for path in ("/accounts/999/orders", "/accounts/abc/orders", "/nope"):
        response, body = call(api, path)
        assert response.status == 404 and body["error"]


def test_events_page_by_number_within_epoch_bounds(api):
    events = api.shop.events
    since = int(shop_api._parse(events[100]["occurred_at"]).timestamp())
    until = int(shop_api._parse(events[700]["occurred_at"]).timestamp())
    wanted = [e for e in events if events[100]["occurred_at"] <= e["occurred_at"] <= events[700]["occurred_at"]]
    read, page = [], 1
    while True:
        _, body = call(api, f"/events?since={since}&until={until}&per_page=200&page={page}")
        read += body["data"]
        if len(body["data"]) < 200:
            break
        page += 1
    assert read == wanted and len(read) >= 601
    _, body = call(api, "/events?per_page=500")
    assert len(body["data"]) == 200  # capped
    _, body = call(api, "/events")
    assert body["data"] == events[:100] and {"heartbeat", "login"} <= {e["kind"] for e in events}
    response, body = call(api, "/events?since=2024-01-01")
    assert response.status == 400 and "epoch seconds" in body["error"]


def test_admin_endpoints_need_no_key_and_advance_needs_post(api):
    response, body = call(api, "/_admin/advance")
    assert response.status == 405 and response.getheader("Allow") == "POST"
    response, body = call(api, "/_admin/advance", headers={}, method="POST")
    assert response.status == 200 and body["accounts"]["new"] == 3
    response, body = call(api, "/accounts", method="POST")
    assert response.status == 405
    _, stats = call(api, "/_admin/stats", headers={})
    assert stats["data"]["accounts"] == 53 and stats["requests"] == 3
    assert stats["statuses"] == {"200": 1, "405": 2}


# -- the rate limit ------------------------------------------------------------------------------


class Ticks:
    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_token_bucket_allows_bursts_then_says_how_long_to_wait():
    ticks = Ticks()
    limiter = shop_api.RateLimiter(4, clock=ticks)
    assert [limiter.take("a") for _ in range(4)] == [0.0] * 4
    assert limiter.take("a") == pytest.approx(0.25)
    assert limiter.take("b") == 0.0  # per client
    ticks.now += 0.25
    assert limiter.take("a") == 0.0 and limiter.take("a") > 0
    ticks.now += 10
    assert [limiter.take("a") for _ in range(5)].count(0.0) == 4  # refills up to the burst only
    with pytest.raises(ValueError):
        shop_api.RateLimiter(0)


def test_requests_over_the_limit_get_429_with_retry_after(api):
    ticks = Ticks()
    api.server.limiter = shop_api.RateLimiter(2, clock=ticks)
    statuses = [call(api, "/accounts?limit=1")[0] for _ in range(3)]
    assert [r.status for r in statuses] == [200, 200, 429]
    assert statuses[2].getheader("Retry-After") == "1"
    assert call(api, "/accounts", headers={})[0].status == 401  # a refused key takes no token
    ticks.now += 0.5
    assert call(api, "/accounts?limit=1")[0].status == 200
    _, stats = call(api, "/_admin/stats")
    assert stats["throttled"] == 1


# -- the example connector read against the API (protocol mode, no Spark) --------------------------


def read(api, tmp_path: Path, name: str, state: list | None = None) -> tuple[dict[str, list[dict]], list[dict]]:
    """Records per stream and the last STATE message of each stream."""
    config = tmp_path / "config.json"
    config.write_text(json.dumps({**json.loads((SHOP_DIR / "config.json").read_text()), "base_url": api.url}))
    argv = [str(MANIFEST), "--config", str(config), "--protocol"]
    if state is not None:
        state_file = tmp_path / f"{name}-state.json"
        state_file.write_text(json.dumps(state))
        argv += ["--state", str(state_file)]
    out = io.BytesIO()
    assert run_manifest(argv, out=out) == 0
    records: dict[str, list[dict]] = {"accounts": [], "orders": [], "events": []}
    states: dict[str, dict] = {}
    for line in out.getvalue().splitlines():
        message = orjson.loads(line)
        if message["type"] == "RECORD":
            records[message["record"]["stream"]].append(message["record"]["data"])
        elif message["type"] == "STATE":
            states[message["state"]["stream"]["stream_descriptor"]["name"]] = message["state"]
    return records, list(states.values())


@pytest.fixture
def live_api():
    """The API with data up to the real now: the connector's windows end at the real now."""
    with shop_api.ShopApi() as running:
        yield running


def test_the_example_connector_reads_every_account_and_order(live_api, tmp_path):
    records, states = read(live_api, tmp_path, "first")
    shop = live_api.shop
    assert sorted(a["id"] for a in records["accounts"]) == sorted(a["id"] for a in shop.accounts)
    orders = {(o["account_id"], o["id"]) for o in records["orders"]}
    assert orders == {(k, o["id"]) for k, items in shop.orders.items() for o in items}
    assert len(records["orders"]) == len(orders)  # each once
    assert {s["stream"]["stream_descriptor"]["name"] for s in states} == {"accounts", "orders", "events"}
    assert all(e["kind"] != "heartbeat" for e in records["events"])


def test_the_example_connector_reads_every_event_but_heartbeats(live_api, tmp_path):
    records, _ = read(live_api, tmp_path, "first")
    wanted = [e["id"] for e in live_api.shop.events if e["kind"] != "heartbeat"]
    assert sorted(e["id"] for e in records["events"]) == wanted


def test_the_second_read_gets_only_what_the_api_added_or_changed(live_api, tmp_path):
    first, states = read(live_api, tmp_path, "first")
    shop = live_api.shop
    before = {
        "accounts": {a["id"]: a["updated_at"] for a in shop.accounts},
        "orders": {o["id"]: o["updated_at"] for items in shop.orders.values() for o in items},
        "events": {e["id"]: e["occurred_at"] for e in shop.events},
    }
    boundary_account = max(a["updated_at"] for a in first["accounts"])
    newest_order_of = {k: max((o["updated_at"] for o in items), default=None) for k, items in shop.orders.items()}
    boundary_event = max(e["occurred_at"] for e in first["events"])
    added = shop.advance(datetime.now(timezone.utc))
    second, _ = read(live_api, tmp_path, "second", state=states)

    def split(stream: str, records: list[dict], cursor: str) -> tuple[list, list]:
        fresh = [r for r in records if before[stream].get(r["id"]) != r[cursor]]
        again = [r for r in records if before[stream].get(r["id"]) == r[cursor]]
        return fresh, again

    fresh, again = split("accounts", second["accounts"], "updated_at")
    assert len([a for a in fresh if a["id"] not in before["accounts"]]) == added["accounts"]["new"]
    assert len([a for a in fresh if a["id"] in before["accounts"]]) == added["accounts"]["changed"]
    assert all(a["updated_at"] == boundary_account for a in again)  # the inclusive start of the window

    fresh, again = split("orders", second["orders"], "updated_at")
    assert len([o for o in fresh if o["id"] not in before["orders"]]) == added["orders"]["new"]
    assert len([o for o in fresh if o["id"] in before["orders"]]) == added["orders"]["changed"]
    assert all(o["updated_at"] == newest_order_of[o["account_id"]] for o in again)
    assert len(again) <= added["accounts"]["changed"] + 1

    fresh, again = split("events", second["events"], "occurred_at")
    assert len(fresh) == added["events"]["new"] - added["events"]["heartbeats"]
    assert all(e["occurred_at"] == boundary_event for e in again)


# -- the demo's comparison of syncs ---------------------------------------------------------------


def test_compare_splits_the_last_sync_into_new_changed_and_read_again(tmp_path, capsys):
    import pyarrow as pa
    import pyarrow.parquet as pq

    def write(stream: str, rows: list[tuple[int, object, str]], cursor: str) -> None:
        folder = tmp_path / stream
        folder.mkdir(exist_ok=True)
        meta = pa.array([{"sync_id": s, "changes": []} for s, _, _ in rows],
                        pa.struct([("sync_id", pa.int64()), ("changes", pa.list_(pa.string()))]))
        table = pa.table({"_airbyte_meta": meta, "id": [i for _, i, _ in rows], cursor: [v for _, _, v in rows]})
        pq.write_table(table, folder / "0.parquet")
        (folder / ".0.parquet.meta.json").write_text("{}")

    write("accounts", [(1, 1, "a"), (1, 2, "a"), (2, 2, "a"), (2, 3, "b"), (2, 1, "c")], "updated_at")
    write("orders", [(1, 1, "a"), (2, 9, "b")], "updated_at")
    write("events", [(1, "e1", "a"), (2, "e2", "b"), (2, "e3", "b")], "occurred_at")
    assert demo_steps.count(str(tmp_path), "accounts") == demo_steps.Counts({1: 2, 2: 3}, new=1, changed=1, again=1)
    expected = tmp_path / "advance.json"
    expected.write_text(json.dumps({"accounts": {"new": 1, "changed": 1}, "orders": {"new": 1, "changed": 0},
                                    "events": {"new": 3, "heartbeats": 1}}))
    assert demo_steps.compare(str(tmp_path), str(expected)) == 0
    assert "read exactly the records the API added" in capsys.readouterr().out
    expected.write_text(json.dumps({"accounts": {"new": 2, "changed": 1}, "orders": {"new": 1, "changed": 0},
                                    "events": {"new": 2, "heartbeats": 0}}))
    assert demo_steps.compare(str(tmp_path), str(expected)) == 1
    assert "accounts: read 1 new and 1 changed, the API added 2" in capsys.readouterr().out
