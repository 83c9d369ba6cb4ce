"""JSON values to Arrow arrays, a column at a time: :func:`column_for` compiles a field type once.

Each compiled :class:`Column` turns the values one field has in a batch of
records (a Python list, ``None`` for missing) into an Arrow array of the
field's type. Work is done column by column so that the common case runs in
C: a column whose values all have the right Python type goes to
``pyarrow.array`` as it is (pyarrow checks ranges), dates and timestamps are
parsed by Arrow's ISO 8601 parser over the whole column (see :class:`Parsed`;
Python's ``fromisoformat`` where Arrow cannot), objects are split into their fields
with ``dict.get`` over the whole column, arrays are flattened into one list of
items. Only when that fast path meets a value that does not fit does the
column take the slow path, value by value, where each value that does not
fit becomes a null and a change in :class:`Changes`.

Where a value sits is worked out only for the values that are nulled: a
location object maps a position in a column back to the record (its row) and
the field path, ``"."`` between names and ``"[i]"`` for array items.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import date, datetime
from itertools import accumulate, chain, repeat
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.compute as pc

import framework.typed.types as t
import framework.typed.values as v
from framework.typed.arrow import TIMESTAMP_TYPE, arrow_type

NoneType = type(None)
NULLED = "NULLED"
_NO_FIELDS: dict = {}
_NO_ITEMS: tuple = ()


class Changes:
    """The changes made to a batch: ``rows`` maps a record's row to its ``(field, change, reason)`` tuples.

    Besides, the undeclared fields met (schema drift, :mod:`framework.typed.drift`): ``undeclared`` maps a
    field's schema path (``address.zip``, ``items[].sku``) to how many values had it, ``drifted`` holds
    the rows that had one; ``extras`` (None unless asked for: the ``keep`` policy) maps a row to its
    undeclared fields' values by where they sat (``address.zip``, ``items[0].sku``).
    """

    __slots__ = ("rows", "count", "undeclared", "drifted", "extras")

    def __init__(self, extras: bool = False) -> None:
        self.rows: dict[int, list[tuple[str, str, str]]] = {}
        self.count = 0
        self.undeclared: dict[str, int] = {}
        self.drifted: set[int] = set()
        self.extras: dict[int, dict[str, Any]] | None = {} if extras else None

    def nulled(self, where: Location, position: int, reason: str) -> None:
        row, field = where.at(position)
        self.rows.setdefault(row, []).append((field, NULLED, reason))
        self.count += 1

    def undeclared_fields(self, objects: Sequence, declared: frozenset, path: str, where: Location | None) -> None:
        """Note the keys of ``objects`` (dicts, the values of one object field) that ``declared`` lacks;
        ``path`` is the field's schema path (empty at the top level), ``where`` locates them (None: the
        records themselves, position ``i`` being row ``i``)."""
        issuperset = declared.issuperset
        drifting = [position for position, fits in enumerate(map(issuperset, objects)) if not fits]
        if not drifting:
            return
        counts, extras, prefix = self.undeclared, self.extras, path + "." if path else ""
        if extras is None:  # counts only: the records of one shape (their keys, in order) are counted at once
            for shape, number in Counter(map(tuple, map(objects.__getitem__, drifting))).items():
                for key in shape:
                    if key not in declared:
                        name = prefix + str(key)
                        counts[name] = counts.get(name, 0) + number
            self.drifted.update(drifting if where is None else (where.at(p)[0] for p in drifting))
            return
        for position in drifting:
            value = objects[position]
            row, located = (position, "") if where is None else where.at(position)
            self.drifted.add(row)
            found = extras.setdefault(row, {})
            at = located + "." if located else ""
            for key in value:
                if key not in declared:
                    name = prefix + str(key)
                    counts[name] = counts.get(name, 0) + 1
                    found[at + str(key)] = value[key]


# ------------------------------------------------------------------ locations


class Location(Protocol):
    def at(self, position: int) -> tuple[int, str]:
        """The row of the record and the field path of the value at ``position`` of a column."""


class TopField:
    """A top-level field: position ``i`` is record ``i``."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def at(self, position: int) -> tuple[int, str]:
        return position, self.name


