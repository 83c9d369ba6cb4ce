"""The runtime of QueryProperties: which properties each request asks for, and merging the answers.

For every page, :meth:`QueryPropertiesReader.read_page` sends one request per
chunk of the properties (the page token is the same for all of them), puts
the chunk in the slice's ``extra_fields['query_properties']`` (and, when the
QueryProperties sits in ``request_parameters``, in that parameter,
comma-separated), and merges the records of the chunks by the merge key:
records with the same key values become one (nested objects merged), records
without them pass as they are. The merge covers one page of one slice, so it
happens wherever that slice is read: a Spark task merges the chunks it reads.

The property list of a ``PropertiesFromEndpoint`` is read once per sync: on
first use by the process that reads (protocol mode), or by the driver before
the tasks start, which then get the list with the connector
(:func:`resolved_query_properties`, :func:`with_resolved_query_properties`).
A ``JsonSchemaPropertySelector`` narrows the properties to the configured
catalog's schema of the stream (:func:`with_catalog`); without a catalog every
property is asked for.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Iterable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson
from msgspec import Struct

from framework.components.context import BuildContext, builds
from framework.components.slices import EMPTY_SLICE, SliceView, StreamSlice
from framework.errors import ConfigError
from framework.models import (
    CustomRetriever,
    GroupByKeyMergeStrategy,
    HttpRequester,
    JsonSchemaPropertySelector,
    PropertiesFromEndpoint,
    PropertyChunking,
    QueryProperties,
    SimpleRetriever,
)
from framework.values import replace

if TYPE_CHECKING:
    from framework.components.http.transport import HttpResponse
    from framework.components.records import Transformation
    from framework.components.retriever import Retriever
    from framework.components.stream import Stream

#: What one request of a page answered: the response (None when the error handler ignored it), the records
#: as the API sent them, and the records the selector kept.
Fetched = tuple["HttpResponse | None", "list[dict] | None", list[dict]]  # page None: a streamed body left unread


class Chunking(Struct, frozen=True):
    """PropertyChunking: how many properties (or characters) a request may carry, and the merge key."""

    limit_type: str  # "characters" or "property_count"
    limit: int | None
    merge_key: tuple[str, ...] = ("id",)

    def split(self, fields: Sequence[str], always: Sequence[str] | None,
              configured: frozenset[str] | None) -> list[list[str]]:
        """The chunks, as Airbyte cuts them: ``always`` starts every chunk and does not count towards
        the limit; without a limit, one chunk of every field followed by ``always``."""
        if not self.limit:
            return [list(fields) + list(always or ())]
        chunks: list[list[str]] = []
        current, size = list(always or ()), 0
        for name in fields:
            if configured is not None and name not in configured:
                continue
            weight = len(name) + 3 if self.limit_type == "characters" else 1  # 3: the encoded comma
            if size + weight > self.limit:
                chunks.append(current)
                current, size = list(always or ()), 0
            current.append(name)
            size += weight
        chunks.append(current)
        return chunks

    def key_of(self, record: Mapping[str, Any]) -> tuple | None:
        """The record's merge key, or None when one of its fields is missing, null or empty text."""
        values = []
        for name in self.merge_key:
            value = record.get(name)
            if value is None or value == "":
                return None
            values.append(orjson.dumps(value) if isinstance(value, (dict, list)) else value)
        return tuple(values)


def merge_by_key(pages: Iterable[list[dict]], key_of: Callable[[Mapping[str, Any]], tuple | None]) -> list[dict]:
    """The records of a page's chunks as one list: records without a key first (as they came), then one
    record per key, in the order the keys were first seen, later chunks' values merged over earlier ones."""
    loose: list[dict] = []
    merged: dict[tuple, dict] = {}
    for records in pages:
        for record in records:
            key = key_of(record)
            if key is None:
                loose.append(record)
            else:
                target = merged.get(key)
                if target is None:
                    merged[key] = target = {}
                deep_merge(target, record)
    return loose + list(merged.values())


def deep_merge(target: MutableMapping[str, Any], source: Mapping[str, Any]) -> None:
    """Merge ``source`` into ``target``: objects on both sides are merged, any other value replaces."""
    for key, value in source.items():
        current = target.get(key)
        if isinstance(current, MutableMapping) and isinstance(value, Mapping):
            deep_merge(current, value)
        else:
            target[key] = value


