"""Credentials stay with their host: the fake API on 127.0.0.1 redirects to a second one on 127.0.0.2 (a
different host, which listens too), and whatever the authenticator, none of its credentials arrives there.

Each authenticator type is read end to end (manifest, connector, protocol read loop, the real transport):
headers, query parameters, JSON and form body fields, a ``Cookie`` header, tokens from a token endpoint or
a login. A redirect within the same origin keeps them, and ``credential_redirect_hosts`` lets them follow to
a named host.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from engine.test_reading import option, requester, source, stream
from engine.test_reading import run as run  # noqa: F401  (the fixture)
from fakes.api_server import FakeApi, RecordedRequest, Reply
from fakes.jwt_keys import HMAC_SECRET

from framework.engine.connector import open_connector
from framework.engine.selection import select_streams
from framework.protocol.read import read

ITEMS = [{"id": i} for i in range(1, 6)]
SECRET = "k-0123456789-secret"


@pytest.fixture
def other() -> Iterator[FakeApi]:
    """The host a redirect leads to: another address, so another host."""
    with FakeApi(host="127.0.0.2") as api:
        api.route("*", "/items", {"data": ITEMS})
        yield api


def redirect_items(fake_api: FakeApi, to: FakeApi, status: int = 302) -> None:
    """127.0.0.1's `/items` sends the client on to ``to``'s `/items`, the query string kept (as APIs do)."""
    fake_api.route("*", "/items", lambda r: Reply(status, b"", {"Location": f"{to.url}{r.target}"}))


def carried(request: RecordedRequest) -> str:
    """Everything a request carried to its host: target, headers and body."""
    return request.target + "\n" + "\n".join(f"{k}: {v}" for k, v in request.headers.items()) + "\n" + (
        request.body.decode("latin-1"))


AUTHENTICATORS: list[tuple[str, dict[str, Any], str, list[str]]] = [
    ("api-key-header", {"type": "ApiKeyAuthenticator", "api_token": "{{ config.token }}", "header": "X-Api-Key"},
     "GET", [SECRET]),
    ("api-key-query", {"type": "ApiKeyAuthenticator", "api_token": "{{ config.token }}",
                       "inject_into": option("request_parameter", "api_key")}, "GET", [SECRET]),
    ("api-key-body-json", {"type": "ApiKeyAuthenticator", "api_token": "{{ config.token }}",
                           "inject_into": option("body_json", ["auth", "key"])}, "POST", [SECRET]),
    ("api-key-body-data", {"type": "ApiKeyAuthenticator", "api_token": "{{ config.token }}",
                           "inject_into": option("body_data", "key")}, "POST", [SECRET]),
    ("api-key-cookie", {"type": "ApiKeyAuthenticator", "api_token": "session={{ config.token }}",
                        "header": "Cookie"}, "GET", [SECRET]),
    ("bearer", {"type": "BearerAuthenticator", "api_token": "{{ config.token }}"}, "GET", [SECRET]),
    ("basic", {"type": "BasicHttpAuthenticator", "username": "reader", "password": "{{ config.token }}"}, "GET",
     [SECRET, base64.b64encode(f"reader:{SECRET}".encode()).decode()]),
    ("oauth", {"type": "OAuthAuthenticator", "token_refresh_endpoint": "{{ config.base_url }}/oauth/token",
               "client_id": "my-client", "client_secret": "{{ config.token }}", "refresh_token": "rt-1"}, "GET",
     [SECRET, "access-from-token-endpoint"]),
    ("session-token", {"type": "SessionTokenAuthenticator",
                       "login_requester": requester("/login", http_method="POST",
                                                    request_body_json={"password": "{{ config.token }}"}),
                       "session_token_path": ["token"],
                       "request_authentication": {"type": "ApiKey",
                                                  "inject_into": option("header", "X-Session")}}, "GET",
     [SECRET, "session-from-login"]),
    ("legacy-session-token", {"type": "LegacySessionTokenAuthenticator", "header": "X-Session",
                              "login_url": "{{ config.base_url }}/login", "session_token": "{{ config.token }}",
                              "session_token_response_key": "token", "username": "", "password": "",
                              "validate_session_url": "/validate"}, "GET", [SECRET]),
    ("jwt", {"type": "JwtAuthenticator", "secret_key": "{{ config.token }}", "algorithm": "HS256"}, "GET",
     [SECRET, "eyJ"]),
    ("selective", {"type": "SelectiveAuthenticator", "authenticator_selection_path": ["kind"],
                   "authenticators": {"key": {"type": "ApiKeyAuthenticator", "api_token": "{{ config.token }}",
                                              "header": "X-Api-Key"}}}, "GET", [SECRET]),
]


def serve_token_endpoints(fake_api: FakeApi) -> None:
    fake_api.route("POST", "/oauth/token", {"access_token": "access-from-token-endpoint", "expires_in": 3600})
    fake_api.route("POST", "/login", {"token": "session-from-login"})
    fake_api.route("*", "/validate", {"ok": True})


def items_manifest(authenticator: dict[str, Any], method: str, **more: Any) -> dict[str, Any]:
    built = source(stream(requester_=requester(authenticator=authenticator, http_method=method, **more)))
    built["spec"]["connection_specification"]["properties"]["kind"] = {"type": "string"}
    return built


@pytest.mark.parametrize(("authenticator", "method", "secrets"), [a[1:] for a in AUTHENTICATORS],
                         ids=[a[0] for a in AUTHENTICATORS])
def test_no_credential_follows_a_redirect_to_another_host(run, fake_api, other, authenticator, method, secrets):
    serve_token_endpoints(fake_api)
    redirect_items(fake_api, other, 307 if method == "POST" else 302)  # 307 sends the body again
    config = {"token": SECRET if authenticator["type"] != "JwtAuthenticator" else HMAC_SECRET, "kind": "key"}
    if authenticator["type"] == "JwtAuthenticator":
        secrets = [HMAC_SECRET, "eyJ"]
    result = run(items_manifest(authenticator, method), config)
    assert not result.failed, result.output
    assert result.records() == ITEMS
    first = fake_api.received("/items")
    assert any(secret in carried(first[0]) for secret in secrets)  # the credential went to its own host
    (arrived,) = other.received("/items")
    for secret in secrets:
        assert secret not in carried(arrived)
    assert "Authorization" not in arrived.headers and "Cookie" not in arrived.headers


def test_a_redirect_within_the_same_origin_keeps_the_credentials(run, fake_api):
    fake_api.route("GET", "/old", lambda r: Reply(302, b"", {"Location": f"{fake_api.url}/items?{r.target[5:]}"}))
    fake_api.route("GET", "/items", lambda r: {"data": ITEMS} if r.param("api_key") == SECRET
                   and r.headers.get("X-Api-Key") == SECRET else Reply(401, {"error": "who are you"}))
    auth = {"type": "ApiKeyAuthenticator", "api_token": "{{ config.token }}",
            "inject_into": option("request_parameter", "api_key")}
    built = source(stream(requester_=requester("/old", authenticator=auth,
                                               request_headers={"X-Api-Key": "{{ config.token }}"})))
    result = run(built, {"token": SECRET})
    assert not result.failed, result.output
    assert result.records() == ITEMS


def test_a_named_host_receives_the_credentials(run, fake_api, other):
    redirect_items(fake_api, other)
    auth = {"type": "ApiKeyAuthenticator", "api_token": "{{ config.token }}", "header": "X-Api-Key"}
    result = run(items_manifest(auth, "GET", credential_redirect_hosts=["127.0.0.2"]), {"token": SECRET})
    assert not result.failed, result.output
    (arrived,) = other.received("/items")
    assert arrived.headers.get("X-Api-Key") == SECRET


def test_another_port_of_the_same_host_is_another_origin(run, fake_api):
    with FakeApi() as elsewhere:
        elsewhere.route("*", "/items", {"data": ITEMS})
        redirect_items(fake_api, elsewhere)
        auth = {"type": "BearerAuthenticator", "api_token": "{{ config.token }}"}
        result = run(items_manifest(auth, "GET", request_headers={"X-Trace": "t"}), {"token": SECRET})
        assert not result.failed, result.output
        (arrived,) = elsewhere.received("/items")
        assert SECRET not in carried(arrived) and arrived.headers.get("X-Trace") == "t"


def test_a_token_request_redirected_to_another_host_carries_none_of_its_secrets(run, fake_api, other):
    fake_api.route("POST", "/oauth/token", lambda r: Reply(307, b"", {"Location": f"{other.url}/oauth/token"}))
    other.route("POST", "/oauth/token", {"access_token": "stolen", "expires_in": 3600})
    fake_api.route("GET", "/items", {"data": ITEMS})
    auth = AUTHENTICATORS[7][1]
    run(items_manifest(auth, "GET"), {"token": SECRET})
    for request in other.received("/oauth/token"):
        assert SECRET not in carried(request) and "rt-1" not in carried(request)


CUSTOM_AUTH = '''
from dataclasses import dataclass
from typing import Any, Mapping


@dataclass
class Auth:
    config: Mapping[str, Any]

    def get_auth_header(self):
        return {"X-Key": self.config["token"]}

    def get_request_params(self):
        return {"key": self.config["token"]}
'''


def test_a_custom_authenticators_credentials_do_not_follow_either(write_manifest, fake_api, other):
    redirect_items(fake_api, other)
    auth = {"type": "CustomAuthenticator", "class_name": "components.Auth"}
    path = write_manifest(yaml.safe_dump(items_manifest(auth, "GET"), sort_keys=False))
    (Path(path).parent / "components.py").write_text(CUSTOM_AUTH)
    connector = open_connector(path, {"base_url": fake_api.url, "token": SECRET}, sleep=lambda s: None,
                               allow_custom_code=True)
    out, err = io.BytesIO(), io.StringIO()
    report = read(connector, select_streams(connector.streams, None), {}, out, err, concurrency=1)
    assert not report.failed, err.getvalue()
    (first,) = fake_api.received("/items")
    assert first.headers.get("X-Key") == SECRET and first.param("key") == SECRET
    (arrived,) = other.received("/items")
    assert SECRET not in carried(arrived)
