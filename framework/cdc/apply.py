"""The apply step of realtime mode: staged records + previous image -> operation files + new image, then commit.

Run on the driver once all groups of a stream's sync are back
(:func:`apply_changes`); the work itself runs on the executors:

1. Read the staged files of every sync not applied yet (for a full-refresh
   stream: only the sync that just completed, a whole snapshot), give each
   record its key's hash bucket (:mod:`.buckets`) and keep the latest record
   of each key: the highest cursor value, then the latest
   ``_airbyte_extracted_at``, then the last one staged (a window over the
   bucket and key). Count them per bucket (a few numbers reach the driver) and
   plan which buckets are rewritten and which get a delta
   (:func:`.buckets.plan`; ``compact=True``: every bucket rewritten).
2. Read the image files of the touched buckets (local files: Spark's Parquet
   reader; S3: the sink's storage in a Python task): a rewritten bucket whole,
   a delta bucket only for the changed keys (a semi-join against them,
   broadcast when few), the newest row of each key where a bucket holds
   several versions' files; join that with the records (full outer join on
   bucket and key; both sides hash-partitioned and sorted by them alike, so the
   join neither shuffles nor sorts again). Partitions follow the bytes read
   (the staged files, the rewritten buckets' files), however many cores there
   are, and an apply past a few partitions caches its rows on disk only: the
   heap holds a partition's rows at a time, whatever the table's size.
3. Derive each row's operation, whether it stays in the image and what goes
   into the new files (a rewritten bucket's kept rows, a delta bucket's
   operations, a delete as a tombstone) with column expressions (the JVM, no
   Python per row), sort each partition by bucket and key and cache the result.
4. Count the operations of each partition and bucket (a Spark aggregate) and
   turn them into offsets; write the new files of the touched buckets under
   ``image/v<version>/_cdc_bucket=<b>/`` (Spark's Parquet writer for local
   files, a Python task per partition for S3).
5. Render the operations of each partition a whole Arrow batch at a time
   (:class:`.render.OpLines`: triplets, cells, ``mutId`` contiguous after the
   pointer's last, cumulative counts) and write the partition's operation file
   ``cdc_<version>_<partition>``.
6. Write the pointer (new version, buckets and their files, last applied
   sync, last ``mutId``): the commit. Then delete the applied staging and the
   image files the new pointer does not name (untouched buckets keep theirs).

Files of the new version are named by version and partition, and any left by
a failed apply are deleted before the retry writes them again: whatever
failed before the pointer was written, the retry yields each operation once.
Nothing is collected on the driver but counts and file names.
"""

from __future__ import annotations

import contextlib
import io
import math
import os
import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.parquet as pq
from msgspec import Struct

from framework.cdc.buckets import (
    Bucket,
    BucketOutcome,
    BucketPlan,
    choose_buckets,
    image_file,
    next_layout,
    parse_image_file,
    plan,
    referenced,
)
from framework.cdc.ops import CursorInfo, OpCounts
from framework.cdc.plan import ChangeStream
from framework.cdc.pointer import Pointer, load_pointer, save_pointer
from framework.cdc.render import OpLines
from framework.cdc.staging import (
    IMAGE_DELETED,
    IMAGE_KEY,
    STAGED_EXTENSION,
    ddl_schema,
    image_ddl,
    read_image,
    read_staged,
    staged_ddl,
    storage_of,
)
from framework.errors import FrameworkError
from framework.formats.replicant import table_name
from framework.output_names import INTERNAL_SUFFIX
from framework.storage import LocalStorage, ObjectInfo, Storage
from framework.temporal.clock import Clock

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from framework.models.destination import DestinationSettings

ArrowTask = Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]

