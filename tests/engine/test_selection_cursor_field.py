"""`allow_catalog_defined_cursor_field`: discover says the cursor is not source-defined, and a configured
catalog's cursor field replaces the manifest's (a nested one is refused)."""

from __future__ import annotations

import io

import orjson
import pytest
from engine.incremental_kit import source, stream, sync, write

from framework.engine.connector import open_connector
from framework.engine.selection import select_streams
from framework.errors import ConfigError
from framework.protocol.discover import discover
from framework.protocol.read import read


def manifest(allow: bool | None) -> dict:
    cursor = {"type": "IncrementingCountCursor", "cursor_field": "id"}
    if allow is not None:
        cursor["allow_catalog_defined_cursor_field"] = allow
    return source(stream("events", "/events", incremental=cursor))


def catalog(field: list[str]) -> dict:
    return {"streams": [{"stream": {"name": "events", "json_schema": {}}, "sync_mode": "incremental",
                         "destination_sync_mode": "append", "cursor_field": field}]}


@pytest.mark.parametrize("allow", [True, False, None])
def test_discover_says_whether_the_catalog_may_choose_the_cursor(tmp_path, allow):
    [entry] = discover(write(tmp_path, manifest(allow)), {"base_url": "http://localhost"})
    assert entry["source_defined_cursor"] is not bool(allow)
    assert entry["default_cursor_field"] == ["id"]


def test_the_catalog_field_is_taken_only_where_allowed_and_only_top_level(tmp_path):
    allowed = open_connector(write(tmp_path, manifest(True)), {"base_url": "http://localhost"})
    assert select_streams(allowed.streams, catalog(["seq"]))[0].cursor_field == "seq"
    assert select_streams(allowed.streams, catalog([""]))[0].cursor_field is None  # "no cursor", as Airbyte reads it
    with pytest.raises(ConfigError, match="nested cursor field"):
        select_streams(allowed.streams, catalog(["a", "b"]))
    refused = open_connector(write(tmp_path, manifest(False), "other.yaml"), {"base_url": "http://localhost"})
    assert select_streams(refused.streams, catalog(["seq"]))[0].cursor_field is None


def test_a_sync_keeps_the_catalogs_cursor_field_in_its_state(tmp_path, fake_api):
    fake_api.route("GET", "/events", {"data": [{"id": 9, "seq": 1}, {"id": 3, "seq": 5}]})
    path = write(tmp_path, manifest(True))
    connector = open_connector(path, {"base_url": fake_api.url})
    out = io.BytesIO()
    read(connector, select_streams(connector.streams, catalog(["seq"])), {}, out, io.StringIO())
    states = [m["state"]["stream"]["stream_state"] for m in map(orjson.loads, out.getvalue().splitlines())
              if m["type"] == "STATE"]
    assert states[-1] == {"seq": 5}
    assert sync(path, fake_api).state == {"id": 9}  # without a catalog: the manifest's field


@pytest.mark.spark
def test_spark_mode_keeps_the_catalogs_cursor_field_on_the_driver_and_in_the_tasks(tmp_path, fake_api, spark):
    from framework.models.destination import DestinationSettings
    from framework.spark.pipeline import PipelineOptions, run_pipeline
    from framework.storage.state_store import STATE_KEY

    fake_api.route("GET", "/events", {"data": [{"id": 9, "seq": 1}, {"id": 3, "seq": 5}]})
    path = write(tmp_path, manifest(True))
    connector = open_connector(path, {"base_url": fake_api.url})
    out = tmp_path / "out"
    settings = DestinationSettings.model_validate({"output": str(out), "format": {"format_type": "Parquet"}})
    result = run_pipeline(connector, path, select_streams(connector.streams, catalog(["seq"])), settings, spark,
                          options=PipelineOptions(tasks_per_core=1))
    assert result.streams[0].error is None and result.streams[0].records == 2
    saved = orjson.loads((out / STATE_KEY).read_bytes())
    assert saved["streams"]["events"]["state"] == {"seq": 5}  # the tasks read the catalog's field, as the driver
