"""Storage on a local folder and on S3 (a moto server): atomic objects, metadata, listing, failures."""

from __future__ import annotations

import json
import os
from types import SimpleNamespace

import pytest

from framework.errors import ConfigError, FrameworkError
from framework.models.destination import DestinationSettings
from framework.storage import GENERATION_KEY, ObjectInfo, parse_s3_uri, storage_for
from framework.storage.local import LocalStorage
from framework.storage.s3 import S3Storage

MIB = 1024 * 1024


@pytest.fixture(params=["local", "s3"])
def storage(request, tmp_path):
    if request.param == "local":
        return LocalStorage(str(tmp_path / "out"))
    client = request.getfixturevalue("s3_client")
    bucket = request.getfixturevalue("s3_bucket")
    return S3Storage(bucket, "base/path", client, part_size=5 * MIB)


def test_an_object_appears_only_when_committed(storage):
    writer = storage.open_object("ns/users/part_0.parquet", {GENERATION_KEY: "3"})
    writer.write(b"hello ")
    writer.write(bytearray(b"world"))
    assert writer.tell() == 11
    assert storage.read("ns/users/part_0.parquet") is None
    assert storage.list("ns/") == []
    writer.commit()
    assert storage.read("ns/users/part_0.parquet") == b"hello world"
    assert storage.list("ns/") == [ObjectInfo("ns/users/part_0.parquet", 11, {GENERATION_KEY: "3"})]
    assert storage.list("ns/")[0].generation == 3


def test_abort_leaves_nothing(storage):
    writer = storage.open_object("a/b.csv", {GENERATION_KEY: "1"})
    writer.write(b"x" * 100)
    writer.abort()
    writer.abort()  # twice is fine
    assert storage.read("a/b.csv") is None
    assert storage.list("") == []
    with pytest.raises(FrameworkError):
        writer.commit()


def test_an_exception_inside_with_aborts(storage):
    with pytest.raises(RuntimeError), storage.open_object("a/b.csv") as writer:
        writer.write(b"partial")
        raise RuntimeError("reader failed")
    assert storage.read("a/b.csv") is None and storage.list("") == []


def test_write_atomic_replaces_the_whole_document(storage):
    storage.write_atomic("_airbyte_state/state.json", b'{"sync_id": 1}')
    storage.write_atomic("_airbyte_state/state.json", b'{"sync_id": 2}', {"kind": "state"})
    assert storage.read("_airbyte_state/state.json") == b'{"sync_id": 2}'
    [info] = storage.list("_airbyte_state/")
    assert info.metadata == {"kind": "state"} and info.size == 14


def test_list_is_a_plain_prefix_match_sorted_by_key(storage):
    for key in ["s/users/2.csv", "s/users/1.csv", "s/users_v2/1.csv", "s/orders/1.csv", "top.csv"]:
        storage.write_atomic(key, b"1")
    assert [i.key for i in storage.list("s/users")] == ["s/users/1.csv", "s/users/2.csv", "s/users_v2/1.csv"]
    assert [i.key for i in storage.list("s/users/")] == ["s/users/1.csv", "s/users/2.csv"]
    assert [i.key for i in storage.list("")][-1] == "top.csv"
    assert all(i.metadata is None for i in storage.list("s/", with_metadata=False))


def test_delete_removes_objects_and_skips_missing_ones(storage):
    storage.write_atomic("d/1.csv", b"1", {GENERATION_KEY: "1"})
    storage.write_atomic("d/2.csv", b"2")
    storage.delete(["d/1.csv", "d/never.csv"])
    assert [i.key for i in storage.list("d/")] == ["d/2.csv"]
    storage.delete([])


def test_uri_names_the_object(storage, tmp_path):
    if isinstance(storage, LocalStorage):
        assert storage.uri("a/b.csv") == str(tmp_path / "out" / "a" / "b.csv")
    else:
        assert storage.uri("a/b.csv") == f"s3://{storage.bucket}/base/path/a/b.csv"
        assert storage.uri() == f"s3://{storage.bucket}/base/path"


# -------------------------------------------------------------------- local


def test_local_temp_files_and_sidecars_are_hidden(tmp_path):
    storage = LocalStorage(str(tmp_path))
    writer = storage.open_object("x/f.parquet", {GENERATION_KEY: "2"})
    writer.write(b"data")
    names = os.listdir(tmp_path / "x")
    assert len(names) == 1 and names[0].startswith(".f.parquet.") and names[0].endswith(".tmp")
    writer.commit()
    assert sorted(os.listdir(tmp_path / "x")) == ["f.parquet"]  # the data folder holds data only
    assert (tmp_path / ".metadata" / "x" / "f.parquet.json").is_file()
    assert [i.key for i in storage.list("")] == ["x/f.parquet"]
    assert storage.list("x/")[0].metadata == {GENERATION_KEY: "2"}
    # an object written again without metadata loses the old metadata
    storage.write_atomic("x/f.parquet", b"new")
    assert sorted(os.listdir(tmp_path / "x")) == ["f.parquet"]
    assert not (tmp_path / ".metadata" / "x" / "f.parquet.json").exists()
    assert storage.list("x/") == [ObjectInfo("x/f.parquet", 3, {})]


