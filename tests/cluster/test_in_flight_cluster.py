"""One limit of requests in flight for the whole sync on a standalone cluster: two executors (two one-core
workers), each task reading several windows at once, never add up past the manifest's ``concurrency_level``,
against an API that counts the requests it has in flight."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from fakes.api_server import FakeApi
from fakes.in_flight_api import MANIFEST, Capped, every_id

pytestmark = [pytest.mark.spark, pytest.mark.cluster]

LEVEL = 3
WINDOWS = 24  # 4 groups of 6 windows: 2 tasks at once, 3 readers each, so 6 requests would be in flight unbounded


def test_two_executors_keep_the_manifests_level_together(spark_cluster, tmp_path):
    with FakeApi() as api:
        endpoint = Capped(latency=0.15)  # counts only: nothing refused, so a breach shows in `most`
        api.route("GET", "/events", endpoint)
        manifest, config = tmp_path / "manifest.yaml", tmp_path / "config.json"
        manifest.write_text(MANIFEST.format(
            level=f"concurrency_level: {{type: ConcurrencyLevel, default_concurrency: {LEVEL}}}", end=WINDOWS))
        config.write_text(json.dumps({"base_url": api.url}))
        env = dict(os.environ, PYSPARK_PYTHON=os.environ.get("PYSPARK_PYTHON", sys.executable))
        env.pop("SPARK_REMOTE", None)
        done = subprocess.run([sys.executable, "-m", "framework.cli.run", str(manifest), "--config", str(config),
                               "--output", str(tmp_path / "out"), "--format", "jsonl", "--log-format", "json",
                               "--master", spark_cluster.master_url, "--shared-path"],
                              capture_output=True, text=True, env=env, timeout=300, check=False)
        assert done.returncode == 0, done.stderr[-3000:]
        rows = [json.loads(line) for path in (tmp_path / "out" / "events").rglob("*.jsonl")
                for line in path.read_text().splitlines()]
        assert sorted(row["_airbyte_data"]["id"] for row in rows) == every_id(WINDOWS)
        assert endpoint.most == LEVEL, f"the API saw {endpoint.most} requests in flight at most"
        (summary,) = [json.loads(line) for line in done.stderr.splitlines()
                      if line.startswith("{") and json.loads(line).get("event") == "summary"]
        pace = summary["in_flight"]
        assert (pace["concurrency"], pace["concurrency_level"], pace["rate_limited"]) == ("manifest", LEVEL, 0)
        assert pace["most_in_flight"] == LEVEL and pace["requests"] == WINDOWS + 1  # the connection check first
