"""framework.components.http.response_limits: a cap on a response's decompressed bytes and a deadline per
attempt, against an API that sends a gzip bomb, a huge page and a body one byte a second (fakes.hostile_api).

Sizes are scaled down through the settings (a 4 MiB cap against a 64 MiB bomb), so each test takes a second
or two at most."""

from __future__ import annotations

import resource
import threading
import time
from typing import Any

import pytest
from fakes.hostile_api import HostileApi
from hypothesis import given
from hypothesis import strategies as st

from framework.components.context import BuildContext
from framework.components.http.request import HttpRequest
from framework.components.http.response_limits import (
    DEADLINE_ENV,
    DEFAULT_MAX_RESPONSE_BYTES,
    DEFAULT_REQUEST_DEADLINE,
    MAX_BYTES_ENV,
    Reaper,
    ResponseLimits,
    ResponseTooLargeError,
    limits_from_environment,
    parse_seconds,
    parse_size,
    requester_limits,
)
from framework.components.http.transport import FunctionTransport, RequestsTransport
from framework.errors import ConfigError, TransportError
from framework.models import HttpRequester

MIB = 1 << 20


@pytest.fixture(scope="module")
def api():
    with HostileApi() as server:
        yield server


# -- the settings -------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "size"), [("1000", 1000), ("256MiB", 256 * MIB), ("1 GB", 10 ** 9),
                                            ("1.5KiB", 1536), ("2g", 2 * 10 ** 9)])
def test_a_size_reads_with_or_without_a_unit(text: str, size: int) -> None:
    assert parse_size(text, "--max-response-size") == size


@pytest.mark.parametrize("text", ["", "0", "-5", "ten", "5 parsecs", "1e9"])
def test_a_size_that_is_none_is_refused_naming_the_setting(text: str) -> None:
    with pytest.raises(ConfigError, match="--max-response-size is .* such as 256MiB"):
        parse_size(text, "--max-response-size")


@given(st.integers(min_value=1, max_value=10 ** 15))
def test_any_whole_number_of_bytes_is_itself(size: int) -> None:
    assert parse_size(str(size), "x") == size


@pytest.mark.parametrize("text", ["0", "-1", "soon", "inf", "nan"])
def test_a_deadline_must_be_a_positive_number_of_seconds(text: str) -> None:
    with pytest.raises(ConfigError, match="--request-deadline is .* positive number of seconds"):
        parse_seconds(text, "--request-deadline")


def test_the_environment_gives_the_flags_values_and_else_the_defaults() -> None:
    assert limits_from_environment({}) == ResponseLimits(DEFAULT_MAX_RESPONSE_BYTES, DEFAULT_REQUEST_DEADLINE)
    given_ = limits_from_environment({MAX_BYTES_ENV: "8MiB", DEADLINE_ENV: "2.5"})
    assert (given_.max_bytes, given_.deadline, given_.max_bytes_setting) == (8 * MIB, 2.5, "--max-response-size")


def test_a_requester_setting_wins_over_the_flag_and_the_rest_stays() -> None:
    base = ResponseLimits(8 * MIB, 30.0, "--max-response-size")
    assert requester_limits(base, None, None) is base
    own = requester_limits(base, 1000, None)
    assert (own.max_bytes, own.deadline, own.max_bytes_setting) == (1000, 30.0,
                                                                    "the requester's `max_response_bytes`")
    assert requester_limits(base, None, 5.0).deadline == 5.0


@pytest.mark.parametrize(("field", "value"), [("max_response_bytes", 0), ("request_deadline", -1)])
def test_the_manifest_refuses_a_limit_that_is_not_positive(field: str, value: Any) -> None:
    with pytest.raises(ValueError, match=f"`{field}` must be a positive"):
        HttpRequester.model_validate({"type": "HttpRequester", "url_base": "https://x", "path": "/",
                                      field: value})


# -- the reaper ---------------------------------------------------------------------------------------------

def test_the_reaper_calls_what_is_due_and_not_what_was_cancelled() -> None:
    reaper = Reaper()
    called: list[str] = []
    done = threading.Event()
    now = time.monotonic()
    cancelled = reaper.register(now + 0.05, lambda: called.append("cancelled"))
    reaper.register(now + 0.2, lambda: (called.append("late"), done.set()))
    reaper.register(now + 0.1, lambda: called.append("early"))
    reaper.cancel(cancelled)
    assert done.wait(5)
    assert called == ["early", "late"]


