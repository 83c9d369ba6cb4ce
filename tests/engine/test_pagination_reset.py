"""HttpResponseFilter's newer actions end to end against the fake API: RESET_PAGINATION with each
`pagination_reset` (none, RESET, SPLIT_USING_CURSOR, limits), REFRESH_TOKEN_THEN_RETRY, and the
actions accepted but not run (REDUCE_PAGE_SIZE, SPLIT_REQUEST_WINDOW)."""

from __future__ import annotations

from typing import Any

from engine import test_reading as reading
from engine.test_reading import ITEMS, option, paginator, requester, source, stream
from fakes.api_server import ApiError, Reply

run = reading.run  # the fixture: write a manifest, read every stream against the fake API

NO_WAIT = [{"type": "ConstantBackoffStrategy", "backoff_time_in_seconds": 0}]
ORDERS = [{"id": i, "updated_at": f"2024-01-{1 + i // 3:02d}T{i % 3:02d}:00:00Z"} for i in range(12)]


def resetting(filters: list[dict], **more: Any) -> dict:
    return requester(error_handler={"type": "DefaultErrorHandler", "backoff_strategies": NO_WAIT,
                                    "response_filters": filters}, **more)


RESET_ON_409 = [{"type": "HttpResponseFilter", "http_codes": [409], "action": "RESET_PAGINATION"}]
OFFSET = paginator({"type": "OffsetIncrement", "page_size": 3}, page_token_option=option("request_parameter", "offset"),
                   page_size_option=option("request_parameter", "limit"))


def offset_stream(filters: list[dict] = RESET_ON_409, **more: Any) -> dict:
    return stream(requester_=resetting(filters), paginator=OFFSET, **more)


def test_reset_pagination_restarts_the_slice_once_and_hands_out_what_it_reads_again(run, fake_api):
    calls = []

    def answer(request):
        offset = int(request.param("offset") or 0)
        calls.append(offset)
        if offset == 6 and calls.count(6) == 1:
            return Reply(409, {"error": "snapshot expired, start again"})
        return {"data": ITEMS[offset: offset + 3][: 3 if offset < 9 else 0]}

    fake_api.route("GET", "/items", answer)
    result = run(source(offset_stream()))
    assert calls == [0, 3, 6, 0, 3, 6, 9]
    assert [r["id"] for r in result.records()] == [1, 2, 3, 4, 5, 6] + list(range(1, 10))
    assert not result.failed


def test_a_second_reset_of_the_same_slice_fails_the_read(run, fake_api):
    fake_api.route("GET", "/items", lambda r: Reply(409, {"error": "again"}) if r.param("offset") == "3"
                   else {"data": ITEMS[:3]})
    result = run(source(offset_stream()))
    (error,) = result.errors()
    assert "pagination was restarted (RESET_PAGINATION) 2 times for the same slice" in error["message"]
    assert error["failure_type"] == "system_error"
    assert [r.param("offset") for r in fake_api.requests] == [None, "3", None, "3"]


def test_limits_restart_after_so_many_records_and_split_using_cursor_moves_the_window_start(run, fake_api):
    def answer(request):
        since = request.param("since")
        kept = [o for o in ORDERS if o["updated_at"] >= since]
        offset = int(request.param("offset") or 0)
        return {"data": kept[offset: offset + 3]}

    fake_api.route("GET", "/items", answer)
    manifest = source(stream(
        requester_=requester(), paginator=OFFSET,
        incremental_sync={"type": "DatetimeBasedCursor", "cursor_field": "updated_at",
                          "datetime_format": "%Y-%m-%dT%H:%M:%SZ", "start_datetime": "2024-01-01T00:00:00Z",
                          "end_datetime": "2024-01-05T00:00:00Z",
                          "start_time_option": option("request_parameter", "since")},
    ))
    manifest["streams"][0]["retriever"]["pagination_reset"] = {
        "type": "PaginationReset", "action": "SPLIT_USING_CURSOR",
        "limits": {"type": "PaginationResetLimits", "number_of_records": 6}}
    result = run(manifest)
    ids = [r["id"] for r in result.records()]
    # 6 records, then again from the 6th's cursor value (the record at that value comes twice), ...
    assert ids == [0, 1, 2, 3, 4, 5, 5, 6, 7, 8, 9, 10, 10, 11]
    sinces = [r.param("since") for r in fake_api.requests]
    assert sinces[:2] == ["2024-01-01T00:00:00Z"] * 2
    assert sinces[2] == ORDERS[5]["updated_at"] and sinces[-1] == ORDERS[10]["updated_at"]
    assert not result.failed


