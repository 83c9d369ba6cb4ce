"""The config's secrets kept off the page: shown as a placeholder, put back when the page sends it unchanged.

The builder's page edits the config as JSON text. Every value the spec marks ``airbyte_secret`` is replaced
by :data:`PLACEHOLDER` in what the page gets (:func:`masked_config_text`); the server keeps the real values,
and a config the page sends back with the placeholder at a place where the server knows a value gets that
value again (:func:`restore`). A value the user types instead is taken as given.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

PLACEHOLDER = "********"

Path = tuple[str | int, ...]


def secret_paths(schema: Any, config: Any) -> list[Path]:
    """The places in ``config`` whose values the ``schema`` (a connection specification) marks secret."""
    found: list[Path] = []

    def walk(node: Any, value: Any, path: Path) -> None:
        if not isinstance(node, Mapping):
            return
        if node.get("airbyte_secret") is True and value not in (None, ""):
            if path not in found:
                found.append(path)
            return
        for key in ("oneOf", "anyOf", "allOf"):
            for option in node.get(key) or []:
                walk(option, value, path)
        if isinstance(value, Mapping):
            for name, sub in (node.get("properties") or {}).items():
                if name in value:
                    walk(sub, value[name], (*path, name))
        if isinstance(value, list) and isinstance(node.get("items"), Mapping):
            for index, item in enumerate(value):
                walk(node["items"], item, (*path, index))

    walk(schema, config, ())
    return found


def _get(data: Any, path: Path) -> Any:
    for part in path:
        if isinstance(data, Mapping) and isinstance(part, str) and part in data:
            data = data[part]
        elif isinstance(data, list) and isinstance(part, int) and 0 <= part < len(data):
            data = data[part]
        else:
            return None
    return data


def masked_config(config: Mapping[str, Any], paths: list[Path]) -> Any:
    """A copy of ``config`` with the value at each of ``paths`` replaced by :data:`PLACEHOLDER`."""
    copy = json.loads(json.dumps(config, default=str))
    for path in paths:
        if not path:
            return PLACEHOLDER
        parent = _get(copy, path[:-1])
        last = path[-1]
        if isinstance(parent, dict) and isinstance(last, str) and last in parent:
            parent[last] = PLACEHOLDER
        elif isinstance(parent, list) and isinstance(last, int) and 0 <= last < len(parent):
            parent[last] = PLACEHOLDER
    return copy


def masked_config_text(config: Mapping[str, Any], paths: list[Path]) -> str:
    return json.dumps(masked_config(config, paths), indent=2, ensure_ascii=False) + "\n"


def restore(sent: Any, known: Any) -> Any:
    """``sent`` with each :data:`PLACEHOLDER` replaced by the value at the same place in ``known`` (the real
    config the server holds); a placeholder where ``known`` has nothing stays as it is."""
    if sent == PLACEHOLDER:
        return known if known is not None and known != PLACEHOLDER else sent
    if isinstance(sent, dict):
        return {key: restore(value, known.get(key) if isinstance(known, Mapping) else None)
                for key, value in sent.items()}
    if isinstance(sent, list):
        return [restore(value, known[index] if isinstance(known, list) and index < len(known) else None)
                for index, value in enumerate(sent)]
    return sent


__all__ = ["PLACEHOLDER", "masked_config", "masked_config_text", "restore", "secret_paths"]
