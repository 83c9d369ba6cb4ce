"""Replicant-style change-data files: value rendering, CSV cells, Java hashes, and the snapshot writers.

Replicant (the seed ``replicant-s3-file-format``) writes every value as text.
The same rendering serves both modes, so a snapshot row and a change of the
same record show the same text:

==========================  ====================================================
Arrow type (typed batches)  text
==========================  ====================================================
string                      as it is
boolean                     ``true`` / ``false``
int64, float64              decimal (``1.5``, ``1e+20``; a whole float as ``1``)
date32                      ``2024-03-05``
time64[us]                  ``12:00:00.000000``
timestamp[us, UTC]          ``2024-03-05T06:07:08.000000Z``
union (disjoint record)     the value of the member that is set, as above
struct, list                JSON text (``{"city":"Oslo"}``), unions inside unwrapped
null                        no text (None): ``NULL`` in CSV
==========================  ====================================================

A CSV cell is quoted (RFC 4180, doubled quotes) when it holds a comma, a quote,
a line break, is empty, or is the text ``NULL`` itself, so that an unquoted
``NULL`` always means a null value and an empty string stays ``""``.

Snapshot mode (``mode: snapshot``) plugs into the ``RollingWriter`` path: the
writers take the typed batches of :mod:`framework.typed` (envelope and
data columns) and write the data columns only, in schema order. CSV: one row
per record; ``include_header`` writes the column names first in every file.
JSON: one object per line, every value a string, a null value as JSON ``null``.

Realtime mode is not a file writer: its rows come from the change-data apply
step (:mod:`framework.cdc`), which uses the rendering and hashes here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, BinaryIO

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from framework.errors import ConfigError
from framework.formats.sink import CountingSink
from framework.models.destination import ReplicantCsvFormat, ReplicantJsonFormat
from framework.typed.envelope import ENVELOPE_NAMES  # left out of Replicant files

#: Member names of the sink's union structs (``framework.typed.arrow``), used to recognise them.
_UNION_MEMBERS = frozenset({
    "integer", "number", "string", "boolean", "object", "array", "date", "time_with_timezone",
    "time_without_timezone", "timestamp_with_timezone", "timestamp_without_timezone",
})

_TIMESTAMP_FORMAT = "%Y-%m-%dT%H:%M:%SZ"

# ----------------------------------------------------------------- Java hashes


def _int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - 0x100000000 if value & 0x80000000 else value


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode``: over UTF-16 code units, 32-bit signed overflow."""
    units = text.encode("utf-16-be")
    result = 0
    for index in range(0, len(units), 2):
        result = (31 * result + (units[index] << 8 | units[index + 1])) & 0xFFFFFFFF
    return _int32(result)


def java_objects_hash(*values: int | str | None) -> int:
    """Java's ``Objects.hash(values...)`` (``Arrays.hashCode``): strings by ``String.hashCode``,
    integers as ``Integer.hashCode`` (themselves), null as 0."""
    result = 1
    for value in values:
        if value is None:
            element = 0
        elif isinstance(value, str):
            element = java_string_hash(value)
        else:
            element = _int32(value)
        result = _int32(31 * result + element)
    return result


def table_name(catalog: str | None, schema: str | None, name: str) -> dict[str, Any]:
    """The ``tableName`` object of a realtime JSON change, with Replicant's hashes."""
    namespace_hash = java_objects_hash(catalog, schema)
    return {"namespace": {"catalog": catalog, "schema": schema, "hash": namespace_hash}, "name": name,
            "hash": java_objects_hash(namespace_hash, java_string_hash(name))}


# ------------------------------------------------------------------- rendering


def is_union(kind: pa.DataType) -> bool:
    """Whether ``kind`` is the sink's disjoint union record ``struct<type, <member>...>``."""
    if not pa.types.is_struct(kind) or kind.num_fields < 2 or kind.field(0).name != "type":
        return False
    return all(kind.field(i).name in _UNION_MEMBERS for i in range(1, kind.num_fields))


def data_names(schema: pa.Schema) -> list[str]:
    """The data columns of a typed schema (the envelope left out), in order."""
    return [name for name in schema.names if name not in ENVELOPE_NAMES]


def render_column(column: pa.Array | pa.ChunkedArray) -> list[str | None]:
    """Every value of ``column`` as Replicant text (see the module docs); None for null."""
    return render_array(column).to_pylist()


def render_array(column: pa.Array | pa.ChunkedArray) -> pa.Array:
    """:func:`render_column` as an Arrow string array, in compute kernels (objects and arrays excepted)."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    kind = column.type
    if pa.types.is_string(kind):
        return column
    if pa.types.is_large_string(kind):
        return column.cast(pa.string())
    if pa.types.is_timestamp(kind):
        return pc.strftime(column, format=_TIMESTAMP_FORMAT)
    if (pa.types.is_boolean(kind) or pa.types.is_integer(kind) or pa.types.is_floating(kind)
            or pa.types.is_date(kind) or pa.types.is_time(kind)):
        return column.cast(pa.string())
    if is_union(kind):
        return _render_union(column)
    if pa.types.is_null(kind):
        return pa.nulls(len(column), pa.string())
    return pa.array([None if value is None else orjson.dumps(_plain(value, kind)).decode()
                     for value in column.to_pylist()], pa.string())


def _render_union(column: pa.StructArray) -> pa.Array:
    names = column.field(0)
    out = pa.nulls(len(column), pa.string())
    for i in range(1, column.type.num_fields):
        member = column.type.field(i).name
        out = pc.if_else(pc.equal(names, member), render_array(column.field(i)), out)
    return out


def _plain(value: Any, kind: pa.DataType) -> Any:
    """A nested Python value of ``to_pylist`` with the sink's unions unwrapped, for JSON text."""
    if value is None:
        return None
    if pa.types.is_struct(kind):
        if is_union(kind):
            member = value.get("type")
            if member is None:
                return None
            return _plain(value.get(member), kind.field(member).type)
        return {kind.field(i).name: _plain(value.get(kind.field(i).name), kind.field(i).type)
                for i in range(kind.num_fields)}
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        item = kind.value_type
        return [_plain(v, item) for v in value]
    return value


