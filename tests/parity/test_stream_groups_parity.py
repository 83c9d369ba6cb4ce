"""Parity with Airbyte for ``stream_groups`` and a StateDelegatingStream parent: scenario (m), ``stream_groups.yaml``.

* ``orders`` and ``refunds`` (a child of ``accounts``) share the group ``reports``; every answer
  is slow and the manifest asks for 4 concurrent reads: both runners give the same records, and
  in both request logs the two members (``accounts`` counted as ``refunds``, which reads it) never
  have requests in flight at the same time.
* ``tickets`` reads its parent ``customers`` (a StateDelegatingStream) through
  ``incremental_dependency``: the first sync reads the full listing ``/customers``, the second,
  from each runner's own state, the events ``/customer_events`` from the parent's saved cursor.

Needs a python with airbyte-cdk (``AIRBYTE_CDK_PYTHON``); skipped otherwise.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes.api_server import FakeApi, RecordedRequest, dated
from parity.test_airbyte_parity import (
    ENABLE,
    MANIFESTS,
    _cdk_available,
    assert_same_records,
    catalog_for,
    run_both,
    run_cdk,
    run_ours,
)

pytestmark = [
    pytest.mark.parity,
    pytest.mark.skipif(not _cdk_available(),
                       reason=f"parity with airbyte-cdk needs AIRBYTE_CDK_PYTHON set to a python with airbyte-cdk: "
                              f"{ENABLE}"),
]

DELAY = 0.2
CUSTOMERS = [{"id": 1, "updated_at": "2024-01-02T00:00:00Z"}, {"id": 2, "updated_at": "2024-01-05T00:00:00Z"}]
EVENTS = [{"id": 2, "updated_at": "2024-01-09T00:00:00Z"}, {"id": 3, "updated_at": "2024-01-10T00:00:00Z"}]
TICKETS = {1: [{"id": 11, "updated_at": "2024-01-03T00:00:00Z"}],
           2: [{"id": 21, "updated_at": "2024-01-06T00:00:00Z"}],
           3: [{"id": 31, "updated_at": "2024-01-10T00:00:00Z"}]}


@pytest.fixture
def api() -> Iterator[FakeApi]:
    def slow(body: Any) -> Any:
        def answer(request: RecordedRequest) -> Any:
            time.sleep(DELAY)
            return body(request)
        return answer

    with FakeApi() as server:
        server.route("GET", "/accounts", slow(lambda r: {"data": [{"id": 1}, {"id": 2}]}))
        server.route("GET", "/orders", slow(lambda r: {"data": [{"id": 1 if r.param("region") == "north" else 2}]}))
        server.route("GET", "/accounts/{account}/refunds",
                     slow(lambda r: {"data": [{"id": 100 + int(r.path_params["account"])}]}))
        server.route("GET", "/customers", lambda r: {"data": dated(CUSTOMERS, r, "updated_at", "since")})
        server.route("GET", "/customer_events", lambda r: {"data": dated(EVENTS, r, "updated_at", "since")})
        server.route("GET", "/customers/{customer}/tickets",
                     lambda r: {"data": dated(TICKETS[int(r.path_params["customer"])], r, "updated_at", "since")})
        yield server


def _config(api: FakeApi) -> dict:
    return {"base_url": api.url, "start_date": "2024-01-01T00:00:00Z", "end_date": "2024-01-31T00:00:00Z"}


def _member(request: RecordedRequest) -> str:
    return "orders" if request.path == "/orders" else "refunds"  # /accounts is read for refunds


def _assert_apart(requests: list[RecordedRequest], who: str) -> None:
    spans: dict[str, list[float]] = {}
    for r in requests:
        span = spans.setdefault(_member(r), [r.received_at, r.answered_at])
        span[0], span[1] = min(span[0], r.received_at), max(span[1], r.answered_at)
    (a0, a1), (b0, b1) = spans["orders"], spans["refunds"]
    assert a1 <= b0 or b1 <= a0, f"{who}: the reads of orders and refunds overlap: {spans}"


def test_members_of_a_group_are_never_read_at_once(api: FakeApi, tmp_path: Path) -> None:
    catalog = catalog_for({"orders": "full_refresh", "refunds": "full_refresh"})
    path = MANIFESTS / "stream_groups.yaml"
    ours = run_ours(tmp_path, path, _config(api), catalog)
    ours_log = list(api.requests)
    api.requests.clear()
    cdk = run_cdk(tmp_path, path, _config(api), catalog)
    cdk_log = list(api.requests)
    cdk.check("source-declarative-manifest")
    ours.check("run-manifest --protocol")
    for stream in ("orders", "refunds"):
        assert sorted(map(str, ours.records[stream])) == sorted(map(str, cdk.records[stream]))
    assert sorted(r["id"] for r in ours.records["refunds"]) == [101, 102]
    assert sorted(r.target for r in ours_log) == sorted(r.target for r in cdk_log)
    _assert_apart(ours_log, "ours")
    _assert_apart(cdk_log, "airbyte-cdk")


def test_a_state_delegating_parent_over_two_syncs(api: FakeApi, tmp_path: Path) -> None:
    catalog = catalog_for({"tickets": "incremental"})
    first = run_both(api, tmp_path, "stream_groups.yaml", _config(api), catalog)
    assert_same_records(first, "tickets", partition_of=lambda r: r["id"] // 10)
    assert {p for _m, p, _q in first.ours_requests if not p.endswith("/tickets")} == \
        {p for _m, p, _q in first.cdk_requests if not p.endswith("/tickets")} == {"/customers"}

    second = run_both(api, tmp_path, "stream_groups.yaml", _config(api), catalog,
                      first.ours.state_input(), first.cdk.state_input())
    parents = {(p, tuple(sorted(q))) for _m, p, q in second.ours_requests if not p.endswith("/tickets")}
    assert parents == {(p, tuple(sorted(q))) for _m, p, q in second.cdk_requests if not p.endswith("/tickets")}
    assert {p for p, _q in parents} == {"/customer_events"}
    assert sorted(map(str, second.ours.records.get("tickets", []))) == \
        sorted(map(str, second.cdk.records.get("tickets", [])))
