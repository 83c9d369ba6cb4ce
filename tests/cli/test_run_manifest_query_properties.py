"""``run-manifest`` end to end on a stream whose records come from several requests per page.

The fake API (``tests/fakes/properties_api.py``) answers only the properties a
request names; the manifest reads the property list from ``/properties``,
asks for three properties per request and merges the answers by ``id``, in
two partitions read at once, pages of three. Protocol mode, once with a
catalog that selects two properties; Spark mode once, where each task merges
the chunks it reads and the driver alone reads the property list; and the
DataFrame reader, whose driver reads it too.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from fakes.api_server import FakeApi
from fakes.properties_api import PROPERTIES, serve_properties_api

from framework.cli.run import main

MANIFEST = """
version: 6.7.0
type: DeclarativeSource
check: {type: CheckStream, stream_names: [contacts]}
definitions:
  selector: {type: RecordSelector, extractor: {type: DpathExtractor, field_path: [results]}}
streams:
  - type: DeclarativeStream
    name: contacts
    primary_key: [id, region]
    schema_loader:
      type: InlineSchemaLoader
      schema:
        type: object
        properties:
          id: {type: string}
          region: {type: string}
          updated_at: {type: string}
          properties:
            type: object
            properties: PROPERTY_SCHEMA
    transformations:
      - type: AddFields
        fields: [{path: [region], value: "{{ stream_partition.region }}"}]
    retriever:
      type: SimpleRetriever
      partition_router:
        type: ListPartitionRouter
        values: [eu, us]
        cursor_field: region
        request_option: {type: RequestOption, inject_into: request_parameter, field_name: region}
      requester:
        type: HttpRequester
        url_base: "{{ config['base_url'] }}"
        path: /contacts
        request_parameters:
          properties:
            type: QueryProperties
            property_list:
              type: PropertiesFromEndpoint
              property_field_path: [name]
              retriever:
                type: SimpleRetriever
                requester: {type: HttpRequester, url_base: "{{ config['base_url'] }}", path: /properties}
                record_selector: {$ref: "#/definitions/selector"}
                paginator:
                  type: DefaultPaginator
                  pagination_strategy: {type: PageIncrement, page_size: 2, start_from_page: 1}
                  page_token_option: {type: RequestOption, inject_into: request_parameter, field_name: page}
            property_chunking:
              type: PropertyChunking
              property_limit_type: property_count
              property_limit: 3
              record_merge_strategy: {type: GroupByKeyMergeStrategy, key: id}
            property_selector: {type: JsonSchemaPropertySelector}
      record_selector: {$ref: "#/definitions/selector"}
      paginator:
        type: DefaultPaginator
        pagination_strategy: {type: PageIncrement, page_size: 3, start_from_page: 1}
        page_token_option: {type: RequestOption, inject_into: request_parameter, field_name: page}
        page_size_option: {type: RequestOption, inject_into: request_parameter, field_name: per_page}
spec:
  type: Spec
  connection_specification: {type: object, required: [base_url], properties: {base_url: {type: string}}}
""".replace("PROPERTY_SCHEMA", json.dumps({name: {"type": "string"} for name in PROPERTIES}))


@pytest.fixture
def files(tmp_path: Path, fake_api: FakeApi) -> tuple[str, str]:
    serve_properties_api(fake_api)
    manifest = tmp_path / "manifest.yaml"
    manifest.write_text(MANIFEST)
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"base_url": fake_api.url}))
    return str(manifest), str(config)


def records_of(stdout: bytes) -> list[dict]:
    messages = [json.loads(line) for line in stdout.splitlines()]
    return [m["record"]["data"] for m in messages if m["type"] == "RECORD"]


def test_protocol_mode_merges_the_chunks_of_each_page(files: tuple[str, str], fake_api: FakeApi) -> None:
    out = io.BytesIO()
    code = main([files[0], "--config", files[1], "--protocol", "--concurrency", "2"], out=out)
    assert code == 0
    records = records_of(out.getvalue())
    assert sorted((r["region"], r["id"]) for r in records) == sorted(
        (region, f"c{i}") for region in ("eu", "us") for i in range(7))
    assert all(r["properties"] == {name: f"{name}-{r['id'][1:]}" for name in PROPERTIES} for r in records)
    contacts = fake_api.received("/contacts")
    assert len(contacts) == 2 * 3 * 3  # partitions x pages x chunks
    assert {r.param("properties") for r in contacts} == {
        ",".join(PROPERTIES[:3]), ",".join(PROPERTIES[3:6]), ",".join(PROPERTIES[6:])}
    assert len(fake_api.received("/properties")) == 4  # read once for the sync: pages 1 to 4


def test_protocol_mode_asks_for_the_properties_the_catalog_selects(files: tuple[str, str], fake_api: FakeApi,
                                                                    tmp_path: Path) -> None:
    catalog = tmp_path / "catalog.json"
    catalog.write_text(json.dumps({"streams": [{
        "stream": {"name": "contacts", "json_schema": {"properties": {"city": {}, "email": {}}},
                   "supported_sync_modes": ["full_refresh"]},
        "sync_mode": "full_refresh", "destination_sync_mode": "overwrite"}]}))
    out = io.BytesIO()
    assert main([files[0], "--config", files[1], "--protocol", "--catalog", str(catalog)], out=out) == 0
    records = records_of(out.getvalue())
    assert len(records) == 14 and all(set(r["properties"]) == {"email", "city"} for r in records)
    assert {r.param("properties") for r in fake_api.received("/contacts")} == {"email,city"}


@pytest.mark.spark
def test_spark_mode_merges_in_the_task_and_reads_the_property_list_once(spark, files: tuple[str, str],
                                                                        fake_api: FakeApi, tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    out = tmp_path / "out"
    code = main([files[0], "--config", files[1], "--output", str(out), "--quiet"], out=io.BytesIO())
    assert code == 0
    rows = [row for path in sorted((out / "contacts").glob("*.parquet")) for row in pq.read_table(path).to_pylist()]
    assert sorted((r["region"], r["id"]) for r in rows) == sorted(
        (region, f"c{i}") for region in ("eu", "us") for i in range(7))
    assert all(r["properties"] == {name: f"{name}-{r['id'][1:]}" for name in PROPERTIES} for r in rows)
    assert len(fake_api.received("/contacts")) == 2 * 3 * 3
    assert len(fake_api.received("/properties")) == 4  # by the driver; the tasks got the list with the connector


@pytest.mark.spark
def test_the_dataframe_reader_reads_the_property_list_once_on_the_driver(spark, files: tuple[str, str],
                                                                         fake_api: FakeApi) -> None:
    from framework.spark.datasource import register

    register(spark)
    frame = (spark.read.format("manifest").option("manifest", files[0]).option("config", files[1])
             .option("stream", "contacts").option("partitions", "2").load())
    rows = [row.asDict(recursive=True) for row in frame.collect()]
    assert len(rows) == 14
    assert all(r["properties"] == {name: f"{name}-{r['id'][1:]}" for name in PROPERTIES} for r in rows)
    assert len(fake_api.received("/properties")) == 4
