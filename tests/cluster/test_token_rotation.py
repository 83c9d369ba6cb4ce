"""One token for the whole sync on a standalone cluster: the executors (other processes, other workers) get
the driver's token; a token that dies mid-sync is refreshed once; the rotated config is saved and works."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fakes.api_server import FakeApi
from fakes.rotating_oauth import MANIFEST, PER_SHARD, SHARDS, RotatingOAuth, serve_items

pytestmark = [pytest.mark.spark, pytest.mark.cluster]


def test_a_cluster_sync_refreshes_once_per_expiry_and_saves_the_rotated_config(spark_cluster, tmp_path):
    with FakeApi() as api:
        provider = RotatingOAuth(api, lifetime=3.0, announced=3600)
        serve_items(api, provider, page_seconds=0.3)
        manifest, config = tmp_path / "manifest.yaml", tmp_path / "config.json"
        manifest.write_text(MANIFEST)
        config.write_text(json.dumps({"base_url": api.url, "client_secret": "cs-secret",
                                      "credentials": {"refresh_token": "rt-0"}}))
        env = dict(os.environ, PYSPARK_PYTHON=os.environ.get("PYSPARK_PYTHON", sys.executable))
        env.pop("SPARK_REMOTE", None)
        done = subprocess.run([sys.executable, "-m", "framework.cli.run", str(manifest), "--config", str(config),
                               "--output", str(tmp_path / "out"), "--format", "jsonl", "--streams", "items",
                               "--master", spark_cluster.master_url, "--shared-path"],
                              capture_output=True, text=True, env=env, timeout=300, check=False)
        assert done.returncode == 0, done.stderr[-3000:]
        assert [r for r in provider.refreshes if not r.accepted] == []
        assert provider.refreshes_while_valid() == []
        assert len(provider.accepted) >= 2, "the sync should have outlived its first access token"
        rows = [json.loads(line) for path in (tmp_path / "out" / "items").rglob("*.jsonl")
                for line in path.read_text().splitlines()]
        assert len(rows) == len(SHARDS) * PER_SHARD
        saved = json.loads(config.read_text())
        assert saved["credentials"]["refresh_token"] == provider.refresh_token
        assert Path(f"{config}.bak").exists()
        notes = [line for line in done.stderr.splitlines() if "the refreshed OAuth tokens were saved to" in line]
        assert len(notes) == len(provider.accepted)
