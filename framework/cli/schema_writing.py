"""``run-manifest --test-read --infer-schema [--write-schemas]``: each stream's schema from its test read.

For each stream the test read saw records of, the schema inferred from them is merged into the
declared one (:mod:`framework.engine.schema_inference`: nothing declared is dropped), and the change is
shown as a unified diff of the JSON. With ``--write-schemas`` it is written where the stream's schema
loader reads it:

* no loader, or a ``JsonFileSchemaLoader``: the JSON file (``schemas/<stream>.json`` by default),
  created with its folder when missing, the old file kept as ``<file>.bak``;
* an ``InlineSchemaLoader``: the schema in the manifest itself, edited with ruamel.yaml's round trip so
  the file's comments and key order stay (why ruamel.yaml: it is the maintained YAML library that
  round-trips comments), the old manifest kept as ``<manifest>.bak``. An inline schema that several
  streams share (a ``$ref`` to one definition) is not written: the streams' records may differ.

Other loaders (a schema read from the API, a custom class) are left as they are, with a note.
"""

from __future__ import annotations

import difflib
import json
import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Any

from framework.components.records.schemas import PERMISSIVE_SCHEMA, default_schema_path, schema_file_path
from framework.engine.connector import Connector
from framework.engine.schema_inference import infer_schema, merge_schema
from framework.engine.test_read import StreamTestRead
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


def _diff(before: Mapping[str, Any], after: Mapping[str, Any], label: str) -> str:
    old = json.dumps(before, indent=2, ensure_ascii=False).splitlines(keepends=True)
    new = json.dumps(after, indent=2, ensure_ascii=False).splitlines(keepends=True)
    return "".join(difflib.unified_diff(old, new, f"{label} (declared)", f"{label} (inferred)", n=2))


def infer_schemas(connector: Connector, manifest_path: str, reads: Sequence[StreamTestRead], out: IO[str], *,
                  write: bool) -> int:
    """Show each stream's inferred schema as a diff, and write it with ``write``; the number of streams changed."""
    changed = 0
    inline_edits: list[tuple[SchemaTarget, dict[str, Any]]] = []
    for seen in reads:
        if not seen.records:
            print(f"{seen.name}: no records read, no schema inferred", file=out)
            continue
        declared = dict(connector.stream(seen.name).json_schema)
        permissive = declared == dict(PERMISSIVE_SCHEMA)
        merged, added = merge_schema({} if permissive else declared, infer_schema(seen.records))
        target = schema_target(connector, manifest_path, seen.name)
        if not added:
            print(f"{seen.name}: the declared schema has every field of the {len(seen.records)} records read",
                  file=out)
            continue
        changed += 1
        where = target.file if target.kind == "file" else \
            f"{target.file}:{target.line}:{target.column}" if target.kind == "inline" else "nowhere"
        print(f"{seen.name}: {len(added)} field(s) inferred from {len(seen.records)} records: {', '.join(added)}",
              file=out)
        out.write(_diff({} if permissive else declared, merged, where))
        if target.kind == "none":
            print(f"  not written: {target.note}", file=out)
        elif not write:
            print(f"  add --write-schemas to write it to {where}", file=out)
        elif target.kind == "file":
            _write_file(target.file, merged)
            print(f"  written to {target.file}", file=out)
        else:
            inline_edits.append((target, merged))
    if inline_edits:
        _write_inline(manifest_path, inline_edits)
        print(f"{len(inline_edits)} inline schema(s) written to {manifest_path} (the old file: "
              f"{manifest_path}.bak)", file=out)
    return changed


def _write_file(path: str, schema: Mapping[str, Any]) -> None:
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


def _write_inline(manifest_path: str, edits: Sequence[tuple[SchemaTarget, dict[str, Any]]]) -> None:
    from ruamel.yaml import YAML  # only when an inline schema is written
    from ruamel.yaml.comments import CommentedMap, CommentedSeq
    from ruamel.yaml.util import load_yaml_guess_indent

    with open(manifest_path, encoding="utf-8") as handle:
        text = handle.read()
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
            raise LookupError(f"{manifest_path}:{target.line}:{target.column}: the inline schema was not found "
                              "there; is the manifest changed since it was read?")
        _apply(node, schema)
    shutil.copy2(manifest_path, manifest_path + ".bak")
    temporary = f"{manifest_path}.tmp-{os.getpid()}"
    with open(temporary, "w", encoding="utf-8") as handle:
        yaml.dump(document, handle)
    os.replace(temporary, manifest_path)


__all__ = ["SchemaTarget", "infer_schemas", "schema_target"]
