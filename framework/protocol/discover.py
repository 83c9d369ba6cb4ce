"""``--discover``: each stream's catalog entry, made from its schema alone.

Discovering needs a stream's name, JSON Schema, primary key and cursor field,
not a way to read it, so :func:`discover` builds no retriever, requester,
partition router or cursor: a stream whose read is driven by a custom class
(``CustomRetriever``, ``CustomRequester``, ``CustomIncrementalSync``) is listed
like any other, and nothing is requested from the API. What discovering does
check is what opening the connector checks first: the manifest (every
``validate-manifest`` error, a package a component needs included), the config
against the spec, and the custom-code gate: the class of every custom
component is loaded (imported, not built), so code shipped with the manifest
is refused without ``--allow-custom-code`` as for a read, and a module that
cannot be imported fails here, naming what is missing. A ``CustomSchemaLoader``
is built and asked for its schema, since the schema is the answer.

The config is first brought up to date by the spec's ``config_normalization_rules``
(``on_config`` hears of it, for the CONTROL message); streams of a
``ConditionalStreams`` are listed when its condition holds for that config, and a
``StateDelegatingStream`` is listed as its full-refresh definition (as airbyte-cdk
lists it with no state), incremental when either definition is.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from pydantic import BaseModel

from framework.components.context import BuildContext
from framework.components.custom.loader import CodeLoader, custom_code_allowed
from framework.components.custom.names import resolve_class_name
from framework.components.delegating import listed_streams
from framework.components.records import load_schema
from framework.components.stream import catalog_entry, key_paths
from framework.engine.config_migration import NormalizedConfig
from framework.engine.connector import prepare_config
from framework.errors import ManifestError
from framework.interpolation import TemplateEngine
from framework.manifest import check_manifest
from framework.manifest.config_check import ConfigFile
from framework.models import DeclarativeStream, StateDelegatingStream
from framework.models.custom import CustomComponent, CustomIncrementalSync
from framework.temporal.clock import SystemClock

__all__ = ["custom_components", "discover"]


def discover(manifest_path: str, config: Mapping[str, Any], *, config_path: str | ConfigFile | None = None,
             allow_custom_code: bool | None = None,
             on_config: Callable[[NormalizedConfig], None] | None = None) -> list[dict[str, Any]]:
    """The catalog entries of the manifest's streams, in manifest order, for ``config``.

    Raises :class:`~framework.errors.ManifestError` for a manifest with errors,
    :class:`~framework.errors.ConfigError` for a config that does not fit the
    spec (checked in the file at ``config_path`` when given, for its lines),
    for custom code refused by the gate, and for a schema that cannot be loaded.
    """
    checked = check_manifest(manifest_path)
    if not checked.ok or checked.source is None:
        raise ManifestError(checked.diagnostics)
    source = checked.source
    base_dir = os.path.dirname(os.path.abspath(manifest_path))
    clock = SystemClock()
    code = CodeLoader(base_dir, custom_code_allowed(allow_custom_code))
    config, _, mask = prepare_config(checked, config, config_path, clock=clock, code=code, on_config=on_config)
    ctx = BuildContext(config=config, engine=TemplateEngine(clock), clock=clock, base_dir=base_dir,
                       locate=checked.locate, mask=mask, code=code)
    entries = []
    # a ConditionalStreams' streams when its condition holds; the streams dynamic_streams make (read now)
    for path, listed in listed_streams(source, ctx, checked):
        for class_name, kind, where in custom_components(listed, path):  # the gate, and imports that fail
            ref = resolve_class_name(class_name, base_dir)
            ctx.code.load_class(ref, kind, ctx.place(where + ("class_name",)) or ctx.place(where))
        # a StateDelegatingStream is listed as its full-refresh definition (as airbyte-cdk lists it), incremental
        # when either definition is
        stream, other = (listed.full_refresh_stream, listed.incremental_stream) \
            if isinstance(listed, StateDelegatingStream) else (listed, listed)
        where = path + ("full_refresh_stream",) if stream is not other else path
        schema = load_schema(stream.schema_loader, ctx, stream.name, where + ("schema_loader",))
        if stream.file_uploader is not None:  # its records get `file_reference` (imported here: see stream.py)
            from framework.components.records.file_upload import file_schema

            schema = file_schema(schema)
        cursor_model = stream.incremental_sync or other.incremental_sync
        entries.append(catalog_entry(stream.name, schema, key_paths(stream.primary_key),
                                     _cursor_field(stream, ctx) or _cursor_field(other, ctx),
                                     incremental=cursor_model is not None,
                                     source_defined=not getattr(cursor_model, "allow_catalog_defined_cursor_field",
                                                                None)))
        if stream.file_uploader is not None:
            entries[-1]["is_file_based"] = True
    return entries


def _cursor_field(stream: DeclarativeStream, ctx: BuildContext) -> str | None:
    """The stream's cursor field as its cursor would have it (rendered), without building the cursor."""
    cursor = stream.incremental_sync
    if cursor is None:
        return None
    field = cursor.options.get("cursor_field") if isinstance(cursor, CustomIncrementalSync) else cursor.cursor_field
    if not isinstance(field, str) or not field:
        return None  # a custom cursor that names no field: incremental, with no default cursor field to show
    return str(ctx.render(field, cursor.parameters))


def custom_components(node: Any, path: tuple) -> Iterator[tuple[str, str, tuple]]:
    """``(class_name, kind, path)`` of every custom component in ``node`` (a model, or lists and mappings of
    them), those given as plain mappings among a custom component's keys too (airbyte-cdk builds them)."""
    if isinstance(node, CustomComponent):
        yield node.class_name, node.kind, path
        yield from custom_components(node.options, path)
    elif isinstance(node, BaseModel):
        for name, info in type(node).model_fields.items():
            yield from custom_components(getattr(node, name), path + (info.alias or name,))
    elif isinstance(node, (list, tuple)):
        for i, item in enumerate(node):
            yield from custom_components(item, path + (i,))
    elif isinstance(node, Mapping):
        if isinstance(node.get("class_name"), str):
            yield node["class_name"], "component", path
        for key, item in node.items():
            yield from custom_components(item, path + (key,))
