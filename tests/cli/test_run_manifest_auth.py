"""End to end: ``run-manifest --protocol`` against the fake API, which checks the credentials itself.

The API verifies each JWT with PyJWT and the public key (signature, ``exp``, ``nbf``, ``aud``, ``iss``)
and answers 401 otherwise; it validates and issues legacy session tokens; its OAuth token endpoint
checks the extra body fields and headers, answers the expiry as a date, verifies a profile assertion,
and invalidates a refresh token once used. Every run also shows no secret in any output.
"""

from __future__ import annotations

import io
import json
import textwrap
from datetime import datetime, timedelta, timezone
from urllib.parse import parse_qs

import jwt
import pytest
from fakes.api_server import ApiError, FakeApi, RecordedRequest, Reply
from fakes.jwt_keys import signing_key, verifying_key

from framework.cli.run import main

RECORDS = [{"id": 1, "name": "one"}, {"id": 2, "name": "two"}]

MANIFEST = """\
version: 6.7.0
type: DeclarativeSource
check: {type: CheckStream, stream_names: [items]}
streams:
  - type: DeclarativeStream
    name: items
    schema_loader: {type: InlineSchemaLoader, schema: {type: object}}
    retriever:
      type: SimpleRetriever
      requester:
        type: HttpRequester
        url_base: "{{ config.base_url }}/"
        path: items
        error_handler:
          type: DefaultErrorHandler
          max_retries: 1
          backoff_strategies: [{type: ConstantBackoffStrategy, backoff_time_in_seconds: 0}]
        authenticator:
AUTHENTICATOR
      record_selector:
        type: RecordSelector
        extractor: {type: DpathExtractor, field_path: [data]}
spec:
  type: Spec
  connection_specification:
    type: object
    properties:
      base_url: {type: string}
      private_key: {type: string, airbyte_secret: true}
      password: {type: string, airbyte_secret: true}
      client_secret: {type: string, airbyte_secret: true}
  advanced_auth:
    auth_flow_type: oauth2.0
    predicate_key: [auth_type]
    predicate_value: oauth
    oauth_config_specification:
      complete_oauth_output_specification:
        type: object
        properties:
          refresh_token: {type: string, path_in_connector_config: [credentials, refresh_token]}
"""


def manifest_with(authenticator: str) -> str:
    return MANIFEST.replace("AUTHENTICATOR\n", textwrap.indent(textwrap.dedent(authenticator), " " * 10))


class Run:
    def __init__(self, code: int, stdout: str, stderr: str):
        self.code, self.stdout, self.stderr = code, stdout, stderr
        self.messages = [json.loads(line) for line in stdout.splitlines()]

    def records(self) -> list[dict]:
        return [m["record"]["data"] for m in self.messages if m["type"] == "RECORD"]

    def errors(self) -> list[str]:
        return [m["trace"]["error"]["message"] for m in self.messages
                if m["type"] == "TRACE" and m["trace"]["type"] == "ERROR"]

    def assert_no(self, *secrets: str) -> None:
        for secret in secrets:
            for line in secret.splitlines() or [secret]:
                if len(line.strip()) > 8:
                    assert line not in self.stdout and line not in self.stderr, "a secret leaked"


@pytest.fixture
def run(tmp_path, write_manifest, capsys):
    def go(authenticator: str, config: dict, *args: str) -> Run:
        path = write_manifest(manifest_with(authenticator))
        config_file = tmp_path / "config.json"
        config_file.write_text(json.dumps(config))
        out = io.BytesIO()
        capsys.readouterr()
        code = main([path, "--config", str(config_file), *(args or ("--protocol",))], out=out)
        return Run(code, out.getvalue().decode(), capsys.readouterr().err)

    return go


def serve_items(api: FakeApi, authorized) -> None:
    def items(request: RecordedRequest):
        if not authorized(request):
            return Reply(401, {"error": "unauthorized"})
        return {"data": RECORDS}

    api.route("GET", "/items", items)


# --- JwtAuthenticator: the API verifies the token -------------------------------------------------------

JWT = """\
type: JwtAuthenticator
secret_key: "{{ config.private_key }}"
algorithm: ALGORITHM
token_duration: 300
header_prefix: Bearer
jwt_headers: {kid: "{{ config.key_id }}"}
jwt_payload: {iss: "{{ config.issuer }}", aud: items-api}
additional_jwt_payload: {scope: read}
"""


def verifier(algorithm: str, seen: list):
    def verified(request: RecordedRequest) -> bool:
        scheme, _, token = request.headers.get("Authorization", "").partition(" ")
        if scheme != "Bearer":
            return False
        try:
            claims = jwt.decode(token, verifying_key(algorithm), algorithms=[algorithm], audience="items-api",
                                issuer="issuer-7", options={"require": ["exp", "iat", "nbf"]})
        except jwt.PyJWTError:
            return False
        header = jwt.get_unverified_header(token)
        seen.append((header, claims))
        return header.get("kid") == "key-1" and claims.get("scope") == "read"
    return verified


