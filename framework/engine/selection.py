"""Which streams a sync reads, and from what state: configured catalogs and input state in Airbyte's shapes.

Every front end selects streams through here (protocol mode's ``--catalog``, the
Spark pipeline, ``--test-read``), so it sits in the engine, below them all.

A configured catalog selects streams and their sync modes::

    {"streams": [{"stream": {"name": "orders", ...}, "sync_mode": "incremental",
                  "destination_sync_mode": "append"}]}

Input state is a list of state messages (``[{"type": "STREAM", "stream":
{"stream_descriptor": {"name": "orders"}, "stream_state": {...}}}]``, each
optionally wrapped as ``{"type": "STATE", "state": {...}}``) or the legacy
mapping ``{"orders": {...}}``. Both come back as ``{stream name: state}``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import orjson
from msgspec import Struct

from framework.components.incremental import with_catalog_cursor_field
from framework.errors import ConfigError, StateError


class Selection(Struct, frozen=True):
    """One stream to read, and whether incrementally; ``cursor_field`` the catalog's cursor field where the
    stream's cursor lets the catalog choose it (``allow_catalog_defined_cursor_field``)."""

    name: str
    incremental: bool
    cursor_field: str | None = None
    #: how it lands (append, overwrite, append_dedup: framework.sync_modes); "" the sync's --sync-mode
    destination_sync_mode: str = ""


def select_streams(available: Mapping[str, Any], catalog: Mapping[str, Any] | None,
                   names: Iterable[str] | None = None) -> list[Selection]:
    """The streams to read, in catalog order (or manifest order without a catalog).

    Without a catalog every stream is read, incrementally where it has an
    incremental_sync. ``names`` (``--streams``) narrows either list.
    """
    if catalog is None:
        chosen = [Selection(name, getattr(stream, "cursor", None) is not None) for name, stream in available.items()]
    else:
        entries = catalog.get("streams")
        if not isinstance(entries, list):
            raise ConfigError("the configured catalog needs a `streams` list")
        chosen = []
        for i, entry in enumerate(entries):
            try:
                name = entry["stream"]["name"]
            except (KeyError, TypeError):
                raise ConfigError(f"catalog streams[{i}] has no `stream.name`") from None
            if name not in available:
                raise ConfigError(f"catalog stream `{name}` is not in the manifest; its streams are: "
                                  f"{', '.join(available)}")
            mode = entry.get("sync_mode", "full_refresh")
            if mode not in ("full_refresh", "incremental"):
                raise ConfigError(f"catalog stream `{name}`: sync_mode must be full_refresh or incremental, "
                                  f"not {mode!r}")
            incremental = mode == "incremental"
            if incremental and getattr(available[name], "cursor", None) is None:
                raise ConfigError(f"catalog stream `{name}` asks for incremental, but the stream has no "
                                  "incremental_sync; use sync_mode: full_refresh")
            chosen.append(Selection(name, incremental, _catalog_cursor_field(available[name], entry, name)))
    if names is not None:
        wanted = list(names)
        missing = [n for n in wanted if n not in available]
        if missing:
            raise ConfigError(f"--streams names unknown streams: {', '.join(missing)}; the manifest has: "
                              f"{', '.join(available)}")
        chosen = [s for s in chosen if s.name in wanted]
    return chosen


def _catalog_cursor_field(stream: Any, entry: Mapping[str, Any], name: str) -> str | None:
    cursor = getattr(stream, "cursor", None)
    field = entry.get("cursor_field")
    if cursor is None or not getattr(cursor, "catalog_cursor_field", False) or not isinstance(field, list):
        return None
    try:
        chosen = with_catalog_cursor_field(cursor, [str(part) for part in field]).cursor_field
    except ConfigError as exc:
        raise ConfigError(f"catalog stream `{name}`: {exc}") from None
    return chosen if chosen != cursor.cursor_field else None


def read_json_file(path: str, what: str) -> Any:
    """The JSON document in ``path`` (a configured catalog, a state); ConfigError naming the file and ``what``."""
    try:
        with open(path, "rb") as handle:
            return orjson.loads(handle.read())
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such {what} file") from None
    except orjson.JSONDecodeError as exc:
        raise ConfigError(f"{path}: the {what} file is not valid JSON ({exc})") from None


def parse_state(data: Any) -> dict[str, dict]:
    """Input state as ``{stream name: stream state}``."""
    if data is None:
        return {}
    if isinstance(data, Mapping):
        if data.get("type") in ("STREAM", "GLOBAL", "LEGACY", "STATE"):
            data = [data]
        else:
            for name, value in data.items():
                if not isinstance(value, Mapping):
                    raise StateError(f"the state of stream `{name}` should be an object such as "
                                     f"{{\"updated_at\": \"...\"}}, not a {type(value).__name__}; the state is a "
                                     "list of Airbyte state messages or a mapping of stream names to states")
            return {str(k): dict(v) for k, v in data.items()}
    if not isinstance(data, list):
        raise StateError("state must be a list of state messages or a mapping of stream names to states")
    out: dict[str, dict] = {}
    for i, item in enumerate(data):
        if not isinstance(item, Mapping):
            raise StateError(f"state[{i}] is not an object")
        if item.get("type") == "STATE" and "state" in item:
            item = item["state"]
        kind = item.get("type", "STREAM")
        if kind == "STREAM":
            stream = item.get("stream") or {}
            name = (stream.get("stream_descriptor") or {}).get("name")
            if not name:
                raise StateError(f"state[{i}] has no stream_descriptor.name")
            out[name] = dict(stream.get("stream_state") or {})
        elif kind == "GLOBAL":
            glob = item.get("global") or {}
            for stream in glob.get("stream_states") or []:
                name = (stream.get("stream_descriptor") or {}).get("name")
                if name:
                    out[name] = dict(stream.get("stream_state") or {})
        elif kind == "LEGACY":
            out.update({str(k): dict(v) for k, v in (item.get("data") or {}).items() if isinstance(v, Mapping)})
        else:
            raise StateError(f"state[{i}] has the unknown type {kind!r}; expected STREAM, GLOBAL or LEGACY")
    return out


__all__ = ["Selection", "parse_state", "read_json_file", "select_streams"]
