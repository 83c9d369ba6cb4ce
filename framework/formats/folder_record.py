"""What the last rewrite of a stream's folder left: its schema and its files, so the next sync reads only the
footers of files it has not seen.

One small JSON document per stream, ``_airbyte_state/folders/<namespace>/<stream>.json``::

    {"schema": "<the Arrow schema, IPC bytes in base64>", "files": {"<key>": [<size>, <generation or null>]}}

Every file it lists had that schema when it was written. It is a cache: the
step that rewrites files deletes it before it moves any file and writes it
anew once all are moved, so a crash in between leaves no record, and the next
sync reads every footer again. A file listed with another size than the
record's (rewritten since), or not listed, is read; a record that cannot be
read is ignored.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping

import orjson
import pyarrow as pa
from msgspec import Struct

from framework.errors import FrameworkError
from framework.storage import Storage
from framework.storage.layout import safe_name
from framework.storage.state_store import STATE_KEY

FOLDERS_PREFIX = STATE_KEY.rpartition("/")[0] + "/folders/"


def record_key(stream: str, namespace: str | None = "") -> str:
    """Where the record of a stream's folder is kept."""
    return FOLDERS_PREFIX + (f"{safe_name(namespace)}/" if namespace else "") + f"{safe_name(stream)}.json"


class FolderRecord(Struct, frozen=True):
    """The folder's schema and the files known to have it: key -> (size in bytes, generation)."""

    schema: pa.Schema
    files: Mapping[str, tuple[int, int | None]]

    def as_json(self) -> bytes:
        return orjson.dumps({"schema": base64.b64encode(self.schema.serialize().to_pybytes()).decode(),
                             "files": {key: list(value) for key, value in self.files.items()}})


def load_record(storage: Storage, key: str) -> FolderRecord | None:
    """The record at ``key``, or None when there is none or it cannot be read (it is only a cache)."""
    raw = storage.read(key)
    if raw is None:
        return None
    try:
        data = orjson.loads(raw)
        schema = pa.ipc.read_schema(pa.py_buffer(base64.b64decode(data["schema"])))
        files = {str(k): (int(v[0]), None if v[1] is None else int(v[1])) for k, v in data["files"].items()}
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, IndexError, pa.ArrowException):
        return None
    return FolderRecord(schema, files)


def save_record(storage: Storage, key: str, record: FolderRecord) -> None:
    """Write the record; a failure only costs the next sync the footers, so it is not raised."""
    try:
        storage.write_atomic(key, record.as_json(), {"content-type": "application/json"})
    except (OSError, FrameworkError):
        pass


def forget_record(storage: Storage, key: str) -> None:
    """Delete the record (before files of the folder change)."""
    storage.delete([key])


__all__ = ["FOLDERS_PREFIX", "FolderRecord", "forget_record", "load_record", "record_key", "save_record"]
