"""Records of one stream to typed Arrow batches (and Avro records): :class:`RecordConverter`.

Compiled once per stream, then ``convert`` takes a list of records (JSON
objects) and returns a ``pyarrow.RecordBatch`` with the schema of
:func:`~framework.typed.arrow.arrow_schema`: a random UUID per record,
the extraction time and generation id given, and ``_airbyte_meta`` with the
sync id and the changes: those the source reported (``source_changes``, per
record, carried first) and one ``{field, NULLED, reason}`` per value that did
not fit its type (see :mod:`~framework.typed.values`). Undocumented
fields of objects with properties are counted (:attr:`RecordConverter.last_drift`)
and, by the stream's schema drift policy (:mod:`~framework.typed.drift`),
dropped without a change (the default, the seed's rule), kept as JSON text in
``_airbyte_additional_properties``, or typed as columns of their own after the
declared ones (``evolve``: the batch's :attr:`~RecordConverter.schema` then grows,
and the writer starts a new file). Converting never fails because of a value.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from itertools import accumulate, repeat
from typing import Any

import pyarrow as pa

import framework.typed.arrow as a
import framework.typed.types as t
from framework.typed.avro import AvroSchema, avro_records, build_avro_schema
from framework.typed.columns import Changes, TopField, column_for, lookup_keys
from framework.typed.drift import ADDITIONAL_PROPERTIES, DEFAULT_POLICY, Drift, check_policy, field_type, infer_kind
from framework.typed.envelope import RESERVED_PREFIX
from framework.typed.errors import SchemaConflictError
from framework.typed.raw_ids import random_uuids
from framework.typed.values import json_text

_CHANGE_FIELDS = list(a.CHANGE_TYPE)
_META_FIELDS = list(a.META_TYPE)


class RecordConverter:
    """Types the records of one stream; build it once per stream (compiling is the costly part).

    ``drift`` is the stream's schema drift policy (``drop``, ``keep`` or ``evolve``) and ``evolved`` the
    columns earlier syncs added under ``evolve`` (name and kind, in order): the batches have them from the
    first record on. :attr:`record_type` is the type of what is written (the declared fields, then the
    ``keep`` column or the evolved ones); :attr:`declared_type` the schema's.
    """

    def __init__(self, record_type: t.FieldType, *, stream: str, drift: str = DEFAULT_POLICY,
                 evolved: Sequence[tuple[str, str]] = ()):
        self.stream = stream
        self.declared_type = record_type
        self.drift = check_policy(drift, f"stream {stream!r}")
        self._fields = a.data_fields(record_type, stream)
        self._whole_record = not isinstance(record_type, t.Object)
        self._names = [name for name, _ in self._fields]
        self._declared = frozenset(self._names)
        self._columns = [(column_for(kind, name), TopField(name)) for name, kind in self._fields]
        self._keep = self.drift == "keep"
        # evolve: the columns added so far, in order, by kind; not for a stream landed whole (_airbyte_data)
        self._evolving = self.drift == "evolve" and not self._whole_record
        self.evolved: dict[str, str] = {}
        if self._keep and ADDITIONAL_PROPERTIES in self._declared:
            raise SchemaConflictError(stream=stream, field=ADDITIONAL_PROPERTIES, first="a field of the stream",
                                      second="the column the keep policy adds",
                                      hint="rename the field, or use the schema drift policy drop or evolve")
        # a field the schema has come to declare since it was added is typed as declared
        self._set_type({name: kind for name, kind in evolved if name not in self._declared} if self._evolving else {})
        #: How many values the last :meth:`convert` nulled.
        self.last_nulled = 0
        #: The undeclared fields of the last :meth:`convert`'s records (whatever the policy).
        self.last_drift = Drift()

    def _set_type(self, evolved: dict[str, str]) -> None:
        """The written type and schema for the declared fields plus ``evolved`` (or the keep column)."""
        self.evolved = evolved
        extra: tuple[tuple[str, t.FieldType], ...] = ()
        if self._keep:
            extra = ((ADDITIONAL_PROPERTIES, t.STRING),)
        elif evolved:
            extra = tuple((name, field_type(kind)) for name, kind in evolved.items())
        if extra:
            self.record_type: t.FieldType = t.Object(tuple(self._fields) + extra)
            self._extra_columns = [(column_for(kind), TopField(name)) for name, kind in extra]
        else:
            self.record_type = self.declared_type
            self._extra_columns = []
        self.schema: pa.Schema = a.arrow_schema(self.record_type, self.stream)
        self._avro: AvroSchema | None = None

    @classmethod
    def from_json_schema(cls, schema: Mapping[str, Any], *, stream: str) -> RecordConverter:
        return cls(t.parse_schema(schema, stream=stream), stream=stream)

    @property
    def avro(self) -> AvroSchema:
        """The Avro schema of the same records, with the names it had to change."""
        if self._avro is None:
            self._avro = build_avro_schema(self.record_type, self.stream)
        return self._avro

    def convert(self, records: Sequence[dict], *, extracted_at_ms: int, generation_id: int, sync_id: int,
                source_changes: Sequence[Sequence[Mapping[str, Any]] | None] | None = None) -> pa.RecordBatch:
        """A typed batch of ``records`` (dicts, not changed); ``source_changes[i]`` belongs to record ``i``."""
        count = len(records)
        if source_changes is not None and len(source_changes) != count:
            raise ValueError(f"source_changes has {len(source_changes)} entries for {count} records; "
                             "pass one entry (None for no changes) per record")
        changes = Changes(extras=self._keep)
        data = []
        keys = self._names if self._whole_record else lookup_keys(records, self._names)
        # the keys of the whole page in one set, made in C: a third of the time of a check per record
        if not self._whole_record and not set().union(*records) <= self._declared:
            changes.undeclared_fields(records, self._declared, "", None)
        for key, (column, where) in zip(keys, self._columns):
            values = list(records) if self._whole_record else list(map(dict.get, records, repeat(key)))
            data.append(column.build(values, where, changes))
        if self._keep:
            extras = changes.extras or {}
            data.append(pa.array([_extras_text(extras[row]) if row in extras else None for row in range(count)],
                                 pa.string()))
        elif self._evolving:
            if changes.drifted:
                self._evolve(records)
            for column, where in self._extra_columns:
                data.append(column.build(list(map(dict.get, records, repeat(where.name))), where, changes))
        self.last_nulled = changes.count
        self.last_drift = Drift(changes.undeclared, len(changes.drifted)) if changes.drifted else _NO_DRIFT
        envelope = [
            random_uuids(count),
            pa.repeat(pa.scalar(extracted_at_ms, a.EXTRACTED_AT_TYPE), count),
            pa.repeat(pa.scalar(generation_id, pa.int64()), count),
            _meta(count, sync_id, changes.rows, source_changes),
        ]
        return pa.RecordBatch.from_arrays(envelope + data, schema=self.schema)

    def _evolve(self, records: Sequence[dict]) -> None:
        """Add (or widen) the columns of the undeclared top-level fields of ``records``, in the order first
        met; the schema changes only when a column is new or its kind widens."""
        declared, evolved = self._declared, dict(self.evolved)
        names = dict.fromkeys(key for record in records if not declared.issuperset(record)
                              for key in record if key not in declared)
        for name in names:
            if name.__class__ is not str or name.startswith(RESERVED_PREFIX):  # Airbyte's names: dropped
                continue
            kind = infer_kind(list(map(dict.get, records, repeat(name))), evolved.get(name))
            if kind is not None:
                evolved[name] = kind
        if evolved != self.evolved:
            self._set_type(evolved)

    def to_avro_records(self, batch: pa.RecordBatch) -> Iterator[dict]:
        """The records of a typed batch as dicts for fastavro with the schema of :attr:`avro`.

        Union values come as fastavro's ``(branch, value)`` tuples, so a writer
        must leave ``disable_tuple_notation`` off.
        """
        return iter(avro_records(batch, self.avro))


_NO_DRIFT = Drift()


def _extras_text(found: dict[str, Any]) -> str:
    """The JSON object text of one record's undeclared fields (text Parquet can hold, whatever they are)."""
    try:
        return json_text(found)
    except Exception:  # noqa: BLE001 - a value JSON cannot hold: its repr, rather than losing the others
        return json_text({key: value if isinstance(value, (str, int, float, bool, type(None))) else repr(value)
                          for key, value in found.items()})


