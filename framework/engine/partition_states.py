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
import sys
from array import array
from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from typing import Any

import orjson

from framework.errors import StateError

__all__ = ["COMPACT_KEY", "DIGEST_SIZE", "DigestSet", "PartitionStates", "partition_digest"]

#: The state key of the compacted partitions.
COMPACT_KEY = "compacted_partitions"
DIGEST_SIZE = 8

Key = bytes  # a partition's digest (partition_digest)


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


class DigestSet:
    """A set of 8-byte digests in about 8 bytes each: a sorted array, plus a small set of recent additions
    merged into it now and then. What a substream's planning remembers of every partition it routed."""

    MERGE_AT = 65_536

    def __init__(self) -> None:
        self._keys = array("Q")
        self._recent: set[int] = set()

    def __len__(self) -> int:
        return len(self._keys) + len(self._recent)

    def add(self, digest: bytes) -> bool:
        """Add ``digest``; whether it was new."""
        key = int.from_bytes(digest, "big")
        if key in self._recent:
            return False
        keys = self._keys
        at = bisect_left(keys, key)
        if at < len(keys) and keys[at] == key:
            return False
        self._recent.add(key)
        if len(self._recent) >= self.MERGE_AT:
            self._merge()
        return True

    def _merge(self) -> None:
        keys, merged, start = self._keys, array("Q"), 0
        for key in sorted(self._recent):
            at = bisect_left(keys, key, start)
            merged.extend(keys[start:at])
            merged.append(key)
            start = at
        merged.extend(keys[start:])
        self._keys, self._recent = merged, set()


class _Compacted:
    """Digests filed under days, in 12 bytes each: a sorted array of the digests (as big-endian integers, so
    their order is their bytes' order) and a parallel array of day numbers, plus a small dict of changes not
    merged yet (a removed digest maps to -1). A lookup is a dict probe and a binary search."""

    MERGE_AT = 65_536  # changes kept aside before they are merged into the arrays

    def __init__(self) -> None:
        self._keys = array("Q")
        self._days_of = array("i")
        self._recent: dict[int, int] = {}
        self._days: list[Any] = []  # day number -> day
        self._day_number: dict[Any, int] = {}
        self._encoded: dict[int, str] = {}  # day number -> its digests in base64, dropped when the day changes

    def __len__(self) -> int:
        self._merge()
        return len(self._keys)

    def __bool__(self) -> bool:
        return bool(self._keys) or bool(self._recent)

    def _find(self, key: int) -> int:
        """The day number of ``key``, or -1."""
        found = self._recent.get(key)
        if found is not None:
            return found
        keys = self._keys
        at = bisect_left(keys, key)
        return self._days_of[at] if at < len(keys) and keys[at] == key else -1

    def get(self, digest: bytes) -> Any:
        number = self._find(int.from_bytes(digest, "big"))
        return self._days[number] if number >= 0 else None

    def file(self, digest: bytes, day: Any) -> None:
        key = int.from_bytes(digest, "big")
        old = self._find(key)
        # Filed twice (a hand-made state), the partition keeps the earlier day: reading a day
        # more is safe, a day less is not.
        if old >= 0 and self._days[old] <= day:
            return
        number = self._day_number.get(day)
        if number is None:
            number = self._day_number[day] = len(self._days)
            self._days.append(day)
        self._change(key, number, old)

    def remove(self, digest: bytes) -> None:
        key = int.from_bytes(digest, "big")
        old = self._find(key)
        if old >= 0:
            self._change(key, -1, old)

    def _change(self, key: int, number: int, old: int) -> None:
        self._recent[key] = number
        for touched in (number, old):
            if touched >= 0:
                self._encoded.pop(touched, None)
        if len(self._recent) >= self.MERGE_AT:
            self._merge()

    def _merge(self) -> None:
        """Merge the changes into the arrays: one pass of slice copies between the changed keys."""
        if not self._recent:
            return
        keys, days_of = self._keys, self._days_of
        new_keys, new_days = array("Q"), array("i")
        start = 0
        for key in sorted(self._recent):
            at = bisect_left(keys, key, start)
            new_keys.extend(keys[start:at])
            new_days.extend(days_of[start:at])
            start = at + 1 if at < len(keys) and keys[at] == key else at  # its old place is dropped
            number = self._recent[key]
            if number >= 0:
                new_keys.append(key)
                new_days.append(number)
        new_keys.extend(keys[start:])
        new_days.extend(days_of[start:])
        self._keys, self._days_of, self._recent = new_keys, new_days, {}

    def groups(self) -> list[tuple[Any, str]]:
        """(day, base64 of its sorted 8-byte digests) for every day that has some, oldest day first."""
        self._merge()
        numbers = set(self._days_of)
        stale = {number: array("Q") for number in numbers if number not in self._encoded}
        if stale:  # one pass over the arrays for every day to encode again
            for key, number in zip(self._keys, self._days_of, strict=True):
                found = stale.get(number)
                if found is not None:
                    found.append(key)
            for number, digests in stale.items():
                if not digests:
                    continue
                if sys.byteorder == "little":
                    digests.byteswap()
                self._encoded[number] = base64.b64encode(digests.tobytes()).decode("ascii")
        return [(self._days[n], self._encoded[n]) for n in sorted(numbers, key=self._days.__getitem__)]


