"""Parity with Airbyte for authentication: JwtAuthenticator, LegacySessionTokenAuthenticator, OAuth's
extra fields, expiry dates and profile assertion, and ``advanced_auth`` in the SPEC message.

``manifests/auth.yaml`` has a stream per authenticator; the fake API checks each credential (it
verifies every JWT with PyJWT and the public key, and answers 401 otherwise) and records what it
saw. Both runners must read the same records, and send the same credentials: the same JWT header
and the same claims but for the times (``iat``, ``nbf``, ``exp``; ``exp - iat`` equal), the same
token request fields, the same login and validation requests. The SPEC messages' ``advanced_auth``
must be equal. Skipped without airbyte-cdk (see tests/parity/README.md).
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import jwt
import pytest
import yaml
from fakes.api_server import ApiError, FakeApi, RecordedRequest, Reply
from fakes.jwt_keys import signing_key, verifying_key
from parity.test_airbyte_parity import (  # noqa: F401  (pytestmark: the parity mark and the skip)
    CDK_PYTHON,
    MANIFESTS,
    Output,
    assert_same_records,
    catalog_for,
    pytestmark,
    run_cdk,
    run_ours,
)
from parity.test_airbyte_parity import Both as _Both
from parity.test_airbyte_parity import api as api  # noqa: F401  (the fixture)

STREAMS = ("signed", "hashed", "sessions", "granted", "asserted")
PAGES = {None: ([{"id": 1, "name": "one"}, {"id": 2, "name": None}], "p2"), "p2": ([{"id": 3, "name": "três"}], None)}
HMAC = "hmac-secret-for-the-parity-test-0123456789abcdef0123456789abcdef"
TIMES = ("iat", "nbf", "exp")


class AuthApi:
    """Serves the streams of auth.yaml; checks and keeps every credential it is sent."""

    def __init__(self, api: FakeApi):
        self.api = api
        self.seen: dict[str, list[Any]] = {name: [] for name in ("signed", "hashed", "token", "assert", "login")}
        self.sessions = {"sess-config"}
        api.route("GET", "/signed", self.page(self.signed))
        api.route("GET", "/hashed", self.page(self.hashed))
        api.route("GET", "/sessions", self.page(lambda r: r.headers.get("X-Session") in self.sessions))
        api.route("GET", "/granted", self.page(lambda r: r.headers.get("Authorization") == "Bearer granted-1"))
        api.route("GET", "/asserted", self.page(lambda r: r.headers.get("Authorization") == "Bearer asserted-1"))
        api.route("POST", "/token", self.token)
        api.route("POST", "/assert", self.assertion)
        api.route("POST", "/session", self.login)
        api.route("GET", "/user/current", lambda r: Reply(200 if r.headers.get("X-Session") in self.sessions
                                                          else 401, {}))

    def clear(self) -> None:
        for found in self.seen.values():
            found.clear()
        self.sessions = {"sess-config"}

    @staticmethod
    def page(authorized):
        def handler(request: RecordedRequest):
            if not authorized(request):
                return Reply(401, {"error": "unauthorized"})
            records, after = PAGES[request.param("after")]
            return {"data": records, "next": after}
        return handler

    def signed(self, request: RecordedRequest) -> bool:
        scheme, _, token = request.headers.get("Authorization", "").partition(" ")
        return scheme == "Bearer" and self.verified("signed", token, "RS256", verifying_key("RS256"),
                                                    audience="items-api")

    def hashed(self, request: RecordedRequest) -> bool:
        key = base64.b64encode(HMAC.encode()).decode()
        return self.verified("hashed", request.param("jwt") or "", "HS256", key)

    def verified(self, kind: str, token: str, algorithm: str, key: str, **checks: Any) -> bool:
        try:
            claims = jwt.decode(token, key, algorithms=[algorithm], **checks)
        except jwt.PyJWTError:
            return False
        self.seen[kind].append((jwt.get_unverified_header(token), claims))
        return True

    def token(self, request: RecordedRequest):
        self.seen["token"].append((parse_qs(request.body.decode()), request.headers.get("X-Tenant")))
        return {"access_token": "granted-1", "expires_at": "2099-01-01 00:00:00"}

    def assertion(self, request: RecordedRequest):
        form = parse_qs(request.body.decode())
        if not self.verified("assert", form.get("assertion", [""])[0], "RS256", verifying_key("RS256"),
                             audience="token-endpoint"):
            raise ApiError(400, "invalid_grant")
        self.seen["token"].append(({k: v for k, v in form.items() if k != "assertion"}, None))
        return {"access_token": "asserted-1", "expires_in": 3600}

    def login(self, request: RecordedRequest):
        self.seen["login"].append(request.json())
        self.sessions.add("sess-login")
        return {"id": "sess-login"}


def _config(api: FakeApi, session_token: str) -> dict[str, Any]:
    return {"base_url": api.url, "private_key": signing_key("RS256"), "key_id": "key-7", "thumbprint": "thumb",
            "issuer": "issuer-1", "subject": "user@example.com", "tenant": "acme", "hmac_secret": HMAC,
            "session_token": session_token, "username": "ann", "password": "pw-secret", "client_id": "app",
            "client_secret": "cs-secret", "refresh_token": "rt-secret"}


def _without_times(seen: list) -> list:
    return [(header, {k: v for k, v in claims.items() if k not in TIMES}) for header, claims in seen]


def _lifetimes(seen: list) -> set:
    return {(claims["exp"] - claims["iat"], claims["nbf"] - claims["iat"]) for _, claims in seen}


def _run(server: AuthApi, tmp_path: Path, runner, config: dict) -> tuple[Output, dict]:
    server.clear()
    server.api.requests.clear()
    catalog = catalog_for(dict.fromkeys(STREAMS, "full_refresh"))
    out = runner(tmp_path, MANIFESTS / "auth.yaml", config, catalog)
    seen = {kind: list(found) for kind, found in server.seen.items()}
    seen["paths"] = sorted(r.path for r in server.api.received() if r.path in ("/session", "/user/current"))
    return out, seen


def test_every_authenticator_sends_the_same_credentials_and_reads_the_same_records(api: FakeApi,  # noqa: F811
                                                                                    tmp_path: Path) -> None:
    server = AuthApi(api)
    for session_token in ("sess-config", "sess-stale"):  # validated and used; refused, then a login
        config = _config(api, session_token)
        ours, ours_seen = _run(server, tmp_path, run_ours, config)
        cdk, cdk_seen = _run(server, tmp_path, run_cdk, config)
        cdk.check("source-declarative-manifest")
        ours.check("run-manifest --protocol")
        both = _Both(ours, cdk, set(), set())
        for stream in STREAMS:
            assert_same_records(both, stream)
        for kind in ("signed", "hashed", "assert"):
            assert cdk_seen[kind], f"the CDK sent no {kind} JWT; the scenario is broken"
            # the CDK signs a token per request, we sign one per lifetime: compare the distinct ones
            assert _unique(_without_times(ours_seen[kind])) == _unique(_without_times(cdk_seen[kind])), kind
            assert _lifetimes(ours_seen[kind]) == _lifetimes(cdk_seen[kind]), kind
        assert ours_seen["token"] == cdk_seen["token"]
        assert ours_seen["login"] == cdk_seen["login"]
        assert sorted(set(ours_seen["paths"])) == sorted(set(cdk_seen["paths"]))
        assert ("/session" in ours_seen["paths"]) == (session_token == "sess-stale")


def _unique(items: list) -> list:
    found: list = []
    for item in items:
        if item not in found:
            found.append(item)
    return found


def _specs(manifest: Path, cwd: Path) -> tuple[dict, dict]:
    """The SPEC message's `spec` from us and from airbyte-cdk."""
    ours = subprocess.run([sys.executable, "-m", "framework.cli.run", str(manifest), "--spec"],
                          capture_output=True, check=True, cwd=cwd, timeout=60)
    probe = ("import sys, json, logging, yaml\n"
             "from airbyte_cdk.sources.declarative.concurrent_declarative_source import ConcurrentDeclarativeSource\n"
             "from airbyte_cdk.models import AirbyteMessage, Type, AirbyteMessageSerializer\n"
             "source = ConcurrentDeclarativeSource(source_config=yaml.safe_load(open(sys.argv[1])), config={},"
             " catalog=None, state=None)\n"
             "spec = source.spec(logging.getLogger())\n"
             "print(json.dumps(AirbyteMessageSerializer.dump(AirbyteMessage(type=Type.SPEC, spec=spec))))\n")
    cdk = subprocess.run([CDK_PYTHON, "-c", probe, str(manifest)], capture_output=True, check=True, timeout=120)
    mine = json.loads(ours.stdout.splitlines()[0])["spec"]
    theirs = json.loads([line for line in cdk.stdout.splitlines() if line.startswith(b"{")][-1])["spec"]
    return mine, theirs


