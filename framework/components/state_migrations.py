"""A stream's ``state_migrations``: a saved state of an older shape made current before the sync plans.

``LegacyToPerPartitionStateMigration`` (airbyte-cdk 7.39's rule) turns
``{"<parent id>": {"<cursor field>": value}, ...}`` into
``{"states": [{"partition": {"<partition field>": "<parent id>"}, "cursor": {"<cursor field>": value}}, ...]}``.
It migrates only a state that has no ``states`` key, is not empty, and whose
every value is an object holding exactly the cursor field; and only for a
router with exactly one parent stream (or a UnionPartitionRouter). The partition field is the parent's
``partition_field`` (the union's own) and the cursor field the stream's ``cursor_field``, both
rendered with the config and the stream's ``$parameters``.

:func:`build_state_migrations` builds a stream's list (custom migrations
through their own builder), each with ``apply(state) -> state``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from msgspec import Struct

from framework.components.context import BuildContext
from framework.errors import ConfigError, place_suffix
from framework.models import DeclarativeStream, LegacyToPerPartitionStateMigration
from framework.models.custom import CustomIncrementalSync, CustomPartitionRouter

__all__ = ["LegacyToPerPartition", "build_state_migrations"]


class LegacyToPerPartition(Struct, frozen=True):
    partition_field: str
    cursor_field: str
    parents: int

    def should_migrate(self, state: Mapping[str, Any]) -> bool:
        if "states" in state or self.parents != 1 or not state:
            return False
        return all(isinstance(value, Mapping) and list(value) == [self.cursor_field] for value in state.values())

    def apply(self, state: Mapping[str, Any]) -> Mapping[str, Any]:
        if not self.should_migrate(state):
            return state
        return {"states": [{"partition": {self.partition_field: key}, "cursor": dict(value)}
                           for key, value in state.items()]}


def build_state_migrations(model: DeclarativeStream, ctx: BuildContext, path: tuple) -> tuple[Any, ...]:
    """The runtime migrations of the stream ``model`` at ``path``, in order."""
    return tuple(_legacy(model, ctx, path) if isinstance(m, LegacyToPerPartitionStateMigration)
                 else ctx.build(m, path + ("state_migrations", i))
                 for i, m in enumerate(model.state_migrations))


def _legacy(stream: DeclarativeStream, ctx: BuildContext, path: tuple) -> LegacyToPerPartition:
    place = ctx.place(path + ("state_migrations",))
    router = getattr(stream.retriever, "partition_router", None)
    if isinstance(router, CustomPartitionRouter):
        configs = router.options.get("parent_stream_configs")
        first = configs[0] if isinstance(configs, (list, tuple)) and configs else None
        field = first.get("partition_field") if isinstance(first, Mapping) else getattr(first, "partition_field", None)
        parents = len(configs) if isinstance(configs, (list, tuple)) else 0
    elif getattr(router, "type", None) == "UnionPartitionRouter":  # partitions normalised to one field
        field, parents = getattr(router, "partition_field", None), 1
    elif router is not None and not isinstance(router, tuple) and hasattr(router, "parent_stream_configs"):
        configs = router.parent_stream_configs
        field = configs[0].partition_field if configs else None
        parents = len(configs)
    else:
        raise ConfigError(f"stream `{stream.name}`: LegacyToPerPartitionStateMigration needs a "
                          "SubstreamPartitionRouter (or a CustomPartitionRouter with parent_stream_configs)"
                          f"{place_suffix(place)}")
    cursor = stream.incremental_sync
    cursor_field = cursor.options.get("cursor_field") if isinstance(cursor, CustomIncrementalSync) else \
        getattr(cursor, "cursor_field", None)
    if not isinstance(field, str) or not isinstance(cursor_field, str):
        raise ConfigError(f"stream `{stream.name}`: LegacyToPerPartitionStateMigration needs the router's parent "
                          f"`partition_field` and the stream's `incremental_sync.cursor_field`{place_suffix(place)}")
    return LegacyToPerPartition(str(ctx.render(field, stream.parameters)),
                                str(ctx.render(cursor_field, stream.parameters)), parents)