@pytest.mark.parametrize("algorithm", ["RS256", "ES256", "PS384", "HS256", "EdDSA"])
def test_a_jwt_the_api_verifies(run, fake_api, algorithm):
    seen: list = []
    serve_items(fake_api, verifier(algorithm, seen))
    config = {"base_url": fake_api.url, "private_key": signing_key(algorithm), "key_id": "key-1",
              "issuer": "issuer-7"}
    result = run(JWT.replace("ALGORITHM", algorithm), config)
    assert result.code == 0, result.stderr
    assert result.records() == RECORDS
    [(header, claims)] = seen
    assert header["alg"] == algorithm and claims["exp"] - claims["iat"] == 300
    assert abs(claims["iat"] - datetime.now(timezone.utc).timestamp()) < 60
    result.assert_no(config["private_key"])


def test_a_jwt_signed_with_another_key_is_refused_by_the_api_and_fails_the_stream(run, fake_api):
    serve_items(fake_api, verifier("RS256", []))
    config = {"base_url": fake_api.url, "private_key": signing_key("ES256"),
              "key_id": "key-1", "issuer": "issuer-7"}
    result = run(JWT.replace("ALGORITHM", "ES256"), config)  # an EC key: the API checks RS256 with its RSA key
    assert result.code == 1 and result.records() == []
    [message] = result.errors()
    assert "401" in message
    result.assert_no(config["private_key"])


def test_a_key_that_is_no_key_exits_with_the_fix_and_no_secret(run, fake_api):
    serve_items(fake_api, lambda r: True)
    config = {"base_url": fake_api.url, "private_key": "hunter2-not-a-pem-key-at-all", "key_id": "k",
              "issuer": "i"}
    result = run(JWT.replace("ALGORITHM", "RS256"), config)
    assert result.code != 0
    assert "PEM private key" in result.stdout + result.stderr
    result.assert_no(config["private_key"])
    assert fake_api.received() == []


# --- LegacySessionTokenAuthenticator ---------------------------------------------------------------------

LEGACY = """\
type: LegacySessionTokenAuthenticator
header: X-Session
login_url: session
validate_session_url: user/current
session_token_response_key: id
session_token: "{{ config.get('session_token') }}"
username: "{{ config.username }}"
password: "{{ config.password }}"
"""


def serve_sessions(api: FakeApi) -> set:
    valid = {"sess-from-config"}

    def login(request: RecordedRequest):
        if request.json() != {"username": "ann", "password": "pw-7f3a9c2e1b"}:
            raise ApiError(401, "bad credentials")
        valid.add("sess-new-42")
        return {"id": "sess-new-42"}

    def current(request: RecordedRequest):
        if request.headers.get("X-Session") not in valid:
            raise ApiError(401, "no session")
        return {"user": "ann"}

    api.route("POST", "/session", login)
    api.route("GET", "/user/current", current)
    serve_items(api, lambda r: r.headers.get("X-Session") in valid)
    return valid


@pytest.mark.parametrize("given, logins", [("sess-from-config", 0), ("sess-expired", 1), (None, 1)])
def test_legacy_session_token(run, fake_api, given, logins):
    serve_sessions(fake_api)
    config = {"base_url": fake_api.url, "username": "ann", "password": "pw-7f3a9c2e1b"}
    if given:
        config["session_token"] = given
    result = run(LEGACY, config)
    assert result.code == 0, result.stderr
    assert result.records() == RECORDS
    paths = [r.path for r in fake_api.received()]
    assert paths.count("/session") == logins
    assert paths.count("/user/current") == (1 if given else 0)
    result.assert_no("pw-7f3a9c2e1b", "sess-new-42")


# --- OAuth: extras, expiry as a date, profile assertion, rotation --------------------------------------

OAUTH = """\
type: OAuthAuthenticator
token_refresh_endpoint: "{{ config.base_url }}/token"
client_id: "{{ config.client_id }}"
client_secret: "{{ config.client_secret }}"
refresh_token: "{{ config.refresh_token }}"
scopes: [items.read]
refresh_request_body: {audience: "{{ config.base_url }}/items"}
refresh_request_headers: {X-Tenant: "{{ config.tenant }}"}
expires_in_name: expires_at
token_expiry_date_format: "%Y-%m-%d %H:%M:%S"
"""


def test_oauth_with_extra_body_fields_headers_and_an_expiry_date(run, fake_api):
    issued = []

    def token(request: RecordedRequest):
        form = parse_qs(request.body.decode())
        if (request.headers.get("X-Tenant") != "acme" or form.get("audience") != [f"{fake_api.url}/items"]
                or form.get("scopes") != ["items.read"] or form.get("refresh_token") != ["rt-9b8c7d6e5f"]):
            raise ApiError(400, "invalid_request")
        issued.append(f"at-{len(issued) + 1}")
        expires = (datetime.now(timezone.utc) + timedelta(hours=1)).strftime("%Y-%m-%d %H:%M:%S")
        return {"access_token": issued[-1], "expires_at": expires}

    fake_api.route("POST", "/token", token)
    serve_items(fake_api, lambda r: r.headers.get("Authorization") == f"Bearer {issued[-1] if issued else ''}")
    config = {"base_url": fake_api.url, "client_id": "app", "client_secret": "cs-1a2b3c4d5e",
              "refresh_token": "rt-9b8c7d6e5f", "tenant": "acme"}
    result = run(OAUTH, config)
    assert result.code == 0, result.stdout + result.stderr
    assert result.records() == RECORDS and issued == ["at-1"]
    result.assert_no("cs-1a2b3c4d5e", "rt-9b8c7d6e5f")


