"""Normalization on Spark, end to end on landed files: the seed's examples, deduped history, incremental runs,
failures and S3. Tables are read back with pyarrow (and the S3 objects with boto3)."""

from __future__ import annotations

import hashlib
import io
import os
from datetime import datetime, timezone

import pyarrow.parquet as pq
import pytest

from framework.normalization.naming import path_hash
from framework.normalization.runner import normalize
from normalization.conftest import at, land, normalized, normalized_tables, table_rows

pytestmark = pytest.mark.spark

CAR = {"make": {"type": "string"}, "model": {"type": "string"}, "horsepower": {"type": "integer"}}
EDITION = {"type": "object", "properties": {"name": {"type": "string"}, "release_year": {"type": "integer"}}}


def md5(*parts) -> str:
    return hashlib.md5("-".join("" if p is None else str(p) for p in parts).encode()).hexdigest()


def names(output: str) -> set[str]:
    return set(normalized_tables(output))


def test_the_seed_examples(spark, output, local_settings):
    parquet, jsonl = local_settings("parquet"), local_settings("jsonl")
    land(parquet, "cars", [{"make": "alfa romeo", "model": "4C coupe", "horsepower": 247, "limited_editions": [
        {"name": "4C spider", "release_year": 2013}, {"name": "4C spider italia", "release_year": 2018}]}],
        {"type": "object", "properties": {**CAR, "limited_editions": {"type": "array", "items": EDITION}}},
        emitted_at=at(1))
    land(jsonl, "strings", [{"make": "alfa romeo", "model": "4C coupe", "horsepower": "247",
                             "limited_editions": ["4C spider", "4C spider italia"]}],
         {"type": "object", "properties": {**CAR, "limited_editions": {"type": "array", "items": {"type": "string"}}}},
         emitted_at=at(1))
    deep = {"type": "object", "properties": {"level": {"type": "integer"}, "down": {"type": "object", "properties": {
        "level": {"type": "integer"}, "items": {"type": "array", "items": {"type": "object", "properties": {
            "tag": {"type": "string"}, "when": {"type": "string", "format": "date-time"}}}}}}}}
    land(parquet, "specs", [{"make": "alfa romeo", "model": "4C coupe",
                             "powertrain_specs": {"horsepower": 247, "transmission": "6-speed"},
                             "cars": [{"make": "audi", "model": "A7"}, {"make": "lotus", "model": "elise"},
                                      {"make": "chevrolet", "model": "mustang"}],
                             "deep": {"level": 1, "down": {"level": 2, "items": [
                                 {"tag": "x", "when": "2024-01-02T03:04:05Z"}, {"tag": "y", "when": None}]}},
                             "empty": None}],
         {"type": "object", "properties": {
             **CAR, "powertrain_specs": {"type": "object", "properties": {
                 "horsepower": {"type": "integer"}, "transmission": {"type": "string"}}},
             "cars": {"type": "array", "items": {"type": "object", "properties": CAR}}, "deep": deep,
             "empty": {"type": "object", "properties": {"a": {"type": "string"}}}}},
         emitted_at=at(1))
    result = normalize(spark, parquet, now=at(9))
    assert [o.error for o in result.streams] == [None, None, None]

    editions_table = f"cars_{path_hash(['cars', 'limited_editions'])}_limited_editions"
    [car] = table_rows(output, "cars")
    assert {k: car[k] for k in ("make", "model", "horsepower")} == {
        "make": "alfa romeo", "model": "4C coupe", "horsepower": 247}
    assert list(car) == ["_airbyte_ab_id", "_airbyte_emitted_at", "_airbyte_cars_hashid", "_airbyte_normalized_at",
                         "make", "model", "horsepower"]
    editions = table_rows(output, editions_table, ["name"])
    assert [(e["name"], e["release_year"]) for e in editions] == [("4C spider", 2013), ("4C spider italia", 2018)]
    assert {e["_airbyte_cars_foreign_hashid"] for e in editions} == {car["_airbyte_cars_hashid"]}
    # hashids: MD5 of the parent's hashid and the data columns as text, '-' between
    first = editions[0]
    assert first["_airbyte_limited_editions_hashid"] == md5(car["_airbyte_cars_hashid"], "4C spider", 2013)
    assert first["_airbyte_emitted_at"] == at(1) and first["_airbyte_normalized_at"] == at(9)

    [strings] = table_rows(output, "strings")
    assert strings["horsepower"] == 247  # typed from the catalog, though the record had text
    data = table_rows(output, f"strings_{path_hash(['strings', 'limited_editions'])}_limited_editions", ["data"])
    assert [d["data"] for d in data] == ["4C spider", "4C spider italia"]
    assert data[0]["_airbyte_limited_editions_hashid"] == md5(strings["_airbyte_strings_hashid"], "4C spider")

    [spec] = table_rows(output, "specs")
    [power] = table_rows(output, f"specs_{path_hash(['specs', 'powertrain_specs'])}_powertrain_specs")
    assert (power["horsepower"], power["transmission"]) == (247, "6-speed")
    assert power["_airbyte_specs_foreign_hashid"] == spec["_airbyte_specs_hashid"]
    inner = table_rows(output, f"specs_{path_hash(['specs', 'cars'])}_cars", ["make"])
    assert [c["make"] for c in inner] == ["audi", "chevrolet", "lotus"] and "_airbyte_cars_hashid" in inner[0]
    down = table_rows(output, f"specs_deep_{path_hash(['specs', 'deep', 'down'])}_down")
    leaves = table_rows(output, f"specs_deep_down_{path_hash(['specs', 'deep', 'down', 'items'])}_items", ["tag"])
    assert [d["level"] for d in down] == [2]
    assert [(i["tag"], i["when"]) for i in leaves] == [("x", datetime(2024, 1, 2, 3, 4, 5, tzinfo=timezone.utc)),
                                                       ("y", None)]
    assert {i["_airbyte_down_foreign_hashid"] for i in leaves} == {down[0]["_airbyte_down_hashid"]}
    assert table_rows(output, f"specs_{path_hash(['specs', 'empty'])}_empty") == []  # a null object: no row
    assert {"_airbyte_raw_cars", "_airbyte_raw_strings", "_airbyte_raw_specs"} <= names(output)
    [raw] = table_rows(output, "_airbyte_raw_strings")
    assert raw["_airbyte_data"].startswith('{"make":"alfa romeo"')

    # normalizing again from scratch gives the same ids
    normalize(spark, parquet, full_refresh=True, now=at(10))
    assert table_rows(output, "cars")[0]["_airbyte_cars_hashid"] == car["_airbyte_cars_hashid"]
    assert table_rows(output, editions_table, ["name"])[0]["_airbyte_normalized_at"] == at(10)


