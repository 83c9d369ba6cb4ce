"""Loading a stream's JSON Schema: inline in the manifest or from a file beside it.

``$ref`` references are resolved by copying what they point to in place of
the reference: ``#/definitions/x`` in the same document, and
``shared.json`` or ``shared.json#/definitions/x`` relative to the folder of
the document that holds the reference (the manifest's folder for an inline
schema). Keys written next to a ``$ref`` are kept over the copied ones. A
reference that points back into itself (a recursive schema) is left as it is,
and so are references to URLs.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Protocol
from urllib.parse import unquote

import orjson
from msgspec import Struct

from framework.catalog import builds
from framework.components.context import BuildContext
from framework.errors import ConfigError
from framework.models.base import Component
from framework.models.records import InlineSchemaLoader, JsonFileSchemaLoader

#: What a stream without a schema loader and without a default schema file gets.
PERMISSIVE_SCHEMA: Mapping[str, Any] = {"type": "object", "properties": {}}


def default_schema_path(ctx: BuildContext, stream_name: str) -> str:
    """``schemas/<stream_name>.json`` in the manifest's folder."""
    return _default_file(ctx.base_dir or os.getcwd(), stream_name)


def _default_file(base_dir: str, stream_name: str) -> str:
    return os.path.join(base_dir, "schemas", f"{stream_name}.json")


class SchemaLoader(Protocol):
    """What a stream's ``schema_loader`` builds to: its JSON Schema, loaded when the connector is opened."""

    def load(self, stream_name: str) -> dict: ...


class InlineSchema(Struct, frozen=True):
    """``InlineSchemaLoader``: the schema written in the manifest (its ``$ref`` s from the manifest's folder)."""

    schema: Mapping[str, Any]
    base_dir: str
    where: str | None

    def load(self, stream_name: str) -> dict:
        resolver = _Resolver(stream_name, self.where)
        return resolver.resolve(self.schema, None, self.schema, frozenset(), self.base_dir)


class SchemaFile(Struct, frozen=True):
    """``JsonFileSchemaLoader`` (or no loader): a JSON Schema file, by default ``schemas/<stream>.json``.

    ``file`` None is the default file; ``optional``: a missing default file gives an empty
    object schema instead of an error (a stream without any loader).
    """

    file: str | None
    base_dir: str
    where: str | None
    optional: bool = False

    def load(self, stream_name: str) -> dict:
        file = self.file or _default_file(self.base_dir, stream_name)
        if self.optional and not os.path.exists(file):
            return {"type": "object", "properties": {}}
        resolver = _Resolver(stream_name, self.where)
        document = resolver.load(file)
        if not isinstance(document, dict):
            raise resolver.error(file, f"holds {_json_kind(document)}, not a JSON object",
                                 "write the stream's JSON Schema as an object")
        return resolver.resolve(document, file, document, frozenset(), os.path.dirname(file))


class MergedSchemas(Struct, frozen=True):
    """A list of loaders (Airbyte's ``CompositeSchemaLoader``): one schema with the ``properties`` of each,
    an earlier loader's winning where two name the same property, the first loader's listed last (Airbyte's
    order); nothing else of theirs is kept (no ``required``, no ``additionalProperties``), and the schema
    admits null as Airbyte's does. A loader whose schema has no ``properties`` adds none (airbyte-cdk fails
    on it)."""

    loaders: tuple[SchemaLoader, ...]

    def load(self, stream_name: str) -> dict:
        properties: dict[str, Any] = {}
        for loader in self.loaders:
            found = loader.load(stream_name).get("properties")
            if isinstance(found, Mapping):
                properties = {**found, **properties}
        return {"$schema": "http://json-schema.org/draft-07/schema#", "type": ["null", "object"],
                "properties": properties}


@builds("InlineSchemaLoader")
def build_inline_schema(model: InlineSchemaLoader, ctx: BuildContext, path: tuple) -> InlineSchema:
    return InlineSchema(model.schema_, ctx.base_dir or os.getcwd(), ctx.place(path))


@builds("JsonFileSchemaLoader")
def build_schema_file(model: JsonFileSchemaLoader, ctx: BuildContext, path: tuple) -> SchemaFile:
    return SchemaFile(schema_file_path(model, ctx), ctx.base_dir or os.getcwd(), ctx.place(path))


def schema_file_path(model: JsonFileSchemaLoader, ctx: BuildContext) -> str | None:
    """The file a JsonFileSchemaLoader reads (its ``file_path`` rendered), or None for the default file."""
    base_dir = ctx.base_dir or os.getcwd()
    return _schema_file(str(ctx.render(model.file_path, model.parameters)), base_dir) if model.file_path else None


