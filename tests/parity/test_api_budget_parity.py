"""Parity with airbyte-cdk 7.39.1 for a budgeted stream (``api_budget``), over two syncs.

manifests/api_budget.yaml is scenario (c)'s incremental `orders` stream (one-day windows, pages of 3)
under a MovingWindowCallRatePolicy of 4 requests a second on /orders (its limit read from the config).
The fake API allows 4 requests per second of its clock on /orders and answers 429 above that. Both
runners must give the same records and state; ours must draw no 429, and both must have been held to
the budget (the requests spread over more than a second, where unbudgeted they take milliseconds).
Skipped without AIRBYTE_CDK_PYTHON (see README.md).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fakes.api_server import FakeApi, RateLimit, RecordedRequest
from parity.test_airbyte_parity import (  # noqa: F401  (pytestmark: skipped without the CDK)
    FIRST_ORDERS,
    MANIFESTS,
    SECOND_ORDERS,
    Both,
    Orders,
    _day,
    assert_same_coverage,
    assert_same_records,
    catalog_for,
    distinct_requests,
    pytestmark,
    run_cdk,
    run_ours,
)

CALLS = 4


@pytest.fixture
def api() -> Iterator[FakeApi]:
    with FakeApi() as server:
        yield server


def spread(requests: list[RecordedRequest]) -> float:
    return max(r.received_at for r in requests) - min(r.received_at for r in requests)


def run_both(api: FakeApi, folder: Path, config: dict, catalog: dict, states: tuple[list | None, list | None]
             = (None, None)) -> tuple[Both, RateLimit, RateLimit]:
    manifest = MANIFESTS / "api_budget.yaml"
    found = []
    outputs = []
    for runner, state in ((run_ours, states[0]), (run_cdk, states[1])):
        api.requests.clear()
        counter = api.limit(CALLS, 1.0, path="/orders")
        outputs.append((runner(folder, manifest, config, catalog, state), distinct_requests(api)))
        requests = api.received("/orders")
        if len(requests) > CALLS:  # the first sync (the second reads one day: 2 requests)
            assert spread(requests) > 1.0, "the budget did not hold the requests back"
        found.append(counter)
    (ours, ours_requests), (cdk, cdk_requests) = outputs
    cdk.check("source-declarative-manifest")
    ours.check("run-manifest --protocol")
    return Both(ours, cdk, ours_requests, cdk_requests), found[0], found[1]


def test_a_budgeted_stream_over_two_syncs(api: FakeApi, tmp_path: Path) -> None:
    orders = Orders(FIRST_ORDERS)
    api.route("GET", "/orders", orders)
    config = {"base_url": api.url, "start_date": "2024-01-01T00:00:00Z", "end_date": "2024-01-05T00:00:00Z",
              "calls_per_second": CALLS}
    catalog = catalog_for({"orders": "incremental"})

    first, ours, cdk = run_both(api, tmp_path, config, catalog)
    assert ours.refused == 0 and sum(ours.counted.values()) > CALLS
    assert ours.refused == 0, f"our sync drew 429 answers: {ours.counted}"
    assert len(first.cdk.records["orders"]) == len(FIRST_ORDERS)
    assert_same_records(first, "orders", partition_of=_day)
    assert first.ours.stream_state("orders") == first.cdk.stream_state("orders") == {"updated_at":
                                                                                       "2024-01-04T10:00:00Z"}
    assert_same_coverage(first, "updated_since", "updated_until")

    orders.orders = SECOND_ORDERS
    second, ours, cdk = run_both(api, tmp_path, config, catalog, (first.ours.state_input(), first.cdk.state_input()))
    assert ours.refused == 0, f"our sync drew 429 answers: {ours.counted}"
    assert_same_records(second, "orders", partition_of=_day)
    assert second.ours.stream_state("orders") == second.cdk.stream_state("orders") == {"updated_at":
                                                                                         "2024-01-05T00:00:00Z"}
    assert_same_coverage(second, "updated_since", "updated_until")
