"""Asynchronous jobs in Spark mode (``run-manifest --master local[4]`` in a subprocess): 20 report jobs, some
failing once, read by several tasks at once; the jobs running at once in all tasks stay within the manifest's
``max_concurrent_async_job_count``, because the driver holds the slots."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import yaml
from engine.test_async_jobs_e2e import ACCOUNTS, report_stream, rows
from engine.test_reading import source
from fakes.api_server import ReportJobs
from spark.test_pipeline import read_parquet, saved_state

pytestmark = pytest.mark.spark


def test_twenty_jobs_over_four_cores_within_the_job_limit(fake_api, tmp_path):
    jobs = ReportJobs(rows, fail_once={"a02", "a09", "a15"}, polls=2, fmt="jsonl").install(fake_api)
    manifest = source(report_stream(fmt="jsonl"))
    manifest["max_concurrent_async_job_count"] = 3
    (tmp_path / "manifest.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False))
    (tmp_path / "config.json").write_text(json.dumps({"base_url": fake_api.url}))
    out = tmp_path / "out"
    env = {**os.environ, "FRAMEWORK_ASYNC_POLL_SECONDS": "0.05"}
    done = subprocess.run([sys.executable, "-m", "framework.cli.run", str(tmp_path / "manifest.yaml"), "--config",
                           str(tmp_path / "config.json"), "--output", str(out), "--master", "local[4]",
                           "--concurrency", "4", "--quiet"],
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    got = read_parquet(out, "report")
    assert [(r["id"], r["amount"]) for r in got] == sorted((f"{a}-{n}", n) for a in ACCOUNTS for n in range(3))
    assert 1 < jobs.peak <= 3  # jobs ran side by side, never more than the limit, all tasks counted
    assert len(jobs.created) == 23 and len(jobs.deleted) == 20
    assert "report" in saved_state(out)["streams"]  # a full refresh: no cursor, the stream is known