class _Once:
    """A value computed on first use and kept; threads reading partitions at once compute it once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._value: tuple[str, ...] | None = None

    def get(self, compute: Callable[[], tuple[str, ...]]) -> tuple[str, ...]:
        with self._lock:
            if self._value is None:
                self._value = compute()
            return self._value


@dataclass(frozen=True)
class PropertiesEndpoint:
    """PropertiesFromEndpoint: the property names read from the API, once."""

    retriever: Retriever
    field_path: tuple[str, ...]
    config: Mapping[str, Any]
    once: _Once = field(default_factory=_Once, compare=False, repr=False)

    def properties(self) -> tuple[str, ...]:
        return self.once.get(self._read)

    def _read(self) -> tuple[str, ...]:
        return tuple(property_name(record, self.field_path)
                     for page in self.retriever.read(EMPTY_SLICE, self.config) for record in page)


def property_name(record: Any, path: Sequence[str]) -> str:
    """The value at ``path`` as text; ``[]`` when the path is missing (as Airbyte writes it)."""
    node = record
    for key in path:
        if isinstance(node, Mapping) and key in node:
            node = node[key]
        elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        else:
            return "[]"
    return str(node)


class PropertySelector(Struct, frozen=True):
    """JsonSchemaPropertySelector: the properties a configured stream's schema selects."""

    transformations: tuple[Transformation, ...]
    variables: Mapping[str, Any]

    def select(self, json_schema: Mapping[str, Any]) -> frozenset[str]:
        properties = copy.deepcopy(dict(json_schema.get("properties") or {}))
        for transformation in self.transformations:
            properties = transformation.apply(properties, self.variables)
        return frozenset(properties)


class QueryPropertiesReader(Struct, frozen=True):
    """A requester's QueryProperties: the chunks of properties, and reading a page chunk by chunk.

    ``parameter`` is the request parameter the chunk goes into (None when templates place it);
    ``configured`` the properties the catalog selects (None: no catalog, every property);
    ``fetched`` the endpoint's property list when the driver read it already.
    """

    parameter: str | None
    property_list: tuple[str, ...] | PropertiesEndpoint
    always_include: tuple[str, ...] | None = None
    chunking: Chunking | None = None
    selector: PropertySelector | None = None
    configured: frozenset[str] | None = None
    fetched: tuple[str, ...] | None = None

    def properties(self) -> tuple[str, ...]:
        if self.fetched is not None:
            return self.fetched
        if isinstance(self.property_list, PropertiesEndpoint):
            return self.property_list.properties()
        return self.property_list

    def chunks(self) -> list[list[str]]:
        fields = self.properties()
        configured = self.configured
        if self.chunking is not None:
            return self.chunking.split(fields, self.always_include, configured)
        chosen = [f for f in fields if f in configured] if configured is not None else list(fields)
        return [list(self.always_include or ()) + chosen]

    def read_page(self, stream_slice: StreamSlice, variables: Mapping[str, Any],
                  fetch: Callable[[Mapping[str, Any], Mapping[str, str]], Fetched]) -> Fetched:
        """One page: ``fetch(variables, params)`` per chunk, records merged when chunking says how.

        Answers the last chunk's response and page (what the paginator reads) and the merged records.
        """
        response: HttpResponse | None = None
        page: list[dict] | None = []  # never None here: query properties read bodies whole
        kept: list[list[dict]] = []
        for chunk in self.chunks():
            chunk_slice = StreamSlice(stream_slice.partition, stream_slice.cursor_slice, {"query_properties": chunk})
            params = {self.parameter: ",".join(chunk)} if self.parameter is not None else {}
            response, page, records = fetch({**variables, **_chunk_variables(chunk_slice)}, params)
            kept.append(records)
        if self.chunking is None:
            return response, page, [record for records in kept for record in records]
        return response, page, merge_by_key(kept, self.chunking.key_of)


def _chunk_variables(stream_slice: StreamSlice) -> dict[str, Any]:
    """The slice's template variables, ``stream_partition.extra_fields`` readable too (as in Airbyte)."""
    found = stream_slice.template_variables()
    partition = SliceView(stream_slice.partition)
    partition.partition = stream_slice.partition
    partition.cursor_slice = stream_slice.cursor_slice
    partition.extra_fields = stream_slice.extra_fields
    found["stream_partition"] = partition
    return found


# --- building ------------------------------------------------------------------------------------------


def build_query_properties(model: SimpleRetriever, ctx: BuildContext, path: tuple) -> QueryPropertiesReader | None:
    """The QueryProperties of a retriever's requester, where Airbyte takes it from: a value of
    ``request_parameters`` first, then ``query_properties``, then ``fetch_properties_from_endpoint``."""
    requester = model.requester
    if not isinstance(requester, HttpRequester):
        return None
    where = path + ("requester",)
    params = requester.request_parameters
    if isinstance(params, Mapping):
        for key, value in params.items():
            if isinstance(value, QueryProperties):
                built: QueryPropertiesReader = ctx.build(value, where + ("request_parameters", key))
                return replace(built, parameter=str(key))
    if requester.query_properties is not None:
        return ctx.build(requester.query_properties, where + ("query_properties",))
    if requester.fetch_properties_from_endpoint is not None:
        endpoint = ctx.build(requester.fetch_properties_from_endpoint, where + ("fetch_properties_from_endpoint",))
        return QueryPropertiesReader(None, endpoint)
    return None