def load_schema(model: Component | tuple[Component, ...] | None, ctx: BuildContext, stream_name: str,
                path: tuple) -> dict:
    """The JSON Schema of a stream's records, with ``$ref``s resolved.

    ``model`` is the stream's ``schema_loader`` (an inline schema, a file, a schema read from the
    API, a Python class), built by the builder the catalog names for it. Without a loader, the
    default file is read when it exists; otherwise a permissive schema equal to
    :data:`PERMISSIVE_SCHEMA` is returned (the caller may warn). A file that is missing or not a
    JSON object raises :class:`~framework.errors.ConfigError`. A list of loaders gives their
    :class:`MergedSchemas` (an empty list is no loader, as in Airbyte).
    """
    if model is None or model == ():
        loader: SchemaLoader = SchemaFile(None, ctx.base_dir or os.getcwd(), ctx.place(path), optional=True)
    elif isinstance(model, tuple):
        loader = MergedSchemas(tuple(ctx.build(item, path + (index,)) for index, item in enumerate(model)))
    else:
        loader = ctx.build(model, path)
    return loader.load(stream_name)


def _schema_file(file_path: str, base_dir: str) -> str:
    """Where a loader's ``file_path`` points: from the manifest's folder, else from its parent (an Airbyte
    connector package's manifest names its schemas from the package root, ``./source_x/schemas/a.json``),
    as ``validate-manifest`` looks for them. The first when neither exists (the error names it)."""
    candidates = [os.path.normpath(os.path.join(base, file_path)) for base in (base_dir, os.path.dirname(base_dir))]
    return next((c for c in candidates if os.path.isfile(c)), candidates[0])


def _json_kind(value: Any) -> str:
    return {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number")


class _Resolver:
    """Reads schema files (each once) and copies ``$ref`` targets into a schema."""

    def __init__(self, stream_name: str, place: str | None):
        self.stream_name = stream_name
        self.place = place
        self.documents: dict[str, Any] = {}

    def error(self, file: str | None, problem: str, fix: str) -> ConfigError:
        subject = f"the schema file {file}" if file else "the inline schema"
        where = f" (schema loader at {self.place})" if self.place else ""
        return ConfigError(f"stream `{self.stream_name}`: {subject} {problem}{where}; {fix}")

    def load(self, file: str) -> Any:
        if file not in self.documents:
            try:
                with open(file, "rb") as handle:
                    content = handle.read()
            except FileNotFoundError:
                raise self.error(file, "does not exist",
                                 "create it, correct file_path, or give the schema inline with an "
                                 "InlineSchemaLoader") from None
            except OSError as exc:
                raise self.error(file, f"cannot be read ({exc.strerror})", "check the file") from None
            try:
                self.documents[file] = orjson.loads(content)
            except orjson.JSONDecodeError as exc:
                raise self.error(file, f"is not valid JSON ({exc})", "correct the JSON") from None
        return self.documents[file]

    def resolve(self, node: Any, file: str | None, document: Any, active: frozenset, folder: str) -> Any:
        """A plain copy of ``node`` with references replaced by their targets.

        ``file``/``document``: the document ``node`` is in (None for an inline
        schema), ``folder``: where its relative references start, ``active``:
        the references being resolved (to stop on recursion).
        """
        if isinstance(node, Mapping):
            ref = node.get("$ref")
            if isinstance(ref, str) and "://" not in ref:
                return self._follow(node, ref, file, document, active, folder)
            return {key: self.resolve(value, file, document, active, folder) for key, value in node.items()}
        if isinstance(node, (list, tuple)):
            return [self.resolve(item, file, document, active, folder) for item in node]
        return node

    def _follow(self, node: Mapping, ref: str, file: str | None, document: Any, active: frozenset,
                folder: str) -> Any:
        target_part, _, pointer = ref.partition("#")
        target_file: str | None
        if target_part:
            target_file = os.path.normpath(os.path.join(folder, unquote(target_part)))
            target_document = self.load(target_file)
            target_folder = os.path.dirname(target_file)
        else:
            target_file, target_document, target_folder = file, document, folder
        key = (target_file, pointer)
        siblings = {k: v for k, v in node.items() if k != "$ref"}
        if key in active:
            return {"$ref": ref, **self.resolve(siblings, file, document, active, folder)}
        target = self._point(target_document, pointer, ref, file)
        resolved = self.resolve(target, target_file, target_document, active | {key}, target_folder)
        if siblings and isinstance(resolved, dict):
            resolved.update(self.resolve(siblings, file, document, active, folder))
        return resolved

    def _point(self, document: Any, pointer: str, ref: str, file: str | None) -> Any:
        value = document
        for token in unquote(pointer).split("/")[1:] if pointer else ():
            token = token.replace("~1", "/").replace("~0", "~")
            if isinstance(value, Mapping) and token in value:
                value = value[token]
            elif isinstance(value, list) and token.isascii() and token.isdigit() and int(token) < len(value):
                value = value[int(token)]
            else:
                raise self.error(file, f"has a $ref `{ref}` that points to nothing",
                                 "correct the reference or add what it points to")
        return value


__all__ = ["PERMISSIVE_SCHEMA", "InlineSchema", "MergedSchemas", "SchemaFile", "SchemaLoader", "build_inline_schema",
           "build_schema_file", "default_schema_path", "load_schema"]
