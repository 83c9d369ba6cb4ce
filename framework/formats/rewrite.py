"""A stream's Parquet files rewritten into others: one schema for the folder, and small files merged.

After a sync has published a stream's files, :func:`settle_stream` makes its
folder read as one table and, when asked, merges its small files:

1. **Footers.** It lists the stream's files (the keys its layout names, any
   sync's) and reads each file's schema from its footer: the last 64 KiB,
   one ranged read (:meth:`~framework.storage.objects.Storage.read_tail`),
   a few at once on S3. 200 files take about 0.1 s on a local disk.
2. **One schema.** When the files' schemas differ (whatever made them:
   the API added a field, the manifest changed a type, a drift policy added
   a column), :func:`framework.formats.unified.unified_schema` computes the
   folder's schema, and every file that does not have it exactly is
   rewritten into it (its records as they were, a missing column null, a
   widened type cast, a conflicting one as text). A rewritten file keeps its
   key and its generation.
3. **Compaction** (``compact``): the files of one generation smaller than
   half of ``file_size_limit_mb`` are merged, in part-number order, into
   files of up to ``file_size_limit_mb`` each; a merged file takes the key of
   the first file it holds, and the others go.

Both are one kind of step, "write these files of the stream into that one"
(:class:`Rewrite`), published the way a sync publishes its files
(:mod:`framework.storage.state_store`): each new file is written complete
under the staging prefix, the connection state is saved listing the moves to
do and the keys each new file replaces (the streams' cursors as they were),
then each file is moved to its key and the files it replaces are deleted,
and the state is saved again without the list. A crash before the first save
leaves the old files (the staged ones are removed by the next sync); a crash
after it is finished by the next sync (:func:`~framework.storage.state_store.
finish_publishing`) before it reads anything. A reader that lists the folder
while the moves run may see a merged file next to the files it replaces for
that moment.

CSV, JSONL and Avro folders are left as they are (see docs/when-data-looks-wrong.md).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, BinaryIO, cast

import pyarrow as pa
from msgspec import Struct

from framework.errors import StorageError
from framework.formats.unified import conform, fits, unified_schema
from framework.storage import GENERATION_KEY, LocalStorage, ObjectInfo, Storage
from framework.storage.layout import StreamLayout
from framework.storage.state_store import STAGING_PREFIX, ConnectionState

if TYPE_CHECKING:
    from framework.models.destination import DestinationSettings, ParquetFormat

#: How much of a file's end is read first for its footer; a longer footer takes one more read.
FOOTER_GUESS = 64 * 1024
#: Footers read at once from S3 (a local disk reads them one after the other).
FOOTER_READERS = 8
_MIB = 1024 * 1024


class StreamFile(Struct, frozen=True):
    """One of a stream's files: its key, size, part number, generation and schema (from its footer)."""

    key: str
    size: int
    part_number: int
    generation: int | None
    schema: pa.Schema


class Rewrite(Struct, frozen=True):
    """Write the records of ``sources`` (keys, in order) into one file at ``target``, which replaces them all
    (``target`` is one of them, or a new key)."""

    sources: tuple[str, ...]
    target: str
    generation: int | None = None

    @property
    def replaces(self) -> list[str]:
        return [key for key in self.sources if key != self.target]


class Settled(Struct, frozen=True):
    """What :func:`settle_stream` did to a stream's folder: files before and after, files rewritten into the
    folder's schema and files merged away by compaction."""

    files_before: int = 0
    files_after: int = 0
    unified: int = 0
    merged: int = 0

    def as_dict(self) -> dict[str, int]:
        return {"files_before": self.files_before, "files_after": self.files_after, "unified": self.unified,
                "merged": self.merged}


# ------------------------------------------------------------------ footers


def footer_schema(storage: Storage, key: str) -> pa.Schema:
    """The Arrow schema of the Parquet file ``key`` from its footer (one or two ranged reads)."""
    import pyarrow.parquet as pq

    tail = storage.read_tail(key, FOOTER_GUESS)
    if tail is None:
        raise StorageError(f"{storage.uri(key)} went away while its stream's folder was read; run the sync again")
    if len(tail) < 12 or tail[-4:] != b"PAR1":
        raise StorageError(f"{storage.uri(key)} is not a Parquet file, but is named as one of its stream's files; "
                           "move it out of the stream's folder, then run the sync again")
    length = struct.unpack("<I", tail[-8:-4])[0] + 8
    if length > len(tail):
        tail = storage.read_tail(key, length) or b""
    try:
        return pq.read_schema(pa.BufferReader(tail[-length:]))
    except (pa.ArrowInvalid, OSError) as exc:
        raise StorageError(f"{storage.uri(key)}: its Parquet footer cannot be read ({exc}); move the file out of "
                           "the stream's folder, then run the sync again") from None


def stream_files(storage: Storage, layout: StreamLayout) -> list[StreamFile]:
    """The stream's files (any sync's), in part-number order, with their footers' schemas."""
    infos: list[tuple[int, ObjectInfo]] = []
    for info in storage.list(layout.scan_prefix, with_metadata=True):
        number = layout.part_number_of(info.key)
        if number is not None:
            infos.append((number, info))
    infos.sort(key=lambda item: (item[0], item[1].key))
    keys = [info.key for _, info in infos]
    if isinstance(storage, LocalStorage) or len(keys) < 2:
        schemas = [footer_schema(storage, key) for key in keys]
    else:
        with ThreadPoolExecutor(min(FOOTER_READERS, len(keys))) as pool:
            schemas = list(pool.map(lambda key: footer_schema(storage, key), keys))
    return [StreamFile(info.key, info.size, number, info.generation, schema)
            for (number, info), schema in zip(infos, schemas)]


