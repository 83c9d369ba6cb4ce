"""The Spark pipeline: plan on the driver, read and write on the executors, commit state.

For each selected stream the driver plans the sync (reading parent streams
first where a SubstreamPartitionRouter needs them), spreads the units over
Spark tasks with ``mapInArrow``, and gets back one small row per unit. Only
when every task of the stream has committed its files does the driver fold
the finished units into the stream's state and save the connection state
next to the output: state never covers data that is not durably written.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable, Mapping, Sequence

import orjson

from framework.errors import FrameworkError
from framework.protocol.catalog import Selection
from framework.sink.state_store import ConnectionState, StateStore, merge_stream
from framework.streams.connector import Connector
from framework.streams.sync import StreamSync


@dataclass
class StreamResult:
    name: str
    records: int = 0
    pages: int = 0
    units: int = 0
    units_done: int = 0
    files: list[dict] = field(default_factory=list)
    nulled: int = 0
    seconds: float = 0.0
    state_saved: bool = False
    error: str | None = None

    @property
    def bytes(self) -> int:
        return sum(int(f.get("bytes", 0)) for f in self.files)


@dataclass
class PipelineResult:
    sync_id: int
    streams: list[StreamResult]
    spark_seconds: float = 0.0

    @property
    def failed(self) -> bool:
        return any(s.error for s in self.streams)


@dataclass(frozen=True)
class PipelineOptions:
    sync_mode: str = "append"  # or "overwrite"
    tasks_per_core: int = 2
    namespace: str = ""


def run_pipeline(connector: Connector, manifest_path: str, selections: Sequence[Selection],
                 settings: Any, spark: Any, *, given_states: Mapping[str, Any] | None = None,
                 options: PipelineOptions = PipelineOptions(),
                 progress: Callable[[str, StreamResult], None] | None = None) -> PipelineResult:
    from framework.sink.storage import storage_for
    from framework.sink.tasks import RESULT_DDL, TaskJob, encode_units, task_function

    storage = storage_for(settings)
    store = StateStore(storage)
    saved = store.load()
    connection = ConnectionState(saved.sync_id + 1, dict(saved.streams))
    with open(manifest_path, encoding="utf-8") as handle:
        manifest_text = handle.read()
    import os

    base_dir = os.path.dirname(os.path.abspath(manifest_path))
    destination = orjson.loads(settings.model_dump_json(by_alias=True))
    schemas = _all_schemas(connector)
    cores = max(1, int(spark.sparkContext.defaultParallelism))
    results = []
    for selection in selections:
        stream = connector.stream(selection.name)
        result = StreamResult(stream.name)
        results.append(result)
        started = time.perf_counter()
        generation = saved.generation(stream.name) + (1 if options.sync_mode == "overwrite" else 0)
        state_in = (given_states or {}).get(stream.name, saved.stream_state(stream.name))
        try:
            sync = StreamSync(stream, connector.config, state_in, incremental=selection.incremental,
                              clock=connector.context.clock)
            units = sync.plan()
            result.units = len(units)
            if progress:
                progress("planned", result)
            if units:
                tasks = max(1, min(len(units), cores * options.tasks_per_core))
                from framework.sink.layout import next_part_number

                job = TaskJob(
                    manifest_text=manifest_text, manifest_file=manifest_path, base_dir=base_dir,
                    config=dict(connector.config), stream=stream.name, schemas=schemas,
                    destination=destination, sync_id=connection.sync_id, generation_id=generation,
                    part_start=next_part_number(storage, settings, stream.name, options.namespace),
                    tasks=tasks, namespace=options.namespace, started_at=time.time(),
                )
                table = encode_units([(u, sync.prior_of(u)) for u in units])
                frame = spark.createDataFrame(table).repartitionByRange(tasks, "unit") if tasks > 1 else \
                    spark.createDataFrame(table).coalesce(1)
                rows = frame.mapInArrow(task_function(job), RESULT_DDL).toArrow().to_pylist()
                by_index = {u.index: u for u in units}
                for row in sorted(rows, key=lambda r: r["unit"]):
                    if row["files"]:
                        result.files.extend(orjson.loads(row["files"]))
                    if row["error"]:
                        result.error = result.error or row["error"]
                        continue
                    unit = by_index[row["unit"]]
                    latest = datetime.fromisoformat(row["latest"]) if row["latest"] else None
                    sync.observe(unit, latest, row["records"])
                    sync.done(unit)
                    result.records += row["records"]
                    result.pages += row["pages"]
                    result.nulled += row["nulled"]
                    result.units_done += 1
            state = sync.state(final=result.error is None)
            if options.sync_mode == "overwrite" and result.error is None:
                from framework.sink.files import delete_older_generations

                delete_older_generations(storage, settings, stream.name, options.namespace, generation)
            merge_stream(connection, stream.name, state, generation)
            store.save(connection, datetime.now(timezone.utc).isoformat())
            result.state_saved = True
        except FrameworkError as exc:
            result.error = result.error or connector.mask(str(exc))
        result.seconds = time.perf_counter() - started
        if progress:
            progress("done", result)
    return PipelineResult(connection.sync_id, results)


def _all_schemas(connector: Connector) -> dict[str, dict]:
    """Every stream's schema by name, parents of substreams included (executors may lack the files)."""
    from framework.partitions import parents_of

    found: dict[str, dict] = {}
    pending = list(connector.streams.values())
    while pending:
        stream = pending.pop()
        if stream.name in found:
            continue
        found[stream.name] = dict(stream.json_schema)
        if stream.router is not None:
            pending.extend(parent.stream for parent in parents_of(stream.router))
    return found


__all__ = ["PipelineOptions", "PipelineResult", "StreamResult", "run_pipeline"]
