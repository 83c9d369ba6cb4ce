"""Template values that are rendered per request, with a fast path for constants.

A manifest value may be text, a mapping or a list whose strings are templates.
:class:`TemplateValue` looks at it once: when no string in it holds markup
(``{{``, ``{%``, ``{#``) the value is a constant and rendering returns it
without touching Jinja, which is most of the values of most manifests.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from msgspec import Struct
from msgspec.structs import force_setattr

from framework.interpolation import TemplateEngine
from framework.interpolation.checks import has_markup


def holds_markup(value: Any) -> bool:
    if isinstance(value, str):
        return has_markup(value)
    if isinstance(value, Mapping):
        return any(holds_markup(k) or holds_markup(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return any(holds_markup(v) for v in value)
    return False


class TemplateValue(Struct, frozen=True):
    """A manifest value rendered with per-request variables.

    ``result`` is how a template string at the top is typed (see the engine);
    strings inside mappings and lists are evaluated with ``inner`` (``string``
    for query parameters and headers, ``any`` for JSON bodies so numbers stay
    numbers).
    """

    value: Any
    engine: TemplateEngine
    result: str = "string"
    inner: str = "string"
    constant: bool = False  # no template anywhere in ``value``: set from it, whatever is given

    def __post_init__(self) -> None:
        force_setattr(self, "constant", not holds_markup(self.value))

    def render(self, variables: Mapping[str, Any]) -> Any:
        if self.constant:
            return self.value
        return self._render(self.value, variables, self.result)

    def _render(self, value: Any, variables: Mapping[str, Any], result: str) -> Any:
        if isinstance(value, str):
            return self.engine.evaluate(value, variables, result)
        if isinstance(value, Mapping):
            out = {}
            for key, item in value.items():
                name = self.engine.render(key, variables) if isinstance(key, str) else key
                out[name] = self._render(item, variables, self.inner)
            return out
        if isinstance(value, (list, tuple)):
            return [self._render(item, variables, self.inner) for item in value]
        return value


__all__ = ["TemplateValue", "holds_markup"]
