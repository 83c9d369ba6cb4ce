"""Avro container files through fastavro.

Codecs: ``no compression`` (null), ``Deflate`` (level), ``bzip2``, ``xz``
(level), ``zstandard`` (level), ``snappy``. fastavro needs extra packages for
two of them: ``cramjam`` for snappy and, before Python 3.14, ``backports.zstd``
for zstandard; without them the writer refuses to start and says which
package to install. fastavro ignores the level of xz, so the xz blocks are
compressed here with the preset asked for. ``include_checksum`` of zstandard
has no counterpart in fastavro and is ignored.

Records come from the typed Arrow batch. The default conversion
(:func:`avro_converter`) walks the Avro schema next to the Arrow schema once
and touches only what Avro wants differently from ``to_pylist``:

* a union of several types is a struct ``{type, integer, string, ...}`` in
  Arrow (the Parquet form of the seed); Avro gets the plain value of the member
  that ``type`` names;
* a map (a list of key/value pairs in Python) becomes a dict;
* a record field whose Avro name differs from its Arrow name (names are
  matched in order when they differ) is renamed.

When nothing needs converting, the rows of ``to_pylist`` go to fastavro as they
are. Dates, times and timestamps are already the Python objects fastavro's
logical types take.
"""

from __future__ import annotations

import importlib.util
import lzma
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import IO, TYPE_CHECKING, Any, BinaryIO, cast

import fastavro
import pyarrow as pa
from fastavro.write import Writer

from framework.errors import ConfigError
from framework.formats.sink import CountingSink

if TYPE_CHECKING:
    from framework.models.destination import AvroFormat

_CODECS = {"no compression": "null", "Deflate": "deflate", "bzip2": "bzip2", "xz": "xz",
           "zstandard": "zstandard", "snappy": "snappy"}

Convert = Callable[[Any], Any]


def codec_package_missing(codec: str) -> str | None:
    """The PyPI package fastavro needs for ``codec`` (fastavro's name) when it is not installed, else None."""
    if codec == "snappy":
        return None if importlib.util.find_spec("cramjam") else "cramjam"
    if codec == "zstandard":
        if sys.version_info >= (3, 14):
            return None
        try:
            return None if importlib.util.find_spec("backports.zstd") else "backports.zstd"
        except ModuleNotFoundError:  # no `backports` namespace at all
            return "backports.zstd"
    return None


class AvroFileWriter:
    """One Avro container file."""

    extension = ".avro"

    def __init__(self, settings: AvroFormat, arrow_schema: pa.Schema | None, avro_schema: Mapping, sink: BinaryIO,
                 *, to_avro: Callable[[pa.RecordBatch], Iterable[dict]] | None = None):
        codec_settings = settings.compression_codec
        codec = _CODECS[codec_settings.codec]
        missing = codec_package_missing(codec)
        if missing:
            raise ConfigError(
                f"the Avro codec `{codec_settings.codec}` needs the Python package `{missing}`: install it "
                f"(pip install {missing}) or choose another compression codec"
            )
        level = getattr(codec_settings, "compression_level", None)
        self._sink = CountingSink(sink)
        # fastavro only writes to, flushes and tells the sink
        self._writer = Writer(cast(IO[bytes], self._sink), fastavro.parse_schema(dict(avro_schema)), codec=codec,
                              compression_level=level)
        if codec == "xz" and level is not None:
            self._writer.block_writer = _xz_block_writer
        if to_avro is not None:
            self._to_avro = to_avro
        else:
            convert = avro_converter(avro_schema, arrow_schema) if arrow_schema is not None else None
            self._to_avro = _rows(convert)
        self._records = 0

    def write(self, batch: pa.RecordBatch) -> None:
        write = self._writer.write
        for record in self._to_avro(batch):
            write(record)
        self._records += batch.num_rows

    @property
    def bytes_written(self) -> int:
        """Bytes of the finished blocks; the open block (at most about 16 KB) is not counted."""
        return self._sink.count

    @property
    def records_written(self) -> int:
        return self._records

    def close(self) -> None:
        self._writer.flush()


def _rows(convert: Convert | None) -> Callable[[pa.RecordBatch], Iterable[dict]]:
    if convert is None:
        return lambda batch: batch.to_pylist()
    return lambda batch: [convert(row) for row in batch.to_pylist()]


def _xz_block_writer(fo: Any, block: bytes, level: int | None) -> None:
    data = lzma.compress(block, preset=6 if level is None else level)
    fo.write(_avro_long(len(data)))
    fo.write(data)


def _avro_long(n: int) -> bytes:
    """Avro's zig-zag variable-length encoding of a long."""
    n = (n << 1) ^ (n >> 63)
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


# ----------------------------------------------------------------- conversion


