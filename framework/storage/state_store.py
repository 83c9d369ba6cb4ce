"""State kept next to the output, so the next run with the same output is incremental.

One JSON document per output (the *connection*), at ``_airbyte_state/state.json``
under the output root::

    {"sync_id": 7, "streams": {"orders": {"state": {...}, "generation_id": 2}}, "updated_at": "..."}

``sync_id`` increases by one with every sync of the connection; a stream's
``generation_id`` increases when it is overwritten (a full refresh that
replaces older files). The document is written atomically (temp + rename, or
a single S3 put).

Spark tasks write their files *staged* (complete, under
``_airbyte_state/staging/sync-<sync id>/<task attempt>/<final key>.staged``, where
no reader looks and no data glob matches; a state of an older version may list
staged names without the suffix: they are moved all the same) and the driver
publishes them. So that state and files move together, the document that first covers a group's units also lists the
moves still to do, ``"publishing": [{"staged": ..., "key": ...}]``; the
driver then moves the files and the next save drops the list. A run that
finds the list (its predecessor died between the two) finishes the moves
first (:func:`finish_publishing`), then removes whatever else is staged
(:func:`clear_staging`: files of tasks that outlived their driver, which no
state covers).

A file that takes the place of others (a rewrite of a stream's files into
one schema, or a compaction: :mod:`framework.formats.rewrite`) is published
the same way, its entry naming the keys it replaces,
``{"staged": ..., "key": ..., "replaces": [...]}``: they are deleted once the
file is moved, so a crash leaves the old files or the new one, never both
for long and never neither.

A publication can only be finished while its staged files are there. When
one is gone and never reached its key (a sync that held no lease on the
output cleared another's staging, or a person did), the stream it belongs to
is set back: the document also keeps the stream's entry as it was before
that save (``"publishing_stream"`` and ``"publishing_before"``), the files of
that publication already moved are deleted, and the entry goes back to what
it was, so the next sync reads those units again, once (:func:`finish_publishing`
returns what was set back). One sync at a time holds an output
(:mod:`framework.storage.lease`), so this is for outputs damaged from outside.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import orjson
from msgspec import Struct, field

from framework.errors import StateError, StorageError
from framework.storage.local import METADATA_FOLDER, LocalStorage
from framework.storage.objects import NothingToMove

if TYPE_CHECKING:
    from framework.components.stream import Stream
    from framework.storage.objects import Storage

STATE_KEY = "_airbyte_state/state.json"
CATALOG_KEY = "_airbyte_state/catalog.json"
#: Where Spark tasks stage their files until the driver publishes them.
STAGING_PREFIX = "_airbyte_state/staging/"


def staging_prefix(sync_id: int, attempt: str) -> str:
    """The key prefix one task attempt of sync ``sync_id`` stages its files under (ends with ``/``)."""
    return f"{STAGING_PREFIX}sync-{sync_id}/{attempt}/"


class ConnectionState(Struct):
    sync_id: int = 0
    streams: dict[str, dict[str, Any]] = field(default_factory=dict)
    # staged files the state covers, not moved yet: {"staged", "key"} and, for a rewrite, "replaces" (keys)
    publishing: list[dict[str, Any]] = field(default_factory=list)
    # the stream those files belong to, and its entry before the save that listed them (None: it had none)
    publishing_stream: str = ""
    publishing_before: dict[str, Any] | None = None

    def stream_state(self, name: str) -> dict[str, Any] | None:
        entry = self.streams.get(name)
        return dict(entry["state"]) if entry and entry.get("state") is not None else None

    def generation(self, name: str) -> int:
        entry = self.streams.get(name)
        return int(entry.get("generation_id", 0)) if entry else 0

    def as_json(self, updated_at: str) -> bytes:
        document: dict[str, Any] = {"sync_id": self.sync_id, "streams": self.streams, "updated_at": updated_at}
        if self.publishing:
            document["publishing"] = self.publishing
            if self.publishing_stream:
                document["publishing_stream"] = self.publishing_stream
                document["publishing_before"] = self.publishing_before
        return orjson.dumps(document, option=orjson.OPT_INDENT_2)


class StateStore:
    """Loads and saves the connection's state through a storage (local folder or S3)."""

    def __init__(self, storage: Storage, key: str = STATE_KEY):
        self.storage = storage
        self.key = key

    def load(self) -> ConnectionState:
        raw = self.storage.read(self.key)
        if raw is None:
            return ConnectionState()
        try:
            data = orjson.loads(raw)
            streams = {str(k): dict(v) for k, v in (data.get("streams") or {}).items()}
            publishing = [_publication(item) for item in data.get("publishing") or ()]
            before = data.get("publishing_before")
            return ConnectionState(int(data.get("sync_id", 0)), streams, publishing,
                                   str(data.get("publishing_stream") or ""),
                                   dict(before) if before is not None else None)
        except (orjson.JSONDecodeError, AttributeError, TypeError, ValueError, KeyError) as exc:
            raise StateError(f"{self.storage.uri(self.key)}: the saved state is damaged ({exc}); move it away "
                             "to start from scratch, or pass --state with a good copy") from None

    def save(self, state: ConnectionState, updated_at: str) -> None:
        """Replace the saved state, atomically; :class:`StorageError` (the old state kept) when it cannot be."""
        try:
            self.storage.write_atomic(self.key, state.as_json(updated_at), {"content-type": "application/json"})
        except OSError as exc:
            reason = exc.strerror or str(exc)
            raise StorageError(f"the state could not be saved to {self.key} ({reason}); the state saved before "
                               "is kept, so the next run reads again what this one read since") from None


