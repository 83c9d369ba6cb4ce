"""Reading a YAML file into plain values while remembering where each value was.

The result is a :class:`SourceDocument`: the data (dicts, lists, scalars, as
JSON would have them) and, for every JSON path, the 1-based line and column of
its key and of its value. Everything that can go wrong with the file itself
(too big, binary, empty, broken YAML, tabs, duplicate keys) becomes a
:class:`~framework.diagnostics.Diagnostic` rather than an exception.
"""

from __future__ import annotations

import os
import re
from typing import Any

import yaml
from msgspec import Struct, field

from framework.diagnostics import Diagnostic

MAX_BYTES = 10 * 1024 * 1024  # far above any real manifest; stops a wrong file early
MAX_NODES = 2_000_000  # bounds alias expansion ("billion laughs")
MAX_DEPTH = 200  # nesting levels; real manifests use about 20

Path = tuple  # a JSON path: keys (str) and list indexes (int)

try:  # libyaml's parser is ~10x faster and gives the same marks
    _Loader: Any = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - wheels ship libyaml
    _Loader = yaml.SafeLoader


class _TextLoader(_Loader):
    """Safe loading, except that dates stay strings as they are in JSON."""


_TextLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in _Loader.yaml_implicit_resolvers.copy().items()
}


class SourceDocument(Struct):
    """A parsed file: its data and the place of every value in it."""

    file: str
    data: Any = None
    value_at: dict = field(default_factory=dict)  # path -> (line, col) of the value
    key_at: dict = field(default_factory=dict)  # path -> (line, col) of the mapping key
    problems: list = field(default_factory=list)

    def where(self, path: Path, key: bool = False) -> tuple[int, int]:
        """Line and column of ``path``, or of its nearest ancestor that has a place."""
        table = self.key_at if key else self.value_at
        while True:
            if path in table:
                return table[path]
            if key and path in self.value_at:
                return self.value_at[path]
            if not path:
                return (1, 1)
            path = path[:-1]


def read_document(path: str) -> SourceDocument:
    """Read and parse the manifest file at ``path``."""
    doc = SourceDocument(file=path)
    try:
        size = os.path.getsize(path)
    except OSError as exc:
        doc.problems.append(_problem(doc, 0, 0, "file-unreadable", f"cannot read file: {exc.strerror or exc}",
                                     "check the path"))
        return doc
    if size > MAX_BYTES:
        doc.problems.append(_problem(
            doc, 0, 0, "file-too-large",
            f"file is {size / 1048576:.1f} MiB; manifests may be at most {MAX_BYTES // 1048576} MiB",
            "move large JSON schemas into files read with JsonFileSchemaLoader"))
        return doc
    with open(path, "rb") as handle:
        raw = handle.read()
    return parse_text(raw, path)


