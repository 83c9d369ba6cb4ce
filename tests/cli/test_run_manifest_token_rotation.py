"""One token for the whole sync, end to end: OAuth with rotating refresh tokens against a provider that
invalidates each refresh token when it is used and whose access tokens expire mid-sync.

Spark mode (a ``run-manifest --master local[4]`` process, 8 tasks): the driver refreshes, the tasks ask it;
the provider counts one refresh per expiry and never sees a used refresh token; the ``--config`` file holds
the rotated tokens (the previous one in ``.bak``), the run says so on stderr, and the next run works from it.
Protocol mode: one CONTROL message per rotation, whose config the next run uses.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest
from fakes.rotating_oauth import MANIFEST, PER_SHARD, SHARDS, RotatingOAuth, serve_items

from framework.cli.run import main

SAVED = "the refreshed OAuth tokens were saved to"


def write_files(tmp_path: Path, base_url: str) -> tuple[Path, Path]:
    manifest = tmp_path / "manifest.yaml"
    manifest.write_text(MANIFEST)
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"base_url": base_url, "client_secret": "cs-secret",
                                  "credentials": {"refresh_token": "rt-0"}}))
    os.chmod(config, 0o600)
    return manifest, config


def run_protocol(manifest: Path, config: Path, *args: str) -> tuple[int, list[dict], str]:
    out, err = io.BytesIO(), io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main([str(manifest), "--config", str(config), "--protocol", *args], out=out)
    return code, [orjson.loads(line) for line in out.getvalue().splitlines()], err.getvalue()


def run_spark_process(manifest: Path, config: Path, out: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYSPARK_PYTHON=os.environ.get("PYSPARK_PYTHON", sys.executable))
    return subprocess.run([sys.executable, "-m", "framework.cli.run", str(manifest), "--config", str(config),
                           "--output", str(out), "--format", "jsonl", *args],
                          capture_output=True, text=True, env=env, timeout=300, check=False)


def assert_one_refresh_per_expiry(provider: RotatingOAuth) -> None:
    assert [r for r in provider.refreshes if not r.accepted] == []  # no refresh token was ever used twice
    assert provider.refreshes_while_valid() == []  # no refresh while the token before still served
    assert len(provider.accepted) >= 2, "the sync should have outlived its first access token"


@pytest.mark.spark
def test_spark_tasks_share_the_drivers_token_and_the_rotated_config_is_saved_once_per_rotation(fake_api, tmp_path):
    # Access tokens die after 3 s but are announced for an hour: the tasks learn it from 401s, all at once.
    provider = RotatingOAuth(fake_api, lifetime=3.0, announced=3600)
    serve_items(fake_api, provider, page_seconds=0.3)
    manifest, config = write_files(tmp_path, fake_api.url)

    done = run_spark_process(manifest, config, tmp_path / "out", "--master", "local[4]")
    assert done.returncode == 0, done.stderr[-3000:]
    assert_one_refresh_per_expiry(provider)
    assert provider.rejected_calls >= 1  # the tokens did expire mid-sync, and the tasks recovered
    print(f"refreshes: {len(provider.accepted)}, answers 401: {provider.rejected_calls}")

    rows = [json.loads(line)["_airbyte_data"] for path in (tmp_path / "out" / "items").rglob("*.jsonl")
            for line in path.read_text().splitlines()]
    assert len(rows) == len(SHARDS) * PER_SHARD
    assert {(row["shard"], row["id"]) for row in rows} == {(s, i) for s in SHARDS for i in range(PER_SHARD)}

    saved = json.loads(config.read_text())
    last = provider.accepted[-1]
    assert saved["credentials"]["refresh_token"] == provider.refresh_token
    assert saved["credentials"]["access_token"] == last.issued
    assert saved["credentials"]["token_expiry_date"]  # ISO 8601, an hour ahead as announced
    assert saved["client_secret"] == "cs-secret" and saved["base_url"] == fake_api.url
    backup = json.loads(Path(f"{config}.bak").read_text())
    assert backup["credentials"]["refresh_token"] == provider.accepted[-1].presented  # the config before
    assert os.stat(config).st_mode & 0o777 == 0o600
    notes = [line for line in done.stderr.splitlines() if SAVED in line]
    assert len(notes) == len(provider.accepted) and str(config) in notes[0]
    for secret in ("rt-1", "at-1", "cs-secret"):
        assert secret not in done.stderr

    # The next run starts from the saved config: its first refresh presents the saved refresh token.
    time.sleep(3.0)  # the saved access token has died by now (unannounced): a 401, then one refresh
    before = len(provider.accepted)
    code, messages, stderr = run_protocol(manifest, config, "--streams", "others")
    assert code == 0, stderr
    assert [m["record"]["data"] for m in messages if m["type"] == "RECORD"] == [{"id": 1, "shard": "-"}]
    assert len(provider.accepted) == before + 1 and provider.accepted[-1].presented == saved["credentials"][
        "refresh_token"]
    assert [r for r in provider.refreshes if not r.accepted] == []


def test_protocol_mode_emits_one_control_message_per_rotation_and_its_config_works(fake_api, tmp_path):
    # Honest lifetimes: tokens are renewed before they expire (at half their life), never after a 401.
    provider = RotatingOAuth(fake_api, lifetime=2.0)
    serve_items(fake_api, provider, page_seconds=0.2)
    manifest, config = write_files(tmp_path, fake_api.url)
    given = config.read_text()

    code, messages, stderr = run_protocol(manifest, config, "--concurrency", "4")
    assert code == 0, stderr
    assert_one_refresh_per_expiry(provider)
    assert provider.rejected_calls == 0
    assert len([m for m in messages if m["type"] == "RECORD"]) == len(SHARDS) * PER_SHARD + 1
    controls = [m["control"] for m in messages if m["type"] == "CONTROL"]
    assert [c["type"] for c in controls] == ["CONNECTOR_CONFIG"] * len(provider.accepted)
    configs = [c["connectorConfig"]["config"] for c in controls]
    assert [c["credentials"]["refresh_token"] for c in configs] == [f"rt-{n}" for n in
                                                                     range(1, len(provider.accepted) + 1)]
    assert [c["credentials"]["access_token"] for c in configs] == [r.issued for r in provider.accepted]
    assert all(c["client_secret"] == "cs-secret" and c["base_url"] == fake_api.url for c in configs)
    assert config.read_text() == given and not Path(f"{config}.bak").exists()  # the platform saves it

    # The platform persists the last CONTROL config; the next run refreshes with its refresh token.
    config.write_text(json.dumps(configs[-1]))
    time.sleep(2.0)  # its access token has expired (announced): refreshed before the first request
    code, messages, stderr = run_protocol(manifest, config, "--streams", "others")
    assert code == 0, stderr
    assert provider.accepted[-1].presented == configs[-1]["credentials"]["refresh_token"]
    [control] = [m["control"] for m in messages if m["type"] == "CONTROL"]
    assert control["connectorConfig"]["config"]["credentials"]["refresh_token"] == provider.refresh_token
    assert [r for r in provider.refreshes if not r.accepted] == [] and provider.rejected_calls == 0


def test_spark_mode_says_it_in_json_lines_when_asked(tmp_path):
    import argparse

    from framework.cli.run import _config_sink

    config = tmp_path / "config.json"
    config.write_text(json.dumps({"credentials": {"refresh_token": "rt-0"}}))
    args = argparse.Namespace(protocol=False, check=False, log_format="json", config=str(config))
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        _config_sink(args, {"credentials": {"refresh_token": "rt-0"}}, io.BytesIO()).update(
            {("credentials", "refresh_token"): "rt-1"})
    [event] = [orjson.loads(line) for line in err.getvalue().splitlines()]
    assert {k: event[k] for k in ("event", "config", "backup", "reason")} == {
        "event": "config_saved", "config": str(config), "backup": f"{config}.bak", "reason": "oauth_tokens_rotated"}
    assert json.loads(config.read_text())["credentials"]["refresh_token"] == "rt-1" and "rt-1" not in err.getvalue()
