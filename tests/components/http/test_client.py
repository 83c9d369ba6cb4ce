"""The HTTP client: authentication, error handling, retries, backoff and masking."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from framework.components.context import BuildContext
from framework.components.http.client import (
    MAX_RATE_LIMITED_ATTEMPTS,
    HttpClient,
    PageSizeReductionRequired,
    PaginationResetRequired,
    RequestWindowSplitRequired,
)
from framework.components.http.error_handler import build_error_handler, default_error_handler
from framework.components.http.request import RequestParts
from framework.components.http.transport import FunctionTransport
from framework.errors import HttpStatusError, ReadError, TransportError
from framework.models.error_handling import DefaultErrorHandler
from framework.temporal.clock import FixedClock

NOW = datetime(2024, 5, 1, 12, 0, 0, tzinfo=timezone.utc)


def make_ctx():
    return BuildContext(config={}, transport=FunctionTransport(lambda r: (200, {}, {})), clock=FixedClock(NOW))


def handler(spec=None):
    model = DefaultErrorHandler.model_validate({"type": "DefaultErrorHandler", **(spec or {})})
    return build_error_handler(model, make_ctx())


def scripted(*answers):
    """A transport answering with ``answers`` in turn (an exception is raised); the last one repeats."""
    answers = list(answers)

    def answer(request):
        item = answers.pop(0) if len(answers) > 1 else answers[0]
        if isinstance(item, Exception):
            raise item
        return item

    return FunctionTransport(answer)


class Sleeps(list):
    def __call__(self, seconds):
        self.append(seconds)


class FakeAuth:
    """Puts a token in the query; ``refresh`` moves to the next token while there is one."""

    def __init__(self, *tokens):
        self.tokens = list(tokens)
        self.refreshes = 0

    def apply(self, parts):
        parts.params["api_key"] = self.tokens[0]

    def refresh(self):
        self.refreshes += 1
        if len(self.tokens) > 1:
            self.tokens.pop(0)
            return True
        return False

    def secrets(self):
        return tuple(self.tokens)


def parts():
    return RequestParts(url_base="https://api.example.com/v1", path="items", params={"page": 1})


def client(transport, error_handler=None, authenticator=None, **options):
    sleeps = Sleeps()
    built = HttpClient(transport, error_handler or default_error_handler(make_ctx()), authenticator,
                       sleep=sleeps, **options)
    return built, sleeps


# -- outcomes -------------------------------------------------------------------------


def test_success_returns_the_response():
    transport = scripted((200, {}, {"items": [1]}))
    http, sleeps = client(transport)
    response = http.send(parts())
    assert response.json() == {"items": [1]}
    assert transport.requests[0].full_url() == "https://api.example.com/v1/items?page=1"
    assert sleeps == []


def test_ignore_returns_none():
    transport = scripted((404, {}, "gone"))
    http, sleeps = client(transport, handler({"response_filters": [{"http_codes": [404], "action": "IGNORE"}]}))
    assert http.send(parts()) is None
    assert len(transport.requests) == 1 and sleeps == []


def test_retries_then_success_with_exponential_waits():
    transport = scripted((500, {}, "down"), (502, {}, "down"), (200, {}, []))
    http, sleeps = client(transport)
    assert http.send(parts()).status == 200
    assert sleeps == [10, 20]
    assert len(transport.requests) == 3


def test_retries_exhausted_says_attempts_status_and_body():
    transport = scripted((503, {}, "maintenance " * 100))
    http, sleeps = client(transport, handler({"max_retries": 2}))
    with pytest.raises(HttpStatusError) as caught:
        http.send(parts())
    error = caught.value
    assert len(transport.requests) == 3 and sleeps == [10, 20]
    assert error.status == 503 and error.failure_type == "transient_error"
    message = str(error)
    assert "gave up after 3 attempts" in message and "HTTP 503 Service Unavailable" in message
    assert "maintenance maintenance" in message
    assert len(error.reason) < 400  # the body is cut short
    assert error.request == "GET https://api.example.com/v1/items?page=1"


def test_zero_retries_fails_at_the_first_retryable_answer():
    transport = scripted((500, {}, ""))
    http, sleeps = client(transport, handler({"max_retries": 0}))
    with pytest.raises(HttpStatusError, match="gave up after 1 attempt;"):
        http.send(parts())
    assert sleeps == []


def test_rate_limited_does_not_count_towards_max_retries_and_honours_retry_after():
    transport = scripted((429, {"Retry-After": "7"}, ""), (429, {"Retry-After": "3"}, ""),
                         (429, {"Retry-After": "1"}, ""), (200, {}, {}))
    http, sleeps = client(transport, handler({"max_retries": 1}))
    assert http.send(parts()).status == 200
    assert sleeps == [7, 3, 1]
    transport = scripted((429, {"Retry-After": "1"}, ""))
    http, sleeps = client(transport, handler({"max_retries": 2}))
    with pytest.raises(HttpStatusError, match="HTTP 429"):
        http.send(parts())
    assert len(sleeps) == MAX_RATE_LIMITED_ATTEMPTS  # an API that never stops limiting still ends


def test_a_wait_past_the_limit_fails_without_sleeping():
    transport = scripted((429, {"Retry-After": "5000"}, ""))
    http, sleeps = client(transport, max_rate_limit_wait=3600)
    with pytest.raises(HttpStatusError, match="5000 s .* 3600 s") as caught:
        http.send(parts())
    assert caught.value.failure_type == "transient_error"
    assert sleeps == []


def test_waits_add_up_towards_the_limit():
    transport = scripted((500, {}, ""))
    http, sleeps = client(transport, max_rate_limit_wait=30)
    with pytest.raises(HttpStatusError, match="limit of 30 s"):
        http.send(parts())
    assert sleeps == [10, 20]  # 10 + 20 reaches the limit exactly; another 40 would pass it


def test_wait_time_from_header_over_its_maximum_fails_with_the_request():
    transport = scripted((429, {"Retry-After": "120"}, ""))
    http, sleeps = client(transport, handler({"backoff_strategies": [
        {"type": "WaitTimeFromHeader", "header": "Retry-After", "max_waiting_time_in_seconds": 60},
    ]}))
    with pytest.raises(ReadError, match="max_waiting_time_in_seconds") as caught:
        http.send(parts())
    assert caught.value.request == "GET https://api.example.com/v1/items?page=1"
    assert sleeps == []


def test_transport_errors_are_retried():
    transport = scripted(TransportError("could not connect: refused"), (200, {}, {}))
    http, sleeps = client(transport)
    assert http.send(parts()).status == 200
    assert sleeps == [10]


def test_transport_errors_exhausted():
    transport = scripted(TransportError("the request timed out after 60 s"))
    http, sleeps = client(transport, handler({"max_retries": 1}))
    with pytest.raises(TransportError) as caught:
        http.send(parts())
    assert "gave up after 2 attempts: the request timed out after 60 s" in str(caught.value)
    assert caught.value.failure_type == "transient_error"
    assert sleeps == [10]


@pytest.mark.parametrize("status, failure_type, hint", [
    (401, "config_error", "credentials in the config"),
    (403, "config_error", "credentials in the config"),
    (404, "system_error", "path"),
    (400, "system_error", "field `since` is unknown"),
])
def test_failures_raise_at_once(status, failure_type, hint):
    transport = scripted((status, {}, "field `since` is unknown"))
    http, sleeps = client(transport)
    with pytest.raises(HttpStatusError) as caught:
        http.send(parts())
    error = caught.value
    assert (error.status, error.failure_type) == (status, failure_type)
    assert hint in str(error)
    assert error.request == "GET https://api.example.com/v1/items?page=1"
    assert len(transport.requests) == 1 and sleeps == []


def test_filter_message_is_the_failure_message():
    transport = scripted((403, {}, {"detail": "missing scope read:items"}))
    http, _ = client(transport, handler({"response_filters": [{
        "http_codes": [403], "action": "FAIL", "failure_type": "config_error",
        "error_message": "Access denied: {{ response.detail }}",
    }]}))
    with pytest.raises(HttpStatusError) as caught:
        http.send(parts())
    assert caught.value.reason == "Access denied: missing scope read:items"


def test_a_non_json_body_is_returned_as_it_is():
    transport = scripted((200, {}, "<html>not json</html>"))
    http, _ = client(transport)
    assert http.send(parts()).text == "<html>not json</html>"


# -- authentication -----------------------------------------------------------------


def test_authenticator_applies_to_a_copy_of_the_parts():
    transport = scripted((200, {}, {}))
    http, _ = client(transport, authenticator=FakeAuth("tok-1"))
    original = parts()
    http.send(original)
    assert dict(transport.requests[0].params) == {"page": "1", "api_key": "tok-1"}
    assert original.params == {"page": 1}


def test_401_refreshes_once_and_retries_at_once():
    transport = scripted((401, {}, ""), (200, {}, {}))
    auth = FakeAuth("old-token", "new-token")
    http, sleeps = client(transport, handler({"max_retries": 0}), authenticator=auth)
    assert http.send(parts()).status == 200
    assert auth.refreshes == 1 and sleeps == []
    assert [dict(r.params)["api_key"] for r in transport.requests] == ["old-token", "new-token"]


def test_401_after_a_refresh_fails_without_a_second_refresh():
    transport = scripted((401, {}, ""))
    auth = FakeAuth("t1", "t2", "t3")
    http, sleeps = client(transport, authenticator=auth)
    with pytest.raises(HttpStatusError) as caught:
        http.send(parts())
    assert auth.refreshes == 1 and len(transport.requests) == 2 and sleeps == []
    assert caught.value.failure_type == "config_error"


def test_401_when_the_token_cannot_be_refreshed():
    transport = scripted((401, {}, ""))
    auth = FakeAuth("only")
    http, _ = client(transport, authenticator=auth)
    with pytest.raises(HttpStatusError, match="credentials"):
        http.send(parts())
    assert auth.refreshes == 1 and len(transport.requests) == 1


def test_refresh_is_allowed_once_per_send():
    transport = scripted((401, {}, ""), (200, {}, {}), (401, {}, ""), (200, {}, {}))
    auth = FakeAuth("a", "b", "c")
    http, _ = client(transport, authenticator=auth)
    assert http.send(parts()).status == 200
    assert http.send(parts()).status == 200
    assert auth.refreshes == 2


# -- masking ----------------------------------------------------------------------------


def test_secrets_are_masked_in_messages_and_requests():
    secret = "s3cr3t/+token"
    transport = scripted((400, {}, f"invalid api_key {secret}"))
    http, _ = client(transport, authenticator=FakeAuth(secret),
                     mask=lambda text: text.replace("acct-42", "****"))
    request = parts()
    request.path = "accounts/acct-42/items"
    with pytest.raises(HttpStatusError) as caught:
        http.send(request)
    error = caught.value
    shown = str(error)
    assert secret not in shown and "s3cr3t%2F%2Btoken" not in shown and "acct-42" not in shown
    assert "invalid api_key ****" in error.reason
    assert error.request == "GET https://api.example.com/v1/accounts/****/items?page=1&api_key=****"


def test_secrets_are_masked_when_retries_are_exhausted():
    transport = scripted((500, {}, "token tok-9 rejected"), TransportError("could not connect to ?api_key=tok-9"))
    http, _ = client(transport, handler({"max_retries": 1}), authenticator=FakeAuth("tok-9"))
    with pytest.raises(TransportError) as caught:
        http.send(parts())
    assert "tok-9" not in str(caught.value)
    assert "api_key=****" in str(caught.value)


# -- the newer actions ------------------------------------------------------------------


def _filters(status, action):
    return handler({"response_filters": [{"type": "HttpResponseFilter", "http_codes": [status], "action": action}],
                    "backoff_strategies": [{"type": "ConstantBackoffStrategy", "backoff_time_in_seconds": 1}]})


def test_reset_pagination_is_raised_to_the_page_loop_without_retrying():
    calls = []

    def answer(request):
        calls.append(request)
        return 409, {}, b"{}"

    http, sleeps = client(FunctionTransport(answer), _filters(409, "RESET_PAGINATION"))
    with pytest.raises(PaginationResetRequired, match="RESET_PAGINATION, HTTP 409"):
        http.send(parts())
    assert len(calls) == 1 and sleeps == []


def test_refresh_token_then_retry_renews_once_then_retries_with_the_backoff():
    tokens = []

    def answer(request):
        tokens.append(dict(request.params)["api_key"])
        return (403, {}, b"{}") if len(tokens) == 1 else (200, {}, b"{}")

    auth = FakeAuth("old", "new")
    http, sleeps = client(FunctionTransport(answer), _filters(403, "REFRESH_TOKEN_THEN_RETRY"), auth)
    assert http.send(parts()).status == 200
    assert tokens == ["old", "new"] and auth.refreshes == 1 and sleeps == [1]


def test_refresh_token_then_retry_after_a_renewal_fails_as_a_config_error():
    auth = FakeAuth("token-old", "token-new", "token-newer")
    http, _ = client(FunctionTransport(lambda r: (403, {}, b"{}")), _filters(403, "REFRESH_TOKEN_THEN_RETRY"), auth)
    with pytest.raises(HttpStatusError, match="again after the access token was renewed") as caught:
        http.send(parts())
    assert caught.value.failure_type == "config_error" and auth.refreshes == 1


def test_refresh_token_then_retry_without_a_renewable_token_retries_up_to_max_retries():
    auth = FakeAuth("only")
    spec = _filters(403, "REFRESH_TOKEN_THEN_RETRY")
    spec.max_retries = 2
    http, sleeps = client(FunctionTransport(lambda r: (403, {}, b"{}")), spec, auth)
    with pytest.raises(HttpStatusError, match="gave up after 3 attempts"):
        http.send(parts())
    assert sleeps == [1, 1]


def test_a_failed_renewal_that_is_passing_keeps_the_old_token_and_retries():
    class Flaky(FakeAuth):
        def refresh(self):
            self.refreshes += 1
            raise ReadError("token endpoint down", failure_type="transient_error")

    answers = iter([(403, {}, b"{}"), (200, {}, b"{}")])
    auth = Flaky("old")
    http, _ = client(FunctionTransport(lambda r: next(answers)), _filters(403, "REFRESH_TOKEN_THEN_RETRY"), auth)
    assert http.send(parts()).status == 200 and auth.refreshes == 1


def test_split_request_window_is_raised_to_the_page_loop():
    http, sleeps = client(FunctionTransport(lambda r: (500, {}, b"{}")), _filters(500, "SPLIT_REQUEST_WINDOW"))
    with pytest.raises(RequestWindowSplitRequired, match="SPLIT_REQUEST_WINDOW, HTTP 500"):
        http.send(parts())
    assert sleeps == []


def test_reduce_page_size_is_raised_to_the_page_loop_with_the_filters_message():
    spec = handler({"response_filters": [{"type": "HttpResponseFilter", "http_codes": [502],
                                          "action": "REDUCE_PAGE_SIZE", "error_message": "too heavy"}]})
    http, sleeps = client(FunctionTransport(lambda r: (502, {}, b"{}")), spec)
    with pytest.raises(PageSizeReductionRequired) as caught:
        http.send(parts())
    assert caught.value.detail == "too heavy" and sleeps == []


# -- requests in flight ---------------------------------------------------------------


class Slots:
    """Records what the client does with the sync's permits, beside the transport's and the sleeps' events."""

    def __init__(self, events):
        self.events = events

    def acquire(self):
        self.events.append("acquire")

    def release(self, status):
        self.events.append(("release", status))


def test_each_attempt_holds_a_permit_while_it_is_sent_and_a_backoff_holds_none():
    events: list = []
    answers = iter([(429, {"Retry-After": "2"}, ""), (200, {}, {})])

    def answer(request):
        events.append("send")
        return next(answers)

    http = HttpClient(FunctionTransport(answer), default_error_handler(make_ctx()), sleep=lambda s: events.append(
        ("sleep", s)), in_flight=Slots(events))
    assert http.send(parts()).status == 200
    assert events == ["acquire", "send", ("release", 429), ("sleep", 2), "acquire", "send", ("release", 200)]


def test_a_connection_failure_frees_the_permit_without_a_status():
    events: list = []
    http, _ = client(scripted(TransportError("refused"), (200, {}, {})), in_flight=Slots(events))
    assert http.send(parts()).status == 200
    assert [e for e in events if e != "acquire"] == [("release", None), ("release", 200)]
