"""``api_budget`` end to end in protocol mode: a manifest read against the fake API with a rate limit.

The fake API counts requests per window of its clock (windows aligned on the epoch) and answers 429
above its limit, saying ``ratelimit-remaining`` and ``ratelimit-reset`` on every answer. Real time:
each test takes a few seconds.
"""

from __future__ import annotations

import io
from typing import Any

import orjson
import pytest
import yaml
from fakes.api_server import paged

from framework.engine.connector import open_connector
from framework.engine.selection import select_streams
from framework.protocol.read import read

REGIONS = ["north", "south", "east", "west"]
ITEMS = {region: [{"id": i, "region": region} for i in range(14)] for region in REGIONS}  # 3 pages of 5


def manifest(policy: dict, **budget: Any) -> dict:
    return {
        "version": "7.0.0", "type": "DeclarativeSource",
        "api_budget": {"type": "HTTPAPIBudget", "policies": [policy], **budget},
        "check": {"type": "CheckStream", "stream_names": ["items"]},
        "streams": [{
            "type": "DeclarativeStream", "name": "items", "primary_key": ["region", "id"],
            "schema_loader": {"type": "InlineSchemaLoader", "schema": {"type": "object"}},
            "retriever": {
                "type": "SimpleRetriever",
                "requester": {"type": "HttpRequester", "url_base": "{{ config.base_url }}", "path": "/items"},
                "record_selector": {"type": "RecordSelector",
                                    "extractor": {"type": "DpathExtractor", "field_path": ["data"]}},
                "partition_router": {"type": "ListPartitionRouter", "values": REGIONS, "cursor_field": "region",
                                     "request_option": {"type": "RequestOption", "inject_into": "request_parameter",
                                                        "field_name": "region"}},
                "paginator": {"type": "DefaultPaginator",
                              "pagination_strategy": {"type": "PageIncrement", "start_from_page": 1, "page_size": 5},
                              "page_size_option": {"type": "RequestOption", "inject_into": "request_parameter",
                                                   "field_name": "per_page"},
                              "page_token_option": {"type": "RequestOption", "inject_into": "request_parameter",
                                                    "field_name": "page"}},
            },
        }],
    }


@pytest.fixture
def sync(write_manifest, fake_api):
    fake_api.route("GET", "/items", lambda r: paged(ITEMS[r.param("region") or ""], r))

    def run(data: dict) -> list[dict]:
        path = write_manifest(yaml.safe_dump(data, sort_keys=False))
        connector = open_connector(path, {"base_url": fake_api.url})
        out = io.BytesIO()
        report = read(connector, select_streams(connector.streams, None), {}, out, io.StringIO(), concurrency=4)
        assert not report.failed
        return [m["record"]["data"] for m in map(orjson.loads, out.getvalue().splitlines()) if m["type"] == "RECORD"]

    return run


def test_four_threads_within_the_budget_get_no_429(sync, fake_api):
    # The API counts requests by when they arrive, the budget by when they leave: one request of headroom, so a
    # request that a busy machine delays past the API's window edge does not make the test flaky.
    counter = fake_api.limit(6, 1.0, headers=True)
    records = sync(manifest({"type": "MovingWindowCallRatePolicy", "rates": [{"limit": 5, "interval": "PT1S"}],
                             "matchers": [{"method": "GET", "url_path_pattern": "^/items$"}]}))
    assert sorted((r["region"], r["id"]) for r in records) == sorted((r, i) for r in REGIONS for i in range(14))
    assert counter.refused == 0
    assert max(counter.counted.values()) <= 6
    assert len(fake_api.requests) == 12  # 3 pages per region


def test_a_429_spends_the_window_and_the_retry_waits_for_the_apis_reset(sync, fake_api):
    """The API allows less than the budget: its 429 (with the reset time) stops every thread until the
    API's next window, so there is one 429 per window at most."""
    counter = fake_api.limit(4, 1.0, headers=True)
    records = sync(manifest({"type": "FixedWindowCallRatePolicy", "period": "PT1S", "call_limit": 50,
                             "matchers": []}))
    assert len(records) == 4 * 14
    # one 429 per window, plus the other threads' requests already in flight when the first 429 came (3)
    assert counter.refused <= len(counter.counted) + 3
    assert max(counter.counted.values()) <= 4 + 4  # the threads' requests in flight when the 429 came


def test_an_unlimited_policy_first_lets_its_requests_through(sync, fake_api):
    counter = fake_api.limit(100, 60.0)
    records = sync(manifest({"type": "UnlimitedCallRatePolicy", "matchers": [{"url_path_pattern": "items"}]}))
    assert len(records) == 4 * 14 and counter.refused == 0