USERS = {"type": "object", "properties": {
    "id": {"type": "integer"}, "name": {"type": "string"}, "updated_at": {"type": "string", "format": "date-time"},
    "_ab_cdc_deleted_at": {"type": ["null", "string"], "format": "date-time"},
    "address": {"type": "object", "properties": {"city": {"type": "string"}}}}}


def user(i, name, updated, deleted=None):
    return {"id": i, "name": name, "updated_at": updated.isoformat().replace("+00:00", "Z"),
            "_ab_cdc_deleted_at": deleted.isoformat().replace("+00:00", "Z") if deleted else None,
            "address": {"city": f"{name}-city"}}


def scd_view(output):
    rows = table_rows(output, "users_scd", ["id", "_airbyte_start_at", "_airbyte_emitted_at"])
    return [(r["id"], r["name"], r["_airbyte_start_at"].day, r["_airbyte_end_at"] and r["_airbyte_end_at"].day,
             r["_airbyte_active_row"]) for r in rows]


def test_three_syncs_through_deduped_history(spark, output, local_settings):
    settings = local_settings("parquet")
    dec31 = datetime(2023, 12, 31, tzinfo=timezone.utc)

    def sync(records, day):
        land(settings, "users", records, USERS, emitted_at=at(day), primary_key=["id"], cursor="updated_at",
             destination_sync_mode="append_dedup")
        [outcome] = normalize(spark, settings, now=at(day, 12)).streams
        assert outcome.error is None
        return outcome

    first = sync([user(1, "a", at(1)), user(2, "b", at(1)), user(3, "c", at(1))], 1)
    assert not first.incremental
    assert scd_view(output) == [(1, "a", 1, None, True), (2, "b", 1, None, True), (3, "c", 1, None, True)]

    second = sync([user(1, "a2", at(2)), user(2, "b", at(2), deleted=at(2)), user(3, "old", dec31)], 2)
    assert second.incremental
    assert scd_view(output) == [(1, "a", 1, 2, False), (1, "a2", 2, None, True),
                                (2, "b", 1, 2, False), (2, "b", 2, None, False),
                                (3, "old", 31, 1, False), (3, "c", 1, None, True)]

    sync([user(1, "a3", at(2)), user(4, "d", at(3))], 3)  # same cursor as a2: the later emitted wins
    assert scd_view(output) == [(1, "a", 1, 2, False), (1, "a2", 2, 2, False), (1, "a3", 2, None, True),
                                (2, "b", 1, 2, False), (2, "b", 2, None, False),
                                (3, "old", 31, 1, False), (3, "c", 1, None, True),
                                (4, "d", 3, None, True)]
    scd = table_rows(output, "users_scd", ["id", "_airbyte_start_at", "_airbyte_emitted_at"])
    untouched = [r["_airbyte_normalized_at"] for r in scd if r["id"] in (2, 3)]
    assert set(untouched) == {at(2, 12)}  # the third run read no history of keys it did not touch
    assert {r["_airbyte_unique_key"] for r in scd if r["id"] == 1} == {md5(1)}
    assert scd[0]["_airbyte_unique_key_scd"] == md5(md5(1), int(at(1).timestamp() * 1e6), int(at(1).timestamp() * 1e6))

    final = table_rows(output, "users", ["id"])
    assert [(r["id"], r["name"]) for r in final] == [(1, "a3"), (3, "c"), (4, "d")]
    assert "_airbyte_active_row" not in final[0] and final[0]["_airbyte_unique_key"] == md5(1)
    cities = table_rows(output, f"users_{path_hash(['users', 'address'])}_address", ["city"])
    assert [c["city"] for c in cities] == ["a3-city", "c-city", "d-city"]
    assert {c["_airbyte_users_foreign_hashid"] for c in cities} == {r["_airbyte_users_hashid"] for r in final}
    assert len(table_rows(output, "_airbyte_raw_users")) == 8

    # the same tables from scratch
    normalize(spark, settings, full_refresh=True, now=at(20))
    assert scd_view(output) == [(1, "a", 1, 2, False), (1, "a2", 2, 2, False), (1, "a3", 2, None, True),
                                (2, "b", 1, 2, False), (2, "b", 2, None, False),
                                (3, "old", 31, 1, False), (3, "c", 1, None, True),
                                (4, "d", 3, None, True)]
    again = table_rows(output, "users", ["id"])
    assert [r["_airbyte_users_hashid"] for r in again] == [r["_airbyte_users_hashid"] for r in final]


