"""Partition routers: which partitions a stream is read in.

A router lists partitions (the ``partition`` part of a
:class:`~framework.components.slices.StreamSlice`) and puts a partition's values into a
request. :class:`ListRouter` takes them from a list; :class:`SubstreamRouter`
from the records of parent streams, which the caller reads and hands in (so
that parent state and progress stay with the sync, not with the router).
Several routers in a list form the cartesian product of their partitions.
:class:`GroupingRouter` puts several partitions of another router in one (a list
of values per key: one request for many parents); :class:`UnionRouter` joins the
partitions of several routers under one key, each value once. Neither puts
anything in the request (as in Airbyte): templates read ``stream_partition``.

Partitions are Airbyte's: ``{cursor_field: value}`` for a list,
``{partition_field: key, "parent_slice": <the parent's own partition>}`` for a
parent record (a record whose key is missing or null makes none), merged dicts
for a product. A parent's ``extra_fields`` go to the slice's ``extra_fields``
under their dotted path (``owner.name``), not into the partition. With
``lazy_read_pointer`` the child records a parent record already holds (the body
at that path) go to ``extra_fields["child_response"]``: on a first sync the
child's first page is read from there, not requested (:func:`embedded_response`).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import orjson
from msgspec import Struct
from pydantic import BaseModel
from requests.structures import CaseInsensitiveDict

from framework.components.context import BuildContext, builds
from framework.components.http.request import HttpRequest, Injection, RequestParts, injection_of
from framework.components.http.transport import HttpResponse
from framework.components.slices import StreamSlice
from framework.errors import ConfigError, place_suffix
from framework.models import (
    GroupingPartitionRouter,
    ListPartitionRouter,
    ParentStreamConfig,
    SubstreamPartitionRouter,
    UnionPartitionRouter,
)
from framework.models.partitions import PartitionRouter

if TYPE_CHECKING:
    from framework.components.delegating import Delegation
    from framework.components.stream import Stream

# A parent's records as the sync reads them: (tag, records) pairs, where the tag says which unit
# of the parent's sync the records came from, so the parent's state can wait for the children.
ParentPages = Iterator[tuple[Any, list[dict]]]
ReadParent = Callable[["ParentConfig"], ParentPages]


class Router(Protocol):
    """What a stream's partition router does: list partitions, put one into a request."""

    def partitions(self, read_parent: ReadParent) -> Iterator[RoutedPartition]: ...

    def apply(self, parts: RequestParts, stream_slice: StreamSlice) -> None: ...


class RoutedPartition(Struct, frozen=True):
    """A partition and, for substreams, the parent units it came from (``tags``)."""

    partition: Mapping[str, Any]
    extra_fields: Mapping[str, Any]
    tags: tuple = ()


class ListRouter(Struct, frozen=True):
    """ListPartitionRouter: one partition per value."""

    values: tuple[Any, ...]
    cursor_field: str
    option: Injection | None

    def partitions(self, read_parent: ReadParent) -> Iterator[RoutedPartition]:
        for value in self.values:
            yield RoutedPartition({self.cursor_field: value}, {})

    def apply(self, parts: RequestParts, stream_slice: StreamSlice) -> None:
        if self.option is not None:
            self.option.apply(parts, stream_slice.partition.get(self.cursor_field))


#: The key of ``extra_fields`` that holds a lazily read child's first page (Airbyte's name).
LAZY_KEY = "child_response"


class ParentConfig(Struct, frozen=True):
    """ParentStreamConfig at run time; ``parent_key`` and each extra field are paths (``a/b`` split);
    ``lazy`` the path of the child records in a parent record (``lazy_read_pointer``), empty when unset."""

    stream: Stream
    parent_key: tuple[str, ...]
    partition_field: str
    option: Injection | None
    incremental_dependency: bool
    extra_fields: tuple[tuple[str, ...], ...]
    lazy: tuple[str, ...] = ()
    #: a StateDelegatingStream parent's two definitions (``stream`` is its incremental one): the parent's
    #: state kept in the child's picks which reads (:class:`~framework.components.delegating.Delegation`)
    delegation: Delegation | None = None


