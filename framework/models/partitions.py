"""Partition routers: how a stream is split into independent partitions."""

from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import Field, model_validator

from framework.models.base import BASE, Component, spec
from framework.models.custom import CustomPartitionRouter
from framework.models.requests import RequestOption

if TYPE_CHECKING:  # source imports this module: a stream has a partition router (see back_references)
    from framework.models.source import DeclarativeStream, StateDelegatingStream


class ListPartitionRouter(Component):
    """One partition per value of a fixed list."""

    type: Literal["ListPartitionRouter"] = spec("Component type.", "ListPartitionRouter", "ListPartitionRouter")
    values: tuple[str, ...] | str = spec(
        "The values; a template string must render a list.",
        ["active", "archived"],
        template=BASE,
        result="object",
    )
    cursor_field: str = spec(
        "Name of the value in `stream_partition`.", "status", template=BASE
    )
    request_option: RequestOption | None = spec(
        "Where the value goes in the request.",
        {"type": "RequestOption", "inject_into": "request_parameter", "field_name": "status"},
        None,
    )


class ParentStreamConfig(Component):
    """A parent stream whose records each make one partition of the child."""

    type: Literal["ParentStreamConfig"] = spec("Component type.", "ParentStreamConfig", "ParentStreamConfig")
    stream: Annotated["DeclarativeStream | StateDelegatingStream", Field(discriminator="type")] = spec(
        "The parent stream: a DeclarativeStream, or a StateDelegatingStream (its incremental definition reads "
        "when the child's state holds the parent's, the full-refresh one otherwise).",
        {"$ref": "#/definitions/accounts_stream"}, default_type="DeclarativeStream")
    parent_key: str = spec(
        "Field of the parent record that identifies the partition; dots or a path for nested fields.",
        "id",
        template=BASE,
    )
    partition_field: str = spec(
        "Name of the parent's key in `stream_partition`.", "account_id", template=BASE
    )
    request_option: RequestOption | None = spec(
        "Where the parent's key goes in the request.",
        {"type": "RequestOption", "inject_into": "request_parameter", "field_name": "account_id"},
        None,
    )
    incremental_dependency: bool = spec(
        "Read the parent incrementally too, keeping its state beside the child's.", True, False
    )
    extra_fields: tuple[tuple[str, ...], ...] = spec(
        "More parent fields (as paths) copied into `stream_slice.extra_fields`, keyed by their dotted path.",
        [["name"], ["owner", "id"]], (),
        template=BASE,
    )
    lazy_read_pointer: tuple[str, ...] = spec(
        "Path, in a parent record, of the child's first page that the parent already holds: on a first sync "
        "(one window per partition) that page is read from there instead of requested; the child's paginator "
        "requests the pages after it.",
        ["orders"], (), template=BASE,
    )

    @model_validator(mode="after")
    def _direct_pointer(self) -> "ParentStreamConfig":
        if any("*" in part for part in self.lazy_read_pointer):
            raise ValueError("`lazy_read_pointer` takes a direct path; the `*` wildcard is not supported")
        return self


class SubstreamPartitionRouter(Component):
    """One partition per record of one or more parent streams."""

    type: Literal["SubstreamPartitionRouter"] = spec(
        "Component type.", "SubstreamPartitionRouter", "SubstreamPartitionRouter"
    )
    parent_stream_configs: tuple[ParentStreamConfig, ...] = spec(
        "The parents.",
        [{"type": "ParentStreamConfig", "stream": {"$ref": "#/definitions/accounts_stream"},
          "parent_key": "id", "partition_field": "account_id"}],
        default_type="ParentStreamConfig",
    )


class UnionPartitionRouter(Component):
    """The partitions of several routers, one after the other, each value once, under one `partition_field`."""

    type: Literal["UnionPartitionRouter"] = spec("Component type.", "UnionPartitionRouter", "UnionPartitionRouter")
    partition_field: str = spec(
        "The one key of every partition: each child router must make partitions with this key.", "account_id",
        template=BASE,
    )
    partition_routers: "tuple[ChildRouter, ...]" = spec(
        "The routers whose partitions are joined (two or more); their request options are not used: read the "
        "value through `stream_partition`.",
        [{"type": "ListPartitionRouter", "values": ["1", "2"], "cursor_field": "account_id"},
         {"type": "SubstreamPartitionRouter", "parent_stream_configs": [
             {"type": "ParentStreamConfig", "stream": {"$ref": "#/definitions/accounts_stream"},
              "parent_key": "id", "partition_field": "account_id"}]}],
    )

    @model_validator(mode="after")
    def _two_or_more(self) -> "UnionPartitionRouter":
        if len(self.partition_routers) < 2:
            raise ValueError("`partition_routers` needs at least two routers; use the router itself for one")
        for child in self.partition_routers:
            _no_request_option(child, "UnionPartitionRouter")
            if "{" not in self.partition_field:
                for name in _static_fields(child):
                    if name != self.partition_field:
                        raise ValueError(f"the union's `partition_field` is `{self.partition_field}`, but a "
                                         f"{child.type} in `partition_routers` names `{name}`; every child must "
                                         f"make partitions keyed `{self.partition_field}`")
        return self


class GroupingPartitionRouter(Component):
    """Several partitions of another router per request: each slice holds a list of their values."""

    type: Literal["GroupingPartitionRouter"] = spec(
        "Component type.", "GroupingPartitionRouter", "GroupingPartitionRouter"
    )
    group_size: int = spec("How many partitions go in one group (one request).", 50)
    underlying_partition_router: "ChildRouter" = spec(
        "The router whose partitions are grouped.",
        {"type": "ListPartitionRouter", "values": ["1", "2", "3"], "cursor_field": "board_id"},
    )
    deduplicate: bool = spec("Put each partition in only one group (the first it would go in).", True, True)

    @model_validator(mode="after")
    def _positive_size(self) -> "GroupingPartitionRouter":
        if self.group_size < 1:
            raise ValueError(f"`group_size` is {self.group_size}; it must be 1 or more")
        _no_request_option(self.underlying_partition_router, "GroupingPartitionRouter")
        return self


def _no_request_option(child: Component, owner: str) -> None:
    """Airbyte refuses request options under these routers: a grouped or joined value has no one request."""
    options = [child.request_option] if isinstance(child, ListPartitionRouter) else \
        [c.request_option for c in child.parent_stream_configs] if isinstance(child, SubstreamPartitionRouter) else []
    if any(option is not None for option in options):
        raise ValueError(f"a router under a {owner} cannot have a `request_option` (no single value to send); "
                         "remove it and put `{{ stream_partition.<field> }}` in the request instead")


def _static_fields(child: Component) -> list[str]:
    """The partition fields a child router names, where they are plain text."""
    if isinstance(child, ListPartitionRouter):
        names = [child.cursor_field]
    elif isinstance(child, SubstreamPartitionRouter):
        names = [c.partition_field for c in child.parent_stream_configs]
    elif isinstance(child, UnionPartitionRouter):
        names = [child.partition_field]
    else:
        names = []
    return [name for name in names if "{" not in name]


# The routers a GroupingPartitionRouter or UnionPartitionRouter may hold (Airbyte's schema).
ChildRouter = Annotated[
    ListPartitionRouter | SubstreamPartitionRouter | UnionPartitionRouter | CustomPartitionRouter,
    Field(discriminator="type"),
]

Router = Annotated[
    ListPartitionRouter | SubstreamPartitionRouter | GroupingPartitionRouter | UnionPartitionRouter
    | CustomPartitionRouter,
    Field(discriminator="type"),
]
PartitionRouter = Router | tuple[Router, ...]
