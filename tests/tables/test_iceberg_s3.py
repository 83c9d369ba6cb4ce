"""An Iceberg table on S3 (moto's server): its catalog in the output folder (a local file or an S3 object)."""

from __future__ import annotations

import pytest
from pyiceberg.catalog.sql import SqlCatalog
from s3_fixtures import S3_KEYS, S3_REGION
from tables.iceberg_writes import APP, batch, commit, write

from framework.errors import ConfigError
from framework.tables.iceberg import open_iceberg_table
from framework.tables.iceberg_catalog import CATALOG_NAME, file_io_properties


@pytest.fixture
def options(s3_endpoint):
    """The object store's settings as deltalake takes them."""
    return {"AWS_ACCESS_KEY_ID": S3_KEYS["aws_access_key_id"], "AWS_SECRET_ACCESS_KEY": S3_KEYS["aws_secret_access_key"],
            "AWS_REGION": S3_REGION, "AWS_ENDPOINT_URL": s3_endpoint, "AWS_ALLOW_HTTP": "true"}


def _sync(table, ids, version, options, mode="append"):
    data = batch(ids)
    return table.commit(commit([write(table.data_location(), data, options)], data.schema, version, mode=mode))


def _keys(s3_client, bucket, prefix):
    pages = s3_client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
    # (pyarrow leaves an empty `folder/` marker where it deleted a folder's last file: not a file)
    return sorted(item["Key"] for page in pages for item in page.get("Contents", []) if not item["Key"].endswith("/"))


@pytest.mark.parametrize("catalog_on_s3", [False, True], ids=["local-catalog", "catalog-object"])
def test_two_syncs_to_s3_land_each_id_once_with_the_state_in_the_table(s3_bucket, s3_client, options, tmp_path,
                                                                       catalog_on_s3):
    location = f"s3://{s3_bucket}/data/users"
    path = (f"s3://{s3_bucket}/data/_airbyte_state/iceberg_catalog.db" if catalog_on_s3
            else str(tmp_path / "iceberg_catalog.db"))

    def table():
        return open_iceberg_table(location, "demo", "users", {"type": "sqlite", "path": path}, options)

    assert table().last_state(APP) is None and not table().exists()
    assert _keys(s3_client, s3_bucket, "data/") == []  # reading wrote nothing, not even the catalog
    _sync(table(), [1, 2, 3], 1, options)
    _sync(table(), [4, 5], 2, options)
    assert table().last_state(APP).state == {"cursor": 2}
    keys = _keys(s3_client, s3_bucket, "data/")
    assert sum(key.startswith("data/users/data/") for key in keys) == 2
    assert any(key.startswith("data/users/metadata/") and key.endswith(".metadata.json") for key in keys)
    assert ("data/_airbyte_state/iceberg_catalog.db" in keys) == catalog_on_s3
    if catalog_on_s3:
        local = tmp_path / "copy.db"
        local.write_bytes(s3_client.get_object(Bucket=s3_bucket, Key="data/_airbyte_state/iceberg_catalog.db")["Body"].read())
        path = str(local)
    reader = SqlCatalog(CATALOG_NAME, uri=f"sqlite:///{path}", **file_io_properties(options))
    ids = reader.load_table(("demo", "users")).scan().to_arrow()["id"].to_pylist()
    assert sorted(ids) == [1, 2, 3, 4, 5]


def test_orphans_on_s3_are_listed_and_removed(s3_bucket, s3_client, options, tmp_path):
    table = open_iceberg_table(f"s3://{s3_bucket}/data/users", "demo", "users",
                               {"type": "sqlite", "path": str(tmp_path / "catalog.db")}, options)
    _sync(table, [1], 1, options)
    lost = write(table.data_location(), batch([2]), options)
    assert table.orphans() == [lost.path] and lost.path.startswith(f"s3://{s3_bucket}/data/users/data/")
    assert table.remove_orphans(older_than_seconds=0) == [lost.path]
    assert table.orphans() == [] and len(_keys(s3_client, s3_bucket, "data/users/data/")) == 1
    assert table.compact().files_after == 1


def test_a_missing_bucket_is_a_clear_error(options, tmp_path):
    table = open_iceberg_table("s3://no-such-bucket-here/data/users", "demo", "users",
                               {"type": "sqlite", "path": str(tmp_path / "catalog.db")}, options)
    with pytest.raises(ConfigError, match=r"the bucket of s3://no-such-bucket-here/data/users does not exist: check the output location"):
        table.exists()
