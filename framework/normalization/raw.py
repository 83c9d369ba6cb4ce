"""A stream's landed files as its raw rows: ``_airbyte_ab_id``, ``_airbyte_emitted_at``, ``_airbyte_data``, ``__node``.

``__node`` is the parsed record the tables are made from (see
:mod:`framework.normalization.transform`): a struct of the record's fields
where every scalar is its JSON text.

* JSONL and CSV files carry the record as JSON text (or, with root level
  flattening, its top-level fields, put back together here); ``__node`` is
  parsed from it with ``from_json``.
* Parquet files carry typed columns. ``_airbyte_data`` is their ``to_json``
  (a union column giving its set member and a schemaless, JSON text, column
  its JSON value); ``__node`` is built from the typed columns directly, each
  scalar as the text ``to_json`` writes for it (timestamps in milliseconds),
  so that it equals what parsing ``_airbyte_data`` would give, without the
  round trip. Parts the text cannot be made for directly (unions, schemaless
  values, arrays of arrays) do the round trip, field by field.
* Avro files are not read yet: the error says so.

Parquet files under a local output are read by Spark's own (vectorized)
reader when every file's columns have the types of the plan; otherwise, and
on S3, by the executors through the sink's storage (:mod:`.files`). Rows read
that way are cached as their flat raw columns and their node parsed from
``_airbyte_data`` (:class:`RawRows`), so that each table does not read them again.

Rows are read from every landed file of the stream (all syncs); ``after``
keeps only rows emitted after that instant (an incremental run).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq
from msgspec import Struct

from framework import typed as t
from framework.errors import ConfigError
from framework.normalization.files import (
    TEXT_SCHEMA,
    landed_files,
    read_files,
    spark_arrow_type,
)
from framework.normalization.plan import AB_ID, DATA, EMITTED_AT, StreamPlan
from framework.normalization.transform import NODE, parse_struct, parse_type
from framework.storage import LocalStorage, Storage
from framework.typed.envelope import EXTRACTED_AT, META, RAW_ID

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

    from framework.models.destination import DestinationSettings

#: How ``to_json`` writes a timestamp (Spark's JSON default); the node holds timestamps as this text.
JSON_TIMESTAMP = "yyyy-MM-dd'T'HH:mm:ss.SSSXXX"


class RawRows(Struct, frozen=True):
    """The raw rows of a stream (``frame``), and the cached part of them to :meth:`release` when done."""

    frame: DataFrame
    cached: DataFrame | None = None

    def release(self) -> None:
        if self.cached is not None:
            self.cached.unpersist()


def raw_frame(spark: SparkSession, destination: DestinationSettings, storage: Storage, plan: StreamPlan,
              after: datetime | None = None) -> RawRows:
    """The raw rows of ``plan``'s stream (newer than ``after`` when given), with their nodes.

    Rows read through Python (text files, Parquet on S3 or of other types) are cached as their
    flat raw columns (``MEMORY_AND_DISK``), so that each table does not read and convert them again;
    their nodes are parsed from ``_airbyte_data``. Rows Spark's reader reads are not cached.
    """
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    destination_json = destination.model_dump(mode="json", by_alias=True)
    files = landed_files(storage, destination, plan.stream, plan.namespace)
    if files.get("avro"):
        raise ConfigError(f"stream `{plan.stream}` was landed as Avro ({len(files['avro'])} file(s)), which "
                          "normalization cannot read yet; land the stream as Parquet, JSONL or CSV "
                          "(`--format parquet`) with a full refresh sync, then normalize")
    after_ms = None if after is None else int(after.timestamp() * 1000)
    direct, flat = [], []
    ids = [F.col(RAW_ID).alias(AB_ID), F.col(EXTRACTED_AT).alias(EMITTED_AT)]
    if files.get("parquet"):
        schema = _reader_schema(plan)
        if isinstance(storage, LocalStorage) and _spark_can_read(storage, files["parquet"], schema):
            typed = _spark_read(spark, storage, files["parquet"], schema)
            direct.append(typed.select(*ids, _record_json(plan).alias(DATA), typed_node(plan).alias(NODE)))
        else:
            typed = read_files(spark, destination_json, files["parquet"], schema, "parquet", after_ms=after_ms)
            flat.append(typed.select(*ids, _record_json(plan).alias(DATA)))
    if files.get("text"):
        text = read_files(spark, destination_json, files["text"], TEXT_SCHEMA, "text", after_ms=after_ms,
                          fields=_field_kinds(plan))
        flat.append(text.select(*ids, F.col(DATA)))
    cached = None
    if flat:
        rows = _union(flat)
        if after is not None:
            rows = rows.where(F.col(EMITTED_AT) > F.lit(after))
        cached = rows.persist(StorageLevel.MEMORY_AND_DISK)
        direct.append(cached.withColumn(NODE, text_node(F.col(DATA), plan)))
    if not direct:
        empty = spark.createDataFrame([], f"{AB_ID} string, {EMITTED_AT} timestamp, {DATA} string")
        return RawRows(empty.withColumn(NODE, text_node(F.col(DATA), plan)))
    frame = _union(direct)
    if after is not None:
        frame = frame.where(F.col(EMITTED_AT) > F.lit(after))
    return RawRows(frame, cached)


def _union(frames: Sequence[DataFrame]) -> DataFrame:
    frame = frames[0]
    for more in frames[1:]:
        frame = frame.unionByName(more)
    return frame


def text_node(data: Column, plan: StreamPlan) -> Column:
    """The node parsed from the record's JSON text ``data``."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    record = plan.record_type
    return F.from_json(data, parse_struct(record) if isinstance(record, t.Object) else T.StructType([]))


