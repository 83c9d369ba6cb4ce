"""The Spark pipeline writing to S3: a local moto server, boto3 to look at what landed.

Keys, object metadata and contents are checked with boto3 and read back with
pyarrow, as is the state document next to the output. The shop, its fake API
and the manifest are those of ``test_pipeline``.
"""

from __future__ import annotations

import gzip
import io
import json
import re

import pyarrow.parquet as pq
import pytest
from spark.test_pipeline import MANIFEST, SECRET, config_for, serve, stream_result, sync

from framework.formats.folder_record import record_key
from framework.storage.state_store import CATALOG_KEY, STATE_KEY

pytestmark = pytest.mark.spark

S3_SECRET = "testing"  # moto's keys; the access key is the same text


@pytest.fixture
def shop(fake_api):
    return serve(fake_api)


@pytest.fixture
def manifest(write_manifest) -> str:
    return write_manifest(MANIFEST)


def objects(client, bucket: str, prefix: str = "") -> dict[str, dict]:
    """Every object under ``prefix``: key -> its ``head_object`` answer."""
    keys = [item["Key"] for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
            for item in page.get("Contents", ())]
    return {key: client.head_object(Bucket=bucket, Key=key) for key in sorted(keys)}


def body(client, bucket: str, key: str) -> bytes:
    return client.get_object(Bucket=bucket, Key=key)["Body"].read()


def parquet_rows(client, bucket: str, keys) -> list[dict]:
    rows = [row for key in keys for row in pq.read_table(io.BytesIO(body(client, bucket, key))).to_pylist()]
    return sorted(rows, key=lambda r: r["id"])


KEY = re.compile(r"data/items/\d{4}_\d{2}_\d{2}_\d{13}_(?P<part>\d+)\.parquet")


def test_parquet_objects_land_under_the_bucket_path_with_their_generation(spark, shop, manifest, s3_settings,
                                                                          s3_client, s3_bucket):
    settings = s3_settings(format={"format_type": "Parquet", "compression_codec": "ZSTD"})
    result = sync(spark, manifest, shop, settings, streams=["items"])

    items = stream_result(result, "items")
    assert items.error is None and items.records == 8
    found = objects(s3_client, s3_bucket)
    data = [key for key in found if key.startswith("data/items/")]
    assert data and all(KEY.fullmatch(key) for key in data), list(found)
    assert sorted(data) == sorted(f"data/{f['key']}" for f in items.files)
    assert all(f["uri"] == f"s3://{s3_bucket}/data/{f['key']}" for f in items.files)
    assert {found[key]["Metadata"]["ab-generation-id"] for key in data} == {"0"}
    # nothing else: no temp objects (the folder's record: framework/formats/folder_record.py)
    assert set(found) - set(data) == {f"data/{STATE_KEY}", f"data/{CATALOG_KEY}", f"data/{record_key('items')}"}
    assert s3_client.list_multipart_uploads(Bucket=s3_bucket).get("Uploads", []) == []

    rows = parquet_rows(s3_client, s3_bucket, data)
    assert [r["id"] for r in rows] == list(range(1, 9))
    assert {r["_airbyte_meta"]["sync_id"] for r in rows} == {1}
    assert pq.ParquetFile(io.BytesIO(body(s3_client, s3_bucket, data[0]))).metadata.row_group(0).column(0) \
        .compression == "ZSTD"
    state = json.loads(body(s3_client, s3_bucket, f"data/{STATE_KEY}"))
    assert state["sync_id"] == 1 and state["streams"]["items"]["state"] == {"updated_at": "2024-01-04T18:00:00Z"}


def test_incremental_and_overwrite_on_s3(spark, shop, manifest, s3_settings, s3_client, s3_bucket):
    settings = s3_settings()
    sync(spark, manifest, shop, settings, streams=["items"])
    first = {key for key in objects(s3_client, s3_bucket, "data/items/")}
    shop.items.append({**shop.items[-1], "id": 9, "updated_at": "2024-01-05T06:00:00Z"})

    second = sync(spark, manifest, shop, settings, streams=["items"], end="2024-01-05T23:59:59Z")

    assert second.sync_id == 2 and not second.failed
    now = objects(s3_client, s3_bucket, "data/items/")
    added = sorted(set(now) - first)
    assert [r["id"] for r in parquet_rows(s3_client, s3_bucket, added)] == [8, 9]  # from the state S3 holds
    assert min(int(KEY.fullmatch(k)["part"]) for k in added) > max(int(KEY.fullmatch(k)["part"]) for k in first)

    third = sync(spark, manifest, shop, settings, streams=["items"], end="2024-01-05T23:59:59Z",
                 sync_mode="overwrite")

    assert not third.failed
    final = objects(s3_client, s3_bucket, "data/items/")
    assert not set(final) & set(now)  # the older generation is gone
    assert {head["Metadata"]["ab-generation-id"] for head in final.values()} == {"1"}
    assert [r["id"] for r in parquet_rows(s3_client, s3_bucket, final)] == list(range(1, 10))
    state = json.loads(body(s3_client, s3_bucket, f"data/{STATE_KEY}"))
    assert state["sync_id"] == 3 and state["streams"]["items"]["generation_id"] == 1


