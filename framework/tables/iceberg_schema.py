"""How a stream's new Arrow schema evolves an Iceberg table's: union by name, never a failed sync.

A column (or nested field) the table lacks is added, nullable. A type Iceberg can widen (int to long,
float to double, a decimal to a wider precision) is widened. A narrower type than the table's (an int
column into a long one) needs nothing: readers promote it. A required column given as nullable becomes
optional. Anything else (string to long, int to double, which Iceberg does not allow) is *incompatible*:
the plan lists it so the caller writes that column's values as nulls of the table's type (with a change in
`_airbyte_meta`, as the S3 typing rules do) instead of failing the sync. A column the stream dropped stays
in the table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from framework.tables.base import SchemaChange

if TYPE_CHECKING:
    import pyarrow as pa
    from pyiceberg.schema import Schema
    from pyiceberg.table.update.schema import UpdateSchema
    from pyiceberg.types import IcebergType, StructType

Path = tuple[str, ...]


@dataclass(frozen=True)
class _Step:
    kind: Literal["add", "widen", "optional"]
    path: Path
    type: IcebergType | None = None


@dataclass(frozen=True)
class EvolutionPlan:
    """What a commit does to the table's columns, and the columns it cannot take as they are."""

    steps: tuple[_Step, ...] = ()
    widened: tuple[tuple[str, str, str], ...] = ()
    incompatible: tuple[tuple[str, str, str], ...] = ()  # (column, table's type, stream's type)

    @property
    def added(self) -> tuple[str, ...]:
        return tuple(".".join(step.path) for step in self.steps if step.kind == "add")

    def schema_change(self) -> SchemaChange:
        return SchemaChange(added=self.added, widened=self.widened)

    def apply(self, update: UpdateSchema) -> None:
        """Stage the plan's changes on a pyiceberg schema update (added, widened, made optional)."""
        for step in self.steps:
            if step.kind == "add":
                assert step.type is not None
                update.add_column(step.path, step.type)
            elif step.kind == "widen":
                assert step.type is not None
                update.update_column(step.path, field_type=step.type)
            else:
                update.make_column_optional(step.path)


def iceberg_schema_of(schema: pa.Schema) -> Schema:
    """An Arrow schema in Iceberg's types (ids not assigned): timestamps in ms or us are `timestamp(tz)`."""
    from pyiceberg.io.pyarrow import _pyarrow_to_schema_without_ids

    return _pyarrow_to_schema_without_ids(schema)


def plan_evolution(table: Schema, incoming: pa.Schema) -> EvolutionPlan:
    """The plan that makes `table` (the table's Iceberg schema) take files written with `incoming`."""
    planner = _Planner()
    planner.struct(table.as_struct(), iceberg_schema_of(incoming).as_struct(), ())
    return EvolutionPlan(tuple(planner.steps), tuple(planner.widened), tuple(planner.incompatible))


class _Planner:
    def __init__(self) -> None:
        self.steps: list[_Step] = []
        self.widened: list[tuple[str, str, str]] = []
        self.incompatible: list[tuple[str, str, str]] = []

    def struct(self, table: StructType, incoming: StructType, prefix: Path) -> None:
        by_name = {field.name: field for field in table.fields}
        for field in incoming.fields:
            path = (*prefix, field.name)
            existing = by_name.get(field.name)
            if existing is None:
                self.steps.append(_Step("add", path, field.field_type))
                continue
            self.type(existing.field_type, field.field_type, path)
            if existing.required and not field.required:
                self.steps.append(_Step("optional", path))

    def type(self, old: IcebergType, new: IcebergType, path: Path) -> None:
        from pyiceberg.types import ListType, MapType, StructType

        name = ".".join(path)
        if isinstance(old, StructType) and isinstance(new, StructType):
            self.struct(old, new, path)
        elif isinstance(old, ListType) and isinstance(new, ListType):
            self.type(old.element_type, new.element_type, (*path, "element"))
        elif isinstance(old, MapType) and isinstance(new, MapType):
            self.type(old.key_type, new.key_type, (*path, "key"))
            self.type(old.value_type, new.value_type, (*path, "value"))
        elif old.is_primitive and new.is_primitive:
            if old == new or _promotes(new, old):  # the same, or narrower: readers promote the file's type
                return
            if _promotes(old, new):
                self.steps.append(_Step("widen", path, new))
                self.widened.append((name, str(old), str(new)))
            else:
                self.incompatible.append((name, str(old), str(new)))
        else:
            self.incompatible.append((name, str(old), str(new)))


def _promotes(file_type: IcebergType, read_type: IcebergType) -> bool:
    from pyiceberg.exceptions import ResolveError
    from pyiceberg.schema import promote
    from pyiceberg.types import BinaryType, StringType

    if {type(file_type), type(read_type)} == {StringType, BinaryType}:
        return False  # pyiceberg reads one as the other; a table's column does not change between them
    try:
        promote(file_type, read_type)
    except ResolveError:
        return False
    return True