def test_the_reaper_holds_no_more_than_a_few_cancelled_entries() -> None:
    reaper = Reaper()
    far = time.monotonic() + 600
    for _ in range(10_000):
        reaper.cancel(reaper.register(far, lambda: None))
    assert len(reaper) <= 64 + 1


# -- the transport ------------------------------------------------------------------------------------------

def test_a_gzip_bomb_stops_at_the_cap_in_bounded_memory(api: HostileApi) -> None:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(ResponseTooLargeError, match=r"larger than 4,194,304 bytes once decompressed .*"
                                                    r"`max_response_bytes` or run-manifest's --max-response-size"):
        RequestsTransport().send(HttpRequest("GET", api.url + "/bomb?mib=64"), 10, ResponseLimits(4 * MIB))
    grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grown_mib < 32  # the 64 MiB it unpacks to were never held


def test_a_page_over_the_cap_fails_and_one_under_it_is_read(api: HostileApi) -> None:
    with pytest.raises(ResponseTooLargeError):
        RequestsTransport().send(HttpRequest("GET", api.url + "/page?records=50000"), 10, ResponseLimits(MIB))
    response = RequestsTransport().send(HttpRequest("GET", api.url + "/page?records=500"), 10, ResponseLimits(MIB))
    assert len(response.json()["data"]) == 500


def test_a_body_that_drips_ends_at_the_deadline_though_every_read_is_quick(api: HostileApi) -> None:
    with pytest.raises(TransportError, match="longer than its deadline of 1.5 s .*--request-deadline"):
        RequestsTransport().send(HttpRequest("GET", api.url + "/drip?seconds=30"), 10,
                                 ResponseLimits(deadline=1.5))
    # the client hung up at the deadline: the server got to send only part of the 30-byte body
    assert 0 < api.drip_sent() < 30


def test_the_function_transport_keeps_the_cap_too() -> None:
    transport = FunctionTransport(lambda request: (200, {}, b"x" * 2000))
    with pytest.raises(ResponseTooLargeError):
        transport.send(HttpRequest("GET", "https://x/"), 1, ResponseLimits(1000))
    assert len(transport.send(HttpRequest("GET", "https://x/"), 1, ResponseLimits(2000)).content) == 2000


# -- a requester: the manifest's settings, no retry of a bomb, a deadline retried like a timeout ------------------

def _requester(url: str, path: str, **fields: Any):
    model = HttpRequester.model_validate({
        "type": "HttpRequester", "url_base": url, "path": path, **fields,
        "error_handler": {"type": "DefaultErrorHandler", "max_retries": 2,
                          "backoff_strategies": [{"type": "ConstantBackoffStrategy", "backoff_time_in_seconds": 0}]},
    })
    ctx = BuildContext(config={}, transport=RequestsTransport(), sleep=lambda seconds: None)
    return ctx.build(model, ("definitions", "requester"))


def test_a_bomb_is_asked_for_once_and_the_error_names_the_requester_setting(api: HostileApi) -> None:
    before = api.hits["/bomb"]
    requester = _requester(api.url, "/bomb", max_response_bytes=2 * MIB, request_parameters={"mib": "40"})
    with pytest.raises(ResponseTooLargeError) as caught:
        requester.send(requester.parts({}))
    assert api.hits["/bomb"] - before == 1
    error = caught.value
    assert error.failure_type == "config_error"
    assert "the cap set by the requester's `max_response_bytes`" in str(error)
    assert error.request is not None and "/bomb" in error.request


def test_a_request_past_its_deadline_is_retried_like_a_timeout(api: HostileApi) -> None:
    before = api.hits["/drip"]
    requester = _requester(api.url, "/drip", request_deadline=1.0, request_parameters={"seconds": "30"})
    with pytest.raises(TransportError, match="gave up after 3 attempts: .*deadline of 1 s"):
        requester.send(requester.parts({}))
    assert api.hits["/drip"] - before == 3
    assert 0 < api.drip_sent() < 30  # each attempt hung up at its deadline, long before the body was whole


def test_the_flags_reach_a_requester_that_sets_nothing(api: HostileApi, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MAX_BYTES_ENV, "1MiB")
    requester = _requester(api.url, "/page", request_parameters={"records": "50000"})
    with pytest.raises(ResponseTooLargeError, match="the cap set by --max-response-size"):
        requester.send(requester.parts({}))
