"""The fake HTTP API: routing, recording, injected faults and the paging/date helpers."""

# ruff: noqa: F811  (test parameters named like the imported fixture)

from __future__ import annotations

import time
from urllib.parse import urlencode

import pytest
import requests
from hypothesis import given
from hypothesis import strategies as st

from fakes.api_server import (  # noqa: F401
    ApiError,
    FakeApi,
    Headers,
    RecordedRequest,
    Reply,
    dated,
    fake_api,
    paged,
)

TIMEOUT = 2.0


@pytest.fixture
def http():
    with requests.Session() as session:
        yield session


# -- routing ---------------------------------------------------------------------------------------


def test_placeholders_fill_path_params(fake_api, http):
    fake_api.route("GET", "/accounts/{id}/orders/{order}", lambda r: dict(r.path_params))

    response = http.get(f"{fake_api.url}/accounts/a%20b/orders/7", timeout=TIMEOUT)

    assert response.status_code == 200
    assert response.headers["Content-Type"] == "application/json"
    assert response.json() == {"id": "a b", "order": "7"}
    assert fake_api.requests[0].path == "/accounts/a%20b/orders/7"


def test_placeholder_matches_one_segment_only(fake_api, http):
    fake_api.route("GET", "/accounts/{id}", {"ok": True})

    assert http.get(f"{fake_api.url}/accounts/1/extra", timeout=TIMEOUT).status_code == 404
    assert http.get(f"{fake_api.url}/accounts/", timeout=TIMEOUT).status_code == 404
    assert http.get(f"{fake_api.url}/accounts/1", timeout=TIMEOUT).json() == {"ok": True}


def test_literal_route_beats_placeholder_and_reregistering_replaces(fake_api, http):
    fake_api.route("GET", "/users/{id}", lambda r: {"user": r.path_params["id"]})
    fake_api.route("GET", "/users/me", {"user": "me!"})
    assert http.get(f"{fake_api.url}/users/me", timeout=TIMEOUT).json() == {"user": "me!"}
    fake_api.route("GET", "/users/{id}", lambda r: {"user2": r.path_params["id"]})

    assert http.get(f"{fake_api.url}/users/me", timeout=TIMEOUT).json() == {"user": "me!"}
    assert http.get(f"{fake_api.url}/users/5", timeout=TIMEOUT).json() == {"user2": "5"}


def test_unknown_route_and_wrong_method_are_404(fake_api, http):
    fake_api.route("POST", "/items", {"created": True})

    for response in (
        http.get(f"{fake_api.url}/items", timeout=TIMEOUT),
        http.get(f"{fake_api.url}/nowhere", timeout=TIMEOUT),
    ):
        assert response.status_code == 404
        assert response.json() == {"error": "no route"}
    assert len(fake_api.requests) == 2


def test_any_method_route(fake_api, http):
    fake_api.route("*", "/echo", lambda r: {"method": r.method})

    assert http.delete(f"{fake_api.url}/echo", timeout=TIMEOUT).json() == {"method": "DELETE"}
    assert http.patch(f"{fake_api.url}/echo", timeout=TIMEOUT).json() == {"method": "PATCH"}


def test_reply_status_headers_and_raw_bodies(fake_api, http):
    fake_api.route("GET", "/created", Reply(201, {"id": 1}, {"X-Request-Id": "abc"}))
    fake_api.route("GET", "/text", Reply(200, "not json", {"Content-Type": "text/plain"}))
    fake_api.route("GET", "/broken", Reply(200, b'{"half":'))
    fake_api.route("GET", "/empty", Reply(204))

    created = http.get(f"{fake_api.url}/created", timeout=TIMEOUT)
    assert (created.status_code, created.json(), created.headers["x-request-id"]) == (201, {"id": 1}, "abc")
    text = http.get(f"{fake_api.url}/text", timeout=TIMEOUT)
    assert (text.headers["Content-Type"], text.text) == ("text/plain", "not json")
    broken = http.get(f"{fake_api.url}/broken", timeout=TIMEOUT)
    assert broken.content == b'{"half":'
    assert broken.headers["Content-Length"] == "8"
    empty = http.get(f"{fake_api.url}/empty", timeout=TIMEOUT)
    assert (empty.status_code, empty.content) == (204, b"")
    # the connection is still usable after the bodiless answer
    assert http.get(f"{fake_api.url}/created", timeout=TIMEOUT).status_code == 201


def test_head_gets_headers_without_body(fake_api, http):
    fake_api.route("HEAD", "/thing", {"big": "x" * 100})

    response = http.head(f"{fake_api.url}/thing", timeout=TIMEOUT)

    assert response.status_code == 200
    assert response.content == b""
    assert int(response.headers["Content-Length"]) > 100


