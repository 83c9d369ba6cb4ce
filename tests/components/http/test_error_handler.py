"""Error handlers: the default mapping, response filters, backoff strategies, composites."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from email.utils import format_datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st
from requests.structures import CaseInsensitiveDict

from framework.components import context as registry
from framework.components.http.error_handler import (
    ExponentialBackoff,
    FilterErrorHandler,
    FirstMatchErrorHandler,
    Resolution,
    build_error_handler,
    default_error_handler,
    default_resolution,
    excerpt,
    retry_after_seconds,
)
from framework.components.http.request import HttpRequest
from framework.components.http.transport import (
    FunctionTransport,
    HttpResponse,
)
from framework.errors import ConfigError, ReadError, TransportError
from framework.models.error_handling import CompositeErrorHandler, DefaultErrorHandler
from framework.temporal.clock import FixedClock

NOW = datetime(2024, 5, 1, 12, 0, 0, tzinfo=timezone.utc)
REQUEST = HttpRequest("GET", "https://api.example.com/v1/items")


def make_ctx(config=None, clock=None):
    return registry.BuildContext(
        config=config or {"retries": "3", "team": "blue"},
        transport=FunctionTransport(lambda request: (200, {}, {})),
        clock=clock or FixedClock(NOW),
    )


def response(status=200, body=b"", headers=None):
    if isinstance(body, str):
        body = body.encode()
    return HttpResponse(status, CaseInsensitiveDict(headers or {}), body, REQUEST)


def handler(spec=None, ctx=None):
    spec = {"type": "DefaultErrorHandler", **(spec or {})}
    return build_error_handler(DefaultErrorHandler.model_validate(spec), ctx or make_ctx())


# -- the default mapping ------------------------------------------------------------


@pytest.mark.parametrize(
    "status, action, failure_type",
    [
        (200, "SUCCESS", None),
        (201, "SUCCESS", None),
        (204, "SUCCESS", None),
        (302, "SUCCESS", None),
        (400, "FAIL", "system_error"),
        (401, "FAIL", "config_error"),
        (403, "FAIL", "config_error"),
        (404, "FAIL", "system_error"),
        (408, "RETRY", "transient_error"),
        (409, "FAIL", "system_error"),
        (418, "FAIL", "system_error"),
        (422, "FAIL", "system_error"),
        (429, "RATE_LIMITED", "transient_error"),
        (500, "RETRY", "transient_error"),
        (502, "RETRY", "transient_error"),
        (503, "RETRY", "transient_error"),
        (599, "RETRY", "transient_error"),
    ],
)
def test_default_mapping(status, action, failure_type):
    resolution = default_error_handler(make_ctx()).interpret(response(status))
    assert (resolution.action, resolution.failure_type) == (action, failure_type)
    assert (resolution.message is None) == (action == "SUCCESS")


def test_default_messages_say_what_to_fix():
    assert "credentials in the config" in default_resolution(response(401)).message
    assert "credentials in the config" in default_resolution(response(403)).message
    message_404 = default_resolution(response(404)).message
    assert "HTTP 404 Not Found" in message_404 and "path" in message_404
    message_400 = default_resolution(response(400, '{"error": "bad  field\\n`since`"}')).message
    assert "HTTP 400 Bad Request" in message_400 and 'bad field\\n`since`' in message_400


def test_default_message_body_excerpt_is_short():
    message = default_resolution(response(400, "x" * 1000)).message
    assert "x" * 200 + "..." in message and "x" * 201 not in message


def test_excerpt_flattens_and_cuts():
    assert excerpt("a\n  b\tc") == "a b c"
    assert excerpt("abcdef", 3) == "abc..."
    assert excerpt("abc", 3) == "abc"


def test_transport_error_is_retried_as_transient():
    resolution = default_error_handler(make_ctx()).interpret(None, TransportError("could not connect: refused"))
    assert resolution == Resolution("RETRY", "transient_error", "could not connect: refused")


def test_default_handler_defaults():
    built = default_error_handler(make_ctx())
    assert built.max_retries == 5
    assert handler().max_retries == 5


def test_max_retries_template_renders_an_integer():
    assert handler({"max_retries": "{{ config['retries'] }}"}).max_retries == 3


def test_negative_max_retries_is_refused():
    with pytest.raises(ConfigError, match="max_retries"):
        handler({"max_retries": -1})


# -- response filters ---------------------------------------------------------------


def test_filter_by_http_code():
    built = handler({"response_filters": [{"http_codes": [404, 410], "action": "IGNORE"}]})
    assert built.interpret(response(404)).action == "IGNORE"
    assert built.interpret(response(410)).action == "IGNORE"
    assert built.interpret(response(403)).action == "FAIL"  # no filter matched: default mapping


def test_filter_by_message_in_the_body():
    built = handler({"response_filters": [
        {"error_message_contains": "rate limit exceeded", "action": "RATE_LIMITED"},
    ]})
    assert built.interpret(response(200, '{"note": "rate limit exceeded"}')).action == "RATE_LIMITED"
    assert built.interpret(response(200, '{"note": "fine"}')).action == "SUCCESS"


def test_filter_by_predicate_on_body_and_headers():
    built = handler({"response_filters": [
        {"predicate": "{{ response.get('error', {}).get('code') == 'LIMIT' }}", "action": "RETRY"},
        {"predicate": "{{ headers['X-Fail'] == 'yes' }}", "action": "FAIL", "failure_type": "config_error"},
    ]})
    assert built.interpret(response(200, b'{"error": {"code": "LIMIT"}}')).action == "RETRY"
    assert built.interpret(response(200, b'{"error": {"code": "OTHER"}}')).action == "SUCCESS"
    failed = built.interpret(response(200, b"{}", {"x-fail": "yes"}))
    assert (failed.action, failed.failure_type) == ("FAIL", "config_error")


def test_predicate_sees_an_empty_mapping_when_the_body_is_not_json():
    built = handler({"response_filters": [{"predicate": "{{ response == {} }}", "action": "IGNORE"}]})
    assert built.interpret(response(500, "<html>oops</html>")).action == "IGNORE"
    assert built.interpret(response(500, b'{"a": 1}')).action == "RETRY"


def test_first_matching_filter_wins():
    built = handler({"response_filters": [
        {"http_codes": [500], "action": "IGNORE"},
        {"http_codes": [500], "action": "FAIL"},
    ]})
    assert built.interpret(response(500)).action == "IGNORE"


def test_error_message_template_uses_response_headers_config_and_parameters():
    built = handler({
        "response_filters": [{
            "$parameters": {"name": "items"},  # the loader gives each component its effective parameters
            "http_codes": [403],
            "action": "FAIL",
            "failure_type": "config_error",
            "error_message": "{{ parameters.name }}: {{ response.detail }} ({{ headers['X-Req'] }}, "
                             "{{ config.team }})",
        }],
    })
    resolution = built.interpret(response(403, b'{"detail": "no scope"}', {"X-Req": "r1"}))
    assert resolution == Resolution("FAIL", "config_error", "items: no scope (r1, blue)")


def test_filter_with_only_a_failure_type_keeps_the_default_action():
    built = handler({"response_filters": [{"http_codes": [500], "failure_type": "config_error"}]})
    resolution = built.interpret(response(500))
    assert (resolution.action, resolution.failure_type) == ("RETRY", "config_error")


def test_fail_filter_on_a_success_status_has_a_failure_type_and_message():
    built = handler({"response_filters": [{"error_message_contains": "denied", "action": "FAIL"}]})
    resolution = built.interpret(response(200, "access denied"))
    assert resolution.action == "FAIL" and resolution.failure_type == "system_error"
    assert "access denied" in resolution.message


def test_filters_do_not_apply_to_transport_errors():
    built = handler({"response_filters": [{"predicate": "{{ true }}", "action": "IGNORE"}]})
    assert built.interpret(None, TransportError("timed out")).action == "RETRY"


def test_a_failing_predicate_is_a_read_error():
    built = handler({"response_filters": [{"predicate": "{{ response.a + 1 }}", "action": "IGNORE"}]})
    with pytest.raises(ReadError, match="response filter"):
        built.interpret(response(500, b"{}"))


# -- backoff --------------------------------------------------------------------------


def test_default_backoff_is_exponential_with_factor_five():
    built = default_error_handler(make_ctx())
    assert [built.backoff(response(500), attempt) for attempt in (1, 2, 3, 4)] == [10, 20, 40, 80]
    assert built.backoff(None, 1) == 10


def test_default_backoff_honours_retry_after_seconds():
    assert default_error_handler(make_ctx()).backoff(response(429, headers={"Retry-After": "7"}), 3) == 7


def test_default_backoff_honours_retry_after_http_date():
    later = format_datetime(NOW + timedelta(seconds=90), usegmt=True)
    assert default_error_handler(make_ctx()).backoff(response(503, headers={"retry-after": later}), 1) == 90


def test_retry_after_in_the_past_or_unreadable():
    clock = FixedClock(NOW)
    past = format_datetime(NOW - timedelta(hours=1), usegmt=True)
    assert retry_after_seconds(response(503, headers={"Retry-After": past}), clock) == 0
    assert retry_after_seconds(response(503, headers={"Retry-After": "soon"}), clock) is None
    assert retry_after_seconds(response(503), clock) is None


def test_constant_backoff():
    built = handler({"backoff_strategies": [{"type": "ConstantBackoffStrategy", "backoff_time_in_seconds": 3}]})
    assert [built.backoff(response(500), attempt) for attempt in (1, 2, 5)] == [3, 3, 3]


def test_exponential_backoff_factor_from_config():
    built = handler(
        {"backoff_strategies": [{"type": "ExponentialBackoffStrategy", "factor": "{{ config.factor }}"}]},
        make_ctx({"factor": 1.5}),
    )
    assert [built.backoff(response(500), attempt) for attempt in (0, 1, 2, 3)] == [1.5, 3, 6, 12]


def test_wait_time_from_header_with_regex():
    built = handler({"backoff_strategies": [
        {"type": "WaitTimeFromHeader", "header": "X-Wait", "regex": r"wait=(\d+(?:\.\d+)?)s"},
    ]})
    assert built.backoff(response(429, headers={"x-wait": "please wait=2.5s"}), 1) == 2.5


def test_wait_time_from_header_falls_back_when_the_header_is_missing():
    built = handler({"backoff_strategies": [
        {"type": "WaitTimeFromHeader", "header": "X-Wait"},
        {"type": "ConstantBackoffStrategy", "backoff_time_in_seconds": 4},
    ]})
    assert built.backoff(response(429, headers={"X-Wait": "6"}), 1) == 6
    assert built.backoff(response(429), 1) == 4
    assert built.backoff(response(429, headers={"X-Wait": "not a number"}), 1) == 4


def test_wait_time_from_header_longer_than_the_maximum_fails():
    built = handler({"backoff_strategies": [
        {"type": "WaitTimeFromHeader", "header": "Retry-After", "max_waiting_time_in_seconds": 60},
    ]})
    assert built.backoff(response(429, headers={"Retry-After": "60"}), 1) == 60
    with pytest.raises(ReadError, match="max_waiting_time_in_seconds") as caught:
        built.backoff(response(429, headers={"Retry-After": "61"}), 1)
    assert caught.value.failure_type == "transient_error"
    assert "61 s" in str(caught.value)


def test_wait_until_time_from_header():
    clock = FixedClock(NOW)
    built = handler(
        {"backoff_strategies": [{"type": "WaitUntilTimeFromHeader", "header": "X-RateLimit-Reset"}]},
        make_ctx(clock=clock),
    )
    reset = str(int(NOW.timestamp()) + 42)
    assert built.backoff(response(429, headers={"X-RateLimit-Reset": reset}), 1) == 42
    clock.advance(timedelta(seconds=40))
    assert built.backoff(response(429, headers={"X-RateLimit-Reset": reset}), 1) == 2
    clock.advance(timedelta(seconds=100))
    assert built.backoff(response(429, headers={"X-RateLimit-Reset": reset}), 1) == 0


def test_wait_until_time_from_header_min_wait_and_maximum():
    built = handler({"backoff_strategies": [{
        "type": "WaitUntilTimeFromHeader", "header": "X-Reset", "min_wait": "{{ config.min }}",
        "max_waiting_time_in_seconds": 100,
    }]}, make_ctx({"min": 5}))
    now = int(NOW.timestamp())
    assert built.backoff(response(429, headers={"X-Reset": str(now + 1)}), 1) == 5
    assert built.backoff(response(429, headers={"X-Reset": str(now + 30)}), 1) == 30
    with pytest.raises(ReadError, match="longer than max_waiting_time_in_seconds"):
        built.backoff(response(429, headers={"X-Reset": str(now + 101)}), 1)


def test_invalid_regex_is_reported_when_built():
    with pytest.raises(ConfigError, match="not a valid regular expression"):
        handler({"backoff_strategies": [{"type": "WaitTimeFromHeader", "header": "X", "regex": "(("}]})


@given(factor=st.floats(min_value=0, max_value=1e6), attempt=st.integers(min_value=0, max_value=10_000))
def test_exponential_backoff_is_non_negative_and_monotone(factor, attempt):
    strategy = ExponentialBackoff(factor)
    wait = strategy.wait(None, attempt)
    assert wait >= 0
    assert strategy.wait(None, attempt + 1) >= wait


@given(attempt=st.integers(min_value=1, max_value=1000),
       retry_after=st.one_of(st.none(), st.integers(min_value=-100, max_value=10**6)))
def test_default_backoff_is_non_negative_and_honours_retry_after(attempt, retry_after):
    headers = {} if retry_after is None else {"Retry-After": str(retry_after)}
    wait = default_error_handler(make_ctx()).backoff(response(503, headers=headers), attempt)
    assert wait >= 0
    if retry_after is not None:
        assert wait == max(0, retry_after)


# -- composite ------------------------------------------------------------------------


def composite(handlers, ctx=None):
    handlers = [{"type": "DefaultErrorHandler", **h} for h in handlers]  # the loader fills default types
    model = CompositeErrorHandler.model_validate({"type": "CompositeErrorHandler", "error_handlers": handlers})
    return build_error_handler(model, ctx or make_ctx())


def test_composite_first_handler_with_a_matching_filter_decides():
    built = composite([
        {"response_filters": [{"http_codes": [404], "action": "IGNORE"}], "max_retries": 2,
         "backoff_strategies": [{"type": "ConstantBackoffStrategy", "backoff_time_in_seconds": 1}]},
        {"response_filters": [{"http_codes": [429, 404], "action": "RETRY"}], "max_retries": 7,
         "backoff_strategies": [{"type": "ConstantBackoffStrategy", "backoff_time_in_seconds": 9}]},
    ])
    assert isinstance(built, FirstMatchErrorHandler)
    assert built.max_retries == 7
    assert built.interpret(response(404)).action == "IGNORE"
    assert built.interpret(response(429)).action == "RETRY"
    assert built.backoff(response(429), 1) == 9  # from the handler that decided
    assert built.backoff(response(500), 1) == 1  # nobody matched: the first handler's backoff
    assert built.interpret(response(500)).action == "RETRY"  # the default mapping
    assert built.interpret(response(401)).action == "FAIL"


def test_nested_composites():
    built = composite([
        {"type": "CompositeErrorHandler", "error_handlers": [
            {"type": "DefaultErrorHandler", "response_filters": [{"http_codes": [418], "action": "IGNORE"}]},
        ]},
        {"response_filters": [{"http_codes": [500], "action": "FAIL"}]},
    ])
    assert built.interpret(response(418)).action == "IGNORE"
    assert built.interpret(response(500)).action == "FAIL"


def test_builders_are_found_through_the_catalog():
    ctx = make_ctx()
    built = ctx.build(DefaultErrorHandler.model_validate({"type": "DefaultErrorHandler", "max_retries": 1}), ("x",))
    assert isinstance(built, FilterErrorHandler) and built.max_retries == 1
    model = CompositeErrorHandler.model_validate(
        {"type": "CompositeErrorHandler", "error_handlers": [{"type": "DefaultErrorHandler"}]})
    assert isinstance(ctx.build(model, ("x",)), FirstMatchErrorHandler)
