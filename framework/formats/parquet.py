"""Parquet files through ``pyarrow.parquet.ParquetWriter``.

The settings map to the writer like this:

* ``compression_codec``: UNCOMPRESSED, SNAPPY, GZIP, ZSTD, BROTLI, LZ4 (Arrow
  writes the ``LZ4`` codec with the Hadoop framing that parquet-mr, and so
  Spark, reads). LZO has no writer in Arrow and is refused with a clear message.
* ``page_size_kb`` -> ``data_page_size``; ``dictionary_encoding`` ->
  ``use_dictionary``; ``dictionary_page_size_kb`` -> ``dictionary_pagesize_limit``.
* ``block_size_mb`` is the row group size. ``ParquetWriter`` makes at least one
  row group per ``write`` call, so batches are buffered here until their Arrow
  size reaches ``block_size_mb`` and then written as one row group; small
  batches thus do not make small row groups. As in parquet-mr, the limit counts
  the in-memory (uncompressed) size, so a row group on disk is smaller.
* ``max_padding_size_mb`` has no counterpart in Arrow (it does not align row
  groups to file system blocks) and is ignored.

Column types are kept as the Arrow schema says (no timestamp coercion):
``_airbyte_extracted_at`` stays Timestamp(Millis), data timestamps stay
Timestamp(Micros); timestamps whose Arrow type has a time zone are written
with ``isAdjustedToUTC`` true. Times are ``TIME(MICROS, isAdjustedToUTC=false)``,
the form Spark 4 reads (with ``spark.sql.timeType.enabled``, which our sessions
set), unless ``time_adjusted_to_utc`` asks for the S3 1.0 exact form,
``isAdjustedToUTC=true``, which Spark refuses. The values are the same either
way: a time with a timezone is converted to UTC before it is written.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, BinaryIO

import pyarrow as pa
import pyarrow.parquet as pq

from framework.errors import ConfigError
from framework.formats.sink import CountingSink

if TYPE_CHECKING:
    from framework.models.destination import ParquetFormat

_CODECS = {"UNCOMPRESSED": "none", "SNAPPY": "snappy", "GZIP": "gzip", "ZSTD": "zstd", "BROTLI": "brotli",
           "LZ4": "lz4"}

_MB = 1024 * 1024


class ParquetFileWriter:
    """One Parquet file; batches are grouped into row groups of about ``block_size_mb``."""

    extension = ".parquet"

    def __init__(self, settings: ParquetFormat, schema: pa.Schema, sink: BinaryIO):
        codec = settings.compression_codec
        if codec not in _CODECS:
            raise ConfigError(
                f"Parquet compression `{codec}` cannot be written (Arrow has no {codec} writer); choose one of "
                + ", ".join(_CODECS)
            )
        self._schema = schema
        self._sink = CountingSink(sink)
        self._writer = pq.ParquetWriter(
            self._sink, schema,
            compression=_CODECS[codec],
            data_page_size=settings.page_size_kb * 1024,
            use_dictionary=settings.dictionary_encoding,
            dictionary_pagesize_limit=settings.dictionary_page_size_kb * 1024,
            coerce_timestamps=None,
            write_time_adjusted_to_utc=settings.time_adjusted_to_utc,
        )
        self._group_limit = settings.block_size_mb * _MB
        self._pending: list[pa.RecordBatch] = []
        self._pending_bytes = 0
        self._flushed_arrow_bytes = 0
        self._records = 0

    def write(self, batch: pa.RecordBatch) -> None:
        if batch.num_rows == 0:
            return
        self._pending.append(batch)
        self._pending_bytes += batch.nbytes
        self._records += batch.num_rows
        if self._pending_bytes >= self._group_limit:
            self._flush_group()

    def _flush_group(self) -> None:
        if not self._pending:
            return
        table = pa.Table.from_batches(self._pending, self._schema)
        self._writer.write_table(table, row_group_size=table.num_rows)
        self._flushed_arrow_bytes += self._pending_bytes
        self._pending = []
        self._pending_bytes = 0

    @property
    def bytes_written(self) -> int:
        """Bytes in the sink plus the buffered row group, shrunk by the compression seen so far.

        Before the first row group is written the buffered Arrow size counts as it is, so a
        file rolled on this estimate stays under its limit.
        """
        if not self._pending_bytes:
            return self._sink.count
        ratio = self._sink.count / self._flushed_arrow_bytes if self._flushed_arrow_bytes else 1.0
        return self._sink.count + int(self._pending_bytes * ratio)

    @property
    def records_written(self) -> int:
        return self._records

    def close(self) -> None:
        self._flush_group()
        self._writer.close()


__all__ = ["ParquetFileWriter"]