def test_api_error_answers_its_status(fake_api, http):
    def handler(request):
        raise ApiError(422, "bad filter")

    fake_api.route("GET", "/x", handler)

    response = http.get(f"{fake_api.url}/x", timeout=TIMEOUT)

    assert (response.status_code, response.json()) == (422, {"error": "bad filter"})
    assert fake_api.errors == []


def test_handler_crash_is_500_and_fails_the_with_block(http):
    api = FakeApi()
    with pytest.raises(AssertionError, match="ZeroDivisionError"), api:
        api.route("GET", "/x", lambda r: 1 / 0)
        api.route("GET", "/none", lambda r: None)
        response = http.get(f"{api.url}/x", timeout=TIMEOUT)
        assert response.status_code == 500
        assert response.json()["error"] == "handler raised"
        assert http.get(f"{api.url}/none", timeout=TIMEOUT).status_code == 500
    assert [type(e) for e in api.errors] == [ZeroDivisionError, TypeError]
    assert "return a Reply, a dict or a list" in str(api.errors[1])


def test_handler_errors_can_be_tolerated(http):
    with FakeApi(check_handler_errors=False) as api:
        api.route("GET", "/x", lambda r: 1 / 0)
        assert http.get(f"{api.url}/x", timeout=TIMEOUT).status_code == 500
    assert len(api.errors) == 1


def test_bad_route_paths_are_refused():
    api = FakeApi()
    try:
        with pytest.raises(ValueError, match="must start with '/'"):
            api.route("GET", "items", {})
        with pytest.raises(ValueError, match="no query"):
            api.route("GET", "/items?x=1", {})
        with pytest.raises(ValueError, match="twice"):
            api.route("GET", "/a/{id}/b/{id}", {})
    finally:
        api.stop()


# -- recording ---------------------------------------------------------------------------------


def test_records_query_headers_and_json_body(fake_api, http):
    fake_api.route("POST", "/search", lambda r: {"got": r.json()})

    response = http.post(
        f"{fake_api.url}/search?tag=a&tag=b&empty=&q=x%20y",
        json={"filter": {"since": "2024-01-01"}},
        headers={"X-Custom": "one", "Authorization": "Bearer sekrit"},
        timeout=TIMEOUT,
    )

    assert response.json() == {"got": {"filter": {"since": "2024-01-01"}}}
    (request,) = fake_api.requests
    assert request.method == "POST"
    assert request.path == "/search"
    assert request.target == "/search?tag=a&tag=b&empty=&q=x%20y"
    assert request.query == {"tag": ["a", "b"], "empty": [""], "q": ["x y"]}
    assert request.param("tag") == "a"
    assert request.param("empty") == ""
    assert request.param("missing") is None
    assert request.param("missing", "d") == "d"
    assert request.headers["x-custom"] == "one"
    assert request.headers["X-CUSTOM"] == "one"
    assert "content-type" in request.headers
    assert request.headers["Content-Type"] == "application/json"
    assert request.json() == {"filter": {"since": "2024-01-01"}}
    assert "sekrit" not in repr(request.headers)
    assert "sekrit" not in repr(request)


def test_records_form_bodies_and_masks_secret_query_values(fake_api, http):
    fake_api.route("POST", "/oauth/token", {"access_token": "t", "expires_in": 60})

    http.post(
        f"{fake_api.url}/oauth/token?api_key=hush&page=2",
        data={"grant_type": "refresh_token", "refresh_token": "r1"},
        timeout=TIMEOUT,
    )

    (request,) = fake_api.requests
    assert request.form() == {"grant_type": "refresh_token", "refresh_token": "r1"}
    assert "hush" not in repr(request)
    assert "page=2" in repr(request)


def test_chunked_request_body_is_read(fake_api, http):
    fake_api.route("PUT", "/upload", lambda r: {"size": len(r.body)})

    response = http.put(f"{fake_api.url}/upload", data=iter([b"abc", b"defg"]), timeout=TIMEOUT)

    assert response.json() == {"size": 7}
    assert fake_api.requests[0].body == b"abcdefg"


def test_connections_are_kept_alive(fake_api, http):
    fake_api.route("GET", "/n/{i}", lambda r: {"i": r.path_params["i"]})

    for i in range(5):
        assert http.get(f"{fake_api.url}/n/{i}", timeout=TIMEOUT).json() == {"i": str(i)}
    requests.get(f"{fake_api.url}/n/9", timeout=TIMEOUT)  # a fresh connection

    connections = [r.connection for r in fake_api.requests]
    assert len(set(connections[:5])) == 1
    assert connections[5] != connections[0]


