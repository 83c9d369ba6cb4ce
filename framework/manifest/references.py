"""Resolving references: ``$ref`` keys, ``"#/..."`` strings and the older ``"*ref(a.b)"`` form.

A mapping with ``$ref`` takes every key of the mapping it points at; its own
keys override those (a shallow merge, as in Airbyte). A string that is a whole
reference is replaced by the value it points at. References are followed
recursively; a cycle or a reference to nowhere becomes a diagnostic.

Resolution also returns an :class:`Origin` tree that mirrors the result and
names, for every value, the path it came from in the file, so that errors in a
referenced definition point at the line of the definition.

Each definition a reference points at is resolved once; every reference to it
shares that resolved value (and its origins) instead of a copy, so the result
is a DAG whose size is the file's, however often a definition is reused. Two
bounds keep a hostile file ("billion laughs" written with references) harmless:
the values resolved (nodes of the DAG, ``MAX_NODES``) and the values the
expanded tree would hold (``MAX_EXPANDED``, counted on the DAG without expanding
it), since the checks after this walk components as a tree.
"""

from __future__ import annotations

import difflib
import re
from typing import Any

from msgspec import Struct, field

from framework.diagnostics import Diagnostic, json_path
from framework.manifest.yaml_source import MAX_NODES, SourceDocument

REF_KEY = "$ref"
#: The values a manifest may hold once its references are expanded. A large real manifest
#: (google-ads: 30 streams, each repeating its parents' definitions) expands to about
#: 8 million; a reference bomb to far more, and is refused before anything walks it.
MAX_EXPANDED = 50_000_000
_OLD_REF = re.compile(r"^\*ref\((?P<path>[^)]*)\)$")


class Origin(Struct):
    """Where a resolved value came from: a source path, and the origins of its children."""

    src: tuple
    children: dict[Any, Origin] | list[Origin] | None = None  # None for scalars

    def child(self, key: Any) -> Origin:
        if isinstance(self.children, dict):
            return self.children.get(key, self)
        if isinstance(self.children, list) and isinstance(key, int) and 0 <= key < len(self.children):
            return self.children[key]
        return self


def ref_target(value: Any) -> str | None:
    """The reference a string stands for (``#/a/b`` or ``*ref(a.b)``), else None."""
    if isinstance(value, str):
        if value.startswith("#/"):
            return value
        if _OLD_REF.match(value):
            return value
    return None


def _pointer(ref: str) -> list[str]:
    match = _OLD_REF.match(ref)
    if match:
        return [part for part in match.group("path").split(".") if part]
    return [part.replace("~1", "/").replace("~0", "~") for part in ref[2:].split("/") if part != ""]


class _TooLarge(Exception):
    """The references resolve to too many values, or expand to too many (at ``src``)."""

    def __init__(self, message: str, src: tuple):
        super().__init__(message)
        self.src = src


