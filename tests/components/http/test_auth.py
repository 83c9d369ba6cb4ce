"""Runtime authenticators: their effect on a request, token renewal, login, selection and errors."""

from __future__ import annotations

import base64
import threading
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from framework.components import context as registry
from framework.components.http.auth import base, oauth, selective, session_token, static, tokens
from framework.components.http.auth import jwt as jwt_auth
from framework.components.http.request import RequestParts
from framework.components.http.transport import FunctionTransport
from framework.errors import AuthenticationError, ConfigError, TransportError
from framework.models import (
    ApiKeyAuthenticator,
    BasicHttpAuthenticator,
    BearerAuthenticator,
    NoAuth,
    OAuthAuthenticator,
    SelectiveAuthenticator,
    SessionTokenAuthenticator,
)
from framework.temporal.clock import FixedClock

START = datetime(2024, 1, 1, 12, 0, tzinfo=timezone.utc)
TOKEN_URL = "https://auth.example.com/oauth/token"


def _no_network(request):
    raise AssertionError(f"unexpected request {request.method} {request.url}")


class _Context(registry.BuildContext):
    """A BuildContext whose nested builds use the builder table directly, so they do not import
    the other builder modules (some may not exist yet)."""

    def build(self, model, path):
        return registry.builder_of(model.type)(model, self, path)


def make_ctx(config=None, handler=_no_network, clock=None, sleeps=None):
    transport = FunctionTransport(handler)
    ctx = _Context(
        config=config or {},
        transport=transport,
        clock=clock or FixedClock(START),
        sleep=(sleeps.append if sleeps is not None else (lambda s: None)),
    )
    return ctx, transport


def build(model, ctx):
    """Build through the registry table directly, so other (unfinished) builder modules are not needed."""
    return registry.builder_of(model.type)(model, ctx, ("auth",))


def applied(authenticator) -> RequestParts:
    parts = RequestParts(url_base="https://api.example.com", path="/orders")
    authenticator.apply(parts)
    return parts


# --- static credentials ---------------------------------------------------------------


def test_no_auth_adds_nothing():
    ctx, _ = make_ctx()
    runtime = build(NoAuth.model_validate({"type": "NoAuth"}), ctx)
    parts = applied(runtime)
    assert parts.headers == {} and parts.params == {} and parts.json is None and parts.data is None
    assert runtime.refresh() is False
    assert runtime.secrets() == ()


def test_api_key_in_header_from_config():
    ctx, _ = make_ctx({"api_key": "k-123"})
    model = ApiKeyAuthenticator.model_validate(
        {"type": "ApiKeyAuthenticator", "api_token": "{{ config['api_key'] }}", "header": "X-API-Key"}
    )
    runtime = build(model, ctx)
    assert applied(runtime).headers == {"X-API-Key": "k-123"}
    assert runtime.secrets() == ("k-123",)
    assert runtime.refresh() is False
    assert "k-123" not in repr(runtime)


@pytest.mark.parametrize(
    "inject_into, where",
    [
        ("request_parameter", lambda p: p.params),
        ("header", lambda p: p.headers),
        ("body_data", lambda p: p.data),
        ("body_json", lambda p: p.json),
    ],
)
def test_api_key_injected_by_request_option(inject_into, where):
    ctx, _ = make_ctx({"api_key": "k-123"})
    model = ApiKeyAuthenticator.model_validate(
        {
            "type": "ApiKeyAuthenticator",
            "api_token": "{{ config['api_key'] }}",
            "inject_into": {"type": "RequestOption", "inject_into": inject_into, "field_name": "api_token"},
        }
    )
    parts = applied(build(model, ctx))
    assert where(parts) == {"api_token": "k-123"}


def test_api_key_header_name_is_rendered_with_parameters():
    ctx, _ = make_ctx({"api_key": "k"})
    model = ApiKeyAuthenticator.model_validate(
        {"type": "ApiKeyAuthenticator", "$parameters": {"h": "X-Key"}, "api_token": "{{ config.api_key }}",
         "header": "{{ parameters.h }}"}
    )
    assert applied(build(model, ctx)).headers == {"X-Key": "k"}


