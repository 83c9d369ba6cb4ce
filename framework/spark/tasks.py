"""What a Spark task runs: read some units of a stream, type them, write files.

A task gets a few units (picklable slices) and a :class:`TaskJob` that holds
everything else it needs: the manifest text, the config, the stream's schema
and the destination settings. It rebuilds the connector once per Python
worker, reads its units page by page, types each page into an Arrow batch,
writes the batches through a rolling writer, and commits the files only when
all its units are read. It answers with one small row per unit (records,
latest cursor value, whether it failed); the records themselves never go
back to the driver. A failure aborts the task's files: nothing partial
appears, and the driver's state does not move over those units.
"""

from __future__ import annotations

import gc
import pickle
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import orjson
import pyarrow as pa

RESULT_SCHEMA = pa.schema([
    ("unit", pa.int64()),
    ("records", pa.int64()),
    ("latest", pa.string()),  # ISO instant of the latest cursor value read in the unit
    ("error", pa.string()),
    ("files", pa.string()),  # JSON list of written files, on the task's first row
    ("nulled", pa.int64()),
    ("pages", pa.int64()),
])

# The same as a Spark DDL string (what ``mapInArrow`` takes).
RESULT_DDL = ", ".join(f"{f.name} {'bigint' if f.type == pa.int64() else 'string'}" for f in RESULT_SCHEMA)

UNITS_SCHEMA = pa.schema([("unit", pa.int64()), ("payload", pa.binary())])


@dataclass(frozen=True)
class TaskJob:
    manifest_text: str
    manifest_file: str
    base_dir: str | None
    config: Mapping[str, Any]
    stream: str
    schemas: Mapping[str, Mapping[str, Any]]  # every stream's schema by name (parents too)
    destination: Mapping[str, Any]  # DestinationSettings as JSON-able data
    sync_id: int
    generation_id: int
    part_start: int
    tasks: int
    namespace: str = ""
    started_at: float = 0.0  # epoch seconds of the sync's start, for object keys
    cdc_staging: str = ""  # realtime change data: the staging folder the typed records go to instead


_CONNECTORS: dict[tuple, Any] = {}


def _connector(job: TaskJob) -> Any:
    """The connector for this job, built once per Python worker."""
    key = (job.manifest_text, orjson.dumps(job.config, option=orjson.OPT_SORT_KEYS), job.stream)
    found = _CONNECTORS.get(key)
    if found is None:
        from framework.engine.connector import open_connector_text

        found = open_connector_text(job.manifest_text, job.config, file=job.manifest_file, base_dir=job.base_dir,
                                    schemas=job.schemas)
        _CONNECTORS.clear()
        _CONNECTORS[key] = found
    return found


def encode_units(units: list[tuple[Any, datetime | None]]) -> pa.Table:
    """Units (with the state each starts from) as the input table of the Spark job."""
    return pa.table({"unit": [u.index for u, _ in units],
                     "payload": [pickle.dumps(pair, protocol=pickle.HIGHEST_PROTOCOL) for pair in units]},
                    schema=UNITS_SCHEMA)


def run_task(job: TaskJob, batches: Iterator[pa.RecordBatch], task_index: int) -> Iterator[pa.RecordBatch]:
    from framework.engine.sync import read_unit
    from framework.formats import raw_batch
    from framework.formats.rolling import RollingWriter
    from framework.models.destination import DestinationSettings
    from framework.storage import storage_for
    from framework.storage.layout import PartNumbers
    from framework.typed import RecordConverter, parse_schema
    from framework.typed.raw_ids import random_uuids

    connector = _connector(job)
    stream = connector.stream(job.stream)
    settings = DestinationSettings.model_validate(job.destination)
    record_type = parse_schema(job.schemas[job.stream], stream=job.stream)
    converter = RecordConverter(record_type, stream=job.stream)
    storage = storage_for(settings)
    if job.cdc_staging:  # realtime change data: typed records to staging, the apply writes the output
        from framework.cdc.staging import staging_writer

        writer = staging_writer(storage, settings, job.cdc_staging, converter.schema, job.generation_id,
                                PartNumbers(0, job.tasks, task_index), job.started_at)
    else:
        writer = RollingWriter.for_stream(storage, settings, stream=job.stream, namespace=job.namespace,
                                          arrow_schema=converter.schema, avro_schema=converter.avro.schema,
                                          generation_id=job.generation_id, sync_id=job.sync_id,
                                          started_at=job.started_at, to_avro=converter.to_avro_records,
                                          part_numbers=PartNumbers(job.part_start, job.tasks, task_index))
    typed = settings.format.format_type in ("Parquet", "Avro", "replicant_csv", "replicant_json")
    rows: dict[str, list] = {name: [] for name in RESULT_SCHEMA.names}
    failed: str | None = None
    # Each page makes tens of thousands of short-lived objects, so the garbage collector runs often; frozen,
    # what lives now (modules, the connector, the writer) is not walked again by every older-generation
    # collection: it saved about 30 % of a task's CPU in bench/pipeline.py. Unfrozen when the task ends.
    gc.freeze()
    try:
        for batch in batches:
            for payload in batch.column("payload").to_pylist():
                unit, prior = pickle.loads(payload)
                count = pages = nulled = 0
                latest: datetime | None = None
                if failed is None:
                    try:
                        for records, page_latest in read_unit(stream, connector.config, unit, prior):
                            extracted_at = int(time.time() * 1000)
                            if typed:  # Avro and Parquet: typed by the stream's schema (the seed's rules)
                                writer.write(converter.convert(records, extracted_at_ms=extracted_at,
                                                               generation_id=job.generation_id, sync_id=job.sync_id))
                                nulled += converter.last_nulled
                            else:  # JSONL and CSV carry the record as it came
                                writer.write(raw_batch(records, random_uuids(len(records)), extracted_at,
                                                       job.generation_id, sync_id=job.sync_id))
                            count += len(records)
                            pages += 1
                            if page_latest is not None and (latest is None or page_latest > latest):
                                latest = page_latest
                    except Exception as exc:  # reported per unit; the task's files are aborted below
                        failed = connector.mask(str(exc) if str(exc) else type(exc).__name__)
                _append(rows, unit.index, count, latest, failed, pages, nulled)
        if failed is None:
            files = writer.commit()
        else:
            writer.abort()
            files = []
            # The units read before the failure shared the task's files, which are gone: they are not done.
            rows["error"] = [error or f"not written, another partition of its task failed: {failed}"
                             for error in rows["error"]]
    except BaseException:
        gc.unfreeze()
        writer.abort()
        raise
    gc.unfreeze()
    if rows["unit"]:
        rows["files"][0] = orjson.dumps([f.as_dict() for f in files]).decode()
    yield pa.RecordBatch.from_pydict(rows, schema=RESULT_SCHEMA)


def _append(rows: dict[str, list], unit: int, count: int, latest: datetime | None, error: str | None,
            pages: int, nulled: int) -> None:
    rows["unit"].append(unit)
    rows["records"].append(count)
    rows["latest"].append(latest.isoformat() if latest is not None else None)
    rows["error"].append(error)
    rows["files"].append(None)
    rows["nulled"].append(nulled)
    rows["pages"].append(pages)


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


__all__ = ["RESULT_DDL", "RESULT_SCHEMA", "TaskJob", "UNITS_SCHEMA", "encode_units", "run_task", "task_function"]
