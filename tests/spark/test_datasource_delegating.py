"""``spark.read.format("manifest")`` of a StateDelegatingStream: the definition the state picks, on the executors."""

from __future__ import annotations

import json

import pytest
from cli.test_run_manifest_migrations import MANIFEST, api  # noqa: F401 - the fake API with its routes

from framework.spark.datasource import register

pytestmark = pytest.mark.spark


def _ids(spark, path, api, state=None) -> list[int]:  # noqa: F811
    register(spark)
    reader = (spark.read.format("manifest").option("manifest", str(path))
              .option("config_json", json.dumps({"base_url": api.url, "region": "eu"}))
              .option("stream", "customers").option("partitions", "2"))
    if state is not None:
        reader = reader.option("state", json.dumps(state))
    return sorted(row["id"] for row in reader.load().select("id").collect())


def test_the_dataframe_reads_the_definition_the_state_picks(spark, api, tmp_path):  # noqa: F811
    path = tmp_path / "manifest.yaml"
    path.write_text(MANIFEST)
    assert _ids(spark, path, api) == [1, 2]
    assert {r.path for r in api.received()} == {"/customers"}
    api.requests.clear()
    assert _ids(spark, path, api, {"updated_at": "2024-01-05T00:00:00Z"}) == [3]
    assert [(r.path, r.param("since")) for r in api.received()] == [("/events", "2024-01-05T00:00:00Z")]