EVENTS = {"type": "object", "properties": {"id": {"type": "integer"}, "tags": {"type": "array",
                                                                                 "items": {"type": "string"}}}}


def test_incremental_append_failures_and_an_unfinished_publish(spark, output, local_settings, monkeypatch):
    from framework.normalization.targets import parquet as target_module

    settings = local_settings("jsonl")
    tags = f"events_{path_hash(['events', 'tags'])}_tags"
    land(settings, "events", [{"id": 1, "tags": ["a"]}, {"id": 2, "tags": []}], EVENTS, emitted_at=at(1))
    normalize(spark, settings, now=at(1, 12))
    land(settings, "events", [{"id": 3, "tags": ["b", "c"]}], EVENTS, emitted_at=at(2))
    [outcome] = normalize(spark, settings, now=at(2, 12)).streams
    assert outcome.incremental and outcome.error is None
    rows = table_rows(output, "events", ["id"])
    assert [(r["id"], r["_airbyte_normalized_at"].day) for r in rows] == [(1, 1), (2, 1), (3, 2)]
    assert len(table_rows(output, tags)) == 3 and len(table_rows(output, "_airbyte_raw_events")) == 3

    # a run that fails while writing leaves every table as it was, and no staged files
    land(settings, "events", [{"id": 4, "tags": ["d"]}], EVENTS, emitted_at=at(3))
    real_write = target_module.write_tables
    staged = []

    def failing(tables, *args, **kwargs):  # every table's files are staged, then the write fails
        staged.append(real_write(tables, *args, **kwargs))
        raise RuntimeError("disk full")

    monkeypatch.setattr(target_module, "write_tables", failing)
    [outcome] = normalize(spark, settings, now=at(3, 12)).streams
    assert "disk full" in outcome.error
    assert sum(w["rows"] for w in staged[0][tags]) == 1
    assert [r["id"] for r in table_rows(output, "events", ["id"])] == [1, 2, 3]
    assert len(table_rows(output, tags)) == 3
    assert not os.listdir(normalized(output, "_airbyte_normalization", "staging"))

    # a run that dies after its journal was written is finished by the next one
    monkeypatch.setattr(target_module, "write_tables", real_write)
    monkeypatch.setattr(target_module.ParquetTarget, "_apply", lambda self, journal: (_ for _ in ()).throw(
        RuntimeError("killed")))
    [outcome] = normalize(spark, settings, now=at(3, 12)).streams
    assert "killed" in outcome.error
    assert os.path.exists(normalized(output, "_airbyte_normalization", "journal.json"))
    monkeypatch.undo()
    [outcome] = normalize(spark, settings, now=at(4)).streams
    assert outcome.error is None and outcome.incremental
    assert [r["id"] for r in table_rows(output, "events", ["id"])] == [1, 2, 3, 4]
    assert len(table_rows(output, tags)) == 4
    assert not os.path.exists(normalized(output, "_airbyte_normalization", "journal.json"))