@builds("QueryProperties")
def build_query_properties_reader(model: QueryProperties, ctx: BuildContext, path: tuple) -> QueryPropertiesReader:
    listed = model.property_list
    property_list = listed if isinstance(listed, tuple) else ctx.build(listed, path + ("property_list",))
    chunking = ctx.build(model.property_chunking, path + ("property_chunking",)) if model.property_chunking else None
    selector = ctx.build(model.property_selector, path + ("property_selector",)) if model.property_selector else None
    return QueryPropertiesReader(None, property_list, model.always_include_properties, chunking, selector)


@builds("PropertiesFromEndpoint")
def build_properties_from_endpoint(model: PropertiesFromEndpoint, ctx: BuildContext, path: tuple) -> PropertiesEndpoint:
    if isinstance(model.retriever, CustomRetriever):
        raise ConfigError(f"a PropertiesFromEndpoint reads its properties with a SimpleRetriever; a CustomRetriever "
                          f"(`{model.retriever.class_name}`) is not supported there"
                          f"{_at(ctx.place(path + ('retriever',)))}")
    retriever = ctx.build(model.retriever, path + ("retriever",))
    field_path = tuple(str(ctx.render(key, model.parameters)) for key in model.property_field_path)
    return PropertiesEndpoint(retriever, field_path, ctx.config)


def _at(place: str | None) -> str:
    return f" (at {place})" if place else ""


@builds("PropertyChunking")
def build_property_chunking(model: PropertyChunking, ctx: BuildContext, path: tuple) -> Chunking:
    strategy: GroupByKeyMergeStrategy | None = model.record_merge_strategy
    key = ("id",) if strategy is None else ((strategy.key,) if isinstance(strategy.key, str) else strategy.key)
    return Chunking(model.property_limit_type, model.property_limit, tuple(key))


@builds("JsonSchemaPropertySelector")
def build_property_selector(model: JsonSchemaPropertySelector, ctx: BuildContext, path: tuple) -> PropertySelector:
    transformations = tuple(ctx.build(t, path + ("transformations", i)) for i, t in enumerate(model.transformations))
    return PropertySelector(transformations, ctx.variables(model.parameters))


# --- a sync's catalog and the driver's property lists ---------------------------------------------------


def _reader(stream: Stream) -> QueryPropertiesReader | None:
    retriever = stream.retriever
    return retriever.query_properties if retriever is not None else None


def _with_reader(stream: Stream, reader: QueryPropertiesReader) -> Stream:
    assert stream.retriever is not None
    return replace(stream, retriever=replace(stream.retriever, query_properties=reader))


def with_catalog(streams: Mapping[str, Stream], catalog: Mapping[str, Any] | None) -> dict[str, Stream]:
    """``streams`` with each selector narrowed to its stream's schema in the configured ``catalog``
    (a stream the catalog leaves out, or without a selector, is unchanged)."""
    out = dict(streams)
    entries = catalog.get("streams") if isinstance(catalog, Mapping) else None
    for entry in entries if isinstance(entries, list) else ():
        stream_entry = entry.get("stream") if isinstance(entry, Mapping) else None
        name = stream_entry.get("name") if isinstance(stream_entry, Mapping) else None
        stream = out.get(name) if isinstance(name, str) else None
        reader = _reader(stream) if stream is not None else None
        if stream is None or reader is None or reader.selector is None:
            continue
        schema = stream_entry.get("json_schema") if isinstance(stream_entry, Mapping) else None
        configured = reader.selector.select(schema if isinstance(schema, Mapping) else {})
        out[stream.name] = _with_reader(stream, replace(reader, configured=configured))
    return out


def resolved_query_properties(streams: Mapping[str, Stream]) -> dict[str, dict[str, Any]]:
    """What a worker needs to ask for the same properties as this process, by stream: the properties
    read from an endpoint (read now, once) and the catalog's selection."""
    out: dict[str, dict[str, Any]] = {}
    for name, stream in streams.items():
        reader = _reader(stream)
        if reader is None:
            continue
        entry: dict[str, Any] = {}
        if isinstance(reader.property_list, PropertiesEndpoint):
            entry["properties"] = list(reader.properties())
        if reader.configured is not None:
            entry["configured"] = sorted(reader.configured)
        if entry:
            out[name] = entry
    return out


def with_resolved_query_properties(streams: Mapping[str, Stream],
                                   resolved: Mapping[str, Mapping[str, Any]]) -> dict[str, Stream]:
    """``streams`` asking for the properties :func:`resolved_query_properties` gave (no endpoint read)."""
    out = dict(streams)
    for name, entry in resolved.items():
        stream = out.get(name)
        reader = _reader(stream) if stream is not None else None
        if stream is None or reader is None:
            continue
        properties, configured = entry.get("properties"), entry.get("configured")
        out[name] = _with_reader(stream, replace(
            reader, fetched=tuple(properties) if properties is not None else reader.fetched,
            configured=frozenset(configured) if configured is not None else reader.configured))
    return out


__all__ = ["Chunking", "PropertiesEndpoint", "PropertySelector", "QueryPropertiesReader", "build_query_properties",
           "deep_merge", "merge_by_key", "property_name", "resolved_query_properties",
           "with_catalog", "with_resolved_query_properties"]
