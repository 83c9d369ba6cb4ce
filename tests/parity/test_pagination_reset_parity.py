"""Parity with airbyte-cdk 7.39.1 for pagination restarts (HttpResponseFilter's RESET_PAGINATION and
the retriever's `pagination_reset`), over two syncs, and for page size reductions (REDUCE_PAGE_SIZE and
`page_size_reduction`) and window splits (SPLIT_REQUEST_WINDOW and `request_window_splitting`).

manifests/pagination_reset.yaml: `events` restarts once when the API answers 409 (no
`pagination_reset`); `orders` restarts after every 6 records with SPLIT_USING_CURSOR, its window then
starting at the latest cursor value read; `heavy` (offsets) and `heavy_graphql` (a cursor, the page size
in a JSON body) get a 502/504 for pages of more than 3 records, answered by REDUCE_PAGE_SIZE;
`split_orders` gets a 413 for windows longer than two days, answered by SPLIT_REQUEST_WINDOW. Both runners read it against the same fake API (whose
one-time 409 is re-armed for each runner); the records (duplicates included: a restart sends again
what the restarted pages hold), the requests in order per path, and the state must be the same.
Skipped without AIRBYTE_CDK_PYTHON (see README.md).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from fakes.api_server import FakeApi, RecordedRequest, Reply, dated
from parity.test_airbyte_parity import (  # noqa: F401  (pytestmark: skipped without the CDK)
    MANIFESTS,
    Both,
    assert_same_records,
    catalog_for,
    pytestmark,
    run_cdk,
    run_ours,
)

EVENTS = [{"id": i, "kind": ("a", "b")[i % 2]} for i in range(1, 12)]
ORDERS = [{"id": i, "updated_at": f"2024-01-{1 + i // 3:02d}T{i % 3:02d}:00:00Z"} for i in range(1, 13)]


@pytest.fixture
def api() -> Iterator[FakeApi]:
    with FakeApi() as server:
        yield server


class Api:
    def __init__(self, orders: list[dict]):
        self.orders = orders
        self.expired = False

    def events(self, request: RecordedRequest) -> dict | Reply:
        offset = int(request.param("offset") or 0)
        if offset == 6 and not self.expired:
            self.expired = True
            return Reply(409, {"error": "snapshot expired, start again"})
        return {"data": EVENTS[offset: offset + int(request.param("limit") or 3)]}

    @staticmethod
    def heavy(request: RecordedRequest) -> dict | Reply:
        limit, offset = int(request.param("limit") or 8), int(request.param("offset") or 0)
        if limit > 3:
            return Reply(502, {"error": "page too heavy"})
        return {"data": EVENTS[offset: offset + limit]}

    @staticmethod
    def heavy_graphql(request: RecordedRequest) -> dict | Reply:
        variables = request.json()["variables"]
        if variables["first"] > 3:
            return Reply(504, {"error": "query too expensive"})
        start = int(variables.get("after") or 0)
        end = start + variables["first"]
        return {"data": EVENTS[start:end], "next": str(end) if end < len(EVENTS) else None}

    def split_orders(self, request: RecordedRequest) -> dict | Reply:
        since = datetime.strptime(request.param("since") or "", "%Y-%m-%dT%H:%M:%SZ")
        until = datetime.strptime(request.param("until") or "", "%Y-%m-%dT%H:%M:%SZ")
        if until - since > timedelta(days=2):
            return Reply(413, {"error": "window too large"})
        return {"data": sorted(dated(self.orders, request, "updated_at", "since", "until"),
                               key=lambda o: o["updated_at"])}

    def orders_page(self, request: RecordedRequest) -> dict:
        kept = sorted(dated(self.orders, request, "updated_at", "since", "until"), key=lambda o: o["updated_at"])
        offset = int(request.param("offset") or 0)
        return {"data": kept[offset: offset + int(request.param("limit") or 3)]}


def requests_by_path(api: FakeApi) -> dict[str, list[tuple]]:
    """Per path, the requests in order: query parameters, and the JSON body's variables."""
    out: dict[str, list[tuple]] = {}
    for r in api.received():
        query = tuple(sorted((k, v) for k, vs in r.query.items() for v in vs))
        body = tuple(sorted(r.json()["variables"].items())) if r.body else ()
        out.setdefault(r.path, []).append(query + body)
    return out


def run_both(api: FakeApi, endpoints: Api, folder: Path, config: dict, catalog: dict,
             states: tuple[list | None, list | None] = (None, None)) -> tuple[Both, dict, dict]:
    manifest = MANIFESTS / "pagination_reset.yaml"
    api.requests.clear()
    endpoints.expired = False
    ours = run_ours(folder, manifest, config, catalog, states[0])
    ours_requests = requests_by_path(api)
    api.requests.clear()
    endpoints.expired = False
    cdk = run_cdk(folder, manifest, config, catalog, states[1])
    cdk_requests = requests_by_path(api)
    cdk.check("source-declarative-manifest")
    ours.check("run-manifest --protocol")
    return Both(ours, cdk, set(), set()), ours_requests, cdk_requests


def test_pagination_reset_over_two_syncs(api: FakeApi, tmp_path: Path) -> None:
    endpoints = Api(ORDERS)
    api.route("GET", "/events", endpoints.events)
    api.route("GET", "/orders", endpoints.orders_page)
    api.route("GET", "/heavy", endpoints.heavy)
    api.route("POST", "/graphql", endpoints.heavy_graphql)
    api.route("GET", "/split_orders", endpoints.split_orders)
    config = {"base_url": api.url, "start_date": "2024-01-01T00:00:00Z", "end_date": "2024-01-06T00:00:00Z"}
    catalog = catalog_for({"events": "full_refresh", "orders": "incremental", "heavy": "full_refresh",
                           "heavy_graphql": "full_refresh", "split_orders": "incremental"})

    first, ours, cdk = run_both(api, endpoints, tmp_path, config, catalog)
    assert ours == cdk, "the requests differ"
    assert len(cdk["/events"]) == 7  # 0, 3, 6 (409), then 0, 3, 6, 9 again
    assert_same_records(first, "events")
    assert len(first.cdk.records["events"]) == len(EVENTS) + 6
    assert_same_records(first, "orders")
    assert len(first.cdk.records["orders"]) > len(ORDERS)  # the record at each restart's start comes twice
    assert first.ours.stream_state("orders") == first.cdk.stream_state("orders")
    for stream in ("heavy", "heavy_graphql"):
        assert_same_records(first, stream)
        assert [r["id"] for r in first.cdk.records[stream]] == [e["id"] for e in EVENTS]
    assert [q for q in cdk["/heavy"]][:3] == [(("limit", "8"),), (("limit", "4"),), (("limit", "2"),)]
    assert_same_records(first, "split_orders")
    assert len(first.cdk.records["split_orders"]) == len(ORDERS) and len(cdk["/split_orders"]) > 3
    assert first.ours.stream_state("split_orders") == first.cdk.stream_state("split_orders")

    endpoints.orders = ORDERS + [{"id": 13, "updated_at": "2024-01-05T12:00:00Z"}]
    second, ours, cdk = run_both(api, endpoints, tmp_path, config, catalog,
                                 (first.ours.state_input(), first.cdk.state_input()))
    assert ours == cdk, "the requests of the second sync differ"
    assert_same_records(second, "orders")
    assert 13 in {r["id"] for r in second.cdk.records["orders"]}
    assert second.ours.stream_state("orders") == second.cdk.stream_state("orders")
    assert_same_records(second, "split_orders")
    assert second.ours.stream_state("split_orders") == second.cdk.stream_state("split_orders")
