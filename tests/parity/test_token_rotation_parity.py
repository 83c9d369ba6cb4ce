"""Parity with Airbyte for rotating OAuth refresh tokens (``refresh_token_updater``).

Each runner talks to its own provider that invalidates a refresh token when it is used
(tests/fakes/rotating_oauth.py). From a config holding only a refresh token, both
refresh once, read the same records, and announce the rotated tokens in one CONTROL
message (CONNECTOR_CONFIG) whose config carries the new refresh token, access token and
expiry at the updater's paths. From that config, a second run uses the saved access token
(no refresh, no CONTROL); once it has expired, a third run refreshes with the saved refresh
token and announces the next one.

Needs a python with airbyte-cdk (``AIRBYTE_CDK_PYTHON``); skipped otherwise.
"""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from datetime import datetime, timedelta, timezone
from pathlib import Path

import orjson
import pytest
import yaml
from fakes.api_server import FakeApi
from fakes.rotating_oauth import RotatingOAuth, serve_items
from parity.test_airbyte_parity import ENABLE, MANIFESTS, _cdk_available, _cdk_command, _write, canonical, catalog_for

pytestmark = [
    pytest.mark.parity,
    pytest.mark.skipif(not _cdk_available(),
                       reason=f"parity with airbyte-cdk needs AIRBYTE_CDK_PYTHON set to a python with airbyte-cdk: "
                              f"{ENABLE}"),
]

MANIFEST = MANIFESTS / "oauth_rotation.yaml"


def _run(command: list[str], cwd: Path) -> tuple[list[dict], str]:
    done = subprocess.run(command, capture_output=True, cwd=cwd, timeout=180, check=False)
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-3000:]
    return [orjson.loads(line) for line in done.stdout.splitlines() if line.startswith(b"{")], \
        done.stderr.decode(errors="replace")


def _ours(folder: Path, config: dict, catalog: dict) -> list[dict]:
    messages, _ = _run([sys.executable, "-m", "framework.cli.run", str(MANIFEST), "--protocol", "--config",
                        _write(folder, "ours_config.json", config), "--catalog",
                        _write(folder, "catalog.json", catalog)], folder)
    return messages


def _cdk(folder: Path, config: dict, catalog: dict) -> list[dict]:
    manifest = yaml.safe_load(MANIFEST.read_text())
    messages, _ = _run(_cdk_command() + ["read", "--config", _write(folder, "cdk_config.json", dict(
        config, __injected_declarative_manifest=manifest)), "--catalog", _write(folder, "catalog.json", catalog)],
        folder)
    return messages


def _controls(messages: list[dict]) -> list[dict]:
    return [{k: v for k, v in m["control"]["connectorConfig"]["config"].items()
             if k != "__injected_declarative_manifest"}
            for m in messages if m.get("type") == "CONTROL" and m["control"]["type"] == "CONNECTOR_CONFIG"]


def _records(messages: list[dict]) -> Counter:
    return Counter(canonical(m["record"]["data"]) for m in messages if m.get("type") == "RECORD")


def _expiry(config: dict) -> datetime:
    found = datetime.fromisoformat(config["credentials"]["token_expiry_date"].replace("Z", "+00:00"))
    return found if found.tzinfo else found.replace(tzinfo=timezone.utc)


def test_rotated_tokens_are_announced_once_and_the_announced_config_works(tmp_path: Path) -> None:
    catalog = catalog_for({"items": "full_refresh"})
    announced: dict[str, dict] = {}
    providers: dict[str, RotatingOAuth] = {}
    apis = {name: FakeApi().start() for name in ("ours", "cdk")}
    try:
        results = {}
        for name, api in apis.items():
            providers[name] = RotatingOAuth(api, lifetime=3600)
            serve_items(api, providers[name], page_seconds=0.0)
            config = {"base_url": api.url, "client_secret": "cs-secret", "credentials": {"refresh_token": "rt-0"}}
            runner = _ours if name == "ours" else _cdk
            folder = tmp_path / name
            folder.mkdir()
            started = datetime.now(timezone.utc)
            messages = runner(folder, config, catalog)
            results[name] = messages
            [announced[name]] = _controls(messages)  # one rotation, one CONTROL message
            assert len(providers[name].accepted) == 1
            saved = announced[name]
            assert saved["credentials"]["refresh_token"] == "rt-1" and saved["credentials"]["access_token"] == "at-1"
            assert abs(_expiry(saved) - (started + timedelta(hours=1))) < timedelta(minutes=1)
            assert {k: v for k, v in saved.items() if k != "credentials"} == {"base_url": api.url,
                                                                              "client_secret": "cs-secret"}

            # from the announced config: the saved access token is used, nothing refreshed or announced
            messages = runner(folder, saved, catalog)
            assert _controls(messages) == [] and len(providers[name].accepted) == 1
            assert _records(messages) == _records(results[name])

            # once it has expired (by the saved expiry), the saved refresh token gets the next one
            expired = {**saved, "credentials": {**saved["credentials"], "token_expiry_date":
                                                (started - timedelta(hours=1)).isoformat()}}
            messages = runner(folder, expired, catalog)
            [again] = _controls(messages)
            assert providers[name].accepted[-1].presented == "rt-1" and again["credentials"]["refresh_token"] == "rt-2"
            assert [r for r in providers[name].refreshes if not r.accepted] == []
        assert _records(results["ours"]) == _records(results["cdk"]) and sum(_records(results["ours"]).values()) == 135
        assert set(announced["ours"]["credentials"]) == set(announced["cdk"]["credentials"])
    finally:
        for api in apis.values():
            api.stop()
