"""What a Spark task runs: read some units of a stream, type them, write files.

A task gets a few units (picklable slices) and a :class:`TaskJob` that holds
everything else it needs: the connector as text (manifest, config, every
stream's schema) and the destination settings. The engine does the reading
(:func:`framework.engine.worker.read_group`: the connector built once per
Python worker, the units read page by page, ``TaskJob.readers`` of them at
once, each page typed into an Arrow batch); the task writes the batches
through a rolling writer and commits the files, *staged*, only when all its
units are read: complete, under a key of its own attempt
(:func:`~framework.storage.state_store.staging_prefix`) that no reader looks
at. It answers with one small row per unit
(:class:`~framework.engine.results.UnitResult`: records, latest cursor
value, whether it failed, and on the first the staged files); the records
themselves never go back to the driver. The driver alone makes files visible
(:func:`~framework.formats.rolling.publish`), together with the state that
covers them, so a task that outlives its driver leaves only staged files,
which the next sync removes. A failure aborts the task's files: nothing
partial appears, and the driver's state does not move over those units.
"""

from __future__ import annotations

import contextlib
import functools
import pickle
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import pyarrow as pa
from msgspec import Struct

from framework import collector, coordination
from framework.components.http.in_flight import Limit
from framework.components.records.file_upload import landing, stream_landing
from framework.engine.live_progress import SERVICE as PROGRESS
from framework.engine.live_progress import BackgroundSender, TaskTicker
from framework.engine.results import RESULT_SCHEMA, UnitResult, to_arrow
from framework.engine.worker import ConnectorSource, PageTyper, read_group, worker_connector
from framework.errors import StorageError
from framework.formats.rolling import RollingWriter
from framework.models.destination import DestinationSettings
from framework.storage import storage_for
from framework.storage.layout import PartNumbers, StreamLayout
from framework.storage.state_store import staging_prefix
from framework.tables.columns import stored_batch, stored_schema, to_table_types, with_table_types
from framework.typed import RecordConverter, parse_schema
from framework.values import replace

UNITS_SCHEMA = pa.schema([("unit", pa.int64()), ("payload", pa.binary())])


@functools.lru_cache(maxsize=1)
def result_struct() -> Any:
    """RESULT_SCHEMA as a Spark ``StructType``, built once: given to ``mapInArrow`` instead of the DDL text,
    which a Spark Connect client sends to the server to parse (one round trip more per job)."""
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(RESULT_SCHEMA)

#: The formats whose records are typed by the stream's schema; the others (JSONL, CSV) carry them as they came.
TYPED_FORMATS = ("Parquet", "Avro", "replicant_csv", "replicant_json", "delta", "iceberg")
#: The formats whose columns the schema drift policy shapes (keep: one more column; evolve: typed columns).
DRIFT_FORMATS = ("Parquet", "Avro", "delta", "iceberg")


class TaskJob(Struct, frozen=True):
    source: ConnectorSource  # the connector as text: the manifest, the config and every stream's schema
    stream: str
    destination: Mapping[str, Any]  # DestinationSettings as JSON-able data
    sync_id: int
    generation_id: int
    part_start: int
    tasks: int
    namespace: str = ""
    started_at: float = 0.0  # epoch seconds of the sync's start, for object keys
    cdc_staging: str = ""  # realtime change data: the staging folder the typed records go to instead
    start_state: Mapping[str, Any] | None = None  # a stream airbyte-cdk reads: the state its sync started from
    cursor_field: str | None = None  # the cursor field the configured catalog chose, where the stream allows it
    coordinator: coordination.CoordinatorAddress | None = None  # the driver's sync-wide services (one token, budget)
    readers: int = 1  # how many of its units a task reads at once (threads: engine/worker.py read_group)
    # the task's own limit of requests in flight where it cannot reach the driver's ledger (Spark Connect: a share)
    in_flight: Limit | None = None
    #: the columns earlier syncs added to the stream under the ``evolve`` schema drift policy (name, kind)
    evolved: tuple[tuple[str, str], ...] = ()
    #: a table format's stream (framework/tables): the key of the table's data folder, where the task writes its
    #: Parquet files directly (no staging: no reader sees them until the driver commits them to the table)
    table_data: str = ""
    #: the columns the table holds in another kind than the stream's schema says, with the table's types (an Arrow
    #: schema, serialized): written in those types, values that do not fit nulled (framework.tables.columns)
    table_types: bytes = b""


def drift_policy(settings: DestinationSettings, stream: str, *, cdc: bool = False) -> str:
    """The schema drift policy ``stream``'s files follow: the settings' for Parquet and Avro; ``drop`` (counted)
    for the change-data formats, whose image keeps the declared columns; JSONL and CSV carry records as they
    came (not typed, nothing counted)."""
    if settings.format.format_type in DRIFT_FORMATS and not cdc:
        return settings.schema_drift_for(stream)
    return "drop"