def test_received_filters_by_path_and_method(fake_api, http):
    fake_api.route("*", "/a", {})
    http.get(f"{fake_api.url}/a", timeout=TIMEOUT)
    http.post(f"{fake_api.url}/a", timeout=TIMEOUT)
    http.get(f"{fake_api.url}/b", timeout=TIMEOUT)

    assert [r.method for r in fake_api.received("/a")] == ["GET", "POST"]
    assert [r.path for r in fake_api.received(method="get")] == ["/a", "/b"]


def test_headers_mapping():
    headers = Headers([("X-A", "1"), ("x-a", "2"), ("Accept", "json")])

    assert headers["x-A"] == "1, 2"
    assert list(headers) == ["X-A", "Accept"]
    assert len(headers) == 2
    assert 3 not in headers
    assert headers.get("missing") is None


# -- faults ----------------------------------------------------------------------------------------


def test_throttled_then_success(fake_api, http):
    fake_api.route("GET", "/items", [1, 2])
    fake_api.fault(status=429, headers={"Retry-After": "0"}, body={"message": "slow down"})

    first = http.get(f"{fake_api.url}/items", timeout=TIMEOUT)
    second = http.get(f"{fake_api.url}/items", timeout=TIMEOUT)

    assert (first.status_code, first.headers["Retry-After"], first.json()) == (429, "0", {"message": "slow down"})
    assert (second.status_code, second.json()) == (200, [1, 2])
    assert len(fake_api.requests) == 2


def test_fault_defaults_to_500_with_error_body(fake_api, http):
    fake_api.route("GET", "/x", {})
    fake_api.fault()

    response = http.get(f"{fake_api.url}/x", timeout=TIMEOUT)

    assert (response.status_code, response.json()) == (500, {"error": "injected fault (500)"})


def test_fault_after_n_requests_for_times(fake_api, http):
    fake_api.route("GET", "/x", {"ok": True})
    fake_api.fault(after=2, times=2, status=503)

    statuses = [http.get(f"{fake_api.url}/x", timeout=TIMEOUT).status_code for _ in range(5)]

    assert statuses == [200, 200, 503, 503, 200]


def test_fault_path_filter(fake_api, http):
    fake_api.route("GET", "/users", [])
    fake_api.route("GET", "/orders/{id}", {})
    fake_api.fault(path="/orders", after=1, status=401)

    statuses = [
        http.get(f"{fake_api.url}{path}", timeout=TIMEOUT).status_code
        for path in ("/users", "/orders/1", "/users", "/users", "/orders/2", "/orders/3")
    ]

    assert statuses == [200, 200, 200, 200, 401, 200]


def test_faults_are_consumed_in_order(fake_api, http):
    fake_api.route("GET", "/x", {})
    fake_api.fault(status=429)
    fake_api.fault(status=502)

    statuses = [http.get(f"{fake_api.url}/x", timeout=TIMEOUT).status_code for _ in range(3)]

    assert statuses == [429, 502, 200]


def test_hang_makes_the_client_time_out(fake_api, http):
    fake_api.route("GET", "/slow", {"done": True})
    fake_api.fault(hang=0.2)

    started = time.monotonic()
    with pytest.raises(requests.exceptions.ReadTimeout):
        http.get(f"{fake_api.url}/slow", timeout=0.05)
    assert time.monotonic() - started < 0.2
    assert http.get(f"{fake_api.url}/slow", timeout=TIMEOUT).json() == {"done": True}


def test_hang_without_status_answers_normally_later(fake_api, http):
    fake_api.route("GET", "/slow", {"done": True})
    fake_api.fault(hang=0.05)

    started = time.monotonic()
    response = http.get(f"{fake_api.url}/slow", timeout=TIMEOUT)

    assert time.monotonic() - started >= 0.05
    assert response.json() == {"done": True}


def test_hang_with_status_answers_that_status(fake_api, http):
    fake_api.route("GET", "/slow", {"done": True})
    fake_api.fault(hang=0.01, status=504)

    assert http.get(f"{fake_api.url}/slow", timeout=TIMEOUT).status_code == 504


def test_close_connection_drops_without_answer(fake_api, http):
    fake_api.route("GET", "/x", {"ok": True})
    assert http.get(f"{fake_api.url}/x", timeout=TIMEOUT).ok  # a kept-alive connection exists
    fake_api.fault(close_connection=True)

    with pytest.raises(requests.exceptions.ConnectionError):
        http.get(f"{fake_api.url}/x", timeout=TIMEOUT)
    assert http.get(f"{fake_api.url}/x", timeout=TIMEOUT).json() == {"ok": True}
    assert len(fake_api.requests) == 3


