"""A connector config made from a manifest's spec, for running manifests that come without one.

:func:`config_from_spec` fills every required property of
``spec.connection_specification`` (recursively: required properties of
required objects, the first option of a ``oneOf``) with a value the schema
accepts: its ``const``, else its ``default``, else its first ``examples`` or
``enum`` value that validates, else a value made for its type, format and
pattern. Optional properties are left out. The result validates against the
spec (:func:`spec_problems` says why when it does not), so a manifest can be
opened, checked and discovered without real credentials.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

#: strings tried, in order, for a string property with a pattern and no usable default or example
_PATTERN_CANDIDATES = (
    "2024-01-01T00:00:00Z", "2024-01-01T00:00:00.000Z", "2024-01-01T00:00:00", "2024-01-01 00:00:00",
    "2024-01-01", "2024-01", "2024", "12:00", "example", "example.com", "https://example.com", "owner/repo",
    "user@example.com", "1", "10", "a", "A", "abc123", "00000000-0000-0000-0000-000000000000", "en", "US",
)

#: strings for a string property by its ``format``
_FORMATS = {
    "date-time": "2024-01-01T00:00:00Z",
    "date": "2024-01-01",
    "time": "00:00:00Z",
    "email": "user@example.com",
    "uri": "https://example.com",
    "url": "https://example.com",
    "hostname": "example.com",
    "ipv4": "127.0.0.1",
    "uuid": "00000000-0000-0000-0000-000000000000",
}


def config_from_spec(spec: Mapping[str, Any] | None) -> dict[str, Any]:
    """A config with every required property of ``spec`` (a connection specification) filled in."""
    if not spec:
        return {}
    value = _value(spec, "config")
    if not isinstance(value, dict):
        raise ValueError(f"the connection specification is not an object schema (got {type(value).__name__})")
    return value


def manifest_config(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """:func:`config_from_spec` of a loaded manifest's ``spec.connection_specification`` ({} without a spec)."""
    spec = manifest.get("spec") or {}
    return config_from_spec(spec.get("connection_specification") if isinstance(spec, Mapping) else None)


def spec_problems(spec: Mapping[str, Any], config: Any) -> list[str]:
    """What ``config`` breaks in ``spec`` (formats checked), one line each; empty when it fits."""
    import jsonschema

    validator_class = jsonschema.validators.validator_for(spec, default=jsonschema.Draft7Validator)
    validator = validator_class(spec, format_checker=validator_class.FORMAT_CHECKER)
    return [f"{'/'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}" for e in validator.iter_errors(config)]


def _fits(schema: Mapping[str, Any], value: Any) -> bool:
    return not spec_problems(schema, value)


def _value(schema: Mapping[str, Any], where: str) -> Any:
    if "const" in schema:
        return schema["const"]
    if "default" in schema and schema["default"] not in (None, {}, []) and _fits(schema, schema["default"]):
        return schema["default"]
    for key in ("examples", "enum"):
        for candidate in schema.get(key) or ():
            if _fits(schema, candidate):
                return candidate
    for key in ("oneOf", "anyOf"):
        options = schema.get(key)
        if options:
            merged = {k: v for k, v in schema.items() if k not in ("oneOf", "anyOf", "default", "examples")}
            for option in options:
                value = _value({**merged, **option}, where)
                if _fits(schema, value):
                    return value
            raise ValueError(f"{where}: no option of its {key} could be filled in")
    if "allOf" in schema:
        merged = {k: v for k, v in schema.items() if k != "allOf"}
        for part in schema["allOf"]:
            merged = {**merged, **part, "properties": {**merged.get("properties", {}), **part.get("properties", {})},
                      "required": [*merged.get("required", []), *part.get("required", [])]}
        return _value(merged, where)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind is None:
        kind = "object" if "properties" in schema else "string"
    if kind == "object":
        properties = schema.get("properties") or {}
        out = {}
        for name in schema.get("required") or ():
            sub = properties.get(name)
            out[name] = _value(sub, f"{where}.{name}") if isinstance(sub, Mapping) else "example"
        return out
    if kind == "array":
        items = schema.get("items") if isinstance(schema.get("items"), Mapping) else {"type": "string"}
        return [_value(items, f"{where}[0]") for _ in range(max(1, int(schema.get("minItems", 1))))]
    if kind in ("integer", "number"):
        low = schema.get("minimum", schema.get("exclusiveMinimum", 0))
        number = max(1, int(low) + (1 if "exclusiveMinimum" in schema else 0))
        if "maximum" in schema:
            number = min(number, int(schema["maximum"]))
        return number
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    return _string(schema, where)


def _string(schema: Mapping[str, Any], where: str) -> str:
    pattern = schema.get("pattern")
    preferred = _FORMATS.get(str(schema.get("format")), "example")
    candidates = (preferred, *_PATTERN_CANDIDATES)
    if pattern is not None:
        compiled = re.compile(pattern)
        for candidate in candidates:
            if compiled.search(candidate) and _fits(schema, candidate):
                return candidate
        raise ValueError(f"{where}: no made-up string matches its pattern {pattern!r}; give it a default or example")
    for candidate in candidates:
        if _fits(schema, candidate):
            return candidate
    raise ValueError(f"{where}: no made-up string fits its schema {dict(schema)!r}")


__all__ = ["config_from_spec", "manifest_config", "spec_problems"]
