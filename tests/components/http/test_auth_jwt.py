"""JwtAuthenticator, LegacySessionTokenAuthenticator and the further OAuth options (profile assertion,
rotating refresh tokens, refused refresh tokens, refresh in the query string), and ``advanced_auth``."""

from __future__ import annotations

import base64
import json
from datetime import timedelta
from urllib.parse import parse_qs, urlsplit

import jwt
import pytest
from fakes.jwt_keys import HMAC_SECRET, signing_key, verifying_key
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from framework.components.http.auth import jwt as jwt_auth
from framework.components.http.auth import oauth as oauth_auth
from framework.errors import AuthenticationError, ConfigError
from framework.models import (
    JWT_ALGORITHMS,
    AuthFlow,
    JwtAuthenticator,
    LegacySessionTokenAuthenticator,
    OAuthAuthenticator,
)
from framework.temporal.clock import FixedClock

from .test_auth import START, TOKEN_URL, applied, build, make_ctx

ALGORITHMS = [name for name in JWT_ALGORITHMS]


def jwt_model(**extra):
    data = {"type": "JwtAuthenticator", "secret_key": "{{ config['key'] }}", "algorithm": "HS256"}
    data.update(extra)
    return JwtAuthenticator.model_validate(data)


def decoded(token: str, algorithm: str, key: str | None = None, **options):
    return jwt.decode(token, key or verifying_key(algorithm), algorithms=[algorithm],
                      options={"verify_exp": False, "verify_nbf": False, "verify_iat": False,
                               "verify_aud": False, **options})


# --- JwtAuthenticator ----------------------------------------------------------------------------


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_every_algorithm_signs_a_token_its_key_verifies(algorithm):
    ctx, transport = make_ctx({"key": signing_key(algorithm), "kid": "k-1"})
    runtime = build(jwt_model(algorithm=algorithm, jwt_headers={"kid": "{{ config.kid }}"},
                              jwt_payload={"iss": "me", "aud": "api"}), ctx)
    header = applied(runtime).headers["Authorization"]
    claims = decoded(header, algorithm, audience="api", options={"verify_aud": True})
    issued = int(START.timestamp())
    assert claims == {"iss": "me", "aud": "api", "iat": issued, "nbf": issued, "exp": issued + 1200}
    assert jwt.get_unverified_header(header) == {"alg": algorithm, "typ": "JWT", "kid": "k-1"}
    assert transport.requests == []  # signing needs no request


# a text in quotes ('a', "") renders to what it quotes, as Airbyte's interpolation reads a literal: not a claim text
claim_text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=30).filter(
    lambda text: not (len(text) >= 2 and text[0] == text[-1] and text[0] in "'\""))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(algorithm=st.sampled_from(ALGORITHMS), iss=claim_text, sub=claim_text,
       extra=st.dictionaries(st.from_regex(r"[a-z][a-z_]{0,8}", fullmatch=True).filter(
           lambda k: k not in jwt_auth.RESERVED_JWT_CLAIMS), st.integers(-10**6, 10**6) | st.booleans(), max_size=4),
       duration=st.integers(1, 10**6))
def test_tokens_decode_to_the_rendered_claims(algorithm, iss, sub, extra, duration):
    ctx, _ = make_ctx({"key": signing_key(algorithm), "iss": iss, "sub": sub})
    runtime = build(jwt_model(algorithm=algorithm, token_duration=duration,
                              jwt_payload={"iss": "{{ config['iss'] }}", "sub": "{{ config['sub'] }}"},
                              additional_jwt_payload=extra), ctx)
    claims = decoded(runtime.value(), algorithm)
    issued = int(START.timestamp())
    assert claims == {**extra, "iss": iss, "sub": sub, "iat": issued, "nbf": issued, "exp": issued + duration}


def test_token_is_signed_again_a_minute_before_it_expires_by_the_injected_clock():
    clock = FixedClock(START)
    ctx, _ = make_ctx({"key": HMAC_SECRET}, clock=clock)
    runtime = build(jwt_model(token_duration=600), ctx)
    first = runtime.value()
    clock.advance(timedelta(seconds=539))
    assert runtime.value() == first
    clock.advance(timedelta(seconds=1))
    second = runtime.value()
    assert second != first
    assert decoded(second, "HS256", HMAC_SECRET)["iat"] == int(START.timestamp()) + 540


