"""The columns the ``evolve`` schema drift policy added to streams, kept next to the output.

``_airbyte_state/schema_drift.json``, written atomically like the state::

    {"streams": {"events": {"evolved": {"priority": "integer", "tags": "string"}}}}

Each stream's columns are in the order they were added (a column's kind only
widens: ``integer`` to ``number``, anything else to ``string``;
:mod:`framework.typed.drift`). The driver records them before the state that
covers the records which brought them (:meth:`EvolvedColumns.record`), so the
next sync types them the same way from its first record, and it adds them to
the stream's entry in the landed catalog (``_airbyte_state/catalog.json``) as
nullable properties, so that normalization makes them columns too. A file the
state does not cover yet may add columns this record lacks only if the driver
died between the two; the next sync then finds them again.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import orjson

from framework.errors import StateError, StorageError
from framework.storage.state_store import CatalogStore

if TYPE_CHECKING:
    from framework.storage.objects import Storage

DRIFT_KEY = "_airbyte_state/schema_drift.json"

Columns = tuple[tuple[str, str], ...]


def load_evolved(storage: Storage, key: str = DRIFT_KEY) -> dict[str, Columns]:
    """Every stream's evolved columns (name, kind), in order; empty when none were recorded."""
    raw = storage.read(key)
    if raw is None:
        return {}
    try:
        streams = orjson.loads(raw)["streams"]
        return {str(name): tuple((str(column), str(kind)) for column, kind in (entry.get("evolved") or {}).items())
                for name, entry in streams.items()}
    except (orjson.JSONDecodeError, KeyError, TypeError, AttributeError) as exc:
        raise StateError(f"{storage.uri(key)}: the record of evolved columns is damaged ({exc}); fix it, or move "
                         "it away and the next sync adds the columns again as it meets the fields") from None


def save_evolved(storage: Storage, recorded: Mapping[str, Columns], key: str = DRIFT_KEY) -> None:
    """Replace the record, atomically; :class:`StorageError` when it cannot be written (the old one kept)."""
    document = {"streams": {name: {"evolved": dict(columns)} for name, columns in recorded.items() if columns}}
    try:
        storage.write_atomic(key, orjson.dumps(document, option=orjson.OPT_INDENT_2),
                             {"content-type": "application/json"})
    except OSError as exc:
        raise StorageError(f"the evolved columns could not be saved to {key} ({exc.strerror or exc}); the state "
                           "was not moved either, so the next run reads those records again") from None


def with_evolved_columns(entry: Mapping[str, Any], columns: Iterable[tuple[str, str]],
                         evolved_before: Iterable[str] = ()) -> dict[str, Any]:
    """A catalog entry (a ConfiguredAirbyteStream) whose schema also has the evolved ``columns`` as nullable
    properties; a property the schema declares stays as declared (those named in ``evolved_before``, added
    earlier, take their kind now)."""
    before = set(evolved_before)
    columns = tuple(columns)
    if not columns:
        return dict(entry)
    stream = dict(entry["stream"])
    schema = dict(stream.get("json_schema") or {})
    properties = dict(schema.get("properties") or {})
    if not properties:  # a stream landed whole, as `_airbyte_data`: no columns to add to
        return dict(entry)
    for name, kind in columns:
        if name not in properties or name in before:
            properties[name] = {"type": ["null", kind]}
    schema["properties"] = properties
    stream["json_schema"] = schema
    return {**entry, "stream": stream}


class EvolvedColumns:
    """The driver's record of evolved columns during a sync: loaded once, saved when a stream's grow."""

    def __init__(self, storage: Storage):
        self.storage = storage
        self.recorded = load_evolved(storage)

    def of(self, stream: str) -> Columns:
        return self.recorded.get(stream, ())

    def record(self, stream: str, columns: Columns) -> bool:
        """Take the columns a stream's tasks typed (they started from the record, so a kind there is the same
        or wider); save them and the catalog's entry when they differ from the record. True when saved."""
        before = self.of(stream)
        merged = dict(before)
        for name, kind in columns:  # the tasks started from the record: a kind only widens, order stays
            merged[name] = kind
        columns = tuple(merged.items())
        if columns == before:
            return False
        self.recorded[stream] = columns
        save_evolved(self.storage, self.recorded)
        catalog = CatalogStore(self.storage)
        entry = next((e for e in catalog.load() if e.get("stream", {}).get("name") == stream), None)
        if entry is not None:
            # the properties this record added (as it added them); a property the schema declares stays
            properties = (entry["stream"].get("json_schema") or {}).get("properties") or {}
            ours = [name for name, kind in before if properties.get(name) == {"type": ["null", kind]}]
            catalog.merge([with_evolved_columns(entry, columns, ours)])
        return True


__all__ = ["DRIFT_KEY", "EvolvedColumns", "load_evolved", "save_evolved", "with_evolved_columns"]
