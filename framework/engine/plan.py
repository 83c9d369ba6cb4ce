"""Planning a stream's sync: its :class:`Sync` and the contiguous groups its units are read in.

:func:`open_sync` makes the sync of one stream for a connector (its config and
clock) from a saved state (a :class:`~.sync.StreamSync`, or for a stream
airbyte-cdk reads a :class:`~.bridge.BridgeSync`); ``sync.plan()`` then lists the units, each carrying
the saved cursor value it starts from. :func:`contiguous_groups` splits them
into the groups that Spark tasks and the DataFrame reader's input partitions
read, one group each.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import chain, islice
from typing import Any, Protocol, TypeVar

from framework.components.stream import Stream
from framework.engine.connector import Connector
from framework.engine.sync import DelegatedSync, StreamSync

__all__ = ["GROUP_UNITS", "STATE_SAVE_SECONDS", "Sync", "contiguous_groups", "lazy_groups", "open_sync"]

T = TypeVar("T")

#: The most units :func:`lazy_groups` puts in one group of a plan too big to look at whole.
GROUP_UNITS = 2_000

#: Past a stream's first groups, the least time between two saves of its state (each save writes all of it:
#: 11 bytes per compacted partition), so a plan of many groups does not spend its time rewriting the state.
STATE_SAVE_SECONDS = 5.0


class Sync(Protocol):
    """One stream's sync, as every front end drives it: :class:`~.sync.StreamSync` (the framework reads the
    stream) or :class:`~.bridge.BridgeSync` (airbyte-cdk reads it). Units are small picklable values with an
    ``index`` (their place in the plan); ``latest`` is what :meth:`read` observed of a unit read elsewhere.

    A sync is planned once, either way: :meth:`plan` lists every unit (protocol mode, the DataFrame reader);
    :meth:`units` makes them as parent pages arrive, in bounded memory (the Spark pipeline, with
    :func:`lazy_groups`). :meth:`unit` finds a unit handed out and not done yet by its index."""

    records_read: int

    def plan(self) -> Sequence[Any]: ...

    def units(self) -> Iterator[Any]: ...

    def unit(self, index: int) -> Any | None: ...

    def read(self, unit: Any) -> Iterator[list[dict]]: ...

    def observe(self, unit: Any, latest: Any, records: int = 0) -> None: ...

    def done(self, unit: Any) -> None: ...

    def state(self, final: bool = False) -> dict | None: ...


def open_sync(connector: Connector, stream: Stream, state: Mapping[str, Any] | None, *,
              incremental: bool = True) -> Sync:
    """The sync of ``stream`` with the connector's config and clock, from ``state`` (the stream's saved state).

    A stream that airbyte-cdk reads (``stream.bridge``) gets a
    :class:`~.bridge.BridgeSync` (airbyte-cdk applies its state migrations);
    any other, a :class:`~.sync.StreamSync`, with the stream's state migrations
    (custom ``state_migrations``) applied to ``state`` first. Raises
    :class:`~framework.errors.StateError` when the state cannot be read.
    """
    if stream.bridge is not None:
        from framework.engine.bridge import BridgeSync

        return BridgeSync(connector, stream, state, incremental=incremental)
    state = connector.migrate_state(stream.name, state)
    delegation = connector.delegations.get(stream.name)
    if delegation is not None:  # a StateDelegatingStream: the definition its state picks
        return DelegatedSync(delegation, connector.config, state, incremental=incremental,
                             clock=connector.context.clock)
    return StreamSync(stream, connector.config, state, incremental=incremental, clock=connector.context.clock)


def contiguous_groups(units: Sequence[T], at_most: int) -> list[list[T]]:
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


def lazy_groups(units: Iterable[T], at_most: int, max_size: int | None = None,
                min_size: int = 1) -> Iterator[list[T]]:
    """``units`` in order, in contiguous groups, made as the units arrive (bounded memory).

    Looks ``at_most * max_size`` units ahead: a plan that ends within that is
    split as :func:`contiguous_groups` splits it (``at_most`` groups of nearly
    equal size, but fewer when that makes groups of at least ``min_size`` units:
    a task reads that many units at once against a slow API); a longer one comes
    in groups of ``max_size`` units. Yields nothing when there are no units.
    ``max_size`` defaults to :data:`GROUP_UNITS`.
    """
    max_size = GROUP_UNITS if max_size is None else max_size
    if at_most < 1 or max_size < 1:
        raise ValueError(f"lazy_groups needs at_most >= 1 and max_size >= 1, not {at_most} and {max_size}")
    source = iter(units)
    ahead = at_most * max_size
    head = list(islice(source, ahead + 1))
    if len(head) <= ahead:
        if head:
            yield from contiguous_groups(head, min(at_most, max(1, len(head) // max(1, min_size))))
        return
    rest = chain(head, source)
    del head
    while group := list(islice(rest, max_size)):
        yield group