def test_without_a_duration_every_request_signs_a_token_that_expires_at_once():
    clock = FixedClock(START)
    ctx, _ = make_ctx({"key": HMAC_SECRET}, clock=clock)
    runtime = build(jwt_model(token_duration=None), ctx)
    first = runtime.value()
    claims = decoded(first, "HS256", HMAC_SECRET)
    assert claims["exp"] == claims["iat"] == claims["nbf"]
    clock.advance(timedelta(seconds=1))
    assert runtime.value() != first


def test_a_401_signs_a_new_token():
    clock = FixedClock(START)
    ctx, _ = make_ctx({"key": HMAC_SECRET}, clock=clock)
    runtime = build(jwt_model(), ctx)
    first = runtime.value()
    clock.advance(timedelta(seconds=5))
    assert runtime.refresh() is True
    assert runtime.value() != first


def test_prefix_request_option_and_extra_headers():
    ctx, _ = make_ctx({"key": HMAC_SECRET, "thumb": "abc"})
    runtime = build(jwt_model(header_prefix="Bearer", additional_jwt_headers={"x5t": "{{ config.thumb }}"},
                              jwt_headers={"typ": "at+jwt", "cty": "JWT"}), ctx)
    prefix, token = applied(runtime).headers["Authorization"].split(" ")
    assert prefix == "Bearer"
    assert jwt.get_unverified_header(token) == {"alg": "HS256", "typ": "at+jwt", "cty": "JWT", "x5t": "abc"}
    query = build(jwt_model(request_option={"type": "RequestOption", "inject_into": "request_parameter",
                                            "field_name": "jwt"}), ctx)
    parts = applied(query)
    assert parts.headers == {} and decoded(parts.params["jwt"], "HS256", HMAC_SECRET)["iat"]


def test_base64_encoded_secret_key_signs_with_the_encoding():
    ctx, _ = make_ctx({"key": "plain-secret-of-enough-length-0123456789"})
    runtime = build(jwt_model(base64_encode_secret_key=True), ctx)
    encoded = base64.b64encode(b"plain-secret-of-enough-length-0123456789").decode()
    assert decoded(runtime.value(), "HS256", encoded)
    with pytest.raises(jwt.InvalidSignatureError):
        decoded(runtime.value(), "HS256", "plain-secret-of-enough-length-0123456789")
    assert encoded in runtime.secrets()


def test_an_encrypted_key_is_opened_with_the_passphrase():
    ctx, _ = make_ctx({"key": signing_key("RS256", "pass-phrase"), "pass": "pass-phrase"})
    runtime = build(jwt_model(algorithm="RS256", passphrase="{{ config.pass }}"), ctx)
    assert decoded(runtime.value(), "RS256", verifying_key("RS256", "pass-phrase"))
    assert "pass-phrase" in runtime.secrets()


def test_a_key_that_does_not_fit_the_algorithm_fails_the_build_naming_the_fix():
    ctx, _ = make_ctx({"key": "not a pem key"})
    with pytest.raises(ConfigError, match="not a key for RS256.*PEM private key"):
        build(jwt_model(algorithm="RS256"), ctx)
    ctx, _ = make_ctx({"key": signing_key("RS256", "right"), "pass": "wrong"})
    with pytest.raises(ConfigError, match="not a key for RS256") as info:
        build(jwt_model(algorithm="RS256", passphrase="{{ config.pass }}"), ctx)
    assert "BEGIN" not in str(info.value)


def test_reserved_fields_in_the_extras_are_refused():
    ctx, _ = make_ctx({"key": HMAC_SECRET})
    with pytest.raises(ConfigError, match="`additional_jwt_payload` sets `exp`"):
        build(jwt_model(additional_jwt_payload={"exp": 1}), ctx)
    with pytest.raises(ConfigError, match="`additional_jwt_headers` sets `alg`"):
        build(jwt_model(additional_jwt_headers={"alg": "none"}), ctx)


def test_secrets_and_repr():
    ctx, _ = make_ctx({"key": HMAC_SECRET})
    runtime = build(jwt_model(), ctx)
    token = runtime.value()
    assert set(runtime.secrets()) == {token, HMAC_SECRET}
    assert HMAC_SECRET not in repr(runtime) and token not in repr(runtime)


