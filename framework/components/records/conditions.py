"""What the selector needs of transformations and filters: the :class:`Transformation` protocol and a
:class:`Condition` (a boolean template decided per value).

Here, apart from :mod:`.transformations` (``AddFields``, ``RemoveFields``), so that a stream without
those does not load their runtime (the catalog's builder loads it with a manifest that names one).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from msgspec import Struct

from framework.interpolation import TemplateEngine
from framework.interpolation.checks import has_markup
from framework.interpolation.conversions import truthy


class Transformation(Protocol):
    """Changes one record; may mutate it, and returns the record to keep."""

    def apply(self, record: dict, variables: Mapping[str, Any]) -> dict: ...


_ALWAYS = None  # a condition that is empty, or constant and true


class Condition(Struct, frozen=True):
    """A boolean template decided per value; ``never`` when it is constant and false."""

    source: str
    never: bool = False

    @staticmethod
    def of(source: str, engine: TemplateEngine) -> Condition | None:
        """None when the condition always holds (empty, or constant and true)."""
        if not source.strip():
            return _ALWAYS
        if not has_markup(source):
            return _ALWAYS if truthy(source) else Condition(source, never=True)
        engine.compile(source)  # syntax errors surface at build time
        return Condition(source)

    def holds(self, engine: TemplateEngine, context: dict, value: Any) -> bool:
        if self.never:
            return False
        context["property"] = value
        return engine.evaluate(self.source, context, "boolean")

    def holds_for_field(self, engine: TemplateEngine, context: dict, value: Any, path: tuple[str, ...]) -> bool:
        """AddFields' condition: the field's ``value`` (also ``property``) and its ``path``."""
        if self.never:
            return False
        context["property"] = context["value"] = value
        context["path"] = list(path)
        return engine.evaluate(self.source, context, "boolean")


__all__ = ["Condition", "Transformation"]
