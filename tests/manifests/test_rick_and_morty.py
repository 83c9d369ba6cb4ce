"""manifests/rick_and_morty.yaml against answers shaped like the Rick and Morty API's.

Lists answer ``{"info": {"count", "pages", "next", "prev"}, "results"}`` with
20 items a page; ``info.next`` is the next page's URL, null on the last; a page
past the end is ``404 {"error": "There is nothing here"}``.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from fakes.api_server import FakeApi, RecordedRequest, Reply
from manifests.harness import assert_clean, run_connector

PAGE = 20


def character(ident: int) -> dict[str, Any]:
    root = "https://rickandmortyapi.com/api"
    return {"id": ident, "name": "Rick Sanchez" if ident == 1 else f"Character {ident}", "status": "Alive",
            "species": "Human", "type": "", "gender": "Male",
            "origin": {"name": "Earth (C-137)", "url": f"{root}/location/1"},
            "location": {"name": "Citadel of Ricks", "url": f"{root}/location/3"},
            "image": f"{root}/character/avatar/{ident}.jpeg", "episode": [f"{root}/episode/1"],
            "url": f"{root}/character/{ident}", "created": "2017-11-04T18:48:46.250Z"}


def location(ident: int) -> dict[str, Any]:
    return {"id": ident, "name": "Earth (C-137)", "type": "Planet", "dimension": "Dimension C-137",
            "residents": ["https://rickandmortyapi.com/api/character/38"],
            "url": f"https://rickandmortyapi.com/api/location/{ident}", "created": "2017-11-10T12:42:04.162Z"}


def episode(ident: int) -> dict[str, Any]:
    return {"id": ident, "name": "Pilot", "air_date": "December 2, 2013", "episode": f"S01E{ident:02d}",
            "characters": ["https://rickandmortyapi.com/api/character/1"],
            "url": f"https://rickandmortyapi.com/api/episode/{ident}", "created": "2017-11-10T12:56:33.798Z"}


class RickAndMorty:
    def __init__(self, api: FakeApi, counts: dict[str, int]):
        self.api = api
        self.items = {"character": [character(n) for n in range(1, counts["character"] + 1)],
                      "location": [location(n) for n in range(1, counts["location"] + 1)],
                      "episode": [episode(n) for n in range(1, counts["episode"] + 1)]}
        api.route("GET", "/{resource}", self.list)

    def list(self, request: RecordedRequest) -> Reply:
        resource = request.path_params["resource"]
        items = self.items[resource]
        pages = math.ceil(len(items) / PAGE)
        page = int(request.param("page", "1"))
        if not 1 <= page <= pages:
            return Reply(404, {"error": "There is nothing here"})
        link = f"{self.api.url}/{resource}?page="
        return Reply(200, {
            "info": {"count": len(items), "pages": pages,
                     "next": f"{link}{page + 1}" if page < pages else None,
                     "prev": f"{link}{page - 1}" if page > 1 else None},
            "results": items[(page - 1) * PAGE: page * PAGE],
        })


@pytest.fixture
def api(fake_api):
    return RickAndMorty(fake_api, {"character": 826, "location": 126, "episode": 40})


def test_every_list_is_followed_through_info_next_and_never_past_the_last_page(api, fake_api, tmp_path):
    sync = run_connector("rick_and_morty", {"base_url": fake_api.url}, tmp_path)
    assert_clean(sync, "characters", "locations", "episodes")
    assert [c["id"] for c in sync.records("characters")] == list(range(1, 827))
    assert len(sync.records("locations")) == 126
    assert [e["episode"] for e in sync.records("episodes")][-1] == "S01E40"
    pages = [r.param("page", "1") for r in fake_api.received("/character")]
    assert pages == [str(n) for n in range(1, 43)]  # 42 pages, none asked for beyond
    assert len(fake_api.received("/episode")) == 2  # 40 episodes fill exactly two pages: no third request
    assert all(r.headers.get("Authorization") is None for r in fake_api.requests)
    assert sync.state_of("characters") == {"__ab_no_cursor_state_message": True}  # full refresh only
    assert sync.records("characters")[0]["origin"]["name"] == "Earth (C-137)"


def test_a_missing_list_fails_only_its_stream(api, fake_api, tmp_path):
    api.items["location"] = []  # a 404 for the first page
    sync = run_connector("rick_and_morty", {"base_url": fake_api.url}, tmp_path)
    assert sync.code == 1
    (error,) = sync.errors()
    assert error["stream_descriptor"] == {"name": "locations"}
    assert sync.statuses() == {"characters": "COMPLETE", "locations": "INCOMPLETE", "episodes": "COMPLETE"}