def test_a_task_failing_in_the_middle_of_a_multipart_upload_leaves_nothing(spark, shop, manifest, s3_settings,
                                                                          s3_client, s3_bucket):
    shop.notes = [{"id": n, "text": f"{n:05d}" + "y" * 2000} for n in range(3000)]  # about 6 MB of JSONL
    shop.refuse_notes_page = 28  # past the first 5 MB part
    settings = s3_settings(format={"format_type": "JSONL", "part_size_mb": 5})
    result = sync(spark, manifest, shop, settings, streams=["notes", "items"])

    notes, items = stream_result(result, "notes"), stream_result(result, "items")
    assert notes.error and "401" in notes.error and notes.files == []
    assert items.error is None and items.records == 8
    assert not objects(s3_client, s3_bucket, "data/notes/")
    assert s3_client.list_multipart_uploads(Bucket=s3_bucket).get("Uploads", []) == []  # aborted, not left

    shop.refuse_notes_page = None
    again = sync(spark, manifest, shop, settings, streams=["notes"])
    assert not again.failed
    landed = objects(s3_client, s3_bucket, "data/notes/")
    assert len(landed) == 1
    # over one 5 MB part: it went up (staged) in two parts, then the driver copied it to its key
    assert next(iter(landed.values()))["ContentLength"] > 5 * 1024 * 1024
    lines = body(s3_client, s3_bucket, next(iter(landed))).decode().splitlines()
    assert sorted(json.loads(line)["_airbyte_data"]["id"] for line in lines) == list(range(3000))


def test_destination_json_with_airbyte_s3_keys(spark, shop, manifest, s3_endpoint, s3_client, s3_bucket, tmp_path,
                                               capsys):
    from framework.cli.run import main

    destination = tmp_path / "destination.json"
    destination.write_text(json.dumps({
        "s3_bucket_name": s3_bucket, "s3_bucket_path": "airbyte/exports", "s3_bucket_region": "us-east-1",
        "s3_endpoint": s3_endpoint, "access_key_id": "testing", "secret_access_key": S3_SECRET,
        "s3_path_format": "${NAMESPACE}/${STREAM_NAME}/${YEAR}_${MONTH}_${DAY}/",
        "file_name_pattern": "{sync_id}_{part_number}{format_extension}",
        "format": {"format_type": "JSONL", "flattening": "No flattening", "compression": {"compression_type": "GZIP"}},
    }))
    config = tmp_path / "config.json"
    config.write_text(json.dumps(config_for(shop)))
    capsys.readouterr()
    code = main([manifest, "--config", str(config), "--destination", str(destination), "--streams", "items,orders"],
                out=io.BytesIO())
    err = capsys.readouterr().err

    assert code == 0, err
    assert f"s3://{s3_bucket}/airbyte/exports" in err and SECRET not in err
    found = objects(s3_client, s3_bucket)
    data = [key for key in found if "_airbyte_state" not in key]
    assert data and all(re.fullmatch(r"airbyte/exports/(items|orders)/\d{4}_\d{2}_\d{2}/1_\d+\.jsonl\.gz", key)
                        for key in data), data
    assert {found[key]["Metadata"]["ab-generation-id"] for key in data} == {"0"}
    lines = [json.loads(line) for key in data if "/items/" in key
             for line in gzip.decompress(body(s3_client, s3_bucket, key)).decode().splitlines()]
    assert sorted(line["_airbyte_data"]["id"] for line in lines) == list(range(1, 9))
    state = json.loads(body(s3_client, s3_bucket, f"airbyte/exports/{STATE_KEY}"))
    assert state["streams"]["orders"]["state"]["parent_state"] == {"accounts": {"updated_at": "2024-01-03T10:00:00Z"}}

    # The same settings with `--output s3://...` write under that prefix instead.
    code = main([manifest, "--config", str(config), "--destination", str(destination), "--output",
                 f"s3://{s3_bucket}/elsewhere", "--streams", "items", "--quiet"], out=io.BytesIO())
    assert code == 0, capsys.readouterr().err
    assert any(key.startswith("elsewhere/items/") for key in objects(s3_client, s3_bucket, "elsewhere/"))
    assert json.loads(body(s3_client, s3_bucket, f"elsewhere/{STATE_KEY}"))["sync_id"] == 1
