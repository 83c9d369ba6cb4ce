"""IncrementingCountCursor in Spark mode: integer cursor values travel back from the tasks and move the
saved state, one value per partition; the second run reads from them."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from engine.incremental_kit import option, source, stream, write

from framework.engine.connector import open_connector
from framework.engine.selection import select_streams
from framework.models.destination import DestinationSettings
from framework.spark.pipeline import PipelineOptions, run_pipeline
from framework.storage.state_store import STATE_KEY

pytestmark = pytest.mark.spark


def test_an_integer_cursor_per_partition_over_two_spark_runs(spark, fake_api, tmp_path):
    events = {"eu": [1, 4, 6], "us": [2, 3]}
    fake_api.route("GET", "/events", lambda r: {"data": [
        {"id": f"{r.param('region')}-{seq}", "seq": seq} for seq in events[r.param("region")]
        if seq >= int(r.param("since"))]})
    router = {"type": "ListPartitionRouter", "values": ["eu", "us"], "cursor_field": "region",
              "request_option": option("region")}
    cursor = {"type": "IncrementingCountCursor", "cursor_field": "seq", "start_value": 2,
              "start_value_option": option("since")}
    manifest = write(tmp_path, source(stream("events", "/events", incremental=cursor, router=router)))
    out = tmp_path / "out"
    settings = DestinationSettings.model_validate({"output": str(out), "format": {"format_type": "Parquet"}})

    def run():
        connector = open_connector(manifest, {"base_url": fake_api.url}, sleep=lambda seconds: None)
        result = run_pipeline(connector, manifest, select_streams(connector.streams, None), settings, spark,
                              options=PipelineOptions())
        assert not result.failed
        files = [Path(f["uri"]) for s in result.streams for f in s.files]
        rows = [row for path in files for row in pq.read_table(path).to_pylist()]
        return sorted(json.loads(row["_airbyte_data"])["id"] for row in rows)  # no properties: one JSON column

    assert run() == ["eu-4", "eu-6", "us-2", "us-3"]
    state = json.loads((out / STATE_KEY).read_text())["streams"]["events"]["state"]
    assert {e["partition"]["region"]: e["cursor"] for e in state["states"]} == {"eu": {"seq": 6}, "us": {"seq": 3}}
    events["us"].append(7)
    assert run() == ["eu-6", "us-3", "us-7"]
    assert sorted((r.param("region"), r.param("since")) for r in fake_api.requests[-2:]) == [("eu", "6"), ("us", "3")]
