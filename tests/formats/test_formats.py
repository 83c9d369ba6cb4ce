"""File formats read back with independent readers: pyarrow.parquet, fastavro, json and csv."""

from __future__ import annotations

import csv
import gzip
import importlib.util
import io
import json
import uuid
from datetime import date, datetime, time, timezone

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from framework.errors import ConfigError
from framework.formats import RAW_SCHEMA, open_format_writer, raw_batch
from framework.formats import avro as avro_module
from framework.models.destination import (
    AvroFormat,
    CsvFormat,
    JsonlFormat,
    ParquetFormat,
)

UTC = timezone.utc

CHANGE = pa.struct([("field", pa.string()), ("change", pa.string()), ("reason", pa.string())])
META = pa.struct([("sync_id", pa.int64()), ("changes", pa.list_(CHANGE))])
UNION = pa.struct([("type", pa.string()), ("integer", pa.int64()), ("string", pa.string()),
                   ("object", pa.struct([("x", pa.int64())]))])

SCHEMA = pa.schema([
    pa.field("_airbyte_raw_id", pa.string(), nullable=False),
    pa.field("_airbyte_extracted_at", pa.timestamp("ms", tz="UTC"), nullable=False),
    pa.field("_airbyte_generation_id", pa.int64(), nullable=False),
    pa.field("_airbyte_meta", META, nullable=False),
    ("id", pa.int64()), ("price", pa.float64()), ("name", pa.string()), ("active", pa.bool_()),
    ("born", pa.date32()), ("wakes", pa.time64("us")), ("seen", pa.timestamp("us", tz="UTC")),
    ("address", pa.struct([("city", pa.string()), ("zip", UNION)])),
    ("tags", pa.list_(pa.string())), ("mixed", pa.list_(UNION)), ("either", UNION),
    ("blob", pa.string()),
])


def _avro_union_members() -> list:
    return ["null", "long", "string", {"type": "record", "name": "either_object",
                                       "fields": [{"name": "x", "type": ["null", "long"]}]}]


