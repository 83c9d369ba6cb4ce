"""A stream whose schema the API gives (DynamicSchemaLoader), end to end against the local API.

``--discover`` shows the schema read from ``/fields``; a protocol sync casts the
records to it; a Spark sync over several tasks reads ``/fields`` once (on the
driver: the executors get the schema with the connector) and lands Parquet
columns of the types the API named.
"""

from __future__ import annotations

import io
import json
import textwrap
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from fakes.api_server import FakeApi, RecordedRequest

from framework.cli.run import main
from framework.engine.connector import open_connector
from framework.engine.plan import open_sync
from framework.engine.worker import ConnectorSource, read_group, worker_connector

MANIFEST = textwrap.dedent("""\
    version: 6.7.0
    type: DeclarativeSource
    check: {type: CheckStream, stream_names: [people]}
    definitions:
      requester: {type: HttpRequester, url_base: "{{ config['base_url'] }}", http_method: GET}
    streams:
      - type: DeclarativeStream
        name: people
        primary_key: id
        retriever:
          type: SimpleRetriever
          requester: {$ref: "#/definitions/requester", path: "/people/{{ stream_partition.team }}"}
          record_selector:
            type: RecordSelector
            schema_normalization: Default
            extractor: {type: DpathExtractor, field_path: [data]}
          partition_router:
            type: ListPartitionRouter
            values: [red, green, blue]
            cursor_field: team
        schema_loader:
          type: DynamicSchemaLoader
          retriever:
            type: SimpleRetriever
            requester: {$ref: "#/definitions/requester", path: /fields}
            record_selector:
              type: RecordSelector
              extractor: {type: DpathExtractor, field_path: []}
          schema_type_identifier:
            schema_pointer: [columns]
            key_pointer: [label]
            type_pointer: [kind]
            types_mapping:
              - {current_type: int, target_type: integer}
              - {current_type: decimal, target_type: number}
              - {current_type: instant, target_type: timestamp_with_timezone}
              - {current_type: labels, target_type: {field_type: array, items: string}}
    """)

FIELDS = {"columns": [{"label": "id", "kind": "int"}, {"label": "name"}, {"label": "score", "kind": "decimal"},
                      {"label": "seen", "kind": "instant"}, {"label": "labels", "kind": "labels"}]}
TEAMS = {"red": 1, "green": 2, "blue": 3}


def people(request: RecordedRequest) -> dict:
    team = request.path.rsplit("/", 1)[-1]
    base = TEAMS[team] * 10
    return {"data": [{"id": str(base + i), "name": f"{team} {i}", "score": f"{base + i}.5",
                      "seen": f"2024-03-0{i}T10:00:00Z", "labels": [team]} for i in (1, 2)]}


@pytest.fixture
def api(fake_api: FakeApi) -> FakeApi:
    fake_api.route("GET", "/fields", lambda request: FIELDS)
    fake_api.route("GET", "/people/{team}", people)
    return fake_api


@pytest.fixture
def files(tmp_path, api):
    manifest = tmp_path / "manifest.yaml"
    manifest.write_text(MANIFEST)
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"base_url": api.url}))
    return str(manifest), str(config)


def run(files, *args: str) -> tuple[int, list[dict]]:
    out = io.BytesIO()
    code = main([files[0], "--config", files[1], *args], out=out)
    return code, [orjson.loads(line) for line in out.getvalue().splitlines() if line.startswith(b"{")]


def test_discover_shows_the_schema_the_api_gave(files, api):
    code, messages = run(files, "--discover")
    assert code == 0
    (catalog,) = [m["catalog"] for m in messages if m["type"] == "CATALOG"]
    (stream,) = catalog["streams"]
    assert stream["json_schema"]["properties"] == {
        "id": {"type": ["null", "integer"]}, "name": {"type": ["null", "string"]},
        "score": {"type": ["null", "number"]}, "seen": {"type": ["null", "string"], "format": "date-time"},
        "labels": {"type": ["null", "array"], "items": {"type": ["null", "string"]}}}
    assert len(api.received("/fields")) == 1 and not api.received(path="/people/red")


def test_a_protocol_sync_casts_records_to_the_schema_and_reads_it_once(files, api):
    code, messages = run(files, "--protocol")
    assert code == 0
    records = sorted((m["record"]["data"] for m in messages if m["type"] == "RECORD"), key=lambda r: r["id"])
    assert [r["id"] for r in records] == [11, 12, 21, 22, 31, 32]
    assert records[0]["score"] == 11.5
    assert len(api.received("/fields")) == 1


@pytest.mark.spark
def test_a_spark_sync_types_columns_by_the_schema_read_once_on_the_driver(spark, files, api, tmp_path):
    out = tmp_path / "out"
    code, _ = run(files, "--output", str(out), "--concurrency", "3", "--quiet")
    assert code == 0
    parts = sorted(p for p in (out / "people").iterdir() if p.suffix == ".parquet" and not p.name.startswith("."))
    table = pa.concat_tables([pq.read_table(p) for p in parts])
    assert table.schema.field("id").type == pa.int64()
    assert table.schema.field("score").type == pa.float64()
    assert pa.types.is_timestamp(table.schema.field("seen").type)
    assert table.schema.field("labels").type == pa.list_(pa.string())
    assert sorted(table.column("id").to_pylist()) == [11, 12, 21, 22, 31, 32]
    assert len(api.received(path="/people/red")) == 1 and len(api.received("/fields")) == 1


def test_a_worker_builds_the_connector_from_the_driver_schema_without_asking_the_api(files, api):
    driver = open_connector(files[0], json.loads(Path(files[1]).read_text()))
    source = ConnectorSource.of_connector(driver, files[0], Path(files[0]).read_text())
    assert len(api.received("/fields")) == 1
    worker = worker_connector(source)
    stream = worker.stream("people")
    assert stream.json_schema == driver.stream("people").json_schema
    assert stream.json_schema["properties"]["id"] == {"type": ["null", "integer"]}
    units = open_sync(driver, driver.stream("people"), None).plan()
    pages = [item for item in read_group(worker, stream, units, lambda records, at: (records, 0))
             if isinstance(item, list)]
    assert sorted(r["id"] for page in pages for r in page) == [11, 12, 21, 22, 31, 32]  # cast by that schema
    assert len(api.received("/fields")) == 1