class PartitionStates:
    """Cursor values of partitions, newest ``limit`` in full, older ones compacted (module docstring).

    Not thread-safe: the sync calls it under its lock.
    """

    def __init__(self, limit: int, state_of: Callable[[Any], dict]):
        self.limit = max(0, limit)
        self._state_of = state_of
        # key -> (partition, cursor value, cursor state as written), oldest first
        self._full: OrderedDict[Key, tuple[Mapping[str, Any], Any, Mapping[str, Any]]] = OrderedDict()
        self._compact = _Compacted()  # digest -> day

    def __len__(self) -> int:
        return len(self._full) + len(self._compact)

    # -- loading a saved state -----------------------------------------------------------

    def load(self, partition: Mapping[str, Any], value: Any, cursor_state: Mapping[str, Any]) -> None:
        """Add a saved entry as it was written (so carried-over entries keep their text)."""
        key = partition_digest(partition)
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

    def value(self, partition: Mapping[str, Any], key: bytes | None = None) -> Any:
        """The saved cursor value of ``partition`` (whose :func:`partition_digest` is ``key``, when known): its
        own, or its compacted day; None when unknown."""
        if not self._full and not self._compact:  # a first sync: no key to build (half of planning, bench/plan_scale)
            return None
        key = key or partition_digest(partition)
        found = self._full.get(key)
        if found is not None:
            return found[1]
        return self._compact.get(key) if self._compact else None

    def saved_cursor(self, partition: Mapping[str, Any], key: bytes | None = None) -> Mapping[str, Any] | None:
        """The cursor state ``partition`` has in full (as loaded or put), or None (compacted, or unknown)."""
        if not self._full:
            return None
        found = self._full.get(key or partition_digest(partition))
        return found[2] if found is not None else None

    def put(self, partition: Mapping[str, Any], value: Any, cursor_state: Mapping[str, Any] | None = None,
            key: bytes | None = None) -> None:
        """Record ``partition`` at ``value``, as the newest entry; ``cursor_state`` is the entry's state when it
        is more than ``{"<cursor_field>": value}`` (finished windows beyond ``value``: a ``date-range`` state);
        ``key`` is its :func:`partition_digest` when known."""
        key = key or partition_digest(partition)
        self._full.pop(key, None)
        if self._compact:
            self._unfile(key)
        self._full[key] = (partition, value, cursor_state if cursor_state is not None else self._state_of(value))
        self._shrink()

    def _shrink(self) -> None:
        while len(self._full) > self.limit:
            key, (_, value, _) = self._full.popitem(last=False)
            if value is not None:  # an entry without a value has nothing to keep
                self._file(key, day_of(value))

    def _file(self, digest: bytes, day: Any) -> None:
        self._compact.file(digest, day)

    def _unfile(self, digest: bytes) -> None:
        self._compact.remove(digest)

    # -- writing -------------------------------------------------------------------------

    def entries(self) -> list[dict[str, Any]]:
        """Airbyte's ``states`` list, oldest first."""
        return [{"partition": partition, "cursor": cursor_state} for partition, _, cursor_state in self._full.values()]

    def compacted(self) -> list[dict[str, Any]]:
        """The ``compacted_partitions`` list (empty when nothing was compacted), oldest day first."""
        return [{"cursor": self._state_of(day), "digests": text} for day, text in self._compact.groups()]
