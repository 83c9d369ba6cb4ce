"""What the builder shows of an exchange (framework/builder/runs.py)."""

from __future__ import annotations

import json

from framework.builder.runs import exchange_json, masked
from framework.engine.test_read import BODY_LIMIT, Exchange
from framework.masking import Masker

MASK = Masker.of(["s3cret-value"])


def test_a_large_json_body_is_pretty_printed_and_cut_with_a_mark():
    body = {"data": [{"id": i, "note": "x" * 100} for i in range(2000)]}
    shown = exchange_json(Exchange("GET http://h/x", 200, "application/json", 300_000, body, method="GET",
                                   url="http://h/x"), MASK)
    assert shown["response"]["truncated"] is True
    assert len(shown["response"]["body"]) == BODY_LIMIT
    assert shown["response"]["body"].startswith('{\n  "data": [')


def test_a_small_body_is_whole_and_secrets_in_it_are_masked():
    body = {"token": "s3cret-value", "ok": True}
    shown = exchange_json(Exchange("GET http://h/x", 200, "application/json", 40, body, method="GET",
                                   url="http://h/x", request_headers={"Authorization": "****"}), MASK)
    assert shown["response"]["truncated"] is False
    assert json.loads(shown["response"]["body"]) == {"token": "****", "ok": True}
    assert shown["request"] == {"method": "GET", "url": "http://h/x", "headers": {"Authorization": "****"},
                                "body": None}


def test_a_failed_request_shows_its_error_as_the_response():
    shown = exchange_json(Exchange("GET http://h/x", None, "", 0, error="connection refused by s3cret-value",
                                   method="GET", url="http://h/x"), MASK)
    assert shown["response"] == {"status": None, "headers": {}, "body": "connection refused by ****",
                                 "truncated": False}


def test_a_text_body_is_shown_as_kept():
    shown = exchange_json(Exchange("GET http://h/x", 500, "text/html", 10, None, text="<h1>oops</h1>",
                                   truncated=False), MASK)
    assert shown["response"]["body"] == "<h1>oops</h1>" and shown["response"]["status"] == 500


def test_records_and_states_are_masked_deep_inside():
    records = [{"id": 1, "note": "key s3cret-value here", "nested": [{"s3cret-value": ["s3cret-value", 2]}]}]
    assert masked(records, MASK) == [{"id": 1, "note": "key **** here", "nested": [{"****": ["****", 2]}]}]
    assert masked(None, MASK) is None
