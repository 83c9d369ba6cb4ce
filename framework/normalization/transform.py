"""Raw records to typed, un-nested tables: Spark column expressions only, run on the executors.

The record is a *node*: a struct made from the plan, where every scalar is
text (a JSON string as its value, any other JSON value as its JSON text),
as ``from_json`` reads the record's JSON text against that schema (landed
Parquet files build the same node from their typed columns without the
JSON round trip: :mod:`.raw`); each column is then cast to its type with
``try_cast`` (a value that does not fit becomes null rather than failing
the run). Objects and arrays stay structs and arrays to be un-nested
into child tables.

A *node frame* holds one table's rows plus the hidden column ``__node``: the
parsed object the table's children come from. :func:`root_nodes` makes the
stream's, :func:`child_nodes` a child's from its parent's, and
:func:`table_rows` keeps the table's own columns.

``_airbyte_<name>_hashid`` is the MD5 of the parent's hashid (children only)
and every data column as text (nulls as empty strings; timestamps as epoch
microseconds; nested values as their JSON text), joined with ``-``.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from framework import typed as t
from framework.normalization.plan import AB_ID, DATA, EMITTED_AT, StreamPlan, TablePlan

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame
    from pyspark.sql.types import DataType, StructType

NODE = "__node"
_SPARK_TYPES = {"string": "string", "bigint": "bigint", "double": "double", "boolean": "boolean",
                "timestamp": "timestamp", "date": "date", "json": "string"}


def parse_type(kind: t.FieldType) -> DataType:
    """The Spark type ``from_json`` reads a value of ``kind`` as: structs, arrays, and text for scalars."""
    from pyspark.sql import types as T

    if isinstance(kind, t.Object):
        return parse_struct(kind)
    if isinstance(kind, t.Array) and isinstance(kind.items, (t.Object, t.Array)):
        return T.ArrayType(parse_type(kind.items) if isinstance(kind.items, t.Object) else T.StringType())
    if isinstance(kind, t.Array):
        return T.ArrayType(T.StringType())
    return T.StringType()


def parse_struct(kind: t.Object) -> StructType:
    """The Spark struct ``from_json`` reads an object of ``kind`` as."""
    from pyspark.sql import types as T

    return T.StructType([T.StructField(name, parse_type(child)) for name, child in kind.properties])


def typed(text: Column, column_type: str) -> Column:
    """A text column cast to ``column_type``; values that do not fit become null."""
    from pyspark.sql import functions as F

    if column_type in ("string", "json"):
        return text
    if column_type == "bigint":
        return F.coalesce(text.try_cast("bigint"), text.try_cast("double").try_cast("bigint"))
    return text.try_cast(_SPARK_TYPES[column_type])


def as_text(column: Column, column_type: str) -> Column:
    """A typed column as the text hashed into hashids."""
    from pyspark.sql import functions as F

    if column_type == "timestamp":
        return F.unix_micros(column).cast("string")
    return column.cast("string")


def hashid(parts: list[Column]) -> Column:
    from pyspark.sql import functions as F

    return F.md5(F.concat_ws("-", *[F.coalesce(part, F.lit("")) for part in parts]))


def _data_columns(node: Column, table: TablePlan) -> list[Column]:
    return [typed(node.getField(c.key), c.type).alias(c.name) for c in table.columns]


def _hash_parts(table: TablePlan, node: Column, parent_hash: Column | None) -> list[Column]:
    from pyspark.sql import functions as F

    parts = [] if parent_hash is None else [parent_hash]
    parts += [as_text(F.col(f"`{c.name}`"), c.type) for c in table.columns]
    parts += [F.to_json(node.getField(child.key)) for child in table.children]
    return parts


def root_nodes(raw: DataFrame, plan: StreamPlan, normalized_at: datetime, keep_data: bool = False) -> DataFrame:
    """The stream's table rows (and their nodes) from a raw frame; with ``keep_data`` also ``_airbyte_data``.

    The node is the raw frame's ``__node`` when it has one, else parsed from ``_airbyte_data``.
    """
    from pyspark.sql import functions as F

    table = plan.root
    record = plan.record_type
    if NODE in raw.columns:
        node = F.col(NODE)
    elif isinstance(record, t.Object):
        node = F.from_json(F.col(DATA), parse_struct(record))
    else:  # no properties: nothing to type or un-nest
        from pyspark.sql import types as T

        node = F.from_json(F.col(DATA), T.StructType([]))
    extra = [F.col(DATA)] if keep_data else []
    parsed = raw.select(F.col(AB_ID), F.col(EMITTED_AT), node.alias(NODE), *extra)
    nodes = F.col(NODE)
    frame = parsed.select(F.col(AB_ID).alias(table.ab_id), F.col(EMITTED_AT).alias(table.emitted_at),
                          F.lit(normalized_at).alias(table.normalized_at), *_data_columns(nodes, table), nodes,
                          *extra)
    return frame.withColumn(table.hashid, hashid(_hash_parts(table, nodes, None)))


def child_nodes(parent_frame: DataFrame, parent: TablePlan, child: TablePlan, plan: StreamPlan) -> DataFrame:
    """The rows of ``child`` (and their nodes) made from the node frame of its ``parent``."""
    from pyspark.sql import functions as F

    assert child.foreign is not None  # a child table has a foreign key

    value = F.col(NODE).getField(child.key)
    base = [F.col(f"`{parent.ab_id}`").alias(child.ab_id), F.col(f"`{parent.emitted_at}`").alias(child.emitted_at),
            F.col(f"`{parent.hashid}`").alias(child.foreign),
            F.col(f"`{parent.normalized_at}`").alias(child.normalized_at)]
    if child.kind == "object":
        expanded = parent_frame.where(value.isNotNull()).select(*base, value.alias(NODE))
    else:
        expanded = parent_frame.select(*base, F.explode(value).alias(NODE))
    node = F.col(NODE)
    if child.kind == "scalars":
        data = [typed(node, c.type).alias(c.name) for c in child.columns]
        frame = expanded.select(*[F.col(f"`{n}`") for n in child.metadata if n != child.hashid], *data, node)
        parts = [F.col(f"`{child.foreign}`")] + [as_text(F.col(f"`{c.name}`"), c.type) for c in child.columns]
        return frame.withColumn(child.hashid, hashid(parts))
    frame = expanded.select(*[F.col(f"`{n}`") for n in child.metadata if n != child.hashid],
                            *_data_columns(node, child), node)
    return frame.withColumn(child.hashid, hashid(_hash_parts(child, node, F.col(f"`{child.foreign}`"))))


#: Prefix of the record frame's hidden columns; never in a column name (names keep letters, digits and ``_``).
HIDDEN = "#"
#: The record frame's column of ``_airbyte_data`` (the raw table's).
RECORD_DATA = HIDDEN + "data"
ITEM_NODE = HIDDEN + "node"  # a child row's node while its own children are made


def nested_column(table: TablePlan) -> str:
    """The hidden column (or struct field) of the record frame holding the rows of child ``table``."""
    return HIDDEN + table.name


def record_frame(raw: DataFrame, plan: StreamPlan, normalized_at: datetime) -> DataFrame:
    """One row per record with the rows of every table of the stream, each level's hashids computed once.

    Columns: the root table's (``table_rows`` order), ``#data`` (``_airbyte_data``) and, per child
    table of the root, ``#<child table>``: an array of the child's rows (an object child: none or one),
    each a struct of the child's data columns, its hashid and, per grandchild, ``#<grandchild table>``;
    and so on down. Metadata columns are the root's (``_airbyte_ab_id``...) and each parent's hashid:
    :mod:`framework.normalization.tables` splits the frame into the tables.
    """
    from pyspark.sql import functions as F

    root = plan.root
    nodes = root_nodes(raw, plan, normalized_at, keep_data=True)
    node = F.col(NODE)
    parent_hash = F.col(f"`{root.hashid}`")
    children = [_child(node.getField(child.key), child, parent_hash).alias(nested_column(child))
                for child in root.children]
    return nodes.select(*[F.col(f"`{name}`") for name in root.column_names], F.col(DATA).alias(RECORD_DATA),
                        *children)


def _child(value: Column, table: TablePlan, parent_hash: Column) -> Column:
    """The rows of child ``table`` made from its ``value`` in the parent's node (see :func:`record_frame`)."""
    from pyspark.sql import functions as F

    if table.kind == "object" and not table.children:
        # one row or none, in plain expressions (Spark's generated code) rather than an array function's lambda
        parts = [parent_hash] + [as_text(typed(value.getField(c.key), c.type), c.type) for c in table.columns]
        return F.when(value.isNotNull(), F.array(F.struct(*_data_columns(value, table),
                                                          hashid(parts).alias(table.hashid))))
    return _level(_items(value, table), table, parent_hash)


