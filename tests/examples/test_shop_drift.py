"""The example shop API changes shape between two syncs, and under each schema drift policy the events' folder
reads as one table in pyarrow, polars, DuckDB and Spark (issue 35's "done when").

The API is restarted between the syncs in shape 2 (examples/shop/api.py ``SHAPES``): every event gains
``priority`` (a whole number) and ``payload`` comes as JSON text instead of an object, and new events are added.
Each reader opens the folder as it is (no ``union_by_name``, no ``mergeSchema``, no schema given) and must see
every landed record once and every column of every file.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from framework.engine.connector import open_connector
from framework.engine.selection import select_streams
from framework.models.destination import DestinationSettings
from framework.spark.pipeline import PipelineOptions, run_pipeline

pytestmark = pytest.mark.spark

SHOP_DIR = Path(__file__).resolve().parents[2] / "examples" / "shop"
MANIFEST = str(SHOP_DIR / "manifest.yaml")
# the manifest reads the last 60 days up to now: the shop's data ends a day ago, its newer events an hour ago
NOW = datetime.now(timezone.utc).replace(microsecond=0) - timedelta(days=1)
ENVELOPE = ["_airbyte_raw_id", "_airbyte_extracted_at", "_airbyte_generation_id", "_airbyte_meta"]
DECLARED = ["id", "kind", "occurred_at", "payload"]


def _load(name: str, path: Path) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


shop_api = _load("shop_api_drift", SHOP_DIR / "api.py")


def in_window(events: list[dict]) -> set[str]:
    """The ids of the events the connector reads: from 60 days ago, at midnight (its ``history_start``), but
    heartbeats (its record filter)."""
    start = (datetime.now(timezone.utc) - timedelta(days=60)).strftime("%Y-%m-%dT00:00:00Z")
    return {event["id"] for event in events if event["occurred_at"] >= start and event["kind"] != "heartbeat"}


def sync(spark: Any, url: str, out: Path, policy: str) -> int:
    """One sync of the events into ``out``; the records it landed."""
    config = {**json.loads((SHOP_DIR / "config.json").read_text()), "base_url": url}
    connector = open_connector(MANIFEST, config, sleep=lambda seconds: None)
    settings = DestinationSettings.model_validate({"output": str(out), "format": {"format_type": "Parquet"},
                                                   "schema_drift_streams": {"events": policy}})
    result = run_pipeline(connector, MANIFEST, select_streams(connector.streams, None, ["events"]), settings, spark,
                          options=PipelineOptions())
    assert not result.failed, [s.error for s in result.streams]
    return sum(s.records for s in result.streams)


def read_all(spark: Any, folder: str) -> dict[str, dict[str, list]]:
    """The folder as each reader opens it: ``{reader: {column: values}}``."""
    frame = spark.read.parquet(folder)
    rows = frame.collect()
    return {
        "pyarrow.dataset": ds.dataset(folder, format="parquet").to_table().to_pydict(),
        "pq.read_table": pq.read_table(folder).to_pydict(),
        "polars": pl.read_parquet(folder).to_dict(as_series=False),
        "duckdb": duckdb.sql(f"select * from read_parquet('{folder}/*.parquet')").arrow().read_all().to_pydict(),
        "spark": {column: [row[column] for row in rows] for column in frame.columns},
    }


@pytest.mark.parametrize("policy", ["drop", "keep", "evolve"])
def test_after_the_api_changed_shape_every_reader_sees_every_record_once_and_every_column(spark, tmp_path, policy):
    out = tmp_path / "out"
    with shop_api.ShopApi(now=NOW) as api:
        landed = sync(spark, api.url, out, policy)
        before = in_window(api.shop.events)
    with shop_api.ShopApi(now=NOW, shape=2) as api:  # the same data, restarted in the new shape, then newer events
        api.shop.advance(NOW + timedelta(hours=23))
        landed += sync(spark, api.url, out, policy)
        every_id = in_window(api.shop.events)
    new_ids = every_id - before
    assert new_ids

    folder = str(out / "events")
    files = sorted(Path(folder).glob("*.parquet"))
    assert len(files) >= 2
    schemas = {tuple(pq.read_schema(path).names) for path in files}
    assert len(schemas) == 1, f"the files differ in columns: {schemas}"
    (columns,) = schemas
    extra = {"drop": [], "keep": ["_airbyte_additional_properties"], "evolve": ["priority"]}[policy]
    assert list(columns) == ENVELOPE + DECLARED + extra

    for reader, table in read_all(spark, folder).items():
        assert list(table) == list(columns), reader
        ids = table["id"]
        assert len(ids) == landed, f"{reader}: {len(ids)} rows for {landed} landed"
        assert set(ids) == every_id, reader
        assert len(ids) - len(set(ids)) <= 1, f"{reader}: records twice beyond the cursor's inclusive start"
        if policy != "drop":  # the new field of every new event, kept or as a column; none in the older rows
            column = table["priority"] if policy == "evolve" else [
                None if kept is None else json.loads(kept).get("priority")
                for kept in table["_airbyte_additional_properties"]]
            pairs = list(zip(ids, column))
            assert all(value in (1, 2, 3) for i, value in pairs if i in new_ids), reader
            assert {i for i, value in pairs if value is None} == before, reader