def avro_converter(avro_schema: Mapping, arrow_schema: pa.Schema) -> Convert | None:
    """A function that turns one ``to_pylist`` row into an Avro-ready record, or None when rows fit as they are."""
    return _Compiler().record(avro_schema, list(arrow_schema))


class _Compiler:
    """Builds converters by walking an Avro schema next to the Arrow type of the same value."""

    def __init__(self) -> None:
        self.named: dict[str, Any] = {}

    def resolve(self, avro: Any) -> Any:
        if isinstance(avro, str):
            return self.named.get(avro, avro)
        if isinstance(avro, dict) and avro.get("type") in ("record", "enum", "fixed") and "name" in avro:
            self.named[avro["name"]] = avro
            if "namespace" in avro:
                self.named[f"{avro['namespace']}.{avro['name']}"] = avro
        return avro

    def value(self, avro: Any, arrow: pa.DataType) -> Convert | None:
        avro = self.resolve(avro)
        if isinstance(avro, list):
            return self.union(avro, arrow)
        if not isinstance(avro, dict):
            return None
        kind = avro.get("type")
        if isinstance(kind, (list, dict)) or (isinstance(kind, str) and kind in self.named):
            return self.value(kind, arrow)
        if kind == "record" and pa.types.is_struct(arrow):
            return self.record(avro, [arrow.field(i) for i in range(arrow.num_fields)])
        if kind == "array" and (pa.types.is_list(arrow) or pa.types.is_large_list(arrow)
                                or pa.types.is_fixed_size_list(arrow)):
            return _each(self.value(avro["items"], arrow.value_type))
        if kind == "map" and pa.types.is_map(arrow):
            return _map(self.value(avro["values"], arrow.item_type))
        return None

    def record(self, avro: Mapping, arrow_fields: list[pa.Field]) -> Convert | None:
        avro = self.resolve(avro)
        avro_fields = avro.get("fields", [])
        by_name = {f.name: f for f in arrow_fields}
        positional = any(f["name"] not in by_name for f in avro_fields) and len(avro_fields) == len(arrow_fields)
        renames: list[tuple[str, str]] = []
        steps: list[tuple[str, Convert]] = []
        for index, field in enumerate(avro_fields):
            arrow_field = arrow_fields[index] if positional else by_name.get(field["name"])
            if arrow_field is None:
                continue
            if arrow_field.name != field["name"]:
                renames.append((arrow_field.name, field["name"]))
            convert = self.value(field["type"], arrow_field.type)
            if convert is not None:
                steps.append((field["name"], convert))
        if not renames and not steps:
            return None
        return _record(tuple(renames), tuple(steps))

    def union(self, branches: list, arrow: pa.DataType) -> Convert | None:
        branches = [self.resolve(b) for b in branches]
        others = [b for b in branches if b != "null"]
        if len(others) == 1:
            return self.value(others[0], arrow)
        if not (pa.types.is_struct(arrow) and arrow.get_field_index("type") >= 0):
            return None
        members: dict[str, Convert] = {}
        for i in range(arrow.num_fields):
            member = arrow.field(i)
            if member.name == "type":
                continue
            branch = _branch_for(others, member.type)
            convert = self.value(branch, member.type) if branch is not None else None
            if convert is not None:
                members[member.name] = convert
        return _union(members)


def _branch_for(branches: list, arrow: pa.DataType) -> Any:
    """The Avro branch that holds a union member of this Arrow type (records, arrays and maps need one)."""
    wanted = ("record" if pa.types.is_struct(arrow) else "map" if pa.types.is_map(arrow)
              else "array" if pa.types.is_list(arrow) or pa.types.is_large_list(arrow) else None)
    if wanted is None:
        return None
    for branch in branches:
        if isinstance(branch, dict) and branch.get("type") == wanted:
            return branch
    return None


def _record(renames: tuple[tuple[str, str], ...], steps: tuple[tuple[str, Convert], ...]) -> Convert:
    def convert(row: Any) -> Any:
        if row is None:
            return None
        for old, new in renames:
            row[new] = row.pop(old)
        for name, step in steps:
            value = row.get(name)
            if value is not None:
                row[name] = step(value)
        return row

    return convert


def _each(item: Convert | None) -> Convert | None:
    if item is None:
        return None
    return lambda values: [None if v is None else item(v) for v in values]


def _map(item: Convert | None) -> Convert:
    if item is None:
        return lambda pairs: dict(pairs)
    return lambda pairs: {k: None if v is None else item(v) for k, v in pairs}


def _union(members: dict[str, Convert]) -> Convert:
    def convert(value: Any) -> Any:
        name = value.get("type")
        if name is None:
            return None
        plain = value.get(name)
        step = members.get(name)
        return step(plain) if step is not None and plain is not None else plain

    return convert


__all__ = ["AvroFileWriter", "avro_converter", "codec_package_missing"]