def test_bearer_header():
    ctx, _ = make_ctx({"access_token": "tok-9"})
    runtime = build(BearerAuthenticator.model_validate(
        {"type": "BearerAuthenticator", "api_token": "{{ config['access_token'] }}"}), ctx)
    assert applied(runtime).headers == {"Authorization": "Bearer tok-9"}
    assert runtime.secrets() == ("tok-9",)
    assert "tok-9" not in repr(runtime)


@settings(max_examples=50, deadline=None)
@given(user=st.text(alphabet=st.characters(blacklist_characters=":", blacklist_categories=("Cs",)), max_size=12),
       password=st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12))
def test_basic_header_decodes_to_user_and_password(user, password):
    ctx, _ = make_ctx({"u": user, "p": password})
    runtime = build(BasicHttpAuthenticator.model_validate(
        {"type": "BasicHttpAuthenticator", "username": "{{ config.u }}", "password": "{{ config.p }}"}), ctx)
    scheme, _, blob = applied(runtime).headers["Authorization"].partition(" ")
    assert scheme == "Basic"
    assert base64.b64decode(blob).decode("utf-8") == f"{user}:{password}"
    assert blob in runtime.secrets()


def test_basic_known_value_and_secrets():
    ctx, _ = make_ctx({"u": "aladdin", "p": "opensesame"})
    runtime = build(BasicHttpAuthenticator.model_validate(
        {"type": "BasicHttpAuthenticator", "username": "{{ config.u }}", "password": "{{ config.p }}"}), ctx)
    assert applied(runtime).headers == {"Authorization": "Basic YWxhZGRpbjpvcGVuc2VzYW1l"}
    assert "opensesame" in runtime.secrets()
    assert "aladdin" not in runtime.secrets()
    assert "opensesame" not in repr(runtime) and "YWxhZGRpbjpvcGVuc2VzYW1l" not in repr(runtime)


def test_basic_with_empty_password_treats_user_name_as_the_secret():
    ctx, _ = make_ctx({"key": "the-key"})
    runtime = build(BasicHttpAuthenticator.model_validate(
        {"type": "BasicHttpAuthenticator", "username": "{{ config.key }}"}), ctx)
    assert applied(runtime).headers["Authorization"] == "Basic " + base64.b64encode(b"the-key:").decode()
    assert "the-key" in runtime.secrets()


# --- OAuth --------------------------------------------------------------------------------

OAUTH_CONFIG = {"client_id": "cid", "client_secret": "csecret-XYZ", "refresh_token": "rtok-ABC"}


def oauth_model(**extra):
    data = {
        "type": "OAuthAuthenticator",
        "token_refresh_endpoint": TOKEN_URL,
        "client_id": "{{ config['client_id'] }}",
        "client_secret": "{{ config['client_secret'] }}",
        "refresh_token": "{{ config['refresh_token'] }}",
    }
    data.update(extra)
    return OAuthAuthenticator.model_validate(data)


class TokenServer:
    """A fake token endpoint handing out access-1, access-2, ... with a lifetime of ``expires_in``."""

    def __init__(self, expires_in=3600, extra=None):
        self.issued = 0
        self.expires_in = expires_in
        self.extra = extra or {}
        self.forms: list[dict] = []

    def __call__(self, request):
        assert request.method == "POST" and request.url == TOKEN_URL
        self.forms.append(dict(request.data))
        self.issued += 1
        body = {"access_token": f"access-{self.issued}", **self.extra}
        if self.expires_in is not None:
            body["expires_in"] = self.expires_in
        return 200, {"Content-Type": "application/json"}, body


