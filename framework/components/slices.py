"""Stream slices: the unit of work of a stream.

A :class:`StreamSlice` is a frozen value with two parts, kept apart because
they mean different things: ``partition`` says *which* records (an account, a
region: set by partition routers) and ``cursor_slice`` says *when* (a datetime
window: set by the incremental cursor). ``extra_fields`` carries values copied
from a parent record that are not part of the partition's identity.

A slice is small and picklable: with the manifest and the config it is all an
executor needs to read its records.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from msgspec import Struct, field


class SliceView(dict):
    """What templates see as ``stream_slice``: partition and window merged, with the parts
    still reachable as ``stream_slice.partition``, ``.cursor_slice`` and ``.extra_fields``."""

    partition: Mapping[str, Any]
    cursor_slice: Mapping[str, Any]
    extra_fields: Mapping[str, Any]


class StreamSlice(Struct, frozen=True):
    partition: Mapping[str, Any] = field(default_factory=dict)
    cursor_slice: Mapping[str, Any] = field(default_factory=dict)
    extra_fields: Mapping[str, Any] = field(default_factory=dict)

    def view(self) -> SliceView:
        merged = SliceView(self.partition)
        merged.update(self.cursor_slice)
        merged.partition = self.partition
        merged.cursor_slice = self.cursor_slice
        merged.extra_fields = self.extra_fields
        return merged

    def template_variables(self) -> dict[str, Any]:
        """``stream_slice``, ``stream_partition`` and ``stream_interval`` for templates."""
        return {
            "stream_slice": self.view(),
            "stream_partition": self.partition,
            "stream_interval": self.cursor_slice,
        }

    def key(self) -> tuple:
        """A hashable identity of the partition part (for state keyed by partition)."""
        return _freeze(self.partition)


def _freeze(value: Any) -> Any:
    if isinstance(value, Mapping):
        return tuple(sorted((str(k), _freeze(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    return value


EMPTY_SLICE = StreamSlice()

__all__ = ["EMPTY_SLICE", "SliceView", "StreamSlice"]
