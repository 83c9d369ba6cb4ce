"""What a front end tells of one stream of a sync: how far it got, how long it took, and why it failed."""

from __future__ import annotations

from collections.abc import Iterable

from msgspec import Struct, field

from framework.engine.signals import Signal

__all__ = ["StreamReport", "any_failed"]


class StreamReport(Struct):
    """Counts so far (records, pages, planned units), the seconds it took, and the masked reason it failed.

    Protocol mode reports exactly this; the Spark pipeline adds what it wrote
    (:class:`framework.spark.pipeline.StreamResult`).
    """

    name: str
    records: int = 0
    pages: int = 0
    units: int = 0
    seconds: float = 0.0
    error: str | None = None
    empty_pages: int = 0  # responses that gave no record (not in ``pages``)
    warnings: list[Signal] = field(default_factory=list)  # what looks wrong in the data, one of each kind, masked


def any_failed(streams: Iterable[StreamReport]) -> bool:
    """Whether a stream of the sync failed."""
    return any(s.error for s in streams)
