"""Snapshot-mode Replicant files: the writers on typed batches, and two syncs through ``run_pipeline``."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from framework.formats import open_format_writer
from framework.models.destination import (
    DestinationSettings,
    ReplicantCsvFormat,
    ReplicantJsonFormat,
)
from framework.typed import RecordConverter

SCHEMA = {
    "type": "object",
    "properties": {
        "r_regionkey": {"type": "integer"},
        "r_name": {"type": "string"},
        "price": {"type": "number"},
        "active": {"type": "boolean"},
        "at": {"type": "string", "format": "date-time", "airbyte_type": "timestamp_with_timezone"},
        "day": {"type": "string", "format": "date"},
        "address": {"type": "object", "properties": {"city": {"type": "string"}, "code": {"oneOf": [
            {"type": "integer"}, {"type": "string"}]}}},
        "tags": {"type": "array", "items": {"type": "string"}},
        "code": {"oneOf": [{"type": "integer"}, {"type": "string"}]},
    },
}
CONVERTER = RecordConverter.from_json_schema(SCHEMA, stream="region")
NAMES = list(SCHEMA["properties"])


def record(**values: object) -> dict:
    return {"r_regionkey": 0, "r_name": "AFRICA", **values}


def write(fmt: object, records: list[dict], columns: tuple[str, ...] = ()) -> str:
    sink = io.BytesIO()
    writer = open_format_writer(fmt, CONVERTER.schema, None, sink, columns=columns)
    writer.write(CONVERTER.convert(records, extracted_at_ms=0, generation_id=0, sync_id=1))
    writer.close()
    assert writer.records_written == len(records) and writer.bytes_written == len(sink.getvalue())
    return sink.getvalue().decode("utf-8")


def test_csv_has_the_schemas_columns_in_order_and_null_as_null():
    full = record(price=1.5, active=True, at="2024-03-05T06:07:08+02:00", day="2024-03-05",
                  address={"city": "Oslo", "code": "N-1"}, tags=["a", "b"], code=7)
    text = write(ReplicantCsvFormat(mode="snapshot", include_header=True), [full, record(r_regionkey=1, r_name=None)])
    header, first, second = list(csv.reader(io.StringIO(text, newline="")))
    assert header == NAMES
    assert first == ["0", "AFRICA", "1.5", "true", "2024-03-05T04:07:08.000000Z", "2024-03-05",
                     '{"city":"Oslo","code":"N-1"}', '["a","b"]', "7"]
    assert second == ["1"] + ["NULL"] * 8
    assert text.splitlines()[2] == "1" + ",NULL" * 8  # NULL is bare; no envelope columns


def test_csv_without_header_starts_with_data_like_the_seed():
    assert write(ReplicantCsvFormat(mode="snapshot"), [record(r_name="AFRICA ")]).startswith("0,AFRICA ,NULL,")


@settings(max_examples=50, deadline=None)
@given(st.lists(st.one_of(st.none(), st.text(max_size=10)), min_size=1, max_size=5))
def test_csv_values_round_trip_through_pythons_csv_reader(names):
    text = write(ReplicantCsvFormat(mode="snapshot"), [record(r_name=n) for n in names])
    rows = list(csv.reader(io.StringIO(text, newline="")))
    assert [row[1] for row in rows] == ["NULL" if n is None else n for n in names]


def test_nasty_values_are_quoted_so_that_null_stays_apart_from_the_text_null():
    names = ["a,b", 'say "hi"', "two\nlines", "NULL", "", "null", None]
    text = write(ReplicantCsvFormat(mode="snapshot"), [record(r_name=n) for n in names])
    assert [row[1] for row in csv.reader(io.StringIO(text, newline=""))] == [
        "a,b", 'say "hi"', "two\nlines", "NULL", "", "null", "NULL"]
    assert '0,"NULL",' in text and '0,"",' in text and "0,NULL," in text


def test_json_is_one_object_per_line_with_every_value_a_string():
    text = write(ReplicantJsonFormat(mode="snapshot"), [record(price=2.0, tags=["x"], code="B"), record(r_name=None)])
    first, second = [json.loads(line) for line in text.splitlines()]
    assert first == {"r_regionkey": "0", "r_name": "AFRICA", "price": "2", "active": None, "at": None,
                     "day": None, "address": None, "tags": '["x"]', "code": "B"}
    assert second["r_name"] is None and list(second) == NAMES


# ------------------------------------------------------------------------------ through the pipeline

MANIFEST = """\
version: 6.7.0
type: DeclarativeSource
streams:
  - type: DeclarativeStream
    name: region
    primary_key: r_regionkey
    schema_loader:
      type: InlineSchemaLoader
      schema:
        type: object
        properties:
          r_regionkey: {type: integer}
          r_comment: {type: [string, "null"]}
          r_name: {type: string}
    retriever:
      type: SimpleRetriever
      requester: {type: HttpRequester, url_base: "{{ config.base_url }}", path: /region}
      record_selector: {type: RecordSelector, extractor: {type: DpathExtractor, field_path: [data]}}
check: {type: CheckStream, stream_names: [region]}
spec: {type: Spec, connection_specification: {type: object, properties: {base_url: {type: string}}}}
"""

REGIONS = [{"r_regionkey": 0, "r_comment": "lar deposits, blithely", "r_name": "AFRICA"},
           {"r_regionkey": 1, "r_comment": None, "r_name": "AMERICA"}]


@pytest.mark.spark
@pytest.mark.parametrize("fmt", ["replicant_csv", "replicant_json"])
def test_a_sync_writes_snapshot_files(spark, fake_api, write_manifest, tmp_path, fmt):
    from framework.engine.connector import open_connector
    from framework.engine.selection import select_streams
    from framework.spark.pipeline import run_pipeline

    fake_api.route("GET", "/region", {"data": REGIONS})
    manifest = write_manifest(MANIFEST)
    out = tmp_path / "out"
    settings = DestinationSettings.model_validate(
        {"output": str(out),
         "format": {"format_type": fmt, "mode": "snapshot", "include_header": True} if fmt == "replicant_csv"
         else {"format_type": fmt, "mode": "snapshot"}})
    connector = open_connector(manifest, {"base_url": fake_api.url}, sleep=lambda seconds: None)
    result = run_pipeline(connector, manifest, select_streams(connector.streams, None, None), settings, spark)
    [stream] = result.streams
    assert stream.error is None and stream.records == 2
    paths = [Path(f["uri"]) for f in stream.files]
    assert paths and all(p.suffix == (".csv" if fmt == "replicant_csv" else ".json") for p in paths)
    text = "".join(p.read_text(encoding="utf-8") for p in paths)
    if fmt == "replicant_csv":
        assert text == 'r_regionkey,r_comment,r_name\n0,"lar deposits, blithely",AFRICA\n1,NULL,AMERICA\n'
    else:
        assert [json.loads(line) for line in text.splitlines()] == [
            {"r_regionkey": "0", "r_comment": "lar deposits, blithely", "r_name": "AFRICA"},
            {"r_regionkey": "1", "r_comment": None, "r_name": "AMERICA"}]
