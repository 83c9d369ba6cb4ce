"""The image of a stream partitioned by key: hash buckets, their files, and which ones an apply rewrites.

The number of buckets is chosen when the image is first written (from the
bytes of that first apply, :func:`choose_buckets`) and recorded in the
pointer; it never changes afterwards, so a key stays in its bucket for good.
A key's bucket is a hash of its ``k`` text (the key values as a JSON array of
texts, :func:`.staging.key_texts`): FNV-1a over the UTF-8 bytes, finished
with MurmurHash3's 64-bit mixer, modulo the count (:func:`bucket_of`, numpy
over whole Arrow arrays, the same in every process and version).

A bucket is a list of Parquet files (:class:`Bucket`), oldest first: a base
written by a rewrite of the bucket and delta files written by later applies,
each holding only the keys those applies changed (a deleted key as a
tombstone row, ``_cdc_deleted`` true). A key's current row is its row in the
newest file that has it (files are named by the version that wrote them:
``image/v<version>/_cdc_bucket=<bucket>/...``); a tombstone means gone.

An apply looks at the buckets its records fall in (:func:`plan`): a bucket
with few changes for its size gets a delta file (its older files are read
only for the changed keys and kept as they are); a bucket whose deltas would
grow past :data:`REWRITE_FRACTION` of its rows or that holds :data:`MAX_LAYERS`
versions' files is rewritten as a new base. Buckets the apply does not touch keep their files:
two versions of the image share them. A full-refresh stream rewrites every
bucket (keys missing from the snapshot are deletes, so every key is looked at).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

import numpy as np
import pyarrow as pa
from msgspec import Struct

from framework.output_names import INTERNAL_SUFFIX

MIN_BUCKETS = 16
MAX_BUCKETS = 1024
BUCKET_BYTES = 8 * 1024 * 1024  # staged bytes (compressed Parquet) per bucket when the image is first written
REWRITE_FRACTION = 0.25  # a bucket is rewritten once its delta rows would pass this share of its rows
MAX_LAYERS = 8  # ... or once it holds this many versions' files (a base and deltas)

_FNV_OFFSET = np.uint64(0xCBF29CE484222325)
_FNV_PRIME = np.uint64(0x100000001B3)
_MIX1 = np.uint64(0xFF51AFD7ED558CCD)
_MIX2 = np.uint64(0xC4CEB9FE1A85EC53)
_IMAGE_FILE = re.compile(r"/v(\d+)/_cdc_bucket=(\d+)/[^/]+$")


def key_hashes(keys: pa.Array) -> np.ndarray:
    """A 64-bit hash of each text of ``keys`` (a string array without nulls): FNV-1a over its UTF-8 bytes, then
    MurmurHash3's ``fmix64``, all in numpy (one pass per byte position, not per row)."""
    keys = keys.cast(pa.large_string())
    rows = len(keys)
    if rows == 0:
        return np.zeros(0, np.uint64)
    if keys.null_count:
        raise ValueError("a key text is null")
    offsets = np.frombuffer(keys.buffers()[1], np.int64)[keys.offset:keys.offset + rows + 1]
    data = np.frombuffer(keys.buffers()[2], np.uint8) if keys.buffers()[2] is not None else np.zeros(1, np.uint8)
    if data.size == 0:
        data = np.zeros(1, np.uint8)
    starts, lengths = offsets[:-1], np.diff(offsets)
    h = np.full(rows, _FNV_OFFSET, np.uint64)
    with np.errstate(over="ignore"):
        for position in range(int(lengths.max())):
            live = lengths > position
            index = np.where(live, starts + position, 0)
            mixed = (h ^ data[index].astype(np.uint64)) * _FNV_PRIME
            h = np.where(live, mixed, h)
        h ^= h >> np.uint64(33)
        h *= _MIX1
        h ^= h >> np.uint64(33)
        h *= _MIX2
        h ^= h >> np.uint64(33)
    return h


def bucket_of(keys: pa.Array, buckets: int) -> pa.Array:
    """The bucket (``0 <= b < buckets``) of each key text, as int32."""
    if buckets < 1:
        raise ValueError("the bucket count must be at least 1")
    return pa.array((key_hashes(keys) % np.uint64(buckets)).astype(np.int32), pa.int32())


