"""The apply step of realtime mode: staged records + previous image -> operation files + new image, then commit.

Run on the driver once all groups of a stream's sync are back
(:func:`apply_changes`); the work itself runs on the executors:

1. Read the staged files of every sync not applied yet (for a full-refresh
   stream: only the sync that just completed, a whole snapshot) and keep the
   latest record of each key: the highest cursor value, then the latest
   ``_airbyte_extracted_at``, then the last one staged (a window over the key).
2. Read the image of the pointer's version (local files: Spark's Parquet
   reader; S3: the sink's storage in a Python task) and join it with those
   records (full outer join on the key; both sides hash-partitioned the same
   way, so partition ``p`` holds the same keys on both sides).
3. Derive each row's operation and whether it stays in the image with column
   expressions (the JVM, no Python per row), sort each partition by key and
   cache the result.
4. Count the operations of each partition (a Spark aggregate: a few numbers
   reach the driver) and turn them into offsets; write the new image (Spark's
   Parquet writer for local files, a Python task per partition for S3).
5. Render the operations of each partition a whole Arrow batch at a time
   (:class:`.render.OpLines`: triplets, cells, ``mutId`` contiguous after the
   pointer's last, cumulative counts) and write the partition's operation file
   ``cdc_<version>_<partition>``.
6. Write the pointer (new version, last applied sync, last ``mutId``): the
   commit. Then delete the applied staging and the older image.

Files of the new version are named by version and partition, and any left by
a failed apply are deleted before the retry writes them again: whatever
failed before the pointer was written, the retry yields each operation once.
Nothing is collected on the driver but counts and file names.
"""

from __future__ import annotations

import io
import math
import os
import re
import shutil
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from framework.cdc.ops import CursorInfo, OpCounts
from framework.cdc.plan import ChangeStream
from framework.cdc.pointer import Pointer, load_pointer, save_pointer
from framework.cdc.render import OpLines
from framework.cdc.staging import (
    IMAGE_KEY,
    ddl_schema,
    image_ddl,
    read_image,
    read_staged,
    staged_ddl,
    storage_of,
)
from framework.errors import FrameworkError
from framework.formats.replicant import table_name
from framework.storage import LocalStorage, ObjectInfo, Storage
from framework.temporal.clock import Clock

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from framework.models.destination import DestinationSettings

ArrowTask = Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]

PHASES: list = []
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_SYNC_FOLDER = re.compile(r"staging/sync_(\d+)/")
_PARTITION_BYTES = 32 * 1024 * 1024  # staged and image bytes (compressed Parquet) per partition of the join
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
    phases: tuple[tuple[str, float], ...] = field(default=(), compare=False)  # (step, seconds) on the driver


def apply_changes(spark: SparkSession, storage: Storage, settings: DestinationSettings, change: ChangeStream, *,
                  completed: bool, clock: Clock, cores: int = 2) -> ApplyResult:
    """Apply the stream's staged records (see the module docs); ``completed`` says the sync had no error."""
    started = time.perf_counter()
    pointer = load_pointer(storage, change.pointer_key)
    if not completed:
        return ApplyResult(pointer.version, pointer.applied_sync, OpCounts(),
                           skipped="the sync did not complete; its staged records wait for the next one")
    by_sync: dict[int, list[ObjectInfo]] = {}
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
        counts, image_keys, image_rows, files = _run(spark, storage, change, destination, pointer, version,
                                                     staged, partitions, now_ms)
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
    return ApplyResult(version, change.sync_id, total, tuple(files), image_rows, time.perf_counter() - started,
                       phases=tuple(PHASES))