# --- OAuth: profile assertion, body rules, rotation, refusal, query string -----------------------


def oauth(**extra):
    data = {"type": "OAuthAuthenticator", "token_refresh_endpoint": TOKEN_URL,
            "client_id": "{{ config['client_id'] }}", "client_secret": "{{ config['client_secret'] }}",
            "refresh_token": "{{ config['refresh_token'] }}"}
    data.update(extra)
    return OAuthAuthenticator.model_validate({k: v for k, v in data.items() if v is not None})


class Tokens:
    """A token endpoint: answers ``body(n)`` for the n-th request (1-based) and keeps every request."""

    def __init__(self, body=None, status=200):
        self.requests = []
        self.body = body or (lambda n: {"access_token": f"access-{n}", "expires_in": 3600})
        self.status = status

    def __call__(self, request):
        self.requests.append(request)
        return self.status, {"Content-Type": "application/json"}, self.body(len(self.requests))


CREDENTIALS = {"client_id": "cid", "client_secret": "csecret", "refresh_token": "rtok-0"}


def test_profile_assertion_sends_the_jwt_bearer_grant_with_a_verifiable_assertion():
    server = Tokens()
    ctx, _ = make_ctx({**CREDENTIALS, "key": signing_key("RS256")}, server)
    runtime = build(oauth(use_profile_assertion=True, profile_assertion={
        "type": "JwtAuthenticator", "secret_key": "{{ config.key }}", "algorithm": "RS256",
        "jwt_payload": {"iss": "{{ config.client_id }}", "aud": TOKEN_URL}}), ctx)
    assert applied(runtime).headers["Authorization"] == "Bearer access-1"
    [request] = server.requests
    assert set(request.data) == {"grant_type", "assertion"}
    assert request.data["grant_type"] == oauth_auth.JWT_BEARER_GRANT
    claims = decoded(request.data["assertion"], "RS256", audience=TOKEN_URL, options={"verify_aud": True})
    assert claims["iss"] == "cid"
    assert request.data["assertion"] in runtime.secrets()


def test_credentials_in_an_authorization_header_are_not_repeated_and_extras_do_not_override():
    server = Tokens()
    ctx, _ = make_ctx(CREDENTIALS, server)
    runtime = build(oauth(refresh_request_headers={"Authorization": "Basic abc"},
                          refresh_request_body={"grant_type": "other", "audience": "x"}), ctx)
    applied(runtime)
    [request] = server.requests
    assert request.data == {"grant_type": "refresh_token", "refresh_token": "rtok-0", "audience": "x"}
    assert request.headers == {"Authorization": "Basic abc"}


def test_refresh_fields_in_the_query_string():
    server = Tokens()
    ctx, _ = make_ctx(CREDENTIALS, server)
    applied(build(oauth(send_refresh_request_as_query_params=True, scopes=["a", "b"]), ctx))
    [request] = server.requests
    url = urlsplit(request.url)
    assert f"{url.scheme}://{url.netloc}{url.path}" == TOKEN_URL and request.data is None
    assert parse_qs(url.query) == {"grant_type": ["refresh_token"], "client_id": ["cid"],
                                   "client_secret": ["csecret"], "refresh_token": ["rtok-0"], "scopes": ["a", "b"]}


def test_expiry_as_a_date_in_the_format_and_a_token_found_nested():
    server = Tokens(lambda n: {"data": {"token": {"access_token": f"a-{n}"}}, "expires": "2024-01-01 13:00:00"})
    clock = FixedClock(START)
    ctx, _ = make_ctx(CREDENTIALS, server, clock)
    runtime = build(oauth(expires_in_name="expires", token_expiry_date_format="%Y-%m-%d %H:%M:%S"), ctx)
    assert applied(runtime).headers["Authorization"] == "Bearer a-1"
    clock.advance(timedelta(minutes=58, seconds=59))
    assert applied(runtime).headers["Authorization"] == "Bearer a-1"
    clock.advance(timedelta(seconds=1))
    assert applied(runtime).headers["Authorization"] == "Bearer a-2"


