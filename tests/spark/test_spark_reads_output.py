"""Spark reads what the sink lands, in every format, with no hand-written schema.

A stream with every field type the sink writes (scalars, dates, times with and
without timezone, timestamps, objects, schemaless objects and arrays, arrays of
objects, unions of the seed's two forms, a value that does not fit) and a stream
without properties (the ``_airbyte_data`` column) are landed through
``run_pipeline`` against the fake API, in each format, and read back through the
shared Spark session: Parquet with ``spark.read.parquet``, Avro with the
framework's ``fastavro`` data source, JSONL with ``spark.read.json``, CSV with
``spark.read.csv(header=True)`` (plus the RFC 4180 options the docs give), and
Replicant's change-data files as CSV and JSON.
"""

from __future__ import annotations

import json
from datetime import date, datetime, time, timezone
from pathlib import Path
from typing import Any

import fastavro
import pytest
from fakes.api_server import FakeApi, paged

from framework.engine.connector import open_connector
from framework.engine.selection import select_streams
from framework.models.destination import DestinationSettings
from framework.spark.avro_source import register
from framework.spark.datasource import read_stream
from framework.spark.pipeline import run_pipeline

pytestmark = pytest.mark.spark

MANIFEST = """\
version: 6.7.0
type: DeclarativeSource
definitions:
  retriever:
    type: SimpleRetriever
    requester: {type: HttpRequester, url_base: "{{ config.base_url }}", path: /things}
    record_selector: {type: RecordSelector, extractor: {type: DpathExtractor, field_path: [data]}}
    paginator:
      type: DefaultPaginator
      pagination_strategy: {type: PageIncrement, start_from_page: 1, page_size: 2}
      page_token_option: {type: RequestOption, inject_into: request_parameter, field_name: page}
      page_size_option: {type: RequestOption, inject_into: request_parameter, field_name: per_page}
streams:
  - type: DeclarativeStream
    name: things
    primary_key: id
    schema_loader:
      type: InlineSchemaLoader
      schema:
        type: object
        properties:
          id: {type: integer}
          name: {type: string}
          price: {type: number}
          active: {type: boolean}
          day: {type: string, format: date}
          at_time: {type: string, format: time, airbyte_type: time_with_timezone}
          local_time: {type: string, format: time, airbyte_type: time_without_timezone}
          seen: {type: string, format: date-time, airbyte_type: timestamp_with_timezone}
          local_ts: {type: string, format: date-time, airbyte_type: timestamp_without_timezone}
          address: {type: object, properties: {city: {type: string}, zip: {type: integer}}}
          extra: {type: object}
          tags: {type: array}
          scores: {type: array, items: {type: integer}}
          lines:
            type: array
            items: {type: object, properties: {sku: {type: string}, qty: {type: integer}}}
          code: {oneOf: [{type: integer}, {type: string}]}
          when: {oneOf: [{type: integer}, {type: string, format: date-time, airbyte_type: timestamp_with_timezone}]}
          mixed: {type: array, items: {oneOf: [{type: integer}, {type: string}]}}
    retriever: {$ref: "#/definitions/retriever"}
  - type: DeclarativeStream
    name: blobs
    primary_key: id
    schema_loader: {type: InlineSchemaLoader, schema: {type: object}}
    retriever: {$ref: "#/definitions/retriever", requester: {$ref: "#/definitions/retriever/requester", path: /blobs}}
check: {type: CheckStream, stream_names: [things]}
spec:
  type: Spec
  connection_specification: {type: object, properties: {base_url: {type: string}}}
"""


def thing(i: int, **more: Any) -> dict:
    record = {"id": i, "name": f"thing, \"{i}\"", "price": i + 0.5, "active": i % 2 == 0, "day": "2024-03-05",
              "at_time": "12:00:00-01:00", "local_time": "04:05:06", "seen": "2024-01-01T06:00:00Z",
              "local_ts": "2024-03-05T06:07:08", "address": {"city": "Oslo", "zip": 150},
              "extra": {"id": 1, "note": "a, b"}, "tags": [1, "x"], "scores": [1, 2],
              "lines": [{"sku": "A", "qty": 1}, {"sku": "B", "qty": 2}], "code": i,
              "when": "2024-01-02T03:04:05Z", "mixed": [1, "x"]}
    record.update(more)
    return record


THINGS = [thing(1), thing(2, code="B2", when=7, price="cheap"), thing(3, at_time="04:00:00+05:30"), thing(4)]
BLOBS = [{"id": 1, "free": {"a": [1, 2]}}, {"id": 2, "free": "text"}, {"id": 3}]


