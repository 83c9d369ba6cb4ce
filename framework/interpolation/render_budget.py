"""The render budget: how much work one rendering of a template may do.

:mod:`framework.interpolation.limits` refuses a single operation that would build a huge value; this module
bounds what many small operations add up to. Before a template is compiled, :func:`budgeted` rewrites its
tree so that

* every ``{% for %}`` iterates through :meth:`RenderBudget.steps` (one step per item, all the loops of a
  rendering together, nested ones included): past :data:`MAX_STEPS` steps, or :data:`MAX_SECONDS` seconds of
  looping, the rendering stops;
* every ``~`` concatenation is measured (a string doubled in a loop stops at ``limits.MAX_ITEMS``).

The engine starts a budget per rendering (:func:`start`); each thread renders with its own. Going past it
raises :class:`~framework.interpolation.limits.TemplateLimitError`, which the engine reports as a resource
limit of the template (and the component that rendered it names its manifest place).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Iterator
from typing import Any

from jinja2 import nodes
from jinja2.visitor import NodeTransformer

from framework.interpolation.limits import MAX_ITEMS, TemplateLimitError

#: Loop steps one rendering may take, every loop of it together.
MAX_STEPS = 1_000_000
#: Seconds one rendering may spend looping.
MAX_SECONDS = 10.0

STEPS_ATTRIBUTE = "budget_steps"  # the environment's method each loop iterates through
SIZED_ATTRIBUTE = "budget_sized"  # the environment's method each concatenation goes through


class RenderBudget:
    """The steps and seconds one rendering has used."""

    __slots__ = ("ends", "max_seconds", "max_steps", "used")

    def __init__(self, max_steps: int = MAX_STEPS, max_seconds: float = MAX_SECONDS) -> None:
        self.max_steps = max_steps
        self.max_seconds = max_seconds
        self.used = 0
        self.ends = time.monotonic() + max_seconds

    def steps(self, iterable: Iterable[Any]) -> Iterator[Any]:
        for item in iterable:
            self.used += 1
            if self.used > self.max_steps:
                raise TemplateLimitError(f"its loops ran more than {self.max_steps:,} steps (the render budget); "
                                         "loop over fewer items")
            if not self.used & 0xFF and time.monotonic() > self.ends:
                raise TemplateLimitError(f"its loops ran longer than {self.max_seconds:g} s (the render budget); "
                                         "loop over fewer items")
            yield item


_LOCAL = threading.local()


def start(max_steps: int = MAX_STEPS, max_seconds: float = MAX_SECONDS) -> RenderBudget:
    """A new budget for the rendering this thread begins."""
    budget = _LOCAL.budget = RenderBudget(max_steps, max_seconds)
    return budget


def current() -> RenderBudget:
    budget: RenderBudget | None = getattr(_LOCAL, "budget", None)
    return budget if budget is not None else start()


def steps(iterable: Iterable[Any]) -> Iterator[Any]:
    """``iterable``'s items, each one a step of this thread's rendering."""
    return current().steps(iterable)


def sized(value: Any) -> Any:
    """``value`` (a concatenation's result), refused when it is longer than ``limits.MAX_ITEMS``."""
    if isinstance(value, str) and len(value) > MAX_ITEMS:
        raise TemplateLimitError(f"a joined string would be {len(value):,} long; the limit is {MAX_ITEMS:,}")
    return value


class _Budgeting(NodeTransformer):
    def visit_For(self, node: nodes.For) -> nodes.Node:  # noqa: N802 - NodeTransformer's naming
        self.generic_visit(node)
        node.iter = nodes.Call(nodes.EnvironmentAttribute(STEPS_ATTRIBUTE, lineno=node.lineno), [node.iter], [],
                               None, None, lineno=node.lineno)
        return node

    def visit_Concat(self, node: nodes.Concat) -> nodes.Node:  # noqa: N802 - NodeTransformer's naming
        self.generic_visit(node)
        return nodes.Call(nodes.EnvironmentAttribute(SIZED_ATTRIBUTE, lineno=node.lineno), [node], [], None, None,
                          lineno=node.lineno)


def budgeted(tree: nodes.Template) -> nodes.Template:
    """``tree`` with its loops counted and its concatenations measured (changed in place; returned)."""
    _Budgeting().visit(tree)
    return tree


__all__ = ["MAX_SECONDS", "MAX_STEPS", "RenderBudget", "budgeted", "current", "sized", "start", "steps"]
