"""The runtime of a DeclarativeStream: its name, schema, key, and how to read a slice.

A :class:`Stream` is built once per connector run and is immutable; what
changes during a sync (state, finished partitions) lives in
:mod:`framework.engine.sync`. Reading a slice needs only the stream, the
config and the slice, which is what lets a Spark executor read one.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from msgspec import Struct, field
from pydantic import BaseModel

from framework.components.context import BuildContext, builds
from framework.components.custom.names import resolve_class_name
from framework.components.http.request import RequestParts
from framework.components.incremental import DatetimeCursor
from framework.components.partitions import Router, build_router
from framework.components.records import load_schema
from framework.components.retriever import Retriever
from framework.components.slices import StreamSlice
from framework.errors import ConfigError, ReadError, place_suffix
from framework.models import DeclarativeStream, StateDelegatingStream
from framework.models.custom import CustomComponent, CustomPartitionRouter, CustomRequester, CustomRetriever
from framework.values import replace

if TYPE_CHECKING:
    from framework.components.incremental import Cursor


def key_paths(primary_key: Any) -> tuple[tuple[str, ...], ...]:
    """A primary key as paths: ``"id"`` -> ``(("id",),)``, ``["a", "b"]`` -> ``(("a",), ("b",))``,
    ``[["a", "b"]]`` -> ``(("a", "b"),)``."""
    if primary_key is None or primary_key == "" or primary_key == ():
        return ()
    if isinstance(primary_key, str):
        return ((primary_key,),)
    return tuple((part,) if isinstance(part, str) else tuple(part) for part in primary_key)


class Stream(Struct, frozen=True):
    """A stream: ``bridge`` says why airbyte-cdk reads it (a custom retriever or requester), and then
    ``retriever`` is None: the engine reads it through :mod:`framework.engine.bridge`."""

    name: str
    retriever: Retriever | None
    json_schema: Mapping[str, Any]
    primary_key: tuple[tuple[str, ...], ...] = ()
    cursor: Cursor | None = None
    router: Router | None = None
    parameters: Mapping[str, Any] = field(default_factory=dict)
    place: str | None = None
    bridge: str | None = None

    @property
    def cursor_field(self) -> str | None:
        return self.cursor.cursor_field if self.cursor is not None else None

    def slice_options(self, parts: RequestParts, stream_slice: StreamSlice) -> None:
        """Put the slice's request options (partition values, window bounds) into a request."""
        if self.router is not None:
            self.router.apply(parts, stream_slice)
        if self.cursor is not None and stream_slice.cursor_slice:
            self.cursor.apply(parts, stream_slice.cursor_slice)

    def with_cursor_field(self, cursor_field: str | None) -> Stream:
        """This stream with the cursor field a configured catalog chose (where the stream lets it choose:
        ``allow_catalog_defined_cursor_field``); itself when ``cursor_field`` is None or there is no cursor."""
        if cursor_field is None or self.cursor is None or cursor_field == self.cursor.cursor_field:
            return self
        return replace(self, cursor=replace(self.cursor, cursor_field=cursor_field))

    def read_slice(self, stream_slice: StreamSlice, config: Mapping[str, Any],
                   stream_state: Mapping[str, Any] | None = None) -> Iterator[list[dict]]:
        """The records of one slice, one list per page; errors name this stream."""
        if self.retriever is None:
            raise ConfigError(f"stream `{self.name}` is read through airbyte-cdk ({self.bridge}), not slice by "
                              f"slice here{place_suffix(self.place)}")
        try:
            # pagination restarts and window splits work on a datetime cursor's windows
            windows = self.cursor if isinstance(self.cursor, DatetimeCursor) else None
            yield from self.retriever.read(stream_slice, config, slice_options=self.slice_options,
                                           stream_state=stream_state, cursor=windows)
        except ReadError as exc:
            exc.with_context(stream=self.name, place=self.place)
            raise

    def catalog_entry(self) -> dict[str, Any]:
        """This stream as an Airbyte catalog entry (for ``--discover``)."""
        return catalog_entry(self.name, self.json_schema, self.primary_key, self.cursor_field,
                             incremental=self.cursor is not None,
                             source_defined=self.cursor is None or not self.cursor.catalog_cursor_field)