def test_metadata_of_older_outputs_in_sidecars_is_still_read_and_deleted_with_its_object(tmp_path):
    storage = LocalStorage(str(tmp_path))
    storage.write_atomic("x/f.parquet", b"old")
    (tmp_path / "x" / ".f.parquet.meta.json").write_text(json.dumps({GENERATION_KEY: "7"}))
    assert storage.list("x/")[0].metadata == {GENERATION_KEY: "7"}
    storage.delete(["x/f.parquet"])
    assert os.listdir(tmp_path / "x") == []


def test_local_abort_removes_the_temp_file(tmp_path):
    storage = LocalStorage(str(tmp_path))
    with pytest.raises(ValueError), storage.open_object("x/f.parquet") as writer:
        writer.write(b"data")
        raise ValueError
    assert os.listdir(tmp_path / "x") == []


def test_local_keys_cannot_leave_the_root(tmp_path):
    storage = LocalStorage(str(tmp_path))
    for bad in ["../escape.csv", "a/../../b", "a//b", ""]:
        with pytest.raises(ConfigError):
            storage.open_object(bad)


def test_local_list_of_a_missing_folder_is_empty(tmp_path):
    assert LocalStorage(str(tmp_path / "nothing")).list("a/") == []


# ----------------------------------------------------------------------- S3


def test_s3_metadata_key_is_ab_generation_id(s3_client, s3_bucket):
    storage = S3Storage(s3_bucket, "p", s3_client)
    with storage.open_object("k.avro", {GENERATION_KEY: "5"}) as writer:
        writer.write(b"avro")
        writer.commit()
    head = s3_client.head_object(Bucket=s3_bucket, Key="p/k.avro")
    assert head["Metadata"] == {"ab-generation-id": "5"}
    assert "-" not in head["ETag"]  # a small object is one put_object


def test_s3_large_object_goes_up_in_parts(s3_client, s3_bucket):
    storage = S3Storage(s3_bucket, "", s3_client, part_size=5 * MIB)
    chunk = bytes(range(256)) * 4096  # 1 MiB
    writer = storage.open_object("big.parquet", {GENERATION_KEY: "9"})
    for i in range(11):
        writer.write(chunk[i:] + chunk[:i])
    uploads = s3_client.list_multipart_uploads(Bucket=s3_bucket).get("Uploads", [])
    assert [u["Key"] for u in uploads] == ["big.parquet"]  # started, not visible yet
    assert storage.read("big.parquet") is None
    writer.commit()
    body = s3_client.get_object(Bucket=s3_bucket, Key="big.parquet")
    assert body["ETag"].strip('"').endswith("-3")  # 5 MiB + 5 MiB + 1 MiB
    assert body["Body"].read() == b"".join(chunk[i:] + chunk[:i] for i in range(11))
    assert body["Metadata"] == {"ab-generation-id": "9"}
    assert s3_client.list_multipart_uploads(Bucket=s3_bucket).get("Uploads", []) == []


class FailingParts:
    """A boto3 client whose n-th ``upload_part`` fails, as a network failure half way would."""

    def __init__(self, client, fail_at: int):
        self._client = client
        self.fail_at = fail_at
        self.calls = 0

    def upload_part(self, **kwargs):
        self.calls += 1
        if self.calls == self.fail_at:
            raise ConnectionError("connection reset by peer")
        return self._client.upload_part(**kwargs)

    def __getattr__(self, name):
        return getattr(self._client, name)


def test_s3_failure_in_the_middle_of_an_upload_leaves_nothing(s3_client, s3_bucket):
    client = FailingParts(s3_client, fail_at=2)
    storage = S3Storage(s3_bucket, "out", client, part_size=5 * MIB, upload_concurrency=1)
    with pytest.raises(FrameworkError, match="upload part 2 of s3://.*/out/broken.parquet"), \
            storage.open_object("broken.parquet", {GENERATION_KEY: "1"}) as writer:
        for _ in range(16):
            writer.write(b"z" * MIB)
        writer.commit()
    assert client.calls >= 2
    assert storage.read("broken.parquet") is None
    assert "Contents" not in s3_client.list_objects_v2(Bucket=s3_bucket)
    assert s3_client.list_multipart_uploads(Bucket=s3_bucket).get("Uploads", []) == []


