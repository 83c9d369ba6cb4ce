"""Where a stream's schema lives, and its edits: a JSON schema file, or an inline schema in the manifest.

What ``run-manifest --infer-schema --write-schemas`` and the builder (:mod:`framework.builder`) share:
:func:`schema_target` finds where a stream's schema loader reads its schema, :func:`schema_diff` shows a
change as a unified diff of the JSON, :func:`write_schema_file` writes a file (the old one kept as
``<file>.bak``), and :func:`edit_inline` replaces inline schemas in manifest text with ruamel.yaml's round
trip, so the text's comments, key order and indentation stay (why ruamel.yaml: it is the maintained YAML
library that round-trips comments).
"""

from __future__ import annotations

import difflib
import json
import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from framework.components.records.schemas import PERMISSIVE_SCHEMA, default_schema_path, schema_file_path
from framework.engine.connector import Connector
from framework.engine.schema_inference import infer_schema, merge_schema
from framework.models import InlineSchemaLoader, JsonFileSchemaLoader


@dataclass(frozen=True)
class SchemaTarget:
    """Where a stream's schema is written: a JSON file, or an inline schema at a manifest place."""

    kind: str  # "file", "inline" or "none"
    file: str = ""
    line: int = 0  # of the inline schema in the manifest (1-based)
    column: int = 0
    note: str = ""


def schema_target(connector: Connector, manifest_path: str, name: str) -> SchemaTarget:
    """Where stream ``name``'s schema loader reads its schema."""
    models = list(connector.source.streams or ())
    for index, model in enumerate(models):
        if getattr(model, "name", None) != name:
            continue
        loader = getattr(model, "schema_loader", None)
        if loader is None:
            return SchemaTarget("file", default_schema_path(connector.context, name))
        if isinstance(loader, JsonFileSchemaLoader):
            return SchemaTarget("file", schema_file_path(loader, connector.context) or
                                default_schema_path(connector.context, name))
        if isinstance(loader, InlineSchemaLoader):
            where = _place(connector, ("streams", index, "schema_loader", "schema"))
            shared = [str(getattr(other, "name", "")) for i, other in enumerate(models) if i != index
                      and isinstance(getattr(other, "schema_loader", None), InlineSchemaLoader)
                      and _place(connector, ("streams", i, "schema_loader", "schema")) == where]
            if where is None or shared:
                return SchemaTarget("none", note=f"its inline schema is shared with {', '.join(shared)}; give "
                                    "each stream its own schema to write it" if shared else
                                    "the place of its inline schema is not known")
            return SchemaTarget("inline", manifest_path, where[0], where[1])
        return SchemaTarget("none", note=f"its schema loader ({type(loader).__name__}) is not a file or an "
                            "inline schema")
    return SchemaTarget("none", note="it is not one of the manifest's `streams` (a dynamic stream?)")


def _place(connector: Connector, path: tuple) -> tuple[int, int] | None:
    located = connector.context.place(path)
    if not located:
        return None
    _, line, column = located.rsplit(":", 2)
    return int(line), int(column)


def schema_change(connector: Connector, name: str, records: Sequence[Mapping[str, Any]],
                  ) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """(the declared schema, it merged with the one inferred from ``records``, the fields added) of stream
    ``name``; a stream without a schema of its own (the permissive default) declares ``{}``."""
    declared = dict(connector.stream(name).json_schema)
    if declared == dict(PERMISSIVE_SCHEMA):
        declared = {}
    merged, added = merge_schema(declared, infer_schema(records))
    return declared, merged, added


def schema_diff(before: Mapping[str, Any], after: Mapping[str, Any], label: str) -> str:
    old = json.dumps(before, indent=2, ensure_ascii=False).splitlines(keepends=True)
    new = json.dumps(after, indent=2, ensure_ascii=False).splitlines(keepends=True)
    return "".join(difflib.unified_diff(old, new, f"{label} (declared)", f"{label} (inferred)", n=2))


def write_schema_file(path: str, schema: Mapping[str, Any]) -> None:
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    if os.path.exists(path):
        shutil.copy2(path, path + ".bak")
    temporary = f"{path}.tmp-{os.getpid()}"
    with open(temporary, "w", encoding="utf-8") as handle:
        json.dump(schema, handle, indent=2, ensure_ascii=False)
        handle.write("\n")
    os.replace(temporary, path)


def _apply(node: Any, new: Mapping[str, Any]) -> None:
    """Make the round-trip mapping ``node`` equal ``new``, keeping the nodes (their comments and style) that
    already are; a new mapping takes the flow style of its siblings."""
    from ruamel.yaml.comments import CommentedMap

    for key in [key for key in node if key not in new]:
        del node[key]
    flow = any(isinstance(value, CommentedMap) and value.fa.flow_style() for value in node.values())
    for key, value in new.items():
        if key in node and node[key] == value:
            continue
        if isinstance(node.get(key), CommentedMap) and isinstance(value, Mapping):
            _apply(node[key], value)
        elif isinstance(value, Mapping):
            fresh = CommentedMap()
            _apply(fresh, value)
            if flow:
                fresh.fa.set_flow_style()
            node[key] = fresh
        else:
            node[key] = value


def edit_inline(text: str, edits: Sequence[tuple[SchemaTarget, Mapping[str, Any]]], file: str = "<manifest>") -> str:
    """``text`` with each inline schema at a target's place replaced by its schema (round trip: see the module)."""
    import io

    from ruamel.yaml import YAML  # only when an inline schema is written
    from ruamel.yaml.comments import CommentedMap, CommentedSeq
    from ruamel.yaml.util import load_yaml_guess_indent

    _, sequence_indent, dash_offset = load_yaml_guess_indent(text)
    yaml = YAML()  # round trip: comments, order and quoting kept, and the file's own indentation
    yaml.preserve_quotes = True
    yaml.width = 4096
    yaml.indent(mapping=2, sequence=sequence_indent or 2, offset=dash_offset or 0)
    document = yaml.load(text)
    nodes: dict[tuple[int, int], CommentedMap] = {}

    def walk(node: Any) -> None:
        if isinstance(node, CommentedMap):
            for key in node:
                value = node[key]
                if isinstance(value, CommentedMap) and value.lc.line is not None:
                    nodes.setdefault((value.lc.line + 1, value.lc.col + 1), value)
                walk(value)
        elif isinstance(node, CommentedSeq):
            for item in node:
                walk(item)

    walk(document)
    for target, schema in edits:
        node = nodes.get((target.line, target.column))
        if node is None:
            raise LookupError(f"{file}:{target.line}:{target.column}: the inline schema was not found "
                              "there; is the manifest changed since it was read?")
        _apply(node, schema)
    out = io.StringIO()
    yaml.dump(document, out)
    return out.getvalue()


def write_inline(manifest_path: str, edits: Sequence[tuple[SchemaTarget, Mapping[str, Any]]]) -> None:
    """Replace inline schemas in the manifest file (:func:`edit_inline`), the old file kept as ``<file>.bak``."""
    with open(manifest_path, encoding="utf-8") as handle:
        text = edit_inline(handle.read(), edits, manifest_path)
    shutil.copy2(manifest_path, manifest_path + ".bak")
    temporary = f"{manifest_path}.tmp-{os.getpid()}"
    with open(temporary, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(temporary, manifest_path)


__all__ = ["SchemaTarget", "edit_inline", "schema_change", "schema_diff", "schema_target", "write_inline",
           "write_schema_file"]