# ------------------------------------------------------------------- plans


def compaction(files: Sequence[StreamFile], small_bytes: int, most_bytes: int) -> list[Rewrite]:
    """Merges of the files under ``small_bytes``: runs of them (part-number order, one generation each) into
    files of at most ``most_bytes`` (a file alone stays as it is); each merge takes its first file's key."""
    plans: list[Rewrite] = []
    by_generation: dict[int | None, list[StreamFile]] = {}
    for item in files:
        if item.size < small_bytes:
            by_generation.setdefault(item.generation, []).append(item)
    for generation, small in by_generation.items():
        runs: list[list[StreamFile]] = [[]]
        for item in small:
            if runs[-1] and sum(f.size for f in runs[-1]) + item.size > most_bytes:
                runs.append([])
            runs[-1].append(item)
        plans += [Rewrite(tuple(f.key for f in run), run[0].key, generation) for run in runs if len(run) > 1]
    return plans


def rewrites(files: Sequence[StreamFile], schema: pa.Schema, merges: Iterable[Rewrite] = ()) -> list[Rewrite]:
    """``merges``, then each file no merge takes that does not have ``schema`` exactly, rewritten in place."""
    plans = list(merges)
    taken = {key for plan in plans for key in plan.sources}
    plans += [Rewrite((f.key,), f.key, f.generation) for f in files
              if f.key not in taken and not fits(f.schema, schema)]
    return plans


# ----------------------------------------------------------------- writing


def write_staged(storage: Storage, plan: Rewrite, schema: pa.Schema, fmt: ParquetFormat, staging: str) -> str:
    """Write ``plan``'s sources, made to fit ``schema``, as one file under ``staging``; returns its staged key."""
    import pyarrow.parquet as pq

    from framework.formats.parquet import ParquetFileWriter

    staged = staging + plan.target
    metadata = {GENERATION_KEY: str(plan.generation)} if plan.generation is not None else {}
    target = storage.open_object(staged, metadata)
    with target:
        writer = ParquetFileWriter(fmt, schema, cast(BinaryIO, target))  # it only writes and tells, as rolling's
        for key in plan.sources:
            data = storage.read(key)
            if data is None:
                raise StorageError(f"{storage.uri(key)} went away while its stream's files were rewritten; "
                                   "run the sync again")
            for batch in pq.ParquetFile(pa.BufferReader(data)).iter_batches(batch_size=64 * 1024):
                writer.write(conform(batch, schema))
        writer.close()
        target.commit()
    return staged


def publish_rewrites(storage: Storage, connection: ConnectionState, save: Callable[[], None],
                     staged: Sequence[tuple[str, Rewrite]]) -> None:
    """Make each staged file take the place of the files its rewrite replaces, with the state listing the
    moves first (see the module docs). ``save()`` saves ``connection``."""
    if not staged:
        return
    connection.publishing = [{"staged": key, "key": plan.target, "replaces": plan.replaces} for key, plan in staged]
    save()
    for key, plan in staged:
        storage.move(key, plan.target)
        if plan.replaces:
            storage.delete(plan.replaces)
    connection.publishing = []
    save()


def settle_stream(storage: Storage, settings: DestinationSettings, connection: ConnectionState,
                  save: Callable[[], None], *, stream: str, namespace: str | None = "",
                  declared: Sequence[str] = (), compact: bool = False) -> Settled:
    """Rewrite a Parquet stream's folder into one schema, and merge its small files when ``compact``; see the
    module docs. ``declared`` are the stream's columns in its schema's order; ``save()`` saves ``connection``
    (its cursors untouched). Any other format is left as it is."""
    fmt = settings.format
    if fmt.format_type != "Parquet":
        return Settled()
    layout = StreamLayout.of(settings, stream, namespace)
    files = stream_files(storage, layout)
    if not files:
        return Settled()
    schema = unified_schema([f.schema for f in files], declared)
    limit = settings.file_size_limit_mb * _MIB
    merges = compaction(files, limit // 2, limit) if compact else []
    plans = rewrites(files, schema, merges)
    staging = f"{STAGING_PREFIX}rewrite-{connection.sync_id}/"
    staged: list[tuple[str, Rewrite]] = []
    try:
        for plan in plans:
            staged.append((write_staged(storage, plan, schema, fmt, staging), plan))
    except BaseException:
        storage.delete([key for key, _ in staged])
        raise
    publish_rewrites(storage, connection, save, staged)
    merged = sum(len(plan.replaces) for plan in plans)
    return Settled(len(files), len(files) - merged, sum(1 for p in plans if len(p.sources) == 1), merged)


__all__ = ["FOOTER_GUESS", "Rewrite", "Settled", "StreamFile", "compaction", "footer_schema", "publish_rewrites",
           "rewrites", "settle_stream", "stream_files", "write_staged"]