def _meta(count: int, sync_id: int, ours: dict[int, list[tuple[str, str, str]]],
          source_changes: Sequence[Sequence[Mapping[str, Any]] | None] | None) -> pa.StructArray:
    rows: dict[int, list[tuple[str, str, str]]] = {}
    if source_changes:
        for row, reported in enumerate(source_changes):
            if reported:
                rows[row] = [(str(c.get("field")), str(c.get("change")), str(c.get("reason"))) for c in reported]
    for row, made in ours.items():
        rows.setdefault(row, []).extend(made)
    if rows:
        offsets = list(accumulate((len(rows.get(row, ())) for row in range(count)), initial=0))
        flat = [change for row in sorted(rows) for change in rows[row]]
        fields, kinds, reasons = (list(column) for column in zip(*flat))
        items = pa.StructArray.from_arrays([pa.array(fields, pa.string()), pa.array(kinds, pa.string()),
                                            pa.array(reasons, pa.string())], fields=_CHANGE_FIELDS)
        offsets_array = pa.array(offsets, pa.int32())
    else:
        items = pa.StructArray.from_arrays([pa.array([], pa.string())] * 3, fields=_CHANGE_FIELDS)
        offsets_array = pa.Array.from_buffers(pa.int32(), count + 1, [None, pa.py_buffer(bytes(4 * (count + 1)))])
    changes = pa.ListArray.from_arrays(offsets_array, items, type=a.CHANGES_TYPE)
    sync_ids = pa.repeat(pa.scalar(sync_id, pa.int64()), count)
    return pa.StructArray.from_arrays([sync_ids, changes], fields=_META_FIELDS)