PROFILE = """\
type: OAuthAuthenticator
token_refresh_endpoint: "{{ config.base_url }}/token"
use_profile_assertion: true
profile_assertion:
  type: JwtAuthenticator
  secret_key: "{{ config.private_key }}"
  algorithm: RS256
  jwt_payload: {iss: "{{ config.client_id }}", aud: "{{ config.base_url }}/token"}
"""


def test_oauth_jwt_bearer_grant_with_a_profile_assertion_the_token_endpoint_verifies(run, fake_api):
    def token(request: RecordedRequest):
        form = request.form()
        try:
            claims = jwt.decode(form.get("assertion", ""), verifying_key("RS256"), algorithms=["RS256"],
                                audience=f"{fake_api.url}/token")
        except jwt.PyJWTError as exc:
            raise ApiError(400, f"invalid_grant {exc}") from None
        if form.get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" or claims["iss"] != "svc":
            raise ApiError(400, "invalid_grant")
        return {"access_token": "granted-by-assertion", "expires_in": 3600}

    fake_api.route("POST", "/token", token)
    serve_items(fake_api, lambda r: r.headers.get("Authorization") == "Bearer granted-by-assertion")
    config = {"base_url": fake_api.url, "client_id": "svc", "private_key": signing_key("RS256")}
    result = run(PROFILE, config)
    assert result.code == 0, result.stdout + result.stderr
    assert result.records() == RECORDS
    result.assert_no(config["private_key"], "granted-by-assertion")


ROTATING = """\
type: OAuthAuthenticator
token_refresh_endpoint: "{{ config.base_url }}/token"
client_id: "{{ config.credentials.client_id }}"
client_secret: "{{ config.credentials.client_secret }}"
refresh_token_updater: {}
refresh_token_error_status_codes: [400]
refresh_token_error_key: error
refresh_token_error_values: [invalid_grant]
"""


def test_a_rotating_refresh_token_is_sent_once_and_a_used_one_is_refused_as_a_config_error(run, fake_api):
    current = {"refresh": "rt-first-1a2b3c"}

    def token(request: RecordedRequest):
        if request.form().get("refresh_token") != current["refresh"]:
            return Reply(400, {"error": "invalid_grant"})
        current["refresh"] = "rt-second-4d5e6f"  # the old one is spent
        return {"access_token": "at-rotating-1", "expires_in": 3600, "refresh_token": current["refresh"]}

    fake_api.route("POST", "/token", token)
    serve_items(fake_api, lambda r: r.headers.get("Authorization") == "Bearer at-rotating-1")
    config = {"base_url": fake_api.url, "credentials": {"client_id": "app", "client_secret": "cs-77aa88bb99",
                                                        "refresh_token": "rt-first-1a2b3c"}}
    result = run(ROTATING, config)
    assert result.code == 0, result.stdout + result.stderr
    assert result.records() == RECORDS
    assert [r.path for r in fake_api.received()].count("/token") == 1

    again = run(ROTATING, config)  # the config still holds the spent token: the API refuses it
    assert again.code == 1 and again.records() == []
    [message] = again.errors()
    assert "re-authenticate" in message and "invalid_grant" in message
    again.assert_no("rt-first-1a2b3c", "cs-77aa88bb99")


def test_spec_carries_advanced_auth(run, fake_api):
    result = run(LEGACY, {"base_url": fake_api.url}, "--spec")
    assert result.code == 0
    [message] = result.messages
    assert message["spec"]["advanced_auth"] == {
        "auth_flow_type": "oauth2.0", "predicate_key": ["auth_type"], "predicate_value": "oauth",
        "oauth_config_specification": {"complete_oauth_output_specification": {
            "type": "object",
            "properties": {"refresh_token": {"type": "string", "path_in_connector_config": ["credentials",
                                                                                            "refresh_token"]}}}}}


def test_a_jwt_and_its_key_never_appear_even_when_the_api_echoes_them(run, fake_api):
    def echo(request: RecordedRequest):
        return Reply(500, {"error": f"bad token {request.headers.get('Authorization')}"})

    fake_api.route("GET", "/items", echo)
    config = {"base_url": fake_api.url, "private_key": signing_key("RS256"), "key_id": "key-1", "issuer": "i"}
    result = run(JWT.replace("ALGORITHM", "RS256"), config)
    assert result.code == 1
    [message] = result.errors()
    assert "HTTP 500" in message
    sent = fake_api.received()[0].headers["Authorization"].removeprefix("Bearer ")
    result.assert_no(sent, config["private_key"])
