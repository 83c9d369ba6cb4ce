"""A stream's JSON Schema inferred from records read, merged into the declared one without dropping anything.

`run-manifest --test-read --infer-schema` (docs/manifest-guide.md): genson builds the schema of the
records (it merges types across records and nests objects and arrays; why genson: it is the well-kept
library for exactly this, and its strategies let us add what it lacks); this module adds what a
connector's schema needs on top:

* every field is nullable (``["null", T]``) and none is ``required``: an API that sent a value in these
  pages may send null or leave it out in others;
* strings that are all RFC 3339 date-times, dates or times get ``format`` (``date-time``, ``date``,
  ``time``), a date-time without an offset also ``airbyte_type: timestamp_without_timezone``, so the
  Spark sink types them as timestamps;
* the root is ``{"type": "object", "additionalProperties": true, ...}`` as Airbyte writes it.

:func:`merge_schema` keeps every declared keyword and property as written and adds the inferred
properties the declaration lacks, at every depth where both say "object" (and in array items).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Mapping
from typing import Any

_DATE_TIME = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(?P<zone>Z|z|[+-]\d{2}:?\d{2})?")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_TIME = re.compile(r"\d{2}:\d{2}(:\d{2}(\.\d+)?)?")

SCHEMA_URI = "http://json-schema.org/draft-07/schema#"


def _temporal_kinds(text: str) -> frozenset[str]:
    """The temporal forms a string has: ``date-time`` (with ``naive`` when it has no offset), ``date``, ``time``."""
    match = _DATE_TIME.fullmatch(text)
    if match:
        return frozenset({"date-time"} if match.group("zone") else {"date-time", "naive"})
    if _DATE.fullmatch(text):
        return frozenset({"date"})
    if _TIME.fullmatch(text):
        return frozenset({"time"})
    return frozenset()


def _builder() -> Any:
    from genson import SchemaBuilder  # only for --infer-schema
    from genson.schema.strategies import String

    class TemporalString(String):
        """Strings, with the temporal form every one of them has (none when they differ)."""

        def __init__(self, node_class: Any) -> None:
            super().__init__(node_class)
            self.forms: frozenset[str] | None = None
            self.naive = False

        def add_object(self, obj: Any) -> None:
            super().add_object(obj)
            kinds = _temporal_kinds(obj)
            self.naive = self.naive or "naive" in kinds
            forms = kinds - {"naive"}
            self.forms = forms if self.forms is None else self.forms & forms

        def to_schema(self) -> dict:
            schema = super().to_schema()
            if self.forms:
                (form,) = self.forms
                schema["format"] = form
                if form == "date-time" and self.naive:
                    schema["airbyte_type"] = "timestamp_without_timezone"
            return schema

    class Builder(SchemaBuilder):
        EXTRA_STRATEGIES = (TemporalString,)

    return Builder(schema_uri=None)


def infer_schema(records: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The JSON Schema of ``records`` (see the module docs); an object schema without properties for none."""
    builder = _builder()
    builder.add_schema({"type": "object"})
    for record in records:
        builder.add_object(dict(record))
    inferred = builder.to_schema()
    properties = {name: _nullable(schema) for name, schema in (inferred.get("properties") or {}).items()}
    return {"$schema": SCHEMA_URI, "type": "object", "additionalProperties": True, "properties": properties}


def _nullable(schema: Any) -> Any:
    """``schema`` with null allowed at every level and no ``required``."""
    if not isinstance(schema, dict):
        return schema
    out = {key: value for key, value in schema.items() if key != "required"}
    if "properties" in out:
        out["properties"] = {name: _nullable(sub) for name, sub in out["properties"].items()}
    if isinstance(out.get("items"), dict):
        out["items"] = _nullable(out["items"])
    if "anyOf" in out:
        options = [_nullable(option) for option in out["anyOf"]]
        if not any(_types(option) == ["null"] for option in options):
            options.insert(0, {"type": "null"})
        out["anyOf"] = options
    elif "type" in out:
        types = _types(out)
        out["type"] = ["null", *[t for t in types if t != "null"]]
    return out


def _types(schema: Mapping[str, Any]) -> list[str]:
    kind = schema.get("type")
    return [kind] if isinstance(kind, str) else list(kind) if isinstance(kind, list) else []


def _is_object(schema: Any) -> bool:
    return isinstance(schema, dict) and ("object" in _types(schema) or "properties" in schema)


def merge_schema(declared: Mapping[str, Any], inferred: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """``declared`` with the properties only ``inferred`` has added; and the dotted paths of those added."""
    added: list[str] = []
    merged = _merge(copy.deepcopy(dict(declared)), inferred, "", added)
    if not declared:
        merged = copy.deepcopy(dict(inferred))
        added = sorted(inferred.get("properties") or {})
    return merged, added


def _merge(declared: dict[str, Any], inferred: Mapping[str, Any], prefix: str, added: list[str]) -> dict[str, Any]:
    if _is_object(declared) and _is_object(inferred):
        properties = declared.get("properties")
        properties = dict(properties) if isinstance(properties, dict) else {}
        for name, schema in (inferred.get("properties") or {}).items():
            if name not in properties:
                properties[name] = copy.deepcopy(schema)
                added.append(prefix + name)
            elif isinstance(properties[name], dict):
                properties[name] = _merge(properties[name], schema, f"{prefix}{name}.", added)
        declared["properties"] = properties
    elif "array" in _types(declared) and isinstance(declared.get("items"), dict) \
            and isinstance(inferred.get("items"), dict):
        declared["items"] = _merge(declared["items"], inferred["items"], f"{prefix}[].", added)
    return declared


__all__ = ["SCHEMA_URI", "infer_schema", "merge_schema"]