def embedded_response(body: Any) -> HttpResponse:
    """A lazily read child's first page: the body a parent record held, as a 200 JSON response."""
    return HttpResponse(200, CaseInsensitiveDict({"Content-Type": "application/json"}), orjson.dumps(body),
                        HttpRequest("GET", "(the child records held by the parent record: lazy_read_pointer)"))


def _dig(record: Any, path: Sequence[str]) -> Any:
    for key in path:
        if isinstance(record, Mapping):
            record = record.get(key)
        elif isinstance(record, list) and key.isdigit() and int(key) < len(record):
            record = record[int(key)]
        else:
            return None
    return record


class SubstreamRouter(Struct, frozen=True):
    """SubstreamPartitionRouter: one partition per parent record (per parent, in order)."""

    parents: tuple[ParentConfig, ...]

    def partitions(self, read_parent: ReadParent) -> Iterator[RoutedPartition]:
        """The partitions of the parent records ``read_parent`` yields, tagged with their parent unit."""
        for parent in self.parents:
            for tag, records in read_parent(parent):
                for record in records:
                    value = _dig(record, parent.parent_key)
                    if value is None:  # parent records without the key are skipped
                        continue
                    extra = {".".join(path): _dig(record, path) for path in parent.extra_fields}
                    if parent.lazy:
                        found = _dig(record, parent.lazy)
                        extra = {LAZY_KEY: [] if found is None else found, **extra}
                    yield RoutedPartition({parent.partition_field: value, "parent_slice": tag_partition(tag)},
                                          extra, (tag,))

    def apply(self, parts: RequestParts, stream_slice: StreamSlice) -> None:
        for parent in self.parents:
            if parent.option is not None and parent.partition_field in stream_slice.partition:
                parent.option.apply(parts, stream_slice.partition[parent.partition_field])


def tag_partition(tag: Any) -> Mapping[str, Any]:
    """The parent's own partition, carried in the tag (``(parent name, unit index, partition)``)."""
    return tag[2] if isinstance(tag, tuple) and len(tag) > 2 else {}


class ProductRouter(Struct, frozen=True):
    """A list of routers: every combination of their partitions, the first router's varying slowest."""

    routers: tuple[Router, ...]

    def partitions(self, read_parent: ReadParent) -> Iterator[RoutedPartition]:
        lists = [list(router.partitions(read_parent)) for router in self.routers]
        for combo in itertools.product(*lists):
            partition: dict[str, Any] = {}
            extra: dict[str, Any] = {}
            tags: tuple = ()
            for part in combo:
                partition.update(part.partition)
                extra.update(part.extra_fields)
                tags += part.tags
            yield RoutedPartition(partition, extra, tags)

    def apply(self, parts: RequestParts, stream_slice: StreamSlice) -> None:
        for router in self.routers:
            router.apply(parts, stream_slice)


def _hashable(value: Any, what: str) -> Any:
    try:
        hash(value)
    except TypeError:
        raise ConfigError(f"{what} can only tell partition values apart when they are single values, not "
                          f"{value!r}; pick a `parent_key` or `cursor_field` that holds one value") from None
    return value


class GroupingRouter(Struct, frozen=True):
    """GroupingPartitionRouter: ``group_size`` partitions of ``router`` per partition.

    A group's partition maps each key of its members (``parent_slice`` too) to
    the list of their values, in order; ``extra_fields`` likewise. With
    ``deduplicate`` a value already grouped is skipped (across the whole sync).
    A member must have exactly one key besides ``parent_slice``.
    """

    router: Router
    size: int
    deduplicate: bool = True
    place: str | None = None

    def partitions(self, read_parent: ReadParent) -> Iterator[RoutedPartition]:
        batch: list[RoutedPartition] = []
        seen: set[Any] = set()
        for part in self.router.partitions(read_parent):
            keys = [key for key in part.partition if key != "parent_slice"]
            if len(keys) != 1:
                raise ConfigError(f"GroupingPartitionRouter groups partitions of one key, but its router made "
                                  f"{dict(part.partition)!r}{place_suffix(self.place)}; group a router with one "
                                  "partition field")
            if self.deduplicate:
                value = _hashable(part.partition[keys[0]], "GroupingPartitionRouter")
                if value in seen:
                    continue
                seen.add(value)
            batch.append(part)
            if len(batch) == self.size:
                yield _group(batch)
                batch = []
        if batch:
            yield _group(batch)

    def apply(self, parts: RequestParts, stream_slice: StreamSlice) -> None:
        return None


