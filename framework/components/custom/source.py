"""What a custom component's Python source says, read with :mod:`ast` (nothing is imported or run).

``validate-manifest`` uses this to check a ``class_name`` without running the
user's code: :func:`read_module` parses a module file once (cached by path,
size and modification time); :func:`find_class` finds a class in it (following
re-exports inside the package) and gathers what the class and its bases define:
its members (methods, properties, attributes), its declared fields (annotations
and ``__init__`` parameters) and the bases it cannot see into; and
:func:`missing_imports` lists the packages the module (and the package modules
it imports) needs that are not installed.

A module is *local* when it lives under ``root`` (the folder that holds the
connector's package, or the manifest's folder for a ``components.py`` beside
it): its imports are followed to files. Anything else is an installed module:
``airbyte_cdk`` bases are trusted to give what their kind needs, and so is any
other base whose source is not local (it cannot be seen, so nothing is
claimed missing).
"""

from __future__ import annotations

import ast
import importlib.util
import os
import sys
from collections.abc import Iterator
from functools import lru_cache

from msgspec import Struct, field

__all__ = ["AIRBYTE_CDK", "Base", "ClassFacts", "Import", "MissingImport", "ModuleSource", "class_names",
           "find_class", "is_installed", "missing_imports", "module_file", "read_module"]

AIRBYTE_CDK = "airbyte_cdk"
_STDLIB = frozenset(sys.stdlib_module_names) | {"__future__"}
_BUILTIN_BASES = frozenset({"object", "Exception", "BaseException", "ValueError", "RuntimeError", "dict", "list",
                            "str", "int", "float", "tuple", "set", "frozenset"})
_MAX_DEPTH = 20  # base classes and re-exports followed at most this deep


class Import(Struct, frozen=True):
    """One import statement's target: ``module`` (dotted, may be empty for ``from . import x``), its ``level``
    (dots of a relative import), the ``names`` taken from it (empty for ``import x``), its line, and whether
    it sits at the module's top level unguarded (not inside ``try``, ``if`` or a function)."""

    module: str
    level: int
    names: tuple[str, ...]
    line: int
    unguarded: bool


class Binding(Struct, frozen=True):
    """What a name bound by an import means: ``module`` imported whole, or ``name`` taken from ``module``."""

    module: str
    level: int
    name: str | None


class ClassSource(Struct, frozen=True):
    """A class statement as written: its name, line, base expressions and what its body defines."""

    name: str
    line: int
    bases: tuple[str, ...]  # dotted text of each base expression (``Generic[T]`` -> ``Generic``)
    members: frozenset[str]  # every name bound in the body: methods, properties, attributes
    fields: tuple[str, ...]  # annotated names that are not ClassVar, in order
    init: tuple[str, ...] | None  # ``__init__``'s named parameters (self left out), None without one
    init_takes_any: bool  # ``__init__`` has ``**kwargs``
    nested: dict[str, ClassSource] = field(default_factory=dict)


class ModuleSource(Struct, frozen=True):
    """A parsed module file: its classes, imports, the names its imports bind, and a syntax error if any."""

    file: str
    classes: dict[str, ClassSource]
    imports: tuple[Import, ...]
    bindings: dict[str, Binding]
    other_names: frozenset[str]  # names bound at top level otherwise (assignments, functions)
    syntax_error: tuple[int, str] | None = None


class Base(Struct, frozen=True):
    """A base class that cannot be seen into: from ``airbyte_cdk`` (``airbyte``) or another installed module."""

    name: str  # dotted, as far as it is known (``airbyte_cdk.sources...RecordExtractor``)
    airbyte: bool


class ClassFacts(Struct, frozen=True):
    """What a class and the bases we can read define.

    ``members``: names defined by the class and its local bases. ``fields``: the keyword arguments it
    declares (annotations of it and its local bases, ``__init__`` parameters). ``opaque``: bases whose
    source cannot be read (they may define anything). ``accepts_any``: an ``__init__`` with ``**kwargs``.
    """

    name: str
    file: str
    line: int
    members: frozenset[str]
    fields: frozenset[str]
    opaque: tuple[Base, ...]
    accepts_any: bool
    modules: tuple[str, ...]  # the local files the class and its bases come from

    @property
    def fields_known(self) -> bool:
        """Whether :attr:`fields` is all the class takes (no base hides more, no ``**kwargs``)."""
        return not self.opaque and not self.accepts_any

    def missing(self, methods: tuple[str, ...]) -> tuple[str, ...]:
        """Which of ``methods`` the class lacks; none when an unseen base may give them."""
        if self.opaque:
            return ()
        return tuple(name for name in methods if name not in self.members)