class ChildField:
    """A field of the objects at ``parent``: same positions."""

    __slots__ = ("parent", "name")

    def __init__(self, parent: Location, name: str):
        self.parent, self.name = parent, name

    def at(self, position: int) -> tuple[int, str]:
        row, path = self.parent.at(position)
        return row, f"{path}.{self.name}"


class Items:
    """The items of the arrays at ``parent``, flattened; ``offsets[p]`` is where array ``p`` starts."""

    __slots__ = ("parent", "offsets")

    def __init__(self, parent: Location, offsets: list[int]):
        self.parent, self.offsets = parent, offsets

    def at(self, position: int) -> tuple[int, str]:
        owner = bisect_right(self.offsets, position) - 1
        row, path = self.parent.at(owner)
        return row, f"{path}[{position - self.offsets[owner]}]"


# ------------------------------------------------------------------ columns


class Column(Protocol):
    arrow_type: pa.DataType

    def build(self, values: list, where: Location, changes: Changes) -> pa.Array:
        """The Arrow array of ``values``; values that do not fit are nulled and recorded."""


def convert_each(values: Sequence, convert: Callable[[Any], Any], where: Location, changes: Changes) -> list:
    """The slow path: ``convert`` each value that is not None; a failure nulls the value."""
    out: list = []
    append = out.append
    for position, value in enumerate(values):
        if value is None:
            append(None)
            continue
        try:
            append(convert(value))
        except Exception as error:  # noqa: BLE001 - any failure of one value nulls that value, never the batch
            append(None)
            changes.nulled(where, position, v.reason_of(error))
    return out


class Direct:
    """Strings, booleans, integers, numbers: values of the ``kinds`` Python types go to pyarrow as they are."""

    def __init__(self, arrow_type: pa.DataType, kinds: frozenset, convert: Callable[[Any], Any]):
        self.arrow_type, self.kinds, self.convert = arrow_type, kinds, convert

    def build(self, values: list, where: Location, changes: Changes) -> pa.Array:
        if set(map(type, values)) <= self.kinds:
            try:
                built = pa.array(values, self.arrow_type)
            except Exception:  # noqa: BLE001 - out of range, not valid UTF-8...: sort it out value by value
                pass
            else:
                # NaN and Infinity (Airbyte's JSON reader takes them) are nulled with a change, value by value;
                # finding them is one vectorised pass over a double column
                if not (pa.types.is_floating(built.type) and pc.any(pc.invert(pc.is_finite(built))).as_py()):
                    return built
        return pa.array(convert_each(values, self.convert, where, changes), self.arrow_type)


class Mapped:
    """Values converted one by one (dates, times, JSON text); ``bulk`` is a faster pass for present values."""

    def __init__(self, arrow_type: pa.DataType, convert: Callable[[Any], Any],
                 bulk: Callable[[list], list] | None = None):
        self.arrow_type, self.convert = arrow_type, convert
        self.bulk = bulk or (lambda present: list(map(convert, present)))

    def build(self, values: list, where: Location, changes: Changes) -> pa.Array:
        try:
            present = [value for value in values if value is not None]
            converted = self.bulk(present)
            if len(present) < len(values):
                it = iter(converted)
                converted = [None if value is None else next(it) for value in values]
        except Exception:  # noqa: BLE001 - some value does not fit: find it, value by value
            converted = convert_each(values, self.convert, where, changes)
        return pa.array(converted, self.arrow_type)


