"""A stream's JSON Schema read from the API: the runtime of ``DynamicSchemaLoader``.

:meth:`DynamicSchema.load` reads the first record of the loader's retriever
(one request, no partitions: the first page only), takes the list of field
definitions at ``schema_pointer``, and makes each a property named by the
value at ``key_pointer``, typed by the value at ``type_pointer`` (``string``
when there is none) after the first matching ``TypesMap``: an Airbyte type
name, two names (``oneOf`` both), or a ``ComplexFieldType`` (arrays with
items). Every type is nullable. The ``schema_filter`` then sees each
property as a record ``{name: schema}``, and the ``schema_transformations``
change the ``properties`` object as one record.

The schema is read when the connector is opened, once per definition and
:class:`~framework.components.context.BuildContext` (a parent stream built
again for its child reuses it); a Spark executor never reads it: it gets the
driver's schemas (:func:`framework.engine.worker.all_schemas`).
"""

from __future__ import annotations

import copy
import weakref
from collections.abc import Mapping, Sequence
from typing import Any

from msgspec import Struct

from framework.components.context import BuildContext, builds
from framework.components.records.conditions import Condition, Transformation
from framework.components.records.extraction import json_type_name
from framework.components.retriever import Retriever
from framework.components.slices import StreamSlice
from framework.errors import ReadError
from framework.interpolation import TemplateEngine
from framework.models import schema_loaders as models

#: Airbyte's data types as JSON Schema: every one nullable.
AIRBYTE_TYPES: Mapping[str, Mapping[str, Any]] = {
    "string": {"type": ["null", "string"]},
    "boolean": {"type": ["null", "boolean"]},
    "date": {"type": ["null", "string"], "format": "date"},
    "timestamp_without_timezone": {"type": ["null", "string"], "format": "date-time",
                                   "airbyte_type": "timestamp_without_timezone"},
    "timestamp_with_timezone": {"type": ["null", "string"], "format": "date-time"},
    "time_without_timezone": {"type": ["null", "string"], "format": "time", "airbyte_type": "time_without_timezone"},
    "time_with_timezone": {"type": ["null", "string"], "format": "time", "airbyte_type": "time_with_timezone"},
    "integer": {"type": ["null", "integer"]},
    "number": {"type": ["null", "number"]},
    "array": {"type": ["null", "array"]},
    "object": {"type": ["null", "object"]},
}

SCHEMA_DRAFT = "https://json-schema.org/draft-07/schema#"
_MISSING: Any = object()


class SchemaTypeError(ReadError):
    """A field definition the loader cannot make a property of (a bad name or type)."""

    default_failure_type = "config_error"


class ComplexType(Struct, frozen=True):
    """``field_type`` with ``items`` (a name or another complex type)."""

    field_type: str
    items: str | ComplexType | None = None


Target = str | tuple[str, ...] | ComplexType


class TypeMapping(Struct, frozen=True):
    """``current`` (as the API names it) becomes ``target`` where ``condition`` holds (None: always)."""

    current: str | tuple[str, ...]
    target: Target
    condition: Condition | None = None

    def matches(self, raw_type: Any) -> bool:
        if isinstance(self.current, tuple):
            return type(raw_type) is list and tuple(raw_type) == self.current
        return raw_type == self.current


def _dig(value: Any, pointer: Sequence[str], default: Any) -> Any:
    """The value at ``pointer`` (keys; digits index lists), or ``default`` when there is none."""
    for key in pointer:
        if type(value) is dict:
            value = value.get(key, _MISSING)
        elif type(value) is list and key.isascii() and key.isdigit() and int(key) < len(value):
            value = value[int(key)]
        else:
            return default
        if value is _MISSING:
            return default
    return value


def _shown(pointer: Sequence[str]) -> str:
    return f"`{'.'.join(pointer)}`" if pointer else "the record itself"


