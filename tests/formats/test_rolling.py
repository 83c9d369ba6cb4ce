"""Rolling writers: files roll at a size limit, appear only at commit, carry their generation."""

from __future__ import annotations

import gzip
import json
import os
import uuid
from datetime import datetime, timezone

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from framework.formats import raw_batch
from framework.formats.rolling import RollingWriter, WrittenFile, delete_older_generations
from framework.models.destination import DestinationSettings, JsonlFormat, ParquetFormat
from framework.storage.layout import PartNumbers, StreamLayout
from framework.storage.local import LocalStorage
from framework.storage.s3 import S3Storage

AT = datetime(2024, 3, 5, 7, 8, 9, tzinfo=timezone.utc)
SCHEMA = pa.schema([("_airbyte_raw_id", pa.string()), ("_airbyte_extracted_at", pa.timestamp("ms", tz="UTC")),
                    ("_airbyte_generation_id", pa.int64()),
                    ("_airbyte_meta", pa.struct([("sync_id", pa.int64())])),
                    ("id", pa.int64()), ("text", pa.string())])


def batch(start: int, n: int = 500) -> pa.RecordBatch:
    return pa.RecordBatch.from_pydict({
        "_airbyte_raw_id": [str(uuid.UUID(int=i + 1)) for i in range(start, start + n)],
        "_airbyte_extracted_at": [AT] * n, "_airbyte_generation_id": [2] * n,
        "_airbyte_meta": [{"sync_id": 1}] * n, "id": list(range(start, start + n)),
        "text": [uuid.UUID(int=i * 7919).hex * 4 for i in range(start, start + n)],
    }, schema=SCHEMA)


def stream_layout(path="${NAMESPACE}/${STREAM_NAME}/", extension=".parquet"):
    return StreamLayout.build(path_format=path, file_name_pattern=None, extension=extension, stream="users",
                              namespace="public", started_at=AT)


def rolling(storage, *, limit=100_000, fmt=None, generation=2, part_numbers=None, layout=None):
    layout = layout or stream_layout()
    return RollingWriter(storage, layout.key, fmt or ParquetFormat(block_size_mb=1), SCHEMA, None, generation,
                         limit, part_numbers if part_numbers is not None else PartNumbers(0))


def test_files_roll_at_the_limit_and_appear_at_commit(tmp_path):
    storage = LocalStorage(str(tmp_path))
    writer = rolling(storage, part_numbers=PartNumbers(10, 3, 1))
    for i in range(60):
        writer.write(batch(i * 100, 100))
    assert writer.files_started > 2
    assert storage.list("") == []  # nothing visible before commit
    files = writer.commit()
    assert [f.part_number for f in files] == [11 + 3 * i for i in range(len(files))]
    assert [f.key for f in files] == [f"public/users/{f.part_number}.parquet" for f in files]
    listed = {i.key: i for i in storage.list("public/users/")}
    assert sorted(listed) == sorted(f.key for f in files)
    ids = []
    for f in files:
        assert listed[f.key].size == f.bytes and listed[f.key].generation == 2
        assert f.uri == storage.uri(f.key)
        table = pq.read_table(f.uri)
        assert table.num_rows == f.records
        ids += table.column("id").to_pylist()
    assert ids == list(range(6000))
    assert all(f.records > 100 for f in files[:-1])  # several batches per file


def test_text_files_roll_just_past_the_limit(tmp_path):
    storage = LocalStorage(str(tmp_path))
    layout = stream_layout(extension=".jsonl")
    writer = RollingWriter(storage, layout.key, JsonlFormat(), None, None, 1, 50_000, PartNumbers(0))
    batches = [raw_batch([json.dumps({"i": i, "pad": "x" * (i % 300)}) for i in range(s, s + 40)],
                         [str(uuid.UUID(int=i + 1)) for i in range(s, s + 40)], 1, 1) for s in range(0, 4000, 40)]
    for b in batches:
        writer.write(b)
    files = writer.commit()
    sizes = [f.bytes for f in files]
    biggest_batch = 40 * (300 + 200)
    assert len(files) > 3
    assert all(50_000 <= size < 50_000 + biggest_batch for size in sizes[:-1])
    assert sizes[-1] <= 50_000 + biggest_batch
    assert sum(f.records for f in files) == 4000


