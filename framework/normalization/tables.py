"""A stream's tables from one pass over its records: :class:`StreamTables`.

The landed rows are read once into the *record frame*
(:func:`~framework.normalization.transform.record_frame`): one row per
record holding the rows of every table of the stream, each level's hashids
computed once in the JVM. A writer that can take all tables at once (the
Parquet target, :func:`~framework.normalization.files.write_tables`) sends
that frame through the executors' Python once and cuts each Arrow batch into
the tables with Arrow's vectorized kernels (:func:`split`: a child table is
its parent's list column flattened, with the parent's metadata taken by each
item's parent index): every table is written from that one pass. The tables'
schemas come from the plan (:func:`table_schema`).

A :class:`StreamTables` is also a mapping of table name to DataFrame, each
table derived on its own (:func:`~framework.normalization.transform.all_tables`:
Spark's generated code, no record goes through Python), for targets that write
table by table (PostgreSQL over JDBC); their schemas are the tables' schemas
in both ways.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import datetime
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
from msgspec import Struct

from framework.normalization.plan import AB_ID, DATA, EMITTED_AT, StreamPlan, TablePlan
from framework.normalization.transform import RECORD_DATA, all_tables, nested_column, record_frame, root_nodes

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


class Layout(Struct, frozen=True):
    """What :func:`split` needs to cut a record frame batch into tables (small, picklable for the executors).

    ``schemas``: each table's Arrow schema (the raw table, then the stream's tables depth first).
    """

    root: TablePlan
    raw_table: str
    schemas: tuple[tuple[str, pa.Schema], ...]


#: The Arrow type of each column type (as Spark gives its columns to Arrow, timestamps in UTC).
ARROW_TYPES = {"string": pa.string(), "json": pa.string(), "bigint": pa.int64(), "double": pa.float64(),
               "boolean": pa.bool_(), "timestamp": pa.timestamp("us", tz="UTC"), "date": pa.date32()}


def table_schema(table: TablePlan) -> pa.Schema:
    """The Arrow schema of a table of the plan (every field nullable, as Spark's Parquet writer writes files)."""
    moment = ARROW_TYPES["timestamp"]
    kinds = {table.ab_id: pa.string(), table.emitted_at: moment, table.hashid: pa.string(),
             table.normalized_at: moment, **({table.foreign: pa.string()} if table.foreign else {})}
    kinds.update((c.name, ARROW_TYPES[c.type]) for c in table.columns)
    return pa.schema([pa.field(name, kinds[name]) for name in table.column_names])


class StreamTables(Mapping[str, "DataFrame"]):
    """The tables of a stream (its raw table, the root and every child table) from its record frame.

    As a mapping, each table is derived on its own (made when first asked for).
    """

    def __init__(self, raw: DataFrame, plan: StreamPlan, normalized_at: datetime):
        self.plan = plan
        self.records = record_frame(raw, plan, normalized_at)
        self._raw = raw
        self._normalized_at = normalized_at
        self._names = (plan.raw_table, *(table.name for table in plan.tables()))
        self._frames: dict[str, DataFrame] | None = None

    def _made(self) -> dict[str, DataFrame]:
        if self._frames is None:
            nodes = root_nodes(self._raw, self.plan, self._normalized_at, keep_data=True)
            self._frames = {self.plan.raw_table: self._raw.select(AB_ID, EMITTED_AT, DATA),
                            **all_tables(nodes, self.plan)}
        return self._frames

    def __getitem__(self, table: str) -> DataFrame:
        return self._made()[table]

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def schemas(self) -> tuple[tuple[str, pa.Schema], ...]:
        """Each table's Arrow schema, from the plan (no Spark analysis)."""
        moment = ARROW_TYPES["timestamp"]
        raw = pa.schema([pa.field(AB_ID, pa.string()), pa.field(EMITTED_AT, moment), pa.field(DATA, pa.string())])
        return ((self.plan.raw_table, raw), *((table.name, table_schema(table)) for table in self.plan.tables()))

    def layout(self) -> Layout:
        return Layout(self.plan.root, self.plan.raw_table, self.schemas())


def split(batch: pa.RecordBatch | pa.Table, layout: Layout) -> dict[str, pa.Table]:
    """The rows of every table in a batch of the record frame, each with its table's schema (see the module docs)."""
    schemas = dict(layout.schemas)
    root = layout.root
    columns = dict(zip(batch.schema.names, batch.columns))
    out: dict[str, pa.Table] = {}

    def make(name: str, values: Mapping[str, pa.Array | pa.ChunkedArray]) -> None:
        schema = schemas[name]
        arrays = [_cast(values[field.name], field.type) for field in schema]
        out[name] = pa.Table.from_arrays(arrays, schema=_nullable(schema))

    make(layout.raw_table, {AB_ID: columns[root.ab_id], EMITTED_AT: columns[root.emitted_at],
                                DATA: columns[RECORD_DATA]})

    def visit(table: TablePlan, values: Mapping[str, pa.Array | pa.ChunkedArray]) -> None:
        make(table.name, values)
        for child in table.children:
            lists = _combined(values[nested_column(child)])
            parents = pc.list_parent_indices(lists)
            items = pc.list_flatten(lists)
            fields = dict(zip([f.name for f in items.type], items.flatten()))
            meta = {child.ab_id: values[table.ab_id], child.emitted_at: values[table.emitted_at],
                    child.normalized_at: values[table.normalized_at]}
            assert child.foreign is not None  # a child table has a foreign key
            meta = {name: pc.take(value, parents) for name, value in meta.items()}
            meta[child.foreign] = pc.take(values[table.hashid], parents)
            visit(child, {**fields, **meta})

    visit(root, columns)
    return out


def _combined(value: pa.Array | pa.ChunkedArray) -> pa.Array:
    return value.combine_chunks() if isinstance(value, pa.ChunkedArray) else value


def _cast(value: pa.Array | pa.ChunkedArray, kind: pa.DataType) -> pa.Array | pa.ChunkedArray:
    """``value`` as ``kind``: only a timestamp's time zone may differ (Spark's Arrow batches carry the session's)."""
    if value.type == kind:
        return value
    if pa.types.is_timestamp(value.type) and pa.types.is_timestamp(kind) and value.type.unit == kind.unit:
        return value.cast(kind)
    raise TypeError(f"a record frame column is {value.type}, its table's schema says {kind}")


def _nullable(schema: pa.Schema) -> pa.Schema:
    """``schema`` with every field nullable, as Spark's own Parquet writer writes files."""
    return pa.schema([field.with_nullable(True) for field in schema])


__all__ = ["ARROW_TYPES", "Layout", "StreamTables", "split", "table_schema"]
