"""Checks of state and config migrations, ConditionalStreams and StateDelegatingStream that a schema cannot make.

* a ``StateDelegatingStream`` and its two definitions carry one name;
* a ``LegacyToPerPartitionStateMigration`` sits in a stream it can read the
  partition field and cursor field from (a SimpleRetriever with a
  SubstreamPartitionRouter, a UnionPartitionRouter, or a CustomPartitionRouter
  naming its ``parent_stream_configs``, and an ``incremental_sync``), as airbyte-cdk
  requires when it builds the migration;
* config rules: paths are not empty, and a JSON Schema written in the
  manifest (``ValidateAdheresToSchema.base_schema``) is one.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from framework.diagnostics import Diagnostic
from framework.manifest.components import Placement, Site
from framework.models import (
    ConditionalStreams,
    ConfigAddFields,
    ConfigRemapField,
    DpathValidator,
    LegacyToPerPartitionStateMigration,
    StateDelegatingStream,
    ValidateAdheresToSchema,
)
from framework.models.source import DeclarativeStream

__all__ = ["listed_stream_group", "migration_checks"]

_STREAMS = (DeclarativeStream, StateDelegatingStream)


def listed_stream_group(site: Site) -> Any:
    """``False`` when ``site`` is not a stream the source lists; else ``None`` for one listed at the top
    of ``streams``, or the index of the ``ConditionalStreams`` that holds it."""
    if site.model not in _STREAMS or not site.path or site.path[0] != "streams":
        return False
    if len(site.path) == 2:
        return None
    if len(site.path) == 4 and site.path[2] == "streams":
        return site.path[1]
    return False


def migration_checks(sites: list[Site], place: Placement) -> Iterator[Diagnostic]:
    by_path = {site.path: site for site in sites}
    for site in sites:
        if site.model is StateDelegatingStream:
            yield from _delegating(site, place)
        elif site.model is LegacyToPerPartitionStateMigration:
            owner = by_path.get(site.path[:-2])
            if owner is not None and owner.model is DeclarativeStream:
                yield from _legacy_migration(site, owner, place)
        elif site.model is ConfigRemapField and site.data.get("field_path") == []:
            yield place.diagnostic(site.path + ("field_path",), "empty-path", "`field_path` is empty",
                                   "name the keys leading to the value to remap, like `[region]`")
        elif site.model is DpathValidator and site.data.get("field_path") == []:
            yield place.diagnostic(site.path + ("field_path",), "empty-path", "`field_path` is empty",
                                   "name the keys leading to the value to check, like `[custom_reports]`")
        elif site.model is ConfigAddFields:
            for index, item in enumerate(site.data.get("fields") or ()):
                if isinstance(item, dict) and item.get("path") == []:
                    yield place.diagnostic(site.path + ("fields", index, "path"), "empty-path",
                                           "the field's `path` is empty", "name where the field goes, like `[region]`")
        elif site.model is ValidateAdheresToSchema:
            yield from _base_schema(site, place)
        elif site.model is ConditionalStreams and site.data.get("streams") == []:
            yield place.diagnostic(site.path + ("streams",), "no-streams", "ConditionalStreams holds no streams",
                                   "list the streams that exist when the condition holds", severity="warning")


def _delegating(site: Site, place: Placement) -> Iterator[Diagnostic]:
    name = site.data.get("name")
    for key in ("full_refresh_stream", "incremental_stream"):
        inner = site.data.get(key)
        if isinstance(inner, dict) and isinstance(name, str) and inner.get("name") != name:
            at = site.path + (key, "name") if "name" in inner else site.path + (key,)
            yield place.diagnostic(at, "delegate-name",
                                   f"`{key}` is named `{inner.get('name')}`, not `{name}` as its StateDelegatingStream",
                                   f"give both definitions the name `{name}` (or set it once in the "
                                   "StateDelegatingStream's `$parameters`)")


def _legacy_migration(site: Site, owner: Site, place: Placement) -> Iterator[Diagnostic]:
    where = site.path + ("type",)
    retriever = owner.data.get("retriever")
    if not isinstance(retriever, dict) or retriever.get("type") != "SimpleRetriever":
        yield place.diagnostic(where, "legacy-migration",
                               "LegacyToPerPartitionStateMigration needs a stream read by a SimpleRetriever",
                               "remove it, or use a CustomStateMigration")
        return
    router = retriever.get("partition_router")
    if isinstance(router, dict) and router.get("type") == "UnionPartitionRouter":
        pass  # its partitions are normalised to its one `partition_field`
    elif not isinstance(router, dict) or router.get("type") not in ("SubstreamPartitionRouter",
                                                                  "CustomPartitionRouter") \
            or not isinstance(router.get("parent_stream_configs"), list):
        yield place.diagnostic(where, "legacy-migration",
                               "LegacyToPerPartitionStateMigration needs the stream's `partition_router` to be one "
                               "SubstreamPartitionRouter (or a CustomPartitionRouter with `parent_stream_configs`): "
                               "the migrated state's partition field is its parent's `partition_field`",
                               "remove it, or give the stream a SubstreamPartitionRouter")
        return
    elif not router["parent_stream_configs"]:
        yield place.diagnostic(where, "legacy-migration", "the stream's router lists no parent stream",
                               "add the parent to `parent_stream_configs`")
    if not isinstance(owner.data.get("incremental_sync"), dict):
        yield place.diagnostic(where, "legacy-migration",
                               "LegacyToPerPartitionStateMigration needs the stream's `incremental_sync`: the "
                               "migrated state's cursor field is its `cursor_field`",
                               "add an incremental_sync, or remove the migration")


def _base_schema(site: Site, place: Placement) -> Iterator[Diagnostic]:
    schema = site.data.get("base_schema")
    at = site.path + ("base_schema",)
    if isinstance(schema, str):
        if "{{" in schema or "{%" in schema:
            return  # rendered with the config at run time
        try:
            schema = json.loads(schema)
        except ValueError as exc:
            yield place.diagnostic(at, "bad-schema", f"`base_schema` is not JSON: {exc}",
                                   "write the JSON Schema as a mapping")
            return
    if not isinstance(schema, dict):
        if schema is not None:
            yield place.diagnostic(at, "bad-schema", "`base_schema` must be a JSON Schema (a mapping)",
                                   "write the JSON Schema as a mapping")
        return
    import jsonschema  # only here: most manifests have no validations

    try:
        jsonschema.validators.validator_for(schema, default=jsonschema.Draft7Validator).check_schema(schema)
    except jsonschema.SchemaError as exc:
        yield place.diagnostic(at + tuple(exc.path), "bad-schema",
                               f"`base_schema` is not a valid JSON Schema: {exc.message}")