class _Resolver(Struct):
    doc: SourceDocument
    problems: list = field(default_factory=list)
    budget: int = MAX_NODES
    max_expanded: int = MAX_EXPANDED
    # each mapping and list of the file, resolved (and its origins), by its path in the file
    done: dict[tuple, tuple[Any, Origin]] = field(default_factory=dict)
    # the expanded size of every resolved mapping and list, by id (each kept alive by `done` or the result)
    sizes: dict[int, int] = field(default_factory=dict)

    def size(self, value: Any) -> int:
        return self.sizes.get(id(value), 1) if isinstance(value, (dict, list)) else 1

    def counted(self, value: Any, total: int, src: tuple) -> None:
        if total > self.max_expanded:
            raise _TooLarge(f"references expand to more than {self.max_expanded:,} values here "
                            f"(definitions reused inside reused definitions)", src)
        self.sizes[id(value)] = total

    def lookup(self, ref: str, at: tuple) -> tuple[Any, tuple] | None:
        node: Any = self.doc.data
        path: tuple = ()
        for part in _pointer(ref):
            if isinstance(node, dict) and part in node:
                node, path = node[part], path + (part,)
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node, path = node[int(part)], path + (int(part),)
            else:
                choices = [str(k) for k in node] if isinstance(node, dict) else []
                close = difflib.get_close_matches(part, choices, n=1)
                shown = json_path(path) or "the root"
                fix = (f"did you mean `{_ref_text(ref, path + (close[0],))}`?" if close
                       else f"{shown} has: {', '.join(sorted(choices)[:12])}" if choices
                       else "point the reference at an existing key")
                self.report(at, "unknown-ref", f"reference `{ref}` points to nowhere: {shown} has no `{part}`", fix)
                return None
        return node, path

    def report(self, at: tuple, code: str, message: str, fix: str | None) -> None:
        line, col = self.doc.where(at)
        self.problems.append(Diagnostic(self.doc.file, line, col, "error", code, message, json_path(at), fix))

    def resolve(self, value: Any, src: tuple, chain: tuple) -> tuple[Any, Origin]:
        """``value`` is the file's node at ``src``: a mapping or list there is resolved once, then shared."""
        self.budget -= 1
        if self.budget < 0:
            raise _TooLarge(f"references resolve to more than {MAX_NODES:,} values", src)
        if isinstance(value, (dict, list)):
            if src not in self.done:
                self.done[src] = self.resolve_container(value, src, chain)
            return self.done[src]
        if ref_target(value) is not None:
            return self.follow(value, src, chain)
        return value, Origin(src)

    def resolve_container(self, value: dict | list, src: tuple, chain: tuple) -> tuple[Any, Origin]:
        if isinstance(value, dict):
            base: Any = {}
            base_origin = Origin(src, {})
            if REF_KEY in value:
                ref = value[REF_KEY]
                at = src + (REF_KEY,)
                if not isinstance(ref, str) or ref_target(ref) is None:
                    self.report(at, "bad-ref", f"`$ref` must be a string like `#/definitions/name`, not {ref!r}",
                                "write the reference as `#/definitions/<name>`")
                else:
                    base, base_origin = self.follow(ref, at, chain)
                if not isinstance(base, dict):
                    if len(value) > 1:
                        self.report(at, "bad-ref", "a `$ref` to a value that is not a mapping cannot have other keys",
                                    "remove the other keys or point at a mapping")
                    return base, base_origin
            result = dict(base)
            children = dict(base_origin.children or {}) if isinstance(base_origin.children, dict) else {}
            for key, item in value.items():
                if key == REF_KEY:
                    continue
                result[key], children[key] = self.resolve(item, src + (key,), chain)
            self.counted(result, 1 + sum(self.size(item) for item in result.values()), src)
            return result, Origin(src, children)
        items, origins = [], []
        for index, item in enumerate(value):
            resolved, origin = self.resolve(item, src + (index,), chain)
            items.append(resolved)
            origins.append(origin)
        self.counted(items, 1 + sum(self.size(item) for item in items), src)
        return items, Origin(src, origins)

    def follow(self, ref: str, at: tuple, chain: tuple) -> tuple[Any, Origin]:
        found = self.lookup(ref, at)
        if found is None:
            return {}, Origin(at, {})
        target, target_path = found
        if target_path in chain:
            loop = " -> ".join(json_path(p) for p in chain + (target_path,))
            self.report(at, "ref-cycle", f"reference cycle: {loop}",
                        "break the cycle: a definition cannot contain itself")
            return {}, Origin(at, {})
        return self.resolve(target, target_path, chain + (target_path,))


def _ref_text(ref: str, path: tuple) -> str:
    if ref.startswith("#/"):
        return "#/" + "/".join(str(p) for p in path)
    return "*ref(" + ".".join(str(p) for p in path) + ")"


def resolve_references(doc: SourceDocument) -> tuple[Any, Origin, list[Diagnostic]]:
    """Resolve every reference in ``doc``: the resolved data, its origins, and the problems found."""
    resolver = _Resolver(doc)
    try:
        data, origin = resolver.resolve(doc.data, (), ())
    except _TooLarge as exc:
        resolver.report(exc.src, "ref-too-large", str(exc),
                        "reuse fewer definitions inside definitions that are reused themselves")
        return None, Origin(()), resolver.problems
    except RecursionError:
        resolver.report((), "ref-too-large", "references nest too deeply", "nest fewer references")
        return None, Origin(()), resolver.problems
    return data, origin, resolver.problems
