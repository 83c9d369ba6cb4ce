"""The framework's modules and their imports of each other, read with ``ast`` (for the tests of the import rules).

:data:`MODULES` maps each dotted module name under framework/ to its file; :func:`imports` lists the
framework modules one module imports, where, and how: at run time or for type checkers only
(``if TYPE_CHECKING:``), at the top or inside a function.
"""

from __future__ import annotations

import ast
import functools
import gc
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "framework"


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


MODULES = _modules()


class Import(NamedTuple):
    target: str  # the framework module loaded: ``from a import b`` is ``a.b`` when that is a module, else ``a``
    line: int
    runs: bool  # False under ``if TYPE_CHECKING:``
    in_function: bool


@functools.cache
def tree(path: Path) -> ast.Module:
    # The collector is held off while the tree is built: on CPython 3.11.7 a collection in the middle of it (of
    # objects earlier tests left, after tests/formats) made the parse fail with a spurious SystemError
    # ("AST constructor recursion depth mismatch").
    enabled = gc.isenabled()
    gc.disable()
    try:
        return ast.parse(path.read_text(encoding="utf-8"), str(path))
    finally:
        if enabled:
            gc.enable()


def resolve(name: str) -> str:
    """The module ``name`` is, or is an attribute of."""
    while name not in MODULES and "." in name:
        name = name.rsplit(".", 1)[0]
    return name


def _targets(node: ast.Import | ast.ImportFrom, module: str, is_package: bool) -> list[str]:
    if isinstance(node, ast.Import):
        return [resolve(alias.name) for alias in node.names]
    base = node.module or ""
    if node.level:
        package = module.split(".") if is_package else module.split(".")[:-1]
        package = package[: len(package) - node.level + 1]
        base = ".".join([*package, *([node.module] if node.module else [])])
    return [f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else resolve(base) for alias in node.names]


def imports(module: str, path: Path) -> list[Import]:
    """Every import of a framework module by ``module`` (whose file is ``path``)."""
    is_package = path.name == "__init__.py"
    found: list[Import] = []

    def walk(node: ast.AST, runs: bool, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                for inner in child.body:
                    walk_one(inner, False, in_function)
                for inner in child.orelse:
                    walk_one(inner, runs, in_function)
                continue
            walk_one(child, runs, in_function)

    def walk_one(child: ast.AST, runs: bool, in_function: bool) -> None:
        if isinstance(child, (ast.Import, ast.ImportFrom)):
            found.extend(Import(target, child.lineno, runs, in_function)
                         for target in _targets(child, module, is_package)
                         if target == "framework" or target.startswith("framework."))
        walk(child, runs, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    walk(tree(path), True, False)
    return found


def within(module: str, prefix: str) -> bool:
    """Whether ``module`` is ``prefix`` or inside it."""
    return module == prefix or module.startswith(prefix + ".")
