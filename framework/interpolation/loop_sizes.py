"""How many steps a template's loops may take, told from the template alone: what validate-manifest warns of
before a rendering meets the render budget (:mod:`framework.interpolation.render_budget`).

:func:`loop_warnings` walks the ``{% for %}`` loops of a parsed template with the sizes it can tell: a literal
list, a constant text or list (``'x' * 1000``), ``range`` of constants, ``| list`` of those. A loop over a
value repeated by a number the template reads (``'x' * config['n']``, ``range(config['pages'])``) has no
bound it can see; nested loops whose sizes multiply past :data:`~render_budget.MAX_STEPS` cannot finish.
Anything else (a list from the config or a response) is left alone: its size is the data's.
"""

from __future__ import annotations

from jinja2 import nodes

from framework.interpolation.render_budget import MAX_STEPS

__all__ = ["loop_warnings"]


class _Unbounded:
    """A size that grows with a value read at run time; ``what`` says which."""

    def __init__(self, what: str) -> None:
        self.what = what


Size = int | _Unbounded | None  # None: not told by the template


def _number(node: nodes.Node) -> int | None:
    if isinstance(node, nodes.Const) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, (nodes.Mul, nodes.Add, nodes.Pow)):
        left, right = _number(node.left), _number(node.right)
        if left is None or right is None:
            return None
        if isinstance(node, nodes.Mul):
            return left * right
        if isinstance(node, nodes.Add):
            return left + right
        return left ** right if right < 64 and abs(left) < 1 << 20 else None
    return None


def _read(node: nodes.Node) -> str | None:
    """What a run-time number in ``node`` is read from (``config['n']``), or None when it is no such read."""
    if isinstance(node, nodes.Name):
        return f"`{node.name}`"
    if isinstance(node, (nodes.Getitem, nodes.Getattr)):
        inner = _read(node.node)
        if inner is None:
            return None
        key = node.arg.value if isinstance(node, nodes.Getitem) and isinstance(node.arg, nodes.Const) else \
            getattr(node, "attr", "...")
        return f"{inner.rstrip('`')}[{key!r}]`"
    if isinstance(node, nodes.Filter) and node.name in ("int", "float") and node.node is not None:
        return _read(node.node)
    return None


def _size(node: nodes.Node) -> Size:
    if isinstance(node, (nodes.List, nodes.Tuple)):
        return len(node.items)
    if isinstance(node, nodes.Const) and isinstance(node.value, (str, list, tuple)):
        return len(node.value)
    if isinstance(node, nodes.Filter) and node.name in ("list", "unique", "sort", "reverse") \
            and node.node is not None:
        return _size(node.node)
    if isinstance(node, nodes.Mul):
        for seq, count in ((node.left, node.right), (node.right, node.left)):
            size = _size(seq)
            if size is None:
                continue
            times = _number(count)
            if times is not None:
                return size * max(times, 0) if isinstance(size, int) else size
            read = _read(count)
            if read is not None:
                return _Unbounded(read)
        return None
    if isinstance(node, nodes.Call) and isinstance(node.node, nodes.Name) and node.node.name == "range":
        bounds = [_number(arg) for arg in node.args]
        if bounds and all(bound is not None for bound in bounds):
            try:
                return len(range(*bounds))  # type: ignore[arg-type]
            except (TypeError, ValueError):
                return None
        reads = [_read(arg) for arg in node.args]
        found = next((read for read in reads if read is not None), None)
        return _Unbounded(found) if found is not None else None
    return None


def loop_warnings(tree: nodes.Node) -> list[tuple[int, str]]:
    """``(line, message)`` for each loop whose steps the template leaves unbounded or puts past the budget."""
    found: list[tuple[int, str]] = []

    def visit(node: nodes.Node, steps: int) -> None:
        if not isinstance(node, nodes.For):
            for child in node.iter_child_nodes():
                visit(child, steps)
            return
        size = _size(node.iter)
        inner = steps
        if isinstance(size, _Unbounded):
            found.append((node.lineno, f"a loop over a value whose length comes from {size.what} at run time: "
                                       "its steps have no bound the template shows, and a rendering stops after "
                                       f"{MAX_STEPS:,} steps"))
        elif isinstance(size, int):
            inner = steps * size
            if inner > MAX_STEPS >= steps:
                found.append((node.lineno, f"nested loops of {inner:,} steps in all: past the render budget of "
                                           f"{MAX_STEPS:,} steps, so the template can never render"))
        visit(node.iter, steps)
        for part in node.body:
            visit(part, inner)
        for part in (*node.else_, *((node.test,) if node.test is not None else ())):
            visit(part, steps)

    visit(tree, 1)
    return found