def test_s3_sealed_medium_object_is_uploaded_before_commit(s3_client, s3_bucket):
    storage = S3Storage(s3_bucket, "", s3_client, inline_limit=1024)
    writer = storage.open_object("m.csv")
    writer.write(b"m" * 4096)
    writer.seal()
    assert len(s3_client.list_multipart_uploads(Bucket=s3_bucket).get("Uploads", [])) == 1
    assert storage.read("m.csv") is None
    with pytest.raises(FrameworkError):
        writer.write(b"more")
    writer.commit()
    assert storage.read("m.csv") == b"m" * 4096


def test_s3_missing_bucket_is_a_config_error(s3_client):
    storage = S3Storage("no-such-bucket-here", "", s3_client)
    with pytest.raises(ConfigError, match="bucket does not exist"):
        storage.write_atomic("a", b"1")


def test_s3_part_size_below_5_mib_is_refused(s3_client):
    with pytest.raises(ConfigError, match="5"):
        S3Storage("b", "", s3_client, part_size=MIB)


# --------------------------------------------------------------- storage_for


def test_storage_for_a_local_output(tmp_path):
    storage = storage_for(DestinationSettings.default_local(str(tmp_path / "o")))
    assert isinstance(storage, LocalStorage) and storage.root == str(tmp_path / "o")


def test_storage_for_a_bucket_writes_through_the_endpoint(s3_settings, s3_client, s3_bucket):
    storage = storage_for(s3_settings(format={"format_type": "Parquet", "part_size_mb": 6}))
    assert isinstance(storage, S3Storage)
    assert (storage.bucket, storage.prefix, storage.part_size) == (s3_bucket, "data", 6 * MIB)
    storage.write_atomic("x.json", b"{}")
    assert s3_client.get_object(Bucket=s3_bucket, Key="data/x.json")["Body"].read() == b"{}"


def test_storage_for_passes_endpoint_region_and_keys_to_the_client():
    made = []

    def factory(service, **kwargs):
        made.append((service, kwargs))
        return SimpleNamespace()

    settings = SimpleNamespace(s3_bucket_name=None, output="s3a://bucket/some/prefix/", s3_endpoint="http://minio:9000",
                               s3_bucket_region="eu-west-1", access_key_id="AKID", secret_access_key="SECRET",
                               role_arn=None, format=SimpleNamespace(part_size_mb=None))
    storage = storage_for(settings, client_factory=factory)
    assert (storage.bucket, storage.prefix, storage.part_size) == ("bucket", "some/prefix", 10 * MIB)
    [(service, kwargs)] = made
    assert service == "s3"
    assert kwargs["endpoint_url"] == "http://minio:9000" and kwargs["region_name"] == "eu-west-1"
    assert (kwargs["aws_access_key_id"], kwargs["aws_secret_access_key"]) == ("AKID", "SECRET")
    assert kwargs["config"].s3 == {"addressing_style": "path"}


def test_storage_for_assumes_the_role_when_given():
    made = []

    class Sts:
        def assume_role(self, RoleArn, RoleSessionName):
            assert RoleArn == "arn:aws:iam::1:role/w"
            return {"Credentials": {"AccessKeyId": "T", "SecretAccessKey": "TS", "SessionToken": "TOK"}}

    def factory(service, **kwargs):
        made.append((service, kwargs))
        return Sts() if service == "sts" else SimpleNamespace()

    settings = DestinationSettings.model_validate({"s3_bucket_name": "b", "role_arn": "arn:aws:iam::1:role/w"})
    storage_for(settings, client_factory=factory)
    assert [s for s, _ in made] == ["sts", "s3"]
    assert made[1][1]["aws_session_token"] == "TOK" and "endpoint_url" not in made[1][1]


def test_parse_s3_uri_takes_s3_and_s3a():
    assert parse_s3_uri("s3://b") == ("b", "")
    assert parse_s3_uri("s3a://b/x/y/") == ("b", "x/y")
    assert parse_s3_uri("./output") is None and parse_s3_uri("gs://b/x") is None


def test_part_size_below_5_mb_in_settings_is_refused(tmp_path):
    settings = DestinationSettings.model_validate({"s3_bucket_name": "b", "format": {"format_type": "CSV",
                                                                                     "part_size_mb": 2}})
    with pytest.raises(ConfigError, match="part_size_mb"):
        storage_for(settings, client_factory=lambda *a, **k: SimpleNamespace())


def test_part_size_does_not_matter_for_a_local_output(tmp_path):
    settings = DestinationSettings.model_validate({"output": str(tmp_path), "format": {"format_type": "CSV",
                                                                                       "part_size_mb": 2}})
    assert isinstance(storage_for(settings), LocalStorage)
