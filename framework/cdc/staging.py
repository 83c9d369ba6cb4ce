"""Staged records and image files: written by the sync's tasks, read back as rows of texts by the apply.

In realtime mode a task writes its typed batches (the same as Parquet output)
through a :class:`~framework.formats.rolling.RollingWriter` under the sync's
staging folder instead of the output: committed like any file, so the
driver's state advances per group exactly as in the other formats.

The apply reads them on the executors (``mapInArrow`` over a list of keys,
through the sink's storage, so S3 needs no Hadoop connector) into rows of
texts, the columns of :func:`staged_ddl`:

* ``k``: the primary key values as a JSON array of texts (``["10"]``);
* ``b``: the key's bucket (:mod:`.buckets`);
* ``o_num``, ``o_text``, ``o_at``, ``o_seq``: the order of a key's records,
  latest last: the cursor value (numbers, dates and timestamps in ``o_num``,
  other types as text in ``o_text``), then ``_airbyte_extracted_at``, then
  the position among the staged files;
* ``del``: whether the record is marked deleted;
* ``v0``...: the record's values as Replicant texts, one per field.

Image files hold ``_cdc_key``, one string column per field, under the
field's name, and ``_cdc_deleted`` (true: a tombstone of a delta file);
:func:`read_image` gives ``k``, ``img`` (always true), ``b`` (the bucket),
``layer`` (the version that wrote the file), ``dead`` and ``w0``....
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from framework.cdc.buckets import bucket_of, parse_image_file
from framework.cdc.plan import ChangeStream
from framework.cdc.render import json_key_texts
from framework.formats.replicant import render_array
from framework.formats.rolling import RollingWriter
from framework.models.destination import DestinationSettings, ParquetFormat
from framework.output_names import INTERNAL_SUFFIX
from framework.storage import Storage, storage_for
from framework.typed.envelope import EXTRACTED_AT

_MIB = 1024 * 1024
_BATCH_ROWS = 32_768
#: how staged records' files end (older versions wrote ``.parquet``: the apply reads both)
STAGED_EXTENSION = ".parquet" + INTERNAL_SUFFIX
IMAGE_KEY = "_cdc_key"
IMAGE_DELETED = "_cdc_deleted"


def staging_writer(storage: Storage, settings: DestinationSettings, prefix: str, arrow_schema: pa.Schema,
                   generation_id: int, part_numbers: Iterable[int], started_at: float) -> RollingWriter:
    """A rolling writer of typed batches into ``prefix`` (Parquet, named by the start time and part number, and
    ending with ``.parquet.staged``: no data glob of the output matches it)."""
    stamp = int(started_at * 1000)
    return RollingWriter(storage, lambda number: f"{prefix}{stamp}_{number:05d}{STAGED_EXTENSION}",
                         ParquetFormat(compression_codec="SNAPPY"), arrow_schema, None, generation_id,
                         settings.file_size_limit_mb * _MIB, part_numbers)


def staged_ddl(count: int) -> str:
    return ", ".join(["k string", "b int", "o_num double", "o_text string", "o_at bigint", "o_seq bigint",
                      "del boolean"] + [f"v{i} string" for i in range(count)])


def image_ddl(count: int) -> str:
    return ", ".join(["k string", "img boolean", "b int", "layer bigint", "dead boolean"]
                     + [f"w{i} string" for i in range(count)])


def storage_of(destination: Mapping[str, Any]) -> Storage:
    """The storage of ``DestinationSettings`` given as JSON (what travels to the executors)."""
    return storage_for(DestinationSettings.model_validate(destination))


def _batches(storage: Storage, key: str, columns: list[str] | None = None) -> Iterator[pa.RecordBatch]:
    raw = storage.read(key)
    if raw is None:  # listed, then gone: a concurrent clean-up; nothing to read
        return
    handle = pq.ParquetFile(io.BytesIO(raw))
    present = [c for c in columns if c in handle.schema_arrow.names] if columns is not None else None
    yield from handle.iter_batches(batch_size=_BATCH_ROWS, columns=present)


def _texts(batch: pa.RecordBatch, names: tuple[str, ...]) -> list[pa.Array]:
    """Every field's values as texts; a field the batch lacks (an older schema) is all null."""
    out = []
    for name in names:
        index = batch.schema.get_field_index(name)
        out.append(render_array(batch.column(index)) if index >= 0 else pa.nulls(batch.num_rows, pa.string()))
    return out


def key_texts(texts: list[pa.Array], keys: tuple[int, ...], rows: int) -> pa.Array:
    """The ``k`` column: each row's key values as a JSON array of texts."""
    return json_key_texts([texts[i] for i in keys], rows)


