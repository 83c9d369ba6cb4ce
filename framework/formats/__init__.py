"""File formats of the sink: Arrow batches in, file bytes out.

:func:`open_format_writer` picks the writer for a format of the destination
settings and returns a :class:`FormatWriter`::

    writer = open_format_writer(settings.format, arrow_schema, avro_schema, sink)
    writer.write(batch)          # as often as needed
    writer.bytes_written         # about how many compressed bytes the file has so far
    writer.close()               # flushes footers/blocks; does not close ``sink``

Two kinds of input, by format:

* **Parquet and Avro** take the *typed* batches of ``framework.typed``:
  the envelope columns ``_airbyte_raw_id``, ``_airbyte_extracted_at``,
  ``_airbyte_generation_id``, ``_airbyte_meta`` and the stream's fields at the
  root, with the ``arrow_schema`` given. Avro also needs the Avro schema (a
  dict) of the same record. The Replicant snapshot formats (``replicant_csv``,
  ``replicant_json`` with ``mode: snapshot``) take the same typed batches and
  write the data columns only (:mod:`framework.formats.replicant`).
* **JSONL and CSV** take *raw* batches with the columns of :data:`RAW_SCHEMA`:
  ``_airbyte_raw_id`` (string), ``_airbyte_extracted_at`` (timestamp or int64
  epoch milliseconds), ``_airbyte_meta`` (JSON text, or a struct),
  ``_airbyte_generation_id`` (int64) and ``_airbyte_data`` (the record as JSON
  text). :func:`raw_batch` builds one. ``arrow_schema`` and ``avro_schema`` are
  not used. With ``Root level flattening`` a CSV writer needs the stream's
  top-level field names (``columns``) so that every file has the same columns;
  without any, it keeps the ``_airbyte_data`` column so that nothing is lost.
  The meta of a raw record carries the source's changes only: the record is
  written as it came, so nothing was nulled.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, BinaryIO, Protocol

import orjson
import pyarrow as pa

from framework.errors import ConfigError
from framework.models.destination import (
    AvroFormat,
    CsvFormat,
    JsonlFormat,
    ParquetFormat,
    ReplicantCsvFormat,
    ReplicantJsonFormat,
)
from framework.typed.envelope import DATA, EXTRACTED_AT, GENERATION_ID, META, RAW_ID

#: The settings of any output format (the ``format`` of the destination settings).
FormatSettings = AvroFormat | CsvFormat | JsonlFormat | ParquetFormat | ReplicantCsvFormat | ReplicantJsonFormat

#: The columns of a raw batch, the input of the JSONL and CSV writers.
RAW_SCHEMA = pa.schema([
    (RAW_ID, pa.string()),
    (EXTRACTED_AT, pa.timestamp("ms", tz="UTC")),
    (META, pa.string()),
    (GENERATION_ID, pa.int64()),
    (DATA, pa.string()),
])


class FormatWriter(Protocol):
    """Writes batches into one file; what every format writer offers."""

    extension: str

    def write(self, batch: pa.RecordBatch) -> None: ...

    @property
    def bytes_written(self) -> int:
        """About how many (compressed) bytes the file holds so far, buffered data included."""

    @property
    def records_written(self) -> int: ...

    def close(self) -> None:
        """Flush everything into the sink (footer, last block). The sink stays open."""


class CountingSink:
    """A write-only view of a binary sink that counts the bytes through it and never closes it.

    Format libraries close what they are given; the sink belongs to the caller
    (it still has to be committed), so ``close`` here only marks this view closed.
    """

    def __init__(self, sink: BinaryIO):
        self._sink = sink
        self.count = 0
        self.closed = False

    def write(self, data: Any) -> int:
        self._sink.write(data)
        size = len(data) if isinstance(data, (bytes, bytearray)) else memoryview(data).nbytes
        self.count += size
        return size

    def tell(self) -> int:
        return self.count

    def flush(self) -> None:
        pass

    def close(self) -> None:
        self.closed = True

    def writable(self) -> bool:
        return True

    def readable(self) -> bool:
        return False

    def seekable(self) -> bool:
        return False


def raw_batch(data: Sequence[Any], raw_ids: Sequence[str] | pa.Array, extracted_at_ms: int | Sequence[int],
              generation_id: int, *, sync_id: int = 0,
              metas: Sequence[str | None] | None = None) -> pa.RecordBatch:
    """A batch of :data:`RAW_SCHEMA` for the JSONL and CSV writers.

    ``data`` holds the records as JSON text (str or bytes, used as they are) or
    as JSON values (serialized here). ``raw_ids`` may be an Arrow string array.
    ``extracted_at_ms`` may be one value for all rows. ``metas`` are the
    ``_airbyte_meta`` JSON texts; by default every row gets
    ``{"sync_id": <sync_id>, "changes": []}``.
    """
    n = len(data)
    texts = [d if isinstance(d, (str, bytes, bytearray)) or d is None else orjson.dumps(d) for d in data]
    at = pa.array([extracted_at_ms] * n if isinstance(extracted_at_ms, int) else list(extracted_at_ms), pa.int64())
    if metas is None:
        metas = [f'{{"sync_id":{int(sync_id)},"changes":[]}}'] * n
    ids = raw_ids if isinstance(raw_ids, pa.Array) else pa.array(list(raw_ids), pa.string())
    return pa.RecordBatch.from_arrays(
        [ids, at.cast(RAW_SCHEMA.field(EXTRACTED_AT).type), pa.array(list(metas), pa.string()),
         pa.repeat(pa.scalar(generation_id, pa.int64()), n), pa.array(texts, pa.string())],
        schema=RAW_SCHEMA,
    )


def open_format_writer(fmt_settings: FormatSettings, arrow_schema: pa.Schema | None, avro_schema: Mapping | None,
                       sink: BinaryIO, *, columns: Sequence[str] = (),
                       to_avro: Callable[[pa.RecordBatch], Iterable[dict]] | None = None) -> FormatWriter:
    """The writer of ``fmt_settings`` (an ``AvroFormat``, ``CsvFormat``, ``JsonlFormat`` or ``ParquetFormat``).

    ``columns`` are the stream's top-level field names, used by CSV with root
    level flattening. ``to_avro`` replaces the default conversion of a typed
    batch into Avro-ready records.
    """
    kind = getattr(fmt_settings, "format_type", None)
    # The writers' modules import CountingSink from this one, so each is imported when its format is asked for.
    if isinstance(fmt_settings, ParquetFormat):
        from framework.formats.parquet import ParquetFileWriter

        if arrow_schema is None:
            raise ConfigError("the Parquet writer needs the Arrow schema of the stream")
        return ParquetFileWriter(fmt_settings, arrow_schema, sink)
    if isinstance(fmt_settings, AvroFormat):
        from framework.formats.avro import AvroFileWriter

        if avro_schema is None:
            raise ConfigError("the Avro writer needs the Avro schema of the stream")
        return AvroFileWriter(fmt_settings, arrow_schema, avro_schema, sink, to_avro=to_avro)
    if isinstance(fmt_settings, JsonlFormat):
        from framework.formats.text import JsonlFileWriter

        return JsonlFileWriter(fmt_settings, sink)
    if isinstance(fmt_settings, CsvFormat):
        from framework.formats.text import CsvFileWriter

        return CsvFileWriter(fmt_settings, sink, columns=columns)
    if isinstance(fmt_settings, (ReplicantCsvFormat, ReplicantJsonFormat)):
        from framework.formats.replicant import open_replicant_writer

        return open_replicant_writer(fmt_settings, arrow_schema, sink, columns=columns)
    raise ConfigError(
        f"file format `{kind}` is not written by the file writers; use Parquet, Avro, JSONL, CSV, "
        "replicant_csv or replicant_json"
    )


__all__ = ["RAW_SCHEMA", "CountingSink", "FormatWriter", "open_format_writer", "raw_batch"]