def _run(spark: SparkSession, storage: Storage, change: ChangeStream, destination: dict, pointer: Pointer,
         version: int, staged: list[ObjectInfo], partitions: int,
         now_ms: int) -> tuple[list[OpCounts], list[str], int, list[dict]]:
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    width = len(change.fields)
    values, olds = [f"v{i}" for i in range(width)], [f"w{i}" for i in range(width)]
    jvm = _jvm_files(storage, change.fields, pointer.fields)
    clock = _Phases()
    records = _listing(spark, [info.key for info in staged]).mapInArrow(read_staged(change, destination),
                                                                         staged_ddl(width))
    latest = _latest(records.repartition(partitions, "k"), values)
    if not pointer.image_keys:  # the first apply: no image yet
        image = spark.createDataFrame([], image_ddl(width))
    elif jvm:  # local files: Spark's own Parquet reader, no Python worker
        image = _read_image_jvm(spark, storage, change, pointer).repartition(partitions, "k")
    else:
        image = _listing(spark, list(pointer.image_keys)).mapInArrow(
            read_image(change, destination), image_ddl(width)).repartition(partitions, "k")
    joined = latest.join(image, on="k", how="full_outer")
    # The operation of each row, in the JVM: the rules of ops.derive, on whole columns.
    touched = F.col("del").isNotNull()  # the sync has a record of the key
    marked = F.coalesce(F.col("del"), F.lit(False))
    present = F.col("img").isNotNull()  # the image has the key
    same = F.lit(True)
    for v, w in zip(values, olds):
        same = same & F.col(v).eqNullSafe(F.col(w))
    gone = marked if change.incremental else ~touched | marked
    op = (F.when(touched & ~marked & ~present, F.lit("I")).when(touched & ~marked & ~same, F.lit("U"))
          .when(present & gone, F.lit("D")))
    keep = touched & ~marked
    if change.incremental:  # keys the sync did not read stay as they were
        keep = keep | (~touched & present)
    diff = joined.select("k", op.alias("op"), keep.alias("keep"), touched.alias("fresh"), *values, *olds)
    diff = diff.sortWithinPartitions("k").persist(StorageLevel.MEMORY_AND_DISK)
    try:
        # Spark may plan other partitions than asked for (a single one becomes the session's default):
        # the offsets follow the partitions that actually ran, in order (spark_partition_id of the cached rows
        # is the partition the operations pass sees).
        is_op = [F.sum(F.when(F.col("op") == kind, 1).otherwise(0)).alias(name)
                 for kind, name in (("I", "inserts"), ("U", "updates"), ("D", "deletes"))]
        rows = diff.groupBy(F.spark_partition_id().alias("part")).agg(
            *is_op, F.sum(F.col("keep").cast("long")).alias("image_rows")).collect()
        clock.mark("read, latest per key, join, count")
        rows = sorted(rows, key=lambda row: row["part"])
        counts = [OpCounts(row["inserts"], row["updates"], row["deletes"]) for row in rows]
        image_rows = sum(row["image_rows"] for row in rows)
        kept = diff.where(F.col("keep")).select(
            F.col("k").alias(IMAGE_KEY),
            *[F.when(F.col("fresh"), F.col(v)).otherwise(F.col(w)).alias(name)
              for v, w, name in zip(values, olds, change.fields)])
        if jvm:
            kept.write.mode("overwrite").parquet(storage.uri(change.image_prefix(version)))
            image_keys = [info.key for info in storage.list(change.image_prefix(version), with_metadata=False)
                          if info.key.endswith(".parquet")]
        else:
            image_keys = [row["image_key"] for row in kept.mapInArrow(
                _image_writer(change, destination, version), "image_key string").collect() if row["image_key"]]
        image_keys = sorted(image_keys)
        clock.mark("image")
        offsets: dict[int, OpCounts] = {}
        running = OpCounts()
        for row, part in zip(rows, counts):
            offsets[row["part"]] = running
            running = running.plus(part)
        cursor = CursorInfo(timestamp_ms=now_ms, extraction_ms=now_ms, sync_id=change.sync_id)
        written = diff.where(F.col("op").isNotNull()).select("op", *values, *olds).mapInArrow(
            _ops_pass(change, destination, version, offsets, cursor, pointer.mut_id), _FILES_DDL).collect()
        clock.mark("operations")
    finally:
        diff.unpersist()
    PHASES[:] = clock.steps
    files = [{"key": row["key"], "uri": "", "records": row["records"], "bytes": row["bytes"],
              "part_number": row["part"]} for row in sorted(written, key=lambda r: r["part"]) if row["key"]]
    return counts, image_keys, image_rows, files


class _Phases:
    """Seconds between marks, for :attr:`ApplyResult.phases`."""

    def __init__(self) -> None:
        self.steps: list[tuple[str, float]] = []
        self._last = time.perf_counter()

    def mark(self, name: str) -> None:
        now = time.perf_counter()
        self.steps.append((name, now - self._last))
        self._last = now


