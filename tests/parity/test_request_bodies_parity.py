"""Parity with airbyte-cdk 7.39.1 for `request_body`: the bodies the API receives, and what is read.

One manifest (manifests/request_bodies.yaml), four streams, each with one kind of body:
a JSON object (incremental: the window and the page token go into the body; two syncs), a
URL-encoded form (the page number goes into the form), plain text, and a GraphQL query whose
variables carry the page cursor. Both runners read it against the same fake API, which records
every request; the bodies (parsed: JSON, form fields, or text) and their Content-Type must be
the same, as must the records and the state. Skipped without AIRBYTE_CDK_PYTHON (see README.md).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from fakes.api_server import ApiError, FakeApi, RecordedRequest
from parity.test_airbyte_parity import (  # noqa: F401  (pytestmark: skipped without the CDK)
    MANIFESTS,
    Both,
    assert_same_records,
    catalog_for,
    pytestmark,
    run_cdk,
    run_ours,
)


@pytest.fixture
def api() -> Iterator[FakeApi]:
    with FakeApi() as server:
        yield server


ORDERS = [{"id": i, "region": "eu", "updated_at": f"2024-01-0{1 + i % 4}T{i:02d}:00:00Z", "total": i * 1.5}
          for i in range(1, 11)]
ITEMS = [{"id": i, "name": f"item {i}", "price": i * 2} for i in range(1, 11)]
STREAMS = ("json_orders", "form_items", "text_items", "graphql_items")


class Api:
    """The four endpoints; ``orders`` may change between syncs."""

    def __init__(self, orders: list[dict]):
        self.orders = orders

    def json_orders(self, request: RecordedRequest) -> dict:
        body = request.json()
        since, until = body["filter"]["since"], body["filter"]["until"]
        kept = sorted((o for o in self.orders if since <= o["updated_at"] <= until), key=lambda o: o["updated_at"])
        start = int(body.get("page", {}).get("cursor", 0))
        page = kept[start: start + body["limit"]]
        end = start + len(page)
        return {"data": page, "next": end if end < len(kept) else None}

    @staticmethod
    def form_items(request: RecordedRequest) -> dict:
        form = request.form()
        if form.get("region") != "eu":
            raise ApiError(400, f"region missing from the form: {form}")
        page, size = int(form.get("page", 1)), int(form["size"])
        return {"data": ITEMS[(page - 1) * size: page * size]}

    @staticmethod
    def text_items(request: RecordedRequest) -> dict:
        if b"region = 'eu'" not in request.body:
            raise ApiError(400, "the query text lost its region")
        return {"data": ITEMS[:3]}

    @staticmethod
    def graphql(request: RecordedRequest) -> dict:
        body = request.json()
        after = body["variables"].get("after")
        start = int(str(after).removeprefix("c")) if after else 0
        nodes = ITEMS[start: start + body["variables"]["first"]]
        end = start + len(nodes)
        return {"data": {"items": {"nodes": nodes, "pageInfo": {"hasNextPage": end < len(ITEMS),
                                                                "endCursor": f"c{end}"}}}}


def serve(api: FakeApi, orders: list[dict]) -> Api:
    endpoints = Api(orders)
    api.route("POST", "/json/orders", endpoints.json_orders)
    api.route("POST", "/form/items", endpoints.form_items)
    api.route("POST", "/text/items", endpoints.text_items)
    api.route("POST", "/graphql", endpoints.graphql)
    return endpoints


def bodies(api: FakeApi) -> list[tuple[str, str, str]]:
    """Every request as ``(path, content type, body)``, the body parsed and written canonically, sorted."""
    out = []
    for request in api.received():
        kind = (request.headers.get("Content-Type") or "").split(";")[0]
        parsed: Any
        if kind == "application/json":
            parsed = request.json()
        elif kind == "application/x-www-form-urlencoded":
            parsed = request.form()
        else:
            parsed = request.body.decode()
        out.append((request.path, kind, orjson.dumps(parsed, option=orjson.OPT_SORT_KEYS).decode()))
    return sorted(out)


def run_and_record(api: FakeApi, folder: Path, config: dict, catalog: dict,
                   states: tuple[list | None, list | None] = (None, None)) -> tuple[Both, list, list]:
    """Both runners, one after the other, with the bodies each sent."""
    manifest = MANIFESTS / "request_bodies.yaml"
    api.requests.clear()
    ours = run_ours(folder, manifest, config, catalog, states[0])
    ours_bodies = bodies(api)
    api.requests.clear()
    cdk = run_cdk(folder, manifest, config, catalog, states[1])
    cdk_bodies = bodies(api)
    cdk.check("source-declarative-manifest")
    ours.check("run-manifest --protocol")
    return Both(ours, cdk, set(), set()), ours_bodies, cdk_bodies


def test_request_bodies_over_two_syncs(api: FakeApi, tmp_path: Path) -> None:
    endpoints = serve(api, ORDERS)
    config = {"base_url": api.url, "region": "eu", "start_date": "2024-01-01T00:00:00Z",
              "end_date": "2024-01-05T00:00:00Z"}
    catalog = catalog_for({"json_orders": "incremental", "form_items": "full_refresh",
                           "text_items": "full_refresh", "graphql_items": "full_refresh"})

    first, ours, cdk = run_and_record(api, tmp_path, config, catalog)
    assert ours == cdk, "the request bodies differ"
    assert {path for path, _, _ in cdk} == {"/json/orders", "/form/items", "/text/items", "/graphql"}
    for stream in STREAMS:
        assert_same_records(first, stream)
    assert len(first.cdk.records["json_orders"]) == len(ORDERS)
    assert first.ours.stream_state("json_orders") == first.cdk.stream_state("json_orders")

    endpoints.orders = ORDERS + [{"id": 11, "region": "eu", "updated_at": "2024-01-04T20:00:00Z", "total": 3.0}]
    second, ours, cdk = run_and_record(api, tmp_path, config, catalog,
                                       (first.ours.state_input(), first.cdk.state_input()))
    assert ours == cdk, "the request bodies of the second sync differ"
    assert_same_records(second, "json_orders")
    assert 11 in {r["id"] for r in second.cdk.records["json_orders"]}
    assert second.ours.stream_state("json_orders") == second.cdk.stream_state("json_orders")

