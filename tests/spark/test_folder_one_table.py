"""A stream's folder reads as one table after its API changed shape, and --compact merges a substream's small
files: two syncs through run_pipeline on the shared session against the fake API, the second with a manifest
whose schema gained a field and changed two types, then the folder read by pyarrow.dataset, pq.read_table,
polars, DuckDB (no union_by_name) and Spark (no mergeSchema, no schema given)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
from fakes.api_server import paged

from framework.engine.connector import open_connector
from framework.engine.selection import select_streams
from framework.models.destination import DestinationSettings
from framework.spark.pipeline import PipelineOptions, run_pipeline
from framework.storage.state_store import STATE_KEY

pytestmark = pytest.mark.spark

MANIFEST = """\
version: 6.7.0
type: DeclarativeSource
definitions:
  requester: {type: HttpRequester, url_base: "{{ config.base_url }}"}
  selector: {type: RecordSelector, extractor: {type: DpathExtractor, field_path: [data]}}
  paginator:
    type: DefaultPaginator
    pagination_strategy: {type: PageIncrement, start_from_page: 1, page_size: 2}
    page_token_option: {type: RequestOption, inject_into: request_parameter, field_name: page}
    page_size_option: {type: RequestOption, inject_into: request_parameter, field_name: per_page}
  accounts:
    type: DeclarativeStream
    name: accounts
    primary_key: id
    schema_loader:
      type: InlineSchemaLoader
      schema: {type: object, properties: {id: {type: integer}}}
    retriever:
      type: SimpleRetriever
      requester: {$ref: "#/definitions/requester", path: /accounts}
      record_selector: {$ref: "#/definitions/selector"}
      paginator: {$ref: "#/definitions/paginator"}
streams:
  - type: DeclarativeStream
    name: events
    primary_key: id
    schema_loader:
      type: InlineSchemaLoader
      schema:
        type: object
        properties:
          id: {type: integer}
          amount: {type: AMOUNT}
          code: {type: CODE}
          PRIORITY
    retriever:
      type: SimpleRetriever
      requester: {$ref: "#/definitions/requester", path: /events}
      record_selector: {$ref: "#/definitions/selector"}
      paginator: {$ref: "#/definitions/paginator"}
  - {$ref: "#/definitions/accounts"}
  - type: DeclarativeStream
    name: orders
    primary_key: id
    schema_loader:
      type: InlineSchemaLoader
      schema: {type: object, properties: {id: {type: integer}, account_id: {type: integer}}}
    retriever:
      type: SimpleRetriever
      requester: {$ref: "#/definitions/requester", path: "/accounts/{{ stream_partition.account_id }}/orders"}
      record_selector: {$ref: "#/definitions/selector"}
      partition_router:
        type: SubstreamPartitionRouter
        parent_stream_configs:
          - {type: ParentStreamConfig, stream: {$ref: "#/definitions/accounts"}, parent_key: id,
             partition_field: account_id}
check: {type: CheckStream, stream_names: [events]}
spec:
  type: Spec
  connection_specification: {type: object, properties: {base_url: {type: string}}}
"""

FIRST = MANIFEST.replace("AMOUNT", "integer").replace("CODE", "integer").replace("PRIORITY", "")
SECOND = MANIFEST.replace("AMOUNT", "number").replace("CODE", "string") \
    .replace("PRIORITY", "priority: {type: string}")


def serve(fake_api, events: list[dict], accounts: int = 25) -> None:
    fake_api.route("GET", "/events", lambda request: paged(events, request))
    fake_api.route("GET", "/accounts", lambda request: paged([{"id": n} for n in range(1, accounts + 1)], request))
    fake_api.route("GET", "/accounts/{account}/orders",
                   lambda request: {"data": [{"id": int(request.path_params["account"]) * 10,
                                              "account_id": int(request.path_params["account"])}]})


def sync(spark: Any, manifest: str, url: str, out: Path, streams: list[str], **options: Any) -> Any:
    connector = open_connector(manifest, {"base_url": url}, sleep=lambda seconds: None)
    settings = DestinationSettings.model_validate({"output": str(out), "format": {"format_type": "Parquet"}})
    result = run_pipeline(connector, manifest, select_streams(connector.streams, None, streams), settings, spark,
                          options=PipelineOptions(**options))
    assert not result.failed, [s.error for s in result.streams]
    return result


def test_after_drift_every_reader_sees_every_column_and_record_once(spark, fake_api, write_manifest, tmp_path):
    out = tmp_path / "out"
    first = [{"id": n, "amount": n * 10, "code": n} for n in range(1, 6)]
    serve(fake_api, first)
    sync(spark, write_manifest(FIRST, "first.yaml"), fake_api.url, out, ["events"])
    second = [{"id": n, "amount": n + 0.5, "code": f"c{n}", "priority": "high" if n % 2 else None}
              for n in range(6, 11)]
    serve(fake_api, second)
    state_before = (out / STATE_KEY).read_text()
    result = sync(spark, write_manifest(SECOND, "second.yaml"), fake_api.url, out, ["events"])
    events = result.streams[0]
    assert events.folder.files_before >= 2 and events.folder.unified >= 1

    folder = str(out / "events")
    columns = ["_airbyte_raw_id", "_airbyte_extracted_at", "_airbyte_generation_id", "_airbyte_meta", "id",
               "amount", "code", "priority"]
    expected = sorted([(n, float(n * 10), str(n), None) for n in range(1, 6)]
                      + [(r["id"], r["amount"], r["code"], r["priority"]) for r in second])
    spark_frame = spark.read.parquet(folder)
    tables = {
        "pyarrow.dataset": ds.dataset(folder, format="parquet").to_table().to_pydict(),
        "pq.read_table": pq.read_table(folder).to_pydict(),
        "polars": pl.read_parquet(folder).to_dict(as_series=False),
        "duckdb": duckdb.sql(f"select * from read_parquet('{folder}/*.parquet')").arrow().read_all().to_pydict(),
        "spark": {c: [row[c] for row in spark_frame.collect()] for c in spark_frame.columns},
    }
    for reader, table in tables.items():
        assert list(table) == columns, reader
        assert sorted(zip(table["id"], table["amount"], table["code"], table["priority"])) == expected, reader
    state_after = json.loads((out / STATE_KEY).read_text())
    assert "publishing" not in state_after  # the rewrite's moves are done
    assert state_after["streams"]["events"] == json.loads(state_before)["streams"]["events"]  # full refresh: none


def test_compact_merges_a_substreams_small_files(spark, fake_api, write_manifest, tmp_path):
    manifest = write_manifest(FIRST, "first.yaml")
    serve(fake_api, [], accounts=25)
    plain, compacted = tmp_path / "plain", tmp_path / "compacted"
    for _ in range(2):
        sync(spark, manifest, fake_api.url, plain, ["orders"], tasks_per_core=4)
        result = sync(spark, manifest, fake_api.url, compacted, ["orders"], tasks_per_core=4, compact=True)
    orders = result.streams[0]
    files = sorted((plain / "orders").glob("*.parquet"))
    assert len(files) > 2  # one a task, each task a few accounts
    merged = sorted((compacted / "orders").glob("*.parquet"))
    assert len(merged) == 1 and orders.folder.files_after == 1 and orders.folder.merged == orders.folder.files_before - 1
    assert pq.read_table(str(compacted / "orders")).num_rows == pq.read_table(str(plain / "orders")).num_rows == 50
    assert sorted(pq.read_table(merged[0]).column("id").to_pylist()) == sorted([n * 10 for n in range(1, 26)] * 2)