class MissingImport(Struct, frozen=True):
    """A package imported at a module's top level that is not installed, or a local module file that is missing."""

    package: str  # top-level name (``airbyte_cdk``), or the dotted local module
    file: str  # the module that imports it
    line: int
    local: bool  # a module of the connector's own package (its file is missing), not an installed package
    looked_for: str | None = None


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Subscript):
        return _dotted(node.value)
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return f"{inner}.{node.attr}" if inner else None
    return None


def _is_classvar(annotation: ast.expr) -> bool:
    text = _dotted(annotation) or ""
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        text = annotation.value.split("[", 1)[0].strip()
    return text.rsplit(".", 1)[-1] == "ClassVar"


def _class_source(node: ast.ClassDef) -> ClassSource:
    members: set[str] = set()
    fields: list[str] = []
    nested: dict[str, ClassSource] = {}
    init: tuple[str, ...] | None = None
    init_any = False
    for statement in node.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            members.add(statement.name)
            if statement.name == "__init__":
                args = statement.args
                named = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
                init = tuple(named[1:])  # without self
                init_any = args.kwarg is not None
        elif isinstance(statement, ast.ClassDef):
            members.add(statement.name)
            nested[statement.name] = _class_source(statement)
        elif isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
            members.add(statement.target.id)
            if not _is_classvar(statement.annotation):
                fields.append(statement.target.id)
        elif isinstance(statement, ast.Assign):
            members.update(t.id for t in statement.targets if isinstance(t, ast.Name))
    bases = tuple(text for text in (_dotted(b) for b in node.bases) if text)
    return ClassSource(node.name, node.lineno, bases, frozenset(members), tuple(fields), init, init_any, nested)


def _walk_top(body: list[ast.stmt], unguarded: bool) -> Iterator[tuple[ast.stmt, bool]]:
    """Top-level statements, those inside top-level ``if``/``try`` blocks too (marked guarded)."""
    for statement in body:
        yield statement, unguarded
        if isinstance(statement, ast.If):
            guarded_body = statement.body + statement.orelse
            yield from _walk_top(guarded_body, False)
        elif isinstance(statement, ast.Try):
            blocks = statement.body + statement.orelse + statement.finalbody
            for handler in statement.handlers:
                blocks = blocks + handler.body
            yield from _walk_top(blocks, False)


@lru_cache(maxsize=256)
def _parse(file: str, size: int, mtime: float) -> ModuleSource:
    try:
        with open(file, "rb") as handle:
            tree = ast.parse(handle.read(), filename=file)
    except SyntaxError as exc:
        return ModuleSource(file, {}, (), {}, frozenset(), (exc.lineno or 0, exc.msg))
    except (OSError, ValueError) as exc:
        return ModuleSource(file, {}, (), {}, frozenset(), (0, str(exc)))
    classes: dict[str, ClassSource] = {}
    imports: list[Import] = []
    bindings: dict[str, Binding] = {}
    other: set[str] = set()
    for statement, unguarded in _walk_top(tree.body, True):
        if isinstance(statement, ast.ClassDef):
            classes[statement.name] = _class_source(statement)
        elif isinstance(statement, ast.Import):
            for alias in statement.names:
                imports.append(Import(alias.name, 0, (), statement.lineno, unguarded))
                if alias.asname:
                    bindings[alias.asname] = Binding(alias.name, 0, None)
                else:
                    top = alias.name.split(".", 1)[0]
                    bindings[top] = Binding(top, 0, None)
        elif isinstance(statement, ast.ImportFrom):
            module = statement.module or ""
            names = tuple(alias.name for alias in statement.names)
            imports.append(Import(module, statement.level, names, statement.lineno, unguarded))
            for alias in statement.names:
                if alias.name != "*":
                    bindings[alias.asname or alias.name] = Binding(module, statement.level, alias.name)
        elif isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            other.add(statement.name)
        elif isinstance(statement, (ast.Assign, ast.AnnAssign)):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            other.update(t.id for t in targets if isinstance(t, ast.Name))
    return ModuleSource(file, classes, tuple(imports), bindings, frozenset(other))


def read_module(file: str) -> ModuleSource:
    """The parsed module at ``file`` (re-read only when the file changes)."""
    try:
        info = os.stat(file)
    except OSError as exc:
        return ModuleSource(file, {}, (), {}, frozenset(), (0, str(exc)))
    return _parse(os.path.abspath(file), info.st_size, info.st_mtime)