class Struct:
    """An object with properties: one child column per property; other keys are dropped (and noted in
    ``changes``: :meth:`Changes.undeclared_fields`). ``path`` is the field's schema path."""

    def __init__(self, kind: t.Object, path: str = ""):
        self.arrow_type = arrow_type(kind)
        self.fields = list(self.arrow_type)
        prefix = path + "." if path else ""
        self.children = [(name, column_for(child, prefix + name)) for name, child in kind.properties]
        self.names = [name for name, _ in kind.properties]
        self.declared = frozenset(self.names)
        self.path = path

    def build(self, values: list, where: Location, changes: Changes) -> pa.Array:
        kinds = set(map(type, values))
        if not kinds <= {dict, NoneType}:
            values = _only(dict, values, where, changes)  # dict subclasses are kept
            kinds.add(NoneType)
        mask = None
        rows = values
        if NoneType in kinds:
            mask = pa.array([value is None for value in values], pa.bool_())
            rows = [_NO_FIELDS if value is None else value for value in values]
        if not set().union(*rows) <= self.declared:  # fields the schema does not declare: noted (one C pass)
            changes.undeclared_fields(rows, self.declared, self.path, where)
        children = [column.build(list(map(dict.get, rows, repeat(key))), ChildField(where, name), changes)
                    for key, (name, column) in zip(lookup_keys(rows, self.names), self.children)]
        return pa.StructArray.from_arrays(children, fields=self.fields, mask=mask)


class List:
    """An array with typed items: the items of all arrays go through the item column at once."""

    def __init__(self, kind: t.Array, path: str = ""):
        self.arrow_type = arrow_type(kind)
        self.items = column_for(kind.items, path + "[]")

    def build(self, values: list, where: Location, changes: Changes) -> pa.Array:
        kinds = set(map(type, values))
        if not kinds <= {list, NoneType}:
            values = _only(list, values, where, changes)
            kinds.add(NoneType)
        mask = None
        lists = values
        if NoneType in kinds:
            mask = pa.array([value is None for value in values], pa.bool_())
            lists = [_NO_ITEMS if value is None else value for value in values]
        offsets = list(accumulate(map(len, lists), initial=0))
        items = self.items.build(list(chain.from_iterable(lists)), Items(where, offsets), changes)
        return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), items, type=self.arrow_type, mask=mask)


_JSON_KINDS: dict[type, tuple[type, ...]] = {
    t.Boolean: (bool,), t.Integer: (int, float), t.Number: (float, int), t.String: (str,),
    t.Date: (str,), t.TimeWithTz: (str,), t.TimeWithoutTz: (str,),
    t.TimestampWithTz: (str,), t.TimestampWithoutTz: (str,), t.Object: (dict,), t.Array: (list,),
}


class Disjoint:
    """A union as the seed's disjoint record ``{type, <member>: value}``.

    A value goes to the first member that accepts it, in schema order, except
    that an integer tries an ``integer`` member before a ``number`` one and a
    fractional number the other way round. Members accept only values of
    their own JSON type (see ``values.STRICT``); objects and arrays are then
    converted by the member's column, with the union's location (a nulled
    field inside reads ``u.id``, not ``u.object.id``).
    """

    def __init__(self, kind: t.Union, path: str = ""):
        self.arrow_type = arrow_type(kind)
        self.fields = list(self.arrow_type)
        self.names = [option.name for option in kind.options]
        self.members: list[tuple[pa.DataType, Column | None]] = []
        dispatch: dict[type, list[tuple[int, Callable[[Any], Any] | None]]] = {}
        for index, option in enumerate(kind.options):
            accepts: tuple[type, ...]
            if isinstance(option, (t.Object, t.Array, t.Unknown)):
                self.members.append((arrow_type(option), column_for(option, path)))
                accepts = (dict,) if option.name == "object" else (list,)
                convert = None
            else:
                self.members.append((arrow_type(option), None))
                accepts = _JSON_KINDS[type(option)]
                convert = v.STRICT[type(option)]
            for python_type in accepts:
                dispatch.setdefault(python_type, []).append((index, convert))
        preferred = {int: "integer", float: "number"}
        for number_type, name in preferred.items():
            if number_type in dispatch:
                dispatch[number_type].sort(key=lambda pair: self.names[pair[0]] != name)
        self.dispatch = {key: tuple(value) for key, value in dispatch.items()}

    def build(self, values: list, where: Location, changes: Changes) -> pa.Array:
        count = len(values)
        chosen: list[list] = [[None] * count for _ in self.members]
        names: list[str | None] = [None] * count
        dispatch, member_names = self.dispatch, self.names
        for position, value in enumerate(values):
            if value is None:
                continue
            error: Exception | None = None
            for index, convert in dispatch.get(value.__class__, ()):
                if convert is None:
                    chosen[index][position] = value
                else:
                    try:
                        chosen[index][position] = convert(value)
                    except Exception as failure:  # noqa: BLE001 - try the next member
                        error = error or failure
                        continue
                names[position] = member_names[index]
                break
            else:
                changes.nulled(where, position, v.reason_of(error) if error else v.SERIALIZATION_ERROR)
        children = [pa.array(names, pa.string())]
        for (member_type, column), member_values in zip(self.members, chosen):
            if column is None:
                children.append(pa.array(member_values, member_type))
            else:
                children.append(column.build(member_values, where, changes))
        mask = pa.array([name is None for name in names], pa.bool_())
        return pa.StructArray.from_arrays(children, fields=self.fields, mask=mask)