def test_a_refused_refresh_token_says_to_re_authenticate():
    server = Tokens(lambda n: {"error": "invalid_grant"}, status=400)
    ctx, _ = make_ctx(CREDENTIALS, server)
    runtime = build(oauth(refresh_token_error_status_codes=[400], refresh_token_error_key="error",
                          refresh_token_error_values=["invalid_grant"]), ctx)
    with pytest.raises(AuthenticationError, match="refresh token was refused.*re-authenticate") as info:
        applied(runtime)
    assert "rtok-0" not in str(info.value) and "csecret" not in str(info.value)
    assert len(server.requests) == 1  # a config error: not retried


ROTATING = {"credentials": {"client_id": "cid", "client_secret": "csecret", "refresh_token": "rtok-0",
                            "access_token": "", "token_expiry_date": ""}}


def rotating_model(**extra):
    return oauth(refresh_token=None, client_id="{{ config.credentials.client_id }}",
                 client_secret="{{ config.credentials.client_secret }}",
                 refresh_token_updater={"refresh_token_name": "new_refresh"}, **extra)


def test_a_rotating_refresh_token_is_used_from_the_answer_on_and_reported():
    server = Tokens(lambda n: {"access_token": f"access-{n}", "expires_in": 600, "new_refresh": f"rtok-{n}"})
    clock = FixedClock(START)
    ctx, _ = make_ctx(ROTATING, server, clock)
    runtime = build(rotating_model(), ctx)
    heard = []
    runtime.on_rotation(heard.append)
    assert applied(runtime).headers["Authorization"] == "Bearer access-1"
    assert runtime.refresh() is True
    assert [r.data["refresh_token"] for r in server.requests] == ["rtok-0", "rtok-1"]
    assert runtime.refresh_token() == "rtok-2"
    rotation = runtime.rotation()
    assert rotation is not None and rotation.generation == 2 and [r.generation for r in heard] == [1, 2]
    assert rotation.updates() == ((("credentials", "access_token"), "access-2"),
                                  (("credentials", "refresh_token"), "rtok-2"),
                                  (("credentials", "token_expiry_date"), "2024-01-01T12:10:00+00:00"))
    updated = rotation.applied_to(ROTATING)
    assert updated["credentials"] == {"client_id": "cid", "client_secret": "csecret", "refresh_token": "rtok-2",
                                      "access_token": "access-2", "token_expiry_date": "2024-01-01T12:10:00+00:00"}
    assert ROTATING["credentials"]["refresh_token"] == "rtok-0"  # the given config is left alone
    assert {"rtok-2", "access-2"} <= set(runtime.secrets())
    assert "rtok" not in repr(rotation) and "access-2" not in repr(rotation)

    # the next run, built on the updated config, uses its access token until it expires: no refresh
    again = Tokens()
    ctx2, _ = make_ctx(updated, again, FixedClock(START))
    assert applied(build(rotating_model(), ctx2)).headers["Authorization"] == "Bearer access-2"
    assert again.requests == []


def test_a_rotating_answer_without_a_refresh_token_keeps_the_old_one():
    server = Tokens(lambda n: {"access_token": f"access-{n}"})
    ctx, _ = make_ctx(ROTATING, server)
    runtime = build(rotating_model(), ctx)
    applied(runtime)
    rotation = runtime.rotation()
    assert rotation is not None and rotation.refresh_token == "rtok-0" and rotation.token_expiry_date == ""


config_keys = st.text("abcxyz", min_size=1, max_size=3)
configs = st.recursive(st.none() | st.integers() | st.text(max_size=4),
                       lambda inner: st.dictionaries(config_keys, inner, max_size=3), max_leaves=8)


@given(config=st.dictionaries(config_keys, configs, max_size=4),
       paths=st.lists(st.lists(config_keys, min_size=1, max_size=3).map(tuple), min_size=3, max_size=3, unique=True)
       .filter(lambda ps: not any(a != b and b[:len(a)] == a for a in ps for b in ps)))
def test_applied_to_writes_each_value_at_its_path_and_keeps_the_rest(config, paths):
    rotation = oauth_auth.TokenRotation("acc", "ref", "2024-01-01T00:00:00+00:00", *paths, generation=1)
    before = json.dumps(config, sort_keys=True)
    updated = rotation.applied_to(config)
    assert json.dumps(config, sort_keys=True) == before
    for path, value in rotation.updates():
        node = updated
        for key in path:
            node = node[key]
        assert node == value
    for key, value in config.items():
        if not any(path[0] == key for path in paths):
            assert updated[key] == value


