"""JSONL and CSV files: the raw record with the Airbyte envelope, optionally gzipped.

The input is a raw batch (see ``framework.formats.RAW_SCHEMA``). The
record stays the JSON text it came as; nothing is typed.

Without flattening both formats carry five columns: ``_airbyte_raw_id``,
``_airbyte_extracted_at`` (epoch milliseconds), ``_airbyte_meta`` (a JSON
object), ``_airbyte_generation_id`` and ``_airbyte_data`` (the record). In JSONL
the meta and the record are JSON objects of the line; in CSV they are JSON
text in a cell. The record text is copied into the line as it is, not parsed.

With ``Root level flattening`` the record's top-level fields take the place of
``_airbyte_data``, after the four envelope columns:

* JSONL: every top-level field of the record becomes a key of the line (nested
  values stay JSON values); a field named like an envelope column is dropped.
* CSV: the columns are the ``columns`` given (the stream's top-level fields), so
  every file of the stream has the same header; fields missing from a record
  are empty cells and fields not in ``columns`` are left out. Without
  ``columns`` (a stream without a schema) the ``_airbyte_data`` column stays. Strings are
  written as they are, other scalars as JSON (``true``, ``1.5``), objects and
  arrays as JSON text, and null as an empty cell.

CSV files start with a header row and use RFC 4180 quoting with CRLF line ends.
"""

from __future__ import annotations

import csv
import gzip
import io
from collections.abc import Sequence
from typing import Any, BinaryIO

import orjson
import pyarrow as pa

from framework.errors import ConfigError
from framework.formats.raw import RAW_SCHEMA
from framework.formats.sink import CountingSink
from framework.models.destination import CsvFormat, JsonlFormat
from framework.typed.envelope import DATA, EXTRACTED_AT, GENERATION_ID, META, RAW_ID, TEXT_ENVELOPE

_GZIP_LEVEL = 6  # zlib's default: most of level 9's ratio at a fraction of its time


class _TextFile:
    """What JSONL and CSV share: the raw input columns and the optional gzip stream."""

    def __init__(self, settings: CsvFormat | JsonlFormat, sink: BinaryIO, suffix: str):
        self._counter = CountingSink(sink)
        self.gzip = getattr(settings.compression, "compression_type", "No Compression") == "GZIP"
        self.flatten = settings.flattening == "Root level flattening"
        self.extension = suffix + (".gz" if self.gzip else "")
        self._out: Any = (gzip.GzipFile(fileobj=self._counter, mode="wb", compresslevel=_GZIP_LEVEL, mtime=0)
                          if self.gzip else self._counter)
        self._records = 0

    def _columns(self, batch: pa.RecordBatch) -> tuple[list, list, list, list, list]:
        missing = [name for name in RAW_SCHEMA.names if batch.schema.get_field_index(name) < 0]
        if missing:
            raise ConfigError(
                "a JSONL or CSV writer takes raw batches with the columns " + ", ".join(RAW_SCHEMA.names)
                + "; missing: " + ", ".join(missing)
            )
        self._records += batch.num_rows
        return (batch.column(RAW_ID).to_pylist(), _epoch_ms(batch.column(EXTRACTED_AT)),
                batch.column(META).to_pylist(), batch.column(GENERATION_ID).to_pylist(),
                batch.column(DATA).to_pylist())

    @property
    def bytes_written(self) -> int:
        """Bytes that reached the sink (gzip keeps a little more in its buffer)."""
        return self._counter.count

    @property
    def records_written(self) -> int:
        return self._records

    def close(self) -> None:
        if self.gzip:
            self._out.close()


class JsonlFileWriter(_TextFile):
    """Newline-delimited JSON, one record per line."""

    def __init__(self, settings: JsonlFormat, sink: BinaryIO):
        super().__init__(settings, sink, ".jsonl")

    def write(self, batch: pa.RecordBatch) -> None:
        if batch.num_rows == 0:
            return
        ids, ats, metas, gens, datas = self._columns(batch)
        dumps, fragment = orjson.dumps, orjson.Fragment
        id_key, at_key, meta_key, gen_key, data_key = RAW_ID, EXTRACTED_AT, META, GENERATION_ID, DATA  # locals: fast
        lines = []
        if self.flatten:
            for raw_id, at, meta, gen, data in zip(ids, ats, metas, gens, datas):
                line = {id_key: raw_id, at_key: at, meta_key: _meta(meta), gen_key: gen}
                for key, value in (orjson.loads(data) if data is not None else {}).items():
                    if key not in line:
                        line[key] = value
                lines.append(dumps(line))
        else:
            for raw_id, at, meta, gen, data in zip(ids, ats, metas, gens, datas):
                lines.append(dumps({id_key: raw_id, at_key: at, meta_key: _meta(meta), gen_key: gen,
                                    data_key: fragment(data) if data is not None else None}))
        lines.append(b"")
        self._out.write(b"\n".join(lines))


class CsvFileWriter(_TextFile):
    """Comma-separated values with a header row."""

    def __init__(self, settings: CsvFormat, sink: BinaryIO, *, columns: Sequence[str] = ()):
        super().__init__(settings, sink, ".csv")
        self.columns = [c for c in columns if c not in TEXT_ENVELOPE] if self.flatten else []
        self.flatten = self.flatten and bool(self.columns)
        header = list(TEXT_ENVELOPE) + (self.columns if self.flatten else [DATA])
        self._emit([header])

    def _emit(self, rows: list[list]) -> None:
        text = io.StringIO()
        csv.writer(text).writerows(rows)
        self._out.write(text.getvalue().encode("utf-8"))

    def write(self, batch: pa.RecordBatch) -> None:
        if batch.num_rows == 0:
            return
        ids, ats, metas, gens, datas = self._columns(batch)
        rows = []
        if self.flatten:
            columns = self.columns
            for raw_id, at, meta, gen, data in zip(ids, ats, metas, gens, datas):
                record = orjson.loads(data) if data is not None else {}
                rows.append([raw_id, at, _meta_text(meta), gen] + [_cell(record.get(c)) for c in columns])
        else:
            for raw_id, at, meta, gen, data in zip(ids, ats, metas, gens, datas):
                rows.append([raw_id, at, _meta_text(meta), gen, "" if data is None else data])
        self._emit(rows)


def _epoch_ms(column: pa.Array) -> list:
    """Epoch milliseconds of a timestamp column (any unit), or an integer column as it is."""
    kind = column.type
    if pa.types.is_timestamp(kind):
        if kind.unit != "ms":
            column = column.cast(pa.timestamp("ms", kind.tz), safe=False)
        column = column.cast(pa.int64())
    return column.to_pylist()


def _meta(meta: Any) -> Any:
    """The meta for a JSONL line: JSON text goes in as it is, a struct (dict) as an object."""
    return orjson.Fragment(meta) if isinstance(meta, str) else meta


def _meta_text(meta: Any) -> str:
    if meta is None or isinstance(meta, str):
        return meta or ""
    return orjson.dumps(meta).decode()


def _cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return value
    return orjson.dumps(value).decode()


__all__ = ["CsvFileWriter", "JsonlFileWriter"]
