"""Data files as a sync writes them (the framework's converter and Parquet writer), for the Iceberg tests."""

from __future__ import annotations

import io
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from framework.formats.parquet import ParquetFileWriter
from framework.models.destination import ParquetFormat
from framework.tables.base import DataFile, TableCommit
from framework.tables.iceberg_catalog import filesystem, fs_path
from framework.typed.converter import RecordConverter

USERS = {"type": "object", "properties": {"id": {"type": "integer"}, "name": {"type": ["null", "string"]},
                                          "at": {"type": "string", "format": "time", "airbyte_type": "time_without_timezone"}}}
APP = "demo/users"


def batch(ids: Sequence[int], schema: Mapping[str, Any] = USERS, **extra: Any) -> pa.RecordBatch:
    records = [{"id": i, "name": f"user {i}", "at": "12:34:56.789", **extra} for i in ids]
    converter = RecordConverter.from_json_schema(schema, stream="users")
    return converter.convert(records, extracted_at_ms=1_700_000_000_000, generation_id=1, sync_id=1)


def write(location: str, data: pa.RecordBatch | pa.Table, storage_options: Mapping[str, str] | None = None) -> DataFile:
    """One Parquet file in `location` written by the framework's writer, as an executor writes it."""
    buffer = io.BytesIO()
    writer = ParquetFileWriter(ParquetFormat(), data.schema, buffer)
    for part in (data.to_batches() if isinstance(data, pa.Table) else [data]):
        writer.write(part)
    writer.close()
    path = f"{location}/part-{uuid.uuid4().hex}.parquet"
    fs = filesystem(location, storage_options or {})
    if "://" not in location:
        fs.create_dir(fs_path(location), recursive=True)
    with fs.open_output_stream(fs_path(path)) as stream:
        stream.write(buffer.getvalue())
    return DataFile(path=path, size_bytes=len(buffer.getvalue()), record_count=data.num_rows)


def commit(files: Sequence[DataFile], schema: pa.Schema, version: int, *, mode: str = "append",
           state: Mapping[str, Any] | None = None, app_id: str = APP) -> TableCommit:
    return TableCommit(files=tuple(files), schema=schema, mode=mode,  # type: ignore[arg-type]
                       state=state if state is not None else {"cursor": version}, app_id=app_id, version=version)