def _group(batch: list[RoutedPartition]) -> RoutedPartition:
    partition = {key: [part.partition.get(key) for part in batch] for key in batch[0].partition}
    extra_keys: dict[str, None] = {}
    for part in batch:
        extra_keys.update(dict.fromkeys(part.extra_fields))
    extra = {key: [part.extra_fields.get(key) for part in batch] for key in extra_keys}
    return RoutedPartition(partition, extra, tuple(tag for part in batch for tag in part.tags))


class UnionRouter(Struct, frozen=True):
    """UnionPartitionRouter: the partitions of each router in turn, as ``{field: value}``, each value once.

    A child's other partition keys (a substream's ``parent_slice``) move to
    ``extra_fields``, so a partition's identity (and its state) is its value alone.
    """

    routers: tuple[Router, ...]
    field: str
    place: str | None = None

    def partitions(self, read_parent: ReadParent) -> Iterator[RoutedPartition]:
        seen: set[Any] = set()
        for router in self.routers:
            for part in router.partitions(read_parent):
                if self.field not in part.partition:
                    raise ConfigError(f"UnionPartitionRouter: a child router made {dict(part.partition)!r}, without "
                                      f"`{self.field}`{place_suffix(self.place)}; every child must name its "
                                      f"partition field `{self.field}`")
                value = _hashable(part.partition[self.field], "UnionPartitionRouter")
                if value in seen:
                    continue
                seen.add(value)
                carried = {key: item for key, item in part.partition.items() if key != self.field}
                yield RoutedPartition({self.field: value}, {**part.extra_fields, **carried}, part.tags)

    def apply(self, parts: RequestParts, stream_slice: StreamSlice) -> None:
        return None


@builds("ListPartitionRouter")
def build_list_router(model: ListPartitionRouter, ctx: BuildContext, path: tuple) -> ListRouter:
    values = model.values
    if isinstance(values, str):
        values = ctx.render(values, model.parameters, "object")
        if not isinstance(values, (list, tuple)):
            raise ConfigError(f"ListPartitionRouter.values must render to a list, got {type(values).__name__}"
                              f" ({ctx.place(path + ('values',)) or 'manifest'})")
    cursor_field = ctx.render(model.cursor_field, model.parameters)
    option = injection_of(model.request_option, ctx) if model.request_option else None
    return ListRouter(tuple(values), cursor_field, option)


@builds("ParentStreamConfig")
def build_parent_config(model: ParentStreamConfig, ctx: BuildContext, path: tuple) -> ParentConfig:
    """One parent of a substream: its stream built (a StateDelegatingStream's definitions too), where its
    records' key goes."""
    from framework.components.delegating import Delegation  # it imports this module (through stream)

    parent_key = ctx.render(model.parent_key, model.parameters)
    stream = ctx.build(model.stream, path + ("stream",))
    delegation = None
    if isinstance(stream, Delegation):  # a StateDelegatingStream parent
        delegation, stream = stream, stream.incremental
    return ParentConfig(
        stream=stream,
        delegation=delegation,
        parent_key=tuple(parent_key.split("/")),
        partition_field=ctx.render(model.partition_field, model.parameters),
        option=ctx.build(model.request_option, path + ("request_option",)) if model.request_option else None,
        incremental_dependency=model.incremental_dependency,
        extra_fields=tuple(tuple(ctx.render(p, model.parameters) for p in extra) for extra in model.extra_fields),
        lazy=tuple(str(ctx.render(p, model.parameters)) for p in model.lazy_read_pointer),
    )


@builds("SubstreamPartitionRouter")
def build_substream_router(model: SubstreamPartitionRouter, ctx: BuildContext, path: tuple) -> SubstreamRouter:
    return SubstreamRouter(tuple(ctx.build(config, path + ("parent_stream_configs", i))
                                 for i, config in enumerate(model.parent_stream_configs)))


