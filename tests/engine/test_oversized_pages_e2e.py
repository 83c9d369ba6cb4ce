"""A page past the response size cap, end to end over HTTP (protocol mode's read): a retriever without a
paginator whose records sit in a list at its field_path reads them as the body streams in; any other fails at
once, naming the setting, and is not asked for again. Sizes are scaled down through `max_response_bytes`."""

from __future__ import annotations

import gzip

import orjson
from engine.test_reading import paginator, requester, selector, source, stream
from engine.test_reading import run as run  # noqa: F401  (the fixture)
from fakes.api_server import Reply

CAP = 64 * 1024
RECORDS = [{"id": i, "name": f"record {i}", "padding": "x" * 40} for i in range(20_000)]  # about 1.3 MB
PAGE = orjson.dumps({"meta": {"count": len(RECORDS)}, "data": RECORDS, "next": None})


def capped(path: str, *field_path: str, **more) -> dict:
    return stream(requester_=requester(path, max_response_bytes=CAP), selector_=selector(*field_path), **more)


def test_a_page_past_the_cap_lands_whole_when_its_records_stream(run, fake_api):
    fake_api.route("GET", "/items", Reply(200, PAGE, {"Content-Type": "application/json"}))
    result = run(source(capped("/items", "data")))
    assert not result.failed, result.output
    records = result.records()
    assert len(records) == len(RECORDS) and len({r["id"] for r in records}) == len(RECORDS)
    assert records[-1] == RECORDS[-1]


def test_a_compressed_page_past_the_cap_streams_too(run, fake_api):
    fake_api.route("GET", "/items", Reply(200, gzip.compress(PAGE), {"Content-Type": "application/json",
                                                                      "Content-Encoding": "gzip"}))
    result = run(source(capped("/items", "data")))
    assert not result.failed, result.output
    assert len(result.records()) == len(RECORDS)


def test_a_paginated_page_past_the_cap_fails_at_once_naming_the_setting(run, fake_api):
    fake_api.route("GET", "/items", Reply(200, PAGE, {"Content-Type": "application/json"}))
    pages = paginator({"type": "CursorPagination", "cursor_value": "{{ response.next }}",
                       "stop_condition": "{{ not response.next }}"})
    result = run(source(capped("/items", "data", paginator=pages)))
    assert result.failed and result.records() == []
    [error] = result.errors()
    assert "larger than 65,536 bytes once decompressed (the cap set by the requester's `max_response_bytes`)" \
        in error["message"]
    assert error["failure_type"] == "config_error"
    assert len(fake_api.requests) == 1  # not retried


def test_a_bomb_past_the_cap_that_holds_no_records_fails_without_a_retry(run, fake_api):
    fake_api.route("GET", "/items", Reply(200, gzip.compress(bytes(4 << 20)), {"Content-Type": "application/json",
                                                                              "Content-Encoding": "gzip"}))
    result = run(source(capped("/items", "data")))
    assert result.failed and result.records() == []
    [error] = result.errors()
    assert "past the response size cap" in error["message"] and "is not JSON after 0 records (lexical error: " \
        "invalid char in json text); check what the API sends" in error["message"]
    assert len(fake_api.requests) == 1