def catalog_entry(name: str, json_schema: Mapping[str, Any], primary_key: tuple[tuple[str, ...], ...],
                  cursor_field: str | None, *, incremental: bool | None = None,
                  source_defined: bool = True) -> dict[str, Any]:
    """A stream as an Airbyte catalog entry: ``incremental`` (by default: it has a cursor field) adds the
    incremental sync mode and the cursor field; ``source_defined`` false says the configured catalog may
    choose another cursor field (``allow_catalog_defined_cursor_field``)."""
    incremental = cursor_field is not None if incremental is None else incremental
    entry: dict[str, Any] = {
        "name": name,
        "json_schema": dict(json_schema),
        "supported_sync_modes": ["full_refresh", "incremental"] if incremental else ["full_refresh"],
        "is_resumable": incremental,
    }
    if incremental:
        entry["source_defined_cursor"] = source_defined
        if cursor_field is not None:
            entry["default_cursor_field"] = [cursor_field]
    if primary_key:
        entry["source_defined_primary_key"] = [list(path) for path in primary_key]
    return entry


@builds("DeclarativeStream")
def build_stream(model: DeclarativeStream, ctx: BuildContext, path: tuple) -> Stream:
    ctx = ctx.within_stream(model.name)
    reason = bridge_reason(model, functools.partial(_is_airbyte_class, ctx=ctx, path=path))
    if reason is not None:
        return _bridged_stream(model, ctx, path, reason)
    retriever: Retriever = ctx.build(model.retriever, path + ("retriever",))
    transformations = [ctx.build(t, path + ("transformations", i)) for i, t in enumerate(model.transformations)]
    preloaded = ctx.schemas.get(model.name)
    schema = dict(preloaded) if preloaded is not None else load_schema(model.schema_loader, ctx, model.name,
                                                                       path + ("schema_loader",))
    selector = retriever.selector
    if transformations:
        selector = selector.with_transformations(transformations)
    if hasattr(selector, "with_schema"):
        selector = selector.with_schema(schema)
    if model.file_uploader is not None:  # a file per record (imported here: it brings the storage layer)
        from framework.components.records.file_upload import file_schema, uploading

        schema = file_schema(schema)
        selector = uploading(selector, ctx.build(model.file_uploader, path + ("file_uploader",)), model.name)
    if selector is not retriever.selector:
        retriever = replace(retriever, selector=selector)
    cursor = ctx.build(model.incremental_sync, path + ("incremental_sync",)) if model.incremental_sync else None
    client_side = getattr(retriever.selector, "with_client_side_incremental", None)
    if getattr(cursor, "is_client_side_incremental", False) and client_side is not None:
        retriever = replace(retriever, selector=client_side())  # transformations before the filter
    router = None
    routing = getattr(model.retriever, "partition_router", None)  # a CustomRetriever has none of ours
    if routing is not None:
        router = build_router(routing, ctx, path + ("retriever", "partition_router"))
    return Stream(
        name=model.name,
        retriever=retriever,
        json_schema=schema,
        primary_key=key_paths(model.primary_key),
        cursor=cursor,
        router=router,
        parameters=model.parameters,
        place=ctx.place(path),
    )


