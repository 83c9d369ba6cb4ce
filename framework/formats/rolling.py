"""A stream's output as a series of files that roll over at a size limit and appear together at commit.

:class:`RollingWriter` writes batches into the current file; once the file has
about ``size_limit_bytes`` it is finished (footer written, bytes handed to the
storage) and the next batch starts a new file with the next part number.
Nothing is visible until :meth:`RollingWriter.commit`, which commits the files
one after the other and returns what was written; :meth:`RollingWriter.abort`
drops them all. A file never shows under its final name before it is
complete. Every file carries its generation in the ``ab-generation-id``
metadata.

Commit is atomic per file, not for the set: if committing fails half way,
the files committed before the failure stay. Their records are complete
files of the sync's generation, so a retried sync that writes the same
records again duplicates them in append mode; overwrite mode removes them
with the older generations.

*Staged* writing (``staging``, a key prefix: what Spark tasks do) commits the
files complete under ``staging + key + ".staged"`` (a name no data glob such as
``**/*.parquet`` matches: :data:`framework.output_names.INTERNAL_SUFFIX`), where no reader and no next sync
looks; :meth:`WrittenFile.staged` names them and :func:`publish` (the
driver's call) moves them to their keys. A file only its writer knew of (a
task that outlived its driver) stays staged and is removed by the next sync
(:func:`framework.storage.state_store.clear_staging`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, BinaryIO, cast

import pyarrow as pa
from msgspec import Struct
from msgspec.structs import asdict

from framework.errors import StorageError
from framework.formats import FormatWriter, open_format_writer
from framework.output_names import INTERNAL_SUFFIX
from framework.storage import GENERATION_KEY, ObjectWriter, Storage
from framework.storage.layout import StreamLayout
from framework.typed.envelope import DATA, TEXT_ENVELOPE

if TYPE_CHECKING:
    from framework.models.destination import DestinationSettings, OutputFormat

_MIB = 1024 * 1024


class WrittenFile(Struct, frozen=True):
    """A committed file: its key, where it is, how many records and bytes, its part number, and where it was
    committed when it was staged (it is under ``key`` only once :func:`publish` moved it)."""

    key: str
    uri: str
    records: int
    bytes: int
    part_number: int
    staged: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class _Pending(Struct):
    key: str
    part_number: int
    target: ObjectWriter
    writer: FormatWriter
    records: int = 0
    staged: str = ""


class RollingWriter:
    """Writes a stream's batches into files of about ``size_limit_bytes`` each; see the module docs."""

    def __init__(self, storage: Storage, layout_fn: Callable[[int], str], fmt_settings: OutputFormat,
                 arrow_schema: pa.Schema | None, avro_schema: Mapping | None, generation_id: int,
                 size_limit_bytes: int, part_numbers: Iterable[int], *, columns: Sequence[str] = (),
                 to_avro: Callable[[pa.RecordBatch], Iterable[dict]] | None = None,
                 metadata: Mapping[str, str] | None = None, staging: str = ""):
        self.storage = storage
        self.layout_fn = layout_fn
        self.fmt_settings = fmt_settings
        self.arrow_schema = arrow_schema
        self.avro_schema = avro_schema
        self.size_limit_bytes = max(1, size_limit_bytes)
        self._numbers: Iterator[int] = iter(part_numbers)
        self._columns = tuple(columns)
        self._to_avro = to_avro
        self._metadata = {**(metadata or {}), GENERATION_KEY: str(generation_id)}
        self.staging = staging
        self._current: _Pending | None = None
        self._finished: list[_Pending] = []
        self._closed = False

    @classmethod
    def for_stream(cls, storage: Storage, settings: DestinationSettings, *, stream: str, namespace: str | None = "",
                   arrow_schema: pa.Schema | None, avro_schema: Mapping | None, generation_id: int,
                   part_numbers: Iterable[int], sync_id: int = 0,
                   started_at: datetime | float | None = None, columns: Sequence[str] | None = None,
                   to_avro: Callable[[pa.RecordBatch], Iterable[dict]] | None = None,
                   staging: str = "") -> RollingWriter:
        """A writer laid out and sized by ``DestinationSettings`` (path format, file name pattern, format, limit).

        ``columns`` (CSV with root level flattening) default to the data
        fields of ``arrow_schema``, in order; ``staging`` commits the files
        staged (see the module docs).
        """
        layout = StreamLayout.of(settings, stream, namespace, started_at=started_at, sync_id=sync_id)
        if columns is None:
            columns = [n for n in arrow_schema.names if n not in TEXT_ENVELOPE and n != DATA] \
                if arrow_schema is not None else []
        return cls(storage, layout.key, settings.format, arrow_schema, avro_schema, generation_id,
                   settings.file_size_limit_mb * _MIB, part_numbers, columns=columns, to_avro=to_avro,
                   staging=staging)

    # ------------------------------------------------------------ writing

    def write(self, batch: pa.RecordBatch) -> None:
        """Add a batch to the current file, starting one if needed; finish the file once it is big enough."""
        if self._closed:
            raise RuntimeError("this RollingWriter was already committed or aborted")
        if batch.num_rows == 0:
            return
        current = self._current or self._open()
        try:
            current.writer.write(batch)
            current.records += batch.num_rows
            if current.writer.bytes_written >= self.size_limit_bytes:
                self._finish()
        except OSError as exc:  # a full disk, say: one error naming the file
            raise self._not_written(current.key, exc) from exc

    def _open(self) -> _Pending:
        number = next(self._numbers)
        key = self.layout_fn(number)
        staged = self.staging + key + INTERNAL_SUFFIX if self.staging else ""  # no data glob matches it
        target = self.storage.open_object(staged or key, self._metadata)
        try:
            # the format writers only write to (and tell) the sink, which an ObjectWriter does
            writer = open_format_writer(self.fmt_settings, self.arrow_schema, self.avro_schema, cast(BinaryIO, target),
                                        columns=self._columns, to_avro=self._to_avro)
        except BaseException:
            target.abort()
            raise
        self._current = _Pending(key, number, target, writer, staged=staged)
        return self._current

    def _finish(self) -> None:
        current, self._current = self._current, None
        if current is None:
            return
        self._finished.append(current)
        current.writer.close()
        current.target.seal()

    def reschema(self, arrow_schema: pa.Schema | None, avro_schema: Mapping | None) -> None:
        """Batches of another schema follow (the ``evolve`` policy added a column): the current file is finished
        as it is, and the next batch starts a new one with the new schema, so no file mixes two schemas and
        no value is lost."""
        if self._closed:
            raise RuntimeError("this RollingWriter was already committed or aborted")
        try:
            self._finish()
        except OSError as exc:
            raise self._not_written(self._finished[-1].key if self._finished else "", exc) from exc
        self.arrow_schema, self.avro_schema = arrow_schema, avro_schema

    @property
    def files_started(self) -> int:
        return len(self._finished) + (1 if self._current else 0)

    # ------------------------------------------------------ commit / abort

    def commit(self) -> list[WrittenFile]:
        """Finish the current file and make every file appear; returns them in the order written."""
        if self._closed:
            raise RuntimeError("this RollingWriter was already committed or aborted")
        written: list[WrittenFile] = []
        key = self._current.key if self._current else ""
        try:
            self._finish()
            for pending in self._finished:
                key = pending.key
                pending.target.commit()
                written.append(WrittenFile(pending.key, self.storage.uri(pending.key), pending.records,
                                           pending.target.bytes_written, pending.part_number, pending.staged))
        except OSError as exc:  # a full disk, say: nothing of this writer appears, and one error names the file
            self.abort()
            raise self._not_written(key, exc) from exc
        except BaseException:
            self.abort()
            raise
        self._closed = True
        return written

    def _not_written(self, key: str, exc: OSError) -> StorageError:
        return StorageError(f"{self.storage.uri(key)} could not be written ({exc.strerror or exc}); nothing "
                            "of the partitions it held was kept, and their state stays as it was")

    def abort(self) -> None:
        """Drop every file not committed yet. Safe to call more than once."""
        if self._closed:
            return
        self._closed = True
        current = self._current
        pending = self._finished + ([current] if current else [])
        self._current, self._finished = None, []
        failure: BaseException | None = None
        if current is not None:  # close the format writer first, so nothing writes to the aborted object later
            try:
                current.writer.close()
            except Exception:  # noqa: BLE001 - its bytes are being thrown away anyway
                pass
        for item in pending:
            try:
                item.target.abort()
            except Exception as exc:  # noqa: BLE001 - keep aborting the others; the first failure is raised after
                failure = failure or exc
        if failure is not None:
            raise failure

    def __enter__(self) -> RollingWriter:
        return self

    def __exit__(self, kind: Any, exc: Any, tb: Any) -> None:
        if kind is not None:
            self.abort()