def lookup_keys(rows: Sequence, names: list[str]) -> list[str]:
    """``names`` as the very key objects of the first row, where it has them; the others as they are.

    A JSON parser gives the records of a page the same key objects (orjson keeps a cache of keys),
    and ``dict.get`` with the key object a dict holds finds it by identity, without comparing the
    texts, which takes a good part off taking a column out of the records (bench/README.md, "Sixth
    pass"). Only keys of type ``str`` are taken: an equal string, so the same hash and the same
    values found in every row. A first row that is not a ``dict`` leaves the names as they are.
    """
    first = rows[0] if rows else None
    if first.__class__ is not dict:
        return names
    own = {key: key for key in first if key.__class__ is str}
    return [own.get(name, name) for name in names]


def _only(python_type: type, values: list, where: Location, changes: Changes) -> list:
    """``values`` with those that are not ``python_type`` (nor None) nulled and recorded."""
    out = []
    for position, value in enumerate(values):
        if value is not None and not isinstance(value, python_type):
            changes.nulled(where, position, v.SERIALIZATION_ERROR)
            value = None
        out.append(value)
    return out


# ------------------------------------------------------------------ fast passes


class Parsed:
    """Dates and timestamps: Arrow's ISO 8601 parser (in C) on the whole column, else :class:`Mapped`.

    Arrow reads a subset of what Python's ``fromisoformat`` reads, with the
    same results, save for the year 0 that only Arrow takes; a column with a
    value Arrow refuses, or starting with ``0000``, goes the Python way, so
    every column gets the same values either way. ``plan`` looks at the text
    column (cheap checks in C) and gives the chain of Arrow types to cast it
    through, or None to go the Python way at once: a cast that fails costs
    about as much as parsing in Python, so it is tried only when it should work.
    """

    def __init__(self, fallback: Mapped, plan: Callable[[pa.StringArray], tuple[pa.DataType, ...] | None]):
        self.arrow_type, self.fallback, self.plan = fallback.arrow_type, fallback, plan

    def build(self, values: list, where: Location, changes: Changes) -> pa.Array:
        if set(map(type, values)) <= {str, NoneType}:
            try:
                text = pa.array(values, pa.string())
            except Exception:  # noqa: BLE001 - not valid UTF-8
                text = None
            if text is not None and not pc.any(pc.starts_with(text, "0000")).as_py():
                chain = self.plan(text)
                if chain is not None:
                    try:
                        result = text
                        for target in chain:
                            result = result.cast(target)
                        return result
                    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                        pass
        return self.fallback.build(values, where, changes)


