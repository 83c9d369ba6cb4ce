"""Imports go down: each module imports only its own layer and what docs/architecture.md says its layer depends on.

The page's table of layers is the rule: its first column names a layer (a folder
such as `framework/engine/` or a module such as `framework/errors.py`), its last
column what that layer may import (`components/`, `typed/`, `errors.py`, or one
module of a layer, `components/custom/names.py`). Every import counts: at the top
of a module, inside a function, and under ``if TYPE_CHECKING`` (a type is a
dependency too). The modules at the root that depend on nothing of ours
(`errors.py`, `masking.py`...) may be imported from anywhere.

And the imports that run (all but ``TYPE_CHECKING`` ones, counting the package
``__init__`` every import runs first) make no cycle, except the language's own
recursion inside `framework/models/` and inside `framework/components/` (a stream
holds a retriever whose partition router reads parent streams).
"""

from __future__ import annotations

import re

from framework_imports import MODULES, ROOT, imports, within

PAGE = ROOT / "docs" / "architecture.md"

_TICKED = re.compile(r"`([\w./-]+)`")
#: Cycles allowed, by the folder they stay inside, and why.
RECURSIVE = {
    "framework.models": "the language is recursive: a stream holds a retriever, whose router holds parent streams",
    "framework.components": "the runtime of that recursion: a stream's builder builds its retriever, whose "
                            "partition router builds and reads its parent streams",
}


def _layers() -> dict[str, list[str]]:
    """layer (a dotted module or package prefix) -> what it may import (dotted prefixes), from the page's table."""
    text = PAGE.read_text(encoding="utf-8")
    table = text.split("## The layers", 1)[1].split("\n## ", 1)[0]
    layers: dict[str, list[str]] = {}
    for line in table.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) < 3 or not cells[0].startswith("`framework"):
            continue
        allowed = [_dotted("framework/" + name) for name in _TICKED.findall(cells[-1])]
        for name in _TICKED.findall(cells[0]):
            layers[_dotted(name if name.startswith("framework") else "framework/" + name)] = allowed
    return layers


def _dotted(path: str) -> str:
    return path.rstrip("/").removesuffix(".py").removesuffix("/__init__").replace("/", ".")


def _layer_of(module: str, layers: dict[str, list[str]]) -> str | None:
    matches = [layer for layer in layers if within(module, layer)]
    return max(matches, key=len) if matches else None


def test_the_page_names_a_layer_for_every_module():
    layers = _layers()
    assert len(layers) > 15, sorted(layers)
    missing = sorted(module for module in MODULES if _layer_of(module, layers) is None)
    assert missing == [], f"modules in no layer of docs/architecture.md's table: {missing}"


def test_every_import_goes_down_to_a_layer_the_page_allows():
    layers = _layers()
    foundation = {layer for layer, allowed in layers.items()
                  if layer.count(".") == 1 and layer in MODULES and MODULES[layer].name != "__init__.py"
                  and all(_layer_of(a, layers) in (None,) or a.count(".") == 1 for a in allowed)}
    wrong = []
    for module, path in MODULES.items():
        own = _layer_of(module, layers)
        assert own is not None
        for target, line, _, _ in imports(module, path):
            there = _layer_of(target, layers)
            if there == own or within(target, own) or there in foundation:
                continue
            if any(within(target, allowed) for allowed in layers[own]):
                continue
            wrong.append(f"{path.relative_to(ROOT)}:{line} imports {target} ({own} may import: "
                         f"{', '.join(layers[own]) or 'nothing of ours'})")
    assert wrong == [], "imports that go up or across (fix the import, or the page if the layer truly depends on " \
                        "it):\n" + "\n".join(wrong)


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for module, path in MODULES.items():
        edges = set()
        for target, _, runs, _ in imports(module, path):
            if not runs:
                continue
            parts = target.split(".")
            edges.update(".".join(parts[:i]) for i in range(2, len(parts) + 1))  # its packages' __init__ run first
        # a package the importing module is inside is loading already: importing it again loads nothing
        inside = {".".join(module.split(".")[:i]) for i in range(1, module.count(".") + 1)}
        graph[module] = {edge for edge in edges if edge in MODULES and edge != module and edge not in inside}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_import_cycle_but_the_languages_own_recursion():
    wrong = [cycle for cycle in _cycles(_graph())
             if not any(all(within(module, folder) for module in cycle) for folder in RECURSIVE)]
    assert wrong == [], f"import cycles: {wrong}"


def test_the_checks_catch_a_cycle_and_an_upward_import():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    layers = _layers()
    assert _layer_of("framework.engine.sync", layers) == "framework.engine"
    assert not any(within("framework.cli.run", allowed) for allowed in layers["framework.engine"])


def test_tables_sit_below_spark_and_import_no_spark():
    """framework/tables commits on the driver without a JVM: the Spark pipeline and the commands use it, never
    the other way, and it imports nothing of Spark's (deltalake and pyiceberg only, lazily)."""
    layers = _layers()
    assert "framework.tables" in layers
    assert any(within("framework.tables", allowed) for allowed in layers["framework.spark"])
    assert not any(within("framework.spark", allowed) or within("framework.engine", allowed)
                   for allowed in layers["framework.tables"])
    spark_imports = [f"{path.relative_to(ROOT)}:{line} imports {target}"
                     for module, path in MODULES.items() if within(module, "framework.tables")
                     for target, line, _, _ in imports(module, path) if target.split(".")[0] in ("pyspark", "py4j")]
    assert spark_imports == []
