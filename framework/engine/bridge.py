"""The sync of a stream that airbyte-cdk reads: a custom retriever or requester drives its read.

A stream built with ``bridge`` set (:func:`framework.components.stream.build_stream`)
is read by airbyte-cdk's declarative source through
:class:`~framework.components.custom.airbyte.AirbyteStream`, one Airbyte
partition (:class:`~framework.components.custom.airbyte.AirbyteUnit`) at a
time. :class:`BridgeSync` gives it the seams of :class:`~.sync.StreamSync`
(:class:`~.plan.Sync`: ``plan``, ``read``, ``observe``, ``done``, ``state``), so
protocol mode, the Spark pipeline and the DataFrame reader run it like any
stream; :func:`read_bridged_unit` reads one unit in a worker. The state is
Airbyte's cursor's, in Airbyte's shapes, and moves only over finished units.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from typing import Any

import orjson

from framework.components.custom.airbyte import AirbyteStream, AirbyteUnit
from framework.components.stream import Stream
from framework.engine.connector import Connector
from framework.errors import StateError

__all__ = ["BridgeSync", "read_bridged_unit"]


class BridgeSync:
    """Plans, reads and keeps state for one stream airbyte-cdk reads, in one sync (thread-safe, as StreamSync).

    ``state`` is the stream's saved state in Airbyte's shapes (its
    ``state_migrations`` are airbyte-cdk's to apply); ``incremental`` false
    reads everything and reports no state.
    """

    def __init__(self, connector: Connector, stream: Stream, state: Mapping[str, Any] | None = None, *,
                 incremental: bool = True):
        if state is not None and not isinstance(state, Mapping):
            raise StateError(f"stream `{stream.name}`: the saved state should be an object, not a "
                             f"{type(state).__name__}; fix it or clear the state")
        self.stream = stream
        self.incremental = incremental and stream.cursor is not None
        #: the state the sync starts from (what workers' readers start from too: :func:`read_bridged_unit`)
        self.start_state: dict | None = dict(state) if state and self.incremental else None
        self.reader = AirbyteStream(connector.manifest, connector.config, stream.name, self.start_state,
                                    place=stream.place)
        self.records_read = 0
        self._lock = threading.Lock()
        self._units: list[AirbyteUnit] | None = None
        self._latest: dict[int, Mapping[str, Any]] = {}
        self._done: set[int] = set()

    def plan(self) -> list[AirbyteUnit]:
        """Every unit of this sync, in Airbyte's order (its router reads parent streams as it needs)."""
        with self._lock:
            if self._units is None:
                self._units = self.reader.units()
            return self._units

    def units(self) -> Iterator[AirbyteUnit]:
        """The units of :meth:`plan` (airbyte-cdk's reader lists them all)."""
        return iter(self.plan())

    def unit(self, index: int) -> AirbyteUnit | None:
        """The unit of ``index`` in the plan, or None when it is done already."""
        with self._lock:
            units = self._units
        if units is None or not 0 <= index < len(units) or index in self._done:
            return None
        return units[index]

    def read(self, unit: AirbyteUnit) -> Iterator[list[dict]]:
        """The records of one unit, page by page, observed for state."""
        for records, latest in self.reader.read(unit):
            self.observe(unit, latest, len(records))
            if records:
                yield records

    def observe(self, unit: AirbyteUnit, latest: Mapping[str, Any] | None, records: int = 0) -> None:
        """``records`` records of ``unit`` were read; ``latest`` is its most recent record so far."""
        with self._lock:
            if latest is not None:
                self._latest[unit.index] = latest
            self.records_read += records

    def done(self, unit: AirbyteUnit) -> None:
        """Mark ``unit`` finished: Airbyte's cursor observes its most recent record and closes it."""
        with self._lock:
            if unit.index in self._done:
                return
            self._done.add(unit.index)
            self.reader.finish(unit, self._latest.pop(unit.index, None))

    def state(self, final: bool = False) -> dict | None:
        """The state the finished units allow now, in Airbyte's shapes; ``final`` at the end of a successful sync."""
        if not self.incremental:
            return None
        with self._lock:
            final = final and self._units is not None and len(self._done) == len(self._units)
            return self.reader.state(final=final)


def read_bridged_unit(connector: Connector, stream: Stream, unit: AirbyteUnit,
                      state: Mapping[str, Any] | None = None) -> Iterator[tuple[list[dict], Mapping[str, Any] | None]]:
    """The records of one unit, page by page, each with the unit's most recent record so far (in a worker).

    ``state`` is the state the sync started from (the driver's): Airbyte's
    reader may read it (a client-side incremental filter, a retriever's own
    ``state``), so a worker's reader starts from it as the driver's does. The
    reader is built once per connector and state (once per worker process).
    """
    key = (stream.name, orjson.dumps(state, option=orjson.OPT_SORT_KEYS) if state else b"")
    reader = connector.readers.get(key)
    if reader is None:
        reader = connector.readers.setdefault(key, AirbyteStream(
            connector.manifest, connector.config, stream.name, dict(state) if state else None, place=stream.place))
    yield from reader.read(unit)
