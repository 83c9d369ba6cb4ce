"""Stream groups: streams that share a resource of the API and are never read at the same time."""

from typing import TYPE_CHECKING, Literal

from framework.models.base import Component, Model, spec

if TYPE_CHECKING:  # source imports this module: a source has stream groups (see back_references)
    from framework.models.source import DeclarativeStream


class BlockSimultaneousSyncsAction(Component):
    """A group's action: no two streams of the group are read at the same time."""

    takes_parameters = False

    type: Literal["BlockSimultaneousSyncsAction"] = spec(
        "Component type.", "BlockSimultaneousSyncsAction", "BlockSimultaneousSyncsAction"
    )


class StreamGroup(Model):
    """Streams that share a resource of the API (a session, an endpoint's lock), with what to do about it.

    A stream reading a parent stream (SubstreamPartitionRouter) reads the parent too: a child
    must not share a group with any of its ancestors.
    """

    streams: "tuple[DeclarativeStream, ...]" = spec(
        "The streams of the group (usually `$ref`s to the source's streams); matched by name.",
        [{"$ref": "#/definitions/orders_stream"}, {"$ref": "#/definitions/refunds_stream"}],
        default_type="DeclarativeStream",
    )
    action: BlockSimultaneousSyncsAction = spec(
        "What the group does: `BlockSimultaneousSyncsAction`, its streams are never read at the same time.",
        {"type": "BlockSimultaneousSyncsAction"},
    )


__all__ = ["BlockSimultaneousSyncsAction", "StreamGroup"]