def choose_buckets(first_bytes: int) -> int:
    """The bucket count of a new image: a power of two from :data:`MIN_BUCKETS` to :data:`MAX_BUCKETS`, about
    one bucket per :data:`BUCKET_BYTES` of the first apply's staged bytes."""
    wanted = max(1, -(-first_bytes // BUCKET_BYTES))
    count = MIN_BUCKETS
    while count < wanted and count < MAX_BUCKETS:
        count *= 2
    return count


class Bucket(Struct, frozen=True):
    """One bucket of the image: its files (base first, then deltas), its live rows, the rows of its deltas."""

    files: tuple[str, ...] = ()
    rows: int = 0
    delta_rows: int = 0

    @property
    def layers(self) -> int:
        """How many versions wrote the bucket's files (one apply's tasks may write several files of a bucket)."""
        return len({parse_image_file(key) or key for key in self.files})

    def as_json(self) -> dict:
        return {"files": list(self.files), "rows": self.rows, "delta_rows": self.delta_rows}

    @classmethod
    def from_json(cls, data: Mapping) -> Bucket:
        return cls(tuple(str(f) for f in data.get("files") or ()), int(data.get("rows", 0)),
                   int(data.get("delta_rows", 0)))


class BucketPlan(Struct, frozen=True):
    """What an apply does with each bucket it looks at."""

    rewrite: frozenset[int]  # read whole, written as a new base
    delta: frozenset[int]  # read for the changed keys only, a delta file added

    @property
    def touched(self) -> frozenset[int]:
        return self.rewrite | self.delta


def plan(layout: tuple[Bucket, ...], changes: Mapping[int, int], *, incremental: bool) -> BucketPlan:
    """Which buckets an apply rewrites and which get a delta, given the records per bucket (``changes``)."""
    if not incremental:  # a snapshot: every key not in it is a delete, so every bucket is looked at
        return BucketPlan(frozenset(range(len(layout))), frozenset())
    rewrite, delta = set(), set()
    for bucket, count in changes.items():
        if count <= 0:
            continue
        current = layout[bucket]
        grown = current.delta_rows + count
        if not current.files or grown > REWRITE_FRACTION * current.rows or current.layers >= MAX_LAYERS:
            rewrite.add(bucket)
        else:
            delta.add(bucket)
    return BucketPlan(frozenset(rewrite), frozenset(delta))


class BucketOutcome(Struct, frozen=True):
    """What an apply did in one bucket: the files it wrote and the rows (live; written) it counted."""

    files: tuple[str, ...]
    rows: int  # rewrite: the rows kept; delta: inserts minus deletes
    written: int  # rows written into the new files (rows or tombstones)


def next_layout(layout: tuple[Bucket, ...], planned: BucketPlan,
                outcomes: Mapping[int, BucketOutcome]) -> tuple[Bucket, ...]:
    """The layout after an apply: rewritten buckets hold their new base only, delta buckets gain their new
    files, every other bucket keeps its files (shared with the previous version)."""
    out = []
    for index, current in enumerate(layout):
        done = outcomes.get(index, BucketOutcome((), 0, 0))
        if index in planned.rewrite:
            out.append(Bucket(tuple(sorted(done.files)), done.rows, 0))
        elif index in planned.delta and done.files:
            out.append(Bucket(current.files + tuple(sorted(done.files)), current.rows + done.rows,
                              current.delta_rows + done.written))
        else:
            out.append(current)
    return tuple(out)


def image_file(prefix: str, bucket: int, part: int) -> str:
    """The key of the file a Python task writes for ``bucket`` from Spark partition ``part``
    (``prefix`` is the version's image folder); ``.parquet.staged``: no data glob of the output matches it."""
    return f"{prefix}_cdc_bucket={bucket}/part-{part:05d}.parquet{INTERNAL_SUFFIX}"


def parse_image_file(key: str) -> tuple[int, int] | None:
    """``(version, bucket)`` of a bucketed image file's key (or URI); None for an unbucketed (older) file."""
    match = _IMAGE_FILE.search(key)
    return (int(match.group(1)), int(match.group(2))) if match else None


def referenced(layout: Iterable[Bucket]) -> set[str]:
    return {key for bucket in layout for key in bucket.files}


__all__ = ["MAX_BUCKETS", "MAX_LAYERS", "MIN_BUCKETS", "REWRITE_FRACTION", "Bucket", "BucketOutcome", "BucketPlan",
           "bucket_of", "choose_buckets", "image_file", "key_hashes", "next_layout", "parse_image_file", "plan",
           "referenced"]