def test_a_big_limit_makes_one_file(tmp_path):
    storage = LocalStorage(str(tmp_path))
    writer = rolling(storage, limit=10**9)
    for i in range(5):
        writer.write(batch(i * 500))
    [only] = writer.commit()
    assert only == WrittenFile("public/users/0.parquet", storage.uri("public/users/0.parquet"), 2500,
                               os.path.getsize(storage.uri(only.key)), 0)


def test_nothing_written_commits_nothing(tmp_path):
    storage = LocalStorage(str(tmp_path))
    writer = rolling(storage)
    writer.write(batch(0, 0))
    assert writer.commit() == [] and storage.list("") == []


def test_abort_drops_every_file_and_temp(tmp_path):
    storage = LocalStorage(str(tmp_path))
    writer = rolling(storage)
    for i in range(6):
        writer.write(batch(i * 500))
    writer.abort()
    writer.abort()
    assert storage.list("") == []
    assert os.listdir(tmp_path / "public" / "users") == []
    with pytest.raises(RuntimeError):
        writer.write(batch(0))


def test_an_exception_inside_with_aborts(tmp_path):
    storage = LocalStorage(str(tmp_path))
    with pytest.raises(KeyError), rolling(storage) as writer:
        writer.write(batch(0))
        raise KeyError("boom")
    assert storage.list("") == []


def test_rolling_on_s3_jsonl_gzip(s3_client, s3_bucket):
    storage = S3Storage(s3_bucket, "data", s3_client)
    layout = stream_layout("${STREAM_NAME}/", ".jsonl.gz")
    fmt = JsonlFormat.model_validate({"compression": {"compression_type": "GZIP"}})
    writer = RollingWriter(storage, layout.key, fmt, None, None, 7, 20_000, PartNumbers(0))
    records = [{"id": i, "text": uuid.UUID(int=i * 104729).hex * 8} for i in range(3000)]
    for start in range(0, 3000, 300):
        chunk = records[start:start + 300]
        writer.write(raw_batch([json.dumps(r) for r in chunk], [str(uuid.uuid4()) for _ in chunk], 1, 7))
    assert storage.list("") == []
    files = writer.commit()
    assert len(files) > 1
    seen = []
    for f in files:
        assert f.uri == f"s3://{s3_bucket}/data/users/{f.part_number}.jsonl.gz"
        head = s3_client.head_object(Bucket=s3_bucket, Key=f"data/{f.key}")
        assert head["Metadata"] == {"ab-generation-id": "7"} and head["ContentLength"] == f.bytes
        body = s3_client.get_object(Bucket=s3_bucket, Key=f"data/{f.key}")["Body"].read()
        lines = gzip.decompress(body).decode().splitlines()
        assert len(lines) == f.records
        seen += [json.loads(line)["_airbyte_data"] for line in lines]
    assert seen == records
    assert s3_client.list_multipart_uploads(Bucket=s3_bucket).get("Uploads", []) == []


def test_s3_abort_leaves_no_upload_behind(s3_client, s3_bucket):
    storage = S3Storage(s3_bucket, "", s3_client, inline_limit=1)
    writer = rolling(storage, limit=20_000)
    for i in range(6):
        writer.write(batch(i * 500))
    assert s3_client.list_multipart_uploads(Bucket=s3_bucket).get("Uploads", [])  # sealed files went up
    writer.abort()
    assert s3_client.list_multipart_uploads(Bucket=s3_bucket).get("Uploads", []) == []
    assert "Contents" not in s3_client.list_objects_v2(Bucket=s3_bucket)


def test_for_stream_follows_the_settings(tmp_path):
    settings = DestinationSettings.model_validate({
        "output": str(tmp_path), "file_size_limit_mb": 1,
        "format": {"format_type": "CSV", "flattening": "Root level flattening"}})
    storage = LocalStorage(str(tmp_path))
    writer = RollingWriter.for_stream(storage, settings, stream="users", namespace="", arrow_schema=SCHEMA,
                                      avro_schema=None, generation_id=3, part_numbers=PartNumbers(4),
                                      sync_id=9, started_at=AT.timestamp())
    writer.write(raw_batch(['{"id": 1, "text": "a"}'], ["r"], 1, 3))
    [written] = writer.commit()
    assert written.key == "users/2024_03_05_1709622489000_4.csv"
    with open(written.uri) as handle:
        header = handle.readline().strip()
    assert header.split(",")[4:] == ["id", "text"]  # the data fields of the Arrow schema
    assert written.as_dict()["part_number"] == 4


