"""manifests/hacker_news.yaml against answers shaped like the HN Search API (Algolia).

``GET /search_by_date?tags=story&numericFilters=created_at_i>=A,created_at_i<=B&page=N&hitsPerPage=H``
answers ``{"hits", "nbHits", "page", "nbPages", "hitsPerPage", ...}``, newest
first, pages numbered from 0.
"""

from __future__ import annotations

import math
import re
import time
from typing import Any

import pytest
from fakes.api_server import ApiError, FakeApi, RecordedRequest
from manifests.harness import assert_clean, run_connector

HOUR = 3_600
NOW = int(time.time()) // HOUR * HOUR  # windows fall on whole hours from a whole-hour start
START = NOW - 3 * HOUR
FILTER = re.compile(r"^created_at_i>=(\d+),created_at_i<=(\d+)$")


def iso(epoch: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(epoch))


def story(ident: int, created: int) -> dict[str, Any]:
    return {"_highlightResult": {"author": {"matchLevel": "none", "matchedWords": [], "value": "pg"}},
            "_tags": ["story", "author_pg", f"story_{ident}"], "author": "pg", "children": [ident + 1],
            "created_at": iso(created), "created_at_i": created, "num_comments": 1, "objectID": str(ident),
            "points": 42, "story_id": ident, "title": f"Show HN: thing {ident}", "updated_at": iso(created),
            "url": f"https://example.com/{ident}"}


def comment(ident: int, created: int) -> dict[str, Any]:
    return {"_tags": ["comment", "author_dang", f"story_{ident - 1}"], "author": "dang",
            "comment_text": "Nice work.", "created_at": iso(created), "created_at_i": created,
            "objectID": str(ident), "parent_id": ident - 1, "story_id": ident - 1,
            "story_title": f"Show HN: thing {ident - 1}", "story_url": None, "updated_at": iso(created)}


class Algolia:
    def __init__(self, api: FakeApi):
        self.items: dict[str, list[dict[str, Any]]] = {"story": [], "comment": []}
        api.route("GET", "/search_by_date", self.search)

    def search(self, request: RecordedRequest) -> dict[str, Any]:
        tag = request.param("tags")
        bounds = FILTER.match(request.param("numericFilters", ""))
        if tag not in self.items or bounds is None:
            raise ApiError(400, "Invalid tags or numericFilters")
        low, high = int(bounds.group(1)), int(bounds.group(2))
        hits = sorted((i for i in self.items[tag] if low <= i["created_at_i"] <= high),
                      key=lambda i: i["created_at_i"], reverse=True)
        size, page = int(request.param("hitsPerPage", "20")), int(request.param("page", "0"))
        return {"hits": hits[page * size:(page + 1) * size], "nbHits": len(hits), "page": page,
                "nbPages": math.ceil(len(hits) / size), "hitsPerPage": size, "exhaustiveNbHits": True,
                "query": request.param("query", ""), "params": request.target.partition("?")[2],
                "processingTimeMS": 1}


@pytest.fixture
def algolia(fake_api):
    search = Algolia(fake_api)
    search.items["story"] = [story(1_000 + 2 * n, START + 10 + n * 30) for n in range(250)]  # ~2.1 hours
    search.items["comment"] = [comment(1_001 + 2 * n, START + 20 + n * 40) for n in range(3)]
    return search


def config(api: FakeApi, **more: Any) -> dict[str, Any]:
    return {"start_date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(START)), "base_url": api.url, **more}


def test_stories_are_read_hour_by_hour_and_page_by_page(algolia, fake_api, tmp_path):
    sync = run_connector("hacker_news", config(fake_api), tmp_path, streams=["stories"])
    assert_clean(sync, "stories")
    assert sorted(s["objectID"] for s in sync.records("stories")) == sorted(s["objectID"] for s in algolia.items["story"])
    calls = fake_api.received("/search_by_date")
    windows = sorted({FILTER.match(c.param("numericFilters")).groups() for c in calls})
    assert windows[:3] == [(str(START + h * HOUR), str(START + (h + 1) * HOUR - 1)) for h in range(3)]
    first_hour = [c.param("page") for c in calls if c.param("numericFilters").startswith(f"created_at_i>={START},")]
    assert first_hour == [None, "1"]  # 120 stories that hour: pages 0 and 1 of 100, none beyond
    assert {c.param("tags") for c in calls} == {"story"} and {c.param("hitsPerPage") for c in calls} == {"100"}
    assert sync.state_of("stories") == {"created_at_i": str(START + 10 + 249 * 30)}


def test_the_next_sync_asks_only_for_the_time_since_the_last_item(algolia, fake_api, tmp_path):
    first = run_connector("hacker_news", config(fake_api), tmp_path, streams=["comments"], label="first")
    assert_clean(first, "comments")
    assert [c["objectID"] for c in first.records("comments")] == ["1005", "1003", "1001"]  # newest first
    last = START + 20 + 2 * 40
    assert first.state_of("comments") == {"created_at_i": str(last)}
    fake_api.requests.clear()
    second = run_connector("hacker_news", config(fake_api, query="rust"), tmp_path, streams=["comments"],
                           state=first.states(), label="second")
    assert_clean(second, "comments")
    lows = sorted(int(FILTER.match(c.param("numericFilters")).group(1)) for c in fake_api.requests)
    assert lows[0] == last and all(c.param("query") == "rust" for c in fake_api.requests)


def test_the_stream_schemas_hold_the_shared_and_their_own_fields(tmp_path, fake_api):
    sync = run_connector("hacker_news", config(fake_api), tmp_path, mode="--discover")
    schemas = {s["name"]: s["json_schema"]["properties"] for s in sync.messages[0]["catalog"]["streams"]}
    assert {"objectID", "created_at_i", "title", "points"} <= set(schemas["stories"])
    assert {"objectID", "created_at_i", "comment_text", "parent_id"} <= set(schemas["comments"])
    assert "title" not in schemas["comments"]