PHASES: list = []
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_SYNC_FOLDER = re.compile(r"staging/sync_(\d+)/")
# Partitions of the records and of the join, sized by the bytes they read (compressed Parquet): a partition's
# rows are cached and sorted in one task, so they must fit a small share of an executor's heap whatever the
# table's size; there is no cap (Spark runs more partitions than cores one after the other).
_PARTITION_BYTES = 8 * 1024 * 1024
_MEMORY_BYTES = 64 * 1024 * 1024  # an apply reading more keeps its intermediate rows on disk, not in the heap
_CORE_BYTES = 4 * 1024 * 1024  # from cores x this many bytes on, every core gets a partition
_FILES_DDL = "part int, key string, records bigint, bytes bigint"
_BROADCAST_KEYS = 1_000_000  # up to this many changed keys go to every task that reads a delta bucket's files
BUCKET_COLUMN = "_cdc_bucket"


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
    buckets: int = field(default=0, compare=False)  # the image's hash buckets
    touched: int = field(default=0, compare=False)  # buckets the apply read (some or all of their keys)
    rewritten: int = field(default=0, compare=False)  # ... of which rewritten whole (the others got a delta)


def apply_changes(spark: SparkSession, storage: Storage, settings: DestinationSettings, change: ChangeStream, *,
                  completed: bool, clock: Clock, cores: int = 2, compact: bool = False) -> ApplyResult:
    """Apply the stream's staged records (see the module docs); ``completed`` says the sync had no error.

    ``cores``: the executors' cores (a large enough apply runs at least one partition per core); ``compact``:
    rewrite every bucket of the image as one new base, whatever the records touch (what the benchmark
    compares a small apply with)."""
    started = time.perf_counter()
    pointer = load_pointer(storage, change.pointer_key)
    if not completed:
        return ApplyResult(pointer.version, pointer.applied_sync, OpCounts(),
                           skipped="the sync did not complete; its staged records wait for the next one")
    by_sync: dict[int, list[ObjectInfo]] = {}
    for info in storage.list(change.staging_root, with_metadata=False):
        match = _SYNC_FOLDER.search(info.key)
        if match and info.key.endswith((STAGED_EXTENSION, ".parquet")):  # .parquet: staged by an older version
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
    sizes = {info.key: info.size for info in storage.list(f"{change.root}image/", with_metadata=False)
             } if pointer.version else {}
    staged_bytes = sum(info.size for info in staged)
    now_ms = (clock.now() - _EPOCH) // timedelta(milliseconds=1)
    try:
        _delete_prefixes(storage, [change.op_version_prefix(version), change.image_prefix(version)])
        counts, layout, files, planned = _run(spark, storage, change, destination, pointer, version, staged,
                                              _Sizes(staged_bytes, sizes, cores), now_ms, compact)
        for written in files:
            written["uri"] = storage.uri(written["key"])
        total = OpCounts()
        for part in counts:
            total = total.plus(part)
        image_rows = sum(bucket.rows for bucket in layout)
        committed = Pointer(version=version, applied_sync=change.sync_id, mut_id=pointer.mut_id + total.total,
                            image_rows=image_rows, image_keys=tuple(sorted(referenced(layout))),
                            fields=change.fields, op_keys=tuple(f["key"] for f in files),
                            committed_at=clock.now().isoformat(), buckets=len(layout), layout=layout)
        save_pointer(storage, change.pointer_key, committed)
    except FrameworkError:
        raise
    except Exception as exc:  # noqa: BLE001 - a Spark job or a write failed: nothing committed, retried next sync
        raise FrameworkError(
            f"stream `{change.stream}`: writing the change data failed ({_gist(exc)}); nothing was committed, "
            "the staged records stay and the next sync applies them"
        ) from None
    _clean_up(storage, change, set(committed.image_keys),
              [info.key for s in by_sync if s <= change.sync_id for info in by_sync[s]])
    return ApplyResult(version, change.sync_id, total, tuple(files), image_rows, time.perf_counter() - started,
                       phases=tuple(PHASES), buckets=len(layout), touched=len(planned.touched),
                       rewritten=len(planned.rewrite))