def _latest(records: DataFrame, values: list[str]) -> DataFrame:
    """The latest record of each key: highest cursor, then extraction time, then the last staged."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    order = Window.partitionBy("k").orderBy(F.col("o_num").desc_nulls_last(), F.col("o_text").desc_nulls_last(),
                                            F.col("o_at").desc_nulls_last(), F.col("o_seq").desc())
    return (records.withColumn("_rank", F.row_number().over(order)).where(F.col("_rank") == 1)
            .select("k", "del", *values))


def _jvm_files(storage: Storage, fields: tuple[str, ...], image_fields: tuple[str, ...]) -> bool:
    """Whether Spark's own Parquet reader and writer can take the image: local files, and column names that
    Spark (case-insensitive by default) tells apart."""
    if not isinstance(storage, LocalStorage):
        return False
    return all(len({n.lower() for n in names + (IMAGE_KEY,)}) == len(names) + 1 for names in (fields, image_fields))


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _read_image_jvm(spark: SparkSession, storage: Storage, change: ChangeStream, pointer: Pointer) -> DataFrame:
    from pyspark.sql import functions as F

    frame = spark.read.parquet(*[storage.uri(key) for key in pointer.image_keys])
    present = set(frame.columns)
    return frame.select(
        F.col(IMAGE_KEY).alias("k"), F.lit(True).alias("img"),
        *[(F.col(_quoted(name)) if name in present else F.lit(None).cast("string")).alias(f"w{i}")
          for i, name in enumerate(change.fields)])


def _listing(spark: SparkSession, keys: list[str]) -> DataFrame:
    return spark.createDataFrame([(i, key) for i, key in enumerate(keys)], "i bigint, key string")


def _partition() -> int:
    from pyspark import TaskContext

    context = TaskContext.get()
    return context.partitionId() if context is not None else 0


def _image_writer(change: ChangeStream, destination: Mapping[str, Any], version: int) -> ArrowTask:
    """The partition's part of the new image as one Parquet object (storage without Spark's writer: S3)."""
    image_schema = pa.schema([pa.field(IMAGE_KEY, pa.string())] + [pa.field(n, pa.string()) for n in change.fields])
    out_schema = pa.schema([pa.field("image_key", pa.string())])

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        key = f"{change.image_prefix(version)}part-{_partition():05d}.parquet"
        sink = io.BytesIO()
        writer = None
        for batch in batches:
            if batch.num_rows:
                writer = writer or pq.ParquetWriter(sink, image_schema, compression="snappy")
                writer.write_batch(pa.RecordBatch.from_arrays(batch.columns, schema=image_schema))
        if writer is None:
            yield pa.RecordBatch.from_pylist([{"image_key": None}], schema=out_schema)
            return
        writer.close()
        with storage_of(destination).open_object(key) as target:
            target.write(sink.getvalue())
            target.commit()
        yield pa.RecordBatch.from_pylist([{"image_key": key}], schema=out_schema)

    return run


def _ops_pass(change: ChangeStream, destination: Mapping[str, Any], version: int, offsets: Mapping[int, OpCounts],
              cursor: CursorInfo, mut_base: int) -> ArrowTask:
    """Render the partition's operations (whole batches, :class:`.render.OpLines`) and write them as one file."""
    width = len(change.fields)
    out_schema = ddl_schema(_FILES_DDL)
    as_csv = change.format_type == "replicant_csv"
    table = table_name(change.catalog, change.schema, change.stream)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        part = _partition()
        before = offsets.get(part, OpCounts())
        lines = OpLines(fields=change.fields, keys=set(change.keys), image=change.image, as_csv=as_csv,
                        table=table, cursor=cursor, part=part, start=before, mut_id=mut_base + before.total)
        storage = target = None
        key = change.op_key(version, part)
        written = 0
        try:
            for batch in batches:
                if not batch.num_rows:
                    continue
                columns = batch.columns
                data = lines.render(columns[0], columns[1:1 + width], columns[1 + width:])
                if target is None:
                    storage = storage_of(destination)
                    target = storage.open_object(key)
                    if as_csv and change.include_header:
                        target.write(lines.header())
                target.write(data)
                written += batch.num_rows
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


def _destination(settings: DestinationSettings) -> dict:
    return orjson.loads(settings.model_dump_json(by_alias=True))


def _delete_prefixes(storage: Storage, prefixes: list[str]) -> None:
    victims = [info.key for prefix in prefixes for info in storage.list(prefix, with_metadata=False)]
    if victims:
        storage.delete(victims)


def _clean_up(storage: Storage, change: ChangeStream, version: int, staged_keys: list[str]) -> None:
    """After the commit: the applied staging and older images go (a failure here only leaves garbage)."""
    current = change.image_prefix(version)
    older = [info.key for info in storage.list(f"{change.root}image/", with_metadata=False)
             if not info.key.startswith(current)]
    victims = staged_keys + older
    if victims:
        storage.delete(victims)
    if isinstance(storage, LocalStorage):  # Spark's writer leaves checksum files that listings do not show
        folder = storage.path(f"{change.root}image")
        keep = current.rstrip("/").rpartition("/")[2]
        for name in os.listdir(folder) if os.path.isdir(folder) else ():
            if name != keep:
                shutil.rmtree(os.path.join(folder, name), ignore_errors=True)


def _gist(exc: BaseException) -> str:
    """The last line of a Python error carried by a Spark failure, or the first line of the message."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    for line in reversed(lines):
        head = line.split(":", 1)[0]
        if head.endswith(("Error", "Exception")) and not line.startswith(("at ", "File ")):
            return line
    return lines[0] if lines else type(exc).__name__


__all__ = ["ApplyResult", "apply_changes"]
