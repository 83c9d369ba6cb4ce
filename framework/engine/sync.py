"""One sync of one stream: the plan of units, reading them, and the state they allow.

A *unit* is one partition (from the partition router) times one datetime
window (from the cursor): a small picklable :class:`Unit` that
:func:`read_unit` reads with nothing but the stream (built from the manifest)
and the config, so units can be read anywhere. :class:`StreamSync` keeps what
changes while the stream is read: which units are finished, the latest cursor
value seen in each, and the state that allows. State shapes, as Airbyte's:

* **no cursor** or a full refresh: no state.
* **one partition**: ``{"<cursor_field>": value}``.
* **per partition** (a cursor and a router, the default)::

      {"states": [{"partition": {...}, "cursor": {"<cursor_field>": value}}, ...],
       "state": {...}, "use_global_cursor": false, "lookback_window": N}

  ``states`` holds at most :data:`MAX_PARTITION_STATES` partitions, the ones
  finished last; older ones are compacted (see
  :mod:`framework.engine.partition_states`) rather than forgotten.
  ``state`` is the latest value seen in the last successful sync.
* **global cursor** (``global_substream_cursor``, or ``use_global_cursor`` in
  the saved state): ``{"use_global_cursor": true, "state": {...},
  "lookback_window": N}``. ``state`` moves only at the end of a successful
  sync; ``lookback_window`` is that sync's duration in seconds, and the next
  sync looks back at least that far.
* **incremental dependency**: ``"parent_state": {"<parent>": <its state>}`` is
  added; the parent's state moves only over parent units (windows) whose child
  units are all finished.

A partition whose windows finished beyond its first unfinished one (a sync
stopped half way) keeps them as Airbyte's concurrent ``date-range`` state
(``{"state_type": "date-range", "slices": [...]}``, in place of
``{"<cursor_field>": value}``, see
:mod:`framework.components.incremental.date_ranges`); the next sync reads only
the windows no slice covers.

A cursor value never falls below where the sync (or the partition) started:
one that read no record keeps its saved value, or the cursor's start when that
is later or nothing was saved, as airbyte-cdk does. A saved ``lookback_window``
is replaced only by a sync that read a record.

Saved states in any of these shapes are read back; a state without
``states`` (a flat ``{"<cursor_field>": value}`` or a global one) is applied to
every partition, as Airbyte does. A partition that is in no saved state is new
and starts at ``start_datetime``. A stream's state none of whose keys its
cursor reads is refused (:class:`~framework.errors.ForeignStateError`); a
parent's (``parent_state``) is set aside with a warning and the parent read
from its start, as airbyte-cdk reads it.

Parent streams are read while planning (the child's partitions are their
records); each parent record is tagged with the parent unit it came from, and
that unit is finished only when every child unit made from it is (and all its
pages are routed).

:meth:`StreamSync.units` makes the units as the parent's pages arrive (a
partitioned parent's units read up to :data:`PARENT_READERS` at once, handed on
in order) and forgets a partition once its units are done, so a plan of any
size runs in bounded memory; :meth:`StreamSync.plan` is the same as one list.
A partition routed twice is read once: only an 8-byte digest of each partition
is remembered (:class:`~framework.engine.partition_states.DigestSet`).
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping
from datetime import datetime, timedelta
from typing import Any, cast

import orjson
from msgspec import Struct

from framework.components.delegating import NO_CURSOR_STATE_KEY, Delegation
from framework.components.incremental import CountCursor, Cursor, DatetimeCursor
from framework.components.incremental.date_ranges import Closed, is_range_state
from framework.components.partitions import LAZY_KEY, ParentConfig, RoutedPartition
from framework.components.slices import StreamSlice
from framework.components.stream import Stream
from framework.engine.partition_states import COMPACT_KEY, DigestSet, PartitionStates, partition_digest
from framework.engine.window_progress import WindowProgress
from framework.errors import ForeignStateError, StateError
from framework.temporal.clock import Clock, SystemClock

__all__ = ["MAX_PARTITION_STATES", "PARENT_READERS", "DelegatedSync", "StreamSync", "Unit", "read_unit"]

#: Warnings about saved state this sync set aside (a parent state it cannot read).
STATE_LOG = logging.getLogger("framework.state")

#: Partitions kept in full in a per-partition state (Airbyte's limit); older ones are compacted.
MAX_PARTITION_STATES = 10_000

#: Parent units (a partitioned parent's partitions and windows) read at once while planning a substream.
PARENT_READERS = 4

_NO_WINDOW: list[tuple[tuple[None, None], dict]] = [((None, None), {})]


class Unit(Struct, frozen=True):
    """One partition times one window: the unit of work, of checkpointing, and of Spark tasks.

    ``prior`` is the partition's saved cursor value (None on a first read).
    ``floor`` and ``ceiling`` bound the cursor values a data feed or a
    client-side filter keeps (Airbyte's rule): ``floor`` is ``prior`` minus the
    lookbacks (never below ``min(prior, start_datetime)``), or ``start_datetime``
    on a first read; ``ceiling`` is the end of the sync's range. ``tags`` name
    the parent units the partition came from.
    """

    index: int
    slice: StreamSlice
    partition: int  # index of the partition in this sync's plan
    window: int  # index of the window within the partition (0 without a cursor)
    tags: tuple = ()
    prior: Any = None  # datetime, or int for an IncrementingCountCursor
    floor: datetime | None = None
    ceiling: datetime | None = None


def read_unit(stream: Stream, config: Mapping[str, Any], unit: Unit) -> Iterator[tuple[list[dict], Any]]:
    """The records of one unit, page by page, each page with its latest cursor value.

    Needs only the stream (built from the manifest), the config and the unit
    (which carries the saved cursor value it starts from), so it runs anywhere
    (a Spark task, say).

    Applies the cursor's client-side rules, here only (the loop below is the hot
    path, so they are inline), as airbyte-cdk does: with ``is_data_feed``
    (newest first) records outside ``floor .. ceiling`` are dropped and paging
    stops after a page whose last record is outside; with
    ``is_client_side_incremental`` (and no data feed) records outside the
    unit's window or after ``ceiling`` are dropped. Both ends are inclusive:
    records sharing the state's instant may have arrived since. Records without
    a readable cursor value are kept. A page is passed on as it came when no
    rule applies.
    """
    cursor: Cursor | None = stream.cursor
    prior = unit.prior
    stream_state = cursor.state_of(prior) if cursor is not None and prior is not None else {}
    # read_slice is a generator: closed below as soon as a data feed stops paging.
    pages = cast(Generator[list[dict], None, None], stream.read_slice(unit.slice, config, stream_state))
    if cursor is None:
        for records in pages:
            yield records, None
        return
    record_value: Callable[[Mapping[str, Any]], Any] = cursor.record_value  # datetime, or int: compared alike
    feed = cursor.is_data_feed
    client_side = cursor.is_client_side_incremental and not feed
    low, high = unit.floor, unit.ceiling
    cursor_slice = unit.slice.cursor_slice
    in_window: Callable[[Any, Mapping[str, Any]], bool] = cursor.in_window
    try:
        for records in pages:
            latest = None
            if not (feed or client_side):
                for record in records:
                    value = record_value(record)
                    if value is not None and (latest is None or value > latest):
                        latest = value
                yield records, latest
                continue
            kept = []
            for record in records:
                value = record_value(record)
                if value is not None:
                    if feed:
                        if (low is not None and value < low) or (high is not None and value > high):
                            continue
                    elif (high is not None and value > high) or (cursor_slice and not in_window(value, cursor_slice)):
                        continue
                    if latest is None or value > latest:
                        latest = value
                kept.append(record)
            yield kept, latest
            if feed and records and (kept[-1] if kept else None) is not records[-1]:
                return  # the page's last record is outside the range: older records follow
    finally:
        pages.close()


class _Partition(Struct):
    routed: RoutedPartition
    progress: WindowProgress
    units_left: int
    recorded: Any  # the value (and finished windows beyond it) last put in the per-partition states
    tags: tuple = ()  # the parent units it came from (a repeated partition adds its own)
    digest: bytes = b""  # of its partition (a partitioned stream's), to route a repeated one here


def _closed_of(cursor: Cursor | None, state: Mapping[str, Any] | None) -> tuple[Closed, ...]:
    """The finished intervals a ``date-range`` state keeps beyond its resume value (a datetime cursor's only)."""
    return cursor.closed_of(state) if isinstance(cursor, DatetimeCursor) else ()


def _tag_key(tag: tuple) -> tuple:
    return (tag[0], tag[1])


#: the state Airbyte ends a full-refresh sync with (no cursor value in it)
NO_CURSOR_STATE = "__ab_no_cursor_state_message"


def _unknown_shape(saved: Mapping[str, Any], expected: str) -> StateError:
    """A saved state none of whose keys this stream's cursor reads: reading it would silently read everything."""
    keys = ", ".join(f"`{key}`" for key in list(saved)[:5])
    return ForeignStateError(f"the saved state has none of the keys this stream's cursor reads (it has {keys}; "
                             f"expected {expected}): a state of another connector or version? Fix it, or clear "
                             "this stream's state to read everything again")


class StreamSync:
    """Plans, reads and keeps state for one stream in one sync.

    ``state`` is the stream's saved state (any of the shapes above);
    ``incremental`` false reads everything and reports no state. Thread-safe:
    :meth:`read` and :meth:`done` may be called for different units at once.
    """

    def __init__(self, stream: Stream, config: Mapping[str, Any], state: Mapping[str, Any] | None = None, *,
                 incremental: bool = True, clock: Clock | None = None):
        self.stream: Stream = stream
        self.config: Mapping[str, Any] = config
        self.clock: Clock = clock or SystemClock()
        # windows apply to full refreshes too; state only when incremental
        self.cursor: Cursor | None = stream.cursor
        self.incremental: bool = incremental and stream.cursor is not None
        if state is not None and not isinstance(state, Mapping):
            raise StateError(f"stream `{stream.name}`: the saved state should be an object, not a "
                             f"{type(state).__name__}; fix it or clear the state")
        self.saved: dict[str, Any] = dict(state or {}) if self.incremental else {}
        self.started: datetime = self.clock.now()
        self.partitioned: bool = stream.router is not None
        self.global_cursor: bool = bool(self.incremental and self.partitioned and self.cursor is not None and (
            self.cursor.global_substream_cursor or self.saved.get("use_global_cursor") is True))
        self.records_read: int = 0
        self._lock = threading.Lock()
        #: parent units read at once while planning (the parent's partitions and windows; see _read_parent)
        self.parent_readers: int = PARENT_READERS
        self._planned = False  # every unit is made
        self._iterating = False  # units() was called
        self._keep_all = False  # plan() was called
        self._partitions: dict[int, _Partition] = {}  # partitions with units not done (every one unpartitioned)
        self._units: list[Unit] = []  # plan()'s
        self._open: dict[int, Unit] = {}  # units handed out and not done, by index
        self._units_left = 0
        self._seen_digests = DigestSet()  # of the partitions routed so far (while routing)
        self._digest = b""  # the last new partition's
        self._live: dict[bytes, int] = {}  # digest -> index of the partitions not done
        self._parents: dict[str, StreamSync] = {}
        self._parent_units_left: dict[tuple, int] = {}
        self._generating: dict[str, set[int]] = {}  # parent name -> its units whose pages are being routed
        self._windows_cache: dict[tuple, tuple[list, list, tuple, list]] = {}
        # Cursor values: datetimes, or ints for an IncrementingCountCursor.
        self._seen: Any = None  # latest cursor value seen in this sync
        self._prior_global: Any = None  # one-partition state, or the saved "state" value
        self._closed_global: tuple[Closed, ...] = ()  # one-partition state: windows finished beyond it
        self._all_from_global = False  # no per-partition list was saved: every partition starts at the global value
        self._saved_lookback = 0
        self._start: Any = None  # the cursor's start (start_datetime, start_value), rendered once: _resume
        self._states: PartitionStates | None = None
        if self.incremental and self.partitioned and not self.global_cursor and self.cursor is not None:
            self._states = PartitionStates(MAX_PARTITION_STATES, self.cursor.state_of)
        try:
            self._read_saved_state()
        except StateError as exc:
            raise type(exc)(f"stream `{stream.name}`: {exc}") from None

    # -- saved state -----------------------------------------------------------------

    def _read_saved_state(self) -> None:
        saved, cursor = self.saved, self.cursor
        if not saved or cursor is None:  # a state is kept only for incremental streams, which have a cursor
            return
        if saved.keys() <= {NO_CURSOR_STATE}:  # Airbyte's end of a full refresh: no cursor value yet
            return
        field = cursor.cursor_field
        if not self.partitioned:
            flat = saved if field in saved or is_range_state(saved) or not isinstance(saved.get("state"), Mapping) \
                else saved["state"]
            if field not in flat and not is_range_state(flat):
                raise _unknown_shape(saved, f"{{'{field}': ...}}")
            self._prior_global = cursor.state_value(flat)
            self._closed_global = _closed_of(cursor, flat)
            return
        if not saved.keys() & {field, "state", "states", "lookback_window", "parent_state", "use_global_cursor",
                               COMPACT_KEY}:
            raise _unknown_shape(saved, f"{{'states': [{{'partition': {{...}}, 'cursor': {{'{field}': ...}}}}], "
                                        f"'state': {{'{field}': ...}}}}")
        lookback = saved.get("lookback_window")
        if lookback is not None and not isinstance(lookback, bool):
            try:
                self._saved_lookback = max(0, math.ceil(float(lookback)))
            except (TypeError, ValueError, OverflowError):
                raise StateError(f"`lookback_window` should be a number of seconds, not {lookback!r}") from None
        parents = saved.get("parent_state")
        if parents is not None and not isinstance(parents, Mapping):
            raise StateError(f"`parent_state` should be an object of parent stream states, not {parents!r}")
        glob = saved.get("state")
        if isinstance(glob, Mapping):
            self._prior_global = cursor.state_value(glob)
        elif field in saved:  # a flat state given for a partitioned stream
            self._prior_global = cursor.state_value(saved)
        elif glob is not None:
            raise StateError(f"`state` should be an object like {{'{field}': ...}}, not {glob!r}")
        items = saved.get("states")
        self._all_from_global = items is None and self._prior_global is not None
        if self._states is None:
            return
        if items is not None and not isinstance(items, list):
            raise StateError("`states` should be a list of {'partition': {...}, 'cursor': {...}} objects")
        for item in items or ():
            if not isinstance(item, Mapping) or not isinstance(item.get("partition"), Mapping) \
                    or not isinstance(item.get("cursor", {}), Mapping):
                raise StateError(f"an item of `states` should look like {{'partition': {{...}}, 'cursor': "
                                 f"{{'{field}': ...}}}}, not {item!r}; fix it or clear the state")
            cursor_state = item.get("cursor") or {}
            self._states.load(item["partition"], cursor.state_value(cursor_state), cursor_state)
        if saved.get(COMPACT_KEY) is not None:
            self._states.load_compacted(saved[COMPACT_KEY], cursor.state_value)

    def _prior_for(self, partition: Mapping[str, Any],
                   key: bytes | None = None) -> tuple[Any, timedelta | None, bool, tuple[Closed, ...]]:
        """Where a partition starts: (saved value, extra lookback, whether the value is the partition's own,
        the intervals finished beyond it)."""
        if not self.incremental:
            return None, None, False, ()
        extra = timedelta(seconds=self._saved_lookback) if self._saved_lookback else None
        if not self.partitioned:
            return self._prior_global, None, True, self._closed_global
        if self.global_cursor:
            return self._prior_global, extra, True, ()
        assert self._states is not None
        own = self._states.value(partition, key)
        if own is not None:
            return own, None, True, _closed_of(self.cursor, self._states.saved_cursor(partition, key))
        if self._all_from_global:
            return self._prior_global, extra, False, ()
        return None, None, False, ()

    # -- planning --------------------------------------------------------------------

    def plan(self) -> list[Unit]:
        """Every unit of this sync, in order, as one list (protocol mode and the DataFrame reader). Reads parent
        streams where the router needs them, one parent unit after another. Holds every unit: the Spark pipeline
        iterates :meth:`units`."""
        if self._iterating:
            raise RuntimeError("plan() after units(): a sync is planned one way or the other")
        if not self._planned:
            self._keep_all = True
            self.parent_readers = 1  # one parent unit after another: a failed request stops planning there
            self._units = list(self._generate())
        return self._units

    def units(self) -> Iterator[Unit]:
        """The units of this sync, in order, made as parent pages arrive (see the module docs).

        Memory stays bounded whatever the number of partitions: a partition is
        dropped once all its units are done (its progress is in the states),
        a unit once it is done, and only a digest of each partition is kept (to
        route a repeated one). Iterate it once; :meth:`plan` is the list form.
        """
        if self._iterating or self._planned:
            raise RuntimeError("units() is iterated once, and not after plan()")
        self._iterating = True
        return self._generate()

    def unit(self, index: int) -> Unit | None:
        """The unit of ``index`` handed out by :meth:`units` and not done yet, or of :meth:`plan`'s list; else None."""
        if self._keep_all:
            return self._units[index] if 0 <= index < len(self._units) else None
        return self._open.get(index)

    def _generate(self) -> Iterator[Unit]:
        router = self.stream.router
        routed: Iterable[RoutedPartition] = router.partitions(self._read_parent) if router is not None \
            else (RoutedPartition({}, {}),)
        count = 0
        p_index = -1
        for part in routed:
            if self.partitioned:
                seen = self._seen_partition(part)
                if seen:
                    continue
            p_index += 1
            prior, extra, own, closed = self._prior_for(part.partition, self._digest if self.partitioned else None)
            bounds, windows, (floor, ceiling), finished = self._windows(prior, extra, closed)
            partition = _Partition(part, WindowProgress(bounds, prior), len(windows),
                                   (prior, closed) if own else None, part.tags, self._digest)
            made = []
            with self._lock:
                self._partitions[p_index] = partition
                if self.partitioned and windows:
                    self._live[self._digest] = p_index
                if finished:  # windows a stopped sync finished already: done before anything is read
                    progress = partition.progress
                    for index, latest in finished:
                        if latest is not None:
                            progress.observe(index, latest)
                            if self._seen is None or latest > self._seen:  # read, in the sync that stopped
                                self._seen = latest
                        progress.finish(index)
                    self._record(partition)
                extra_fields = part.extra_fields
                if LAZY_KEY in extra_fields and (self.saved or len(windows) != 1):
                    # A parent's embedded child page is read instead of the first request on a first sync of
                    # one window per partition only (Airbyte's lazy read); otherwise every page is requested.
                    extra_fields = {key: value for key, value in extra_fields.items() if key != LAZY_KEY}
                for w_index, cursor_slice in windows:
                    unit = Unit(count, StreamSlice(part.partition, cursor_slice, extra_fields),
                                p_index, w_index, part.tags, prior, floor, ceiling)
                    if not self._keep_all:  # plan()'s list finds its units itself
                        self._open[count] = unit
                    made.append(unit)
                    count += 1
                self._units_left += len(windows)
                for tag in part.tags:  # counted before any of them is handed out
                    key = _tag_key(tag)
                    self._parent_units_left[key] = self._parent_units_left.get(key, 0) + len(windows)
                if not windows and self.partitioned:
                    del self._partitions[p_index]
            yield from made
        released: list[tuple] = []
        with self._lock:
            self._planned = True
            self._seen_digests = DigestSet()  # routing is over: no repeated partition can come
        for parent in self._parents.values():  # parent units left open whose records made no child unit
            released.extend(key for key in parent._open_keys() if self._parent_units_left.get(key, 0) == 0)
        self._release(released)

    def _seen_partition(self, part: RoutedPartition) -> bool:
        """Whether ``part`` was routed before in this sync (its parent tags then join the live partition's, whose
        units are not all done; a partition done already was read). Sets ``self._digest`` for a new one."""
        digest = partition_digest(part.partition)
        if self._seen_digests.add(digest):
            self._digest = digest
            return False
        with self._lock:
            p_index = self._live.get(digest)
            live = self._partitions.get(p_index) if p_index is not None else None
            if live is not None and live.units_left and part.tags:
                live.tags = live.tags + part.tags
                for tag in part.tags:
                    key = _tag_key(tag)
                    self._parent_units_left[key] = self._parent_units_left.get(key, 0) + live.units_left
        return True

    def _windows(self, prior: Any, extra: timedelta | None,
                 closed: tuple[Closed, ...] = ()) -> tuple[list, list, tuple, list]:
        """(window bounds, (window index, cursor slice) of each window to read, (floor, ceiling),
        (window index, latest value) of each window finished already) from ``prior`` and the intervals
        ``closed`` finished beyond it; shared by every partition with the same start."""
        key = (prior, extra, closed)
        found = self._windows_cache.get(key)
        if found is None:
            cursor = self.cursor
            if cursor is None:
                found = ([(None, None)], [(0, {})], (None, None), [])
            elif closed and isinstance(cursor, DatetimeCursor):
                skip = cursor.closed_to_skip(closed, prior, extra)
                slices = cursor.windows(prior, min_lookback=extra, closed=skip)
                # the windows to read and the finished intervals, in order: the windows of the partition's progress
                items = sorted([(cursor.window_bounds(s), s) for s in slices]
                               + [((c.start, c.end), c) for c in skip], key=lambda item: item[0])
                found = ([bounds for bounds, _ in items],
                         [(i, item) for i, (_, item) in enumerate(items) if not isinstance(item, Closed)],
                         cursor.keep_range(prior, extra),
                         [(i, item.latest) for i, (_, item) in enumerate(items) if isinstance(item, Closed)])
            else:
                slices = cursor.windows(prior, min_lookback=extra)
                found = ([cursor.window_bounds(s) for s in slices], list(enumerate(slices)),
                         cursor.keep_range(prior, extra), [])
            self._windows_cache[key] = found
        return found

    def _read_parent(self, parent: ParentConfig) -> Iterator[tuple[Any, list[dict]]]:
        """The parent's records, page by page, tagged ``(parent name, unit index, parent partition)``.

        The parent's units (its partitions and windows) are read up to
        :attr:`parent_readers` at a time, in threads, and handed on in order
        (:func:`~framework.engine.prefetch.ordered_pages`); the pages of one unit
        come one after another (the next page's request depends on the last).
        """
        from framework.engine.prefetch import ordered_pages

        name = parent.stream.name
        dependent = parent.incremental_dependency and parent.stream.cursor is not None
        saved = (self.saved.get("parent_state") or {}).get(name) if dependent else None
        if parent.delegation is not None:  # a StateDelegatingStream: the parent's state picks the definition
            sync: StreamSync = DelegatedSync(parent.delegation, self.config, saved, incremental=dependent,
                                             clock=self.clock)
        else:
            try:
                sync = StreamSync(parent.stream, self.config, saved, incremental=dependent, clock=self.clock)
            except ForeignStateError:
                # A parent state of another shape (a connection moved from Airbyte, another version): airbyte-cdk
                # reads the parent from its start; so do we, and say what was set aside. The child's own state
                # still applies, so only the parent is read again.
                assert saved is not None
                STATE_LOG.warning(
                    "stream `%s`: the saved state of its parent stream `%s` has none of the keys the parent's cursor "
                    "reads (`%s`); ignored: %s. `%s` is read from its start and its state is written anew",
                    self.stream.name, name, parent.stream.cursor.cursor_field if parent.stream.cursor else "",
                    orjson.dumps(saved, default=str).decode()[:300], name)
                sync = StreamSync(parent.stream, self.config, None, incremental=dependent, clock=self.clock)
        sync.parent_readers = self.parent_readers
        if dependent:
            self._parents[name] = sync
        generating = self._generating.setdefault(name, set())
        for unit, pages in ordered_pages(sync.units(), sync.read, self.parent_readers):
            tag = (name, unit.index, dict(unit.slice.partition))
            if dependent:
                with self._lock:
                    generating.add(unit.index)
            for records in pages:
                yield tag, records
            if dependent:  # finished when its children are (done() of the child units), or now if it has none
                key = _tag_key(tag)
                with self._lock:
                    generating.discard(unit.index)
                    childless = self._parent_units_left.get(key, 0) == 0
                if childless:
                    self._release([key])
            else:
                sync.done(unit)

    def _open_keys(self) -> list[tuple]:
        """The (name, index) of this sync's units not done yet."""
        with self._lock:
            return [(self.stream.name, index) for index in self._open]

    def _release(self, keys: Iterable[tuple]) -> None:
        """Finish the parent units of ``keys`` (every child unit made from them is done)."""
        for name, index in keys:
            with self._lock:
                self._parent_units_left.pop((name, index), None)
            parent = self._parents.get(name)
            unit = parent.unit(index) if parent is not None else None
            if parent is not None and unit is not None:
                parent.done(unit)

    # -- reading ---------------------------------------------------------------------

    def read(self, unit: Unit) -> Iterator[list[dict]]:
        """The records of one unit, page by page, observed for state (see :func:`read_unit`)."""
        observe = self.observe
        for records, latest in read_unit(self.stream, self.config, unit):
            observe(unit, latest, len(records))
            if records:
                yield records

    def observe(self, unit: Unit, latest: datetime | None, records: int = 0) -> None:
        """``records`` records of ``unit`` were read, the latest with cursor value ``latest``
        (for units read elsewhere, e.g. by Spark tasks; :meth:`read` calls it for each page)."""
        with self._lock:
            part = self._partitions.get(unit.partition)
            if latest is not None and part is not None:
                part.progress.observe(unit.window, latest)
                if self._seen is None or latest > self._seen:
                    self._seen = latest
            self.records_read += records

    def done(self, unit: Unit) -> None:
        """Mark ``unit`` finished: its records are handed over for good."""
        released = []
        with self._lock:
            part = self._partitions.get(unit.partition)
            if part is None or part.progress.done[unit.window]:
                return
            part.progress.finish(unit.window)
            self._open.pop(unit.index, None)
            part.units_left -= 1
            self._units_left -= 1
            for tag in part.tags:
                key = _tag_key(tag)
                left = self._parent_units_left[key] - 1
                self._parent_units_left[key] = left
                if left == 0 and key[1] not in self._generating.get(key[0], ()):
                    released.append(key)
            self._record(part)
            if part.units_left == 0 and self.partitioned:  # its progress is in the states now
                del self._partitions[unit.partition]
                self._live.pop(part.digest, None)
        self._release(released)

    def _record(self, part: _Partition) -> None:
        """Put a partition's progress in the per-partition states when it moved (under the lock)."""
        if self._states is None:
            return
        progress = part.progress
        value: Any = progress.value()  # a datetime, or an int for an IncrementingCountCursor
        beyond = progress.finished_beyond()
        if value is not None or not beyond:
            # Never below where the partition started: one that read no record keeps its start (its saved
            # value, or start_datetime), as airbyte-cdk keeps every partition it read.
            resume = self._resume(progress.prior)
            if value is None or value < resume:
                value = resume
        if (value, beyond) == part.recorded:
            return
        part.recorded = (value, beyond)
        cursor_state = self.cursor.range_state_of(value, beyond) \
            if beyond and isinstance(self.cursor, DatetimeCursor) else None
        self._states.put(part.routed.partition, value, cursor_state, part.digest or None)

    # -- state -----------------------------------------------------------------------

    def _resume(self, prior: Any) -> Any:
        """Where a sync (or a partition) that started from ``prior`` resumes when it read no record: ``prior``, or
        the cursor's start when that is later or ``prior`` is None (airbyte-cdk's rule). The start is rendered once
        per sync (this runs for every unit done)."""
        if self._start is None:
            assert self.cursor is not None
            self._start = self.cursor.start_of(None)
        return prior if prior is not None and prior >= self._start else self._start

    def state(self, final: bool = False) -> dict | None:
        """The state the finished units allow now; ``final`` at the end of a successful sync."""
        cursor = self.cursor
        if not self.incremental or cursor is None:
            return None
        with self._lock:
            final = final and self._planned and self._units_left == 0
            if not self.partitioned:
                progress = self._partitions[0].progress if self._partitions else None
                value = progress.value() if progress is not None else self._prior_global
                beyond = progress.finished_beyond() if progress is not None else self._closed_global
                if beyond and isinstance(cursor, DatetimeCursor):  # finished windows past the resume value
                    return cursor.range_state_of(value, beyond)
                # Never below where the sync started (the saved value, or the start when it is later or there
                # is none): a sync that read no record keeps its start, as airbyte-cdk does.
                resume = self._resume(self._prior_global)
                return cursor.state_of(resume if value is None or value < resume else value)
            out: dict[str, Any] = {}
            if self._states is not None:
                out["states"] = self._states.entries()
                compacted = self._states.compacted()
                if compacted:
                    out[COMPACT_KEY] = compacted
            value = self._prior_global
            if final and self._seen is not None and (value is None or self._seen > value):
                value = self._seen
            if value is not None:
                out["state"] = cursor.state_of(value)
            out["use_global_cursor"] = self.global_cursor
            if not isinstance(cursor, CountCursor):  # seconds looked back next time; no time to look back by
                # The duration of a sync that read some record (the one that moved `state`), as airbyte-cdk
                # writes it; one that read none keeps the lookback of the sync that set `state`.
                out["lookback_window"] = self._duration() if final and self._seen is not None \
                    else self._saved_lookback
            parent_state = {}
            for name, parent in self._parents.items():
                found = parent.state(final=final)
                if found:
                    parent_state[name] = found
            if not parent_state and isinstance(self.saved.get("parent_state"), Mapping):
                parent_state = dict(self.saved["parent_state"])
            if parent_state:
                out["parent_state"] = parent_state
            return out

    def _duration(self) -> int:
        """This sync's duration so far in whole seconds, rounded up."""
        return max(0, math.ceil((self.clock.now() - self.started).total_seconds()))


class DelegatedSync(StreamSync):
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
