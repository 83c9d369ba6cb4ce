"""Per-partition cursor values: Airbyte's capped list, with the overflow kept compactly.

Airbyte keeps at most 10,000 partitions in a per-partition state and drops the
oldest; a dropped partition is then read in full on the next sync. Here the
newest ``limit`` partitions are kept in Airbyte's form
(``{"partition": {...}, "cursor": {...}}``) and the older ones are *compacted*
rather than dropped: each becomes an 8-byte digest of its partition, filed
under its cursor value rounded down to the UTC day. On the next sync a
partition found among the digests starts from that day (minus the lookback),
not from ``start_datetime``. A partition found nowhere is new and starts from
``start_datetime``.

The compact part travels in the state as one extra key that Airbyte ignores::

    "compacted_partitions": [{"cursor": {"updated_at": "2024-08-01T00:00:00Z"},
                              "digests": "<base64 of 8-byte digests>"}, ...]

Costs and risks: about 11 bytes of state per compacted partition, at most a
day (plus the lookback) read again for it, and a 2^-64 chance per new
partition of mistaking it for a compacted one (it would then start from that
day instead of ``start_datetime``).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections import OrderedDict
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from typing import Any

import orjson

from framework.components.slices import StreamSlice
from framework.errors import StateError

__all__ = ["COMPACT_KEY", "DIGEST_SIZE", "PartitionStates", "partition_digest"]

#: The state key of the compacted partitions.
COMPACT_KEY = "compacted_partitions"
DIGEST_SIZE = 8

Key = Any  # a partition frozen into a hashable value


def partition_digest(partition: Mapping[str, Any]) -> bytes:
    """An 8-byte digest of a partition, the same whatever the order of its keys."""
    text = orjson.dumps(partition, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS, default=str)
    return hashlib.blake2b(text, digest_size=DIGEST_SIZE).digest()


def day_of(value: Any) -> Any:
    """``value`` rounded down to midnight UTC; an integer cursor value (IncrementingCountCursor) stays as it is."""
    if not isinstance(value, datetime):
        return value
    utc = value.astimezone(timezone.utc)
    return datetime(utc.year, utc.month, utc.day, tzinfo=timezone.utc)


class PartitionStates:
    """Cursor values of partitions, newest ``limit`` in full, older ones compacted (module docstring).

    Not thread-safe: the sync calls it under its lock.
    """

    def __init__(self, limit: int, state_of: Callable[[Any], dict]):
        self.limit = max(0, limit)
        self._state_of = state_of
        # key -> (partition, cursor value, cursor state as written), oldest first
        self._full: OrderedDict[Key, tuple[Mapping[str, Any], Any, Mapping[str, Any]]] = OrderedDict()
        self._compact: dict[bytes, Any] = {}  # digest -> day
        self._groups: dict[Any, set[bytes]] = {}
        self._encoded: dict[Any, str] = {}  # cache of the encoded groups, dropped when a group changes

    def __len__(self) -> int:
        return len(self._full) + len(self._compact)

    # -- loading a saved state -----------------------------------------------------------

    def load(self, partition: Mapping[str, Any], value: Any, cursor_state: Mapping[str, Any]) -> None:
        """Add a saved entry as it was written (so carried-over entries keep their text)."""
        key = StreamSlice(partition).key()
        self._full.pop(key, None)
        self._full[key] = (dict(partition), value, dict(cursor_state))
        self._shrink()

    def load_compacted(self, items: Any, read_value: Callable[[Mapping[str, Any]], Any]) -> None:
        """Read the ``compacted_partitions`` list of a saved state."""
        if not isinstance(items, list):
            raise StateError(f"`{COMPACT_KEY}` should be a list of {{'cursor': ..., 'digests': ...}} objects")
        for item in items:
            if not isinstance(item, Mapping) or not isinstance(item.get("digests"), str):
                raise StateError(f"an item of `{COMPACT_KEY}` lacks its `digests` text; clear that key to "
                                 "read those partitions from start_datetime")
            day = read_value(item.get("cursor") or {})
            try:
                raw = base64.b64decode(item["digests"], validate=True)
            except (binascii.Error, ValueError):
                raw = b"?"
            if day is None or len(raw) % DIGEST_SIZE:
                raise StateError(f"an item of `{COMPACT_KEY}` is damaged (no cursor value, or digests that are "
                                 "not base64 of 8-byte values); clear that key to read those partitions from "
                                 "start_datetime")
            for offset in range(0, len(raw), DIGEST_SIZE):
                self._file(raw[offset:offset + DIGEST_SIZE], day_of(day))

    # -- during the sync -----------------------------------------------------------------

    def value(self, partition: Mapping[str, Any]) -> Any:
        """The saved cursor value of ``partition``: its own, or its compacted day; None when unknown."""
        if not self._full and not self._compact:  # a first sync: no key to build (half of planning, bench/plan_scale)
            return None
        found = self._full.get(StreamSlice(partition).key())
        if found is not None:
            return found[1]
        if self._compact:
            return self._compact.get(partition_digest(partition))
        return None

    def saved_cursor(self, partition: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """The cursor state ``partition`` has in full (as loaded or put), or None (compacted, or unknown)."""
        if not self._full:
            return None
        found = self._full.get(StreamSlice(partition).key())
        return found[2] if found is not None else None

    def put(self, partition: Mapping[str, Any], value: Any, cursor_state: Mapping[str, Any] | None = None) -> None:
        """Record ``partition`` at ``value``, as the newest entry; ``cursor_state`` is the entry's state when it
        is more than ``{"<cursor_field>": value}`` (finished windows beyond ``value``: a ``date-range`` state)."""
        key = StreamSlice(partition).key()
        self._full.pop(key, None)
        if self._compact:
            self._unfile(partition_digest(partition))
        self._full[key] = (partition, value, cursor_state if cursor_state is not None else self._state_of(value))
        self._shrink()

    def _shrink(self) -> None:
        while len(self._full) > self.limit:
            _, (partition, value, _) = self._full.popitem(last=False)
            if value is not None:  # an entry without a value has nothing to keep
                self._file(partition_digest(partition), day_of(value))

    def _file(self, digest: bytes, day: Any) -> None:
        # Filed twice (a hand-made state), the partition keeps the earlier day: reading a day
        # more is safe, a day less is not.
        old = self._compact.get(digest)
        if old is not None:
            if old <= day:
                return
            self._unfile(digest)
        self._compact[digest] = day
        self._groups.setdefault(day, set()).add(digest)
        self._encoded.pop(day, None)

    def _unfile(self, digest: bytes) -> None:
        day = self._compact.pop(digest, None)
        if day is None:
            return
        group = self._groups[day]
        group.discard(digest)
        if not group:
            del self._groups[day]
        self._encoded.pop(day, None)

    # -- writing -------------------------------------------------------------------------

    def entries(self) -> list[dict[str, Any]]:
        """Airbyte's ``states`` list, oldest first."""
        return [{"partition": partition, "cursor": cursor_state} for partition, _, cursor_state in self._full.values()]

    def compacted(self) -> list[dict[str, Any]]:
        """The ``compacted_partitions`` list (empty when nothing was compacted), oldest day first."""
        out = []
        for day in sorted(self._groups):
            text = self._encoded.get(day)
            if text is None:
                text = base64.b64encode(b"".join(sorted(self._groups[day]))).decode("ascii")
                self._encoded[day] = text
            out.append({"cursor": self._state_of(day), "digests": text})
        return out