def test_normalizing_on_s3(spark, s3_settings, s3_client, s3_bucket):
    settings = s3_settings(format={"format_type": "Parquet"})
    land(settings, "events", [{"id": 1, "tags": ["a", "b"]}], EVENTS, emitted_at=at(1))
    normalize(spark, settings, now=at(1, 12))
    land(settings, "events", [{"id": 2, "tags": ["c"]}], EVENTS, emitted_at=at(2))
    [outcome] = normalize(spark, settings, now=at(2, 12)).streams
    assert outcome.error is None and outcome.incremental

    def read(table):
        listing = s3_client.list_objects_v2(Bucket=s3_bucket, Prefix=f"data_normalized/{table}/")["Contents"]
        return [row for item in listing for row in pq.read_table(io.BytesIO(
            s3_client.get_object(Bucket=s3_bucket, Key=item["Key"])["Body"].read())).to_pylist()]

    assert sorted(r["id"] for r in read("events")) == [1, 2]
    assert sorted(r["data"] for r in read(f"events_{path_hash(['events', 'tags'])}_tags")) == ["a", "b", "c"]
    left = s3_client.list_objects_v2(Bucket=s3_bucket, Prefix="data_normalized/_airbyte_normalization/staging/")
    assert left.get("KeyCount", 0) == 0