@builds("GroupingPartitionRouter")
def build_grouping_router(model: GroupingPartitionRouter, ctx: BuildContext, path: tuple) -> GroupingRouter:
    router = ctx.build(model.underlying_partition_router, path + ("underlying_partition_router",))
    return GroupingRouter(router, model.group_size, model.deduplicate, ctx.place(path))


@builds("UnionPartitionRouter")
def build_union_router(model: UnionPartitionRouter, ctx: BuildContext, path: tuple) -> UnionRouter:
    field = str(ctx.render(model.partition_field, model.parameters))
    routers = []
    for i, child in enumerate(model.partition_routers):
        here = path + ("partition_routers", i)
        for name in _partition_fields(child, ctx):
            if name != field:
                raise ConfigError(f"UnionPartitionRouter's partition field is `{field}`, but its "
                                  f"{child.type} names `{name}`{place_suffix(ctx.place(here) or ctx.place(path))}; "
                                  f"every child must make partitions keyed `{field}`")
        routers.append(ctx.build(child, here))
    return UnionRouter(tuple(routers), field, ctx.place(path))


def _partition_fields(model: Any, ctx: BuildContext) -> list[str]:
    """The partition fields a child of a union names, rendered (none known for a custom router)."""
    if isinstance(model, ListPartitionRouter):
        return [str(ctx.render(model.cursor_field, model.parameters))]
    if isinstance(model, SubstreamPartitionRouter):
        return [str(ctx.render(c.partition_field, c.parameters)) for c in model.parent_stream_configs]
    if isinstance(model, UnionPartitionRouter):
        return [str(ctx.render(model.partition_field, model.parameters))]
    return []


def build_router(model: PartitionRouter, ctx: BuildContext, path: tuple) -> Router:
    """A router, or the product of a list of routers."""
    if isinstance(model, (list, tuple)):
        routers = tuple(ctx.build(m, path + (i,)) for i, m in enumerate(model))
        return routers[0] if len(routers) == 1 else ProductRouter(routers)
    return ctx.build(model, path)


def parent_stream_names(models: Iterable[Any]) -> frozenset[str]:
    """The names of the streams some ``ParentStreamConfig`` in ``models`` (stream models, at any depth) reads:
    the streams whose requesters send through the sync's response cache, as airbyte-cdk caches them."""
    names: set[str] = set()
    seen: set[int] = set()
    pending = list(models)
    while pending:
        node = pending.pop()
        if isinstance(node, (list, tuple)):
            pending.extend(item for item in node if isinstance(item, (BaseModel, list, tuple)))
            continue
        if isinstance(node, Mapping):  # models by key (a SelectiveAuthenticator's); plain data (a schema) skipped
            pending.extend(item for item in node.values() if isinstance(item, BaseModel))
            continue
        if not isinstance(node, BaseModel) or id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, ParentStreamConfig):
            stream = node.stream
            for definition in (stream, getattr(stream, "full_refresh_stream", None),
                               getattr(stream, "incremental_stream", None)):
                name = getattr(definition, "name", None)
                if isinstance(name, str) and name:
                    names.add(name)
        for name in type(node).model_fields:
            value = getattr(node, name)
            if isinstance(value, (BaseModel, list, tuple, Mapping)):
                pending.append(value)
    return frozenset(names)


def parents_of(router: Router | None) -> Iterable[ParentConfig]:
    """The parent configs of a router (or of the routers in a product)."""
    if isinstance(router, SubstreamRouter):
        return router.parents
    if isinstance(router, (ProductRouter, UnionRouter)):
        return tuple(p for r in router.routers for p in parents_of(r))
    if isinstance(router, GroupingRouter):
        return parents_of(router.router)
    return ()


__all__ = ["LAZY_KEY", "GroupingRouter", "ListRouter", "ParentConfig", "ProductRouter", "RoutedPartition", "Router",
           "SubstreamRouter", "UnionRouter", "build_router", "embedded_response", "parent_stream_names", "parents_of",
           "tag_partition"]
