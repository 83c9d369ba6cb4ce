"""`request_body` end to end: each kind of body as the fake API receives it, on the data requests
and on a session token's login request, with pagination putting its token into the body."""

from __future__ import annotations

from typing import Any

from engine import test_reading as reading
from engine.test_reading import ITEMS, option, paginator, requester, source, stream
from fakes.api_server import Reply, paged

run = reading.run  # the fixture: write a manifest, read every stream against the fake API


def posting(body: dict, path: str = "/search", **more: Any) -> dict:
    return requester(path, http_method="POST", request_body=body, **more)


def test_json_object_body_is_rendered_keeping_numbers_and_takes_the_page_token(run, fake_api):
    def answer(request):
        body = request.json()
        page = body.get("paging", {}).get("page", 1)
        return {"data": ITEMS[(page - 1) * 10: page * 10]}

    fake_api.route("POST", "/search", answer)
    manifest = source(stream(
        requester_=posting({"type": "RequestBodyJsonObject",
                            "value": {"filter": {"region": "{{ config.region }}", "limit": "{{ config.page_size }}"},
                                      "tags": ["a", "{{ config.region }}"]}}),
        paginator=paginator({"type": "PageIncrement", "page_size": 10, "start_from_page": 1},
                            page_token_option=option("body_json", ["paging", "page"])),
    ))
    result = run(manifest, {"region": "us", "page_size": 10})
    assert [r["id"] for r in result.records()] == [i["id"] for i in ITEMS]
    bodies = [r.json() for r in fake_api.requests]
    assert bodies[0] == {"filter": {"region": "us", "limit": 10}, "tags": ["a", "us"]}
    assert bodies[1] == {"filter": {"region": "us", "limit": 10}, "tags": ["a", "us"], "paging": {"page": 2}}
    assert all(r.headers["Content-Type"].startswith("application/json") for r in fake_api.requests)


def test_url_encoded_form_body(run, fake_api):
    fake_api.route("POST", "/search", {"data": ITEMS[:1]})
    manifest = source(stream(requester_=posting(
        {"type": "RequestBodyUrlEncodedForm", "value": {"region": "{{ config.region }}", "kind": "all & more",
                                                         "n": "3", "empty": "{{ config.get('none') }}"}})))
    result = run(manifest, {"region": "eu"})
    assert result.records() == ITEMS[:1]
    (request,) = fake_api.requests
    assert request.form() == {"region": "eu", "kind": "all & more", "n": "3"}
    assert request.headers["Content-Type"] == "application/x-www-form-urlencoded"


def test_plain_text_body_is_sent_as_rendered(run, fake_api):
    fake_api.route("POST", "/search", {"data": ITEMS[:1]})
    manifest = source(stream(requester_=posting(
        {"type": "RequestBodyPlainText", "value": "SELECT * FROM items WHERE region = '{{ config.region }}'"})))
    run(manifest, {"region": "eu"})
    (request,) = fake_api.requests
    assert request.body == b"SELECT * FROM items WHERE region = 'eu'"


def test_graphql_body_sends_query_and_variables_with_the_cursor_as_a_variable(run, fake_api):
    def answer(request):
        body = request.json()
        after = body["variables"].get("after")
        start = int(after) if after else 0
        page = ITEMS[start: start + 10]
        end = start + len(page)
        return {"data": {"items": {"nodes": page, "pageInfo": {"hasNextPage": end < len(ITEMS),
                                                              "endCursor": str(end)}}}}

    fake_api.route("POST", "/graphql", answer)
    query = "query($first: Int, $after: String) { items(first: $first, after: $after) { nodes { id } } }"
    manifest = source(stream(
        requester_=posting({"type": "RequestBodyGraphQL", "value": {
            "query": query,
            "variables": {"first": "{{ config.page_size }}",
                          "after": "{{ next_page_token.next_page_token }}"}}}, "/graphql"),
        selector_={"type": "RecordSelector",
                   "extractor": {"type": "DpathExtractor", "field_path": ["data", "items", "nodes"]}},
        paginator=paginator({"type": "CursorPagination",
                             "cursor_value": "{{ response.data['items'].pageInfo.endCursor }}",
                             "stop_condition": "{{ not response.data['items'].pageInfo.hasNextPage }}"}),
    ))
    result = run(manifest, {"page_size": 10})
    assert [r["id"] for r in result.records()] == [i["id"] for i in ITEMS]
    bodies = [r.json() for r in fake_api.requests]
    assert bodies[0] == {"query": query, "variables": {"first": 10}}
    assert [b["variables"]["after"] for b in bodies[1:]] == [10, 20]


def test_request_body_takes_the_place_of_the_older_field_of_its_kind(run, fake_api):
    fake_api.route("POST", "/search", {"data": ITEMS[:1]})
    manifest = source(stream(requester_=posting(
        {"type": "RequestBodyJsonObject", "value": {"new": True}}, request_body_json={"old": True})))
    run(manifest)
    assert fake_api.requests[0].json() == {"new": True}


def test_session_token_login_sends_its_request_body(run, fake_api):
    fake_api.route("POST", "/login", lambda r: {"token": f"t-{r.form()['user']}"})

    def answer(request):
        if request.headers.get("Authorization") != "Bearer t-ann":
            return Reply(401, {"error": "log in first"})
        return paged(ITEMS, request, style="offset", default_page_size=30)

    fake_api.route("GET", "/items", answer)
    login = requester("/login", http_method="POST", request_body={
        "type": "RequestBodyUrlEncodedForm", "value": {"user": "ann", "password": "{{ config.password }}"}})
    manifest = source(stream(requester_=requester(authenticator={
        "type": "SessionTokenAuthenticator", "login_requester": login, "session_token_path": ["token"],
        "request_authentication": {"type": "Bearer"}})))
    result = run(manifest, {"password": "pw-secret"})
    assert len(result.records()) == len(ITEMS)
    (login_request,) = fake_api.received("/login")
    assert login_request.form() == {"user": "ann", "password": "pw-secret"}
