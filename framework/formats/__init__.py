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
  written as it came, so nothing was nulled. (:mod:`.raw` holds them, :mod:`.sink`
  the :class:`CountingSink` the writers write through.)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import BinaryIO, Protocol

import pyarrow as pa

from framework.errors import ConfigError
from framework.formats.raw import RAW_SCHEMA, raw_batch
from framework.formats.sink import CountingSink
from framework.models.destination import (
    AvroFormat,
    CsvFormat,
    DeltaFormat,
    IcebergFormat,
    JsonlFormat,
    ParquetFormat,
    ReplicantCsvFormat,
    ReplicantJsonFormat,
)

#: The settings of any output format (the ``format`` of the destination settings).
FormatSettings = (AvroFormat | CsvFormat | JsonlFormat | ParquetFormat | ReplicantCsvFormat | ReplicantJsonFormat
                  | DeltaFormat | IcebergFormat)


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


def open_format_writer(fmt_settings: FormatSettings, arrow_schema: pa.Schema | None, avro_schema: Mapping | None,
                       sink: BinaryIO, *, columns: Sequence[str] = (),
                       to_avro: Callable[[pa.RecordBatch], Iterable[dict]] | None = None) -> FormatWriter:
    """The writer of ``fmt_settings`` (an ``AvroFormat``, ``CsvFormat``, ``JsonlFormat`` or ``ParquetFormat``).

    ``columns`` are the stream's top-level field names, used by CSV with root
    level flattening. ``to_avro`` replaces the default conversion of a typed
    batch into Avro-ready records.
    """
    kind = getattr(fmt_settings, "format_type", None)
    if isinstance(fmt_settings, (DeltaFormat, IcebergFormat)):  # a table's data files are Parquet files
        fmt_settings = fmt_settings.parquet()
    # Each writer is imported when its format is asked for: it loads its format's libraries (pyarrow.parquet,
    # fastavro, pyarrow.compute), which a sync writing another format never needs.
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
