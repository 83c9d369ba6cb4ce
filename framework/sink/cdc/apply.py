"""The apply step of realtime mode: staged records + previous image -> operation files + new image, then commit.

Run on the driver once all groups of a stream's sync are back
(:func:`apply_changes`); the work itself runs on the executors:

1. Read the staged files of every sync not applied yet (for a full-refresh
   stream: only the sync that just completed, a whole snapshot) and keep the
   latest record of each key: the highest cursor value, then the latest
   ``_airbyte_extracted_at``, then the last one staged (a window over the key).
2. Read the image of the pointer's version and join it with those records
   (full outer join on the key; both sides hash-partitioned the same way, so
   partition ``p`` holds the same keys on both sides).
3. Pass one, per partition: derive the operations, count them by type, and
   write the partition's part of the new image.
4. The driver turns the per-partition counts (a few numbers) into offsets.
5. Pass two, per partition: render the operations with their ``mutId``
   (contiguous, after the pointer's last) and cumulative counts, and write the
   partition's operation file ``cdc_<version>_<partition>``.
6. Write the pointer (new version, last applied sync, last ``mutId``): the
   commit. Then delete the applied staging and the older image.

Files of the new version are named by version and partition, and any left by
a failed apply are deleted before the retry writes them again: whatever
failed before the pointer was written, the retry yields each operation once.
Nothing is collected on the driver but counts and file names.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

import pyarrow as pa

from framework.errors import FrameworkError
from framework.sink.cdc.ops import (
    CursorInfo,
    OpCounts,
    csv_header,
    csv_line,
    derive,
    json_line,
)
from framework.sink.cdc.plan import ChangeStream
from framework.sink.cdc.pointer import Pointer, load_pointer, save_pointer
from framework.sink.cdc.staging import (
    IMAGE_KEY,
    _ddl_schema,
    _storage,
    image_ddl,
    read_image,
    read_staged,
    staged_ddl,
    write_parquet,
)
from framework.sink.formats.replicant import table_name

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_SYNC_FOLDER = re.compile(r"staging/sync_(\d+)/")
_PARTITION_BYTES = 32 * 1024 * 1024  # staged and image bytes (compressed Parquet) per partition of the join
_COUNTS_DDL = "part int, inserts bigint, updates bigint, deletes bigint, image_rows bigint, image_key string"
_FILES_DDL = "part int, key string, records bigint, bytes bigint"


@dataclass(frozen=True)
class ApplyResult:
    """What one apply did: the committed version, the operations by type, the operation files written."""

    version: int
    applied_sync: int
    counts: OpCounts
    files: tuple[dict, ...] = ()
    image_rows: int = 0
    seconds: float = 0.0
    skipped: str | None = field(default=None, compare=False)  # why nothing was applied, when so


def apply_changes(spark: Any, storage: Any, settings: Any, change: ChangeStream, *, completed: bool,
                  clock: Any, cores: int = 2) -> ApplyResult:
    """Apply the stream's staged records (see the module docs); ``completed`` says the sync had no error."""
    started = time.perf_counter()
    pointer = load_pointer(storage, change.pointer_key)
    if not completed:
        return ApplyResult(pointer.version, pointer.applied_sync, OpCounts(),
                           skipped="the sync did not complete; its staged records wait for the next one")
    by_sync: dict[int, list[Any]] = {}
    for info in storage.list(change.staging_root, with_metadata=False):
        match = _SYNC_FOLDER.search(info.key)
        if match and info.key.endswith(".parquet"):
            by_sync.setdefault(int(match.group(1)), []).append(info)
    pending = {s: files for s, files in by_sync.items() if pointer.applied_sync < s <= change.sync_id}
    if change.incremental:
        staged = [info for s in sorted(pending) for info in pending[s]]
        if not staged:
            return ApplyResult(pointer.version, pointer.applied_sync, OpCounts(), skipped="nothing staged")
    else:  # a full snapshot supersedes the snapshots staged before it
        staged = pending.get(change.sync_id, [])
    version = pointer.version + 1
    destination = _destination(settings)
    total_bytes = sum(info.size for info in staged) + sum(
        info.size for info in storage.list(change.image_prefix(pointer.version), with_metadata=False)
    ) if pointer.version else sum(info.size for info in staged)
    # At least two: Spark plans one partition as a single one and then shuffles it again for the join.
    partitions = max(2, min(cores * 2, math.ceil(total_bytes / _PARTITION_BYTES)))
    now_ms = (clock.now() - _EPOCH) // timedelta(milliseconds=1)
    try:
        _delete_prefixes(storage, [change.op_version_prefix(version), change.image_prefix(version)])
        counts, image_keys, image_rows, files = _run(spark, change, destination, pointer, version, staged,
                                                     partitions, now_ms)
        for written in files:
            written["uri"] = storage.uri(written["key"])
        total = OpCounts()
        for part in counts:
            total = total.plus(part)
        committed = Pointer(version=version, applied_sync=change.sync_id, mut_id=pointer.mut_id + total.total,
                            image_rows=image_rows, image_keys=tuple(image_keys), fields=change.fields,
                            op_keys=tuple(f["key"] for f in files), committed_at=clock.now().isoformat())
        save_pointer(storage, change.pointer_key, committed)
    except FrameworkError:
        raise
    except Exception as exc:  # noqa: BLE001 - a Spark job or a write failed: nothing committed, retried next sync
        raise FrameworkError(
            f"stream `{change.stream}`: writing the change data failed ({_gist(exc)}); nothing was committed, "
            "the staged records stay and the next sync applies them"
        ) from None
    _clean_up(storage, change, version, [info.key for s in by_sync if s <= change.sync_id for info in by_sync[s]])
    return ApplyResult(version, change.sync_id, total, tuple(files), image_rows, time.perf_counter() - started)