def encode_units(units: Iterable[Any]) -> pa.Table:
    """Units as the input table of the Spark job (each unit carries the state it starts from)."""
    units = list(units)
    return pa.table({"unit": [u.index for u in units],
                     "payload": [pickle.dumps(u, protocol=pickle.HIGHEST_PROTOCOL) for u in units]},
                    schema=UNITS_SCHEMA)


def _decode_units(batches: Iterator[pa.RecordBatch]) -> Iterator[Any]:
    for batch in batches:
        for payload in batch.column("payload").to_pylist():
            yield pickle.loads(payload)


def run_task(job: TaskJob, batches: Iterator[pa.RecordBatch], task_index: int) -> Iterator[pa.RecordBatch]:
    connector = worker_connector(job.source)
    if job.coordinator is None and job.in_flight is not None:  # no driver to share a ledger with: a share of it
        connector.limit_in_flight(job.in_flight)
    stream = connector.stream(job.stream).with_cursor_field(job.cursor_field)
    settings = DestinationSettings.model_validate(job.destination)
    record_type = parse_schema(job.source.schemas[job.stream], stream=job.stream)
    converter = RecordConverter(record_type, stream=job.stream,
                                drift=drift_policy(settings, job.stream, cdc=bool(job.cdc_staging)),
                                evolved=job.evolved)
    storage = storage_for(settings)
    if job.cdc_staging:  # realtime change data: typed records to staging, the apply writes the output
        # Imported here: framework.cdc loads pyarrow.parquet and the apply, which other tasks never need.
        from framework.cdc.staging import staging_writer

        writer = staging_writer(storage, settings, job.cdc_staging, converter.schema, job.generation_id,
                                PartNumbers(0, job.tasks, task_index), job.started_at)
    elif job.table_data:
        writer = _table_writer(storage, settings, job, converter, task_index)
    else:
        writer = RollingWriter.for_stream(storage, settings, stream=job.stream, namespace=job.namespace,
                                          arrow_schema=converter.schema, avro_schema=converter.avro.schema,
                                          generation_id=job.generation_id, sync_id=job.sync_id,
                                          started_at=job.started_at, to_avro=converter.to_avro_records,
                                          part_numbers=PartNumbers(job.part_start, job.tasks, task_index),
                                          staging=staging_prefix(job.sync_id, uuid.uuid4().hex[:16]))
    write: Callable[[pa.RecordBatch], None] = writer.write
    if job.table_data:
        write = _table_write(writer, converter, settings.format.format_type, _table_types(job))
    elif converter.drift == "evolve" and not job.cdc_staging:
        write = _rolling_on_new_columns(writer, converter)
    # Avro and Parquet: typed by the stream's schema (the seed's rules); JSONL and CSV carry the record as it came.
    typer = PageTyper(converter if settings.format.format_type in TYPED_FORMATS else None,
                      generation_id=job.generation_id, sync_id=job.sync_id)
    # Each page makes tens of thousands of short-lived objects: the collector as reading wants it while the task
    # reads (framework.collector.reading), put back when the task ends. Freezing what lives now (modules, the
    # connector, the writer) saved about 30 % of a task's CPU in bench/pipeline.py.
    try:
        with collector.reading():
            layout = StreamLayout.of(settings, job.stream, job.namespace, started_at=job.started_at,
                                     sync_id=job.sync_id)
            files_beside = stream_landing(storage, layout.directory)
            # a FileUploader's files go beside the stream's files; sync-wide services are the driver's
            ticker = _ticker(job)
            try:
                with landing(files_beside), coordination.attached(job.coordinator):
                    results = [r for r in read_group(connector, stream, _decode_units(batches), typer, write,
                                                      start_state=job.start_state, readers=job.readers,
                                                      ticker=ticker)
                               if isinstance(r, UnitResult)]
            finally:
                if ticker is not None:
                    ticker.close()
            failed = next((r.error for r in results if r.error), None)
            if failed is None:
                try:
                    files = writer.commit()
                except StorageError as exc:  # a full disk: each unit fails with where, nothing of the task appears
                    failed = str(exc)
                    results = [replace(r, error=failed) for r in results]
            if failed is not None:
                writer.abort()
                files = []
                # The units read before the failure shared the task's files, which are gone: they are not done.
                results = [r if r.error else replace(
                    r, error=f"not written, another partition of its task failed: {failed}") for r in results]
    except BaseException:
        writer.abort()
        raise
    if results:
        results[0] = replace(results[0], files=tuple(f.as_dict() for f in files))
    yield to_arrow(results)