def _items(value: Column, table: TablePlan) -> Column:
    """The nodes of child ``table`` as an array: an object child's value is an array of none or one."""
    from pyspark.sql import functions as F

    if table.kind == "object":
        return F.filter(F.array(value), lambda item: item.isNotNull())
    return value


def _level(items: Column, table: TablePlan, parent_hash: Column) -> Column:
    """The rows of child ``table`` made from the array of its nodes ``items``: see :func:`record_frame`.

    Array functions' lambdas are interpreted (no generated code): a table without children takes one
    ``transform`` (its typed values made twice, for the row and for the hashid, cost less than a second
    pass), a table with children two (the second makes the children from the row's hashid).
    """
    from pyspark.sql import functions as F

    names = [c.name for c in table.columns]

    def values(item: Column) -> list[Column]:
        if table.kind == "scalars":
            return [typed(item, c.type) for c in table.columns]
        return [typed(item.getField(c.key), c.type) for c in table.columns]

    def hashed_row(item: Column) -> Column:  # data columns, hashid, and the node while there are children
        parts = [parent_hash] + [as_text(value, c.type) for value, c in zip(values(item), table.columns)]
        parts += [F.to_json(item.getField(child.key)) for child in table.children]
        data = [value.alias(name) for value, name in zip(values(item), names)]
        return F.struct(*data, hashid(parts).alias(table.hashid), *([item.alias(ITEM_NODE)] if table.children else []))

    rows = F.transform(items, hashed_row)
    if not table.children:
        return rows

    def with_children(row: Column) -> Column:
        own = row.getField(table.hashid)
        nested = [_child(row.getField(ITEM_NODE).getField(child.key), child, own).alias(nested_column(child))
                  for child in table.children]
        return F.struct(*[row.getField(name).alias(name) for name in names], own.alias(table.hashid), *nested)

    return F.transform(rows, with_children)


def table_rows(frame: DataFrame, table: TablePlan) -> DataFrame:
    """The table's own columns, in order, from a node frame."""
    from pyspark.sql import functions as F

    return frame.select(*[F.col(f"`{name}`") for name in table.column_names])


def all_tables(root_frame: DataFrame, plan: StreamPlan) -> dict[str, DataFrame]:
    """Every table of the stream (name -> rows), made from the stream's node frame."""
    tables: dict[str, DataFrame] = {}

    def visit(frame: DataFrame, table: TablePlan) -> None:
        tables[table.name] = table_rows(frame, table)
        for child in table.children:
            visit(child_nodes(frame, table, child, plan), child)

    visit(root_frame, plan.root)
    return tables


__all__ = ["HIDDEN", "NODE", "RECORD_DATA", "all_tables", "as_text", "child_nodes", "hashid", "nested_column",
           "parse_struct", "parse_type", "record_frame", "root_nodes", "table_rows", "typed"]