def test_split_using_cursor_without_progress_fails_at_once(run, fake_api):
    fake_api.route("GET", "/items", lambda r: Reply(409, {"error": "again"}))
    manifest = source(stream(requester_=resetting(RESET_ON_409), paginator=OFFSET, incremental_sync={
        "type": "DatetimeBasedCursor", "cursor_field": "updated_at", "datetime_format": "%Y-%m-%dT%H:%M:%SZ",
        "start_datetime": "2024-01-01T00:00:00Z", "end_datetime": "2024-01-02T00:00:00Z"}))
    manifest["streams"][0]["retriever"]["pagination_reset"] = {"type": "PaginationReset",
                                                               "action": "SPLIT_USING_CURSOR"}
    result = run(manifest)
    (error,) = result.errors()
    assert "for the same window without reading further" in error["message"]
    assert len(fake_api.requests) == 1


def test_refresh_token_then_retry_renews_the_token_once(run, fake_api):
    issued = iter(["access-1", "access-2", "access-3"])
    fake_api.route("POST", "/oauth/token", lambda r: {"access_token": next(issued), "expires_in": 3600})

    def answer(request):
        if request.headers.get("Authorization") != "Bearer access-2":
            return Reply(403, {"error": "token revoked"})
        return {"data": ITEMS[:2]}

    fake_api.route("GET", "/items", answer)
    manifest = reading.oauth_manifest()
    manifest["streams"][0]["retriever"]["requester"]["error_handler"] = {
        "type": "DefaultErrorHandler", "backoff_strategies": NO_WAIT, "response_filters": [
            {"type": "HttpResponseFilter", "http_codes": [403], "action": "REFRESH_TOKEN_THEN_RETRY"}]}
    result = run(manifest, {"client_secret": "cs", "refresh_token": "rt"})
    assert result.records() == ITEMS[:2]
    assert len(fake_api.received("/oauth/token")) == 2


def test_refresh_token_then_retry_rejected_again_is_a_config_error(run, fake_api):
    fake_api.route("POST", "/oauth/token", lambda r: {"access_token": "same", "expires_in": 3600})
    fake_api.route("GET", "/items", Reply(403, {"error": "no access"}))
    manifest = reading.oauth_manifest()
    manifest["streams"][0]["retriever"]["requester"]["error_handler"] = {
        "type": "DefaultErrorHandler", "backoff_strategies": NO_WAIT, "response_filters": [
            {"type": "HttpResponseFilter", "http_codes": [403], "action": "REFRESH_TOKEN_THEN_RETRY"}]}
    result = run(manifest, {"client_secret": "cs", "refresh_token": "rt"})
    (error,) = result.errors()
    assert error["failure_type"] == "config_error"
    assert "rejected the request again after the access token was renewed" in error["message"]
    assert len(fake_api.received("/items")) == 2


def test_refresh_token_then_retry_with_a_fixed_key_is_a_plain_retry(run, fake_api):
    answers = iter([Reply(403, {"error": "flaky"}), {"data": ITEMS[:1]}])
    fake_api.route("GET", "/items", lambda r: next(answers))
    manifest = source(stream(requester_=resetting(
        [{"type": "HttpResponseFilter", "http_codes": [403], "action": "REFRESH_TOKEN_THEN_RETRY"}],
        authenticator={"type": "BearerAuthenticator", "api_token": "fixed"})))
    result = run(manifest)
    assert result.records() == ITEMS[:1]


def reducing(size_limit: int, **reduction: Any) -> dict:
    """A stream whose API answers 502 to pages of more than ``size_limit`` records."""
    manifest = source(stream(
        requester_=resetting([{"type": "HttpResponseFilter", "http_codes": [502], "action": "REDUCE_PAGE_SIZE",
                               "error_message": "page too heavy"}]),
        paginator=paginator({"type": "OffsetIncrement", "page_size": 8},
                            page_token_option=option("request_parameter", "offset"),
                            page_size_option=option("request_parameter", "limit"))))
    manifest["streams"][0]["retriever"]["page_size_reduction"] = {"type": "PageSizeReduction", **reduction}
    return manifest


def heavy_pages(size_limit: int):
    def answer(request):
        limit, offset = int(request.param("limit")), int(request.param("offset") or 0)
        if limit > size_limit:
            raise ApiError(502, "too heavy")
        return {"data": ITEMS[offset: offset + limit]}

    return answer