def test_delete_older_generations_keeps_the_new_one_and_other_files(tmp_path):
    settings = DestinationSettings.default_local(str(tmp_path))
    storage = LocalStorage(str(tmp_path))
    old = RollingWriter.for_stream(storage, settings, stream="users", arrow_schema=SCHEMA, avro_schema=None,
                                   generation_id=1, part_numbers=PartNumbers(0), started_at=AT.timestamp() - 86400)
    old.write(batch(0))
    old_files = old.commit()
    storage.write_atomic("users/notes.txt", b"not ours")
    storage.write_atomic("_airbyte_state/state.json", b"{}")
    new = RollingWriter.for_stream(storage, settings, stream="users", arrow_schema=SCHEMA, avro_schema=None,
                                   generation_id=2, part_numbers=PartNumbers(1), started_at=AT.timestamp())
    new.write(batch(0))
    new_files = new.commit()
    deleted = delete_older_generations(storage, settings, "users", "", 2)
    assert deleted == [f.key for f in old_files]
    assert sorted(i.key for i in storage.list("")) == sorted(
        ["_airbyte_state/state.json", "users/notes.txt"] + [f.key for f in new_files])
    assert [i.generation for i in storage.list("users/") if i.key.endswith(".parquet")] == [2]


class _FullDiskObject:
    """A local object whose disk fills up after ``room`` bytes (the write that crosses it fails)."""

    def __init__(self, inner, room: int) -> None:
        self.inner, self.room = inner, room

    def write(self, data) -> int:
        if self.inner.bytes_written + len(data) > self.room:
            raise OSError(28, "No space left on device")
        return self.inner.write(data)

    def __getattr__(self, name):
        return getattr(self.inner, name)


class _FullDisk(LocalStorage):
    room = 20_000

    def open_object(self, key, metadata=None):
        return _FullDiskObject(super().open_object(key, metadata), self.room)


def test_a_full_disk_while_writing_is_one_storage_error_naming_the_file_and_leaves_nothing(tmp_path):
    from framework.errors import StorageError

    storage = _FullDisk(str(tmp_path))
    writer = rolling(storage)
    with pytest.raises(StorageError) as caught:
        for i in range(60):
            writer.write(batch(i * 100, 100))
        writer.commit()
    assert str(caught.value).startswith(f"{storage.uri('public/users/0.parquet')} could not be written "
                                        "(No space left on device); nothing of the partitions it held was kept")
    writer.abort()
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []  # no data file, no temporary file


def test_a_full_disk_at_commit_is_a_storage_error_too_and_leaves_nothing(tmp_path, monkeypatch):
    from framework.errors import StorageError
    from framework.storage import local

    storage = LocalStorage(str(tmp_path))
    writer = rolling(storage)
    writer.write(batch(0, 100))

    def full(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(local.os, "fsync", full)
    with pytest.raises(StorageError, match=r"0\.parquet could not be written \(No space left on device\)"):
        writer.commit()
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []


def test_a_new_schema_finishes_the_current_file_and_the_next_batch_starts_one_with_it(tmp_path):
    storage = LocalStorage(str(tmp_path))
    writer = rolling(storage)
    writer.write(batch(0, 10))
    wider = SCHEMA.append(pa.field("priority", pa.int64()))
    writer.reschema(wider, None)
    writer.write(pa.RecordBatch.from_arrays(batch(10, 5).columns + [pa.array([1, None, 3, 4, 5])], schema=wider))
    files = writer.commit()
    tables = [pq.read_table(tmp_path / f.key) for f in files]
    assert [t.schema.names[-1] for t in tables] == ["text", "priority"]
    assert [t.num_rows for t in tables] == [10, 5]
    assert tables[1].column("priority").to_pylist() == [1, None, 3, 4, 5]
