"""Protocol mode keeps as many requests in flight as the sync's limit says: airbyte-cdk's 2 when nothing is
said, the manifest's ``concurrency_level``, ``--concurrency N``; ``auto`` climbs until the API answers 429."""

from __future__ import annotations

import io
import json

import orjson
import pytest
from fakes.in_flight_api import MANIFEST, WINDOWS, Capped, every_id

from framework.cli.run import main


@pytest.fixture
def run(tmp_path, fake_api):
    def go(*args: str, level: str = "", cap: int = 0, latency: float = 0.1) -> tuple[list[dict], Capped]:
        endpoint = Capped(latency, cap)
        fake_api.route("GET", "/events", endpoint)
        manifest = tmp_path / "manifest.yaml"
        manifest.write_text(MANIFEST.format(level=level, end=WINDOWS))
        config = tmp_path / "config.json"
        config.write_text(json.dumps({"base_url": fake_api.url}))
        out = io.BytesIO()
        assert main([str(manifest), "--config", str(config), "--protocol", *args], out=out) == 0
        return [orjson.loads(line) for line in out.getvalue().splitlines()], endpoint

    return go


def _records(messages: list[dict]) -> list[int]:
    return sorted(m["record"]["data"]["id"] for m in messages if m["type"] == "RECORD")


def _logs(messages: list[dict]) -> list[str]:
    return [m["log"]["message"] for m in messages if m["type"] == "LOG"]


EVERY_ID = every_id(WINDOWS)


def test_without_a_level_two_requests_are_in_flight_as_airbyte_cdk_keeps_and_the_log_says_why(run):
    messages, api = run()
    assert _records(messages) == EVERY_ID
    assert api.most == 2
    (pace,) = [line for line in _logs(messages) if line.startswith("requests in flight")]
    assert "at most 2" in pace and "no concurrency_level" in pace


def test_the_manifests_level_is_kept_in_flight(run):
    messages, api = run(level="concurrency_level: {type: ConcurrencyLevel, default_concurrency: 6}")
    assert _records(messages) == EVERY_ID
    assert api.most == 6


def test_the_flag_overrides_the_manifest(run):
    messages, api = run("--concurrency", "3", level="concurrency_level: {type: ConcurrencyLevel, "
                                                   "default_concurrency: 6}")
    assert _records(messages) == EVERY_ID
    assert api.most == 3


def test_auto_climbs_until_the_api_pushes_back_and_then_keeps_under_its_cap(run):
    messages, api = run("--concurrency", "auto", cap=4, latency=0.05)
    assert _records(messages) == EVERY_ID  # the refused requests were retried
    assert api.most == 4
    (pace,) = [line for line in _logs(messages) if line.startswith("requests in flight")]
    assert api.refused <= 3, pace  # a probe past the cap now and then, not a flood


def test_a_level_above_the_apis_cap_is_lowered_by_its_429s(run):
    messages, api = run("--concurrency", "12", cap=3, latency=0.05)
    assert _records(messages) == EVERY_ID
    assert api.refused >= 1
    (pace,) = [line for line in _logs(messages) if line.startswith("requests in flight")]
    assert f"answered {api.refused} of" in pace and "went down to" in pace


def test_a_bad_concurrency_flag_is_refused_with_the_fix(tmp_path, capsys):
    manifest = tmp_path / "manifest.yaml"
    manifest.write_text(MANIFEST.format(level="", end=WINDOWS))
    with pytest.raises(SystemExit) as exited:
        main([str(manifest), "--config", "{}", "--protocol", "--concurrency", "0"])
    assert exited.value.code == 2
    assert "whole number of at least 1" in capsys.readouterr().err