def _publication(item: Mapping[str, Any]) -> dict[str, Any]:
    entry: dict[str, Any] = {"staged": str(item["staged"]), "key": str(item["key"])}
    if item.get("replaces"):
        entry["replaces"] = [str(key) for key in item["replaces"]]
    return entry


class Published(Struct, frozen=True):
    """What :func:`finish_publishing` did: files moved, and the stream set back (lost files), if any."""

    moved: int = 0
    set_back: str = ""
    lost: tuple[str, ...] = ()  # the staged keys that were gone


def finish_publishing(storage: Storage, state: ConnectionState) -> Published:
    """Move the staged files a saved state covers but its run did not publish (it died in between), and
    delete the files they replace. A file moved (or deleted) already is skipped; a file whose staged copy
    and key are both gone sets its stream back (see the module docs). The caller saves ``state``."""
    moved = 0
    lost: list[str] = []
    for item in state.publishing:
        try:
            moved += storage.move(item["staged"], item["key"])
        except NothingToMove:
            lost.append(item["staged"])
            continue
        if item.get("replaces"):
            storage.delete(item["replaces"])
    set_back = ""
    if lost and state.publishing_stream:
        # the units those files held are read again: the other files of the same publication go, and the
        # stream's entry is what it was before (a rewrite's entries replace nothing when their file is gone)
        storage.delete([item["key"] for item in state.publishing if not item.get("replaces")])
        set_back = state.publishing_stream
        if state.publishing_before is None:
            state.streams.pop(set_back, None)
        else:
            state.streams[set_back] = dict(state.publishing_before)
    elif lost and any(not item.get("replaces") for item in state.publishing):
        raise StateError(f"{len(lost)} staged file(s) the saved state covers are gone before they were published "
                         f"(first {storage.uri(lost[0])}), and this state (of an older version) does not say which "
                         "stream to set back: run again with --sync-mode overwrite to read everything again")
    state.publishing, state.publishing_stream, state.publishing_before = [], "", None
    return Published(moved, set_back, tuple(lost))


def clear_staging(storage: Storage) -> list[str]:
    """Remove every staged file (none is covered by a state once :func:`finish_publishing` ran): files of
    task attempts that failed or outlived their driver. Returns the removed keys.

    A local output loses the whole staging folder (hidden temporaries of killed tasks included).
    """
    victims = [info.key for info in storage.list(STAGING_PREFIX, with_metadata=False)]
    if victims:
        storage.delete(victims)
    if isinstance(storage, LocalStorage):
        import shutil

        shutil.rmtree(storage.path(STAGING_PREFIX), ignore_errors=True)
        # and the metadata of staged files that never made it (kept apart from data, in the hidden folder)
        shutil.rmtree(os.path.join(storage.root, METADATA_FOLDER, *STAGING_PREFIX.strip("/").split("/")),
                      ignore_errors=True)
    return victims


class CatalogStore:
    """The configured catalog of what was landed, at ``_airbyte_state/catalog.json``.

    Airbyte's ConfiguredAirbyteCatalog shape: ``{"streams": [{"stream": {name,
    json_schema, default_cursor_field, source_defined_primary_key, ...},
    "sync_mode", "destination_sync_mode", "cursor_field", "primary_key"}]}``.
    Each sync merges its streams in (replacing their entries, keeping the
    others), so later steps such as normalization know every landed stream's
    schema, primary key, cursor and sync modes without the manifest.
    """

    def __init__(self, storage: Storage, key: str = CATALOG_KEY):
        self.storage = storage
        self.key = key

    def load(self) -> list[dict[str, Any]]:
        raw = self.storage.read(self.key)
        if raw is None:
            return []
        try:
            streams = orjson.loads(raw)["streams"]
            return [dict(entry) for entry in streams]
        except (orjson.JSONDecodeError, KeyError, TypeError) as exc:
            raise StateError(f"{self.storage.uri(self.key)}: the landed catalog is damaged ({exc}); "
                             "run a sync again to write it anew") from None

    def merge(self, entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Put ``entries`` in place of the saved entries of the same streams; save; return all entries."""
        names = {entry["stream"]["name"] for entry in entries}
        merged = [e for e in self.load() if e.get("stream", {}).get("name") not in names] + list(entries)
        try:
            self.storage.write_atomic(self.key, orjson.dumps({"streams": merged}, option=orjson.OPT_INDENT_2),
                                      {"content-type": "application/json"})
        except OSError as exc:
            raise StorageError(f"the landed catalog could not be saved to {self.key} ({exc.strerror or exc}); "
                               "nothing was read: free space or fix the output's permissions, then run again"
                               ) from None
        return merged


def configured_entry(stream: Stream, incremental: bool, destination_sync_mode: str) -> dict[str, Any]:
    """A ConfiguredAirbyteStream for ``stream`` (a framework Stream) as this sync lands it."""
    entry = stream.catalog_entry()
    return {
        "stream": entry,
        "sync_mode": "incremental" if incremental else "full_refresh",
        "destination_sync_mode": destination_sync_mode,
        "cursor_field": list(entry.get("default_cursor_field") or []) if incremental else [],
        "primary_key": [list(p) for p in entry.get("source_defined_primary_key") or []],
    }


def merge_stream(state: ConnectionState, name: str, stream_state: Mapping[str, Any] | None,
                 generation_id: int) -> None:
    entry = state.streams.setdefault(name, {})
    if stream_state is not None:
        entry["state"] = dict(stream_state)
    entry["generation_id"] = generation_id


__all__ = ["CATALOG_KEY", "STAGING_PREFIX", "STATE_KEY", "CatalogStore", "ConnectionState", "StateStore",
           "Published", "clear_staging", "configured_entry", "finish_publishing", "merge_stream", "staging_prefix"]
