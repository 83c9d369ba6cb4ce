"""State kept next to the output, so the next run with the same output is incremental.

One JSON document per output (the *connection*), at ``_airbyte_state/state.json``
under the output root::

    {"sync_id": 7, "streams": {"orders": {"state": {...}, "generation_id": 2}}, "updated_at": "..."}

``sync_id`` increases by one with every sync of the connection; a stream's
``generation_id`` increases when it is overwritten (a full refresh that
replaces older files). The document is written atomically (temp + rename, or
a single S3 put) and only after the files its state covers are committed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

import orjson

from framework.errors import StateError

STATE_KEY = "_airbyte_state/state.json"


@dataclass
class ConnectionState:
    sync_id: int = 0
    streams: dict[str, dict[str, Any]] = field(default_factory=dict)

    def stream_state(self, name: str) -> dict[str, Any] | None:
        entry = self.streams.get(name)
        return dict(entry["state"]) if entry and entry.get("state") is not None else None

    def generation(self, name: str) -> int:
        entry = self.streams.get(name)
        return int(entry.get("generation_id", 0)) if entry else 0

    def as_json(self, updated_at: str) -> bytes:
        return orjson.dumps({"sync_id": self.sync_id, "streams": self.streams, "updated_at": updated_at},
                            option=orjson.OPT_INDENT_2)


class StateStore:
    """Loads and saves the connection's state through a storage (local folder or S3)."""

    def __init__(self, storage: Any, key: str = STATE_KEY):
        self.storage = storage
        self.key = key

    def load(self) -> ConnectionState:
        raw = self.storage.read(self.key)
        if raw is None:
            return ConnectionState()
        try:
            data = orjson.loads(raw)
            streams = {str(k): dict(v) for k, v in (data.get("streams") or {}).items()}
            return ConnectionState(int(data.get("sync_id", 0)), streams)
        except (orjson.JSONDecodeError, AttributeError, TypeError, ValueError) as exc:
            raise StateError(f"{self.storage.uri(self.key)}: the saved state is damaged ({exc}); move it away "
                             "to start from scratch, or pass --state with a good copy") from None

    def save(self, state: ConnectionState, updated_at: str) -> None:
        self.storage.write_atomic(self.key, state.as_json(updated_at), {"content-type": "application/json"})


def merge_stream(state: ConnectionState, name: str, stream_state: Mapping[str, Any] | None,
                 generation_id: int) -> None:
    entry = state.streams.setdefault(name, {})
    if stream_state is not None:
        entry["state"] = dict(stream_state)
    entry["generation_id"] = generation_id


__all__ = ["ConnectionState", "STATE_KEY", "StateStore", "merge_stream"]