_UTC, _NAIVE = TIMESTAMP_TYPE, pa.timestamp("us")
# A zone after a time (minutes or seconds before it), so that a date alone does not count as zoned.
_ZONE = r"(?:Z|:\d\d(?:\.\d+)?[+-]\d\d(?::?\d\d)?)$"


def _zones(text: pa.StringArray) -> str:
    """Whether ``all``, ``none`` or only ``some`` of the texts end with a zone (``Z``, ``+02:00``...)."""
    if pc.all(pc.ends_with(text, "Z")).as_py():
        return "all"
    zoned = pc.sum(pc.match_substring_regex(text, _ZONE)).as_py() or 0
    return "none" if zoned == 0 else "all" if zoned == len(text) - text.null_count else "some"


def _plan_timestamps_utc(text: pa.StringArray) -> tuple[pa.DataType, ...] | None:
    return {"all": (_UTC,), "none": (_NAIVE, _UTC)}.get(_zones(text))


def _plan_timestamps_wall(text: pa.StringArray) -> tuple[pa.DataType, ...] | None:
    return (_NAIVE, _UTC) if _zones(text) == "none" else None  # Arrow would convert an offset to UTC


def _plan_dates(text: pa.StringArray) -> tuple[pa.DataType, ...] | None:
    lengths = pc.min_max(pc.binary_length(text)).as_py()
    return (pa.date32(),) if lengths["min"] in (None, 10) and lengths["max"] in (None, 10) else None


def _bulk_timestamps_utc(present: list) -> list:
    epoch, epoch_utc, micro = v.EPOCH, v.EPOCH_UTC, v.MICROSECOND
    return [(d - (epoch if d.tzinfo is None else epoch_utc)) // micro
            for d in map(datetime.fromisoformat, present)]


def _bulk_timestamps_wall(present: list) -> list:
    epoch, micro = v.EPOCH, v.MICROSECOND
    return [((d if d.tzinfo is None else d.replace(tzinfo=None)) - epoch) // micro
            for d in map(datetime.fromisoformat, present)]


def _bulk_dates(present: list) -> list:
    ordinal = v.EPOCH_ORDINAL
    return [d.toordinal() - ordinal for d in map(date.fromisoformat, present)]


_PARSED: dict[type, tuple[Callable[[list], list], Callable[[pa.StringArray], Any]]] = {
    t.TimestampWithTz: (_bulk_timestamps_utc, _plan_timestamps_utc),
    t.TimestampWithoutTz: (_bulk_timestamps_wall, _plan_timestamps_wall),
    t.Date: (_bulk_dates, _plan_dates),
}


_DIRECT: dict[type, tuple[pa.DataType, frozenset, Callable[[Any], Any]]] = {
    t.String: (pa.string(), frozenset({str, NoneType}), v.to_string),
    t.Boolean: (pa.bool_(), frozenset({bool, NoneType}), v.to_boolean),
    t.Integer: (pa.int64(), frozenset({int, NoneType}), v.to_integer),
    t.Number: (pa.float64(), frozenset({float, int, NoneType}), v.to_number),
}


def column_for(kind: t.FieldType, path: str = "") -> Column:
    """The compiled column of a field type; ``path`` (the field's schema path, ``address.zip``,
    ``items[]``) names the undeclared fields its objects hold."""
    direct = _DIRECT.get(type(kind))
    if direct is not None:
        return Direct(*direct)
    if isinstance(kind, t.Object):
        return Struct(kind, path)
    if isinstance(kind, t.Array):
        return List(kind, path)
    if isinstance(kind, t.Union):
        return Disjoint(kind, path)
    if isinstance(kind, t.Unknown):
        return Mapped(pa.string(), v.unknown_converter(kind.kind))
    parsed = _PARSED.get(type(kind))
    if parsed is not None:
        bulk, plan = parsed
        return Parsed(Mapped(arrow_type(kind), v.LENIENT[type(kind)], bulk), plan)
    return Mapped(arrow_type(kind), v.LENIENT[type(kind)])