class DynamicSchema(Struct, frozen=True):
    """Reads the schema record and makes the stream's JSON Schema of it (see the module's doc)."""

    retriever: Retriever
    config: Mapping[str, Any]
    parameters: Mapping[str, Any]
    schema_pointer: tuple[str, ...]
    key_pointer: tuple[str, ...]
    type_pointer: tuple[str, ...] | None
    types_mapping: tuple[TypeMapping, ...]
    engine: TemplateEngine
    schema_filter: Any = None  # a RecordFilter or a custom filter: ``keep(records, variables)``
    transformations: tuple[Transformation, ...] = ()
    place: str | None = None
    cache: dict[str, dict] | None = None  # schemas already read with this build context
    cache_key: str = ""

    def load(self, stream: str | None = None) -> dict:
        """The JSON Schema (read once per definition and build context)."""
        cache = self.cache
        if cache is not None and self.cache_key in cache:
            return copy.deepcopy(cache[self.cache_key])
        try:
            schema = self.schema_of(self.first_record())
        except ReadError as exc:
            exc.with_context(stream=stream, place=self.place)
            raise
        if cache is not None:
            cache[self.cache_key] = copy.deepcopy(schema)
        return schema

    def first_record(self) -> dict | None:
        """The first record the retriever reads (None when there is none); no later page is asked for."""
        pages = self.retriever.read(StreamSlice(), self.config)
        try:
            for page in pages:
                if page:
                    return page[0]
        finally:
            close = getattr(pages, "close", None)
            if close is not None:
                close()
        return None

    def schema_of(self, record: dict | None) -> dict:
        """The JSON Schema the schema record ``record`` describes."""
        properties: dict[str, Any] = {}
        if record is not None:
            definitions = _dig(record, self.schema_pointer, None)
            if type(definitions) is not list:
                raise SchemaTypeError(
                    f"the schema record has {json_type_name(definitions) if definitions is not None else 'nothing'} "
                    f"at {_shown(self.schema_pointer)}, not a list of field definitions; set "
                    "schema_type_identifier.schema_pointer to where the list is")
            for definition in definitions:
                properties[self.key_of(definition)] = self.type_of(definition)
        return {"$schema": SCHEMA_DRAFT, "type": "object", "additionalProperties": True,
                "properties": self.transformed(self.filtered(properties))}

    def key_of(self, definition: Any) -> str:
        key = _dig(definition, self.key_pointer, None)
        if not isinstance(key, str):
            raise SchemaTypeError(
                f"a field definition has {json_type_name(key)} at {_shown(self.key_pointer)}, not a field name "
                f"(a string): {str(definition)[:200]}; set schema_type_identifier.key_pointer to where the name is")
        return key

    def type_of(self, definition: Any) -> dict:
        raw = _dig(definition, self.type_pointer, "string") if self.type_pointer else "string"
        target = self.mapped(raw, definition)
        if type(target) in (list, tuple) and len(target) == 2 and all(isinstance(t, str) for t in target):
            return {"oneOf": [airbyte_type(target[0]), airbyte_type(target[1])]}
        if isinstance(target, str):
            return airbyte_type(target)
        if isinstance(target, ComplexType):
            return complex_type(target)
        raise SchemaTypeError(
            f"the field type {target!r} is neither a type name nor two of them; map it to an Airbyte type with "
            "a TypesMap in schema_type_identifier.types_mapping")

    def mapped(self, raw: Any, definition: Any) -> Any:
        """``raw`` after the first mapping whose type and condition match (``raw`` itself when none does)."""
        for mapping in self.types_mapping:
            if mapping.matches(raw) and self._holds(mapping.condition, definition):
                return mapping.target
        return raw

    def _holds(self, condition: Condition | None, definition: Any) -> bool:
        if condition is None:
            return True
        if condition.never:
            return False
        context = {"config": self.config, "parameters": {}, "raw_schema": definition}
        return bool(self.engine.evaluate(condition.source, context, "boolean"))

    def filtered(self, properties: dict[str, Any]) -> dict[str, Any]:
        if self.schema_filter is None:
            return properties
        variables = {"config": self.config, "parameters": self.parameters, "stream_state": {},
                     **StreamSlice().template_variables(), "next_page_token": None}
        kept: dict[str, Any] = {}
        for item in self.schema_filter.keep([{key: value} for key, value in properties.items()], variables):
            kept.update(item)
        return kept

    def transformed(self, properties: dict[str, Any]) -> dict[str, Any]:
        variables = {"config": self.config, "parameters": self.parameters, "stream_state": {},
                     **StreamSlice().template_variables()}
        for transformation in self.transformations:
            properties = transformation.apply(properties, variables)
        return properties


