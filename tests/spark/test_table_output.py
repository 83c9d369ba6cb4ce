"""framework/spark/table_output.py: the Spark pipeline landing streams as Delta tables, the state in each commit.

Executors write the Parquet files into the table's data folder; the driver commits them with the state; the next
sync reads its state from the table; overwrite is one commit; S3 through moto's server. One shared Spark session
(tests/conftest.py); read back with deltalake and polars, counting ids.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from spark.test_pipeline import MANIFEST, Shop, item, saved_state, serve, settings_for, stream_result, sync

pytest.importorskip("deltalake", reason="the tables extra (deltalake) is not installed: pip install '.[tables]'")

import polars as pl  # noqa: E402
from deltalake import DeltaTable  # noqa: E402
from s3_fixtures import S3_KEYS, S3_REGION  # noqa: E402

from framework.storage.state_store import STATE_KEY  # noqa: E402
from framework.tables.delta import DeltaLakeTable  # noqa: E402
from framework.tables.factory import app_id  # noqa: E402

pytestmark = pytest.mark.spark

DELTA = {"format_type": "delta"}


@pytest.fixture
def shop(fake_api) -> Shop:
    return serve(fake_api)


@pytest.fixture
def manifest(write_manifest) -> str:
    return write_manifest(MANIFEST)


def ids(location: str, storage_options: dict | None = None, version: int | None = None) -> list[int]:
    # polars, not DeltaTable.to_pyarrow_table(): deltalake 1.6's pyarrow reader can abort the interpreter at exit
    return sorted(pl.read_delta(location, version=version, storage_options=storage_options)["id"].to_list())


def test_two_syncs_append_each_record_once_with_the_state_in_the_commits(spark, shop, manifest, tmp_path):
    import polars as pl

    out = tmp_path / "out"
    first = sync(spark, manifest, shop, settings_for(out, DELTA), streams=["items"])
    assert not first.failed and stream_result(first, "items").records == 8
    table = DeltaLakeTable(str(out / "items"))
    committed = table.last_state(app_id("items"))
    assert committed is not None and committed.state == {"updated_at": "2024-01-04T18:00:00Z"}
    assert saved_state(out)["streams"]["items"]["state"] == committed.state  # the state file says the same
    assert ids(table.location) == [1, 2, 3, 4, 5, 6, 7, 8]
    frame = pl.read_delta(table.location)
    assert frame.schema["at_time"] == pl.String and frame.schema["updated_at"] == pl.Datetime("us", "UTC")
    # times with a zone are converted to UTC (as for Parquet), then stored as ISO 8601 text
    assert {"02:00:00.000000", "13:00:00.000000"} <= set(frame["at_time"].drop_nulls().to_list())

    # the state file set back (a driver killed between commit and save): the table's state wins
    state_file = out / STATE_KEY
    doc = json.loads(state_file.read_text())
    doc["streams"]["items"]["state"] = {"updated_at": "2024-01-01T00:00:00Z"}
    state_file.write_text(json.dumps(doc))
    shop.items += [item(9, 5, 6), item(10, 5, 12)]
    second = sync(spark, manifest, shop, settings_for(out, DELTA), streams=["items"], end="2024-01-05T23:59:59Z")
    assert not second.failed
    # from the table's state: item 8 again (the cursor is inclusive, as Airbyte's), then the new ones
    assert stream_result(second, "items").records == 3
    assert ids(table.location) == [1, 2, 3, 4, 5, 6, 7, 8, 8, 9, 10]
    assert table.last_state(app_id("items")).state == {"updated_at": "2024-01-05T12:00:00Z"}  # type: ignore[union-attr]
    assert saved_state(out)["streams"]["items"]["state"] == {"updated_at": "2024-01-05T12:00:00Z"}
    assert table.orphans() == []


def test_an_overwrite_is_one_commit_that_replaces_the_table(spark, shop, manifest, tmp_path):
    out = tmp_path / "out"
    for _ in range(2):
        result = sync(spark, manifest, shop, settings_for(out, DELTA), streams=["items"], sync_mode="overwrite")
        assert not result.failed and stream_result(result, "items").table_commits == 1
    location = str(out / "items")
    assert ids(location) == [1, 2, 3, 4, 5, 6, 7, 8]  # each once
    assert ids(location, version=0) == [1, 2, 3, 4, 5, 6, 7, 8]  # the first sync's, by time travel
    history = DeltaTable(location).history()
    assert history[0]["operationParameters"]["mode"] == "Overwrite"
    generations = pl.read_delta(location)["_airbyte_generation_id"].to_list()
    assert set(generations) == {2}


def test_a_failed_overwrite_commits_nothing(spark, shop, manifest, tmp_path):
    out = tmp_path / "out"
    assert not sync(spark, manifest, shop, settings_for(out, DELTA), streams=["items"], sync_mode="overwrite").failed
    shop.refuse_since = {"2024-01-03T00:00:00Z"}
    failed = sync(spark, manifest, shop, settings_for(out, DELTA), streams=["items"], sync_mode="overwrite")
    assert failed.failed
    table = DeltaLakeTable(str(out / "items"))
    assert ids(table.location) == [1, 2, 3, 4, 5, 6, 7, 8] and len(DeltaTable(table.location).history()) == 1
    assert table.orphans() != []  # the failed overwrite's files: never read, removed after the grace period


def test_compact_merges_the_tables_files_and_keeps_its_state(spark, shop, manifest, tmp_path):
    out = tmp_path / "out"
    result = sync(spark, manifest, shop, settings_for(out, DELTA), streams=["items"], compact=True)
    before, after = stream_result(result, "items").table_files
    assert before > after == 1
    assert ids(str(out / "items")) == [1, 2, 3, 4, 5, 6, 7, 8]
    assert DeltaLakeTable(str(out / "items")).last_state(app_id("items")).state == \
        {"updated_at": "2024-01-04T18:00:00Z"}  # type: ignore[union-attr]


def test_a_delta_table_on_s3(spark, shop, manifest, s3_endpoint_process):
    import uuid

    import boto3

    from framework.models.destination import DestinationSettings
    from framework.tables.factory import delta_options

    # moto in a process of its own: deltalake holds the GIL while it waits for S3 (s3_fixtures.py)
    bucket = f"test-{uuid.uuid4().hex[:16]}"
    boto3.client("s3", endpoint_url=s3_endpoint_process, region_name=S3_REGION, **S3_KEYS).create_bucket(Bucket=bucket)
    settings = DestinationSettings.model_validate({
        "s3_bucket_name": bucket, "s3_bucket_path": "data", "s3_bucket_region": S3_REGION,
        "s3_endpoint": s3_endpoint_process, "access_key_id": S3_KEYS["aws_access_key_id"],
        "secret_access_key": S3_KEYS["aws_secret_access_key"], "format": DELTA})
    result = sync(spark, manifest, shop, settings, streams=["items", "notes"])
    assert not result.failed, [s.error for s in result.streams]
    options = delta_options(settings)
    assert ids(f"s3://{bucket}/data/items", options) == [1, 2, 3, 4, 5, 6, 7, 8]
    assert pl.read_delta(f"s3://{bucket}/data/notes", storage_options=options).height == 5
    table = DeltaLakeTable(f"s3://{bucket}/data/items", options)
    assert table.last_state(app_id("items")).state == {"updated_at": "2024-01-04T18:00:00Z"}  # type: ignore[union-attr]
    assert table.orphans() == []
    again = sync(spark, manifest, shop, settings, streams=["items"])  # from the table's state: item 8 again
    assert stream_result(again, "items").records == 1 and len(ids(f"s3://{bucket}/data/items", options)) == 9


def test_the_table_folder_holds_the_log_and_the_data_only(spark, shop, manifest, tmp_path):
    out = tmp_path / "out"
    assert not sync(spark, manifest, shop, settings_for(out, DELTA), streams=["items"]).failed
    visible = sorted(p.name for p in Path(out / "items").iterdir() if not p.name.startswith("."))
    assert visible == ["_delta_log", "data"]


def test_a_field_new_in_the_schema_adds_a_nullable_column_and_the_result_says_so(spark, shop, write_manifest,
                                                                                 tmp_path):
    import polars as pl

    out = tmp_path / "out"
    first = sync(spark, write_manifest(MANIFEST), shop, settings_for(out, DELTA), streams=["items"])
    assert not first.failed and stream_result(first, "items").table_added == ()
    wider = MANIFEST.replace("          id: {type: integer}\n          name: {type: string}\n          price:",
                             "          id: {type: integer}\n          name: {type: string}\n"
                             "          colour: {type: [\"null\", string]}\n          price:", 1)
    assert wider != MANIFEST
    shop.items += [item(9, 5, 6, colour="red")]
    second = sync(spark, write_manifest(wider, "wider.yaml"), shop, settings_for(out, DELTA), streams=["items"],
                  end="2024-01-05T23:59:59Z")
    assert not second.failed and stream_result(second, "items").table_added == ("colour",)
    frame = pl.read_delta(str(out / "items")).sort("id")
    assert frame.filter(pl.col("id") == 9)["colour"].to_list() == ["red"]
    assert frame.filter(pl.col("id") == 1)["colour"].to_list() == [None]


def test_a_column_whose_kind_changed_keeps_the_tables_type_and_nulls_what_does_not_fit(spark, shop, write_manifest,
                                                                                        tmp_path):
    out = tmp_path / "out"
    as_integer = MANIFEST.replace("          price: {type: number}", "          price: {type: integer}", 1)
    assert as_integer != MANIFEST
    assert not sync(spark, write_manifest(as_integer, "int.yaml"), shop, settings_for(out, DELTA),
                    streams=["items"]).failed
    shop.items += [item(9, 5, 6, price=9.5), item(10, 5, 12, price=10.0)]
    second = sync(spark, write_manifest(MANIFEST), shop, settings_for(out, DELTA), streams=["items"],
                  end="2024-01-05T23:59:59Z")
    assert not second.failed
    rows = {r["id"]: r for r in DeltaTable(str(out / "items")).to_pyarrow_table().to_pylist() if r["id"] >= 9}
    assert rows[10]["price"] == 10 and rows[9]["price"] is None  # the table's integer column: 9.5 does not fit
    assert {"field": "price", "change": "NULLED", "reason": "DESTINATION_TYPECAST_ERROR"} in \
        rows[9]["_airbyte_meta"]["changes"]