def _run(spark: Any, change: ChangeStream, destination: dict, pointer: Pointer, version: int, staged: list[Any],
         partitions: int, now_ms: int) -> tuple[list[OpCounts], list[str], int, list[dict]]:
    from pyspark import StorageLevel
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    width = len(change.fields)
    values = [f"v{i}" for i in range(width)]
    records = _listing(spark, [info.key for info in staged], cores=partitions).mapInArrow(
        read_staged(change, destination), staged_ddl(width))
    order = Window.partitionBy("k").orderBy(F.col("o_num").desc_nulls_last(), F.col("o_text").desc_nulls_last(),
                                            F.col("o_at").desc_nulls_last(), F.col("o_seq").desc())
    latest = (records.repartition(partitions, "k").withColumn("_rank", F.row_number().over(order))
              .where(F.col("_rank") == 1).select("k", "del", *values))
    if pointer.image_keys:
        image = _listing(spark, list(pointer.image_keys), cores=partitions).mapInArrow(
            read_image(change, destination), image_ddl(width)).repartition(partitions, "k")
    else:  # the first apply: no image yet
        image = spark.createDataFrame([], image_ddl(width))
    joined = latest.join(image, on="k", how="full_outer").sortWithinPartitions("k")
    joined = joined.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        rows = joined.mapInArrow(_image_pass(change, destination, version), _COUNTS_DDL).collect()
        # Spark may plan other partitions than asked for (a single one becomes the session's default):
        # the offsets follow the partitions that actually ran, in order.
        rows = sorted(rows, key=lambda row: row["part"])
        counts = [OpCounts(row["inserts"], row["updates"], row["deletes"]) for row in rows]
        image_keys = sorted(row["image_key"] for row in rows if row["image_key"])
        image_rows = sum(row["image_rows"] for row in rows)
        offsets: dict[int, OpCounts] = {}
        running = OpCounts()
        for row, part in zip(rows, counts):
            offsets[row["part"]] = running
            running = running.plus(part)
        cursor = CursorInfo(timestamp_ms=now_ms, extraction_ms=now_ms, sync_id=change.sync_id)
        written = joined.mapInArrow(_ops_pass(change, destination, version, offsets, cursor, pointer.mut_id),
                                    _FILES_DDL).collect()
    finally:
        joined.unpersist()
    files = [{"key": row["key"], "uri": "", "records": row["records"], "bytes": row["bytes"],
              "part_number": row["part"]} for row in sorted(written, key=lambda r: r["part"]) if row["key"]]
    return counts, image_keys, image_rows, files


def _listing(spark: Any, keys: list[str], *, cores: int) -> Any:
    return spark.createDataFrame([(i, key) for i, key in enumerate(keys)], "i bigint, key string")


def _joined_rows(batch: pa.RecordBatch, width: int) -> Iterator[tuple[str, tuple | None, bool, tuple | None]]:
    """``(key, new values or None, deleted, old values or None)`` per row of the joined table."""
    keys = batch.column("k").to_pylist()
    deleted = batch.column("del").to_pylist()
    present = batch.column("img").to_pylist()
    rows = batch.num_rows
    news = list(zip(*(batch.column(f"v{i}").to_pylist() for i in range(width)))) if width else [()] * rows
    olds = list(zip(*(batch.column(f"w{i}").to_pylist() for i in range(width)))) if width else [()] * rows
    for row in range(rows):
        yield (keys[row], news[row] if deleted[row] is not None else None, bool(deleted[row]),
               olds[row] if present[row] else None)


def _partition() -> int:
    from pyspark import TaskContext

    context = TaskContext.get()
    return context.partitionId() if context is not None else 0