def test_spec_advanced_auth_is_the_same(tmp_path: Path) -> None:
    manifest = MANIFESTS / "auth.yaml"
    mine, theirs = _specs(manifest, tmp_path)
    assert mine["advanced_auth"] == theirs["advanced_auth"]
    assert mine["connectionSpecification"] == theirs["connectionSpecification"]
    assert yaml.safe_load(manifest.read_text())["spec"]["advanced_auth"]["predicate_value"] == "oauth"


def _corpus_specs() -> list[Path]:
    """Manifests of the corpora (MANIFEST_CORPUS, PYPI_MANIFEST_CORPUS) whose spec has `advanced_auth`."""
    found = []
    for variable in ("MANIFEST_CORPUS", "PYPI_MANIFEST_CORPUS"):
        root = os.environ.get(variable)
        if root and os.path.isdir(root):
            found += [path for path in sorted(Path(root).rglob("*.yaml"))
                      if "advanced_auth:" in path.read_text(errors="replace")]
    return found


def test_advanced_auth_of_real_manifests_is_the_same(tmp_path: Path) -> None:
    """Each corpus manifest's spec, in a manifest of one plain stream (its streams may need custom code)."""
    manifests = _corpus_specs()
    if not manifests:
        pytest.skip("MANIFEST_CORPUS / PYPI_MANIFEST_CORPUS name no manifest with `advanced_auth`")
    shell = yaml.safe_load((MANIFESTS / "auth.yaml").read_text())
    shell["streams"] = shell["streams"][:1]
    for number, path in enumerate(manifests):
        spec = yaml.safe_load(path.read_text()).get("spec")
        if not isinstance(spec, dict) or "advanced_auth" not in spec:
            continue
        probe = tmp_path / f"spec_{number}.yaml"
        probe.write_text(yaml.safe_dump({**shell, "spec": spec}))
        mine, theirs = _specs(probe, tmp_path)
        assert mine.get("advanced_auth") == theirs.get("advanced_auth"), path.name
