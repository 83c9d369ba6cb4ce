"""The JSON Schema of the manifest language, generated from the models.

``schemas/manifest.schema.json`` is this module's output; a test regenerates
it and fails when the committed file differs, so the schema and the models
cannot drift. Regenerate with::

    python -m framework.models.json_schema schemas/

Besides the models' own constraints the schema lets any component be written
as ``{$ref: '#/definitions/x', ...overrides}``, as manifests do, and keeps our
annotations: ``x-template`` (variables a template may use and what its result
is parsed into) and ``format: duration`` / ``x-format: strftime``.

Every component type of the catalog has its definition under ``$defs``, also one that no field of the
source holds (yet): pydantic writes only the models it reaches from ``DeclarativeSource``, so the rest
(parts of a component that is not supported, say) are added by :func:`_unreached`.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from framework.models import REGISTRY
from framework.models.destination import DestinationSettings
from framework.models.source import DeclarativeSource

SCHEMA_ID = "https://manifest-framework.dev/schemas/manifest.schema.json"
COMPONENT_NAMES = {model.__name__ for model in REGISTRY.values()}


def manifest_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a manifest."""
    schema = DeclarativeSource.model_json_schema(by_alias=True, mode="validation")
    schema.setdefault("$defs", {}).update(_unreached(schema["$defs"]))
    for name, definition in schema.get("$defs", {}).items():
        if name in COMPONENT_NAMES:
            _allow_ref(definition)
    schema = _any_of(schema)
    root = {key: schema.pop(key) for key in ("properties", "required", "additionalProperties", "type") if key in schema}
    _allow_ref(root)
    # `streams` may be left out when `dynamic_streams` makes the streams (validate-manifest says the same)
    root["allOf"] = [{"anyOf": [{"required": ["streams"]}, {"required": ["dynamic_streams"]}]}]
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "Connector manifest",
        "description": "A declarative HTTP API connector: its streams, how they are read, and how a connection "
                       "is checked. Components may be written in full or as `$ref` to a definition with overrides.",
        **root,
        "$defs": schema.get("$defs", {}),
    }


def _unreached(reached: dict[str, Any]) -> dict[str, Any]:
    """The definitions of the component models no field of the source leads to (and of what they hold), in
    the catalog's order of types; an empty dict when every model is reached."""
    added: dict[str, Any] = {}
    for model in REGISTRY.values():
        if model is DeclarativeSource or model.__name__ in reached or model.__name__ in added:
            continue
        own = model.model_json_schema(by_alias=True, mode="validation", ref_template="#/$defs/{model}")
        for name, definition in own.pop("$defs", {}).items():
            if name not in reached:
                added.setdefault(name, definition)
        added[model.__name__] = own
    return added


_TYPE_ORDER = ("integer", "number", "string", "boolean", "object", "array", "null")


def _any_of(node: Any) -> Any:
    """``oneOf`` -> ``anyOf``: a bare ``{$ref: ...}`` fits every option, which ``oneOf`` forbids.

    Options that are plain types are put in one fixed order: Python caches unions by
    equality, so ``Union[int, str]`` may come back as ``Union[str, int]`` depending on
    what was imported first, and the committed schema must not depend on that.
    """
    if isinstance(node, dict):
        out = {("anyOf" if key == "oneOf" else key): _any_of(value) for key, value in node.items()}
        options = out.get("anyOf")
        if isinstance(options, list) and all(isinstance(o, dict) and o.get("type") in _TYPE_ORDER for o in options):
            out["anyOf"] = sorted(options, key=lambda o: _TYPE_ORDER.index(o["type"]))
        return out
    if isinstance(node, list):
        return [_any_of(item) for item in node]
    return node


def _allow_ref(definition: dict) -> None:
    properties = definition.setdefault("properties", {})
    properties["$ref"] = {
        "type": "string",
        "description": "Take the keys of another part of the manifest (`#/definitions/name`); "
                       "keys written here override them.",
        "examples": ["#/definitions/base_requester"],
    }
    required = definition.pop("required", None)
    if required:
        definition["anyOf"] = [{"required": ["$ref"]}, {"required": required}]


def settings_schemas() -> dict[str, dict[str, Any]]:
    """Schemas of our other contracts (destination settings), by file name."""
    schema = DestinationSettings.model_json_schema(by_alias=True, mode="validation")
    return {
        "destination.schema.json": {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": SCHEMA_ID.replace("manifest", "destination"),
            **schema,
        }
    }


def all_schemas() -> dict[str, dict[str, Any]]:
    return {"manifest.schema.json": manifest_schema(), **settings_schemas()}


def render(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, sort_keys=False, ensure_ascii=False) + "\n"


def write(directory: str) -> list[str]:
    os.makedirs(directory, exist_ok=True)
    written = []
    for name, schema in all_schemas().items():
        path = os.path.join(directory, name)
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(render(schema))
        written.append(path)
    return written


if __name__ == "__main__":  # pragma: no cover
    for written_path in write(sys.argv[1] if len(sys.argv) > 1 else "schemas"):
        print(written_path)
