"""Partition routers: how a stream is split into independent partitions."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from framework.models.base import BASE, Component, spec
from framework.models.custom import CustomPartitionRouter
from framework.models.requests import RequestOption


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
    stream: DeclarativeStream = spec("The parent stream.", {"$ref": "#/definitions/accounts_stream"})
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
        "More parent fields (as paths) copied into `stream_partition`.", [["name"], ["owner", "id"]], (),
        template=BASE,
    )


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


Router = Annotated[
    ListPartitionRouter | SubstreamPartitionRouter | CustomPartitionRouter, Field(discriminator="type")
]
PartitionRouter = Router | tuple[Router, ...]

# Last, because source imports this module (a stream has a partition router, and a substream router
# has parent streams): pydantic resolves `DeclarativeStream` above from here.
from framework.models.source import DeclarativeStream  # noqa: E402