@pytest.fixture
def api(fake_api: FakeApi) -> FakeApi:
    fake_api.route("GET", "/things", lambda request: paged(THINGS, request, default_page_size=2))
    fake_api.route("GET", "/blobs", lambda request: paged(BLOBS, request, default_page_size=2))
    return fake_api


def land(api: FakeApi, write_manifest: Any, spark: Any, out: Path, fmt: dict, *,
         streams: list[str] | None = None) -> None:
    manifest = write_manifest(MANIFEST)
    connector = open_connector(manifest, {"base_url": api.url}, sleep=lambda seconds: None)
    settings = DestinationSettings.model_validate({"output": str(out), "format": fmt})
    result = run_pipeline(connector, manifest, select_streams(connector.streams, None, streams), settings, spark)
    assert [s.error for s in result.streams] == [None] * len(streams or ["things", "blobs"])


def by_id(rows: list) -> dict:
    return {int(r["id"]): r.asDict(recursive=True) for r in rows}


def check_typed(rows: dict, *, member: str, sync_id: int = 1) -> None:
    """The things as a typed reader sees them (Parquet, Avro): every value where it belongs."""
    assert sorted(rows) == [1, 2, 3, 4]
    first, second, third = rows[1], rows[2], rows[3]
    assert first["name"] == 'thing, "1"' and first["price"] == 1.5 and first["active"] is False
    assert first["day"] == date(2024, 3, 5)
    assert first["at_time"] == time(13, 0) and third["at_time"] == time(22, 30)  # converted to UTC
    assert first["local_time"] == time(4, 5, 6)
    assert first["seen"] == local(datetime(2024, 1, 1, 6))
    assert first["local_ts"] == local(datetime(2024, 3, 5, 6, 7, 8))  # wall clock kept, stored as UTC
    assert first["address"] == {"city": "Oslo", "zip": 150}
    assert json.loads(first["extra"]) == {"id": 1, "note": "a, b"} and json.loads(first["tags"]) == [1, "x"]
    assert first["scores"] == [1, 2]
    assert first["lines"] == [{"sku": "A", "qty": 1}, {"sku": "B", "qty": 2}]
    assert second["price"] is None
    assert [(c["field"], c["change"]) for c in second["_airbyte_meta"]["changes"]] == [("price", "NULLED")]
    assert first["_airbyte_meta"] == {"sync_id": sync_id, "changes": []}
    assert first["_airbyte_generation_id"] == 0 and len(first["_airbyte_raw_id"]) == 36
    assert isinstance(first["_airbyte_extracted_at"], datetime)
    if member == "parquet":  # the seed's disjoint record: {type, <member>...}
        assert first["code"] == {"type": "integer", "integer": 1, "string": None}
        assert second["code"] == {"type": "string", "integer": None, "string": "B2"}
        assert first["mixed"][1] == {"type": "string", "integer": None, "string": "x"}
    else:  # an Avro union of two types, as spark-avro reads it: member0, member1
        assert first["code"] == {"member0": 1, "member1": None} and second["code"] == {"member0": None,
                                                                                         "member1": "B2"}
        assert first["mixed"] == [{"member0": 1, "member1": None}, {"member0": None, "member1": "x"}]
    # a union whose members share one Avro type (long) is the disjoint record in both formats
    assert first["when"]["type"] == "timestamp_with_timezone"
    assert first["when"]["timestamp_with_timezone"] == local(datetime(2024, 1, 2, 3, 4, 5))
    assert second["when"]["type"] == "integer" and second["when"]["integer"] == 7


def local(utc: datetime) -> datetime:
    """A UTC instant as Spark hands a ``timestamp`` to Python: naive, in this process's time zone."""
    return utc.replace(tzinfo=timezone.utc).astimezone().replace(tzinfo=None)


def check_blobs(rows: dict) -> None:
    assert sorted(rows) == [1, 2, 3]
    assert json.loads(rows[1]["_airbyte_data"]) == {"id": 1, "free": {"a": [1, 2]}}
    assert json.loads(rows[3]["_airbyte_data"]) == {"id": 3}


def typed_rows(frame: Any) -> dict:
    return {r["id"]: r.asDict(recursive=True) for r in frame.collect()}


def blob_rows(frame: Any) -> dict:
    return {json.loads(r["_airbyte_data"])["id"]: r.asDict(recursive=True) for r in frame.collect()}


# ------------------------------------------------------------------------------------------- Parquet


