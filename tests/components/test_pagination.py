"""Runtime paginators: the requests each strategy makes, where tokens go, when pages end."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from requests.structures import CaseInsensitiveDict

import framework.components.pagination  # noqa: F401  (registers the builders)
from framework.components.context import BuildContext, builder_of
from framework.components.http.request import HttpRequest, RequestParts
from framework.components.http.transport import (
    FunctionTransport,
    HttpResponse,
)
from framework.components.pagination import parse_link_header
from framework.errors import ConfigError, InterpolationError, PaginationLoopError, ReadError
from framework.interpolation import TemplateEngine
from framework.models.pagination import DefaultPaginator, NoPagination

BASE_URL = "https://api.test/v1"
VARIABLES = {
    "config": {"region": "eu"},
    "parameters": {},
    "stream_slice": {"account": "acme"},
    "stream_partition": {"account": "acme"},
    "stream_interval": {},
    "stream_state": {},
}


class CountingEngine(TemplateEngine):
    """Counts evaluations, to check that paging renders no more than it must."""

    def __init__(self) -> None:
        super().__init__()
        self.evaluations = 0

    def evaluate(self, source: str, context: Any, result: str = "string", **options: Any) -> Any:
        self.evaluations += 1
        return super().evaluate(source, context, result, **options)


def _context(config: dict | None = None, **kwargs: Any) -> BuildContext:
    return BuildContext(config=config or {}, transport=FunctionTransport(lambda r: (200, {}, b"")), **kwargs)


def build(spec: dict, config: dict | None = None, **kwargs: Any) -> Any:
    model_class = NoPagination if spec["type"] == "NoPagination" else DefaultPaginator
    model = model_class.model_validate(spec)
    return builder_of(model.type)(model, _context(config, **kwargs), ("streams", 0, "retriever", "paginator"))


def paginator_spec(strategy: dict, token_option: dict | None = None, size_option: dict | None = None) -> dict:
    spec: dict = {"type": "DefaultPaginator", "pagination_strategy": strategy}
    if token_option is not None:
        spec["page_token_option"] = token_option
    if size_option is not None:
        spec["page_size_option"] = size_option
    return spec


def param(name: str) -> dict:
    return {"type": "RequestOption", "inject_into": "request_parameter", "field_name": name}


def response(body: Any, headers: dict | None = None, request: HttpRequest | None = None) -> HttpResponse:
    content = body if isinstance(body, bytes) else orjson.dumps(body)
    request = request or HttpRequest("GET", BASE_URL + "/items")
    return HttpResponse(200, CaseInsensitiveDict(headers or {}), content, request)


Server = Callable[[HttpRequest], tuple[dict, Any]]  # request -> (headers, body with "data")


def read(paginator: Any, server: Server, limit: int = 500) -> tuple[list[HttpRequest], list]:
    """Drive one slice as the stream reader does; returns the requests sent and the records read."""
    pager = paginator.start()
    sent: list[HttpRequest] = []
    records: list = []
    while True:
        parts = RequestParts(method="GET", url_base=BASE_URL, path="items")
        pager.apply(parts)
        request = parts.to_request()
        sent.append(request)
        headers, body = server(request)
        page = body.get("data", []) if isinstance(body, dict) else []
        records.extend(page)
        if not pager.advance(response(body, headers, request), page, VARIABLES):
            return sent, records
        assert len(sent) < limit, "pagination did not end"


def query(request: HttpRequest) -> dict:
    return dict(request.params)


# -- CursorPagination -------------------------------------------------------------------


def cursor_server(pages: dict[str | None, tuple[list, Any]]) -> Server:
    """Pages keyed by the `cursor` query parameter: (records, next cursor)."""

    def serve(request: HttpRequest) -> tuple[dict, Any]:
        data, following = pages[query(request).get("cursor")]
        return {}, {"data": data, "next": following}

    return serve


def test_cursor_pagination_follows_the_cursor_until_it_is_empty():
    paginator = build(paginator_spec(
        {"type": "CursorPagination", "cursor_value": "{{ response.next }}", "page_size": 2},
        param("cursor"), param("limit"),
    ))
    server = cursor_server({None: ([1, 2], "a"), "a": ([3, 4], "b"), "b": ([5], None)})
    sent, records = read(paginator, server)
    assert [query(r) for r in sent] == [
        {"limit": "2"},
        {"limit": "2", "cursor": "a"},
        {"limit": "2", "cursor": "b"},
    ]
    assert records == [1, 2, 3, 4, 5]


def test_cursor_pagination_stops_on_an_empty_string_token():
    paginator = build(paginator_spec(
        {"type": "CursorPagination", "cursor_value": "{{ response.next }}"}, param("cursor"),
    ))
    sent, _ = read(paginator, cursor_server({None: ([1], "a"), "a": ([2], "")}))
    assert len(sent) == 2


@pytest.mark.parametrize("last", [{}, [], 0, False, "0", "{}", "[]", "False", "  ", None])
def test_cursor_pagination_stops_on_a_token_airbyte_reads_as_false(last):
    paginator = build(paginator_spec(
        {"type": "CursorPagination", "cursor_value": "{{ response.next }}"}, param("cursor"),
    ))
    sent, records = read(paginator, cursor_server({None: ([1], "a"), "a": ([2], last)}))
    assert [query(r) for r in sent] == [{}, {"cursor": "a"}]
    assert records == [1, 2]


def test_a_cursor_read_from_a_link_header_with_an_empty_default_stops_on_the_last_page():
    # the last page has no Link header: the cursor renders `{}`, which ends the pages (it is not sent)
    paginator = build(paginator_spec(
        {"type": "CursorPagination",
         "cursor_value": "{{ headers['link'].get('next', {}).get('cursor', {}) }}",
         "stop_condition": "{{ headers['link']['next']['results'] == 'false' }}"},
        param("cursor"),
    ))

    def serve(request: HttpRequest) -> tuple[dict, Any]:
        if query(request).get("cursor") is None:
            return {"Link": '<https://api.test/v1/items?cursor=c1>; rel="next"; results="true"; cursor="c1"'}, \
                {"data": [1]}
        return {}, {"data": [2]}

    sent, records = read(paginator, serve)
    assert [query(r) for r in sent] == [{}, {"cursor": "c1"}]
    assert records == [1, 2]


def test_a_page_number_token_of_zero_ends_the_pages():
    # airbyte-cdk's DefaultPaginator stops on any false token, whatever the strategy
    paginator = build(paginator_spec({"type": "PageIncrement", "start_from_page": -1, "page_size": 1},
                                     param("page")))
    pager = paginator.start()
    assert pager.advance(response({}), [1], VARIABLES) is False


def test_a_lookup_through_a_missing_key_fails_the_read():
    paginator = build(paginator_spec(
        {"type": "CursorPagination", "cursor_value": "{{ response['meta']['pagination']['next'] }}"},
        param("cursor")), locate=lambda path: "manifest.yaml:20:9" if path[-1] == "paginator" else None)
    pager = paginator.start()
    assert pager.advance(response({"data": [1], "meta": {"pagination": {"next": "p2"}}}), [1], VARIABLES)
    # the last level missing is no token (the pages end); a level above it missing fails, as in airbyte-cdk
    assert paginator.start().advance(response({"meta": {"pagination": {}}}), [1], VARIABLES) is False
    with pytest.raises(ReadError) as failed:
        pager.advance(response({"data": [2]}), [2], VARIABLES)
    message = str(failed.value)
    assert "'meta'" in message and "stop_condition" in message and "response.get('meta', {})" in message
    assert failed.value.place == "manifest.yaml:20:9"


def test_a_stop_condition_through_a_missing_key_is_false_and_reading_goes_on():
    paginator = build(paginator_spec(
        {"type": "CursorPagination", "cursor_value": "{{ response.next }}",
         "stop_condition": "{{ response['meta']['done'] }}"}, param("cursor")))
    pager = paginator.start()
    assert pager.advance(response({"next": "b"}), [1], VARIABLES)
    assert pager.token == "b"


def test_cursor_pagination_stops_when_the_stop_condition_is_true():
    paginator = build(paginator_spec(
        {
            "type": "CursorPagination",
            "cursor_value": "{{ response.cursor }}",
            "stop_condition": "{{ not response.has_more }}",
        },
        param("cursor"),
    ))

    def serve(request: HttpRequest) -> tuple[dict, Any]:
        cursor = query(request).get("cursor")
        # the API keeps sending a cursor on the last page; has_more says there is none
        return {}, {"data": [cursor], "cursor": "c2" if cursor else "c1", "has_more": cursor is None}

    sent, records = read(paginator, serve)
    assert [query(r) for r in sent] == [{}, {"cursor": "c1"}]
    assert records == [None, "c1"]


def test_cursor_templates_see_the_page_and_the_slice():
    paginator = build(paginator_spec(
        {
            "type": "CursorPagination",
            "cursor_value": ("{{ stream_partition.account }}-{{ config.region }}-{{ last_record.id }}"
                             "-{{ last_page_size }}"),
            "stop_condition": "{{ last_records | length < 2 }}",
        },
        param("after"),
    ), config={"region": "us"})
    pager = paginator.start()
    more = pager.advance(response({}), [{"id": 1}, {"id": 7}], VARIABLES)
    assert more is True
    # `config` comes from the variables the reader passes, as for every other template
    assert pager.token == "acme-eu-7-2"
    assert pager.advance(response({}), [{"id": 8}], VARIABLES) is False


def test_cursor_value_keeps_the_native_type_of_the_token():
    paginator = build(paginator_spec({"type": "CursorPagination", "cursor_value": "{{ response.next }}"},
                                     param("after")))
    pager = paginator.start()
    assert pager.advance(response({"next": 42}), [1], VARIABLES)
    assert pager.token == 42


def test_token_variables_have_the_airbyte_shape():
    paginator = build(paginator_spec({"type": "CursorPagination", "cursor_value": "{{ response.next }}"}))
    pager = paginator.start()
    assert pager.token is None
    assert pager.token_variables() == {"next_page_token": {}}
    pager.advance(response({"next": "abc"}), [1], VARIABLES)
    assert pager.token_variables() == {"next_page_token": {"next_page_token": "abc"}}
    pager.advance(response({"next": "def"}), [1], VARIABLES)
    assert pager.token_variables() == {"next_page_token": {"next_page_token": "def"}}


def test_the_token_can_be_read_by_request_templates_only():
    # no page_token_option: the token is not put anywhere; the requester's templates read it
    paginator = build(paginator_spec({"type": "CursorPagination", "cursor_value": "{{ response.next }}"}))
    pager = paginator.start()
    pager.advance(response({"next": "abc"}), [1], VARIABLES)
    parts = RequestParts(url_base=BASE_URL, path="items")
    pager.apply(parts)
    assert parts.to_request() == HttpRequest("GET", BASE_URL + "/items")


def test_the_token_goes_into_a_header():
    paginator = build(paginator_spec(
        {"type": "CursorPagination", "cursor_value": "{{ response.next }}"},
        {"type": "RequestOption", "inject_into": "header", "field_name": "X-Page-Token"},
    ))
    pager = paginator.start()
    first = RequestParts()
    pager.apply(first)
    assert first.headers == {}
    pager.advance(response({"next": "tok"}), [1], VARIABLES)
    second = RequestParts()
    pager.apply(second)
    assert second.headers == {"X-Page-Token": "tok"}


def test_token_and_page_size_go_into_a_json_body():
    paginator = build(paginator_spec(
        {"type": "CursorPagination", "cursor_value": "{{ response.next }}", "page_size": 50},
        {"type": "RequestOption", "inject_into": "body_json", "field_path": ["paging", "cursor"]},
        {"type": "RequestOption", "inject_into": "body_json", "field_name": "{{ config.size_field }}"},
    ), config={"size_field": "limit"})
    pager = paginator.start()
    first = RequestParts(method="POST", json={"query": "x"})
    pager.apply(first)
    assert first.json == {"query": "x", "limit": 50}
    pager.advance(response({"next": "n1"}), [1], VARIABLES)
    second = RequestParts(method="POST", json={"query": "x", "paging": {"other": 1}})
    pager.apply(second)
    assert second.json == {"query": "x", "paging": {"other": 1, "cursor": "n1"}, "limit": 50}


# -- RequestPath ---------------------------------------------------------------------


def test_request_path_follows_next_page_urls():
    paginator = build(paginator_spec(
        {"type": "CursorPagination", "cursor_value": "{{ response.next }}"},
        {"type": "RequestPath"},
    ))
    urls = {
        BASE_URL + "/items": ([1], "https://api.test/v1/items?after=1"),
        "https://api.test/v1/items?after=1": ([2], "https://api.test/v1/items?after=2"),
        "https://api.test/v1/items?after=2": ([3], None),
    }

    def serve(request: HttpRequest) -> tuple[dict, Any]:
        data, following = urls[request.full_url()]
        return {}, {"data": data, "next": following}

    sent, records = read(paginator, serve)
    assert [r.url for r in sent] == [BASE_URL + "/items", *[u for u in urls if "after" in u]]
    assert records == [1, 2, 3]


def test_request_path_with_a_full_url_replaces_the_url():
    paginator = build(paginator_spec(
        {"type": "CursorPagination", "cursor_value": "{{ response.next }}"}, {"type": "RequestPath"},
    ))
    pager = paginator.start()
    pager.advance(response({"next": "https://other.test/items?after=9"}), [1], VARIABLES)
    parts = RequestParts(url_base=BASE_URL, path="items")
    pager.apply(parts)
    assert (parts.url, parts.path) == ("https://other.test/items?after=9", "items")


def test_request_path_with_a_relative_path_replaces_the_path():
    paginator = build(paginator_spec(
        {"type": "CursorPagination", "cursor_value": "{{ response.next }}"}, {"type": "RequestPath"},
    ))
    pager = paginator.start()
    pager.advance(response({"next": "/items/page/2"}), [1], VARIABLES)
    parts = RequestParts(url_base=BASE_URL, path="items")
    pager.apply(parts)
    assert parts.url is None
    assert parts.to_request().url == BASE_URL + "/items/page/2"


def test_next_page_url_from_the_link_header():
    paginator = build(paginator_spec(
        {
            "type": "CursorPagination",
            "cursor_value": "{{ headers.link.next.url }}",
            "stop_condition": "{{ 'next' not in headers.link }}",
        },
        {"type": "RequestPath"},
    ))
    links = {
        BASE_URL + "/items": ('<https://api.test/v1/items?page=2>; rel="next", '
                              '<https://api.test/v1/items?page=3>; rel="last"'),
        BASE_URL + "/items?page=2": '<https://api.test/v1/items?page=3>; rel="next"',
        BASE_URL + "/items?page=3": '<https://api.test/v1/items?page=1>; rel="first"',
    }

    def serve(request: HttpRequest) -> tuple[dict, Any]:
        return {"Link": links[request.full_url()]}, {"data": [request.full_url()]}

    sent, _ = read(paginator, serve)
    assert [r.full_url() for r in sent] == list(links)


def test_parse_link_header():
    text = ('<https://x/a?p=2>; rel="next"; title="Next page", <https://x/a?p=1>;rel=prev, <https://x/b>, '
            "<https://x/c?ids=1,2>; REL='last'")
    assert parse_link_header(text) == {
        "next": {"url": "https://x/a?p=2", "rel": "next", "title": "Next page"},
        "prev": {"url": "https://x/a?p=1", "rel": "prev"},
        "https://x/b": {"url": "https://x/b"},
        "last": {"url": "https://x/c?ids=1,2", "rel": "last"},
    }
    assert parse_link_header(None) == {}
    assert parse_link_header("") == {}


# -- loop detection ------------------------------------------------------------------


def test_a_repeated_cursor_with_the_same_page_raises_a_pagination_loop_error():
    paginator = build(paginator_spec(
        {"type": "CursorPagination", "cursor_value": "{{ response.next }}"}, param("cursor"),
    ), locate=lambda path: "manifest.yaml:12:7" if path[-1] == "paginator" else None)
    server = cursor_server({None: ([1], "a"), "a": ([2], "b"), "b": ([1], "a")})
    with pytest.raises(PaginationLoopError) as caught:
        read(paginator, server)
    error = caught.value
    assert "the API returned the page token `a` again after 3 pages: after the same 1 record" in error.reason
    assert "cursor_value" in error.reason and "stop_condition" in error.reason
    assert error.place == "manifest.yaml:12:7"
    assert error.request == "GET https://api.test/v1/items?cursor=b"


def test_a_token_sent_again_with_other_records_is_a_repeat_not_a_loop():
    paginator = build(paginator_spec(
        {"type": "CursorPagination", "cursor_value": "{{ response.next }}"}, param("cursor"),
    ))
    # a cursor shared by records across pages (a timestamp, say): `t1` comes twice, after different pages
    pager = paginator.start()
    assert pager.advance(response({"next": "t1"}), [1], VARIABLES)
    assert pager.advance(response({"next": "t2"}), [2], VARIABLES)
    assert pager.advance(response({"next": "t1"}), [3], VARIABLES)  # a repeat: other records
    empty = paginator.start()  # an empty page with a next token is fine once; the same again is a loop
    assert empty.advance(response({"next": "e"}), [], VARIABLES)
    assert empty.advance(response({"next": "f"}), [5], VARIABLES)
    with pytest.raises(PaginationLoopError, match="after an empty page"):
        empty.advance(response({"next": "e"}), [], VARIABLES)


def test_a_token_repeated_with_ever_other_records_fails_after_a_bound():
    paginator = build(paginator_spec({"type": "CursorPagination", "cursor_value": "{{ response.next }}"}))
    pager = paginator.start()
    with pytest.raises(PaginationLoopError, match="each time with other records"):
        for page in range(20):
            pager.advance(response({"next": "same" if page % 2 else f"other{page}"}), [page], VARIABLES)


def test_a_cursor_equal_to_the_last_one_is_a_loop_after_two_pages():
    paginator = build(paginator_spec(
        {"type": "CursorPagination", "cursor_value": "{{ response.next }}"}, param("cursor"),
    ))
    with pytest.raises(PaginationLoopError, match="after 2 pages"):
        read(paginator, cursor_server({None: ([1], "same"), "same": ([2], "same")}))


def test_long_tokens_are_truncated_in_the_loop_message():
    token = "x" * 500
    paginator = build(paginator_spec({"type": "CursorPagination", "cursor_value": "{{ response.next }}"}))
    pager = paginator.start()
    pager.advance(response({"next": token}), [1], VARIABLES)
    with pytest.raises(PaginationLoopError) as caught:
        pager.advance(response({"next": token}), [1], VARIABLES)
    assert f"`{'x' * 80}...`" in caught.value.reason
    assert "x" * 81 not in caught.value.reason


def test_secrets_are_masked_in_the_loop_message():
    paginator = build(
        paginator_spec({"type": "CursorPagination", "cursor_value": "{{ response.next }}"}, {"type": "RequestPath"}),
        mask=lambda text: text.replace("s3cret", "****"),
    )
    pager = paginator.start()
    url = "https://api.test/v1/items?key=s3cret&page=2"
    pager.advance(response({"next": url}), [1], VARIABLES)
    with pytest.raises(PaginationLoopError) as caught:
        pager.advance(response({"next": url}, request=HttpRequest("GET", url)), [1], VARIABLES)
    assert "s3cret" not in str(caught.value)
    assert "key=****" in str(caught.value)


def test_repeated_structured_tokens_are_detected():
    paginator = build(paginator_spec({"type": "CursorPagination", "cursor_value": "{{ response.next }}"}))
    pager = paginator.start()
    assert pager.advance(response({"next": {"b": 1, "a": [1, 2]}}), [1], VARIABLES)
    with pytest.raises(PaginationLoopError):
        pager.advance(response({"next": {"a": [1, 2], "b": 1}}), [1], VARIABLES)


def test_a_next_url_equal_to_the_url_just_read_is_a_loop():
    paginator = build(paginator_spec(
        {"type": "CursorPagination", "cursor_value": "{{ response.next }}"}, {"type": "RequestPath"},
    ))

    def serve(request: HttpRequest) -> tuple[dict, Any]:
        return {}, {"data": [1], "next": request.full_url()}

    with pytest.raises(PaginationLoopError, match="after 1 page: the token this page was asked with"):
        read(paginator, serve)


def test_loop_detection_is_per_slice():
    paginator = build(paginator_spec({"type": "CursorPagination", "cursor_value": "{{ response.next }}"},
                                     param("cursor")))
    server = cursor_server({None: ([1], "a"), "a": ([2], None)})
    # the same tokens in another slice (another pager of the same paginator) are no loop
    assert len(read(paginator, server)[0]) == 2
    assert len(read(paginator, server)[0]) == 2


def test_pagers_of_one_paginator_are_independent():
    paginator = build(paginator_spec({"type": "PageIncrement", "page_size": 1, "start_from_page": 1,
                                      "inject_on_first_request": True}, param("page")))
    one, two = paginator.start(), paginator.start()
    one.advance(response({}), [1], VARIABLES)
    one.advance(response({}), [1], VARIABLES)
    assert (one.token, two.token) == (3, 1)


# -- PageIncrement -------------------------------------------------------------------


def page_server(items: list, page_size: int, start: int) -> Server:
    """Serves `items` in pages of `page_size`, numbered from `start`; no page parameter means `start`."""

    def serve(request: HttpRequest) -> tuple[dict, Any]:
        page = int(query(request).get("page", start))
        first = (page - start) * page_size
        return {}, {"data": items[first:first + page_size] if first >= 0 else []}

    return serve


def test_page_increment_starts_from_the_model_default_and_counts_up():
    # the model's default start_from_page is 0 and the first request carries no page number
    paginator = build(paginator_spec({"type": "PageIncrement", "page_size": 2}, param("page"), param("per_page")))
    sent, records = read(paginator, page_server(list(range(5)), 2, 0))
    assert [query(r) for r in sent] == [
        {"per_page": "2"},
        {"per_page": "2", "page": "1"},
        {"per_page": "2", "page": "2"},
    ]
    assert records == [0, 1, 2, 3, 4]


def test_page_increment_injects_the_start_page_on_the_first_request():
    paginator = build(paginator_spec(
        {"type": "PageIncrement", "page_size": 3, "start_from_page": 1, "inject_on_first_request": True},
        param("page"),
    ))
    pager = paginator.start()
    assert pager.token == 1
    assert pager.token_variables() == {"next_page_token": {"next_page_token": 1}}
    sent, records = read(paginator, page_server(list(range(6)), 3, 1))
    assert [query(r) for r in sent] == [{"page": "1"}, {"page": "2"}, {"page": "3"}]
    assert records == list(range(6))


def test_page_increment_without_page_size_stops_on_an_empty_page():
    paginator = build(paginator_spec({"type": "PageIncrement", "start_from_page": 1, "inject_on_first_request": True},
                                     param("page")))
    sent, records = read(paginator, page_server(list(range(7)), 3, 1))
    assert [query(r)["page"] for r in sent] == ["1", "2", "3", "4"]
    assert records == list(range(7))


def test_page_size_template_is_rendered_from_config():
    paginator = build(paginator_spec(
        {"type": "PageIncrement", "page_size": "{{ config.page_size }}"}, param("page"), param("size"),
    ), config={"page_size": "25"})
    parts = RequestParts()
    paginator.start().apply(parts)
    assert parts.params == {"size": 25}


@pytest.mark.parametrize("size", [0, -5, "{{ config.zero }}"])
def test_page_size_must_be_positive(size):
    with pytest.raises(ConfigError, match="`page_size` must be a positive whole number"):
        build(paginator_spec({"type": "PageIncrement", "page_size": size}), config={"zero": 0})


def test_a_page_size_that_is_not_a_number_fails_the_build():
    with pytest.raises(InterpolationError):
        build(paginator_spec({"type": "OffsetIncrement", "page_size": "{{ config.size }}"}), config={"size": "lots"})


def test_a_broken_cursor_template_fails_the_build():
    with pytest.raises(InterpolationError):
        build(paginator_spec({"type": "CursorPagination", "cursor_value": "{{ response.next "}))


# -- OffsetIncrement -----------------------------------------------------------------


def offset_server(items: list, page_size: int | None, size_param: str = "limit") -> Server:
    def serve(request: HttpRequest) -> tuple[dict, Any]:
        params = query(request)
        offset = int(params.get("offset", 0))
        size = int(params.get(size_param, page_size or 10))
        return {}, {"data": items[offset:offset + size], "page_size": size}

    return serve


def test_offset_increment_adds_the_records_read():
    paginator = build(paginator_spec(
        {"type": "OffsetIncrement", "page_size": 2, "inject_on_first_request": True}, param("offset"), param("limit"),
    ))
    sent, records = read(paginator, offset_server(list(range(5)), 2))
    assert [query(r) for r in sent] == [
        {"limit": "2", "offset": "0"},
        {"limit": "2", "offset": "2"},
        {"limit": "2", "offset": "4"},
    ]
    assert records == list(range(5))


def test_offset_increment_leaves_out_offset_zero_by_default():
    paginator = build(paginator_spec({"type": "OffsetIncrement", "page_size": 3}, param("offset")))
    pager = paginator.start()
    assert pager.token is None
    parts = RequestParts()
    pager.apply(parts)
    assert parts.params == {}
    assert pager.advance(response({}), [1, 2, 3], VARIABLES)
    assert pager.token == 3


def test_offset_page_size_can_read_the_response():
    paginator = build(paginator_spec(
        {"type": "OffsetIncrement", "page_size": "{{ response.page_size }}"}, param("offset"), param("limit"),
    ))
    pager = paginator.start()
    first = RequestParts()
    pager.apply(first)
    assert first.params == {}  # no response yet, so no page size to send
    assert pager.advance(response({"page_size": 2}), [1, 2], VARIABLES)
    second = RequestParts()
    pager.apply(second)
    assert second.params == {"limit": 2, "offset": 2}
    assert pager.advance(response({"page_size": 2}), [3], VARIABLES) is False


def test_a_response_page_size_of_zero_means_only_an_empty_page_ends():
    paginator = build(paginator_spec({"type": "OffsetIncrement", "page_size": "{{ response.page_size }}"},
                                     param("offset"), param("limit")))
    pager = paginator.start()
    assert pager.advance(response({"page_size": 0}), [1], VARIABLES)
    parts = RequestParts()
    pager.apply(parts)
    assert parts.params == {"offset": 1}
    assert pager.advance(response({"page_size": 0}), [], VARIABLES) is False


# -- NoPagination --------------------------------------------------------------------


def test_no_pagination_reads_one_page():
    paginator = build({"type": "NoPagination"})
    sent, records = read(paginator, lambda request: ({}, {"data": [1, 2], "next": "x"}))
    assert len(sent) == 1 and records == [1, 2]
    pager = paginator.start()
    parts = RequestParts(url_base=BASE_URL, path="items")
    pager.apply(parts)
    assert parts == RequestParts(url_base=BASE_URL, path="items")
    assert pager.token is None
    assert pager.token_variables() == {"next_page_token": {}}


# -- how much is rendered ------------------------------------------------------------


def test_cursor_pagination_renders_at_most_two_templates_per_page():
    engine = CountingEngine()
    paginator = build(paginator_spec(
        {"type": "CursorPagination", "cursor_value": "{{ response.next }}",
         "stop_condition": "{{ not response.next }}"},
        param("cursor"),
    ), engine=engine)
    engine.evaluations = 0
    pages = {None: (list(range(100)), "a"), "a": (list(range(100)), "b"), "b": (list(range(100)), None)}
    read(paginator, cursor_server(pages))
    # the last page stops on the stop condition without rendering the cursor
    assert engine.evaluations == 2 + 2 + 1


def test_page_and_offset_strategies_render_nothing_while_reading():
    for strategy, server in [
        ({"type": "PageIncrement", "page_size": "{{ config.size }}"}, page_server(list(range(50)), 10, 0)),
        ({"type": "OffsetIncrement", "page_size": "{{ config.size }}"}, offset_server(list(range(50)), 10)),
    ]:
        engine = CountingEngine()
        name = "page" if strategy["type"] == "PageIncrement" else "offset"
        paginator = build(paginator_spec(strategy, param(name), param("limit")), config={"size": 10}, engine=engine)
        built = engine.evaluations
        sent, records = read(paginator, server)
        assert len(sent) == 6 and records == list(range(50))
        assert engine.evaluations == built


# -- properties: a server slicing a list of N items ----------------------------------


@settings(max_examples=150, deadline=None)
@given(
    total=st.integers(0, 60),
    size=st.integers(1, 12),
    start=st.integers(0, 3),
    inject=st.booleans(),
)
def test_page_increment_reads_every_item_once(total, size, start, inject):
    items = list(range(total))
    paginator = build(paginator_spec(
        {"type": "PageIncrement", "page_size": size, "start_from_page": start, "inject_on_first_request": inject},
        param("page"), param("limit"),
    ))
    sent, records = read(paginator, page_server(items, size, start))
    assert records == items
    # full pages, then the short one (empty when N is a multiple of the page size)
    assert len(sent) == total // size + 1
    pages = [int(query(r).get("page", start)) for r in sent]
    assert pages == list(range(start, start + len(sent)))
    assert ("page" in query(sent[0])) == inject
    assert all(query(r)["limit"] == str(size) for r in sent)


@settings(max_examples=150, deadline=None)
@given(total=st.integers(0, 60), size=st.integers(1, 12), inject=st.booleans())
def test_offset_increment_reads_every_item_once(total, size, inject):
    items = list(range(total))
    paginator = build(paginator_spec(
        {"type": "OffsetIncrement", "page_size": size, "inject_on_first_request": inject},
        param("offset"), param("limit"),
    ))
    sent, records = read(paginator, offset_server(items, size))
    assert records == items
    assert len(sent) == total // size + 1
    offsets = [int(query(r).get("offset", 0)) for r in sent]
    assert offsets == [size * i for i in range(len(sent))]
    assert len(set(offsets)) == len(offsets)
    assert ("offset" in query(sent[0])) == inject


@settings(max_examples=100, deadline=None)
@given(total=st.integers(0, 60), server_size=st.integers(1, 12))
def test_without_a_page_size_the_empty_page_is_the_last(total, server_size):
    items = list(range(total))
    paginator = build(paginator_spec({"type": "OffsetIncrement"}, param("offset")))
    sent, records = read(paginator, offset_server(items, server_size))
    assert records == items
    assert len(sent) == math.ceil(total / server_size) + 1


@settings(max_examples=100, deadline=None)
@given(tokens=st.lists(st.text(alphabet="abxyz", min_size=1, max_size=4), min_size=1, max_size=15))
def test_cursor_pagination_fails_exactly_when_a_token_repeats(tokens):
    paginator = build(paginator_spec({"type": "CursorPagination", "cursor_value": "{{ response.next }}"}))
    pager = paginator.start()
    seen: set = set()
    for token in tokens:
        if token in seen:
            with pytest.raises(PaginationLoopError):
                pager.advance(response({"next": token}), [1], VARIABLES)
            return
        assert pager.advance(response({"next": token}), [1], VARIABLES)
        seen.add(token)
    assert pager.advance(response({"next": None}), [1], VARIABLES) is False


# -- a reduced page size (REDUCE_PAGE_SIZE) -------------------------------------------


def test_a_reduced_page_size_is_sent_and_judges_the_page_while_the_configured_size_stays():
    paginator = build(paginator_spec({"type": "OffsetIncrement", "page_size": 8}, param("offset"), param("limit")))
    pager = paginator.start()
    assert pager.page_size() == 8
    pager.size_override = 3
    parts = RequestParts()
    pager.apply(parts)
    assert parts.params == {"limit": 3}
    assert pager.advance(response({}), [1, 2, 3], VARIABLES)  # a full page at the reduced size is not the last
    assert pager.token == 3 and pager.page_size() == 8
    pager.size_override = None
    parts = RequestParts()
    pager.apply(parts)
    assert parts.params == {"offset": 3, "limit": 8}
    assert not pager.advance(response({}), [4, 5, 6], VARIABLES)  # 3 of 8: the last page


def test_a_reduced_page_size_goes_where_the_cursor_paginator_sends_its_size():
    paginator = build(paginator_spec({"type": "CursorPagination", "page_size": 50,
                                      "cursor_value": "{{ response.next }}"}, param("cursor"),
                                     {"type": "RequestOption", "inject_into": "body_json",
                                      "field_path": ["variables", "first"]}))
    pager = paginator.start()
    pager.size_override = 12
    parts = RequestParts(method="POST")
    pager.apply(parts)
    assert parts.json == {"variables": {"first": 12}}
