"""One sync of one stream: the plan of units, reading them, and the state they allow.

A *unit* is one partition (from the partition router) times one datetime
window (from the cursor): a small picklable :class:`Unit` that can be read
anywhere the manifest and config are. The sync keeps what changes while the
stream is read: which units are finished, the latest cursor value seen in
each, and the state that this allows. State modes, in Airbyte's shapes:

* **no cursor** (full refresh): no state.
* **one partition**: ``{"<cursor_field>": value}``.
* **per partition** (a cursor and a router, the default):
  ``{"states": [{"partition": {...}, "cursor": {...}}], "state": {...},
  "use_global_cursor": false, "lookback_window": N}``; at most
  :data:`MAX_PARTITION_STATES` partitions are kept, the oldest dropped first.
* **global cursor** (``global_substream_cursor``): ``{"state": {...},
  "lookback_window": N}``, moved only when the whole sync succeeds, with a
  lookback of at least the previous sync's duration.
* **incremental dependency**: ``"parent_state": {"<parent>": {...}}`` is added,
  and the parent's state moves only past parent units whose child partitions
  are all read.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Iterator, Mapping

from framework.clock import Clock, SystemClock
from framework.errors import StateError
from framework.partitions import ParentConfig, RoutedPartition, parents_of
from framework.slices import StreamSlice
from framework.streams.progress import WindowProgress
from framework.streams.stream import Stream

MAX_PARTITION_STATES = 10_000


@dataclass(frozen=True)
class Unit:
    """One partition times one window: the unit of work, of checkpointing, and of Spark tasks."""

    index: int
    slice: StreamSlice
    partition: int  # index of the partition in this sync's plan
    window: int  # index of the window within the partition (0 without a cursor)
    tags: tuple = ()  # parent units the partition came from (incremental dependency)


@dataclass
class _Partition:
    routed: RoutedPartition
    progress: WindowProgress
    units_left: int


def _freeze(value: Any) -> Any:
    return StreamSlice(value).key() if isinstance(value, Mapping) else value


class StreamSync:
    """Plans, reads and keeps state for one stream in one sync.

    ``state`` is the stream's saved state (any of the shapes above);
    ``incremental`` false reads everything and reports no state. Thread-safe:
    :meth:`read` and :meth:`done` may be called for different units at once.
    """

    def __init__(self, stream: Stream, config: Mapping[str, Any], state: Mapping[str, Any] | None = None, *,
                 incremental: bool = True, clock: Clock | None = None):
        self.stream = stream
        self.config = config
        self.clock = clock or SystemClock()
        self.cursor = stream.cursor  # windows apply to full refreshes too; state only when incremental
        self.incremental = incremental and stream.cursor is not None
        self.saved = dict(state or {})
        self.started = self.clock.now()
        self._lock = threading.Lock()
        self._partitions: list[_Partition] = []
        self._units: list[Unit] = []
        self._parents: dict[str, StreamSync] = {}
        self._parent_units_left: dict[tuple, int] = {}
        self._kept_states: OrderedDict = OrderedDict()  # partition key -> cursor state, oldest first
        self._global_seen: datetime | None = None
        self.records_read = 0
        self.global_cursor = bool(self.cursor is not None and self.stream.router is not None
                                  and (self.cursor.global_substream_cursor or self.saved.get("use_global_cursor")))
        self._read_saved_state()

    # -- saved state -----------------------------------------------------------------

    def _read_saved_state(self) -> None:
        self._prior_global: datetime | None = None
        if not self.incremental:
            return
        cursor = self.cursor
        saved = self.saved
        try:
            if self.stream.router is None:
                self._prior_global = cursor.state_value(saved) if cursor.cursor_field in saved else None
                return
            for item in saved.get("states") or []:
                partition = item.get("partition")
                if isinstance(partition, Mapping):
                    self._kept_states[_freeze(partition)] = (dict(partition), dict(item.get("cursor") or {}))
            if isinstance(saved.get("state"), Mapping) and cursor.cursor_field in saved["state"]:
                self._prior_global = cursor.state_value(saved["state"])
            elif cursor.cursor_field in saved:  # a flat state given for a partitioned stream
                self._prior_global = cursor.state_value(saved)
        except StateError as exc:
            raise StateError(f"stream `{self.stream.name}`: {exc}") from None
        except (TypeError, AttributeError):
            raise StateError(f"stream `{self.stream.name}`: the saved state has an unexpected shape; expected "
                             f"{{'{cursor.cursor_field}': value}} or Airbyte's per-partition state") from None

    def _prior_for(self, partition: Mapping[str, Any]) -> datetime | None:
        if not self.incremental:
            return None
        if self.global_cursor or self.stream.router is None:
            return self._prior_global
        kept = self._kept_states.get(_freeze(partition))
        if kept is None:
            return None
        cursor_state = kept[1]
        return self.cursor.state_value(cursor_state) if self.cursor.cursor_field in cursor_state else None

    def _lookback_extra(self) -> timedelta:
        """Global cursor: look back at least as long as the previous sync took."""
        seconds = self.saved.get("lookback_window") if self.global_cursor else None
        return timedelta(seconds=float(seconds)) if isinstance(seconds, (int, float)) else timedelta(0)

    # -- planning --------------------------------------------------------------------

    def plan(self) -> list[Unit]:
        """Every unit of this sync, in order. Reads parent streams where the router needs them."""
        if self._units:
            return self._units
        routed: list[RoutedPartition]
        if self.stream.router is None:
            routed = [RoutedPartition({}, {})]
        else:
            routed = list(self.stream.router.partitions(self._read_parent))
        global_windows = None
        if self.global_cursor and self.incremental:
            global_windows = self._windows(self._prior_global, extra_lookback=self._lookback_extra())
        for p_index, part in enumerate(routed):
            if self.cursor is None:
                windows: list[tuple[Any, dict]] = [((None, None), {})]
                prior = None
            elif global_windows is not None:
                windows, prior = global_windows, self._prior_global
            else:
                prior = self._prior_for(part.partition)
                windows = self._windows(prior)
            progress = WindowProgress([bounds for bounds, _ in windows], prior)
            self._partitions.append(_Partition(part, progress, len(windows)))
            for w_index, (_, cursor_slice) in enumerate(windows):
                unit = Unit(len(self._units), StreamSlice(part.partition, cursor_slice, part.extra_fields),
                            p_index, w_index, part.tags)
                self._units.append(unit)
            for tag in part.tags:
                key = _tag_key(tag)
                self._parent_units_left[key] = self._parent_units_left.get(key, 0) + len(windows)
        for parent in self._parents.values():
            parent._release_childless(self._parent_units_left, self.stream.name)
        return self._units

    def _windows(self, prior: datetime | None, extra_lookback: timedelta = timedelta(0)) -> list[tuple[Any, dict]]:
        cursor = self.cursor
        slices = cursor.windows(prior, min_lookback=extra_lookback or None)
        return [(cursor.window_bounds(s), s) for s in slices]

    def _read_parent(self, parent: ParentConfig) -> Iterator[tuple[Any, list[dict]]]:
        """The parent's records, page by page, tagged with the parent unit they came from."""
        name = parent.stream.name
        parent_state = None
        if parent.incremental_dependency:
            parent_state = (self.saved.get("parent_state") or {}).get(name)
        sync = StreamSync(parent.stream, self.config, parent_state,
                          incremental=parent.incremental_dependency and parent.stream.cursor is not None,
                          clock=self.clock)
        if parent.incremental_dependency:
            self._parents[name] = sync
        for unit in sync.plan():
            tag = (name, unit.index, dict(unit.slice.partition))
            for records in sync.read(unit):
                yield tag, records
            if not parent.incremental_dependency:
                sync.done(unit)
            else:
                self._parent_units_left.setdefault(_tag_key(tag), 0)

    def _release_childless(self, left: dict, child: str) -> None:
        for unit in self._units:
            key = (self.stream.name, unit.index)
            if left.get(key, 0) == 0:
                self.done(unit)

    # -- reading ---------------------------------------------------------------------

    def read(self, unit: Unit) -> Iterator[list[dict]]:
        """The records of one unit, page by page; observed for state, filtered client-side if asked."""
        cursor = self.cursor
        part = self._partitions[unit.partition]
        stream_state = self._template_state(part)
        pages = self.stream.read_slice(unit.slice, self.config, stream_state)
        if cursor is None:
            for records in pages:
                with self._lock:
                    self.records_read += len(records)
                yield records
            return
        window = cursor.window_bounds(unit.slice.cursor_slice) if unit.slice.cursor_slice else None
        prior = part.progress.prior
        client_side = cursor.is_client_side_incremental
        feed_stop = cursor.is_data_feed and prior is not None
        for records in pages:
            kept = []
            latest = None
            stop = False
            for record in records:
                value = cursor.record_value(record)
                if value is not None:
                    if feed_stop and value < prior:
                        stop = True
                        continue
                    if client_side:
                        if window is not None and not cursor.in_window(value, unit.slice.cursor_slice):
                            continue
                        if window is None and prior is not None and not cursor.after_state(value, prior):
                            continue
                    if latest is None or value > latest:
                        latest = value
                kept.append(record)
            with self._lock:
                if latest is not None:
                    part.progress.observe(unit.window, latest)
                    if self._global_seen is None or latest > self._global_seen:
                        self._global_seen = latest
                self.records_read += len(kept)
            if kept:
                yield kept
            if stop:
                pages.close()
                return

    def _template_state(self, part: _Partition) -> dict:
        value = part.progress.prior
        return self.cursor.state_of(value) if value is not None and self.cursor is not None else {}

    def done(self, unit: Unit) -> None:
        """Mark ``unit`` finished: its records are durably handed over."""
        parents_to_release = []
        with self._lock:
            part = self._partitions[unit.partition]
            if part.progress.done[unit.window]:
                return
            part.progress.finish(unit.window)
            part.units_left -= 1
            for tag in unit.tags:
                key = _tag_key(tag)
                self._parent_units_left[key] -= 1
                if self._parent_units_left[key] == 0:
                    parents_to_release.append(key)
            if self.incremental and not self.global_cursor and part.units_left == 0 and self.stream.router is not None:
                self._remember(part)
        for name, index in parents_to_release:
            parent = self._parents.get(name)
            if parent is not None:
                parent.done(parent._units[index])

    def _remember(self, part: _Partition) -> None:
        value = part.progress.value()
        if value is None:
            return
        key = _freeze(part.routed.partition)
        self._kept_states.pop(key, None)
        self._kept_states[key] = (dict(part.routed.partition), self.cursor.state_of(value))
        while len(self._kept_states) > MAX_PARTITION_STATES:
            self._kept_states.popitem(last=False)

    # -- state -----------------------------------------------------------------------

    def state(self, final: bool = False) -> dict | None:
        """The state the finished units allow now; ``final`` at the end of a successful sync."""
        if not self.incremental:
            return None
        with self._lock:
            cursor = self.cursor
            if self.stream.router is None:
                value = self._partitions[0].progress.value() if self._partitions else self._prior_global
                return cursor.state_of(value) if value is not None else {}
            out: dict[str, Any] = {}
            duration = max(0, int((self.clock.now() - self.started).total_seconds()))
            if self.global_cursor:
                value = self._prior_global
                if final and self._partitions and all(p.progress.complete for p in self._partitions):
                    seen = self._global_seen
                    if seen is not None and (value is None or seen > value):
                        value = seen
                if value is not None:
                    out["state"] = cursor.state_of(value)
                out["use_global_cursor"] = True
                out["lookback_window"] = duration if final else int(self.saved.get("lookback_window") or 0)
            else:
                for part in self._partitions:  # partitions still being read: their contiguous progress
                    if part.units_left and part.progress.value() is not None and part.progress.finished_prefix():
                        key = _freeze(part.routed.partition)
                        if key not in self._kept_states:
                            self._kept_states[key] = (dict(part.routed.partition),
                                                      cursor.state_of(part.progress.value()))
                out["states"] = [{"partition": partition, "cursor": cursor_state}
                                 for partition, cursor_state in self._kept_states.values()]
                overall = self._prior_global
                if final and self._global_seen is not None and (overall is None or self._global_seen > overall):
                    overall = self._global_seen
                if overall is not None:
                    out["state"] = cursor.state_of(overall)
                out["use_global_cursor"] = False
                out["lookback_window"] = duration if final else int(self.saved.get("lookback_window") or 0)
            parent_state = {}
            for name, parent in self._parents.items():
                value = parent.state()
                if value is not None:
                    parent_state[name] = value
            if not parent_state and self.saved.get("parent_state"):
                parent_state = dict(self.saved["parent_state"])
            if parent_state:
                out["parent_state"] = parent_state
            return out


def _tag_key(tag: tuple) -> tuple:
    return (tag[0], tag[1])


__all__ = ["MAX_PARTITION_STATES", "StreamSync", "Unit"]