def test_parquet_opens_with_spark_read_parquet_and_no_schema(api, write_manifest, spark, tmp_path):
    out = tmp_path / "out"
    land(api, write_manifest, spark, out, {"format_type": "Parquet"})
    frame = spark.read.parquet(str(out / "things"))
    types = dict(frame.dtypes)
    assert types["at_time"] == types["local_time"] == "time(6)"
    assert types["seen"] == types["local_ts"] == types["_airbyte_extracted_at"] == "timestamp"
    assert types["day"] == "date" and types["extra"] == "string"
    check_typed(typed_rows(frame), member="parquet")
    check_blobs(blob_rows(spark.read.parquet(str(out / "blobs"))))
    # the DataFrame reader of the same stream (nothing landed) has the same columns and types
    streamed = read_stream(spark, write_manifest(MANIFEST), {"base_url": api.url}, "things")
    assert streamed.dtypes == frame.dtypes
    check_typed(typed_rows(streamed), member="parquet", sync_id=0)  # no sync: no sync id


def test_the_s3_exact_form_of_times_is_refused_by_spark_as_the_docs_say(api, write_manifest, spark, tmp_path):
    out = tmp_path / "out"
    land(api, write_manifest, spark, out, {"format_type": "Parquet", "time_adjusted_to_utc": True})
    with pytest.raises(Exception, match="PARQUET_TYPE_ILLEGAL"):
        spark.read.parquet(str(out / "things")).collect()
    # the other columns still read with a schema that leaves the times out
    frame = spark.read.schema("id bigint, day date, seen timestamp").parquet(str(out / "things"))
    assert sorted(r["id"] for r in frame.collect()) == [1, 2, 3, 4]


# ---------------------------------------------------------------------------------------------- Avro


def test_avro_opens_with_the_fastavro_data_source(api, write_manifest, spark, tmp_path):
    out = tmp_path / "out"
    land(api, write_manifest, spark, out, {"format_type": "Avro"})
    register(spark)
    frame = spark.read.format("fastavro").load(str(out / "things"))
    types = dict(frame.dtypes)
    assert types["at_time"] == "time(6)" and types["seen"] == "timestamp" and types["day"] == "date"
    check_typed(typed_rows(frame), member="avro")
    check_blobs(blob_rows(spark.read.format("fastavro").load(str(out / "blobs"))))


def test_avro_on_s3_opens_with_the_destination_it_was_landed_with(api, write_manifest, spark, tmp_path,
                                                                   s3_settings):
    settings = s3_settings(format={"format_type": "Avro"})
    manifest = write_manifest(MANIFEST)
    connector = open_connector(manifest, {"base_url": api.url}, sleep=lambda seconds: None)
    result = run_pipeline(connector, manifest, select_streams(connector.streams, None, ["things"]), settings, spark)
    assert result.streams[0].error is None
    destination = tmp_path / "destination.json"
    destination.write_text(settings.model_dump_json(by_alias=True))
    register(spark)
    frame = spark.read.format("fastavro").option("destination", str(destination)).load("things")
    check_typed(typed_rows(frame), member="avro")


def test_avro_files_whose_schema_grew_read_as_one_table(spark, tmp_path):
    folder = tmp_path / "events"
    (folder / "2024").mkdir(parents=True)
    (folder / "_airbyte_internal").mkdir()
    old = {"type": "record", "name": "events", "fields": [{"name": "id", "type": "long"}]}
    new = {**old, "fields": [*old["fields"], {"name": "priority", "type": ["null", "string"]}]}
    for path, schema, rows in ((folder / "1.avro", old, [{"id": 1}]),
                               (folder / "2024" / "2.avro", new, [{"id": 2, "priority": "high"}]),
                               (folder / "_airbyte_internal" / "3.avro", new, [{"id": 3, "priority": "x"}])):
        with open(path, "wb") as handle:
            fastavro.writer(handle, fastavro.parse_schema(schema), rows)
    register(spark)
    frame = spark.read.format("fastavro").load(str(folder))
    assert frame.columns == ["id", "priority"]
    assert sorted((r["id"], r["priority"]) for r in frame.collect()) == [(1, None), (2, "high")]
    one = spark.read.format("fastavro").load(str(folder / "1.avro"))
    assert [tuple(r) for r in one.collect()] == [(1,)]


def test_a_folder_without_avro_files_is_refused_with_the_fix(spark, tmp_path):
    register(spark)
    (tmp_path / "empty").mkdir()
    with pytest.raises(Exception, match="no Avro files"):
        spark.read.format("fastavro").load(str(tmp_path / "empty")).collect()
    with pytest.raises(Exception, match="no such folder or file"):
        spark.read.format("fastavro").load(str(tmp_path / "nowhere")).collect()


# ------------------------------------------------------------------------------------- JSONL and CSV