def module_file(root: str, dotted: str) -> str | None:
    """The source file of module ``dotted`` under ``root`` (``a/b.py`` or ``a/b/__init__.py``)."""
    if not dotted:
        return None
    base = os.path.join(root, *dotted.split("."))
    for candidate in (base + ".py", os.path.join(base, "__init__.py")):
        if os.path.isfile(candidate):
            return candidate
    return None


def _is_local(root: str, dotted: str) -> bool:
    """Whether the top package of ``dotted`` is a file or folder under ``root``."""
    top = dotted.split(".", 1)[0]
    return bool(top) and (os.path.isfile(os.path.join(root, top + ".py")) or os.path.isdir(os.path.join(root, top)))


def _absolute(module: str, level: int, importer: str, importer_file: str) -> str | None:
    """The absolute dotted name of a (maybe relative) import in module ``importer``; None when it climbs too far."""
    if level == 0:
        return module
    package = importer if os.path.basename(importer_file) == "__init__.py" else importer.rpartition(".")[0]
    parts = package.split(".") if package else []
    if level - 1 > len(parts) or not parts:
        return None
    base = parts[: len(parts) - (level - 1)]
    return ".".join(base + ([module] if module else []))


@lru_cache(maxsize=1024)
def is_installed(top: str) -> bool:
    """Whether a top-level module can be imported here (``find_spec`` of a top-level name imports nothing)."""
    if top in _STDLIB or top in sys.modules:
        return True
    try:
        return importlib.util.find_spec(top) is not None
    except (ImportError, ValueError):
        return False


class _Gather(Struct):
    root: str
    members: set[str] = field(default_factory=set)
    fields: list[str] = field(default_factory=list)
    opaque: list[Base] = field(default_factory=list)
    accepts_any: bool = False
    init_seen: bool = False
    files: list[str] = field(default_factory=list)

    def add(self, source: ClassSource, module: str, parsed: ModuleSource, depth: int) -> None:
        if parsed.file not in self.files:
            self.files.append(parsed.file)
        self.members |= source.members
        for name in source.fields:
            if name not in self.fields:
                self.fields.append(name)
        if source.init is not None and not self.init_seen:  # the nearest __init__ decides
            self.init_seen = True
            self.fields.extend(n for n in source.init if n not in self.fields)
            self.accepts_any = self.accepts_any or source.init_takes_any
        if depth > _MAX_DEPTH:
            return
        for base in source.bases:
            self.base(base, module, parsed, depth + 1)

    def base(self, text: str, module: str, parsed: ModuleSource, depth: int) -> None:
        head, _, rest = text.partition(".")
        if not rest and head in parsed.classes:
            self.add(parsed.classes[head], module, parsed, depth)
            return
        binding = parsed.bindings.get(head)
        if binding is None:
            if head not in _BUILTIN_BASES and head not in ("ABC", "Generic", "Protocol"):
                self.opaque.append(Base(text, airbyte=False))
            return
        target = _absolute(binding.module, binding.level, module, parsed.file)
        if target is None:
            self.opaque.append(Base(text, airbyte=False))
            return
        if binding.name is not None:
            target = f"{target}.{binding.name}" if target else binding.name
        full = f"{target}.{rest}" if rest else target
        self.named(full, depth)

    def named(self, full: str, depth: int) -> None:
        """A base given by its absolute dotted name ``module.Class``."""
        top = full.split(".", 1)[0]
        if top == AIRBYTE_CDK:
            self.opaque.append(Base(full, airbyte=True))
            return
        if top in _STDLIB or top == "builtins":
            return  # abc.ABC, typing.Generic, dataclasses...: nothing a kind needs
        if not _is_local(self.root, full):
            self.opaque.append(Base(full, airbyte=False))
            return
        found = _locate(self.root, full, depth)
        if found is None:
            self.opaque.append(Base(full, airbyte=False))
            return
        source, module, parsed = found
        self.add(source, module, parsed, depth)


def _locate(root: str, full: str, depth: int = 0) -> tuple[ClassSource, str, ModuleSource] | None:
    """The class named by absolute ``module.Class`` under ``root``, following re-exports."""
    parts = full.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        module = ".".join(parts[:cut])
        file = module_file(root, module)
        if file is not None:
            return _class_in(read_module(file), module, root, parts[cut:], depth)
    return None


