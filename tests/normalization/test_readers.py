"""The two readers of landed Parquet files agree: Spark's own reader (local files of the plan's types) and the
executors' Python reader (S3, or files Spark cannot read as they are) give the same tables, byte for byte in
values; and the node built from typed columns equals the one ``from_json`` parses from the record's JSON."""

from __future__ import annotations

import pyarrow as pa
import pytest

from framework.normalization import raw
from framework.normalization.naming import path_hash
from framework.normalization.runner import normalize
from normalization.conftest import at, land, normalized_tables, table_rows

SCHEMA = {"type": "object", "properties": {
    "id": {"type": "integer"}, "name": {"type": "string"}, "price": {"type": "number"}, "ok": {"type": "boolean"},
    "day": {"type": "string", "format": "date"}, "at": {"type": "string", "format": "date-time"},
    "either": {"type": ["string", "integer"]}, "anything": {},
    "tags": {"type": "array", "items": {"type": "string"}},
    "grid": {"type": "array", "items": {"type": "array", "items": {"type": "integer"}}},
    "address": {"type": "object", "properties": {
        "city": {"type": "string"}, "since": {"type": "string", "format": "date-time"},
        "geo": {"type": "object", "properties": {"lat": {"type": "number"}}}}},
    "lines": {"type": "array", "items": {"type": "object", "properties": {
        "sku": {"type": "string"}, "qty": {"type": "integer"}, "when": {"type": "string", "format": "date"},
        "weight": {"type": "number"}, "fragile": {"type": "boolean"}}}},
}}
RECORDS = [
    {"id": 1, "name": 'a "quoted" é', "price": 0.1, "ok": True, "day": "2024-02-29",
     "at": "2024-01-02T03:04:05.123456Z", "either": "x", "anything": {"k": [1, "b"]}, "tags": ["a", None, "b"],
     "grid": [[1, 2], [], None], "address": {"city": "c", "since": "2023-05-06T07:08:09.5Z", "geo": {"lat": 1e20}},
     "lines": [{"sku": "s", "qty": 2, "when": "2024-01-01", "weight": 1e20, "fragile": True}, None,
               {"sku": None, "qty": None, "weight": 0.1}]},
    {"id": 2, "name": None, "price": -3.0, "ok": None, "day": None, "at": None, "either": 7, "anything": "text",
     "tags": [], "grid": None, "address": {}, "lines": []},
    {"id": 3},
]


@pytest.mark.spark
def test_spark_reader_and_python_reader_give_the_same_tables(spark, output, local_settings, monkeypatch):
    settings = local_settings("parquet")
    land(settings, "things", RECORDS, SCHEMA, emitted_at=at(1))
    used = []
    real = raw._spark_can_read
    monkeypatch.setattr(raw, "_spark_can_read", lambda *a: used.append(real(*a)) or used[-1])
    normalize(spark, settings, now=at(2))
    assert used == [True]
    tables = normalized_tables(output)
    assert len(tables) == 7  # the raw table, things and five child tables

    def contents() -> dict[str, list[dict]]:
        return {t: sorted(table_rows(output, t), key=lambda r: str(list(r.values()))) for t in tables}

    first = contents()
    monkeypatch.setattr(raw, "_spark_can_read", lambda *a: False)
    normalize(spark, settings, full_refresh=True, now=at(2))
    assert contents() == first

    [thing] = [r for r in first["things"] if r["id"] == 1]
    assert thing["either"] == "x" and thing["anything"] == '{"k":[1,"b"]}'
    assert thing["at"].microsecond == 123000  # through to_json's text: milliseconds, as before
    lines = first[f"things_{path_hash(['things', 'lines'])}_lines"]
    assert sorted((r["sku"] or "", r["qty"]) for r in lines) == [("", None), ("", None), ("s", 2)]
    grid = first[f"things_{path_hash(['things', 'grid'])}_grid"]
    assert sorted(r["data"] or "" for r in grid) == ["", "[1,2]", "[]"]


def test_spark_reads_only_files_of_the_plans_types():
    utc, naive = pa.timestamp("us", tz="UTC"), pa.timestamp("us")
    readable = raw._readable
    assert readable(pa.timestamp("ms", tz="UTC"), utc)
    assert not readable(naive, utc)
    assert not readable(pa.time64("us"), pa.string()) and not readable(pa.string(), pa.time64("us"))
    assert readable(pa.struct([("a", pa.int64())]), pa.struct([("a", pa.int64()), ("b", pa.string())]))
    assert not readable(pa.struct([("a", pa.string())]), pa.struct([("a", pa.int64())]))
    assert readable(pa.list_(pa.struct([("a", utc)])), pa.list_(pa.struct([("a", utc)])))
    assert not readable(pa.int32(), pa.int64())
    assert not readable(pa.list_(pa.int64()), pa.list_(pa.float64()))
