"""The manifests of docs/manifest-guide.md run, in protocol mode, against the API the guide describes.

The guide's full manifests (```yaml blocks with `version` and `streams`) are
taken from the page in order: the first stream, the paginated incremental
stream, and the substreams. Each runs through ``run-manifest --protocol``
in-process against the ``fake_api`` fixture, which serves the guide's shop API:
bearer-token auth, records under ``data``, ``next_cursor`` / ``?cursor=`` /
``?limit=`` paging and ``updated_since`` / ``updated_until`` filters (both
bounds included). Pages here hold at most 2 records, so a few records make
several pages. The tests check the records, the requests and the state, and
run a second sync from the first one's state. No Spark.
"""

from __future__ import annotations

import io
import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from docs.test_examples import REPO, blocks_of
from fakes.api_server import Reply, dated, paged

from framework.cli.run import main

GUIDE = REPO / "docs" / "manifest-guide.md"
API_KEY = "sk-guide-test-key"
FORMAT = "%Y-%m-%dT%H:%M:%SZ"
PAGE = 2  # the test API's page size (the guide's API: 10, up to 100)


def guide_manifests() -> list[str]:
    found = []
    for block in blocks_of(GUIDE):
        text = block.text
        if block.language == "yaml" and text.startswith("version:") and "\nstreams:" in text:
            found.append(text)
    return found


MANIFESTS = guide_manifests()


def test_the_guide_has_its_three_manifests():
    assert len(MANIFESTS) == 3, (
        f"docs/manifest-guide.md has {len(MANIFESTS)} full manifests; this test runs three (first stream, "
        "incremental, substreams): update the tests with the guide")


class Shop:
    """The guide's shop API: accounts and orders per account, dated, paged by cursor."""

    def __init__(self, api: Any, now: datetime):
        self.api = api
        self.now = now
        # Account n was last updated 10 - n days ago; its two orders an hour and two before that.
        self.accounts = [{"id": n, "name": f"Account {n}", "updated_at": stamp(now - timedelta(days=10 - n))}
                         for n in range(1, 6)]
        self.orders: dict[int, list[dict]] = {
            n: [{"id": 100 * n + k, "status": "paid", "total": 10.5 * k,
                 "updated_at": stamp(now - timedelta(days=10 - n, hours=3 - k))} for k in (1, 2)]
            for n in range(1, 6)
        }
        api.route("GET", "/accounts", lambda r: self.answer(r, self.accounts))
        api.route("GET", "/accounts/{id}/orders",
                  lambda r: self.answer(r, self.orders.get(int(r.path_params["id"]), [])))

    def answer(self, request: Any, items: list[dict]) -> Any:
        if request.headers.get("Authorization") != f"Bearer {API_KEY}":
            return Reply(401, {"error": "missing or wrong bearer token"})
        kept = sorted(dated(items, request, "updated_at", "updated_since", "updated_until"),
                      key=lambda item: item["updated_at"])
        return paged(kept, request, style="cursor", page_size_param="limit", default_page_size=PAGE,
                     max_page_size=PAGE)

    def update_account(self, account: int, when: datetime) -> None:
        for item in self.accounts:
            if item["id"] == account:
                item["updated_at"] = stamp(when)


def stamp(moment: datetime) -> str:
    return moment.strftime(FORMAT)


def run(tmp_path: Path, manifest: str, config: dict, state: Any = None) -> list[dict]:
    """Run ``run-manifest --protocol`` in-process; the messages it printed."""
    manifest_path = tmp_path / "shop.yaml"
    manifest_path.write_text(manifest, encoding="utf-8")
    config_path = tmp_path / "config.json"
    config_path.write_text(json.dumps(config), encoding="utf-8")
    argv = [str(manifest_path), "--config", str(config_path), "--protocol"]
    if state is not None:
        state_path = tmp_path / "state.json"
        state_path.write_text(json.dumps(state), encoding="utf-8")
        argv += ["--state", str(state_path)]
    out = io.BytesIO()
    code = main(argv, out=out)
    messages = [json.loads(line) for line in out.getvalue().splitlines() if line.strip()]
    assert code == 0, [m for m in messages if m["type"] in ("TRACE", "LOG")]
    return messages


def records(messages: list[dict], stream: str) -> list[dict]:
    return [m["record"]["data"] for m in messages if m["type"] == "RECORD" and m["record"]["stream"] == stream]


