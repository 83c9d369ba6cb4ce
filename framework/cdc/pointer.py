"""The commit of a stream's change data: a small JSON document written in one atomic step.

``_airbyte_cdc/<stream>/pointer.json``::

    {"version": 3, "applied_sync": 12, "mut_id": 4711, "image_rows": 1000,
     "image_keys": ["_airbyte_cdc/region/image/v00000001/_cdc_bucket=0/part-00000.parquet.staged", ...],
     "fields": [...], "op_keys": [...], "committed_at": "...", "buckets": 16,
     "layout": [{"files": [...], "rows": 62, "delta_rows": 3}, ...]}

``buckets`` is the image's number of hash buckets (0: an unbucketed image of
an older version, its files in ``image_keys``; the next apply reads it whole
and writes it bucketed) and ``layout`` each bucket's files, live rows and
delta rows (:class:`.buckets.Bucket`); ``image_keys`` lists every file the
image references. ``version`` names the newest files of the image and the
operation files written with it;
``applied_sync`` is the last sync whose staged records are in that image;
``mut_id`` the last ``mutId`` given out. Files of a higher version than the
pointer's are leftovers of a failed apply: the next apply deletes and
rewrites them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import orjson

from framework.cdc.buckets import Bucket
from framework.errors import StateError
from framework.storage import Storage


@dataclass(frozen=True)
class Pointer:
    version: int = 0
    applied_sync: int = 0
    mut_id: int = 0
    image_rows: int = 0
    image_keys: tuple[str, ...] = ()
    fields: tuple[str, ...] = ()
    op_keys: tuple[str, ...] = field(default=(), compare=False)
    committed_at: str = field(default="", compare=False)
    buckets: int = 0
    layout: tuple[Bucket, ...] = ()

    def as_json(self) -> bytes:
        data = asdict(self)
        data["layout"] = [bucket.as_json() for bucket in self.layout]
        return orjson.dumps(data, option=orjson.OPT_INDENT_2)


def load_pointer(storage: Storage, key: str) -> Pointer:
    """The stream's pointer, or the empty one (version 0, nothing applied) when there is none."""
    raw = storage.read(key)
    if raw is None:
        return Pointer()
    try:
        data = orjson.loads(raw)
        pointer = Pointer(int(data["version"]), int(data["applied_sync"]), int(data["mut_id"]),
                       int(data.get("image_rows", 0)), tuple(data.get("image_keys") or ()),
                       tuple(data.get("fields") or ()), tuple(data.get("op_keys") or ()),
                       str(data.get("committed_at", "")), int(data.get("buckets", 0)),
                       tuple(Bucket.from_json(b) for b in data.get("layout") or ()))
        if pointer.buckets != len(pointer.layout):
            raise ValueError(f"{pointer.buckets} buckets but {len(pointer.layout)} in the layout")
        return pointer
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError) as exc:
        raise StateError(f"{storage.uri(key)}: the change-data pointer is damaged ({exc}); restore a good copy, "
                         "or move the stream's `_airbyte_cdc` folder away to start its change data anew") from None


def save_pointer(storage: Storage, key: str, pointer: Pointer) -> None:
    """Write the pointer in one atomic step: this is the commit of an apply."""
    storage.write_atomic(key, pointer.as_json(), {"content-type": "application/json"})


__all__ = ["Pointer", "load_pointer", "save_pointer"]