def publish(storage: Storage, files: Iterable[Mapping[str, Any]]) -> int:
    """Move each staged file (a :meth:`WrittenFile.as_dict` with ``staged``) to its key; returns how many moved.

    Files not staged are skipped; one moved already (a publication finished
    again after a crash) counts as done.
    """
    moved = 0
    for item in files:
        staged = item.get("staged")
        if staged and storage.move(str(staged), str(item["key"])):
            moved += 1
    return moved


def delete_older_generations(storage: Storage, layout: StreamLayout | DestinationSettings, stream: str | None = None,
                             namespace: str | None = "", generation: int = 0) -> list[str]:
    """Delete the stream's files of generations before ``generation`` (and files with no generation).

    ``layout`` is a :class:`StreamLayout`, or ``DestinationSettings`` with the
    ``stream`` name and namespace. Only keys that match the stream's layout
    are touched. Returns the deleted keys.
    """
    if not isinstance(layout, StreamLayout):
        if stream is None:
            raise TypeError("delete_older_generations needs a StreamLayout, or the settings with a stream name")
        layout = StreamLayout.of(layout, stream, namespace)
    victims = [info.key for info in storage.list(layout.scan_prefix, with_metadata=True)
               if layout.part_number_of(info.key) is not None
               and (info.generation is None or info.generation < generation)]
    if victims:
        storage.delete(victims)
    return victims


__all__ = ["RollingWriter", "WrittenFile", "delete_older_generations", "publish"]