def test_reduce_page_size_asks_for_the_same_page_with_fewer_records_and_keeps_the_size(run, fake_api):
    fake_api.route("GET", "/items", heavy_pages(3))
    result = run(reducing(3, backoff_seconds=1))
    assert [r["id"] for r in result.records()] == [i["id"] for i in ITEMS]
    sent = [(r.param("offset"), r.param("limit")) for r in fake_api.requests]
    assert sent[:3] == [(None, "8"), (None, "4"), (None, "2")]  # 8 // 2, then 4 // 2: 2 records a page
    assert all(limit == "2" for _, limit in sent[3:])  # NEVER: the reduced size stays
    assert result.sleeps[:2] == [1, 2]  # backoff_seconds times the attempts in a row


def test_after_successful_page_comes_back_to_the_configured_size(run, fake_api):
    fake_api.route("GET", "/items", heavy_pages(4))
    result = run(reducing(4, backoff_seconds=0, reset_policy="AFTER_SUCCESSFUL_PAGE"))
    assert [r["id"] for r in result.records()] == [i["id"] for i in ITEMS]
    limits = [r.param("limit") for r in fake_api.requests]
    assert limits[:4] == ["8", "4", "8", "4"]


def test_reduce_page_size_gives_up_at_the_minimum_with_the_failure_message(run, fake_api):
    fake_api.route("GET", "/items", heavy_pages(0))
    result = run(reducing(0, backoff_seconds=0, minimum_page_size=2, retries_at_minimum_page_size=1,
                          failure_message="Select fewer fields."))
    (error,) = result.errors()
    assert error["failure_type"] == "transient_error"
    assert "smallest page size allowed (2 records)" in error["message"] and "Select fewer fields." in error["message"]
    assert "page too heavy" in error["message"]
    assert [r.param("limit") for r in fake_api.requests] == ["8", "4", "2", "2"]


def splitting(**more: Any) -> dict:
    manifest = source(stream(
        requester_=resetting([{"type": "HttpResponseFilter", "http_codes": [413], "action": "SPLIT_REQUEST_WINDOW",
                               "error_message": "window too large"}]),
        incremental_sync={"type": "DatetimeBasedCursor", "cursor_field": "updated_at",
                          "datetime_format": "%Y-%m-%dT%H:%M:%SZ", "start_datetime": "2024-01-01T00:00:00Z",
                          "end_datetime": "2024-01-04T23:59:59Z", "step": "P30D", "cursor_granularity": "PT1S",
                          "start_time_option": option("request_parameter", "since"),
                          "end_time_option": option("request_parameter", "until")}))
    manifest["streams"][0]["retriever"]["request_window_splitting"] = {"type": "RequestWindowSplitting", **more}
    return manifest


def windowed(longest_hours: float):
    """Orders in ``[since, until]``; a window longer than ``longest_hours`` is answered 413."""
    from datetime import datetime

    def answer(request):
        since, until = request.param("since"), request.param("until")
        hours = (datetime.fromisoformat(until.replace("Z", "+00:00"))
                 - datetime.fromisoformat(since.replace("Z", "+00:00"))).total_seconds() / 3600
        if hours > longest_hours:
            return Reply(413, {"error": "too much"})
        return {"data": [o for o in ORDERS if since <= o["updated_at"] <= until]}

    return answer


def test_split_request_window_reads_the_refused_window_as_halves_in_order(run, fake_api):
    fake_api.route("GET", "/items", windowed(48))
    result = run(splitting())
    assert [r["id"] for r in result.records()] == [o["id"] for o in ORDERS]
    windows = [(r.param("since"), r.param("until")) for r in fake_api.requests]
    assert windows == [
        ("2024-01-01T00:00:00Z", "2024-01-04T23:59:59Z"),  # refused: 4 days
        ("2024-01-01T00:00:00Z", "2024-01-02T23:59:59Z"),  # the halves meet one second apart
        ("2024-01-03T00:00:00Z", "2024-01-04T23:59:59Z"),
    ]
    assert not result.failed


def test_a_window_that_cannot_be_split_further_fails_with_the_failure_message(run, fake_api):
    fake_api.route("GET", "/items", windowed(1))
    result = run(splitting(min_split_window="P1D", failure_message="Lower the window."))
    (error,) = result.errors()
    assert error["failure_type"] == "transient_error"
    assert "min_split_window" in error["message"] and "Lower the window." in error["message"]
    assert "window too large" in error["message"]
    # depth first: 4 days, its first 2 days, their first day: refused and not longer than P1D, the end
    assert [r.param("until") for r in fake_api.requests] == [
        "2024-01-04T23:59:59Z", "2024-01-02T23:59:59Z", "2024-01-01T23:59:59Z"]
