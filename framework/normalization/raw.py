"""A stream's landed files as its raw table: ``_airbyte_ab_id``, ``_airbyte_emitted_at``, ``_airbyte_data``.

JSONL and CSV files carry the record as JSON text (or, with root level
flattening, its top-level fields, put back together here). Parquet files carry
typed columns: the record is turned back into JSON on the executors with
``to_json``, a union column giving its set member and a schemaless (JSON text)
column its JSON value. Avro files are not read yet: the error says so.

Rows are read from every landed file of the stream (all syncs); ``after``
keeps only rows emitted after that instant (an incremental run).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pyarrow as pa

from framework.errors import ConfigError
from framework.normalization.files import TEXT_SCHEMA, landed_files, read_files
from framework.normalization.plan import AB_ID, DATA, EMITTED_AT, StreamPlan
from framework.sink.typing import types as t


def raw_frame(spark: Any, destination: Any, storage: Any, plan: StreamPlan, after: datetime | None = None) -> Any:
    """The raw rows of ``plan``'s stream (newer than ``after`` when given) as a DataFrame."""
    from pyspark.sql import functions as F

    destination_json = destination.model_dump(mode="json", by_alias=True)
    files = landed_files(storage, destination, plan.stream, plan.namespace)
    if files.get("avro"):
        raise ConfigError(f"stream `{plan.stream}` was landed as Avro ({len(files['avro'])} file(s)), which "
                          "normalization cannot read yet; land the stream as Parquet, JSONL or CSV "
                          "(`--format parquet`) with a full refresh sync, then normalize")
    after_ms = None if after is None else int(after.timestamp() * 1000)
    frames = []
    if files.get("parquet"):
        schema = _reader_schema(plan)
        typed = read_files(spark, destination_json, files["parquet"], schema, "parquet", after_ms=after_ms)
        frames.append(typed.select(F.col("_airbyte_raw_id").alias(AB_ID),
                                   F.col("_airbyte_extracted_at").alias(EMITTED_AT),
                                   _record_json(plan).alias(DATA)))
    if files.get("text"):
        text = read_files(spark, destination_json, files["text"], TEXT_SCHEMA, "text", after_ms=after_ms,
                          fields=_field_kinds(plan))
        frames.append(text.select(F.col("_airbyte_raw_id").alias(AB_ID),
                                  F.col("_airbyte_extracted_at").alias(EMITTED_AT), F.col(DATA)))
    if not frames:
        return spark.createDataFrame([], f"{AB_ID} string, {EMITTED_AT} timestamp, {DATA} string")
    frame = frames[0]
    for more in frames[1:]:
        frame = frame.unionByName(more)
    if after is not None:
        frame = frame.where(F.col(EMITTED_AT) > F.lit(after))
    return frame


def _field_kinds(plan: StreamPlan) -> dict[str, str]:
    record = plan.record_type
    if not isinstance(record, t.Object):
        return {}
    return {name: ("json" if isinstance(kind, (t.Object, t.Array, t.Unknown, t.Union)) else kind.name)
            for name, kind in record.properties}


def _reader_schema(plan: StreamPlan) -> pa.Schema:
    """The landed Parquet schema of the stream, without ``_airbyte_meta``."""
    from framework.sink.typing import arrow_schema

    schema = arrow_schema(plan.record_type, plan.stream)
    return pa.schema([f for f in schema if f.name != "_airbyte_meta"])


def _record_json(plan: StreamPlan) -> Any:
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


def _adapt(column: Any, kind: t.FieldType) -> Any:
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
    return choice
