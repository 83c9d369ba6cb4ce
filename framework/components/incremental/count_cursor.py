"""IncrementingCountCursor at run time: an integer cursor (an id, a sequence number).

:class:`CountCursor` has the same value interface as
:class:`~framework.components.incremental.datetime_cursor.DatetimeCursor`, so the
engine plans, reads and keeps state for it the same way; its values are ``int``.
Airbyte's rules, matched:

* a sync reads one slice, ``{"start": N}``, where ``N`` is the saved state's
  value when there is one at or above ``start_value``, else ``start_value``
  (0 when left out); ``start_value_option`` puts ``N`` into the request;
* records are not filtered: the API is expected to return those from ``N``;
* the state is ``{"<cursor_field>": <largest value seen>}`` as a number, and
  ``{"<cursor_field>": N}`` after a sync that saw no record.

Record values that are integers, or text holding one, count; anything else
(missing, a float with a fraction, a word) is ignored for the state and the
record is kept. A saved value written as text (``"42"``) is read too (Airbyte
fails on it).

Airbyte refuses this cursor under a partition router; here each partition keeps
its own value (``{"states": [{"partition": ..., "cursor": {"id": 42}}]}``), the
engine's per-partition state, with no lookback (there is no time to look back by).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from msgspec import Struct

from framework.components.context import BuildContext, builds
from framework.components.http.request import Injection, RequestParts, injection_of
from framework.errors import ConfigError, StateError, place_suffix
from framework.models.incremental import IncrementingCountCursor

__all__ = ["START_KEY", "CountCursor"]

#: The key of the slice's value, as Airbyte's concurrent cursor names it (`stream_interval.start`).
START_KEY = "start"


def as_count(value: Any) -> int | None:
    """``value`` as an integer cursor value, or None when it is not one (bools are not)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value) if value.is_integer() else None
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            return None
    return None


class CountCursor(Struct, frozen=True):
    """The runtime form of an IncrementingCountCursor (see the module docstring)."""

    cursor_field: str
    start_value: int = 0
    start_option: Injection | None = None
    place: str | None = None
    # What the engine asks of every cursor; an integer cursor has none of these rules.
    is_data_feed: bool = False
    is_client_side_incremental: bool = False
    global_substream_cursor: bool = False
    partition_field_start: str = START_KEY
    catalog_cursor_field: bool = False  # allow_catalog_defined_cursor_field

    # -- the one slice -------------------------------------------------------------------

    def start_of(self, state_value: Any) -> int:
        """Where a sync starts: the saved value when there is one at or above ``start_value``."""
        if state_value is not None and state_value >= self.start_value:
            return int(state_value)
        return self.start_value

    def windows(self, state_value: Any, *, min_lookback: Any = None) -> list[dict]:
        """The one cursor slice, ``{"start": N}`` (``min_lookback`` is ignored: there is no time here)."""
        return [{START_KEY: self.start_of(state_value)}]

    def window_bounds(self, cursor_slice: Mapping[str, Any]) -> tuple[Any, Any]:
        """The slice's start, and no end."""
        return as_count(cursor_slice.get(START_KEY)), None

    def floor(self, state_value: Any, min_lookback: Any = None) -> Any:
        """The value before which records are synced already: the saved value itself."""
        return state_value

    def keep_range(self, state_value: Any, min_lookback: Any = None) -> tuple[None, None]:
        """No client-side bounds: an integer cursor filters nothing."""
        return None, None

    # -- values --------------------------------------------------------------------------

    def record_value(self, record: Mapping[str, Any]) -> int | None:
        """The record's cursor value, or None when it holds no integer."""
        return as_count(record.get(self.cursor_field))

    def state_value(self, stream_state: Mapping[str, Any] | None) -> int | None:
        """The value saved in ``{"<cursor_field>": N}``; None when there is none (or it is 0, as Airbyte reads it)."""
        if not stream_state:
            return None
        if not isinstance(stream_state, Mapping):
            raise StateError(f"the saved state should be an object like {{'{self.cursor_field}': 42}}, not a "
                             f"{type(stream_state).__name__}; fix it or clear the state")
        value = stream_state.get(self.cursor_field)
        if value is None or value == "":
            return None
        found = as_count(value)
        if found is None:
            raise StateError(f"the saved state's `{self.cursor_field}` is {value!r}, not an integer; write it like "
                             f"{{'{self.cursor_field}': 42}} or clear the state to read from `start_value`")
        return found or None

    def state_of(self, value: Any) -> dict[str, int]:
        """The state that records ``value``: ``{"<cursor_field>": value}``, a number as Airbyte writes it."""
        return {self.cursor_field: int(value)}

    def in_window(self, value: Any, cursor_slice: Mapping[str, Any]) -> bool:
        """Every value belongs to the one slice."""
        return True

    # -- requests ------------------------------------------------------------------------

    def apply(self, parts: RequestParts, cursor_slice: Mapping[str, Any]) -> None:
        """Put the slice's start where ``start_value_option`` says."""
        if self.start_option is not None:
            self.start_option.apply(parts, cursor_slice.get(START_KEY))


@builds("IncrementingCountCursor")
def build_count_cursor(model: IncrementingCountCursor, ctx: BuildContext, path: tuple) -> CountCursor:
    place = ctx.place(path)
    start = 0
    if model.start_value is not None:
        rendered = ctx.render(model.start_value, model.parameters) if isinstance(model.start_value, str) \
            else model.start_value
        found = as_count(rendered)
        if found is None:
            where = ctx.place(path + ("start_value",)) or place
            raise ConfigError(f"`start_value` rendered {rendered!r}, not an integer{place_suffix(where)}; give an "
                              "integer or a config value that holds one")
        start = found
    return CountCursor(
        cursor_field=str(ctx.render(model.cursor_field, model.parameters)),
        start_value=start,
        start_option=None if model.start_value_option is None else injection_of(model.start_value_option, ctx),
        catalog_cursor_field=bool(model.allow_catalog_defined_cursor_field),
        place=place,
    )