@pytest.mark.parametrize("compression", ["No Compression", "GZIP"])
def test_jsonl_opens_with_spark_read_json(api, write_manifest, spark, tmp_path, compression):
    nested, flat = tmp_path / "nested", tmp_path / "flat"
    codec = {"compression_type": compression}
    land(api, write_manifest, spark, nested, {"format_type": "JSONL", "compression": codec})
    land(api, write_manifest, spark, flat, {"format_type": "JSONL", "flattening": "Root level flattening",
                                            "compression": codec})
    rows = {r["_airbyte_data"]["id"]: r.asDict(recursive=True)
            for r in spark.read.json(str(nested / "things")).collect()}
    assert sorted(rows) == [1, 2, 3, 4]
    assert rows[2]["_airbyte_data"]["price"] == "cheap"  # raw: written as it came
    assert rows[1]["_airbyte_data"]["lines"][1] == {"sku": "B", "qty": 2}
    assert rows[1]["_airbyte_meta"]["changes"] == []
    flat_rows = by_id(spark.read.json(str(flat / "things")).collect())
    assert sorted(flat_rows) == [1, 2, 3, 4]
    assert flat_rows[1]["name"] == 'thing, "1"' and flat_rows[1]["address"] == {"city": "Oslo", "zip": 150}
    assert {r["id"] for r in spark.read.json(str(flat / "blobs")).collect()} == {1, 2, 3}


@pytest.mark.parametrize("compression", ["No Compression", "GZIP"])
def test_csv_opens_with_spark_read_csv_header(api, write_manifest, spark, tmp_path, compression):
    nested, flat = tmp_path / "nested", tmp_path / "flat"
    codec = {"compression_type": compression}
    land(api, write_manifest, spark, nested, {"format_type": "CSV", "compression": codec})
    land(api, write_manifest, spark, flat, {"format_type": "CSV", "flattening": "Root level flattening",
                                            "compression": codec})
    # RFC 4180 quoting: a quote inside a cell is doubled, which Spark reads with escape='"'
    frame = spark.read.csv(str(nested / "things"), header=True, escape='"', multiLine=True)
    assert "_airbyte_data" in frame.columns and "_airbyte_raw_id" in frame.columns
    rows = {json.loads(r["_airbyte_data"])["id"]: r.asDict() for r in frame.collect()}
    assert sorted(rows) == [1, 2, 3, 4]
    assert json.loads(rows[1]["_airbyte_data"])["name"] == 'thing, "1"'
    assert json.loads(rows[1]["_airbyte_meta"])["changes"] == []
    flat_rows = by_id(spark.read.csv(str(flat / "things"), header=True, escape='"', multiLine=True).collect())
    assert sorted(flat_rows) == [1, 2, 3, 4]
    assert flat_rows[1]["name"] == 'thing, "1"' and json.loads(flat_rows[1]["address"]) == {"city": "Oslo",
                                                                                             "zip": 150}
    assert flat_rows[3]["at_time"] == "04:00:00+05:30"  # raw: written as it came


# -------------------------------------------------------------------------------- Replicant's files


@pytest.mark.parametrize("fmt", ["replicant_csv", "replicant_json"])
def test_replicant_snapshot_files_open_with_spark(api, write_manifest, spark, tmp_path, fmt):
    out = tmp_path / "out"
    land(api, write_manifest, spark, out, {"format_type": fmt, "mode": "snapshot", "include_header": True}
         if fmt == "replicant_csv" else {"format_type": fmt, "mode": "snapshot"})
    folder = str(out / "things")
    frame = (spark.read.csv(folder, header=True, escape='"', multiLine=True, nullValue="NULL")
             if fmt == "replicant_csv" else spark.read.json(folder))
    rows = by_id(frame.collect())
    assert sorted(rows) == [1, 2, 3, 4]
    assert rows[1]["name"] == 'thing, "1"' and rows[2]["price"] is None
    assert rows[1]["at_time"].startswith("13:00:00") and rows[1]["day"] == "2024-03-05"


def test_replicant_realtime_change_files_open_with_spark(api, write_manifest, spark, tmp_path):
    """The change files of a stream's first sync (every record an insert), headerless CSV and JSON lines; `blobs`
    has no top-level primary key, which realtime mode needs."""
    for fmt in ("replicant_csv", "replicant_json"):
        out = tmp_path / fmt
        land(api, write_manifest, spark, out, {"format_type": fmt, "mode": "realtime"}, streams=["things"])
        folder = str(out / "things")
        if fmt == "replicant_csv":
            frame = spark.read.csv(folder, escape='"', multiLine=True, nullValue="NULL")
            rows = frame.collect()
            assert len(rows) == 4 and {r[len(r) - 3] for r in rows} == {"I"}  # opType, before the cursor
            assert any('thing, "1"' in tuple(r) for r in rows)  # a quoted cell with a comma and quotes, read whole
        else:
            rows = spark.read.json(folder).collect()
            assert len(rows) == 4 and {r["opType"] for r in rows} == {"I"}
