"""Finished datetime ranges in a state: Airbyte's concurrent ``date-range`` shape.

A sync reads a partition's windows concurrently, so when it stops half way
(a crash, a kill) windows beyond the first unfinished one may be finished
and their files committed. A plain ``{"<cursor_field>": value}`` state can
only say "everything up to ``value``"; the windows after it would be read
again. Such a state is written instead as Airbyte's concurrent cursor writes
its own (``ConcurrencyCompatibleStateType.date_range``)::

    {"state_type": "date-range",
     "slices": [{"start": "2024-01-01", "end": "2024-01-09", "most_recent_cursor_value": "2024-01-09"},
                {"start": "2024-01-12", "end": "2024-01-14", "most_recent_cursor_value": "2024-01-13"}]}

Each slice is a closed interval whose records are all synced, values in the
cursor's ``datetime_format``. The first slice runs from ``start_datetime``
to the value the sync may resume from (its ``most_recent_cursor_value``, or
its ``end``; the value a plain state would hold); the others are the
finished windows beyond it, runs of adjacent windows merged. The next sync
reads from the first slice's value (less the lookback) and skips what the
other slices cover, the range after the last one from its end less the
lookback, as airbyte-cdk does. Once nothing is finished beyond the first
unfinished window, the plain shape is written again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from msgspec import Struct

from framework.components.incremental.windows import Step, shift
from framework.errors import StateError

__all__ = ["RANGE_STATE_TYPE", "Closed", "is_range_state", "merge_closed", "range_state", "read_range_state",
           "subtract_closed"]

#: Airbyte's ``state_type`` of a datetime concurrent state.
RANGE_STATE_TYPE = "date-range"



class Closed(Struct, frozen=True, order=True):
    """A finished interval: every record with a cursor value in ``start .. end`` (both inclusive) is synced;
    ``latest`` is the latest cursor value read in it (None when it had no record)."""

    start: datetime
    end: datetime
    latest: datetime | None = None


def is_range_state(state: Mapping[str, Any] | None) -> bool:
    """Whether ``state`` is in the concurrent ``date-range`` shape."""
    return isinstance(state, Mapping) and state.get("state_type") == RANGE_STATE_TYPE


def read_range_state(state: Mapping[str, Any], parse: Callable[[Any], datetime | None],
                     granularity: Step | None = None) -> tuple[datetime | None, tuple[Closed, ...]]:
    """``(value to resume from, finished intervals after it)`` of a ``date-range`` state.

    Slices are merged first (Airbyte's rule: touching within ``granularity``);
    the value is the first slice's ``most_recent_cursor_value``, else its
    ``end``. :class:`StateError` names the damaged item.
    """
    slices = state.get("slices")
    if not isinstance(slices, list):
        raise StateError("a `date-range` state needs a `slices` list of {'start': ..., 'end': ...} objects")
    closed = []
    for item in slices:
        if not isinstance(item, Mapping) or "start" not in item or "end" not in item:
            raise StateError(f"an item of `slices` should look like {{'start': ..., 'end': ...}}, not {item!r}; "
                             "fix it or clear the state")
        low, high = parse(item["start"]), parse(item["end"])
        latest = item.get("most_recent_cursor_value")
        if low is None or high is None:
            raise StateError(f"an item of `slices` has a `start` or `end` the cursor cannot read: {item!r}; "
                             "fix it or clear the state")
        closed.append(Closed(low, high, parse(latest) if latest not in (None, "") else None))
    merged = merge_closed(closed, granularity)
    if not merged:
        return None, ()
    first = merged[0]
    return (first.latest or first.end), tuple(merged[1:])


def merge_closed(intervals: Iterable[Closed], granularity: Step | None = None) -> list[Closed]:
    """``intervals`` sorted, overlapping or touching ones (within ``granularity``) merged."""
    out: list[Closed] = []
    for item in sorted(intervals, key=lambda c: (c.start, c.end)):
        reach = (shift(out[-1].end, granularity) or out[-1].end) if out and granularity is not None else \
            out[-1].end if out else None
        if reach is not None and item.start <= reach:
            last = out[-1]
            latest = max((v for v in (last.latest, item.latest) if v is not None), default=None)
            out[-1] = Closed(last.start, max(last.end, item.end), latest)
        else:
            out.append(item)
    return out


def range_state(write: Callable[[datetime], Any], start: datetime, value: datetime | None,
                closed: Sequence[Closed]) -> dict[str, Any]:
    """The ``date-range`` state of a partition resuming from ``value`` (None: from ``start``) with the finished
    intervals ``closed`` beyond it; ``write`` turns an instant into its state text."""
    first_end = value if value is not None else start
    first: dict[str, Any] = {"start": write(min(start, first_end)), "end": write(first_end)}
    if value is not None:
        first["most_recent_cursor_value"] = write(value)
    slices = [first]
    for item in closed:
        piece: dict[str, Any] = {"start": write(item.start), "end": write(item.end)}
        if item.latest is not None:
            piece["most_recent_cursor_value"] = write(item.latest)
        slices.append(piece)
    return {"state_type": RANGE_STATE_TYPE, "slices": slices}


def subtract_closed(pairs: Sequence[tuple[datetime, datetime]], closed: Sequence[Closed],
                    granularity: Step | None) -> list[tuple[datetime, datetime]]:
    """The parts of the windows ``pairs`` that no interval of ``closed`` (sorted, merged) covers.

    Both ends are inclusive. With a ``granularity`` a piece after an interval
    starts one granularity after its end and a piece before one ends one
    granularity before its start; without, the pieces share the interval's
    boundary instants (as airbyte-cdk reads the gaps), and a piece that is
    nothing but such an instant is dropped.
    """
    if not closed:
        return list(pairs)
    out: list[tuple[datetime, datetime]] = []
    for low, high in pairs:
        pieces = [(low, high)]
        for item in closed:
            if item.end < low or item.start > high:
                continue
            nxt = []
            for a, b in pieces:
                if item.end < a or item.start > b:
                    nxt.append((a, b))
                    continue
                before = shift(item.start, granularity, -1) if granularity is not None else item.start
                after = shift(item.end, granularity, 1) if granularity is not None else item.end
                if before is not None and (before > a if granularity is None else before >= a):
                    nxt.append((a, min(before, b)))
                if after is not None and (after < b if granularity is None else after <= b):
                    nxt.append((max(after, a), b))
            pieces = nxt
        out.extend(pieces)
    return out
