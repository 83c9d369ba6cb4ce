"""From the landed catalog to a plan of tables: which tables a stream becomes, their columns and types (pure).

Types come from the stream's JSON Schema only (never from values), read with
the sink's :func:`~framework.typed.parse_schema`:

====================================== ==============================
JSON Schema                            column type
====================================== ==============================
``string``                             ``string``
``string`` with ``format: date-time``  ``timestamp`` (UTC)
``string`` with ``format: date``       ``date``
``string`` with ``format: time``       ``string``
``integer`` (``airbyte_type: integer``) ``bigint``
``number``                             ``double``
``boolean``                            ``boolean``
``object`` with properties             a child table
``array`` of objects with properties   a child table, a row per item
``array`` of anything else             a child table with a ``data`` column
an object without properties, an       ``json``: the value as JSON text
array without items, ``{}``, a union
with an object or array member
a union of scalars                     ``double`` for integer and number,
                                       ``string`` otherwise
====================================== ==============================

Each table has the metadata columns ``_airbyte_ab_id``, ``_airbyte_emitted_at``,
``_airbyte_<name>_hashid`` (``<name>`` the stream's or the nested column's name)
and ``_airbyte_normalized_at``; child tables also ``_airbyte_<parent name>_foreign_hashid``.
A data column whose name is taken (by metadata, or by another property that
normalizes to the same identifier) gets ``_1``, ``_2``... in schema order.
Table names are unique over the whole catalog in the same way: streams
(sorted by name) first, with their ``_scd`` and ``_airbyte_raw_`` tables, then
every stream's child tables depth first.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from msgspec import Struct

from framework import typed as t
from framework.errors import ConfigError
from framework.normalization import naming
from framework.sync_modes import check_forced, default_mode
from framework.values import replace

AB_ID, EMITTED_AT, NORMALIZED_AT = "_airbyte_ab_id", "_airbyte_emitted_at", "_airbyte_normalized_at"
START_AT, END_AT, ACTIVE_ROW = "_airbyte_start_at", "_airbyte_end_at", "_airbyte_active_row"
UNIQUE_KEY, UNIQUE_KEY_SCD, DATA = "_airbyte_unique_key", "_airbyte_unique_key_scd", "_airbyte_data"
DELETED_AT = "_ab_cdc_deleted_at"
SCD_COLUMNS = (START_AT, END_AT, ACTIVE_ROW, UNIQUE_KEY, UNIQUE_KEY_SCD)
SCALAR_TYPES = ("string", "bigint", "double", "boolean", "timestamp", "date", "json")


class Column(Struct, frozen=True):
    """A data column: its ``name`` in the table, the JSON ``key`` it comes from and its type."""

    name: str
    key: str
    type: str  # one of SCALAR_TYPES


class TablePlan(Struct, frozen=True):
    """One table: the stream's own (``kind`` ``root``) or a child (``object``, ``array``, ``scalars``).

    ``key`` is the JSON key of the nested column in the parent record (None
    for the root); ``json_path`` the JSON names from the stream down to it.
    """

    name: str
    kind: str
    key: str | None
    json_path: tuple[str, ...]
    columns: tuple[Column, ...]
    children: tuple[TablePlan, ...]
    hashid: str
    foreign: str | None = None
    ab_id: str = AB_ID
    emitted_at: str = EMITTED_AT
    normalized_at: str = NORMALIZED_AT

    def walk(self) -> Iterator[TablePlan]:
        """This table and all its descendants, depth first."""
        yield self
        for child in self.children:
            yield from child.walk()

    @property
    def metadata(self) -> tuple[str, ...]:
        names = (self.ab_id, self.emitted_at, self.hashid) + ((self.foreign,) if self.foreign else ())
        return names + (self.normalized_at,)

    @property
    def column_names(self) -> tuple[str, ...]:
        """Every column of the table in order: metadata, then data."""
        return self.metadata + tuple(c.name for c in self.columns)


@dataclass(frozen=True)
class StreamPlan:
    """What one landed stream becomes, and how it is updated."""

    stream: str
    namespace: str
    json_schema: Mapping[str, Any] = field(compare=False, repr=False)
    record_type: t.FieldType = field(compare=False, repr=False)
    root: TablePlan
    raw_table: str
    scd_table: str
    sync_mode: str  # incremental | full_refresh (how the source was read)
    destination_sync_mode: str  # append | overwrite | append_dedup
    primary_key: tuple[Column, ...] = ()
    cursor: Column | None = None
    deleted_at: Column | None = None

    @property
    def dedup(self) -> bool:
        return self.destination_sync_mode == "append_dedup"

    def tables(self) -> list[TablePlan]:
        return list(self.root.walk())


def column_type(kind: t.FieldType) -> str:
    """The column type of a scalar field type (objects and arrays are ``json`` here)."""
    if isinstance(kind, t.String):
        return "string"
    if isinstance(kind, t.Boolean):
        return "boolean"
    if isinstance(kind, t.Integer):
        return "bigint"
    if isinstance(kind, t.Number):
        return "double"
    if isinstance(kind, t.Date):
        return "date"
    if isinstance(kind, (t.TimestampWithTz, t.TimestampWithoutTz)):
        return "timestamp"
    if isinstance(kind, (t.TimeWithTz, t.TimeWithoutTz)):
        return "string"
    if isinstance(kind, t.Union):
        names = {option.name for option in kind.options}
        if names & {"object", "array", "unknown"}:
            return "json"
        return "double" if names <= {"integer", "number"} else "string"
    return "json"


def _child_kind(kind: t.FieldType) -> str | None:
    if isinstance(kind, t.Object):
        return "object"
    if isinstance(kind, t.Array):
        return "array" if isinstance(kind.items, t.Object) else "scalars"
    return None


class _Planner:
    def __init__(self, dialect: str, tables: naming.NameSet):
        self.dialect = dialect
        self.tables = tables
        self.limit = naming.identifier_limit(dialect)

    def meta(self, name: str) -> str:
        return naming.column_name(name, self.dialect)

    def table(self, name: str, kind: str, key: str | None, json_path: tuple[str, ...], node: t.FieldType,
              short: str, parent_short: str | None,
              root_extra: Sequence[str] = ()) -> tuple[TablePlan, list[tuple[str, t.FieldType, str]]]:
        columns_taken = naming.NameSet()
        hashid = columns_taken.claim(self.meta(f"_airbyte_{short}_hashid"), self.limit)
        foreign = (columns_taken.claim(self.meta(f"_airbyte_{parent_short}_foreign_hashid"), self.limit)
                   if parent_short is not None else None)
        ab_id, emitted_at, normalized_at = (columns_taken.claim(self.meta(n), self.limit)
                                            for n in (AB_ID, EMITTED_AT, NORMALIZED_AT))
        for extra in root_extra:
            columns_taken.claim(self.meta(extra), self.limit)
        columns: list[Column] = []
        nested: list[tuple[str, t.FieldType, str]] = []
        if kind == "scalars":
            assert isinstance(node, t.Array)
            columns.append(Column(columns_taken.claim(self.meta("data"), self.limit), "data",
                                  column_type(node.items) if _child_kind(node.items) is None else "json"))
        else:
            record = node.items if isinstance(node, t.Array) else node
            properties = record.properties if isinstance(record, t.Object) else ()
            for prop, prop_type in properties:
                child = _child_kind(prop_type)
                if child is None:
                    columns.append(Column(columns_taken.claim(naming.column_name(prop, self.dialect), self.limit),
                                          prop, column_type(prop_type)))
                else:
                    nested.append((prop, prop_type, child))
        return TablePlan(name=name, kind=kind, key=key, json_path=json_path, columns=tuple(columns),
                         children=(), hashid=hashid, foreign=foreign, ab_id=ab_id, emitted_at=emitted_at,
                         normalized_at=normalized_at), nested

    def children(self, plan: TablePlan, nested: list, short: str) -> TablePlan:
        made = []
        for prop, prop_type, kind in nested:
            name = self.tables.claim(naming.child_table_name(plan.json_path, prop, self.dialect),
                                     naming.table_limit(self.dialect))
            child_short = naming.normalize_identifier(prop, self.dialect)
            child, grand = self.table(name, kind, prop, plan.json_path + (prop,), prop_type, child_short, short)
            made.append(self.children(child, grand, child_short))
        return replace(plan, children=tuple(made))


def plan_catalog(entries: Sequence[Mapping[str, Any]], dialect: str,
                 destination_sync_mode: str | None = None, *, dedup: bool = False) -> list[StreamPlan]:
    """A :class:`StreamPlan` per entry of a ConfiguredAirbyteCatalog (``{"stream": ..., "sync_mode": ...}``).

    ``destination_sync_mode`` replaces every entry's own when given; an entry
    without one gets Airbyte's default (:func:`framework.sync_modes.default_mode`:
    full refresh overwrites, incremental appends). ``dedup`` (``--dedup``) makes
    the incremental streams with a primary key ``append_dedup``.
    """
    check_forced(destination_sync_mode, dedup)
    ordered = sorted(entries, key=lambda e: str(e["stream"]["name"]))
    tables = naming.NameSet()
    limit = naming.table_limit(dialect)
    roots = []
    for entry in ordered:  # stream tables first: they keep their names before any child table
        name = str(entry["stream"]["name"])
        table = tables.claim(naming.root_table_name(name, dialect), limit)
        scd = tables.claim(naming.normalize_identifier(table + "_scd", dialect), None)
        raw = tables.claim(naming.normalize_identifier("_airbyte_raw_" + table, dialect), None)
        roots.append((table, scd, raw))
    plans = []
    for entry, (root_name, scd, raw) in zip(ordered, roots):
        stream = entry["stream"]
        name = str(stream["name"])
        schema = stream.get("json_schema") or {}
        record_type = t.parse_schema(schema, stream=name)
        planner = _Planner(dialect, tables)
        short = naming.normalize_identifier(name, dialect)
        root, nested = planner.table(root_name, "root", None, (name,), record_type, short, None, SCD_COLUMNS)
        root = planner.children(root, nested, short)
        incremental = entry.get("sync_mode") == "incremental"
        keyed = bool(entry.get("primary_key") or stream.get("source_defined_primary_key"))
        mode = destination_sync_mode or str(entry.get("destination_sync_mode") or default_mode(incremental, keyed))
        if dedup and mode == "append" and incremental and keyed:
            mode = "append_dedup"
        if mode not in ("append", "overwrite", "append_dedup"):
            raise ConfigError(f"stream `{name}`: destination sync mode {mode!r} is not known; "
                              "use append, overwrite or append_dedup")
        by_key = {c.key: c for c in root.columns}
        primary_key = tuple(_top_column(name, path, by_key, "primary key")
                            for path in (entry.get("primary_key") or stream.get("source_defined_primary_key") or []))
        cursor_path = list(entry.get("cursor_field") or stream.get("default_cursor_field") or [])
        cursor = _top_column(name, cursor_path, by_key, "cursor") if cursor_path else None
        if mode == "append_dedup" and not primary_key:
            raise ConfigError(f"stream `{name}` has no primary key, so its records cannot be deduplicated; "
                              "give the stream a `primary_key`, or use the `append` destination sync mode")
        plans.append(StreamPlan(
            stream=name, namespace=str(stream.get("namespace") or ""), json_schema=schema, record_type=record_type,
            root=root, raw_table=raw, scd_table=scd, sync_mode=str(entry.get("sync_mode") or "full_refresh"),
            destination_sync_mode=mode, primary_key=primary_key, cursor=cursor, deleted_at=by_key.get(DELETED_AT)))
    return plans


def _top_column(stream: str, path: Any, by_key: Mapping[str, Column], what: str) -> Column:
    parts = [path] if isinstance(path, str) else list(path)
    if len(parts) != 1 or parts[0] not in by_key:
        raise ConfigError(f"stream `{stream}`: the {what} {'.'.join(map(str, parts))!r} is not a top-level scalar "
                          f"field of the stream's schema; normalization needs a top-level {what} field")
    return by_key[parts[0]]


__all__ = [
    "AB_ID",
    "ACTIVE_ROW",
    "DATA",
    "DELETED_AT",
    "EMITTED_AT",
    "END_AT",
    "NORMALIZED_AT",
    "SCALAR_TYPES",
    "SCD_COLUMNS",
    "START_AT",
    "UNIQUE_KEY",
    "UNIQUE_KEY_SCD",
    "Column",
    "StreamPlan",
    "TablePlan",
    "column_type",
    "plan_catalog",
]
