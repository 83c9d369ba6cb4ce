"""Realtime Replicant files end to end: syncs through ``run_pipeline`` against the fake API become operations.

The shop has ``region`` (full refresh, the seed's ``tpch.region``, primary key
``r_regionkey``) and ``stock`` (incremental on ``updated_at``, composite key
``warehouse`` + ``sku``, deletes marked by ``_ab_cdc_deleted_at``, values with
commas, quotes, line breaks and NULL-like text). Files are read back with
Python's csv and json modules, which share no code with the writers.
"""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from fakes.api_server import FakeApi, RecordedRequest, dated, paged

from framework.cdc.pointer import load_pointer
from framework.engine.connector import open_connector
from framework.engine.selection import select_streams
from framework.errors import ConfigError
from framework.models.destination import DestinationSettings
from framework.spark.pipeline import PipelineResult, run_pipeline
from framework.storage import storage_for
from framework.temporal.clock import FixedClock

pytestmark = pytest.mark.spark

NOW = datetime(2021, 5, 12, 2, 50, 41, 959000, tzinfo=timezone.utc)
NOW_MS = 1620787841959

MANIFEST = """\
version: 6.7.0
type: DeclarativeSource
definitions:
  requester:
    type: HttpRequester
    url_base: "{{ config.base_url }}"
  selector:
    type: RecordSelector
    extractor: {type: DpathExtractor, field_path: [data]}
streams:
  - type: DeclarativeStream
    name: region
    primary_key: r_regionkey
    schema_loader:
      type: InlineSchemaLoader
      schema:
        type: object
        properties:
          r_comment: {type: [string, "null"]}
          r_name: {type: string}
          r_regionkey: {type: integer}
    retriever:
      type: SimpleRetriever
      requester: {$ref: "#/definitions/requester", path: /region}
      record_selector: {$ref: "#/definitions/selector"}
  - type: DeclarativeStream
    name: stock
    primary_key: [warehouse, sku]
    schema_loader:
      type: InlineSchemaLoader
      schema:
        type: object
        properties:
          warehouse: {type: string}
          sku: {type: integer}
          label: {type: [string, "null"]}
          count: {type: integer}
          updated_at: {type: string, format: date-time, airbyte_type: timestamp_with_timezone}
          _ab_cdc_deleted_at: {type: [string, "null"]}
    incremental_sync:
      type: DatetimeBasedCursor
      cursor_field: updated_at
      datetime_format: "%Y-%m-%dT%H:%M:%SZ"
      start_datetime: "2021-01-01T00:00:00Z"
      end_datetime: "{{ config.end }}"
      step: P1D
      cursor_granularity: PT1S
      start_time_option: {type: RequestOption, inject_into: request_parameter, field_name: since}
      end_time_option: {type: RequestOption, inject_into: request_parameter, field_name: until}
    retriever:
      type: SimpleRetriever
      requester: {$ref: "#/definitions/requester", path: /stock}
      record_selector: {$ref: "#/definitions/selector"}
  - type: DeclarativeStream
    name: keyless
    schema_loader: {type: InlineSchemaLoader, schema: {type: object, properties: {a: {type: string}}}}
    retriever:
      type: SimpleRetriever
      requester: {$ref: "#/definitions/requester", path: /keyless}
      record_selector: {$ref: "#/definitions/selector"}
check: {type: CheckStream, stream_names: [region]}
spec:
  type: Spec
  connection_specification:
    type: object
    properties:
      base_url: {type: string}
      end: {type: string}
"""

NASTY = ["a,b", 'say "hi"', "two\nlines", "NULL", "null", "", "None", "\\N", "  spaced  ", "x\r\ny"]


@dataclass
class Shop:
    api: FakeApi
    region: list[dict] = field(default_factory=list)
    stock: list[dict] = field(default_factory=list)


@pytest.fixture
def shop(fake_api) -> Shop:
    shop = Shop(fake_api)

    def stock(request: RecordedRequest) -> dict:
        return paged(dated(shop.stock, request, "updated_at", "since", "until"), request, default_page_size=100)

    fake_api.route("GET", "/region", lambda request: {"data": shop.region})
    fake_api.route("GET", "/stock", stock)
    fake_api.route("GET", "/keyless", {"data": [{"a": "x"}]})
    return shop


def settings_for(out: Path, fmt: str, **more: Any) -> DestinationSettings:
    return DestinationSettings.model_validate({"output": str(out), "format": {
        "format_type": fmt, "mode": "realtime", "schema": "io_blitzz", **more}})


def sync(spark: Any, manifest: str, shop: Shop, settings: DestinationSettings, streams: list[str],
         end: str = "2021-01-02T23:59:59Z") -> PipelineResult:
    connector = open_connector(manifest, {"base_url": shop.api.url, "end": end}, clock=FixedClock(NOW),
                               sleep=lambda seconds: None)
    return run_pipeline(connector, manifest, select_streams(connector.streams, None, streams), settings, spark)