def test_bad_fault_arguments_are_refused():
    api = FakeApi()
    try:
        with pytest.raises(ValueError, match="times"):
            api.fault(times=0)
        with pytest.raises(ValueError, match="after"):
            api.fault(after=-1)
    finally:
        api.stop()


def test_stop_is_quick_with_hanging_request_and_idle_connection(http):
    api = FakeApi().start()
    api.route("GET", "/x", {})
    http.get(f"{api.url}/x", timeout=TIMEOUT)  # leaves an idle kept-alive connection
    api.fault(hang=30)
    with pytest.raises(requests.exceptions.ReadTimeout):
        http.get(f"{api.url}/x", timeout=0.05)

    started = time.monotonic()
    api.stop()

    assert time.monotonic() - started < 0.5
    with pytest.raises(requests.exceptions.ConnectionError):
        requests.get(f"{api.url}/x", timeout=TIMEOUT)
    with pytest.raises(RuntimeError, match="make a new one"):
        api.start()


def test_url_is_known_before_start():
    api = FakeApi()
    try:
        assert api.url.startswith("http://127.0.0.1:")
        assert int(api.url.rsplit(":", 1)[1]) > 0
    finally:
        api.stop()


# -- paging ----------------------------------------------------------------------------------------

ITEMS = [{"id": i} for i in range(1, 8)]


def walk_pages(fake_api, http, style, **query):
    """Follow a paged endpoint to its end; returns the ids seen and the number of requests."""
    seen, params, calls = [], dict(query), 0
    while calls < 20:
        calls += 1
        body = http.get(f"{fake_api.url}/items", params=params, timeout=TIMEOUT).json()
        seen += [item["id"] for item in body["data"]]
        if style == "cursor":
            if body["next_cursor"] is None:
                break
            params["cursor"] = body["next_cursor"]
        elif style == "page":
            if len(body["data"]) < int(query["per_page"]):
                break
            params["page"] = body["page"] + 1
        else:
            if body["offset"] + len(body["data"]) >= body["total"]:
                break
            params["offset"] = body["offset"] + len(body["data"])
    return seen, calls


@pytest.mark.parametrize("style", ["page", "offset", "cursor"])
def test_paged_endpoints_serve_every_item_once(fake_api, http, style):
    fake_api.route("GET", "/items", lambda r: paged(ITEMS, r, style=style))

    seen, calls = walk_pages(fake_api, http, style, per_page="3")

    assert seen == [1, 2, 3, 4, 5, 6, 7]
    assert calls == 3


def test_page_shape():
    body = paged(ITEMS, RecordedRequest.build("/items?page=3&per_page=3"))

    assert body == {"data": [{"id": 7}], "page": 3, "total_pages": 3}


def test_offset_shape_with_custom_names():
    request = RecordedRequest.build("/items?skip=5&limit=10")

    body = paged(ITEMS, request, style="offset", offset_param="skip", page_size_param="limit", data_key="results")

    assert body == {"results": [{"id": 6}, {"id": 7}], "offset": 5, "total": 7}


def test_cursor_shape_and_last_page():
    first = paged(ITEMS, RecordedRequest.build("/items?per_page=4"), style="cursor")
    last = paged(ITEMS, RecordedRequest.build(f"/items?per_page=4&cursor={first['next_cursor']}"), style="cursor")

    assert [i["id"] for i in first["data"]] == [1, 2, 3, 4]
    assert isinstance(first["next_cursor"], str) and first["next_cursor"] != "4"
    assert last == {"data": [{"id": 5}, {"id": 6}, {"id": 7}], "next_cursor": None}


def test_page_size_default_cap_and_zero_based_pages():
    assert len(paged(list(range(50)), RecordedRequest.build("/"), default_page_size=20)["data"]) == 20
    assert len(paged(list(range(50)), RecordedRequest.build("/?per_page=40"), max_page_size=25)["data"]) == 25
    assert paged([1, 2, 3], RecordedRequest.build("/?page=0&per_page=2"), first_page=0)["data"] == [1, 2]
    assert paged([1, 2, 3], RecordedRequest.build("/?page=9&per_page=2"))["data"] == []


