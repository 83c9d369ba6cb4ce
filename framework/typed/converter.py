"""Records of one stream to typed Arrow batches (and Avro records): :class:`RecordConverter`.

Compiled once per stream, then ``convert`` takes a list of records (JSON
objects) and returns a ``pyarrow.RecordBatch`` with the schema of
:func:`~framework.typed.arrow.arrow_schema`: a random UUID per record,
the extraction time and generation id given, and ``_airbyte_meta`` with the
sync id and the changes: those the source reported (``source_changes``, per
record, carried first) and one ``{field, NULLED, reason}`` per value that did
not fit its type (see :mod:`~framework.typed.values`). Undocumented
fields of objects with properties are dropped without a change. Converting
never fails because of a value.
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
from framework.typed.raw_ids import random_uuids

_CHANGE_FIELDS = list(a.CHANGE_TYPE)
_META_FIELDS = list(a.META_TYPE)


class RecordConverter:
    """Types the records of one stream; build it once per stream (compiling is the costly part)."""

    def __init__(self, record_type: t.FieldType, *, stream: str):
        self.stream = stream
        self.record_type = record_type
        self.schema: pa.Schema = a.arrow_schema(record_type, stream)
        self._fields = a.data_fields(record_type, stream)
        self._whole_record = not isinstance(record_type, t.Object)
        self._names = [name for name, _ in self._fields]
        self._columns = [(column_for(kind), TopField(name)) for name, kind in self._fields]
        self._avro: AvroSchema | None = None
        #: How many values the last :meth:`convert` nulled.
        self.last_nulled = 0

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
        changes = Changes()
        data = []
        keys = self._names if self._whole_record else lookup_keys(records, self._names)
        for key, (column, where) in zip(keys, self._columns):
            values = list(records) if self._whole_record else list(map(dict.get, records, repeat(key)))
            data.append(column.build(values, where, changes))
        self.last_nulled = changes.count
        envelope = [
            random_uuids(count),
            pa.repeat(pa.scalar(extracted_at_ms, a.EXTRACTED_AT_TYPE), count),
            pa.repeat(pa.scalar(generation_id, pa.int64()), count),
            _meta(count, sync_id, changes.rows, source_changes),
        ]
        return pa.RecordBatch.from_arrays(envelope + data, schema=self.schema)

    def to_avro_records(self, batch: pa.RecordBatch) -> Iterator[dict]:
        """The records of a typed batch as dicts for fastavro with the schema of :attr:`avro`.

        Union values come as fastavro's ``(branch, value)`` tuples, so a writer
        must leave ``disable_tuple_notation`` off.
        """
        return iter(avro_records(batch, self.avro))


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