def typed_node(plan: StreamPlan) -> Column:
    """The node built from the typed columns of landed Parquet files (equal to parsing their ``to_json``)."""
    from pyspark.sql import functions as F

    record = plan.record_type
    if not isinstance(record, t.Object):
        return text_node(F.col(DATA), plan)
    return F.struct(*[_node_value(F.col(f"`{name}`"), kind).alias(name) for name, kind in record.properties])


def _direct(kind: t.FieldType) -> bool:
    """True when the node value of ``kind`` can be made from the typed column without the JSON round trip."""
    if isinstance(kind, (t.Union, t.Unknown)):
        return False
    if isinstance(kind, t.Object):
        return all(_direct(child) for _, child in kind.properties)
    if isinstance(kind, t.Array):
        return not isinstance(kind.items, t.Array) and _direct(kind.items)
    return True


def _cast_only(kind: t.FieldType) -> bool:
    """True when the node value of ``kind`` is its cast to text (structs and arrays of such too): no timestamps."""
    if isinstance(kind, t.Object):
        return bool(kind.properties) and all(_cast_only(child) for _, child in kind.properties)
    if isinstance(kind, t.Array):
        return _cast_only(kind.items)
    return isinstance(kind, (t.String, t.TimeWithTz, t.TimeWithoutTz, t.Integer, t.Number, t.Boolean, t.Date))


def _node_value(column: Column, kind: t.FieldType) -> Column:
    """The node value of a typed ``column`` of ``kind``: what ``from_json`` reads from its ``to_json``."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    if not _direct(kind):
        parsed = F.from_json(F.to_json(F.struct(_adapt(column, kind).alias("v"))),
                             T.StructType([T.StructField("v", parse_type(kind))]))
        return parsed.getField("v")
    if isinstance(kind, t.Object):
        return F.when(column.isNull(), F.lit(None)).otherwise(
            F.struct(*[_node_value(column.getField(name), child).alias(name) for name, child in kind.properties]))
    if isinstance(kind, t.Array):
        if _cast_only(kind.items):  # one cast of the whole array: Spark's generated code, no lambda to interpret
            return column.cast(parse_type(kind))
        return F.transform(column, lambda item: _node_value(item, kind.items))
    if isinstance(kind, (t.TimestampWithTz, t.TimestampWithoutTz)):
        return F.date_format(column, JSON_TIMESTAMP)
    if isinstance(kind, (t.String, t.TimeWithTz, t.TimeWithoutTz)):
        return column  # text already (times are read as text)
    return column.cast("string")  # integer, number, boolean, date: the same text as to_json's


def _spark_read(spark: SparkSession, storage: LocalStorage, keys: Sequence[str], schema: pa.Schema) -> DataFrame:
    """The typed columns of local landed Parquet files, read by Spark's own reader (``after`` is pushed down)."""
    from pyspark.sql.pandas.types import from_arrow_schema

    spark_schema = from_arrow_schema(pa.schema([pa.field(f.name, spark_arrow_type(f.type)) for f in schema]))
    return spark.read.schema(spark_schema).parquet(*[storage.path(key) for key in keys])