def _image_pass(change: ChangeStream, destination: Mapping[str, Any], version: int):
    """Pass one: count the operations of the partition and write its part of the new image."""
    keys, width, image, snapshot = set(change.keys), len(change.fields), change.image, not change.incremental
    out_schema = _ddl_schema(_COUNTS_DDL)
    image_schema = pa.schema([pa.field(IMAGE_KEY, pa.string())] + [pa.field(n, pa.string()) for n in change.fields])

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        part = _partition()
        counts = OpCounts()
        kept_keys: list[str] = []
        kept: list[tuple] = []
        for batch in batches:
            for key, new, deleted, old in _joined_rows(batch, width):
                if new is None and not snapshot:  # an incremental sync did not touch this key
                    kept_keys.append(key)
                    kept.append(old)
                    continue
                found = derive(new, old, deleted=deleted, keys=keys, image=image)
                if found is not None:
                    counts.add(found.op)
                if new is not None and not deleted:
                    kept_keys.append(key)
                    kept.append(new)
        image_key = ""
        if kept:
            columns = [pa.array(kept_keys, pa.string())] + [
                pa.array(list(column), pa.string()) for column in zip(*kept)] if width else [
                pa.array(kept_keys, pa.string())]
            image_key = f"{change.image_prefix(version)}part-{part:05d}.parquet"
            write_parquet(_storage(destination), image_key, pa.Table.from_arrays(columns, schema=image_schema))
        yield pa.RecordBatch.from_pylist([{"part": part, "inserts": counts.inserts, "updates": counts.updates,
                                           "deletes": counts.deletes, "image_rows": len(kept),
                                           "image_key": image_key}], schema=out_schema)

    return run


def _ops_pass(change: ChangeStream, destination: Mapping[str, Any], version: int, offsets: Mapping[int, OpCounts],
              cursor: CursorInfo, mut_base: int):
    """Pass two: render the partition's operations and write them as one file."""
    keys, width, image, snapshot = set(change.keys), len(change.fields), change.image, not change.incremental
    out_schema = _ddl_schema(_FILES_DDL)
    as_csv = change.format_type == "replicant_csv"
    table = table_name(change.catalog, change.schema, change.stream)
    fields = change.fields

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        part = _partition()
        before = offsets.get(part, OpCounts())
        counts = OpCounts(before.inserts, before.updates, before.deletes)
        mut_id = mut_base + before.total
        storage = target = None
        key = change.op_key(version, part)
        written = 0
        try:
            for batch in batches:
                chunk: list[bytes] = []
                for _, new, deleted, old in _joined_rows(batch, width):
                    if new is None and not snapshot:
                        continue
                    found = derive(new, old, deleted=deleted, keys=keys, image=image)
                    if found is None:
                        continue
                    counts.add(found.op)
                    mut_id += 1
                    text = cursor.as_json(mut_id, part)
                    if as_csv:
                        chunk.append(csv_line(found, text, counts.as_json()).encode("utf-8"))
                    else:
                        chunk.append(json_line(found, fields, table, text, counts.as_json()))
                if chunk:
                    if target is None:
                        storage = _storage(destination)
                        target = storage.open_object(key)
                        if as_csv and change.include_header:
                            target.write(csv_header(fields).encode("utf-8"))
                    target.write(b"".join(chunk))
                    written += len(chunk)
            if target is not None:
                target.commit()
        except BaseException:
            if target is not None:
                target.abort()
            raise
        size = target.bytes_written if target is not None else 0
        yield pa.RecordBatch.from_pylist([{"part": part, "key": key if target is not None else None,
                                           "records": written, "bytes": size}], schema=out_schema)

    return run


def _destination(settings: Any) -> dict:
    import orjson

    return orjson.loads(settings.model_dump_json(by_alias=True))


def _delete_prefixes(storage: Any, prefixes: list[str]) -> None:
    victims = [info.key for prefix in prefixes for info in storage.list(prefix, with_metadata=False)]
    if victims:
        storage.delete(victims)


def _clean_up(storage: Any, change: ChangeStream, version: int, staged_keys: list[str]) -> None:
    """After the commit: the applied staging and older images go (a failure here only leaves garbage)."""
    current = change.image_prefix(version)
    older = [info.key for info in storage.list(f"{change.root}image/", with_metadata=False)
             if not info.key.startswith(current)]
    victims = staged_keys + older
    if victims:
        storage.delete(victims)


def _gist(exc: BaseException) -> str:
    """The last line of a Python error carried by a Spark failure, or the first line of the message."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    for line in reversed(lines):
        head = line.split(":", 1)[0]
        if head.endswith(("Error", "Exception")) and not line.startswith(("at ", "File ")):
            return line
    return lines[0] if lines else type(exc).__name__


__all__ = ["ApplyResult", "apply_changes"]