def _table_types(job: TaskJob) -> dict[str, pa.DataType]:
    if not job.table_types:
        return {}
    return {f.name: f.type for f in pa.ipc.read_schema(pa.py_buffer(job.table_types))}


def _table_writer(storage: Any, settings: DestinationSettings, job: TaskJob, converter: RecordConverter,
                  task_index: int) -> RollingWriter:
    """The rolling writer of a table's data files: Parquet as for `--format parquet`, in the table's data folder,
    named by the sync, the task and its attempt (a task run again, or one outliving its driver, never takes another's
    name), each file appearing complete (a rename, or a completed upload); only the driver's commit makes them part
    of the table."""
    attempt = uuid.uuid4().hex[:12]

    def key(number: int) -> str:
        return f"{job.table_data}/part-{job.sync_id:05d}-{task_index:03d}-{attempt}-{number:05d}.parquet"

    schema = with_table_types(stored_schema(converter.schema, settings.format.format_type), _table_types(job))
    return RollingWriter(storage, key, settings.format, schema, None, job.generation_id,
                         settings.file_size_limit_mb * 1024 * 1024, PartNumbers(job.part_start, job.tasks, task_index))


def _table_write(writer: RollingWriter, converter: RecordConverter, format_type: str,
                 types: dict[str, pa.DataType]) -> Callable[[pa.RecordBatch], None]:
    """``writer.write`` of typed batches as the table stores them (framework.tables.columns): the format's types,
    and the table's where it holds a column in another kind; a batch whose schema grew (the ``evolve`` policy added
    a column) starts a new file, as for Parquet."""
    current = [converter.schema, stored_schema(converter.schema, format_type)]

    def write(batch: pa.RecordBatch) -> None:
        if converter.schema is not current[0]:
            current[:] = [converter.schema, stored_schema(converter.schema, format_type)]
            writer.reschema(with_table_types(current[1], types), None)
        typed, _ = to_table_types(stored_batch(batch, current[1]), types)
        writer.write(typed)

    return write
def _ticker(job: TaskJob) -> TaskTicker | None:
    """What tells the driver how far the task's group is while it reads (framework.engine.live_progress): its
    progress service, reached as the sync-wide services are; None where the task cannot reach the driver."""
    address = job.coordinator
    if address is None:
        return None

    def send(payload: tuple[Any, ...]) -> None:
        coordination.call(address, PROGRESS, payload, timeout=PROGRESS_TIMEOUT)

    return TaskTicker(job.stream, BackgroundSender(send))  # the read never waits for the driver


#: How long a task waits for the driver to take a progress report before its reporting stops (seconds).
PROGRESS_TIMEOUT = 10.0


def _rolling_on_new_columns(writer: RollingWriter, converter: RecordConverter) -> Callable[[pa.RecordBatch], None]:
    """``writer.write``, but a batch whose schema grew (a column the ``evolve`` policy added) starts a new file.

    Each batch is written as soon as ``converter`` made it, so the converter's schema is the batch's: it is a
    new object only when a column was added or widened."""
    current = [converter.schema]

    def write(batch: pa.RecordBatch) -> None:
        if converter.schema is not current[0]:
            writer.reschema(converter.schema, converter.avro.schema)
            current[0] = converter.schema
        writer.write(batch)

    return write


def warm_function(source: ConnectorSource):
    """The function handed to ``mapInArrow`` by the warm-up job (:func:`framework.spark.warmup.warmed`): in
    each Python worker it runs in, the connector of ``source`` is built (and kept, as a task keeps it:
    :func:`~framework.engine.worker.worker_connector`) and the writers' modules imported, so the sync's first
    tasks start reading at once. It answers one row per input row; a connector that cannot be built is left
    for the real task to report."""

    def warm(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import pyarrow.parquet  # noqa: F401 - what the writers of most formats load on their first file

        with contextlib.suppress(Exception):
            worker_connector(source)
        for batch in batches:
            yield pa.record_batch([pa.array([0] * batch.num_rows, pa.int64())], names=["warmed"])

    return warm


def task_function(job: TaskJob, task_index: int | None = None):
    """The function handed to ``DataFrame.mapInArrow``.

    ``task_index`` (0 to ``job.tasks - 1``) picks the task's part numbers; when
    None, the Spark partition's index is used.
    """

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        index = task_index
        if index is None:
            from pyspark import TaskContext

            context = TaskContext.get()
            index = context.partitionId() if context is not None else 0
        yield from run_task(job, batches, index)

    return run


__all__ = ["RESULT_SCHEMA", "TaskJob", "UNITS_SCHEMA", "encode_units", "result_struct", "run_task",
           "task_function", "warm_function"]