def _order(batch: pa.RecordBatch, cursor: str | None, texts: list[pa.Array],
           fields: tuple[str, ...]) -> tuple[pa.Array, pa.Array]:
    rows = batch.num_rows
    index = batch.schema.get_field_index(cursor) if cursor else -1
    if index < 0:
        return pa.nulls(rows, pa.float64()), pa.nulls(rows, pa.string())
    column = batch.column(index)
    kind = column.type
    if pa.types.is_timestamp(kind) or pa.types.is_date(kind) or pa.types.is_time(kind):
        width = pa.int64() if not pa.types.is_date32(kind) else pa.int32()
        return column.cast(width).cast(pa.float64()), pa.nulls(rows, pa.string())
    if pa.types.is_integer(kind) or pa.types.is_floating(kind):
        return column.cast(pa.float64()), pa.nulls(rows, pa.string())
    return pa.nulls(rows, pa.float64()), texts[fields.index(cursor)]


def read_staged(change: ChangeStream, destination: Mapping[str, Any],
                buckets: int) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The ``mapInArrow`` function from rows ``(i, key)`` of staged files to rows of :func:`staged_ddl`
    (``b``: the key's bucket of ``buckets``)."""
    schema = ddl_schema(staged_ddl(len(change.fields)))

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        storage = storage_of(destination)
        for listing in batches:
            for index, key in zip(listing.column("i").to_pylist(), listing.column("key").to_pylist()):
                seen = 0
                for batch in _batches(storage, key):
                    rows = batch.num_rows
                    texts = _texts(batch, change.fields)
                    o_num, o_text = _order(batch, change.cursor, texts, change.fields)
                    at_index = batch.schema.get_field_index(EXTRACTED_AT)
                    o_at = (batch.column(at_index).cast(pa.int64()) if at_index >= 0
                            else pa.nulls(rows, pa.int64()))
                    seq = pa.array(range((index << 32) + seen, (index << 32) + seen + rows), pa.int64())
                    seen += rows
                    deleted = (batch.column(change.deleted_field).is_valid()
                               if change.deleted_field and change.deleted_field in batch.schema.names
                               else pa.repeat(pa.scalar(False), rows))
                    k = key_texts(texts, change.keys, rows)
                    arrays = [k, bucket_of(k, buckets), o_num, o_text, o_at, seq, deleted, *texts]
                    yield pa.RecordBatch.from_arrays(arrays, schema=schema)

    return run


def read_image(change: ChangeStream, destination: Mapping[str, Any], buckets: int,
               legacy_version: int) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The ``mapInArrow`` function from rows ``(i, key)`` of image files to rows of :func:`image_ddl`.

    A bucketed file's bucket and version come from its key; a file of an unbucketed image (an older
    version's, :data:`legacy_version`) gets each key's bucket of ``buckets``."""
    schema = ddl_schema(image_ddl(len(change.fields)))

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        storage = storage_of(destination)
        for listing in batches:
            for key in listing.column("key").to_pylist():
                where = parse_image_file(key)
                for batch in _batches(storage, key, [IMAGE_KEY, IMAGE_DELETED, *change.fields]):
                    rows = batch.num_rows
                    k = batch.column(IMAGE_KEY)
                    bucket = (pa.repeat(pa.scalar(where[1], pa.int32()), rows) if where
                              else bucket_of(k, buckets))
                    layer = pa.repeat(pa.scalar(where[0] if where else legacy_version, pa.int64()), rows)
                    dead_index = batch.schema.get_field_index(IMAGE_DELETED)
                    dead = (batch.column(dead_index).fill_null(False) if dead_index >= 0
                            else pa.repeat(pa.scalar(False), rows))
                    arrays = [k, pa.repeat(pa.scalar(True), rows), bucket, layer, dead]
                    for name in change.fields:
                        index = batch.schema.get_field_index(name)
                        arrays.append(batch.column(index) if index >= 0 else pa.nulls(rows, pa.string()))
                    yield pa.RecordBatch.from_arrays(arrays, schema=schema)

    return run


_SPARK_TYPES = {"string": pa.string(), "double": pa.float64(), "bigint": pa.int64(), "boolean": pa.bool_(),
                "int": pa.int32()}


def ddl_schema(ddl: str) -> pa.Schema:
    """The Arrow schema of a DDL string of ``name type`` pairs (the simple types above only)."""
    fields = []
    for part in ddl.split(","):
        name, kind = part.split()
        fields.append(pa.field(name, _SPARK_TYPES[kind]))
    return pa.schema(fields)


__all__ = ["IMAGE_DELETED", "IMAGE_KEY", "ddl_schema", "image_ddl", "key_texts", "read_image", "read_staged",
           "staged_ddl", "staging_writer", "storage_of"]
