"""manifests/pokeapi.yaml against answers shaped like PokeAPI's named-resource lists.

``GET /pokemon?limit=L&offset=K`` answers ``{"count", "next", "previous",
"results": [{"name", "url"}]}``; an offset past the end gives empty results.
"""

from __future__ import annotations

from typing import Any

import pytest
from fakes.api_server import FakeApi, RecordedRequest
from manifests.harness import assert_clean, run_connector

ROOT = "https://pokeapi.co/api/v2"


def resources(kind: str, count: int) -> list[dict[str, Any]]:
    return [{"name": f"{kind}-{n}", "url": f"{ROOT}/{kind}/{n}/"} for n in range(1, count + 1)]


def serve(api: FakeApi, kind: str, items: list[dict[str, Any]]) -> None:
    def answer(request: RecordedRequest) -> dict[str, Any]:
        limit, offset = int(request.param("limit", "20")), int(request.param("offset", "0"))
        following = f"{ROOT}/{kind}?offset={offset + limit}&limit={limit}" if offset + limit < len(items) else None
        previous = f"{ROOT}/{kind}?offset={max(0, offset - limit)}&limit={limit}" if offset else None
        return {"count": len(items), "next": following, "previous": previous,
                "results": items[offset:offset + limit]}

    api.route("GET", f"/{kind}", answer)


@pytest.fixture
def api(fake_api):
    serve(fake_api, "pokemon", resources("pokemon", 251))
    serve(fake_api, "ability", resources("ability", 200))
    serve(fake_api, "type", resources("type", 21))
    return fake_api


def test_lists_are_read_by_offset_until_a_short_page(api, tmp_path):
    sync = run_connector("pokeapi", {"base_url": api.url}, tmp_path)
    assert_clean(sync, "pokemon", "abilities", "types")
    assert [p["name"] for p in sync.records("pokemon")] == [f"pokemon-{n}" for n in range(1, 252)]
    assert [r.param("offset") for r in api.received("/pokemon")] == [None, "100", "200"]  # no offset at first
    assert {r.param("limit") for r in api.requests} == {"100"}
    # 200 abilities end on a full page: the empty page after it ends the list.
    assert [r.param("offset") for r in api.received("/ability")] == [None, "100", "200"]
    assert len(sync.records("abilities")) == 200 and len(sync.records("types")) == 21


def test_the_page_size_comes_from_the_config(api, tmp_path):
    sync = run_connector("pokeapi", {"base_url": api.url, "page_size": 50}, tmp_path, streams=["types"])
    assert_clean(sync, "types")
    assert [(r.param("offset"), r.param("limit")) for r in api.received("/type")] == [(None, "50")]