def _class_in(parsed: ModuleSource, module: str, root: str, path: list[str],
              depth: int) -> tuple[ClassSource, str, ModuleSource] | None:
    head = path[0]
    source = parsed.classes.get(head)
    if source is not None:
        for name in path[1:]:
            source = source.nested.get(name)
            if source is None:
                return None
        return source, module, parsed
    binding = parsed.bindings.get(head)
    if binding is None or depth > _MAX_DEPTH:
        return None
    target = _absolute(binding.module, binding.level, module, parsed.file)
    if target is None or not _is_local(root, target or binding.name or ""):
        return None
    if binding.name is not None:
        submodule = f"{target}.{binding.name}" if target else binding.name
        if len(path) > 1 and module_file(root, submodule):  # ``from . import mod`` then ``mod.Class``
            return _locate(root, ".".join([submodule, *path[1:]]), depth + 1)
        return _locate(root, ".".join([target, binding.name, *path[1:]]) if target else
                       ".".join([binding.name, *path[1:]]), depth + 1)
    return _locate(root, ".".join([target, *path[1:]]), depth + 1)


def find_class(file: str, module: str, class_path: str, root: str | None) -> ClassFacts | str | None:
    """What the class ``class_path`` of ``module`` (source in ``file``) defines.

    Returns None when the module defines no such class, a name it binds otherwise (an import from an
    installed package, an assignment) as that name's text: the class may exist, but cannot be seen.
    """
    parsed = read_module(file)
    names = class_path.split(".")
    base_root = root or os.path.dirname(file)
    found = _class_in(parsed, module, base_root, names, 0)
    if found is None:
        head = names[0]
        if head in parsed.bindings or head in parsed.other_names:
            return head
        return None
    source, owner, owner_parsed = found
    gather = _Gather(base_root)
    gather.add(source, owner, owner_parsed, 0)
    return ClassFacts(source.name, owner_parsed.file, source.line, frozenset(gather.members),
                      frozenset(gather.fields), tuple(gather.opaque), gather.accepts_any, tuple(gather.files))


def class_names(file: str) -> list[str]:
    """The classes a module defines at top level (for did-you-mean)."""
    return list(read_module(file).classes)


def missing_imports(files: tuple[str, ...] | list[str], modules: dict[str, str], root: str) -> list[MissingImport]:
    """Packages imported unguarded at the top of these local modules (and of the local modules they import,
    transitively, in the order Python runs them) that are not installed, and local modules whose file is missing.

    ``modules`` maps each file to its dotted module name (for relative imports).
    """
    found: list[MissingImport] = []
    seen: set[str] = set()
    reported: set[str] = set()

    def visit_chain(dotted: str) -> None:
        # importing ``a.b.c`` runs the packages ``a`` and ``a.b`` first, then the module
        parts = dotted.split(".")
        for cut in range(1, len(parts) + 1):
            step = module_file(root, ".".join(parts[:cut]))
            if step is not None:
                visit(step, ".".join(parts[:cut]))

    def visit(file: str, module: str) -> None:
        if file in seen:
            return
        seen.add(file)
        for item in read_module(file).imports:
            if item.unguarded:
                check(item, file, module)

    def check(item: Import, file: str, module: str) -> None:
        target = _absolute(item.module, item.level, module, file)
        if target is None:
            found.append(MissingImport("." * item.level + item.module, file, item.line, True,
                                       "a relative import outside a package"))
            return
        candidates = [target]
        if item.level and not item.module:  # from . import a, b: submodules or names of the package
            candidates = [f"{target}.{name}" for name in item.names if module_file(root, f"{target}.{name}")]
            candidates = candidates or [target]
        elif item.names:
            candidates += [f"{target}.{name}" for name in item.names if module_file(root, f"{target}.{name}")]
        for dotted in candidates:
            if item.level or _is_local(root, dotted):
                if module_file(root, dotted) is None:
                    if dotted not in reported:
                        reported.add(dotted)
                        looked = os.path.join(root, *dotted.split("."))
                        found.append(MissingImport(dotted, file, item.line, True, looked + ".py"))
                    continue
                visit_chain(dotted)
                continue
            top = dotted.split(".", 1)[0]
            if top not in reported and not is_installed(top):
                reported.add(top)
                found.append(MissingImport(top, file, item.line, False))

    for file in files:
        module = modules.get(file, "")
        parts = module.split(".") if module else []
        for cut in range(1, len(parts)):
            parent = module_file(root, ".".join(parts[:cut]))
            if parent is not None:
                visit(parent, ".".join(parts[:cut]))
        visit(file, module)
    return found