def test_oauth_refresh_grant_sends_form_body_and_uses_token():
    server = TokenServer()
    ctx, transport = make_ctx(OAUTH_CONFIG, server)
    runtime = build(oauth_model(scopes=["read", "write"],
                                refresh_request_body={"audience": "{{ config.client_id }}-api"},
                                refresh_request_headers={"X-Trace": "1"}), ctx)
    assert transport.requests == []  # nothing fetched until first used
    assert applied(runtime).headers == {"Authorization": "Bearer access-1"}
    assert server.forms == [{
        "grant_type": "refresh_token",
        "client_id": "cid",
        "client_secret": "csecret-XYZ",
        "refresh_token": "rtok-ABC",
        "scopes": ["read", "write"],  # as Airbyte sends them: `scopes=read&scopes=write`
        "audience": "cid-api",
    }]
    assert transport.requests[0].headers == {"X-Trace": "1"}
    applied(runtime)
    assert server.issued == 1  # the token is reused while valid


def test_oauth_client_credentials_omits_refresh_token_and_uses_custom_names():
    server = TokenServer()
    ctx, _ = make_ctx(OAUTH_CONFIG, server)
    model = oauth_model(grant_type="client_credentials", client_id_name="app_id", client_secret_name="app_secret",
                        grant_type_name="gt", refresh_token=None)
    assert applied(build(model, ctx)).headers["Authorization"] == "Bearer access-1"
    assert server.forms == [{"gt": "client_credentials", "app_id": "cid", "app_secret": "csecret-XYZ"}]


def test_oauth_custom_response_key_names():
    def handler(request):
        return 200, {}, {"data": 1, "token": "tk", "ttl": 10}

    ctx, _ = make_ctx(OAUTH_CONFIG, handler)
    runtime = build(oauth_model(access_token_name="token", expires_in_name="ttl"), ctx)
    assert applied(runtime).headers["Authorization"] == "Bearer tk"


def test_oauth_renews_a_minute_before_expiry():
    server = TokenServer(expires_in=3600)
    clock = FixedClock(START)
    ctx, _ = make_ctx(OAUTH_CONFIG, server, clock)
    runtime = build(oauth_model(), ctx)
    assert applied(runtime).headers["Authorization"] == "Bearer access-1"
    clock.advance(timedelta(seconds=3600 - 61))
    assert applied(runtime).headers["Authorization"] == "Bearer access-1"
    clock.advance(timedelta(seconds=2))  # now 59 s before expiry
    assert applied(runtime).headers["Authorization"] == "Bearer access-2"
    assert server.issued == 2


def test_oauth_short_lived_token_is_not_renewed_on_every_request():
    server = TokenServer(expires_in=30)
    clock = FixedClock(START)
    ctx, _ = make_ctx(OAUTH_CONFIG, server, clock)
    runtime = build(oauth_model(), ctx)
    applied(runtime)
    clock.advance(timedelta(seconds=10))
    applied(runtime)
    assert server.issued == 1
    clock.advance(timedelta(seconds=10))
    applied(runtime)
    assert server.issued == 2


def test_oauth_expiry_as_datetime_with_format():
    server = TokenServer(expires_in="2024-01-01 13:00:00")
    clock = FixedClock(START)
    ctx, _ = make_ctx(OAUTH_CONFIG, server, clock)
    runtime = build(oauth_model(token_expiry_date_format="%Y-%m-%d %H:%M:%S"), ctx)
    applied(runtime)
    clock.advance(timedelta(minutes=58))
    applied(runtime)
    assert server.issued == 1
    clock.advance(timedelta(minutes=1, seconds=1))
    applied(runtime)
    assert server.issued == 2


def test_oauth_without_lifetime_keeps_token_until_refresh():
    server = TokenServer(expires_in=None)
    clock = FixedClock(START)
    ctx, _ = make_ctx(OAUTH_CONFIG, server, clock)
    runtime = build(oauth_model(), ctx)
    applied(runtime)
    clock.advance(timedelta(days=30))
    applied(runtime)
    assert server.issued == 1
    assert runtime.refresh() is True
    assert applied(runtime).headers["Authorization"] == "Bearer access-2"


def test_oauth_refresh_forces_a_new_token():
    server = TokenServer()
    ctx, _ = make_ctx(OAUTH_CONFIG, server)
    runtime = build(oauth_model(), ctx)
    applied(runtime)
    assert runtime.refresh() is True
    assert applied(runtime).headers["Authorization"] == "Bearer access-2"
    assert server.issued == 2