@pytest.mark.parametrize(
    ("target", "style", "message"),
    [
        ("/?page=x", "page", "page='x' is not an integer"),
        ("/?page=0", "page", "below the minimum 1"),
        ("/?per_page=0", "page", "below the minimum 1"),
        ("/?offset=-1", "offset", "below the minimum 0"),
        ("/?cursor=bogus", "cursor", "was not issued by this server"),
    ],
)
def test_paged_rejects_malformed_parameters(target, style, message):
    with pytest.raises(ApiError, match=message) as caught:
        paged(ITEMS, RecordedRequest.build(target), style=style)
    assert caught.value.reply.status == 400


def test_paged_bad_parameter_is_400_over_http(fake_api, http):
    fake_api.route("GET", "/items", lambda r: paged(ITEMS, r))

    response = http.get(f"{fake_api.url}/items?page=abc", timeout=TIMEOUT)

    assert response.status_code == 400
    assert "not an integer" in response.json()["error"]
    assert fake_api.errors == []


@given(
    items=st.lists(st.integers(), max_size=40),
    size=st.integers(min_value=1, max_value=12),
    style=st.sampled_from(["page", "offset", "cursor"]),
)
def test_walking_pages_reproduces_the_list(items, size, style):
    seen, query = [], {"per_page": str(size)}
    for _ in range(len(items) + 2):
        body = paged(items, RecordedRequest.build("/?" + urlencode(query)), style=style)
        seen += body["data"]
        assert len(body["data"]) <= size
        if style == "cursor":
            if body["next_cursor"] is None:
                break
            query["cursor"] = body["next_cursor"]
        elif style == "page":
            if body["page"] >= body["total_pages"]:
                break
            query["page"] = str(body["page"] + 1)
        else:
            if body["offset"] + size >= body["total"]:
                break
            query["offset"] = str(body["offset"] + size)
    assert seen == items


# -- dated -----------------------------------------------------------------------------------------

EVENTS = [
    {"id": 1, "at": "2024-01-01T00:00:00Z"},
    {"id": 2, "at": "2024-01-02T12:00:00+00:00"},
    {"id": 3, "at": "2024-01-03T00:00:00Z"},
    {"id": 4, "at": "2024-01-03T00:00:01Z"},
    {"id": 5},
]


def ids(items):
    return [item["id"] for item in items]


def test_dated_iso_bounds_are_inclusive():
    request = RecordedRequest.build("/?start=2024-01-02T12:00:00Z&end=2024-01-03")

    assert ids(dated(EVENTS, request, "at")) == [2, 3]


def test_dated_offsets_are_respected():
    request = RecordedRequest.build("/?" + urlencode({"start": "2024-01-02T13:00:00+01:00"}))

    assert ids(dated(EVENTS, request, "at")) == [2, 3, 4]


def test_dated_open_bounds():
    assert ids(dated(EVENTS, RecordedRequest.build("/"), "at")) == [1, 2, 3, 4, 5]
    assert ids(dated(EVENTS, RecordedRequest.build("/?end=2024-01-01T00:00:00Z"), "at")) == [1]


def test_dated_epoch_query_against_iso_and_numeric_items():
    start = 1704153600  # 2024-01-02T00:00:00Z
    request = RecordedRequest.build(f"/?from={start}&to={start + 86400}")
    numeric = [{"id": 1, "ts": start - 1}, {"id": 2, "ts": start}, {"id": 3, "ts": start + 86400.5}]

    assert ids(dated(EVENTS, request, "at", "from", "to", "epoch", item_fmt="iso")) == [2, 3]
    assert ids(dated(numeric, request, "ts", "from", "to", "epoch")) == [2]


def test_dated_strptime_format():
    items = [{"id": 1, "day": "01/02/2024"}, {"id": 2, "day": "15/02/2024"}, {"id": 3, "day": "01/03/2024"}]
    request = RecordedRequest.build("/?start=02/02/2024&end=01/03/2024")

    assert ids(dated(items, request, "day", fmt="%d/%m/%Y")) == [2, 3]


def test_dated_malformed_bound_is_400():
    with pytest.raises(ApiError, match="start='yesterday' is not a date") as caught:
        dated(EVENTS, RecordedRequest.build("/?start=yesterday"), "at")
    assert caught.value.reply.status == 400


def test_dated_and_paged_compose_over_http(fake_api, http):
    fake_api.route(
        "GET", "/events", lambda r: paged(dated(EVENTS, r, "at", "since", "until"), r, style="offset")
    )

    body = http.get(
        f"{fake_api.url}/events",
        params={"since": "2024-01-02T00:00:00Z", "until": "2024-01-05T00:00:00Z", "per_page": 2},
        timeout=TIMEOUT,
    ).json()

    assert body == {"data": [EVENTS[1], EVENTS[2]], "offset": 0, "total": 3}