def op_files(root: Path, stream: str, extension: str) -> list[Path]:
    folder = root / stream
    return sorted(p for p in folder.iterdir() if p.name.startswith("cdc_") and p.name.endswith(extension))


def part_of(path: Path) -> int:
    """The Spark partition an operation file came from: ``cdc_<version>_<partition>.<ext>``."""
    return int(path.stem.split("_")[2])


def csv_rows(root: Path, stream: str) -> list[list[str]]:
    """The rows of the stream's CSV files in order, the partition in each cursor replaced by ``P``."""
    rows = []
    for path in op_files(root, stream, ".csv"):
        for row in csv.reader(io.StringIO(path.read_bytes().decode("utf-8"), newline="")):
            if row[-3:][0] in ("I", "U", "D"):
                row[-2] = row[-2].replace(f'"partNum":{part_of(path)},', '"partNum":P,')
            rows.append(row)
    return rows


def json_rows(root: Path, stream: str) -> list[dict]:
    """The objects of the stream's JSON files in order."""
    return [json.loads(line) for path in op_files(root, stream, ".json")
            for line in path.read_text(encoding="utf-8").splitlines()]


def image_of(root: Path, stream: str) -> dict[str, dict[str, str | None]]:
    """The stream's image as the pointer names it, read with pyarrow: each key's row in the newest file that
    has it (files are named by version), tombstones dropped."""
    pointer = load_pointer(storage_for(settings_for(root, "replicant_csv")), f"_airbyte_cdc/{stream}/pointer.json")
    newest: dict[str, tuple[int, dict]] = {}
    for key in pointer.image_keys:
        version = int(re.search(r"/v(\d+)/_cdc_bucket=", key).group(1))
        for row in pq.read_table(root / key).to_pylist():
            if row["_cdc_key"] not in newest or newest[row["_cdc_key"]][0] < version:
                newest[row["_cdc_key"]] = (version, row)
    return {key: {k: v for k, v in row.items() if not k.startswith("_cdc_")}
            for key, (_, row) in newest.items() if not row["_cdc_deleted"]}


def cursor(sync_id: int, mut_id: int) -> str:
    return (f'{{"extractorId":0,"nodeID":"node1","timestamp":{NOW_MS},"extractionTimestamp":{NOW_MS},'
            f'"dscId":{sync_id},"mutId":{mut_id},"partNum":P,"v":2}}')


def counts(i: int, u: int, d: int) -> str:
    return f'{{"insertCount":{i},"updateCount":{u},"deleteCount":{d},"replaceCount":0}}'


def stock_item(warehouse: str, sku: int, label: str | None, count: int, day: int, deleted: str | None = None) -> dict:
    return {"warehouse": warehouse, "sku": sku, "label": label, "count": count,
            "updated_at": f"2021-01-0{day}T10:00:00Z", "_ab_cdc_deleted_at": deleted}


# ------------------------------------------------------------------------------------ the seed's examples