AVRO_SCHEMA = {
    "type": "record", "name": "users", "fields": [
        {"name": "_airbyte_raw_id", "type": {"type": "string", "logicalType": "uuid"}},
        {"name": "_airbyte_extracted_at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "_airbyte_generation_id", "type": "long"},
        {"name": "_airbyte_meta", "type": {"type": "record", "name": "airbyte_meta", "fields": [
            {"name": "sync_id", "type": "long"},
            {"name": "changes", "type": {"type": "array", "items": {"type": "record", "name": "change", "fields": [
                {"name": "field", "type": "string"}, {"name": "change", "type": "string"},
                {"name": "reason", "type": "string"}]}}}]}},
        {"name": "id", "type": ["null", "long"]},
        {"name": "price", "type": ["null", "double"]},
        {"name": "name", "type": ["null", "string"]},
        {"name": "active", "type": ["null", "boolean"]},
        {"name": "born", "type": ["null", {"type": "int", "logicalType": "date"}]},
        {"name": "wakes", "type": ["null", {"type": "long", "logicalType": "time-micros"}]},
        {"name": "seen", "type": ["null", {"type": "long", "logicalType": "timestamp-micros"}]},
        {"name": "address", "type": ["null", {"type": "record", "name": "address", "fields": [
            {"name": "city", "type": ["null", "string"]},
            {"name": "zip", "type": ["null", "long", "string", {"type": "record", "name": "zip_object",
                                                                "fields": [{"name": "x", "type": ["null", "long"]}]}]},
        ]}]},
        {"name": "tags", "type": ["null", {"type": "array", "items": ["null", "string"]}]},
        {"name": "mixed", "type": ["null", {"type": "array", "items": [
            "null", "long", "string", {"type": "record", "name": "mixed_object",
                                       "fields": [{"name": "x", "type": ["null", "long"]}]}]}]},
        {"name": "either", "type": _avro_union_members()},
        {"name": "blob", "type": ["null", "string"]},
    ]}

EXTRACTED = datetime(2024, 3, 5, 14, 0, 0, 123000, tzinfo=UTC)


def _union(value):
    if value is None:
        return None
    if isinstance(value, int):
        return {"type": "integer", "integer": value, "string": None, "object": None}
    if isinstance(value, str):
        return {"type": "string", "integer": None, "string": value, "object": None}
    return {"type": "object", "integer": None, "string": None, "object": value}


def _row(i: int) -> dict:
    return {
        "_airbyte_raw_id": str(uuid.UUID(int=i + 1)), "_airbyte_extracted_at": EXTRACTED,
        "_airbyte_generation_id": 3,
        "_airbyte_meta": {"sync_id": 7, "changes": [{"field": "price", "change": "NULLED",
                                                     "reason": "DESTINATION_SERIALIZATION_ERROR"}] if i % 2 else []},
        "id": i, "price": None if i % 2 else i * 1.5, "name": f"user {i}, \"quoted\"", "active": i % 3 == 0,
        "born": date(1990, 1, 1 + i % 28), "wakes": time(6, i % 60, 0, 250),
        "seen": datetime(2024, 1, 2, 3, 4, 5, 678901, tzinfo=UTC),
        "address": {"city": "Zürich", "zip": _union(8000 + i if i % 2 else f"Z{i}")},
        "tags": ["a", None, "c"][: i % 4], "mixed": [_union(1), _union("two"), _union({"x": 3}), None],
        "either": _union([5, "five", {"x": i}, None][i % 4]), "blob": '{"free": [1, 2]}',
    }


def typed_batch(n: int = 5, start: int = 0) -> pa.RecordBatch:
    return pa.RecordBatch.from_pylist([_row(i) for i in range(start, start + n)], schema=SCHEMA)


def write(fmt, batches, **kwargs) -> tuple[bytes, object]:
    sink = io.BytesIO()
    writer = open_format_writer(fmt, kwargs.pop("arrow_schema", SCHEMA), kwargs.pop("avro_schema", AVRO_SCHEMA),
                                sink, **kwargs)
    for batch in batches:
        writer.write(batch)
    writer.close()
    assert not sink.closed, "closing a format writer must leave the sink open"
    return sink.getvalue(), writer


# ------------------------------------------------------------------ Parquet

PARQUET_CODECS = {"UNCOMPRESSED": "UNCOMPRESSED", "SNAPPY": "SNAPPY", "GZIP": "GZIP", "ZSTD": "ZSTD",
                  "BROTLI": "BROTLI", "LZ4": "LZ4"}


@pytest.mark.parametrize("codec", sorted(PARQUET_CODECS))
def test_parquet_every_codec_round_trips(codec):
    data, writer = write(ParquetFormat(compression_codec=codec), [typed_batch(5), typed_batch(4, start=5)])
    table = pq.read_table(io.BytesIO(data))
    assert table.to_pylist() == [_row(i) for i in range(9)]
    meta = pq.ParquetFile(io.BytesIO(data)).metadata
    assert {meta.row_group(0).column(c).compression for c in range(meta.num_columns)} == {PARQUET_CODECS[codec]}
    assert writer.extension == ".parquet"
    assert writer.records_written == 9
    assert writer.bytes_written == len(data)


def test_parquet_lzo_is_refused_with_a_clear_message():
    with pytest.raises(ConfigError, match="LZO"):
        open_format_writer(ParquetFormat(compression_codec="LZO"), SCHEMA, None, io.BytesIO())


def test_parquet_times_are_not_adjusted_to_utc_by_default_the_form_spark_reads():
    data, _ = write(ParquetFormat(), [typed_batch(3)])
    schema = pq.ParquetFile(io.BytesIO(data)).schema
    columns = {schema.column(i).path: schema.column(i) for i in range(len(schema))}
    assert columns["wakes"].physical_type == "INT64"
    assert "Time(isAdjustedToUTC=false, timeUnit=microseconds)" in str(columns["wakes"].logical_type)
    # timestamps keep the seed's form, which Spark reads
    assert "Timestamp(isAdjustedToUTC=true, timeUnit=microseconds" in str(columns["seen"].logical_type)
    exact, _ = write(ParquetFormat(time_adjusted_to_utc=True), [typed_batch(3)])
    assert pq.read_table(io.BytesIO(data)).column("wakes").to_pylist() == \
        pq.read_table(io.BytesIO(exact)).column("wakes").to_pylist()


def test_parquet_physical_and_logical_types_follow_the_seed():
    data, _ = write(ParquetFormat(time_adjusted_to_utc=True), [typed_batch(3)])  # the S3 1.0 exact form
    schema = pq.ParquetFile(io.BytesIO(data)).schema
    columns = {schema.column(i).path: schema.column(i) for i in range(len(schema))}

    def kind(path):
        column = columns[path]
        return column.physical_type, str(column.logical_type)

    assert kind("_airbyte_raw_id") == ("BYTE_ARRAY", "String")
    assert kind("_airbyte_extracted_at")[0] == "INT64"
    assert "timeUnit=milliseconds" in kind("_airbyte_extracted_at")[1]
    assert "isAdjustedToUTC=true" in kind("_airbyte_extracted_at")[1]
    assert kind("_airbyte_generation_id") == ("INT64", "None")
    assert kind("_airbyte_meta.sync_id") == ("INT64", "None")
    assert kind("_airbyte_meta.changes.list.element.reason") == ("BYTE_ARRAY", "String")
    assert kind("id") == ("INT64", "None")
    assert kind("price") == ("DOUBLE", "None")
    assert kind("active") == ("BOOLEAN", "None")
    assert kind("born") == ("INT32", "Date")
    assert kind("wakes")[0] == "INT64" and "Time(isAdjustedToUTC=true, timeUnit=microseconds)" in kind("wakes")[1]
    assert kind("seen")[0] == "INT64"
    assert "Timestamp(isAdjustedToUTC=true, timeUnit=microseconds" in kind("seen")[1]
    assert kind("either.type") == ("BYTE_ARRAY", "String")
    assert kind("either.integer") == ("INT64", "None")
    assert kind("either.object.x") == ("INT64", "None")
    assert kind("mixed.list.element.string") == ("BYTE_ARRAY", "String")
    # the Arrow types come back unchanged as well
    assert pq.read_schema(io.BytesIO(data)).field("_airbyte_extracted_at").type == pa.timestamp("ms", tz="UTC")
    assert pq.read_schema(io.BytesIO(data)).field("seen").type == pa.timestamp("us", tz="UTC")


def test_parquet_small_batches_share_row_groups_up_to_the_block_size():
    many = [typed_batch(200, start=i * 200) for i in range(40)]
    one_block, _ = write(ParquetFormat(), many)
    assert pq.ParquetFile(io.BytesIO(one_block)).metadata.num_row_groups == 1
    per_batch = many[0].nbytes
    small = ParquetFormat(block_size_mb=1)
    data, _ = write(small, many)
    meta = pq.ParquetFile(io.BytesIO(data)).metadata
    expected_groups = -(-per_batch * 40 // (1024 * 1024))
    assert 1 < meta.num_row_groups <= expected_groups + 1
    assert sum(meta.row_group(g).num_rows for g in range(meta.num_row_groups)) == 8000
    assert meta.row_group(0).num_rows > 200


@pytest.mark.parametrize("dictionary", [True, False])
def test_parquet_dictionary_encoding_setting(dictionary):
    data, _ = write(ParquetFormat(dictionary_encoding=dictionary), [typed_batch(50)])
    meta = pq.ParquetFile(io.BytesIO(data)).metadata
    encodings = set(meta.row_group(0).column(meta.schema.names.index("name")).encodings)
    assert bool(encodings & {"PLAIN_DICTIONARY", "RLE_DICTIONARY"}) is dictionary


def test_parquet_page_size_setting_changes_the_pages():
    rows = [typed_batch(400, start=i * 400) for i in range(10)]
    small_pages, _ = write(ParquetFormat(page_size_kb=1, dictionary_encoding=False), rows)
    big_pages, _ = write(ParquetFormat(page_size_kb=1024, dictionary_encoding=False), rows)

    def pages(data: bytes) -> int:
        file = pq.ParquetFile(io.BytesIO(data))
        column = file.metadata.schema.names.index("name")
        reader = file.metadata.row_group(0).column(column)
        return reader.total_uncompressed_size  # page headers add up with more pages

    assert pages(small_pages) > pages(big_pages)


def test_parquet_bytes_written_counts_the_buffered_row_group():
    sink = io.BytesIO()
    writer = open_format_writer(ParquetFormat(block_size_mb=1), SCHEMA, None, sink)
    estimates = []
    for i in range(30):
        writer.write(typed_batch(200, start=i * 200))
        estimates.append(writer.bytes_written)
        assert writer.bytes_written >= len(sink.getvalue())
    assert len(sink.getvalue()) > 4  # row groups went out on the way
    assert estimates[1] > estimates[0] > 4  # the open row group counts before it is written
    writer.close()
    assert writer.bytes_written == len(sink.getvalue())


# --------------------------------------------------------------------- Avro

AVRO_CODECS = [
    ({"codec": "no compression"}, "null"),
    ({"codec": "Deflate", "compression_level": 7}, "deflate"),
    ({"codec": "bzip2"}, "bzip2"),
    ({"codec": "xz", "compression_level": 2}, "xz"),
    ({"codec": "zstandard", "compression_level": 5}, "zstandard"),
    ({"codec": "snappy"}, "snappy"),
]


def _expected_avro(i: int) -> dict:
    row = _row(i)

    def plain(u):
        return None if u is None else u[u["type"]]

    row["_airbyte_raw_id"] = uuid.UUID(row["_airbyte_raw_id"])
    row["address"]["zip"] = plain(row["address"]["zip"])
    row["mixed"] = [plain(u) for u in row["mixed"]]
    row["either"] = plain(row["either"])
    return row


@pytest.mark.parametrize("codec, name", AVRO_CODECS, ids=[n for _, n in AVRO_CODECS])
def test_avro_every_codec_round_trips(codec, name):
    missing = avro_module.codec_package_missing(name)
    assert not missing, f"fastavro needs `{missing}` for {name}; it is a dependency: reinstall with `make setup`"
    data, writer = write(AvroFormat.model_validate({"compression_codec": codec}), [typed_batch(6)])
    reader = fastavro.reader(io.BytesIO(data))
    assert reader.codec == name
    assert list(reader) == [_expected_avro(i) for i in range(6)]
    assert writer.extension == ".avro" and writer.records_written == 6


def test_avro_schema_types_read_back_field_by_field():
    data, _ = write(AvroFormat(), [typed_batch(2)])
    schema = fastavro.reader(io.BytesIO(data)).writer_schema
    fields = {f["name"]: f["type"] for f in schema["fields"]}
    assert fields["_airbyte_raw_id"] == {"type": "string", "logicalType": "uuid"}
    assert fields["_airbyte_extracted_at"] == {"type": "long", "logicalType": "timestamp-millis"}
    assert fields["_airbyte_generation_id"] == "long"
    assert fields["born"] == ["null", {"type": "int", "logicalType": "date"}]
    assert fields["wakes"] == ["null", {"type": "long", "logicalType": "time-micros"}]
    assert fields["seen"] == ["null", {"type": "long", "logicalType": "timestamp-micros"}]
    record = next(fastavro.reader(io.BytesIO(data)))
    assert record["_airbyte_extracted_at"] == EXTRACTED
    assert record["seen"] == datetime(2024, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
    assert record["wakes"] == time(6, 0, 0, 250) and record["born"] == date(1990, 1, 1)


@pytest.mark.parametrize("codec, missing", [("snappy", "cramjam"), ("zstandard", "backports.zstd")])
def test_avro_codec_without_its_package_says_what_to_install(monkeypatch, codec, missing):
    monkeypatch.setattr(avro_module.importlib.util, "find_spec", lambda name, *a: None)
    monkeypatch.setattr(avro_module.sys, "version_info", (3, 11))
    with pytest.raises(ConfigError, match=f"pip install {missing}"):
        open_format_writer(AvroFormat.model_validate({"compression_codec": {"codec": codec}}), SCHEMA,
                           AVRO_SCHEMA, io.BytesIO())


def test_avro_xz_level_is_honoured():
    batches = [typed_batch(300)]
    fast, _ = write(AvroFormat.model_validate({"compression_codec": {"codec": "xz", "compression_level": 0}}),
                    batches)
    small, _ = write(AvroFormat.model_validate({"compression_codec": {"codec": "xz", "compression_level": 9}}),
                     batches)
    assert len(fast) != len(small)
    assert list(fastavro.reader(io.BytesIO(fast))) == list(fastavro.reader(io.BytesIO(small)))


def test_avro_deflate_level_is_honoured():
    batches = [typed_batch(300)]
    none, _ = write(AvroFormat.model_validate({"compression_codec": {"codec": "Deflate", "compression_level": 0}}),
                    batches)
    best, _ = write(AvroFormat.model_validate({"compression_codec": {"codec": "Deflate", "compression_level": 9}}),
                    batches)
    assert len(best) < len(none)


def test_avro_names_that_differ_from_arrow_are_matched_in_order():
    arrow = pa.schema([("first-name", pa.string()), ("n", pa.int64())])
    avro = {"type": "record", "name": "r", "fields": [{"name": "first_name", "type": ["null", "string"]},
                                                        {"name": "n", "type": ["null", "long"]}]}
    batch = pa.RecordBatch.from_pylist([{"first-name": "Ada", "n": 1}], schema=arrow)
    data, _ = write(AvroFormat(), [batch], arrow_schema=arrow, avro_schema=avro)
    assert list(fastavro.reader(io.BytesIO(data))) == [{"first_name": "Ada", "n": 1}]


def test_avro_uses_the_given_record_conversion():
    seen = []

    def to_avro(batch):
        seen.append(batch.num_rows)
        return [{"n": 10 * r["n"]} for r in batch.to_pylist()]

    arrow = pa.schema([("n", pa.int64())])
    avro = {"type": "record", "name": "r", "fields": [{"name": "n", "type": "long"}]}
    data, _ = write(AvroFormat(), [pa.RecordBatch.from_pylist([{"n": 1}, {"n": 2}], schema=arrow)],
                    arrow_schema=arrow, avro_schema=avro, to_avro=to_avro)
    assert seen == [2]
    assert list(fastavro.reader(io.BytesIO(data))) == [{"n": 10}, {"n": 20}]


def test_avro_converter_leaves_rows_alone_when_nothing_needs_converting():
    arrow = pa.schema([("n", pa.int64()), ("s", pa.struct([("a", pa.string())]))])
    avro = {"type": "record", "name": "r", "fields": [
        {"name": "n", "type": ["null", "long"]},
        {"name": "s", "type": ["null", {"type": "record", "name": "s", "fields": [{"name": "a", "type": "string"}]}]}]}
    assert avro_module.avro_converter(avro, arrow) is None


# ----------------------------------------------------------------- JSONL / CSV

RECORDS = [{"id": 1, "name": "Ada, \"the\" first", "nested": {"a": [1, 2]}, "ok": True, "score": 1.5},
           {"id": 2, "name": "line\nbreak", "nested": None, "ok": False},
           {"id": 3, "extra": "kept in JSONL, left out of CSV columns", "_airbyte_raw_id": "spoof"}]
IDS = [str(uuid.UUID(int=i)) for i in range(1, 4)]
META_TEXT = '{"sync_id":7,"changes":[]}'


def raw(records=RECORDS):
    return raw_batch([json.dumps(r) for r in records], IDS[:len(records)], 1709647200123, 4,
                     metas=[META_TEXT] * len(records))


def text_of(data: bytes, extension: str) -> str:
    return (gzip.decompress(data) if extension.endswith(".gz") else data).decode("utf-8")


@pytest.mark.parametrize("compression", ["No Compression", "GZIP"])
def test_jsonl_without_flattening_nests_the_record(compression):
    fmt = JsonlFormat.model_validate({"compression": {"compression_type": compression}})
    data, writer = write(fmt, [raw(RECORDS[:2]), raw(RECORDS[2:])])
    assert writer.extension == (".jsonl.gz" if compression == "GZIP" else ".jsonl")
    lines = [json.loads(line) for line in text_of(data, writer.extension).splitlines()]
    assert [list(line) for line in lines] == [["_airbyte_raw_id", "_airbyte_extracted_at", "_airbyte_meta",
                                               "_airbyte_generation_id", "_airbyte_data"]] * 3
    assert lines[0]["_airbyte_extracted_at"] == 1709647200123
    assert lines[0]["_airbyte_meta"] == {"sync_id": 7, "changes": []}
    assert lines[0]["_airbyte_generation_id"] == 4
    assert [line["_airbyte_data"] for line in lines] == RECORDS
    assert [line["_airbyte_raw_id"] for line in lines[:2]] == IDS[:2]


def test_jsonl_root_level_flattening_puts_fields_next_to_the_envelope():
    data, _ = write(JsonlFormat(flattening="Root level flattening"), [raw()])
    lines = [json.loads(line) for line in data.decode().splitlines()]
    assert lines[0] == {"_airbyte_raw_id": IDS[0], "_airbyte_extracted_at": 1709647200123,
                        "_airbyte_meta": {"sync_id": 7, "changes": []}, "_airbyte_generation_id": 4, **RECORDS[0]}
    assert "_airbyte_data" not in lines[0]
    assert lines[2]["_airbyte_raw_id"] == IDS[2]  # a record field never overwrites the envelope
    assert lines[2]["extra"] == RECORDS[2]["extra"]


@pytest.mark.parametrize("compression", ["No Compression", "GZIP"])
def test_csv_without_flattening_has_the_record_as_json_text(compression):
    fmt = CsvFormat.model_validate({"compression": {"compression_type": compression}})
    data, writer = write(fmt, [raw()])
    assert writer.extension == (".csv.gz" if compression == "GZIP" else ".csv")
    rows = list(csv.reader(io.StringIO(text_of(data, writer.extension), newline="")))
    assert rows[0] == ["_airbyte_raw_id", "_airbyte_extracted_at", "_airbyte_meta", "_airbyte_generation_id",
                       "_airbyte_data"]
    assert [json.loads(r[4]) for r in rows[1:]] == RECORDS
    assert rows[1][:4] == [IDS[0], "1709647200123", META_TEXT, "4"]


def test_csv_root_level_flattening_makes_stable_columns():
    fmt = CsvFormat(flattening="Root level flattening")
    data, _ = write(fmt, [raw()], columns=["id", "name", "nested", "ok", "score", "absent"])
    rows = list(csv.reader(io.StringIO(data.decode(), newline="")))
    assert rows[0] == ["_airbyte_raw_id", "_airbyte_extracted_at", "_airbyte_meta", "_airbyte_generation_id",
                       "id", "name", "nested", "ok", "score", "absent"]
    assert rows[1][4:] == ["1", 'Ada, "the" first', '{"a":[1,2]}', "true", "1.5", ""]
    assert rows[2][4:] == ["2", "line\nbreak", "", "false", "", ""]
    assert rows[3][4:] == ["3", "", "", "", "", ""]
    assert rows[3][0] == IDS[2]


def test_csv_flattening_without_columns_keeps_the_record():
    data, _ = write(CsvFormat(flattening="Root level flattening"), [raw()], columns=[])
    rows = list(csv.reader(io.StringIO(data.decode(), newline="")))
    assert rows[0][-1] == "_airbyte_data" and json.loads(rows[1][-1]) == RECORDS[0]


def test_raw_batch_takes_json_values_bytes_and_arrow_ids():
    batch = raw_batch([{"a": 1}, b'{"b":2}', '{"c":3}'], pa.array(IDS, pa.string()), [1, 2, 3], 5, sync_id=8)
    assert batch.schema == RAW_SCHEMA
    assert [json.loads(d) for d in batch.column("_airbyte_data").to_pylist()] == [{"a": 1}, {"b": 2}, {"c": 3}]
    assert json.loads(batch.column("_airbyte_meta")[0].as_py()) == {"sync_id": 8, "changes": []}
    assert batch.column("_airbyte_generation_id").to_pylist() == [5, 5, 5]
    assert batch.column("_airbyte_extracted_at").cast(pa.int64()).to_pylist() == [1, 2, 3]


def test_nan_and_infinity_in_a_raw_record_are_written_as_null_with_a_change():
    """JSONL and CSV carry each record as JSON text, which has no NaN or Infinity: null, and said so."""
    records = [{"id": 1, "score": float("nan"), "more": {"rates": [1.0, float("-inf")]}}, {"id": 2, "score": None}]
    batch = raw_batch(records, pa.array(IDS[:2], pa.string()), 1, 0, sync_id=3)
    assert [json.loads(d) for d in batch.column("_airbyte_data").to_pylist()] == [
        {"id": 1, "score": None, "more": {"rates": [1.0, None]}}, {"id": 2, "score": None}]
    metas = [json.loads(m) for m in batch.column("_airbyte_meta").to_pylist()]
    assert metas == [
        {"sync_id": 3, "changes": [
            {"field": "score", "change": "NULLED", "reason": "DESTINATION_SERIALIZATION_ERROR"},
            {"field": "more.rates[1]", "change": "NULLED", "reason": "DESTINATION_SERIALIZATION_ERROR"}]},
        {"sync_id": 3, "changes": []}]


def test_text_formats_accept_integer_and_other_timestamp_units():
    batch = raw()
    at = batch.column("_airbyte_extracted_at")
    as_int = batch.set_column(1, "_airbyte_extracted_at", at.cast(pa.int64()))
    as_us = batch.set_column(1, "_airbyte_extracted_at", at.cast(pa.timestamp("us", tz="UTC")))
    for variant in (as_int, as_us):
        data, _ = write(JsonlFormat(), [variant])
        assert json.loads(data.splitlines()[0])["_airbyte_extracted_at"] == 1709647200123


def test_text_formats_take_a_struct_meta_too():
    batch = raw()
    meta = pa.array([{"sync_id": 7, "changes": []}] * 3, META)
    batch = pa.RecordBatch.from_arrays([*batch.columns[:2], meta, *batch.columns[3:]],
                                       names=RAW_SCHEMA.names)
    data, _ = write(CsvFormat(), [batch])
    rows = list(csv.reader(io.StringIO(data.decode(), newline="")))
    assert json.loads(rows[1][2]) == {"sync_id": 7, "changes": []}


def test_text_formats_refuse_a_batch_without_the_raw_columns():
    with pytest.raises(ConfigError, match="_airbyte_data"):
        write(JsonlFormat(), [typed_batch(1)])


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**63, 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(st.characters(exclude_categories=("Cs",))),
    lambda children: st.lists(children, max_size=3)
    | st.dictionaries(st.text(st.characters(exclude_categories=("Cs",)), max_size=5), children, max_size=3),
    max_leaves=8,
)
records = st.lists(st.dictionaries(st.text(st.characters(exclude_categories=("Cs",)), max_size=6), json_values,
                                   max_size=4), min_size=1, max_size=5)


@settings(max_examples=60, deadline=None)
@given(records)
def test_jsonl_keeps_any_json_record(recs):
    batch = raw_batch([json.dumps(r) for r in recs], [str(uuid.uuid4()) for _ in recs], 1, 1)
    data, _ = write(JsonlFormat(), [batch])
    assert [json.loads(line)["_airbyte_data"] for line in data.decode().splitlines()] == recs


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(st.characters(exclude_categories=("Cs",))), min_size=1, max_size=6))
def test_csv_cells_read_back_as_written(texts):
    recs = [{"text": t} for t in texts]
    batch = raw_batch([json.dumps(r) for r in recs], [str(i) for i in range(len(recs))], 1, 1)
    data, _ = write(CsvFormat(flattening="Root level flattening"), [batch], columns=["text"])
    rows = list(csv.reader(io.StringIO(data.decode(), newline="")))
    assert [r[4] for r in rows[1:]] == texts


def test_replicant_formats_are_not_handled_here():
    from framework.models.destination import ReplicantCsvFormat

    with pytest.raises(ConfigError, match="replicant_csv"):
        open_format_writer(ReplicantCsvFormat(), SCHEMA, None, io.BytesIO())


def test_codec_packages_are_detected():
    for codec in ("null", "deflate", "bzip2", "xz"):
        assert avro_module.codec_package_missing(codec) is None
    snappy = avro_module.codec_package_missing("snappy")
    assert snappy == (None if importlib.util.find_spec("cramjam") else "cramjam")