def _spark_can_read(storage: LocalStorage, keys: Sequence[str], schema: pa.Schema) -> bool:
    """True for local files whose columns all have the types of ``schema`` (as Spark reads them)."""
    if any(not _readable(field.type, field.type) for field in schema):
        return False
    for key in keys:
        found = pq.read_schema(storage.path(key))
        for field in schema:
            index = found.get_field_index(field.name)
            if index >= 0 and not _readable(found.field(index).type, field.type):
                return False
    return True


def _readable(found: pa.DataType, wanted: pa.DataType) -> bool:
    """True when Spark reads a Parquet column of ``found`` as ``wanted`` (missing struct fields are nulls)."""
    if pa.types.is_time(found) or pa.types.is_time(wanted):
        return False  # Spark has no time type: the Python reader gives times as text
    if pa.types.is_timestamp(found) and pa.types.is_timestamp(wanted):
        return found.tz is not None and wanted.tz is not None
    if pa.types.is_struct(found) and pa.types.is_struct(wanted):
        names = {f.name for f in found}
        return (len(names) == found.num_fields
                and all(_readable(found.field(f.name).type, f.type) for f in wanted if f.name in names))
    if pa.types.is_list(found) and pa.types.is_list(wanted):
        return _readable(found.value_type, wanted.value_type)
    return found == wanted


def _field_kinds(plan: StreamPlan) -> dict[str, str]:
    record = plan.record_type
    if not isinstance(record, t.Object):
        return {}
    return {name: ("json" if isinstance(kind, (t.Object, t.Array, t.Unknown, t.Union)) else kind.name)
            for name, kind in record.properties}


def _reader_schema(plan: StreamPlan) -> pa.Schema:
    """The landed Parquet schema of the stream, without ``_airbyte_meta``."""
    schema = t.arrow_schema(plan.record_type, plan.stream)
    return pa.schema([f for f in schema if f.name != META])


def _record_json(plan: StreamPlan) -> Column:
    """``to_json`` of the typed data columns, with unions and JSON text turned back into JSON values."""
    from pyspark.sql import functions as F

    record = plan.record_type
    if not isinstance(record, t.Object):
        return F.col(DATA)
    fields = [_adapt(F.col(f"`{name}`"), kind).alias(name) for name, kind in record.properties]
    return F.to_json(F.struct(*fields))


def _needs_adapting(kind: t.FieldType) -> bool:
    if isinstance(kind, (t.Union, t.Unknown)):
        return True
    if isinstance(kind, t.Object):
        return any(_needs_adapting(child) for _, child in kind.properties)
    if isinstance(kind, t.Array):
        return _needs_adapting(kind.items)
    return False


def _adapt(column: Column, kind: t.FieldType) -> Column:
    """``column`` (typed as the sink lands ``kind``) as a value ``to_json`` writes as the original JSON."""
    from pyspark.sql import functions as F

    if not _needs_adapting(kind):
        return column
    if isinstance(kind, t.Unknown):
        return F.try_parse_json(column)
    if isinstance(kind, t.Object):
        return F.when(column.isNull(), F.lit(None)).otherwise(
            F.struct(*[_adapt(column.getField(name), child).alias(name) for name, child in kind.properties]))
    if isinstance(kind, t.Array):
        return F.transform(column, lambda item: _adapt(item, kind.items))
    assert isinstance(kind, t.Union)
    choice = None
    for option in kind.options:
        member = _adapt(column.getField(option.name), option)
        if isinstance(option, (t.Object, t.Array)):
            value = F.to_variant_object(member)
        elif isinstance(option, t.Unknown):
            value = member
        else:
            value = member.cast("variant")
        test = column.getField("type") == F.lit(option.name)
        choice = F.when(test, value) if choice is None else choice.when(test, value)
    assert choice is not None  # a union has options
    return choice