def test_the_seeds_insert_update_and_delete_from_three_syncs_in_csv(spark, shop, write_manifest, tmp_path):
    manifest = write_manifest(MANIFEST)
    out_csv = tmp_path / "csv"
    africa = {"r_regionkey": 0, "r_comment": "lar deposits, blithely", "r_name": "AFRICA"}
    plans = [
        [africa, {"r_regionkey": 10, "r_comment": "India", "r_name": "India"}],  # INSERT ... VALUES(10,'India','India')
        [africa, {"r_regionkey": 10, "r_comment": "USA", "r_name": "India"}],  # UPDATE ... SET r_comment = 'USA'
        [africa],  # DELETE ... WHERE r_regionkey = 10 (gone from the full snapshot)
    ]
    for records in plans:
        shop.region = records
        result = sync(spark, manifest, shop, settings_for(out_csv, "replicant_csv"), ["region"])
        assert result.streams[0].error is None

    # CSV: triplets (r_comment, r_name, r_regionkey), opType, cursor, counts; read back by Python's csv reader
    rows = csv_rows(out_csv, "region")
    # sync 1: two inserts, in partition order (which key hashes where is Spark's business)
    assert sorted(row[:10] for row in rows[:2]) == [
        ["India", "NULL", "1", "India", "NULL", "1", "10", "NULL", "1", "I"],
        ["lar deposits, blithely", "NULL", "1", "AFRICA", "NULL", "1", "0", "NULL", "1", "I"],
    ]
    assert [row[10:] for row in rows[:2]] == [[cursor(1, 1), counts(1, 0, 0)], [cursor(1, 2), counts(2, 0, 0)]]
    assert rows[2:] == [
        ["USA", "NULL", "1", "NULL", "NULL", "0", "NULL", "10", "2", "U", cursor(2, 3), counts(0, 1, 0)],
        ["NULL", "NULL", "0", "NULL", "NULL", "0", "NULL", "10", "2", "D", cursor(3, 4), counts(0, 0, 1)],
    ]
    # ... and the bytes are quoted as the seed quotes them
    path = op_files(out_csv, "region", ".csv")[-2]
    update = path.read_text()
    assert update == ('USA,NULL,1,NULL,NULL,0,NULL,10,2,U,"{""extractorId"":0,""nodeID"":""node1"",""timestamp"":'
                      f'{NOW_MS},""extractionTimestamp"":{NOW_MS},""dscId"":2,""mutId"":3,""partNum"":{part_of(path)},'
                      '""v"":2}",'
                      '"{""insertCount"":0,""updateCount"":1,""deleteCount"":0,""replaceCount"":0}"\n')

    pointer = load_pointer(storage_for(settings_for(out_csv, "replicant_csv")), "_airbyte_cdc/region/pointer.json")
    assert (pointer.version, pointer.applied_sync, pointer.mut_id, pointer.image_rows) == (3, 3, 4, 1)
    # the image: Parquet files of hash buckets, one row per live key, values as text; a full-refresh stream
    # rewrites every bucket, so only the third version's files are left
    assert image_of(out_csv, "region") == {
        '["0"]': {"r_comment": "lar deposits, blithely", "r_name": "AFRICA", "r_regionkey": "0"}}
    assert pointer.buckets == len(pointer.layout) >= 16 and sum(b.rows for b in pointer.layout) == 1
    # applied staging is gone; only the current image version stays, no stray files
    assert not list((out_csv / "_airbyte_cdc" / "region" / "staging").rglob("*.parquet*"))
    files = [p for p in (out_csv / "_airbyte_cdc" / "region" / "image").rglob("*") if p.is_file()]
    assert sorted(str(p.relative_to(out_csv)) for p in files if not p.name.startswith(".")) == sorted(
        pointer.image_keys)
    assert [p.name for p in (out_csv / "_airbyte_cdc" / "region" / "image").iterdir()] == ["v00000003"]


# ----------------------------------------------------- composite key, deletes, full image, nasty values


def test_composite_key_deleted_records_full_image_and_values_that_need_quoting(spark, shop, write_manifest,
                                                                                tmp_path):
    manifest = write_manifest(MANIFEST)
    out = tmp_path / "out"
    settings = settings_for(out, "replicant_csv", image="full", include_header=True)
    shop.stock = [stock_item("north", i, label, i, 1) for i, label in enumerate(NASTY)]
    shop.stock.append(stock_item("south", 0, None, 7, 1))  # same sku, other warehouse: another key
    assert sync(spark, manifest, shop, settings, ["stock"], end="2021-01-01T23:59:59Z").streams[0].error is None

    shop.stock += [
        stock_item("north", 1, 'say "hi"', 100, 2),  # count changed
        stock_item("north", 1, 'say "bye"', 101, 2) | {"updated_at": "2021-01-02T11:00:00Z"},  # later: wins
        stock_item("north", 2, "two\nlines", 2, 2, deleted="2021-01-02T10:00:00Z"),  # marked deleted
        stock_item("east", 9, None, 0, 2, deleted="2021-01-02T10:00:00Z"),  # deleted, never seen: nothing
    ]
    result = sync(spark, manifest, shop, settings, ["stock"], end="2021-01-02T23:59:59Z")
    assert result.streams[0].error is None and result.streams[0].files

    rows = csv_rows(out, "stock")
    header = rows[0]
    assert header[:3] == ["warehouse_New_Val", "warehouse_Old_Val", "warehouse_Exists_Val"]
    assert header[-3:] == ["opType", "cursor", "operationcount"] and len(header) == 3 * 6 + 3
    ops = [row for row in rows if row != header]
    assert len(rows) - len(ops) == len(op_files(out, "stock", ".csv"))  # a header in every file
    inserts = [row for row in ops if row[-3] == "I"]
    assert len(inserts) == len(NASTY) + 1
    # every nasty label comes back as written (NULL prints as NULL; the text "NULL" is quoted in the file)
    by_key = {(row[0], row[3]): row for row in inserts}
    for sku, label in enumerate(NASTY):
        assert by_key[("north", str(sku))][6] == label
    assert by_key[("south", "0")][6] == "NULL"
    raw = "".join(path.read_bytes().decode("utf-8") for path in op_files(out, "stock", ".csv"))
    assert ',"NULL",NULL,1,' in raw and ',"",NULL,1,' in raw

    changes = [row for row in ops if row[-3] != "I"]
    assert [(row[-3], row[0], row[1], row[3], row[4]) for row in changes] == [
        ("U", "north", "north", "1", "1"), ("D", "NULL", "north", "NULL", "2")]
    update, delete = changes
    assert update[2::3][:6] == ["3"] * 6  # full image: every field in both images
    assert (update[6], update[7], update[9], update[10]) == ('say "bye"', 'say "hi"', "101", "1")
    assert delete[2::3][:6] == ["2"] * 6 and delete[7] == "two\nlines"
    mut_ids = [int(re.search(r'"mutId":(\d+)', row[-2]).group(1)) for row in ops]
    assert mut_ids == list(range(1, len(ops) + 1))  # strictly increasing within the stream, across syncs
    assert json.loads(ops[-1][-1]) == {"insertCount": 0, "updateCount": 1, "deleteCount": 1, "replaceCount": 0}


