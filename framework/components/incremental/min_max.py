"""MinMaxDatetime at run time: a datetime template clamped between optional bounds.

A bound of a DatetimeBasedCursor (``start_datetime``, ``end_datetime``) is
either a plain template string or a MinMaxDatetime. Both become a
:class:`MinMax`, whose :meth:`MinMax.value` renders the templates (``config``
and ``parameters``; time macros such as ``now_utc()`` read the engine's
clock), parses them with ``datetime_format`` and clamps the result::

    value = max(datetime, min_datetime)   when min_datetime renders non-empty
    value = min(value, max_datetime)      when max_datetime renders non-empty

An empty ``datetime_format`` falls back to the cursor's ``datetime_format``
(or to :data:`DEFAULT_FORMAT` for a MinMaxDatetime built on its own).
Datetimes without a timezone are taken to be UTC; values compare as instants.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from framework.components.context import BuildContext, builds
from framework.errors import ConfigError, DatetimeFormatError, place_suffix
from framework.interpolation import TemplateEngine
from framework.models.incremental import Bound, MinMaxDatetime
from framework.temporal.datetime_formats import parse_datetime

__all__ = ["DEFAULT_FORMAT", "MinMax", "min_max_of"]

#: Format of a MinMaxDatetime that names none and has no cursor to take one from.
DEFAULT_FORMAT = "%Y-%m-%dT%H:%M:%S.%f%z"


def _identity(text: str) -> str:
    return text


@dataclass(frozen=True)
class MinMax:
    """A datetime bound: ``source`` clamped to ``min_source`` .. ``max_source``.

    ``variables`` is the template context captured at build time (``config`` and
    the bound's ``parameters``); ``name`` (``start_datetime``) and ``place``
    (``file:line:col``) only serve error messages, ``mask`` hides secrets in them.
    """

    engine: TemplateEngine
    source: str
    datetime_format: str
    min_source: str | None = None
    max_source: str | None = None
    variables: Mapping[str, Any] = field(default_factory=dict)
    name: str = "datetime"
    place: str | None = None
    mask: Callable[[str], str] = field(default=_identity, repr=False, compare=False)

    def value(self, variables: Mapping[str, Any] | None = None) -> datetime:
        """The clamped datetime (aware, UTC); ``variables`` replaces the captured template context."""
        context = self.variables if variables is None else variables
        instant = self._read(self.source, context, self.name)
        if instant is None:
            raise ConfigError(
                f"`{self.name}` rendered empty{self._where()}; check that the config value it reads is set"
            )
        low = self._read(self.min_source, context, f"{self.name}.min_datetime")
        if low is not None and instant < low:
            instant = low
        high = self._read(self.max_source, context, f"{self.name}.max_datetime")
        if high is not None and instant > high:
            instant = high
        return instant

    def _read(self, source: str | None, context: Mapping[str, Any], what: str) -> datetime | None:
        if source is None:
            return None
        text = self.engine.evaluate(source, context, "string")
        if text is None or not str(text).strip():
            return None
        try:
            return parse_datetime(str(text).strip(), self.datetime_format)
        except DatetimeFormatError:
            shown = self.mask(repr(str(text)))
            raise DatetimeFormatError(
                f"`{what}` is {shown}, which does not match the format {self.datetime_format!r}"
                f"{self._where()}; write the value in that format or set `datetime_format` on a "
                "MinMaxDatetime to the format the value is in"
            ) from None

    def _where(self) -> str:
        return place_suffix(self.place)


def min_max_of(
    bound: Bound,
    ctx: BuildContext,
    path: tuple,
    default_format: str,
    name: str,
    parameters: Mapping[str, Any],
) -> MinMax:
    """The :class:`MinMax` of a bound: a template string (rendered with ``parameters``,
    those of the component holding it) or a MinMaxDatetime (with its own parameters).

    ``default_format`` is used when the bound names no ``datetime_format``.
    """
    place = ctx.place(path) or (ctx.place(path[:-1]) if path else None)
    engine = ctx.engine
    assert engine is not None  # BuildContext sets it
    if isinstance(bound, MinMaxDatetime):
        return MinMax(
            engine=engine,
            source=bound.datetime,
            datetime_format=bound.datetime_format or default_format,
            min_source=bound.min_datetime,
            max_source=bound.max_datetime,
            variables=ctx.variables(bound.parameters),
            name=name,
            place=place,
            mask=ctx.mask,
        )
    return MinMax(
        engine=engine,
        source=bound,
        datetime_format=default_format,
        variables=ctx.variables(parameters),
        name=name,
        place=place,
        mask=ctx.mask,
    )


@builds("MinMaxDatetime")
def build_min_max(model: MinMaxDatetime, ctx: BuildContext, path: tuple) -> MinMax:
    return min_max_of(model, ctx, path, DEFAULT_FORMAT, "datetime", model.parameters)