def csv_cell(text: str | None) -> str:
    """One CSV cell: ``NULL`` for None; quoted with doubled quotes when needed (see the module docs)."""
    if text is None:
        return "NULL"
    if not text or text == "NULL" or any(c in text for c in ',"\r\n'):
        return '"' + text.replace('"', '""') + '"'
    return text


def csv_line(cells: Sequence[str | None]) -> str:
    """A CSV line (with its ``\\n``) of texts, None as ``NULL``."""
    return ",".join(map(csv_cell, cells)) + "\n"


# --------------------------------------------------------- snapshot writers


class _SnapshotFile:
    """What the CSV and JSON snapshot writers share: the sink, the data columns, the counts."""

    def __init__(self, settings: ReplicantCsvFormat | ReplicantJsonFormat, arrow_schema: pa.Schema | None,
                 sink: BinaryIO, columns: Sequence[str]):
        if getattr(settings, "mode", "snapshot") != "snapshot":
            raise ConfigError(
                f"`{settings.format_type}` files in realtime mode are written by the change-data step of the Spark "
                "pipeline, not by a file writer; run the stream through `run_pipeline` (or use `mode: snapshot`)"
            )
        names = [c for c in columns if c not in ENVELOPE_NAMES] if columns else []
        if not names and arrow_schema is not None:
            names = data_names(arrow_schema)
        self.columns = names
        self.extension = settings.extension
        self._sink = CountingSink(sink)
        self._records = 0

    def _texts(self, batch: pa.RecordBatch) -> list[list[str | None]]:
        missing = [name for name in self.columns if batch.schema.get_field_index(name) < 0]
        if missing:
            raise ConfigError(
                "a Replicant writer takes the typed batches of the stream; missing columns: " + ", ".join(missing)
            )
        self._records += batch.num_rows
        return [render_column(batch.column(name)) for name in self.columns]

    @property
    def bytes_written(self) -> int:
        return self._sink.count

    @property
    def records_written(self) -> int:
        return self._records

    def close(self) -> None:
        pass


class ReplicantSnapshotCsvWriter(_SnapshotFile):
    """Snapshot CSV: one row per record, one column per field of the stream, ``NULL`` for null."""

    def __init__(self, settings: ReplicantCsvFormat | ReplicantJsonFormat, arrow_schema: pa.Schema | None,
                 sink: BinaryIO, *, columns: Sequence[str] = ()):
        super().__init__(settings, arrow_schema, sink, columns)
        if getattr(settings, "include_header", False):
            self._sink.write(csv_line(self.columns).encode("utf-8"))

    def write(self, batch: pa.RecordBatch) -> None:
        if batch.num_rows == 0:
            return
        cells = [list(map(csv_cell, texts)) for texts in self._texts(batch)]
        text = "".join(",".join(row) + "\n" for row in zip(*cells)) if cells else "\n" * batch.num_rows
        self._sink.write(text.encode("utf-8"))


class ReplicantSnapshotJsonWriter(_SnapshotFile):
    """Snapshot JSON: one object per line, every value a string, null as JSON ``null``."""

    def write(self, batch: pa.RecordBatch) -> None:
        if batch.num_rows == 0:
            return
        names, dumps = self.columns, orjson.dumps
        lines = [dumps(dict(zip(names, row))) for row in zip(*self._texts(batch))] or [b"{}"] * batch.num_rows
        lines.append(b"")
        self._sink.write(b"\n".join(lines))


def open_replicant_writer(settings: ReplicantCsvFormat | ReplicantJsonFormat, arrow_schema: pa.Schema | None,
                          sink: BinaryIO, *, columns: Sequence[str] = ()
                          ) -> ReplicantSnapshotCsvWriter | ReplicantSnapshotJsonWriter:
    """The snapshot writer of a ``ReplicantCsvFormat`` or ``ReplicantJsonFormat``."""
    if settings.format_type == "replicant_csv":
        return ReplicantSnapshotCsvWriter(settings, arrow_schema, sink, columns=columns)
    return ReplicantSnapshotJsonWriter(settings, arrow_schema, sink, columns=columns)


__all__ = [
    "ReplicantSnapshotCsvWriter", "ReplicantSnapshotJsonWriter", "csv_cell", "csv_line", "data_names", "is_union",
    "java_objects_hash", "java_string_hash", "open_replicant_writer", "render_array", "render_column", "table_name",
]