class _Sizes(Struct, frozen=True):
    """The bytes an apply reads: its staged files, the image's files (key -> bytes), and the cores to use."""

    staged: int
    image: Mapping[str, int]
    cores: int

    def partitions(self, extra: int = 0) -> int:
        """Partitions for ``staged + extra`` bytes: one per :data:`_PARTITION_BYTES`, at least one per core
        past ``cores x`` :data:`_CORE_BYTES`, at least two (Spark plans one partition as a single one and then
        shuffles it again for the join); more than the cores, a multiple of them (3 partitions on 2 cores
        take as long as 4: the last one runs alone)."""
        size = self.staged + extra
        count = max(2, math.ceil(size / _PARTITION_BYTES), min(self.cores, size // _CORE_BYTES))
        cores = max(1, self.cores)
        return count if count <= cores else -(-count // cores) * cores

    def of(self, keys: Iterable[str]) -> int:
        return sum(self.image.get(key, 0) for key in keys)


def _run(spark: SparkSession, storage: Storage, change: ChangeStream, destination: dict, pointer: Pointer,
         version: int, staged: list[ObjectInfo], sizes: _Sizes, now_ms: int,
         compact: bool) -> tuple[list[OpCounts], tuple[Bucket, ...], list[dict], BucketPlan]:
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    width = len(change.fields)
    values, olds = [f"v{i}" for i in range(width)], [f"w{i}" for i in range(width)]
    jvm = _jvm_files(storage, change.fields, pointer.fields)
    clock = _Phases()
    legacy = not pointer.buckets and bool(pointer.image_keys)  # an unbucketed image of an older version
    buckets = pointer.buckets or choose_buckets(sizes.staged + sizes.of(sizes.image))
    layout = pointer.layout or tuple(Bucket() for _ in range(buckets))
    records = _listing(spark, [info.key for info in staged]).mapInArrow(
        read_staged(change, destination, buckets), staged_ddl(width))
    partitions = sizes.partitions()
    # Rows cached in the heap are unrolled a partition at a time (and read back from disk into it): past a few
    # partitions' worth, the cached rows go to the local disk only.
    level = StorageLevel.MEMORY_AND_DISK if sizes.staged <= _MEMORY_BYTES else StorageLevel.DISK_ONLY
    latest = _latest(records.repartition(partitions, "b", "k"), values).persist(level)
    diff = None
    try:
        changes = {row["b"]: row["count"] for row in latest.groupBy("b").count().collect()}
        # Every bucket is rewritten when the image is migrated or the fields changed: all files of the image
        # then have the pointer's fields.
        whole = compact or legacy or (bool(pointer.image_keys) and pointer.fields != change.fields)
        planned = plan(layout, changes, incremental=change.incremental and not whole)
        clock.mark("read, latest per key")
        # The join's partitions follow the bytes it reads whole: the records and the rewritten buckets' files.
        rewritten = pointer.image_keys if legacy else [key for b in planned.rewrite for key in layout[b].files]
        joined_partitions = sizes.partitions(sizes.of(rewritten))  # sized like this apply's reads
        records_side = (latest if joined_partitions == partitions
                        else latest.repartition(joined_partitions, "b", "k"))
        image = _image(spark, storage, change, destination, pointer, layout, planned, latest, jvm,
                       buckets if legacy else 0, sum(changes.values()), joined_partitions)
        # On the bucket and the key (the bucket is the key's): both sides are hash-partitioned and sorted by
        # them, so the join moves no rows, and without an image the records keep that order for the write.
        joined = (records_side.join(image, on=["b", "k"], how="full_outer") if image is not None
                  else records_side.select("*", F.lit(None).cast("boolean").alias("img"),
                                           *[F.lit(None).cast("string").alias(w) for w in olds]))
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
        rewrite = (F.lit(True) if planned.rewrite == planned.touched
                   else F.col("b").isin(sorted(planned.rewrite)) if planned.rewrite else F.lit(False))
        # What goes into the new files: a rewritten bucket's kept rows; a delta bucket's operations
        # (a delete as a tombstone).
        write = F.when(rewrite, keep).otherwise(op.isNotNull())
        diff = joined.select("k", F.col("b"), op.alias("op"), keep.alias("keep"), touched.alias("fresh"),
                             write.alias("write"), (~rewrite & (op == "D")).alias("dead"), *values, *olds)
        # Sorted by bucket, then key: the order the image files are written in (no second sort before the
        # write) and, within a partition, the order of the operations.
        joined_bytes = sizes.staged + sizes.of(rewritten)
        diff = diff.sortWithinPartitions("b", "k").persist(
            StorageLevel.MEMORY_AND_DISK if joined_bytes <= _MEMORY_BYTES else StorageLevel.DISK_ONLY)
        # Spark may plan other partitions than asked for (a single one becomes the session's default):
        # the offsets follow the partitions that actually ran, in order (spark_partition_id of the cached rows
        # is the partition the operations pass sees).
        is_op = [F.sum(F.when(F.col("op") == kind, 1).otherwise(0)).alias(name)
                 for kind, name in (("I", "inserts"), ("U", "updates"), ("D", "deletes"))]
        rows = diff.groupBy(F.spark_partition_id().alias("part"), "b").agg(
            *is_op, F.sum(F.col("keep").cast("long")).alias("kept"),
            F.sum(F.col("write").cast("long")).alias("written")).collect()
        clock.mark("image read, join, count")
        by_part: dict[int, OpCounts] = {}
        by_bucket: dict[int, list[int]] = {}
        for row in rows:
            by_part[row["part"]] = by_part.get(row["part"], OpCounts()).plus(
                OpCounts(row["inserts"], row["updates"], row["deletes"]))
            if row["b"] is not None:
                tally = by_bucket.setdefault(row["b"], [0, 0, 0])
                tally[0] += row["kept"] if row["b"] in planned.rewrite else row["inserts"] - row["deletes"]
                tally[1] += row["written"]
                tally[2] += 1
        counts = [by_part[part] for part in sorted(by_part)]
        kept = diff.where(F.col("write")).select(
            "b", F.col("k").alias(IMAGE_KEY),
            *[F.when(F.col("fresh"), F.col(v)).otherwise(F.col(w)).alias(name)
              for v, w, name in zip(values, olds, change.fields)],
            F.col("dead").alias(IMAGE_DELETED)).sortWithinPartitions("b", IMAGE_KEY)
        new_files: dict[int, list[str]] = {}
        if any(tally[1] for tally in by_bucket.values()):
            if jvm:
                kept.withColumnRenamed("b", BUCKET_COLUMN).write.mode("overwrite").partitionBy(
                    BUCKET_COLUMN).parquet(storage.uri(change.image_prefix(version)))
                # renamed as the Python writer names them: no data glob of the output (**/*.parquet) matches
                image_keys = [_internal(storage, info.key) for info in storage.list(change.image_prefix(version),
                                                                                    with_metadata=False)
                              if info.key.endswith(".parquet")]
            else:
                image_keys = [row["image_key"] for row in kept.mapInArrow(
                    _image_writer(change, destination, version), "image_key string").collect()]
            for key in image_keys:
                where = parse_image_file(key)
                if where is None or where[0] != version:
                    raise FrameworkError(f"{storage.uri(key)}: an image file the apply did not name")
                new_files.setdefault(where[1], []).append(key)
        outcomes = {b: BucketOutcome(tuple(new_files.get(b, ())), tally[0], tally[1])
                    for b, tally in by_bucket.items()}
        clock.mark("image")
        offsets: dict[int, OpCounts] = {}
        running = OpCounts()
        for part in sorted(by_part):
            offsets[part] = running
            running = running.plus(by_part[part])
        cursor = CursorInfo(timestamp_ms=now_ms, extraction_ms=now_ms, sync_id=change.sync_id)
        written = diff.where(F.col("op").isNotNull()).select("op", *values, *olds).mapInArrow(
            _ops_pass(change, destination, version, offsets, cursor, pointer.mut_id), _FILES_DDL).collect()
        clock.mark("operations")
    finally:
        latest.unpersist()
        if diff is not None:
            diff.unpersist()
    PHASES[:] = clock.steps
    files = [{"key": row["key"], "uri": "", "records": row["records"], "bytes": row["bytes"],
              "part_number": row["part"]} for row in sorted(written, key=lambda r: r["part"]) if row["key"]]
    return counts, next_layout(layout, planned, outcomes), files, planned


def _image(spark: SparkSession, storage: Storage, change: ChangeStream, destination: dict, pointer: Pointer,
           layout: tuple[Bucket, ...], planned: BucketPlan, latest: DataFrame, jvm: bool, legacy: int,
           changed: int, partitions: int) -> DataFrame | None:
    """The current row of every key the apply needs: all keys of the buckets it rewrites, the changed keys
    of the buckets that get a delta (the newest file that has the key wins; a tombstone means gone).
    ``legacy``: the bucket count when the pointer's image is an unbucketed one of an older version (read whole),
    else 0."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    # A bucket written by one version (and an image without buckets) has each key once: no resolving.
    single = sorted(key for b in planned.rewrite if layout[b].layers == 1 for key in layout[b].files)
    layered = sorted(key for b in planned.rewrite if layout[b].layers > 1 for key in layout[b].files)
    if legacy:
        single, layered = list(pointer.image_keys), []
    partial = sorted(key for b in planned.delta for key in layout[b].files)
    columns = ["b", "k", "img", *[f"w{i}" for i in range(len(change.fields))]]
    single_rows = _read_image(spark, storage, change, destination, pointer, single, jvm, legacy) if single else None
    layers = []
    if layered:
        layers.append(_read_image(spark, storage, change, destination, pointer, layered, jvm, 0))
    if partial:
        frame = _read_image(spark, storage, change, destination, pointer, partial, jvm, 0)
        keys = latest.select("k")
        # A few changed keys go to every task reading the image: no shuffle of the image's rows.
        layers.append(frame.join(F.broadcast(keys) if changed <= _BROADCAST_KEYS else keys, "k", "left_semi"))
    if not layers:
        if single_rows is None:
            return None
        return single_rows.where(~F.col("dead")).select(*columns).repartition(partitions, "b", "k")
    # Rows of several versions: the newest of each key. One sort per partition (key, then newest version first)
    # serves both this and the merge join with the records, which therefore sorts the image side no more; the
    # single-version buckets' rows go through it too rather than being sorted again after a union.
    if single_rows is not None:
        layers.append(single_rows)
    rows = layers[0]
    for more in layers[1:]:
        rows = rows.unionByName(more)
    newest = Window.partitionBy("b", "k").orderBy(F.col("layer").desc())
    return (rows.repartition(partitions, "b", "k").withColumn("_rank", F.row_number().over(newest))
            .where((F.col("_rank") == 1) & ~F.col("dead")).select(*columns))


def _internal(storage: Storage, key: str) -> str:
    """Move a file Spark wrote (``.parquet``) to its internal name (``.parquet.staged``); return that name."""
    storage.move(key, key + INTERNAL_SUFFIX)
    return key + INTERNAL_SUFFIX


def _read_image(spark: SparkSession, storage: Storage, change: ChangeStream, destination: dict, pointer: Pointer,
                keys: list[str], jvm: bool, legacy: int) -> DataFrame:
    """Rows of :func:`.staging.image_ddl` from image files (Spark's Parquet reader for local bucketed files)."""
    if jvm and not legacy:
        return _read_image_jvm(spark, storage, change, keys)
    return _listing(spark, keys).mapInArrow(read_image(change, destination, legacy or 1, pointer.version),
                                            image_ddl(len(change.fields)))


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

    order = Window.partitionBy("b", "k").orderBy(F.col("o_num").desc_nulls_last(), F.col("o_text").desc_nulls_last(),
                                            F.col("o_at").desc_nulls_last(), F.col("o_seq").desc())
    return (records.withColumn("_rank", F.row_number().over(order)).where(F.col("_rank") == 1)
            .select("k", "b", "del", *values))


def _jvm_files(storage: Storage, fields: tuple[str, ...], image_fields: tuple[str, ...]) -> bool:
    """Whether Spark's own Parquet reader and writer can take the image: local files, and column names that
    Spark (case-insensitive by default) tells apart."""
    if not isinstance(storage, LocalStorage):
        return False
    return all(len({n.lower() for n in names + (IMAGE_KEY,)}) == len(names) + 1 for names in (fields, image_fields))


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _read_image_jvm(spark: SparkSession, storage: Storage, change: ChangeStream, keys: list[str]) -> DataFrame:
    from pyspark.sql import functions as F

    frame = spark.read.parquet(*[storage.uri(key) for key in keys])
    present = set(frame.columns)
    path = F.col("_metadata.file_path")
    return frame.select(
        F.col(IMAGE_KEY).alias("k"), F.lit(True).alias("img"),
        F.regexp_extract(path, r"_cdc_bucket=(\d+)/[^/]*$", 1).cast("int").alias("b"),
        F.regexp_extract(path, r"/v(\d+)/_cdc_bucket=\d+/[^/]*$", 1).cast("bigint").alias("layer"),
        F.coalesce(F.col(IMAGE_DELETED), F.lit(False)).alias("dead") if IMAGE_DELETED in present
        else F.lit(False).alias("dead"),
        *[(F.col(_quoted(name)) if name in present else F.lit(None).cast("string")).alias(f"w{i}")
          for i, name in enumerate(change.fields)])


def _listing(spark: SparkSession, keys: list[str]) -> DataFrame:
    return spark.createDataFrame([(i, key) for i, key in enumerate(keys)], "i bigint, key string")


def _partition() -> int:
    from pyspark import TaskContext

    context = TaskContext.get()
    return context.partitionId() if context is not None else 0


def _image_writer(change: ChangeStream, destination: Mapping[str, Any], version: int) -> ArrowTask:
    """The partition's rows of the new image (sorted by bucket, then key) as one Parquet object per bucket
    (storage without Spark's writer: S3)."""
    image_schema = pa.schema([pa.field(IMAGE_KEY, pa.string())] + [pa.field(n, pa.string()) for n in change.fields]
                             + [pa.field(IMAGE_DELETED, pa.bool_())])
    out_schema = pa.schema([pa.field("image_key", pa.string())])

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        part = _partition()
        storage = storage_of(destination)
        current: int | None = None
        sink = io.BytesIO()
        writer: pq.ParquetWriter | None = None
        written: list[str] = []

        def flush() -> None:
            nonlocal writer, sink
            if writer is None or current is None:
                return
            writer.close()
            key = image_file(change.image_prefix(version), current, part)
            with storage.open_object(key) as target:
                target.write(sink.getvalue())
                target.commit()
            written.append(key)
            writer, sink = None, io.BytesIO()

        for batch in batches:
            if not batch.num_rows:
                continue
            buckets = batch.column(0).to_numpy(zero_copy_only=False)
            # the rows arrive sorted by bucket: cut the batch where the bucket changes
            edges = [0, *(np.flatnonzero(buckets[1:] != buckets[:-1]) + 1).tolist()]
            for begin, end in zip(edges, edges[1:] + [batch.num_rows]):
                bucket = int(buckets[begin])
                if bucket != current:
                    flush()
                    current = bucket
                writer = writer or pq.ParquetWriter(sink, image_schema, compression="snappy")
                piece = batch.slice(begin, end - begin)
                writer.write_batch(pa.RecordBatch.from_arrays(piece.columns[1:], schema=image_schema))
        flush()
        yield pa.RecordBatch.from_pylist([{"image_key": key} for key in written], schema=out_schema)

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


def _clean_up(storage: Storage, change: ChangeStream, keep: set[str], staged_keys: list[str]) -> None:
    """After the commit: the applied staging and the image files no pointer references go (a failure here only
    leaves garbage, which the next apply's clean-up takes)."""
    image_root = f"{change.root}image/"
    victims = staged_keys + [info.key for info in storage.list(image_root, with_metadata=False)
                             if info.key not in keep]
    if victims:
        storage.delete(victims)
    if isinstance(storage, LocalStorage):  # Spark's writer leaves checksum and marker files listings do not show
        folder = storage.path(image_root.rstrip("/"))
        for top, _dirs, names in os.walk(folder, topdown=False) if os.path.isdir(folder) else ():
            for name in names:
                data = name[1:-4] if name.startswith(".") and name.endswith(".crc") else None
                if name in ("_SUCCESS", "._SUCCESS.crc") or (data and not os.path.exists(os.path.join(top, data))):
                    with contextlib.suppress(OSError):
                        os.remove(os.path.join(top, name))
            if top != folder:
                with contextlib.suppress(OSError):
                    os.rmdir(top)  # only when empty


def _gist(exc: BaseException) -> str:
    """The last line of a Python error carried by a Spark failure, or the first line of the message."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    for line in reversed(lines):
        head = line.split(":", 1)[0]
        if head.endswith(("Error", "Exception")) and not line.startswith(("at ", "File ")):
            return line
    return lines[0] if lines else type(exc).__name__


__all__ = ["BUCKET_COLUMN", "ApplyResult", "apply_changes"]