def last_state(messages: list[dict], stream: str) -> dict:
    states = [m["state"]["stream"]["stream_state"] for m in messages
              if m["type"] == "STATE" and m["state"]["stream"]["stream_descriptor"]["name"] == stream]
    assert states, f"no STATE message for {stream}"
    return states[-1]


def state_file(messages: list[dict]) -> list[dict]:
    """What the guide's one-liner saves: every STATE message of the run."""
    return [m for m in messages if m["type"] == "STATE"]


@pytest.fixture
def shop(fake_api):
    return Shop(fake_api, datetime.now(timezone.utc).replace(microsecond=0))


def config_of(shop: Shop, start_date: str = "2000-01-01") -> dict:
    return {"base_url": shop.api.url, "api_key": API_KEY, "start_date": start_date}


def test_first_stream_reads_the_first_page_with_the_token(shop, tmp_path):
    messages = run(tmp_path, MANIFESTS[0], config_of(shop))
    assert [r["id"] for r in records(messages, "accounts")] == [1, 2]  # one page, as the guide says
    sent = shop.api.received("/accounts")
    assert len(sent) == 1 and sent[0].param("cursor") is None
    assert API_KEY not in json.dumps(messages)


def test_incremental_stream_reads_every_page_and_resumes_from_its_state(shop, tmp_path):
    before = {stamp(datetime.combine(datetime.now(timezone.utc).date() - timedelta(days=365), datetime.min.time()))}
    messages = run(tmp_path, MANIFESTS[1], config_of(shop))
    before.add(stamp(datetime.combine(datetime.now(timezone.utc).date() - timedelta(days=365),
                                      datetime.min.time())))
    assert sorted(r["id"] for r in records(messages, "accounts")) == [1, 2, 3, 4, 5]  # windows side by side
    sent = shop.api.received("/accounts")
    # MinMaxDatetime: a start_date of 2000 starts a year ago; windows of 30 days; pages of `limit`.
    assert min(r.param("updated_since") for r in sent) in before  # the first window, whichever went first
    assert all(r.param("limit") == "100" for r in sent)
    assert any(r.param("cursor") for r in sent)
    assert last_state(messages, "accounts") == {"updated_at": shop.accounts[-1]["updated_at"]}

    shop.api.requests.clear()
    shop.accounts.append({"id": 6, "name": "Account 6", "updated_at": stamp(shop.now - timedelta(hours=1))})
    again = run(tmp_path, MANIFESTS[1], config_of(shop), state=state_file(messages))
    # From the saved instant on, inclusive: the last account again and the new one.
    assert sorted(r["id"] for r in records(again, "accounts")) == [5, 6]
    assert last_state(again, "accounts") == {"updated_at": shop.accounts[-1]["updated_at"]}


def test_substreams_read_orders_per_account_and_only_changed_accounts_next_time(shop, tmp_path):
    messages = run(tmp_path, MANIFESTS[2], config_of(shop))
    assert sorted(r["id"] for r in records(messages, "accounts")) == [1, 2, 3, 4, 5]  # windows side by side
    orders = records(messages, "orders")
    assert sorted((o["account_id"], o["id"]) for o in orders) == \
        sorted((n, o["id"]) for n, items in shop.orders.items() for o in items)
    state = last_state(messages, "orders")
    assert len(state["states"]) == 5
    assert {s["partition"]["account_id"] for s in state["states"]} == {1, 2, 3, 4, 5}
    assert state["parent_state"] == {"accounts": {"updated_at": shop.accounts[-1]["updated_at"]}}

    # A new order of account 2; the shop moves the account's updated_at with it.
    shop.api.requests.clear()
    new_order = {"id": 299, "status": "paid", "total": 99.0, "updated_at": stamp(shop.now - timedelta(minutes=30))}
    shop.orders[2].append(new_order)
    shop.update_account(2, shop.now - timedelta(minutes=30))
    again = run(tmp_path, MANIFESTS[2], config_of(shop), state=state_file(messages))
    read = records(again, "orders")
    assert 299 in [o["id"] for o in read]
    # Only account 2 (changed) and account 5 (at the parent's saved instant, read again) make partitions.
    asked = {r.path for r in shop.api.received() if r.path.endswith("/orders")}
    assert asked == {"/accounts/2/orders", "/accounts/5/orders"}
    assert {o["account_id"] for o in read} <= {2, 5}