# ------------------------------------------------------------------------------------ exactly once


def test_an_apply_that_fails_after_writing_files_then_succeeds_yields_each_operation_once(
        spark, shop, write_manifest, tmp_path, monkeypatch):
    import framework.cdc.apply as apply_module

    manifest = write_manifest(MANIFEST)
    out = tmp_path / "out"
    settings = settings_for(out, "replicant_json")
    shop.stock = [stock_item("north", i, f"label {i}", i, 1) for i in range(5)]
    real_save = apply_module.save_pointer
    failures = []

    def failing_save(*args: Any) -> None:
        failures.append(args)
        raise OSError("the disk is full")

    monkeypatch.setattr(apply_module, "save_pointer", failing_save)
    first = sync(spark, manifest, shop, settings, ["stock"], end="2021-01-01T23:59:59Z").streams[0]
    assert failures and "the disk is full" in first.error and "next sync applies them" in first.error
    assert len(json_rows(out, "stock")) == 5  # the operation files were written, the pointer was not
    assert first.state_saved  # the staged records are durable: the state moved over them

    monkeypatch.setattr(apply_module, "save_pointer", real_save)
    shop.stock.append(stock_item("north", 1, "label one", 1, 2))
    second = sync(spark, manifest, shop, settings, ["stock"], end="2021-01-02T23:59:59Z").streams[0]
    assert second.error is None
    rows = json_rows(out, "stock")
    keys = [(row["opType"], row["after"]["sku"], row["after"]["label"]) for row in rows]
    assert sorted(keys) == sorted([("I", str(i), "label one" if i == 1 else f"label {i}") for i in range(5)])
    assert [json.loads(row["cursor"])["mutId"] for row in rows] == [1, 2, 3, 4, 5]
    assert {json.loads(row["cursor"])["dscId"] for row in rows} == {2}


# ------------------------------------------------------------------------------------ refusals


def test_a_stream_without_primary_key_is_refused_by_name(spark, shop, write_manifest, tmp_path):
    manifest = write_manifest(MANIFEST)
    result = sync(spark, manifest, shop, settings_for(tmp_path / "out", "replicant_csv"), ["keyless"])
    error = result.streams[0].error
    assert "`keyless`" in error and "primary key" in error and "mode: snapshot" in error
    assert not (tmp_path / "out" / "keyless").exists()


def test_realtime_settings_refuse_the_file_writer_path(tmp_path):
    from framework.formats import open_format_writer

    with pytest.raises(ConfigError, match="change-data step"):
        open_format_writer(settings_for(tmp_path, "replicant_csv").format, None, None, io.BytesIO())


# ------------------------------------------------------------------------------------ S3


def test_realtime_files_on_s3(spark, shop, write_manifest, s3_settings, s3_client, s3_bucket):
    manifest = write_manifest(MANIFEST)
    settings = s3_settings(format={"format_type": "replicant_json", "mode": "realtime"})
    shop.region = [{"r_regionkey": 1, "r_comment": None, "r_name": "ASIA"}]
    assert sync(spark, manifest, shop, settings, ["region"]).streams[0].error is None
    shop.region = [{"r_regionkey": 1, "r_comment": "big", "r_name": "ASIA"}]
    assert sync(spark, manifest, shop, settings, ["region"]).streams[0].error is None

    keys = sorted(o["Key"] for o in s3_client.list_objects_v2(Bucket=s3_bucket)["Contents"])
    ops = [key for key in keys if key.startswith("data/region/cdc_")]
    lines = [json.loads(line) for key in ops
             for line in s3_client.get_object(Bucket=s3_bucket, Key=key)["Body"].read().splitlines()]
    assert [(row["opType"], row["after"]["r_comment"]) for row in lines] == [("I", "null"), ("U", "big")]
    assert lines[0]["tableName"]["namespace"]["schema"] is None
    assert "data/_airbyte_cdc/region/pointer.json" in keys
    assert not [key for key in keys if "/staging/" in key]
