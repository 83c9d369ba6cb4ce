"""Stream groups at run time: two streams of one group are never read at the same time.

The source's ``stream_groups`` (each with a ``BlockSimultaneousSyncsAction``)
become one :class:`StreamGroups` per connector. Reading a stream holds the
groups it touches: its own and those of every ancestor it reads through a
SubstreamPartitionRouter (reading a child reads its parents too, as in
airbyte-cdk). :meth:`StreamGroups.reading` waits while another read holds one
of them, so the rule holds whoever calls it: the protocol read loop and the
Spark pipeline wrap each stream's whole sync in it (planning, which reads the
parents, and every unit, on this machine or on Spark executors). Both loops
sync one stream at a time today, so the gate never waits there; it is what
keeps the rule should streams ever be synced side by side.

A child sharing a group with one of its ancestors could never be read at all
(airbyte-cdk refuses such a manifest): building the groups raises
:class:`~framework.errors.ConfigError`, and ``validate-manifest`` reports it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from msgspec import Struct

from framework.components.context import BuildContext, builds
from framework.components.partitions import parents_of
from framework.components.stream import Stream
from framework.errors import ConfigError, place_suffix
from framework.models import BlockSimultaneousSyncsAction
from framework.models.stream_groups import StreamGroup

__all__ = ["BlockSimultaneousReads", "StreamGroups", "build_stream_groups"]


class BlockSimultaneousReads(Struct, frozen=True):
    """A group's ``BlockSimultaneousSyncsAction``: its streams are read one at a time."""


@builds("BlockSimultaneousSyncsAction")
def build_block_simultaneous_syncs(model: BlockSimultaneousSyncsAction, ctx: BuildContext,
                                   path: tuple) -> BlockSimultaneousReads:
    return BlockSimultaneousReads()


class StreamGroups:
    """Which groups reading each stream holds, and the gate that lets one read hold a group at a time."""

    def __init__(self, touched: Mapping[str, frozenset[str]] | None = None):
        #: stream name -> the groups its read holds (its own and its ancestors'); streams in none are left out
        self.touched: Mapping[str, frozenset[str]] = dict(touched or {})
        self._changed = threading.Condition()
        self._held: dict[str, str] = {}  # group -> the stream whose read holds it

    def holders(self) -> dict[str, str]:
        """The groups held now, each with the stream whose read holds it."""
        with self._changed:
            return dict(self._held)

    @contextmanager
    def reading(self, stream: str) -> Iterator[None]:
        """Hold the groups that reading ``stream`` touches for the ``with`` block; wait while another
        read holds one of them."""
        groups = self.touched.get(stream, frozenset())
        if not groups:
            yield
            return
        with self._changed:
            self._changed.wait_for(lambda: not any(group in self._held for group in groups))
            for group in groups:
                self._held[group] = stream
        try:
            yield
        finally:
            with self._changed:
                for group in groups:
                    del self._held[group]
                self._changed.notify_all()


def _ancestors(stream: Stream) -> list[str]:
    """The names of the streams reading ``stream`` reads through its partition routers, nearest first."""
    found: list[str] = []
    pending = [stream]
    while pending:
        for parent in parents_of(pending.pop().router):
            if parent.stream.name not in found:
                found.append(parent.stream.name)
                pending.append(parent.stream)
    return found


def build_stream_groups(groups: Mapping[str, StreamGroup], streams: Mapping[str, Stream],
                        ctx: BuildContext) -> StreamGroups:
    """The :class:`StreamGroups` of the source's ``stream_groups`` over its built ``streams``.

    Members are matched by name; a member the source does not have (for this config) is left out.
    """
    of_stream: dict[str, list[str]] = {}
    for group_name, group in groups.items():
        ctx.build(group.action, ("stream_groups", group_name, "action"))
        for member in group.streams:
            of_stream.setdefault(member.name, []).append(group_name)
    touched: dict[str, frozenset[str]] = {}
    for name, stream in streams.items():
        own = set(of_stream.get(name, ()))
        held = set(own)
        for ancestor in _ancestors(stream):
            shared = own.intersection(of_stream.get(ancestor, ()))
            if shared:
                both = sorted(shared)[0]
                raise ConfigError(
                    f"stream `{name}` and its parent stream `{ancestor}` are both in stream group `{both}`: "
                    "reading the child reads the parent, so the two cannot be kept apart; take one of them "
                    f"out of the group{place_suffix(ctx.place(('stream_groups', both)))}")
            held.update(of_stream.get(ancestor, ()))
        if held:
            touched[name] = frozenset(held)
    return StreamGroups(touched)