def parse_text(raw: bytes | str, file: str = "<manifest>") -> SourceDocument:
    """Parse manifest text (bytes are decoded as UTF-8)."""
    doc = SourceDocument(file=file)
    if isinstance(raw, bytes):
        if b"\x00" in raw:
            doc.problems.append(_problem(doc, 0, 0, "binary-file", "file is binary, not YAML text",
                                         "pass a YAML manifest"))
            return doc
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            line = raw[: exc.start].count(b"\n") + 1
            doc.problems.append(_problem(doc, line, 1, "not-utf8",
                                         f"file is not UTF-8 text (invalid byte at offset {exc.start})",
                                         "save the file as UTF-8"))
            return doc
    else:
        text = raw
    if not _has_content(text):
        doc.problems.append(_problem(doc, 0, 0, "empty-file", "file is empty",
                                     "a manifest needs at least `version`, `streams` and `check`"))
        return doc
    tab = _tab_indent(text)
    if tab:
        doc.problems.append(_problem(doc, tab[0], tab[1], "tab-indent",
                                     "tab character used for indentation; YAML indents with spaces only",
                                     "replace the tab with spaces"))
        return doc
    try:
        too_deep = _too_deep(text)
        if too_deep is not None:  # composing it would recurse past the stack (libyaml crashes)
            doc.problems.append(_depth_problem(doc, too_deep))
            return doc
        node = yaml.compose(text, Loader=_TextLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (0, 0)
        message = " ".join(part for part in (exc.context, exc.problem) if part)
        doc.problems.append(_problem(doc, line, col, "yaml-syntax", f"invalid YAML: {message}",
                                     "fix the YAML syntax at this place"))
        return doc
    except yaml.YAMLError as exc:  # pragma: no cover - non-marked errors are rare
        doc.problems.append(_problem(doc, 0, 0, "yaml-syntax", f"invalid YAML: {exc}", None))
        return doc
    if node is None:
        doc.problems.append(_problem(doc, 0, 0, "empty-file", "file is empty",
                                     "a manifest needs at least `version`, `streams` and `check`"))
        return doc
    size, depth, deepest, crossed = _measure(node)
    if depth > MAX_DEPTH:  # through aliases
        doc.problems.append(_depth_problem(doc, deepest))
        return doc
    if size > MAX_NODES:
        line, col = (crossed.line + 1, crossed.column + 1) if crossed is not None else (0, 0)
        doc.problems.append(_problem(doc, line, col, "too-many-nodes",
                                     f"file expands to more than {MAX_NODES} values (YAML aliases?)",
                                     "remove the aliases that expand recursively"))
        return doc
    builder = _Builder(doc)
    try:
        doc.data = builder.build(node, ())
    except _TooBig as too_big:
        line, col = too_big.args
        doc.problems.append(_problem(doc, line, col, "too-many-nodes",
                                     f"file expands to more than {MAX_NODES} values (YAML aliases?)",
                                     "remove the aliases that expand recursively"))
        doc.data = None
    return doc


def _too_deep(text: str) -> Any:
    """Where the text first nests deeper than :data:`MAX_DEPTH` (read as events: no recursion), or None."""
    depth = 0
    try:
        for event in yaml.parse(text, Loader=_TextLoader):
            if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                depth += 1
                if depth > MAX_DEPTH:
                    return event.start_mark
            elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                depth -= 1
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        if mark is None or "nesting depth" not in str(exc.problem):
            raise
        # PyYAML 6.0.4 and later stop at a limit of their own while scanning ahead of the events: our place
        # is in the text before theirs, which their scanner then reads to its end
        try:
            return _too_deep(text[:mark.index]) or mark
        except yaml.MarkedYAMLError:
            return mark
    return None


def _depth_problem(doc: SourceDocument, mark: Any) -> Diagnostic:
    return _problem(doc, mark.line + 1, mark.column + 1, "too-deep",
                    f"values are nested more than {MAX_DEPTH} levels deep here",
                    "flatten the structure (real manifests nest about 20 levels)")


def _measure(root: yaml.Node) -> tuple[int, int, yaml.Mark, yaml.Mark | None]:
    """How many values ``root`` expands to, how deep it nests, where its deepest value starts, and where
    the first (smallest) value expanding past :data:`MAX_NODES` starts (None when none does).

    Aliases make the composed graph share nodes, so each node is measured once
    (by identity) and its expansion counted as often as it is used: linear in
    the file, whatever the aliases expand to, and without recursion.
    """
    known: dict[int, tuple[int, int, yaml.Mark]] = {}
    crossed: yaml.Mark | None = None
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        if id(node) in known:
            continue
        if isinstance(node, yaml.MappingNode):
            children = [item for pair in node.value for item in pair]
        elif isinstance(node, yaml.SequenceNode):
            children = list(node.value)
        else:
            known[id(node)] = (1, 1, node.start_mark)
            continue
        if not children_done:
            stack.append((node, True))
            stack.extend((child, False) for child in children if id(child) not in known)
            continue
        size, depth, deepest = 1, 1, node.start_mark
        for child in children:
            child_size, child_depth, child_deepest = known[id(child)]
            size = min(size + child_size, MAX_NODES + 1)
            if child_depth + 1 > depth:
                depth, deepest = child_depth + 1, child_deepest
        known[id(node)] = (size, depth, deepest)
        if crossed is None and size > MAX_NODES:
            crossed = node.start_mark
    return (*known[id(root)], crossed)


_COMMENT_OR_BLANK = re.compile(r"^\s*(#.*)?$")


def _has_content(text: str) -> bool:
    return any(not _COMMENT_OR_BLANK.match(line) and line.strip() != "---" for line in text.splitlines())


def _tab_indent(text: str) -> tuple[int, int] | None:
    in_block_scalar, block_indent = False, 0
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.lstrip(" ")
        if in_block_scalar:
            # inside `|` / `>` blocks tabs are content; the block ends at a less-indented line
            if line.strip() and len(line) - len(stripped) <= block_indent:
                in_block_scalar = False
            else:
                continue
        if stripped.startswith("\t"):
            return number, len(line) - len(stripped) + 1
        if re.search(r"[:\-]\s*[|>][+-]?\d*\s*(#.*)?$", line):
            in_block_scalar, block_indent = True, len(line) - len(stripped)
    return None


def _problem(doc: SourceDocument, line: int, col: int, code: str, message: str, fix: str | None) -> Diagnostic:
    return Diagnostic(file=doc.file, line=line, column=col, severity="error", code=code, message=message, fix=fix)


class _TooBig(Exception):
    pass


class _Builder:
    def __init__(self, doc: SourceDocument):
        self.doc = doc
        self.count = 0
        self.constructor = _TextLoader("")

    def build(self, node: yaml.Node, path: Path) -> Any:
        self.count += 1
        if self.count > MAX_NODES:  # where it crossed the bound: the alias being expanded
            raise _TooBig(node.start_mark.line + 1, node.start_mark.column + 1)
        self.doc.value_at.setdefault(path, (node.start_mark.line + 1, node.start_mark.column + 1))
        if isinstance(node, yaml.MappingNode):
            self.constructor.flatten_mapping(node)
            result: dict = {}
            for key_node, value_node in node.value:
                key = self.constructor.construct_object(key_node, deep=True)
                if not isinstance(key, (str, int, float, bool)) and key is not None:
                    self.doc.problems.append(_problem(
                        self.doc, key_node.start_mark.line + 1, key_node.start_mark.column + 1, "yaml-key",
                        "mapping keys must be plain values", "use a string key"))
                    continue
                key = key if isinstance(key, str) else str(key).lower() if isinstance(key, bool) else str(key)
                child = path + (key,)
                if key in result:
                    first = self.doc.key_at.get(child, (0, 0))
                    self.doc.problems.append(_problem(
                        self.doc, key_node.start_mark.line + 1, key_node.start_mark.column + 1, "duplicate-key",
                        f"duplicate key `{key}` (first defined at line {first[0]})",
                        "remove one of the two, or merge them"))
                    continue
                self.doc.key_at[child] = (key_node.start_mark.line + 1, key_node.start_mark.column + 1)
                result[key] = self.build(value_node, child)
            return result
        if isinstance(node, yaml.SequenceNode):
            return [self.build(item, path + (index,)) for index, item in enumerate(node.value)]
        return self.constructor.construct_object(node)