# --- LegacySessionTokenAuthenticator ---------------------------------------------------------------


def legacy(**extra):
    data = {"type": "LegacySessionTokenAuthenticator", "header": "X-Session", "login_url": "session",
            "validate_session_url": "user/current", "session_token_response_key": "id",
            "session_token": "{{ config.get('session_token') }}", "username": "{{ config.get('username') }}",
            "password": "{{ config.get('password') }}"}
    data.update(extra)
    return LegacySessionTokenAuthenticator.model_validate(data)


class Sessions:
    def __init__(self, valid=("tok-config",)):
        self.valid = set(valid)
        self.requests = []

    def __call__(self, request):
        self.requests.append(request)
        if request.url == "https://api.example.com/user/current":
            ok = request.headers.get("X-Session") in self.valid
            return (200 if ok else 401), {}, {"ok": ok}
        assert request.url == "https://api.example.com/session" and request.method == "POST"
        assert request.json == {"username": "ann", "password": "pw-secret"}
        self.valid.add("tok-login")
        return 200, {}, {"id": "tok-login"}


def legacy_applied(runtime):
    from framework.components.http.request import RequestParts

    parts = RequestParts(url_base="https://api.example.com/", path="/orders")
    runtime.apply(parts)
    return parts


def test_legacy_uses_the_config_token_when_it_validates():
    server = Sessions()
    ctx, _ = make_ctx({"session_token": "tok-config", "username": "ann", "password": "pw-secret"}, server)
    runtime = build(legacy(), ctx)
    assert legacy_applied(runtime).headers == {"X-Session": "tok-config"}
    assert legacy_applied(runtime).headers == {"X-Session": "tok-config"}
    assert [r.method for r in server.requests] == ["GET"]  # validated once


def test_legacy_logs_in_when_the_config_token_is_refused_or_missing():
    for config in ({"session_token": "stale", "username": "ann", "password": "pw-secret"},
                   {"username": "ann", "password": "pw-secret"}):
        server = Sessions()
        ctx, _ = make_ctx(config, server)
        runtime = build(legacy(), ctx)
        assert legacy_applied(runtime).headers == {"X-Session": "tok-login"}
        assert server.requests[-1].method == "POST"
        assert {"tok-login", "pw-secret"} <= set(runtime.secrets())


def test_legacy_without_a_valid_token_or_credentials_fails_clearly():
    ctx, _ = make_ctx({"session_token": "stale"}, Sessions())
    with pytest.raises(AuthenticationError, match="no username and password"):
        legacy_applied(build(legacy(), ctx))


def test_legacy_logs_in_again_after_a_401():
    server = Sessions()
    ctx, _ = make_ctx({"session_token": "tok-config", "username": "ann", "password": "pw-secret"}, server)
    runtime = build(legacy(), ctx)
    legacy_applied(runtime)
    assert runtime.refresh() is True
    assert legacy_applied(runtime).headers == {"X-Session": "tok-login"}


# --- advanced_auth -----------------------------------------------------------------------------------


def test_advanced_auth_is_written_as_airbyte_writes_it():
    flow = AuthFlow.model_validate({
        "auth_flow_type": "oauth2.0", "predicate_key": ["credentials", "auth_type"],
        "oauth_config_specification": {
            "oauth_connector_input_specification": {"consent_url": "https://x/a?{{client_id_key}}={{client_id_value}}",
                                                    "access_token_url": "https://x/t", "unknown": 1},
            "complete_oauth_output_specification": {"type": "object", "properties": {"t": {"type": "string"}}},
            "something_else": {"kept": False}}})
    assert flow.as_message() == {
        "auth_flow_type": "oauth2.0", "predicate_key": ["credentials", "auth_type"],
        "oauth_config_specification": {
            "oauth_connector_input_specification": {"consent_url": "https://x/a?{{client_id_key}}={{client_id_value}}",
                                                    "access_token_url": "https://x/t", "scopes_join_strategy": "space"},
            "complete_oauth_output_specification": {"type": "object", "properties": {"t": {"type": "string"}}}}}
    with pytest.raises(ValueError, match="access_token_url"):
        AuthFlow.model_validate({"oauth_config_specification": {"oauth_connector_input_specification": {
            "consent_url": "https://x"}}})
