"""Planning a stream's sync: its :class:`StreamSync` and the contiguous groups its units are read in.

:func:`open_sync` makes the sync of one stream for a connector (its config and
clock) from a saved state; ``sync.plan()`` then lists the units, each carrying
the saved cursor value it starts from. :func:`contiguous_groups` splits them
into the groups that Spark tasks and the DataFrame reader's input partitions
read, one group each.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from framework.components.stream import Stream
from framework.engine.connector import Connector
from framework.engine.sync import StreamSync, Unit

__all__ = ["contiguous_groups", "open_sync"]


def open_sync(connector: Connector, stream: Stream, state: Mapping[str, Any] | None, *,
              incremental: bool = True) -> StreamSync:
    """The sync of ``stream`` with the connector's config and clock, from ``state`` (the stream's saved state).

    The stream's state migrations (custom ``state_migrations``) are applied to
    ``state`` first. Raises :class:`~framework.errors.StateError` when the state
    cannot be read.
    """
    state = connector.migrate_state(stream.name, state)
    return StreamSync(stream, connector.config, state, incremental=incremental, clock=connector.context.clock)


def contiguous_groups(units: Sequence[Unit], at_most: int) -> list[list[Unit]]:
    """``units`` in order, in ``at_most`` contiguous groups of nearly equal size (earlier groups one larger).

    Never more groups than units, and always at least one (empty when there are no units).
    """
    count = max(1, min(len(units), at_most))
    size, extra = divmod(len(units), count)
    groups, start = [], 0
    for index in range(count):
        end = start + size + (1 if index < extra else 0)
        groups.append(list(units[start:end]))
        start = end
    return groups
