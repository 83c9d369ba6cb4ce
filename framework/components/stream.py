"""The runtime of a DeclarativeStream: its name, schema, key, and how to read a slice.

A :class:`Stream` is built once per connector run and is immutable; what
changes during a sync (state, finished partitions) lives in
:mod:`framework.engine.sync`. Reading a slice needs only the stream, the
config and the slice, which is what lets a Spark executor read one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from framework.components.http.request import RequestParts
from framework.components.partitions import Router, build_router
from framework.components.records import load_schema
from framework.components.registry import BuildContext, builds
from framework.components.retriever import Retriever
from framework.components.slices import StreamSlice
from framework.errors import ReadError
from framework.models import DeclarativeStream

if TYPE_CHECKING:
    from framework.components.incremental import DatetimeCursor


def key_paths(primary_key: Any) -> tuple[tuple[str, ...], ...]:
    """A primary key as paths: ``"id"`` -> ``(("id",),)``, ``["a", "b"]`` -> ``(("a",), ("b",))``,
    ``[["a", "b"]]`` -> ``(("a", "b"),)``."""
    if primary_key is None or primary_key == "" or primary_key == ():
        return ()
    if isinstance(primary_key, str):
        return ((primary_key,),)
    return tuple((part,) if isinstance(part, str) else tuple(part) for part in primary_key)


@dataclass(frozen=True)
class Stream:
    name: str
    retriever: Retriever
    json_schema: Mapping[str, Any]
    primary_key: tuple[tuple[str, ...], ...] = ()
    cursor: DatetimeCursor | None = None
    router: Router | None = None
    parameters: Mapping[str, Any] = field(default_factory=dict)
    place: str | None = None

    @property
    def cursor_field(self) -> str | None:
        return self.cursor.cursor_field if self.cursor is not None else None

    def slice_options(self, parts: RequestParts, stream_slice: StreamSlice) -> None:
        """Put the slice's request options (partition values, window bounds) into a request."""
        if self.router is not None:
            self.router.apply(parts, stream_slice)
        if self.cursor is not None and stream_slice.cursor_slice:
            self.cursor.apply(parts, stream_slice.cursor_slice)

    def read_slice(self, stream_slice: StreamSlice, config: Mapping[str, Any],
                   stream_state: Mapping[str, Any] | None = None) -> Iterator[list[dict]]:
        """The records of one slice, one list per page; errors name this stream."""
        try:
            yield from self.retriever.read(stream_slice, config, slice_options=self.slice_options,
                                           stream_state=stream_state)
        except ReadError as exc:
            exc.with_context(stream=self.name, place=self.place)
            raise

    def catalog_entry(self) -> dict[str, Any]:
        """This stream as an Airbyte catalog entry (for ``--discover``)."""
        return catalog_entry(self.name, self.json_schema, self.primary_key, self.cursor_field,
                             incremental=self.cursor is not None)


def catalog_entry(name: str, json_schema: Mapping[str, Any], primary_key: tuple[tuple[str, ...], ...],
                  cursor_field: str | None, *, incremental: bool | None = None) -> dict[str, Any]:
    """A stream as an Airbyte catalog entry: ``incremental`` (by default: it has a cursor field) adds the
    incremental sync mode and the cursor field."""
    incremental = cursor_field is not None if incremental is None else incremental
    entry: dict[str, Any] = {
        "name": name,
        "json_schema": dict(json_schema),
        "supported_sync_modes": ["full_refresh", "incremental"] if incremental else ["full_refresh"],
        "is_resumable": incremental,
    }
    if incremental:
        entry["source_defined_cursor"] = True
        if cursor_field is not None:
            entry["default_cursor_field"] = [cursor_field]
    if primary_key:
        entry["source_defined_primary_key"] = [list(path) for path in primary_key]
    return entry


@builds("DeclarativeStream")
def build_stream(model: DeclarativeStream, ctx: BuildContext, path: tuple) -> Stream:
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
    if selector is not retriever.selector:
        retriever = dataclasses.replace(retriever, selector=selector)
    cursor = ctx.build(model.incremental_sync, path + ("incremental_sync",)) if model.incremental_sync else None
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


__all__ = ["Stream", "build_stream", "catalog_entry", "key_paths"]
