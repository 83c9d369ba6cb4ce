"""Static checks over a parsed Jinja template (its ``jinja2.nodes`` tree).

Shared by the engine, which refuses unsafe templates before compiling them, and
by :mod:`framework.interpolation.analysis`, which reports them to validators.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection, Iterator

from jinja2 import nodes
from msgspec import Struct

__all__ = [
    "Finding",
    "did_you_mean",
    "forbidden_constructs",
    "has_markup",
    "private_names",
    "single_expression",
    "unknown_filters_and_tests",
]

_MARKUP = ("{{", "{%", "{#")

_FORBIDDEN_TAGS: dict[type[nodes.Node], tuple[str, str]] = {
    nodes.Extends: ("{% extends %}", "extends"),
    nodes.Include: ("{% include %}", "include"),
    nodes.Import: ("{% import %}", "import"),
    nodes.FromImport: ("{% from ... import %}", "from"),
}


class Finding(Struct, frozen=True):
    """Something found in the tree: what (``name``), why (``reason``), on which
    line, and a word (``needle``) to look for on that line to place it."""

    name: str
    reason: str
    lineno: int
    needle: str


def has_markup(source: str) -> bool:
    """Whether ``source`` contains any Jinja markup; text without it is taken literally."""
    return any(marker in source for marker in _MARKUP)


def did_you_mean(name: str, candidates: Collection[str]) -> str | None:
    """The closest candidate to ``name``, if one is reasonably close."""
    matches = difflib.get_close_matches(name, list(candidates), n=1, cutoff=0.6)
    return matches[0] if matches else None


def _private_accesses(tree: nodes.Node) -> Iterator[tuple[str, int]]:
    for node in tree.find_all((nodes.Getattr, nodes.Getitem, nodes.Filter)):
        name: object = None
        if isinstance(node, nodes.Getattr):
            name = node.attr
        elif isinstance(node, nodes.Getitem) and isinstance(node.arg, nodes.Const):
            name = node.arg.value
        elif isinstance(node, nodes.Filter) and node.name == "attr" and node.args:
            first = node.args[0]
            name = first.value if isinstance(first, nodes.Const) else None
        if isinstance(name, str) and name.startswith("_"):
            yield name, node.lineno


def private_names(tree: nodes.Node) -> tuple[tuple[str, int], ...]:
    """Every ``_``-prefixed attribute or item name the template reaches for, with its line."""
    return tuple(sorted(set(_private_accesses(tree)), key=lambda item: (item[1], item[0])))


def forbidden_constructs(tree: nodes.Node) -> list[Finding]:
    """Constructs a manifest template may never use.

    ``self`` (the template's own reference object), template inheritance and
    inclusion tags, and any dunder attribute or key (``x.__class__``,
    ``x['__class__']``) - the classic first step of a sandbox escape. Single-underscore names are not listed: on a
    mapping they are ordinary keys (``record._id``), and the sandbox refuses them
    on real objects at render time.
    """
    found: list[Finding] = []
    for name_node in tree.find_all(nodes.Name):
        if name_node.name == "self" and name_node.ctx == "load":
            found.append(Finding("self", "the template's `self` reference", name_node.lineno, "self"))
    for tag, (label, keyword) in _FORBIDDEN_TAGS.items():
        for node in tree.find_all(tag):
            found.append(Finding(label, f"the `{label}` tag", node.lineno, keyword))
    for name, lineno in _private_accesses(tree):
        if name.startswith("__"):
            found.append(Finding(name, f"the Python internal `{name}`", lineno, name))
    found.sort(key=lambda finding: finding.lineno)
    return found


def unknown_filters_and_tests(
    tree: nodes.Node, filters: Collection[str], tests: Collection[str]
) -> list[tuple[str, str, int]]:
    """``(kind, name, lineno)`` for each filter or test the environment does not have."""
    found = []
    for node in tree.find_all((nodes.Filter, nodes.Test)):
        kind, known = ("filter", filters) if isinstance(node, nodes.Filter) else ("test", tests)
        if node.name not in known:
            found.append((kind, node.name, node.lineno))
    return found


def single_expression(tree: nodes.Template) -> nodes.Expr | None:
    """The expression when the template is exactly one ``{{ expr }}`` and nothing else."""
    if len(tree.body) != 1 or not isinstance(tree.body[0], nodes.Output):
        return None
    parts = tree.body[0].nodes
    if len(parts) != 1 or isinstance(parts[0], nodes.TemplateData):
        return None
    return parts[0]


def first_line_of_name(tree: nodes.Node, name: str) -> int:
    """Line of the first read of the top-level ``name``, or 1."""
    lines = [n.lineno for n in tree.find_all(nodes.Name) if n.name == name and n.ctx == "load"]
    return min(lines) if lines else 1
