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

from collections.abc import Sequence
from typing import IO, Any

from framework.engine.connector import Connector
from framework.engine.schema_edits import (
    SchemaTarget,
    schema_change,
    schema_diff,
    schema_target,
    write_inline,
    write_schema_file,
)
from framework.engine.test_read import StreamTestRead


def infer_schemas(connector: Connector, manifest_path: str, reads: Sequence[StreamTestRead], out: IO[str], *,
                  write: bool) -> int:
    """Show each stream's inferred schema as a diff, and write it with ``write``; the number of streams changed."""
    changed = 0
    inline_edits: list[tuple[SchemaTarget, dict[str, Any]]] = []
    for seen in reads:
        if not seen.records:
            print(f"{seen.name}: no records read, no schema inferred", file=out)
            continue
        declared, merged, added = schema_change(connector, seen.name, seen.records)
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
        out.write(schema_diff(declared, merged, where))
        if target.kind == "none":
            print(f"  not written: {target.note}", file=out)
        elif not write:
            print(f"  add --write-schemas to write it to {where}", file=out)
        elif target.kind == "file":
            write_schema_file(target.file, merged)
            print(f"  written to {target.file}", file=out)
        else:
            inline_edits.append((target, merged))
    if inline_edits:
        write_inline(manifest_path, inline_edits)
        print(f"{len(inline_edits)} inline schema(s) written to {manifest_path} (the old file: "
              f"{manifest_path}.bak)", file=out)
    return changed


__all__ = ["infer_schemas"]
