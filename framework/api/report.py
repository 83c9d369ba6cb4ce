"""What :func:`framework.sync` answers and what its ``on_progress`` callback gets: typed, frozen values."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from msgspec import Struct, field

__all__ = ["Drift", "Progress", "StreamSummary", "SyncReport"]


class Drift(Struct, frozen=True):
    """The fields the records had that the stream's schema does not declare (``--schema-drift``)."""

    policy: str = "drop"  # drop, keep or evolve
    records: int = 0  # records that had one
    fields: Mapping[str, int] = field(default_factory=dict)  # each field's path and how many values had it
    evolved: Mapping[str, str] = field(default_factory=dict)  # the columns the evolve policy added, by kind


class StreamSummary(Struct, frozen=True):
    """One stream of a sync: what was read and written, its state after the sync, and why it failed."""

    name: str
    records: int
    pages: int
    partitions: int  # planned
    partitions_done: int
    files: tuple[str, ...]  # the keys of the files written (relative to the output)
    bytes: int
    nulled: int  # values that did not fit their type
    seconds: float
    state: Mapping[str, Any] | None  # the stream's state saved next to the output (the next sync starts there)
    state_saved: bool
    error: str | None  # masked; None when the stream succeeded
    warnings: tuple[str, ...]  # data that looks wrong, with the fix (one of each kind)
    drift: Drift

    @property
    def ok(self) -> bool:
        return self.error is None


class SyncReport(Struct, frozen=True):
    """A sync: its id (the state's ``sync_id``), where it wrote, and each stream's report."""

    sync_id: int
    output: str  # the destination's base URI
    format: str  # Parquet, Avro, CSV or JSONL
    seconds: float
    streams: tuple[StreamSummary, ...]
    warnings: tuple[str, ...] = ()  # what the sync said that did not stop it (a config rewritten, a lease taken)
    normalization_failed: bool = False

    @property
    def ok(self) -> bool:
        """No stream (and no normalization) failed."""
        return not self.normalization_failed and all(s.ok for s in self.streams)

    @property
    def records(self) -> int:
        return sum(s.records for s in self.streams)

    def stream(self, name: str) -> StreamSummary:
        """The report of the stream ``name`` (KeyError when it was not synced)."""
        for found in self.streams:
            if found.name == name:
                return found
        raise KeyError(f"stream {name!r} was not synced; synced: {', '.join(s.name for s in self.streams)}")


class Progress(Struct, frozen=True):
    """What ``on_progress`` gets: ``planned`` once a stream's partitions are known, ``progress`` while it runs
    (every half second, and as each group of partitions returns), ``done`` at its end."""

    event: Literal["planned", "progress", "done"]
    stream: str
    records: int
    pages: int
    partitions_done: int
    partitions: int
    records_per_second: float
    fraction_done: float | None  # 0 to 1, None while the plan still grows
    time_left_s: float | None  # None until a partition is done, or while the plan still grows
    error: str | None = None  # ``done`` of a failed stream: why