def test_oauth_refresh_after_another_thread_renewed_does_not_fetch_again():
    server = TokenServer()
    ctx, _ = make_ctx(OAUTH_CONFIG, server)
    runtime = build(oauth_model(), ctx)
    applied(runtime)  # this thread sent access-1

    def other():
        applied(runtime)
        runtime.refresh()  # the other thread got a 401 too, and renewed

    thread = threading.Thread(target=other)
    thread.start()
    thread.join()
    assert server.issued == 2
    assert runtime.refresh() is True  # access-1 was refused here; access-2 is already there
    assert server.issued == 2
    assert applied(runtime).headers["Authorization"] == "Bearer access-2"


def test_oauth_concurrent_first_use_fetches_once():
    server = TokenServer()
    ctx, _ = make_ctx(OAUTH_CONFIG, server)
    runtime = build(oauth_model(), ctx)
    seen = []
    threads = [threading.Thread(target=lambda: seen.append(applied(runtime).headers["Authorization"]))
               for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert seen == ["Bearer access-1"] * 8
    assert server.issued == 1


def test_oauth_access_token_from_config_used_until_expiry():
    server = TokenServer()
    clock = FixedClock(START)
    config = {**OAUTH_CONFIG, "access_token": "given-token", "expiry": "2024-01-01T12:30:00Z"}
    ctx, _ = make_ctx(config, server, clock)
    runtime = build(oauth_model(access_token_value="{{ config.access_token }}",
                                token_expiry_date="{{ config.expiry }}"), ctx)
    assert applied(runtime).headers["Authorization"] == "Bearer given-token"
    clock.advance(timedelta(minutes=28))
    assert applied(runtime).headers["Authorization"] == "Bearer given-token"
    clock.advance(timedelta(minutes=1, seconds=1))
    assert applied(runtime).headers["Authorization"] == "Bearer access-1"
    assert "given-token" not in runtime.secrets() and "access-1" in runtime.secrets()


def test_oauth_access_token_without_endpoint_cannot_refresh():
    ctx, _ = make_ctx({"access_token": "only-token"})
    model = OAuthAuthenticator.model_validate(
        {"type": "OAuthAuthenticator", "access_token_value": "{{ config.access_token }}"})
    runtime = build(model, ctx)
    assert applied(runtime).headers["Authorization"] == "Bearer only-token"
    assert runtime.refresh() is False


def test_oauth_missing_access_token_and_no_endpoint_is_a_config_error():
    ctx, _ = make_ctx({})
    model = OAuthAuthenticator.model_validate(
        {"type": "OAuthAuthenticator", "access_token_value": "{{ config.access_token }}"})
    with pytest.raises(ConfigError, match="token_refresh_endpoint"):
        build(model, ctx)


def test_oauth_secrets_and_repr():
    ctx, _ = make_ctx(OAUTH_CONFIG, TokenServer())
    runtime = build(oauth_model(), ctx)
    assert set(runtime.secrets()) == {"csecret-XYZ", "rtok-ABC"}
    applied(runtime)
    assert set(runtime.secrets()) == {"access-1", "csecret-XYZ", "rtok-ABC"}
    text = repr(runtime)
    assert TOKEN_URL in text
    for secret in ("access-1", "csecret-XYZ", "rtok-ABC"):
        assert secret not in text


def _assert_clean(message: str) -> None:
    for secret in ("csecret-XYZ", "rtok-ABC"):
        assert secret not in message


@pytest.mark.parametrize("status", [400, 401, 403])
def test_oauth_refused_credentials(status):
    ctx, transport = make_ctx(OAUTH_CONFIG, lambda r: (status, {}, {"error": "invalid_grant",
                                                                     "error_description": "bad rtok-ABC"}))
    runtime = build(oauth_model(), ctx)
    with pytest.raises(AuthenticationError) as info:
        applied(runtime)
    message = str(info.value)
    assert TOKEN_URL in message and str(status) in message and "invalid_grant" in message
    assert "client_id" in message and "client_secret" in message and "refresh_token" in message
    assert info.value.failure_type == "config_error"
    _assert_clean(message)
    assert len(transport.requests) == 1  # a 4xx is not retried


def test_oauth_retries_server_errors_then_succeeds():
    answers = [(503, {}, ""), (429, {"Retry-After": "7"}, ""), (200, {}, {"access_token": "ok"})]
    sleeps: list = []
    ctx, transport = make_ctx(OAUTH_CONFIG, lambda r: answers.pop(0), sleeps=sleeps)
    runtime = build(oauth_model(), ctx)
    assert applied(runtime).headers["Authorization"] == "Bearer ok"
    assert len(transport.requests) == 3
    assert sleeps == [1.0, 7.0]


def test_oauth_honours_a_retry_after_http_date_by_the_injected_clock():
    # START is 12:00:00; the token endpoint asks to come back at 12:00:09, then in an hour (cut to a minute)
    answers = [
        (503, {"Retry-After": "Mon, 01 Jan 2024 12:00:09 GMT"}, ""),
        (429, {"Retry-After": "Mon, 01 Jan 2024 13:00:00 GMT"}, ""),
        (429, {"Retry-After": "Mon, 01 Jan 2024 11:00:00 GMT"}, ""),  # already past: no wait
        (200, {}, {"access_token": "ok"}),
    ]
    sleeps: list = []
    ctx, transport = make_ctx(OAUTH_CONFIG, lambda r: answers.pop(0), sleeps=sleeps)
    assert applied(build(oauth_model(), ctx)).headers["Authorization"] == "Bearer ok"
    assert len(transport.requests) == 4
    assert sleeps == [9.0, 60.0, 0.0]


def test_session_login_honours_a_retry_after_http_date():
    answers = [(503, {"retry-after": "Mon, 01 Jan 2024 12:00:30 GMT"}, ""), (200, {}, {"data": {"token": "t"}})]
    sleeps: list = []
    ctx, _ = make_ctx(SESSION_CONFIG, lambda r: answers.pop(0), sleeps=sleeps)
    assert applied(build(session_model(), ctx)).headers["Authorization"] == "Bearer t"
    assert sleeps == [30.0]


def test_oauth_gives_up_after_retries_on_server_errors():
    sleeps: list = []
    ctx, transport = make_ctx(OAUTH_CONFIG, lambda r: (500, {}, "oops"), sleeps=sleeps)
    runtime = build(oauth_model(), ctx)
    with pytest.raises(AuthenticationError) as info:
        applied(runtime)
    assert len(transport.requests) == tokens.TOKEN_RETRIES + 1
    assert len(sleeps) == tokens.TOKEN_RETRIES
    assert "500" in str(info.value) and info.value.failure_type == "transient_error"
    _assert_clean(str(info.value))


def test_oauth_connection_failure():
    def handler(request):
        raise TransportError("could not connect: Name or service not known")

    ctx, transport = make_ctx(OAUTH_CONFIG, handler)
    with pytest.raises(AuthenticationError) as info:
        applied(build(oauth_model(), ctx))
    assert "could not connect" in str(info.value) and TOKEN_URL in str(info.value)
    assert len(transport.requests) == tokens.TOKEN_RETRIES + 1


@pytest.mark.parametrize(
    "body, expected",
    [("<html>nope</html>", "not a JSON object"), ({"token_type": "bearer"}, "no `access_token`"),
     ([1], "not a JSON object")],
)
def test_oauth_unusable_answer(body, expected):
    ctx, _ = make_ctx(OAUTH_CONFIG, lambda r: (200, {}, body))
    with pytest.raises(AuthenticationError) as info:
        applied(build(oauth_model(), ctx))
    assert expected in str(info.value) and TOKEN_URL in str(info.value)
    assert "check client_id" in str(info.value)
    _assert_clean(str(info.value))


def test_oauth_endpoint_masked_in_messages():
    ctx, _ = make_ctx({**OAUTH_CONFIG, "tenant": "tenant-secret"}, lambda r: (401, {}, ""))
    ctx = _Context(config=ctx.config, transport=ctx.transport, clock=ctx.clock, sleep=ctx.sleep,
                   mask=lambda text: text.replace("tenant-secret", "****"))
    runtime = build(oauth_model(token_refresh_endpoint="https://auth.example.com/{{ config.tenant }}/token"), ctx)
    with pytest.raises(AuthenticationError) as info:
        applied(runtime)
    assert "tenant-secret" not in str(info.value) and "https://auth.example.com/****/token" in str(info.value)
    assert "tenant-secret" not in repr(runtime)


def test_oauth_bad_expiry_value_names_the_setting():
    ctx, _ = make_ctx(OAUTH_CONFIG, lambda r: (200, {}, {"access_token": "t", "expires_in": "soon"}))
    with pytest.raises(AuthenticationError, match="token_expiry_date_format"):
        applied(build(oauth_model(), ctx))


# --- session tokens ---------------------------------------------------------------------

LOGIN_URL = "https://api.example.com/v1/login"


def session_model(**extra):
    data = {
        "type": "SessionTokenAuthenticator",
        "login_requester": {
            "type": "HttpRequester",
            "url_base": "https://api.example.com/v1",
            "path": "/login",
            "http_method": "POST",
            "request_body_json": {"user": "{{ config.user }}", "auth": {"password": "{{ config.password }}"}},
            "request_headers": {"X-App": "{{ config.app }}"},
        },
        "session_token_path": ["data", "token"],
        "request_authentication": {"type": "Bearer"},
    }
    data.update(extra)
    return SessionTokenAuthenticator.model_validate(data)


SESSION_CONFIG = {"user": "ann", "password": "pw-S3CRET", "app": "shop"}


class LoginServer:
    def __init__(self):
        self.logins = 0

    def __call__(self, request):
        assert request.url.startswith(LOGIN_URL)
        self.logins += 1
        return 200, {}, {"data": {"token": f"sess-{self.logins}"}}


def test_session_token_login_and_bearer():
    server = LoginServer()
    ctx, transport = make_ctx(SESSION_CONFIG, server)
    runtime = build(session_model(), ctx)
    assert transport.requests == []
    assert applied(runtime).headers == {"Authorization": "Bearer sess-1"}
    login = transport.requests[0]
    assert login.method == "POST" and login.url == LOGIN_URL
    assert login.json == {"user": "ann", "auth": {"password": "pw-S3CRET"}}
    assert login.headers == {"X-App": "shop"}
    applied(runtime)
    assert server.logins == 1
    assert runtime.secrets() == ("sess-1",)
    assert "sess-1" not in repr(runtime) and "pw-S3CRET" not in repr(runtime)


def test_session_token_api_key_with_template():
    ctx, _ = make_ctx(SESSION_CONFIG, LoginServer())
    model = session_model(request_authentication={
        "type": "ApiKey", "api_token": "Token {{ session_token }}",
        "inject_into": {"type": "RequestOption", "inject_into": "request_parameter", "field_name": "session"},
    })
    runtime = build(model, ctx)
    assert applied(runtime).params == {"session": "Token sess-1"}
    assert set(runtime.secrets()) == {"sess-1", "Token sess-1"}


def test_session_token_api_key_default_template_is_the_token():
    ctx, _ = make_ctx(SESSION_CONFIG, LoginServer())
    model = session_model(request_authentication={
        "type": "ApiKey", "inject_into": {"type": "RequestOption", "inject_into": "header", "field_name": "X-Session"},
    })
    assert applied(build(model, ctx)).headers == {"X-Session": "sess-1"}


def test_session_token_expires_after_duration():
    server = LoginServer()
    clock = FixedClock(START)
    ctx, _ = make_ctx(SESSION_CONFIG, server, clock)
    runtime = build(session_model(expiration_duration="PT1H"), ctx)
    applied(runtime)
    clock.advance(timedelta(minutes=59))
    assert applied(runtime).headers["Authorization"] == "Bearer sess-1"
    clock.advance(timedelta(minutes=1))
    assert applied(runtime).headers["Authorization"] == "Bearer sess-2"


def test_session_token_without_duration_never_expires_but_refreshes():
    server = LoginServer()
    clock = FixedClock(START)
    ctx, _ = make_ctx(SESSION_CONFIG, server, clock)
    runtime = build(session_model(), ctx)
    applied(runtime)
    clock.advance(timedelta(days=365))
    applied(runtime)
    assert server.logins == 1
    assert runtime.refresh() is True
    assert applied(runtime).headers["Authorization"] == "Bearer sess-2"


def test_session_login_requester_with_its_own_authenticator_and_form_body():
    server = LoginServer()
    ctx, transport = make_ctx({**SESSION_CONFIG, "login_key": "lk-1"}, server)
    model = session_model(login_requester={
        "type": "HttpRequester", "url_base": "https://api.example.com", "path": "v1/login", "http_method": "POST",
        "authenticator": {"type": "ApiKeyAuthenticator", "api_token": "{{ config.login_key }}",
                          "header": "X-Login-Key"},
        "request_body_data": {"username": "{{ config.user }}"},
        "request_parameters": {"v": "2"},
    })
    runtime = build(model, ctx)
    applied(runtime)
    login = transport.requests[0]
    assert login.headers == {"X-Login-Key": "lk-1"}
    assert login.data == {"username": "ann"} and login.json is None
    assert login.params == (("v", "2"),)
    assert "lk-1" in runtime.secrets()


def test_session_login_refused():
    ctx, _ = make_ctx(SESSION_CONFIG, lambda r: (401, {}, {"message": "bad pw-S3CRET"}))
    with pytest.raises(AuthenticationError) as info:
        applied(build(session_model(), ctx))
    message = str(info.value)
    assert LOGIN_URL in message and "401" in message and "login credentials" in message
    assert "pw-S3CRET" not in message


def test_session_login_answer_without_token():
    ctx, _ = make_ctx(SESSION_CONFIG, lambda r: (200, {}, {"data": {"session": "x"}}))
    with pytest.raises(AuthenticationError, match="data.token"):
        applied(build(session_model(), ctx))


# --- selection ----------------------------------------------------------------------------


def selective_model():
    return SelectiveAuthenticator.model_validate({
        "type": "SelectiveAuthenticator",
        "authenticator_selection_path": ["credentials", "auth_type"],
        "authenticators": {
            "token": {"type": "BearerAuthenticator", "api_token": "{{ config.credentials.token }}"},
            "key": {"type": "ApiKeyAuthenticator", "api_token": "{{ config.credentials.key }}", "header": "X-Key"},
        },
    })


def test_selective_picks_by_config_value():
    ctx, _ = make_ctx({"credentials": {"auth_type": "key", "key": "kk"}})
    assert applied(build(selective_model(), ctx)).headers == {"X-Key": "kk"}
    ctx, _ = make_ctx({"credentials": {"auth_type": "token", "token": "tt"}})
    assert applied(build(selective_model(), ctx)).headers == {"Authorization": "Bearer tt"}


def test_selective_unknown_value():
    ctx, _ = make_ctx({"credentials": {"auth_type": "oauth"}})
    with pytest.raises(ConfigError) as info:
        build(selective_model(), ctx)
    message = str(info.value)
    assert "credentials.auth_type" in message and "'oauth'" in message
    assert "`token`" in message and "`key`" in message


def test_selective_missing_value():
    ctx, _ = make_ctx({"credentials": {}})
    with pytest.raises(ConfigError, match="no value at `credentials.auth_type`"):
        build(selective_model(), ctx)


def test_registered_for_every_authenticator_type():
    for name, module in (("NoAuth", base), ("ApiKeyAuthenticator", static), ("BearerAuthenticator", static),
                         ("BasicHttpAuthenticator", static), ("OAuthAuthenticator", oauth),
                         ("JwtAuthenticator", jwt_auth), ("SessionTokenAuthenticator", session_token),
                         ("LegacySessionTokenAuthenticator", session_token),
                         ("SelectiveAuthenticator", selective)):
        assert registry.builder_of(name).__module__ == module.__name__