def bridge_reason(model: DeclarativeStream,
                  airbyte_class: Callable[[CustomComponent], bool] | None = None) -> str | None:
    """Why airbyte-cdk must read the stream, or None when the engine reads it (the one rule).

    User code drives the read: a ``CustomRetriever`` or ``CustomRequester``
    owns the request loop; a ``CustomPartitionRouter`` subclassing Airbyte's
    whose parents are read incrementally (``incremental_dependency``) keeps
    their state in Airbyte's router, which only Airbyte's reader saves; or a
    parent stream of its router is itself read through airbyte-cdk.
    ``airbyte_class`` tells whether a component's class subclasses one of
    airbyte-cdk's (it loads the class); without it, any such router is taken
    for one and nothing is imported.
    """
    retriever = model.retriever
    if isinstance(retriever, CustomRetriever):
        return f"its retriever is a CustomRetriever (`{retriever.class_name}`)"
    requester = getattr(retriever, "requester", None)
    if isinstance(requester, CustomRequester):
        return f"its retriever.requester is a CustomRequester (`{requester.class_name}`)"
    router = getattr(retriever, "partition_router", None)
    for one in router if isinstance(router, (list, tuple)) else (router,):
        if isinstance(one, CustomPartitionRouter):
            configs = one.options.get("parent_stream_configs")
            if isinstance(configs, (list, tuple)) and any(
                    isinstance(c, Mapping) and c.get("incremental_dependency") is True for c in configs) and (
                    airbyte_class is None or airbyte_class(one)):
                return (f"its partition router `{one.class_name}` reads its parents incrementally "
                        "(incremental_dependency)")
        for parent in getattr(one, "parent_stream_configs", None) or ():
            stream = getattr(parent, "stream", None)
            inner = (stream.full_refresh_stream, stream.incremental_stream) \
                if isinstance(stream, StateDelegatingStream) else (stream,)
            if any(isinstance(one_stream, DeclarativeStream) and bridge_reason(one_stream, airbyte_class) is not None
                   for one_stream in inner):
                return f"its parent stream `{getattr(stream, 'name', '?')}` is read through airbyte-cdk"
    return None


def _is_airbyte_class(model: CustomComponent, *, ctx: BuildContext, path: tuple) -> bool:
    """Whether ``model``'s class subclasses an airbyte-cdk class (loaded through the custom-code gate)."""
    from framework.components.custom.airbyte import is_airbyte_class

    ref = resolve_class_name(model.class_name, ctx.base_dir or os.getcwd())
    return is_airbyte_class(ctx.code.load_class(ref, model.kind, ctx.place(path)))


def _custom_classes(value: Any, path: tuple) -> Iterator[tuple[str, str, tuple]]:
    """``(class_name, kind, path)`` of every custom component in a model or mapping, nested ones too."""
    if isinstance(value, CustomComponent):
        yield value.class_name, value.kind, path
        yield from _custom_classes(value.options, path)
    elif isinstance(value, Mapping):
        if isinstance(value.get("class_name"), str):
            yield value["class_name"], "component", path
        for key, item in value.items():
            yield from _custom_classes(item, path + (key,))
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            yield from _custom_classes(item, path + (index,))
    elif isinstance(value, BaseModel):  # a model: its fields
        for name in type(value).model_fields:
            yield from _custom_classes(getattr(value, name), path + (name,))


def _bridged_stream(model: DeclarativeStream, ctx: BuildContext, path: tuple, reason: str) -> Stream:
    """A stream airbyte-cdk reads: its name, schema, key and cursor (for the catalog), no retriever.

    Its custom classes are loaded here, behind the custom-code gate, so that
    airbyte-cdk's factory finds them by import; without airbyte-cdk, a
    :class:`~framework.errors.ConfigError` names the extra.
    """
    from framework.components.custom.airbyte import airbyte_available, missing_airbyte_error

    place = ctx.place(path)
    if not airbyte_available():
        raise missing_airbyte_error(f"stream `{model.name}` ({reason})", place)
    for class_name, kind, where in _custom_classes(model, path):
        ref = resolve_class_name(class_name, ctx.base_dir or os.getcwd())
        ctx.code.load_class(ref, kind, ctx.place(where) or place)
    preloaded = ctx.schemas.get(model.name)
    schema = dict(preloaded) if preloaded is not None else load_schema(model.schema_loader, ctx, model.name,
                                                                       path + ("schema_loader",))
    cursor = ctx.build(model.incremental_sync, path + ("incremental_sync",)) if model.incremental_sync else None
    return Stream(name=model.name, retriever=None, json_schema=schema, primary_key=key_paths(model.primary_key),
                  cursor=cursor, parameters=model.parameters, place=place, bridge=reason)


__all__ = ["Stream", "bridge_reason", "build_stream", "catalog_entry", "key_paths"]
