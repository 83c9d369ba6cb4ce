"""The sync of a ``StateDelegatingStream``: the definition its saved state picks, read as any stream.

:class:`DelegatedSync` is a :class:`~.sync.StreamSync` of the chosen
definition (see :class:`~framework.components.delegating.Delegation`), with
two additions:

* ``start_state``: the state the incremental definition starts from, or None
  when the full-refresh definition reads; workers that read units elsewhere
  (Spark tasks, the DataFrame reader) pick the same definition from it
  (:meth:`~framework.engine.connector.Connector.stream_for_start`);
* a full-refresh definition without a cursor ends with Airbyte's
  ``{"__ab_no_cursor_state_message": true}``, so the next sync has a state and
  reads incrementally.

A full-refresh sync mode (``incremental=False``) always reads the full-refresh
definition and ignores the saved state (airbyte-cdk reads by the state
whatever the mode).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from framework.components.delegating import NO_CURSOR_STATE_KEY, Delegation
from framework.engine.sync import StreamSync
from framework.temporal.clock import Clock

__all__ = ["DelegatedSync"]


class DelegatedSync(StreamSync):
    def __init__(self, delegation: Delegation, config: Mapping[str, Any], state: Mapping[str, Any] | None, *,
                 incremental: bool = True, clock: Clock):
        if incremental:
            stream, start, reason = delegation.choose(state, clock)
        else:
            stream, start, reason = delegation.full_refresh, None, "full refresh: the full-refresh definition reads"
        super().__init__(stream, config, start, incremental=incremental, clock=clock)
        self.delegation = delegation
        self.start_state: dict | None = dict(start) if start else None
        self.reason = reason
        self._mark_end = incremental and stream is delegation.full_refresh and stream.cursor is None

    def state(self, final: bool = False) -> dict | None:
        found = super().state(final)
        if final and self._mark_end and not found:
            return {NO_CURSOR_STATE_KEY: True}
        return found
