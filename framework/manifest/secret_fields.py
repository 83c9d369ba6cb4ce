"""Where a config holds secrets: the paths of its values under properties the spec marks ``airbyte_secret``.

:func:`framework.manifest.config_check.secret_values` gives the values (to mask
them); this gives their places (``credentials.client_secret``, ``keys[0]``), to
name them in a message without showing them.
"""

from __future__ import annotations

from typing import Any


def secret_fields(schema: Any, config: Any) -> tuple[str, ...]:
    """The dotted paths (list items as ``[i]``) of the non-empty values in ``config`` that sit under a property
    ``schema`` marks ``airbyte_secret: true``, in the config's order, each once."""
    found: dict[str, None] = {}

    def walk(node_schema: Any, value: Any, path: str) -> None:
        if not isinstance(node_schema, dict):
            return
        if node_schema.get("airbyte_secret") is True:
            if value not in (None, "") and path:
                found.setdefault(path)
            return
        for key in ("oneOf", "anyOf", "allOf"):
            for option in node_schema.get(key, []) or []:
                walk(option, value, path)
        properties = node_schema.get("properties")
        if isinstance(value, dict) and isinstance(properties, dict):
            for name, sub in value.items():
                if name in properties:
                    walk(properties[name], sub, f"{path}.{name}" if path else str(name))
        if isinstance(value, list) and isinstance(node_schema.get("items"), dict):
            for index, item in enumerate(value):
                walk(node_schema["items"], item, f"{path}[{index}]")

    walk(schema, config, "")
    return tuple(found)


__all__ = ["secret_fields"]
