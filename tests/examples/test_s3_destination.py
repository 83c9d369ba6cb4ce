"""The example's S3 destination: a sync of the shop API lands in a local S3 server (moto) and is incremental.

The destination config is the shipped one with only ``s3_endpoint`` pointed at
the server this test starts (``examples/shop/local_s3.py``), so what a user
runs is what is checked.
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import boto3
import pyarrow.parquet as pq
import pytest

from framework.cli.run import main as run_manifest

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[2]
SHOP = REPO / "examples" / "shop"
sys.path.insert(0, str(SHOP))

from api import ShopApi  # noqa: E402
from local_s3 import LocalS3  # noqa: E402


def test_the_shipped_destination_config_lands_parquet_in_a_local_s3_and_keeps_state_there(tmp_path, spark):
    destination = json.loads((SHOP / "destination-s3.json").read_text())
    with LocalS3(destination) as s3, ShopApi(rate_limit=None) as api:
        dest_file = tmp_path / "destination.json"
        dest_file.write_text(json.dumps({**destination, "s3_endpoint": s3.endpoint}))
        config = {**json.loads((SHOP / "config.json").read_text()), "base_url": api.url}
        config_file = tmp_path / "config.json"
        config_file.write_text(json.dumps(config))
        argv = [str(SHOP / "manifest.yaml"), "--config", str(config_file), "--destination", str(dest_file),
                "--quiet", "--streams", "accounts"]

        assert run_manifest(argv) == 0
        client = boto3.client("s3", endpoint_url=s3.endpoint, region_name="us-east-1",
                              aws_access_key_id=destination["access_key_id"],
                              aws_secret_access_key=destination["secret_access_key"])
        bucket, prefix = destination["s3_bucket_name"], destination["s3_bucket_path"]
        keys = [o["Key"] for o in client.list_objects_v2(Bucket=bucket, Prefix=prefix)["Contents"]]
        files = [k for k in keys if k.startswith(f"{prefix}/accounts/") and k.endswith(".parquet")]
        assert files, keys
        rows = sum(pq.read_table(io.BytesIO(client.get_object(Bucket=bucket, Key=k)["Body"].read())).num_rows
                   for k in files)
        assert rows == api.shop.counts()["accounts"]
        state = json.loads(client.get_object(Bucket=bucket, Key=f"{prefix}/_airbyte_state/state.json")["Body"].read())
        assert state["streams"]["accounts"]["state"]
        catalog = json.loads(
            client.get_object(Bucket=bucket, Key=f"{prefix}/_airbyte_state/catalog.json")["Body"].read())
        [entry] = catalog["streams"]
        assert (entry["stream"]["name"], entry["sync_mode"], entry["destination_sync_mode"]) == (
            "accounts", "incremental", "append")
        assert entry["cursor_field"] == ["updated_at"] and entry["primary_key"] == [["id"]]

        assert run_manifest(argv) == 0  # nothing new: the second sync lands no more accounts
        keys_after = [o["Key"] for o in client.list_objects_v2(Bucket=bucket, Prefix=prefix)["Contents"]]
        files_after = [k for k in keys_after if k.startswith(f"{prefix}/accounts/") and k.endswith(".parquet")]
        rows_after = sum(
            pq.read_table(io.BytesIO(client.get_object(Bucket=bucket, Key=k)["Body"].read())).num_rows
            for k in files_after)
        assert rows_after - rows <= 1  # at most the boundary record read again (the cursor is inclusive)
