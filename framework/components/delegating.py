"""``StateDelegatingStream`` and ``ConditionalStreams``: which definition of a stream reads, and which streams exist.

A :class:`Delegation` holds the two built definitions of a
``StateDelegatingStream``. :meth:`Delegation.choose` picks, from the stream's
saved state, as airbyte-cdk 7.39 does: no state, the full-refresh definition;
a state, the incremental one, unless ``api_retention_period`` is set and the
state's cursor value is older than that (or cannot be read), when the
full-refresh definition reads everything again from no state. The cursor value
is looked for with the full-refresh definition's cursor first, then the
incremental one's (flat, or under ``state`` for a per-partition state); the
state Airbyte saves after a full refresh without a cursor
(``__ab_no_cursor_state_message``) counts as now.

When either definition is read through airbyte-cdk (a custom retriever or
requester), the whole stream is: airbyte-cdk then picks the definition itself.

:func:`listed_streams` is the source's streams for a config: the
``ConditionalStreams`` whose condition renders true contribute theirs, in place,
and the streams ``dynamic_streams`` make follow.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from datetime import datetime
from typing import Any

from msgspec import Struct

from framework.components.context import BuildContext, builds
from framework.components.dynamic import Templates, resolve_templates, template_streams
from framework.components.stream import Stream, _bridged_stream, _is_airbyte_class, bridge_reason
from framework.errors import ConfigError, StateError, place_suffix
from framework.models import ConditionalStreams, DeclarativeSource, StateDelegatingStream
from framework.temporal.clock import Clock
from framework.temporal.durations import duration_problem, parse_duration

__all__ = ["NO_CURSOR_STATE_KEY", "Delegation", "listed_streams"]

#: The key of the state Airbyte's sources emit at the end of a full refresh without a cursor.
NO_CURSOR_STATE_KEY = "__ab_no_cursor_state_message"


class Delegation(Struct, frozen=True):
    """The two definitions of a StateDelegatingStream, and the retention period (rendered) of its API."""

    name: str
    full_refresh: Stream
    incremental: Stream
    retention: str | None = None
    place: str | None = None

    def for_start(self, start_state: Mapping[str, Any] | None) -> Stream:
        """The definition a sync that started from ``start_state`` (None: none) reads with."""
        return self.incremental if start_state else self.full_refresh

    def choose(self, state: Mapping[str, Any] | None, clock: Clock) -> tuple[Stream, Mapping[str, Any] | None, str]:
        """The definition to read with, the state it starts from, and why (for the log)."""
        if not state:
            return self.full_refresh, None, "no saved state: the full-refresh definition reads"
        if self.retention is not None:
            cutoff = clock.now() - parse_duration(self.retention)
            seen = self._cursor_datetime(state, clock)
            if seen is None or seen < cutoff:
                why = "its saved cursor cannot be read" if seen is None else \
                    f"its saved cursor {seen.isoformat()} is older than {cutoff.isoformat()}"
                return self.full_refresh, None, (f"{why} (api_retention_period {self.retention}): the full-refresh "
                                                 "definition reads everything again")
        return self.incremental, state, "saved state: the incremental definition reads"

    def _cursor_datetime(self, state: Mapping[str, Any], clock: Clock) -> datetime | None:
        for stream in (self.full_refresh, self.incremental):
            cursor = stream.cursor
            if cursor is None:
                if stream is self.full_refresh and state.get(NO_CURSOR_STATE_KEY):
                    return clock.now()
                continue
            flat = state if cursor.cursor_field in state or not isinstance(state.get("state"), Mapping) \
                else state["state"]
            try:
                found = cursor.state_value(flat)
            except StateError:
                found = None
            if isinstance(found, datetime):  # an integer cursor's state has no age
                return found
        return None


@builds("StateDelegatingStream")
def build_delegation(model: StateDelegatingStream, ctx: BuildContext, path: tuple) -> Delegation | Stream:
    """The stream's :class:`Delegation`, or one bridged :class:`Stream` when airbyte-cdk must read it."""
    place = ctx.place(path)
    for key in ("full_refresh_stream", "incremental_stream"):
        inner = getattr(model, key)
        if inner.name != model.name:
            raise ConfigError(f"StateDelegatingStream `{model.name}`: its {key} is named `{inner.name}`; give both "
                              f"definitions the stream's name{place_suffix(place)}")
    inner_ctx = ctx.within_stream(model.name)
    reasons = [bridge_reason(m, functools.partial(_is_airbyte_class, ctx=inner_ctx, path=path + (key,)))
               for key, m in (("full_refresh_stream", model.full_refresh_stream),
                              ("incremental_stream", model.incremental_stream))]
    if any(reasons):
        reason = next(r for r in reasons if r)
        _bridged_stream(model.full_refresh_stream, inner_ctx, path + ("full_refresh_stream",), reason)
        return _bridged_stream(model.incremental_stream, inner_ctx, path + ("incremental_stream",), reason)
    retention = None
    if model.api_retention_period:
        rendered = ctx.render(model.api_retention_period, model.parameters)
        if rendered not in (None, "", "None"):
            retention = str(rendered)
            problem = duration_problem(retention)
            if problem:
                raise ConfigError(f"StateDelegatingStream `{model.name}`: api_retention_period {retention!r}: "
                                  f"{problem}{place_suffix(place)}")
    return Delegation(model.name, ctx.build(model.full_refresh_stream, path + ("full_refresh_stream",)),
                      ctx.build(model.incremental_stream, path + ("incremental_stream",)), retention, place)


def listed_streams(source: DeclarativeSource, ctx: BuildContext, checked: Any = None,
                   templates: Templates | None = None) -> Iterator[tuple[tuple, Any]]:
    """``(path, model)`` of each stream the source has for the context's config, in manifest order, then
    the streams ``dynamic_streams`` make (with ``checked``, the checked manifest: from ``templates`` when
    given, resolved before, else resolved now, see :mod:`framework.components.dynamic`)."""
    for index, model in enumerate(source.streams):
        if isinstance(model, ConditionalStreams):
            where = ("streams", index)
            try:
                holds = ctx.render(model.condition, model.parameters, "boolean")
            except Exception as exc:  # noqa: BLE001 - any error of the template (Jinja's, a filter's): name the place
                raise ConfigError(f"the condition of ConditionalStreams could not be rendered: {exc}"
                                  f"{place_suffix(ctx.place(where + ('condition',)))}") from None
            if holds:
                for inner, stream in enumerate(model.streams):
                    yield where + ("streams", inner), stream
        else:
            yield ("streams", index), model
    if checked is not None and source.dynamic_streams:
        if templates is None:
            templates = resolve_templates(source, checked.data, ctx)
        yield from template_streams(source, templates, checked, ctx)