def airbyte_type(name: Any) -> dict:
    """The JSON Schema of an Airbyte type name (a fresh copy)."""
    found = AIRBYTE_TYPES.get(name) if isinstance(name, str) else None
    if found is None:
        raise SchemaTypeError(
            f"the field type {name!r} is not an Airbyte type ({', '.join(AIRBYTE_TYPES)}); map it to one with a "
            "TypesMap in schema_type_identifier.types_mapping")
    return copy.deepcopy(dict(found))


def complex_type(target: ComplexType) -> dict:
    schema = airbyte_type(target.field_type)
    if target.items is not None:
        schema["items"] = airbyte_type(target.items) if isinstance(target.items, str) else complex_type(target.items)
    return schema


def _target(value: Any) -> Target:
    if isinstance(value, models.ComplexFieldType):
        return _complex(value)
    return tuple(value) if isinstance(value, (list, tuple)) else value


def _complex(model: models.ComplexFieldType) -> ComplexType:
    items = model.items
    return ComplexType(model.field_type, _complex(items) if isinstance(items, models.ComplexFieldType) else items)


# Schemas read per build context: one connector opening reads each loader definition once.
_READ: dict[int, dict[str, dict]] = {}


def _cache_of(ctx: BuildContext) -> dict[str, dict]:
    key = id(ctx)
    if key not in _READ:
        _READ[key] = {}
        weakref.finalize(ctx, _READ.pop, key, None)
    return _READ[key]


@builds("DynamicSchemaLoader")
def build_dynamic_schema(model: models.DynamicSchemaLoader, ctx: BuildContext, path: tuple) -> DynamicSchema:
    identifier = model.schema_type_identifier

    def pointer(values: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(str(ctx.render(value, identifier.parameters)) for value in values)

    mappings = tuple(
        TypeMapping(m.current_type, _target(m.target_type), Condition.of(m.condition or "", ctx.engine))
        for m in identifier.types_mapping)
    schema_filter = None
    if model.schema_filter is not None:
        schema_filter = ctx.build(model.schema_filter, path + ("schema_filter",))
        if getattr(schema_filter, "condition", _MISSING) is None:  # a RecordFilter that always keeps
            schema_filter = None
    return DynamicSchema(
        retriever=ctx.build(model.retriever, path + ("retriever",)),
        config=ctx.config,
        parameters=model.parameters,
        schema_pointer=pointer(identifier.schema_pointer),
        key_pointer=pointer(identifier.key_pointer),
        type_pointer=pointer(identifier.type_pointer) if identifier.type_pointer else None,
        types_mapping=mappings,
        engine=ctx.engine,
        schema_filter=schema_filter,
        transformations=tuple(ctx.build(t, path + ("schema_transformations", i))
                              for i, t in enumerate(model.schema_transformations)),
        place=ctx.place(path),
        cache=_cache_of(ctx),
        cache_key=model.model_dump_json(by_alias=True),
    )


__all__ = ["AIRBYTE_TYPES", "ComplexType", "DynamicSchema", "SchemaTypeError", "TypeMapping", "airbyte_type",
           "build_dynamic_schema", "complex_type"]
