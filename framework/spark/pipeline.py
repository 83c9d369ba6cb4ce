"""The Spark pipeline: plan on the driver, read and write on the executors, commit state.

For each selected stream the driver plans the sync (reading parent streams
first where a SubstreamPartitionRouter needs them) and splits the units into
a few contiguous groups, one Spark task each. The groups run as concurrent
one-task Spark jobs (``mapInArrow``); each answers with one small row per
unit and the files it wrote, *staged*: complete, under a key of the task
attempt that no reader and no later sync reads. Only the driver makes files
visible. As soon as a group is back, it folds the group's units into the
stream's state and saves the connection state, which lists the group's
staged files as still to publish; then it moves them to their final keys
(a rename locally, a server-side copy on S3) and the next save drops the
list.

Why a crash at any point neither loses nor duplicates (beyond the units in
flight):

* before the state is saved: the group's files are staged only, the state
  does not cover its units; the next run reads them again and removes the
  staged files.
* after the save, before or during the moves: the next run finds the list
  in the saved state and finishes the moves first (a move done already is
  skipped), so the files its state covers are all visible, once.
* a task that outlives its killed driver (a zombie) can only stage: no
  state lists its files, so the next run removes them and reads its units
  again.
* groups that finish ahead of an unfinished one: the state records the
  finished windows beyond the first unfinished one (Airbyte's ``date-range``
  slices, :mod:`framework.components.incremental.date_ranges`; per partition,
  each partition's own entry), so the next run reads only what was in flight.

Planning and grouping the units (:mod:`framework.engine.plan`), reading them
in the tasks (:mod:`framework.engine.worker`) and folding their results into
the state (:mod:`framework.engine.results`) are the engine's; what is Spark's
is here and in :mod:`framework.spark.tasks`: the jobs, their job group, and
cancelling them when the sync is interrupted.

Overwrite mode reads everything again and deletes the stream's older
generations once every group succeeded. The new generation is saved before
any file is written, so files of an overwrite that was killed belong to a
generation the next overwrite deletes.
"""

from __future__ import annotations

import contextlib
import itertools
import queue
import threading
import time
import uuid
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent import futures
from concurrent.futures import Future
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

import orjson
from msgspec import Struct, field

from framework import coordination
from framework.components.http.in_flight import SERVICE as IN_FLIGHT
from framework.components.http.in_flight import Limit, Pace
from framework.engine.connector import Connector
from framework.engine.live_progress import SERVICE as LIVE_PROGRESS
from framework.engine.live_progress import LiveTally, ticking
from framework.engine.plan import STATE_SAVE_SECONDS, Sync, contiguous_groups, lazy_groups, open_sync
from framework.engine.report import StreamReport, any_failed
from framework.engine.results import UnitResult, failed_group, fold_results, from_arrow
from framework.engine.selection import Selection
from framework.engine.time_left import unit_work
from framework.engine.worker import ConnectorSource
from framework.errors import ConfigError, FrameworkError
from framework.formats.rewrite import Settled, settle_stream
from framework.formats.rolling import publish
from framework.models.destination import DestinationSettings
from framework.spark import connect
from framework.spark.output_start import prepare_output, warn_untracked
from framework.spark.replacing import mark_replacing, replace_older
from framework.spark.scheduling import schedule_groups
from framework.spark.session import SessionStart
from framework.spark.table_output import StreamTable
from framework.spark.tasks import TaskJob, drift_policy, encode_units, result_struct, run_task, task_function
from framework.spark.warmup import Reading, WarmUp, spark_wanted
from framework.storage import Storage, storage_for
from framework.storage.drift_store import EvolvedColumns, with_evolved_columns
from framework.storage.layout import next_part_number
from framework.storage.lease import Lease, holding
from framework.storage.state_store import (
    CatalogStore,
    ConnectionState,
    StateStore,
    clear_staging,
    configured_entry,
    merge_stream,
)
from framework.tables.factory import is_table_format
from framework.typed import RecordConverter, parse_schema
from framework.typed.drift import merge_evolved
from framework.values import replace

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from framework.cdc.plan import ChangeStream


class StreamResult(StreamReport):
    """A stream's report plus what the pipeline wrote: units done, files, nulled values, whether state was saved."""

    units_done: int = 0
    files: list[dict] = field(default_factory=list)
    nulled: int = 0
    state_saved: bool = False
    # a local session started in the background: when Spark was ready for groups (epoch seconds) and the
    # records of the sync's groups done by then (the "spark_ready" progress event; bench/peers.py)
    spark_ready_at: float | None = None
    records_before_spark: int = 0
    folder: Settled = field(default_factory=Settled)  # the stream's folder after the sync: one schema, merged files
    # the time left (framework.engine.time_left): the work planned (a datetime window weighs the seconds it spans,
    # any other unit 1), the work of the units done, and whether the plan is whole (no more units to come)
    work: float = 0.0
    work_done: float = 0.0
    planned_all: bool = False
    # schema drift (framework/typed/drift.py): the stream's policy, the records with undeclared fields, each
    # field's values by path, and the columns the evolve policy typed (name, kind)
    drift_policy: str = "drop"
    drifted: int = 0
    undeclared: dict[str, int] = field(default_factory=dict)
    evolved: tuple[tuple[str, str], ...] = ()
    # a table format's stream (framework/tables): its commits, the columns they added, the orphans removed
    # before it, and with --compact its files before and after
    table_commits: int = 0
    table_added: tuple[str, ...] = ()
    orphans_removed: int = 0
    table_files: tuple[int, int] | None = None

    @property
    def bytes(self) -> int:
        return sum(int(f.get("bytes", 0)) for f in self.files)


class PipelineResult(Struct):
    sync_id: int
    streams: list[StreamResult]
    spark_seconds: float = 0.0
    #: the requests in flight of the sync: its limit, the most at once, the 429s and the level they left
    pace: Pace | None = None

    @property
    def failed(self) -> bool:
        return any_failed(self.streams)


#: The most units one task reads at once (its threads), whatever the limit of requests in flight.
MOST_READERS = 64


class PipelineOptions(Struct, frozen=True):
    # or "overwrite": read everything again, then delete the older generations; "append_dedup" lands as append
    # (normalization dedups); a Selection's own destination_sync_mode wins (framework.sync_modes)
    sync_mode: str = "append"
    tasks_per_core: int = 2
    namespace: str = ""
    services_host: str | None = None  # where the tasks reach the driver's services (framework.spark.connect)
    # while a local session starts (a SessionStart), the driver reads groups itself (framework.spark.scheduling)
    driver_reads: bool = True
    #: the most requests in flight across the sync (``--concurrency``: a number or "auto"; None: the manifest's)
    concurrency: int | str | None = None
    compact: bool = False  # --compact: merge each stream's small files after its sync (framework.formats.rewrite)
    wait_for_lock: float | None = None  # --wait-for-lock: seconds to wait for a sync holding the output's lease

    def __post_init__(self) -> None:
        if self.sync_mode not in ("append", "overwrite", "append_dedup"):
            raise ConfigError(f"sync mode {self.sync_mode!r} is not known; use append, overwrite or append_dedup")
        if self.tasks_per_core < 1:
            raise ConfigError(f"tasks_per_core is {self.tasks_per_core}; give 1 or more")


class _Run(Struct):
    """What every stream of one pipeline run shares."""

    connector: Connector
    session: Future[SparkSession]  # done, or (driver_reads) still starting
    settings: DestinationSettings
    storage: Storage
    store: StateStore
    connection: ConnectionState
    source: ConnectorSource  # what the tasks rebuild the connector from
    destination: dict[str, Any]  # the settings as JSON-able data, for the tasks
    cores: int
    options: PipelineOptions
    coordinator: coordination.CoordinatorAddress | None = None  # the driver's sync-wide services, for the tasks
    driver_reads: bool = False  # the driver reads groups until the session is up
    ready_at: float | None = None  # driver_reads: when Spark became ready for groups (epoch seconds)
    records_at_ready: int = 0  # the records of the groups done by then
    ready_told: bool = False  # the "spark_ready" progress event went out
    # driver_reads: done once the session is up and its Python workers are warm (warmed); else the session
    ready: Future[SparkSession] = field(default_factory=Future)
    reading: Reading | None = None  # driver_reads: how far the stream being synced is (Reading.worth_warming)
    warm_up: WarmUp | None = None  # driver_reads: Spark's warm-up, considered again after each group
    start: SessionStart | None = None  # driver_reads: the session's start, paused while Spark is not wanted
    limit: Limit = field(default_factory=Limit.default)  # the most requests in flight across the sync
    evolved: EvolvedColumns | None = None  # the columns the evolve schema drift policy added, by stream
    lease: Lease | None = None  # this sync's lease on the output (framework.storage.lease)
    live: LiveTally = field(default_factory=LiveTally)  # the running groups' progress, told by their tasks
    # held while a progress event is told and while a group's results are folded: the ticker's thread never
    # tells a stream half folded, and the reporters are called one at a time
    told: threading.RLock = field(default_factory=threading.RLock)

    @property
    def spark(self) -> SparkSession:
        """The session, once it is up (this waits for it, letting a held start go on first)."""
        if self.start is not None:
            self.start.resume()
        return self.session.result()

    def save(self, name: str, state: Mapping[str, Any] | None, generation: int) -> None:
        merge_stream(self.connection, name, state, generation)
        self.store.save(self.connection, datetime.now(timezone.utc).isoformat())


def run_pipeline(connector: Connector, manifest_path: str, selections: Sequence[Selection],
                 settings: DestinationSettings, spark: SparkSession | SessionStart, *,
                 given_states: Mapping[str, Any] | None = None,
                 options: PipelineOptions = PipelineOptions(),
                 progress: Callable[[str, StreamResult], None] | None = None,
                 warn: Callable[[str], None] | None = None) -> PipelineResult:
    """Sync ``selections`` into the destination of ``settings`` on ``spark``; see the module docs.

    ``spark`` may be a :class:`SessionStart` still starting: on a local master (and unless
    ``options.driver_reads`` is off) the driver then reads groups itself until it is up
    (:mod:`framework.spark.scheduling`), and a run that never needs it does not wait for it;
    otherwise the run waits for the session first.

    ``warn(text)`` says what the user should know before the sync runs (default: a
    :class:`ServicesNotShared` warning): today, that a Spark Connect sync runs without the
    driver's sync-wide services (:func:`framework.spark.connect.services_bind`).

    ``given_states`` (stream name -> state) replaces the state saved next to the
    output for those streams (not in overwrite mode, which reads everything
    again). ``progress(event, result)`` is called with
    ``"planned"`` once a stream's units are known, ``"group"`` each time a
    group of units comes back (records, pages and units done so far) and
    ``"done"`` at its end; and ``"tick"`` every :data:`TICK_SECONDS` while the stream's groups run, with the
    records, pages and units its running groups' tasks told so far added
    (:mod:`framework.engine.live_progress`). The calls come one at a time, from this thread or the ticker's.

    One sync at a time writes an output: the run holds its lease (:mod:`framework.storage.lease`) from here to
    its end, or raises :class:`~framework.storage.lease.OutputBusy` (waiting ``options.wait_for_lock`` first).
    """
    storage = storage_for(settings)
    tell = warn if warn is not None else (lambda text: warnings.warn(text, OutputNotice, stacklevel=3))
    with holding(storage, options.wait_for_lock, warn=tell) as lease:
        return _run_held(connector, manifest_path, selections, settings, spark, storage, lease, tell,
                         given_states=given_states, options=options, progress=progress, warn=warn)


class OutputNotice(UserWarning):
    """What a sync says of its output: a lease waited for or taken over, data the state does not know of."""


def _run_held(connector: Connector, manifest_path: str, selections: Sequence[Selection],
              settings: DestinationSettings, spark: SparkSession | SessionStart, storage: Storage,
              lease: Lease | None, tell: Callable[[str], None], *, given_states: Mapping[str, Any] | None,
              options: PipelineOptions, progress: Callable[[str, StreamResult], None] | None,
              warn: Callable[[str], None] | None) -> PipelineResult:
    storage.remove_stale_temporaries()  # what killed tasks and interrupted runs left, never a live writer's
    store = StateStore(storage)
    saved = store.load()
    # A driver that died between saving a state and publishing the files it covers: publish them now;
    # whatever else is staged (tasks that outlived their driver, failed attempts) no state covers.
    prepare_output(storage, store, saved, settings, options.namespace, tell)
    if not is_table_format(settings):  # a table's own commits say what it holds (framework.spark.table_output)
        warn_untracked(storage, settings, selections, saved, options.sync_mode, options.namespace, given_states,
                       tell)
    with open(manifest_path, encoding="utf-8") as handle:
        manifest_text = handle.read()
    if isinstance(spark, SessionStart):
        session, early = spark.future, options.driver_reads and spark.plan.local
    else:
        session, early = Future(), False
        session.set_result(spark)
    early = early and not session.done()
    run = _Run(
        connector=connector, session=session, settings=settings, storage=storage, store=store,
        connection=ConnectionState(saved.sync_id + 1, {name: dict(entry) for name, entry in saved.streams.items()}),
        source=ConnectorSource.of_connector(connector, manifest_path, manifest_text),
        destination=orjson.loads(settings.model_dump_json(by_alias=True)),
        cores=0, options=options, driver_reads=early,
    )
    run.ready = session
    run.lease = lease
    if progress is not None:
        progress = _one_at_a_time(progress, run.told)
    run.limit = connector.in_flight_limit(options.concurrency)
    connector.limit_in_flight(run.limit)  # the driver's ledger: its reads and every task's hold its permits
    # a local master's parallelism is known before it starts; any other is asked (waiting for the session)
    run.cores = spark.parallelism() if early and isinstance(spark, SessionStart) else \
        connect.default_parallelism(run.spark)
    # the columns evolve added stay in the landed catalog (older files hold them) whatever the policy now
    run.evolved = evolved = EvolvedColumns(storage)
    CatalogStore(storage).merge([with_evolved_columns(
        configured_entry(connector.stream(s.name).with_cursor_field(s.cursor_field), s.incremental,
                        s.destination_sync_mode or options.sync_mode),
        evolved.of(s.name)) for s in selections
    ])
    warm_tag = f"run-manifest-warm-up-{uuid.uuid4().hex[:12]}"
    results: list[StreamResult] = []
    over = threading.Event()  # the run has ended: a session up from now on is not warmed up
    warm_up: WarmUp | None = None
    if early:  # the driver reads until Spark's workers are ready too, not only its JVM
        run.start = spark if isinstance(spark, SessionStart) else None
        warm_up = WarmUp(session, run.source, run.cores, warm_tag, over,
                         worth=lambda: spark_wanted(run.reading, run.start))
        run.ready = warm_up.ready
        run.warm_up = warm_up

        def ready(_: Future[SparkSession]) -> None:
            run.records_at_ready = sum(r.records for r in results)
            run.ready_at = time.time()

        run.ready.add_done_callback(ready)
    # A local master's tasks run on this machine: loopback (as connect.services_bind says), known before it starts.
    bind = (("0.0.0.0", options.services_host) if options.services_host else ("127.0.0.1", None)) if early \
        else connect.services_bind(run.spark, options.services_host)
    # The requests in flight need no warning: each task then keeps to its share of the level (TaskJob.in_flight).
    shared = [name for name in connector.context.services if name != IN_FLIGHT]
    if bind is None and shared:  # Spark Connect whose tasks may not reach this client
        text = connect.no_services_warning(run.spark, shared)
        if warn is not None:
            warn(text)
        else:
            warnings.warn(text, ServicesNotShared, stacklevel=2)
    # Without a coordinator (bind is None) each task keeps its own services.
    handlers = {**connector.context.services, LIVE_PROGRESS: run.live.report}  # and the tasks' progress reports
    serving = (coordination.Coordinator(handlers, host=bind[0], advertised=bind[1])
               if bind is not None else contextlib.nullcontext(None))
    with serving as coordinator:
        run.coordinator = coordinator.address if coordinator is not None else None
        try:
            _sync_streams(run, selections, saved, given_states, progress, results)
        finally:
            over.set()
            if warm_up is not None:
                warm_up.consider()  # a warm-up never started: the session is ready as it is
            # A start held or paused stays so: whoever needs the session next lets it go on
            # (SessionStart.session), else it is abandoned, never launched if it was not yet.
            if session.done() and not run.ready.done():  # all read on the driver: the warm-up is not needed
                with contextlib.suppress(Exception):
                    connect.cancel_jobs(session.result(), warm_tag)
                # and its thread ends before this process may: one still in a py4j call while the interpreter
                # finalizes aborts the process (PyGILState_Release)
                futures.wait([run.ready], timeout=60)
    clear_staging(storage)  # every file is published: what is left are failed attempts' (and empty folders)
    return PipelineResult(run.connection.sync_id, results, pace=connector.pace())


class ServicesNotShared(UserWarning):
    """The sync runs without the driver's sync-wide services: its tasks cannot be assumed to reach it."""


def _sync_streams(run: _Run, selections: Sequence[Selection], saved: ConnectionState,
                  given_states: Mapping[str, Any] | None, progress: Callable[[str, StreamResult], None] | None,
                  results: list[StreamResult]) -> None:
    connector = run.connector
    for number, selection in enumerate(selections, 1):
        result = StreamResult(selection.name)
        results.append(result)
        if run.driver_reads:
            run.reading = Reading(result, time.monotonic(), more_streams=number < len(selections))
        started = time.perf_counter()
        try:
            # its stream groups: every Spark job of this stream has ended (see _run_groups) before the gate opens
            with connector.groups.reading(selection.name):
                _sync_stream(run, selection, saved, given_states or {}, result, progress)
        except FrameworkError as exc:
            result.error = result.error or connector.mask(str(exc))
        result.seconds = time.perf_counter() - started
        if progress:
            progress("done", result)


def _sync_stream(run: _Run, selection: Selection, saved: ConnectionState, given_states: Mapping[str, Any],
                 result: StreamResult, progress: Callable[[str, StreamResult], None] | None) -> None:
    connector, options = run.connector, run.options
    stream = connector.stream(selection.name).with_cursor_field(selection.cursor_field)  # the catalog's choice
    _check_schema(run, stream.name)
    change = _realtime_stream(run, stream, selection.incremental)
    if change is not None and run.reading is not None:
        run.reading.spark_after = True  # its apply runs on Spark: the session's start is never held for it
    overwrite = (selection.destination_sync_mode or options.sync_mode) == "overwrite"
    result.drift_policy = drift_policy(run.settings, stream.name, cdc=change is not None)
    generation = saved.generation(stream.name) + (1 if overwrite else 0)
    # An overwrite deletes every older file once it succeeds, so it must read everything again.
    state_in = None if overwrite else given_states.get(stream.name, saved.stream_state(stream.name))
    table: StreamTable | None = None
    if is_table_format(run.settings):  # the table's last commit holds the state: it wins over the state file
        table, committed = _open_table(run, stream.name, overwrite, generation, result)
        if not overwrite and stream.name not in given_states:
            state_in = committed
    sync = open_sync(connector, stream, state_in, incremental=selection.incremental)
    lanes = run.cores * options.tasks_per_core
    # Groups made as the plan streams from parent pages (bounded driver memory), finer while the driver reads
    # (_group_count); realtime change data stages by task number, so its plan is split whole into one group
    # per task.
    # A group holds at least twice as many units as the sync may keep requests in flight, where the plan allows:
    # its task reads that many at once (TaskJob.readers), so against a slow API one group alone keeps the limit
    # busy, for two rounds at least before its last units run alone (the driver reads its groups one by one).
    # (With no level set, airbyte-cdk's 2, the groups are as fine as the lanes make them: small groups save
    # the state of more windows while one of them is slow.)
    readers = min(run.limit.ceiling, MOST_READERS)
    least = 2 * readers if run.limit.said != "default" else 1
    counted = _counted(sync.units(), result, run.reading, stream.cursor)
    groups: Iterable[list[Any]] = lazy_groups(counted, _group_count(run), min_size=least) \
        if change is None else contiguous_groups(list(counted), lanes)
    iter_groups = iter(groups)
    # a plan of at most `lanes` groups runs them all at once, one lane each (its files numbered 0, 1, 2, ...)
    head = [group for group in itertools.islice(iter_groups, lanes + 1) if group]
    if len(head) <= lanes:
        lanes = len(head)
    if progress:
        progress("planned", result)
    if overwrite:  # before any file of the new generation exists (the cursor state stays as it was)
        run.save(stream.name, saved.stream_state(stream.name), generation)
    files: list[dict[str, Any]] | None = None  # a table's files after its last commit (_read_groups)
    if head:
        job = TaskJob(
            source=run.source.with_query_properties(connector, stream.name), stream=stream.name,
            destination=run.destination,
            sync_id=run.connection.sync_id, generation_id=generation,
            part_start=next_part_number(run.storage, run.settings, stream.name, options.namespace),
            tasks=lanes, namespace=options.namespace, started_at=time.time(),
            cdc_staging=change.staging_prefix() if change is not None else "",
            start_state=getattr(sync, "start_state", None),
            cursor_field=selection.cursor_field,  # a BridgeSync's: its workers start from it too
            coordinator=run.coordinator, readers=readers,
            # a task that cannot reach the driver's ledger (Spark Connect) keeps to its share of the limit
            in_flight=run.limit.share(lanes) if run.coordinator is None else None,
            evolved=run.evolved.of(stream.name) if run.evolved and result.drift_policy == "evolve" else (),
            table_data=table.data_key if table is not None else "",
            table_types=table.types_for_tasks() if table is not None else b"",
        )
        groups = itertools.chain(head, iter_groups)
        telling = ticking(TICK_SECONDS, lambda: progress("tick", _with_live(run, result))) if progress \
            else contextlib.nullcontext()
        with telling:
            files = _read_groups(run, job, groups, sync, stream.name, lanes, generation, overwrite, result, progress,
                                 table)
    final = result.error is None
    if change is not None:  # realtime change data: operations and the new image, committed by a pointer
        _apply_changes(run, change, final, result)
    # A failed overwrite keeps the cursor state it started from: its files sit beside the older ones.
    state_out = sync.state(final=final) if final or not overwrite else saved.stream_state(stream.name)
    if table is not None:  # the last commit: what is left, with the final state (an overwrite's one commit)
        if final or not overwrite:
            _commit_table(run, table, stream.name, files or [], state_out, generation, result, final=True)
        _finish_table(run, table, stream.name, state_out, generation, result)
        return
    if overwrite and final:  # the new state first, then the older files go (framework.spark.replacing)
        mark_replacing(run.connection, stream.name)
        run.save(stream.name, state_out, generation)
        replace_older(run.storage, run.settings, run.connection, stream.name, options.namespace)
    run.save(stream.name, state_out, generation)
    result.state_saved = True
    if change is None:  # the folder as one table, its small files merged when asked (the state's cursor untouched)
        result.folder = _settle(run, stream.name)


def _read_groups(run: _Run, job: TaskJob, groups: Iterable[list[Any]], sync: Sync, name: str, lanes: int,
                 generation: int, overwrite: bool, result: StreamResult,
                 progress: Callable[[str, StreamResult], None] | None,
                 table: StreamTable | None = None) -> list[dict[str, Any]] | None:
    """Run the stream's groups, folding each into ``result`` and committing as it comes back; a table's files of
    the groups after its last commit come back (its last commit carries the final state: _sync_stream)."""
    # Each of the first `lanes` groups is committed as it comes back; past them (a plan streamed from
    # parent pages) at most one commit each STATE_SAVE_SECONDS, since each save writes the whole state.
    files: list[dict[str, Any]] | None = None  # of the groups folded since the last commit (None: no unit done)
    saved_at = time.monotonic()
    for count, results in enumerate(_run_groups(run, job, groups), 1):
        with run.told:  # the group's counts move from its running tally into the result at once
            done = _fold(sync, results, result, run.connector)
            if results:
                work = run.live.over(name, min(r.unit for r in results))
                result.work_done += sum(work.get(r.unit, 0.0) for r in results if r.error is None)
        if done is not None:
            files = [*(files or ()), *done]
        if count <= lanes or time.monotonic() - saved_at >= STATE_SAVE_SECONDS:
            if table is not None:
                _commit_table(run, table, name, files, sync.state(), generation, result)
            else:
                _commit(run, name, sync, files, generation, overwrite, result)
            files, saved_at = None, time.monotonic()
        if run.warm_up is not None:
            if not run.warm_up.decided:
                spark_wanted(run.reading, run.start)  # a start not yet up is paused (or goes on) by it too
            run.warm_up.consider()  # the driver's pace and what is left are known better now
        if progress:
            progress("group", _with_live(run, result))  # with the groups still running: the counts never go back
            _tell_ready(run, result, progress)
    if table is not None:
        return files
    _commit(run, name, sync, files, generation, overwrite, result)
    return None


#: Seconds between two ``tick`` progress events of a stream whose groups run.
TICK_SECONDS = 0.5


def _with_live(run: _Run, result: StreamResult) -> StreamResult:
    """``result`` with what its running groups' tasks told so far added (a copy; ``result`` is untouched)."""
    live = run.live.live(result.name)
    return replace(result, records=result.records + live.records, pages=result.pages + live.pages,
                   units_done=result.units_done + live.units_done, work_done=result.work_done + live.work_done)


def _one_at_a_time(progress: Callable[[str, StreamResult], None],
                   lock: threading.RLock) -> Callable[[str, StreamResult], None]:
    """``progress``, called under ``lock``: the ticker's thread and this one never tell at once."""

    def tell(event: str, result: StreamResult) -> None:
        with lock:
            progress(event, result)

    return tell


def _tell_ready(run: _Run, result: StreamResult, progress: Callable[[str, StreamResult], None]) -> None:
    """Once Spark is ready for groups (``run.ready``), the ``spark_ready`` progress event, from this thread:
    ``result`` (the stream being synced) carries when, and the records of the groups done by then."""
    if run.ready_at is None or run.ready_told:
        return
    run.ready_told = True
    result.spark_ready_at, result.records_before_spark = run.ready_at, run.records_at_ready
    progress("spark_ready", result)


def _realtime_stream(run: _Run, stream: Any, incremental: bool) -> ChangeStream | None:
    """The stream's change data when the format asks for realtime files (framework.cdc.plan.realtime_stream), else None.

    framework.cdc (the apply, pyarrow.parquet, pandas: about 0.5 s) is imported only then: every other sync
    starts reading that much sooner."""
    if getattr(run.settings.format, "mode", None) != "realtime":
        return None
    from framework.cdc.plan import realtime_stream

    return realtime_stream(run.settings, stream, incremental=incremental, sync_id=run.connection.sync_id,
                           namespace=run.options.namespace)


def _commit(run: _Run, name: str, sync: Sync, files: Sequence[dict[str, Any]] | None, generation: int,
            overwrite: bool, result: StreamResult) -> None:
    """Make the files of the groups folded since the last commit visible, with the state that covers them
    (``files`` None: no unit finished since, nothing to commit)."""
    if files is None:
        return
    if run.evolved is not None and result.evolved:  # before the state that covers the records which brought them
        run.evolved.record(name, result.evolved)
    if run.lease is not None:
        run.lease.check()  # another sync took the output over: nothing of this one is published
    if not overwrite:
        # state and the moves still to do in one write, then the moves (see the module docs)
        run.connection.publishing = [{"staged": f["staged"], "key": f["key"]} for f in files if f.get("staged")]
        before = run.connection.streams.get(name)
        run.connection.publishing_stream = name
        run.connection.publishing_before = dict(before) if before is not None else None
        run.save(name, sync.state(), generation)
        result.state_saved = True
    publish(run.storage, files)
    run.connection.publishing, run.connection.publishing_stream, run.connection.publishing_before = [], "", None


def _open_table(run: _Run, name: str, overwrite: bool, generation: int,
                result: StreamResult) -> tuple[StreamTable, Mapping[str, Any] | None]:
    """The stream's table (framework.spark.table_output) and the state of its newest commit."""
    converter = RecordConverter(parse_schema(run.source.schemas[name], stream=name), stream=name,
                                drift=result.drift_policy,
                                evolved=run.evolved.of(name) if run.evolved and result.drift_policy == "evolve" else ())
    return StreamTable.open(run.settings, run.storage, name, run.options.namespace, declared=converter.schema,
                            overwrite=overwrite, sync_id=run.connection.sync_id, generation=generation,
                            read_footers=result.drift_policy == "evolve")


def _commit_table(run: _Run, table: StreamTable, name: str, files: Sequence[dict[str, Any]] | None,
                  state: Mapping[str, Any] | None, generation: int, result: StreamResult, *,
                  final: bool = False) -> None:
    """Commit the files of the groups folded since the last commit to the stream's table with ``state``, then
    save the state file (never ahead of the table); ``files`` None: no unit finished since, nothing to commit."""
    if files is None and not final:
        return
    if run.evolved is not None and result.evolved:
        run.evolved.record(name, result.evolved)
    if run.lease is not None:
        run.lease.check()  # another sync took the output over: nothing of this one is committed
    if table.commit(files or [], state, final=final) is not None:
        run.save(name, state, generation)
        result.state_saved = True


def _finish_table(run: _Run, table: StreamTable, name: str, state: Mapping[str, Any] | None, generation: int,
                  result: StreamResult) -> None:
    """After a table stream's last commit: the state file says what the table says; the columns added are
    reported; small files are merged when ``--compact`` or ``compact: true`` asks."""
    last = table.table.last_state(table.app)
    run.save(name, last.state if last is not None else state, generation)
    result.state_saved = True
    result.table_added = tuple(table.added)
    result.table_commits = len(table.commits)
    result.orphans_removed = len(table.removed)
    if run.options.compact or run.settings.compact:
        compacted = table.compact()
        result.table_files = (compacted.files_before, compacted.files_after)
        # the summary's and the JSON log's `folder`, as for a Parquet folder's compaction
        result.folder = Settled(files_before=compacted.files_before, files_after=compacted.files_after,
                                merged=max(0, compacted.files_before - compacted.files_after))


def _counted(units: Iterable[Any], result: StreamResult, reading: Reading | None = None,
             cursor: Any = None) -> Iterator[Any]:
    """``units``, counted into ``result.units`` and their work into ``result.work`` as they are planned
    (``reading`` and ``result.planned_all`` are told when all are)."""
    for unit in units:
        result.units += 1
        result.work += unit_work(unit, cursor)
        yield unit
    result.planned_all = True
    if reading is not None and reading.result is result:
        reading.planned_all = True


def _apply_changes(run: _Run, change: ChangeStream, completed: bool, result: StreamResult) -> None:
    """Run the change-data apply of a realtime stream; its failure becomes the stream's error."""
    from framework.cdc.apply import apply_changes

    try:
        applied = apply_changes(run.spark, run.storage, run.settings, change, completed=completed,
                                clock=run.connector.context.clock, cores=run.cores)
    except FrameworkError as exc:
        result.error = result.error or run.connector.mask(str(exc))
        return
    # The staged files the tasks reported are internal: the operation files are the stream's output.
    result.files[:] = [f for f in result.files if not str(f.get("key", "")).startswith(change.root)]
    result.files.extend(applied.files)


def _settle(run: _Run, name: str) -> Settled:
    """The stream's files rewritten into one schema, and merged when ``--compact`` or ``compact: true``
    (:func:`framework.formats.rewrite.settle_stream`)."""
    declared = RecordConverter(parse_schema(run.source.schemas[name], stream=name), stream=name).schema.names
    return settle_stream(run.storage, run.settings, run.connection,
                         lambda: run.store.save(run.connection, datetime.now(timezone.utc).isoformat()),
                         stream=name, namespace=run.options.namespace, declared=declared,
                         compact=run.options.compact or run.settings.compact)


def _check_schema(run: _Run, name: str) -> None:
    """Type the stream's schema on the driver first: a schema the sink cannot type (a union whose objects
    disagree on a field, say) fails here with its own message, before any request or Spark task."""
    converter = RecordConverter(parse_schema(run.source.schemas[name], stream=name), stream=name,
                                drift=drift_policy(run.settings, name))  # keep's column may not be declared
    if run.settings.format.format_type == "Avro":
        converter.avro  # noqa: B018 - built for its errors


def _group_count(run: _Run) -> int:
    """How many groups a stream's units are cut into: ``tasks_per_core`` per core, twice that while the driver
    reads (it takes whole groups one by one, so smaller ones hand over to Spark sooner and leave Spark a
    multiple of its cores to balance)."""
    return run.cores * run.options.tasks_per_core * (2 if run.driver_reads and not run.ready.done() else 1)


def _run_groups(run: _Run, job: TaskJob, groups: Iterable[list[Any]]) -> Iterator[list[UnitResult]]:
    """Run each group once, on the driver while the session starts (``run.driver_reads``), else as a
    one-task Spark job, at most ``job.tasks`` groups at a time; yield each group's results as it finishes
    (:func:`framework.spark.scheduling.schedule_groups`). ``groups`` is pulled as groups end, so a plan
    streamed from parent pages is never held whole.

    Each running group has a lane (0 to ``job.tasks - 1``): its files are numbered
    ``part_start + lane + k * job.tasks``, and the next group in the lane starts
    after the numbers the previous one took. A job that fails as a whole (the
    task raised outside a unit, the executor died) yields that error for every
    unit of its group; so does a group the driver could not read.
    """
    job_group = f"run-manifest-{job.stream}-{uuid.uuid4().hex[:12]}"
    cursor = run.connector.stream(job.stream).cursor  # a unit's work: its window's span (engine/time_left.py)
    lanes = job.tasks
    starts = [job.part_start] * lanes  # each lane's next first part number
    free: queue.SimpleQueue[int] = queue.SimpleQueue()  # never empty when a group starts: the scheduler runs
    for lane in range(lanes):  # at most `lanes` groups at once (spark_slots)
        free.put(lane)

    def in_a_lane(run_one: Callable[[int, int, list[Any]], list[UnitResult]]) -> Callable[[int, list[Any]],
                                                                                         list[UnitResult]]:
        def run_group(index: int, group: list[Any]) -> list[UnitResult]:
            run.live.started(job.stream, {unit.index: unit_work(unit, cursor) for unit in group})
            lane = free.get_nowait()
            try:
                results = run_one(lane, starts[lane], group)
                # the numbers this lane's files took (a failed job's files are never published)
                starts[lane] += lanes * sum(len(r.files) for r in results)
                return results
            finally:
                free.put(lane)

        return run_group

    def on_spark(lane: int, start: int, group: list[Any]) -> list[UnitResult]:
        spark = run.spark
        connect.tag_jobs(spark, job_group, f"sync of stream {job.stream}")
        try:
            frame = spark.createDataFrame(encode_units(group)).coalesce(1)
            task = task_function(replace(job, part_start=start), lane)
            return from_arrow(frame.mapInArrow(task, result_struct()).toArrow())
        finally:
            connect.untag_jobs(spark, job_group)

    def here(lane: int, start: int, group: list[Any]) -> list[UnitResult]:
        # a Spark task's very code, in this thread: staged files, one row per unit (see framework.spark.tasks)
        cpu = time.thread_time()
        try:
            batches = iter(encode_units(group).to_batches())
            return [r for batch in run_task(replace(job, part_start=start), batches, lane)
                    for r in from_arrow(batch)]
        except Exception as exc:  # noqa: BLE001 - reported as the group's failure
            return failed_group(group, f"reading on the driver failed: {type(exc).__name__}: {exc}")
        finally:
            if run.reading is not None and run.reading.result.name == job.stream:
                run.reading.cpu += time.thread_time() - cpu

    def failed(group: list[Any], exc: BaseException) -> list[UnitResult]:
        return failed_group(group, f"a Spark task failed: {_spark_failure(exc)}")

    yield from schedule_groups(groups, here=in_a_lane(here), on_spark=in_a_lane(on_spark), failed=failed,
                               spark=run.ready, read_here=run.driver_reads, spark_slots=max(1, lanes),
                               cancel=lambda: connect.cancel_jobs(run.spark, job_group))


def _fold(sync: Sync, results: list[UnitResult], result: StreamResult,
          connector: Connector) -> tuple[dict[str, Any], ...] | None:
    """Take the results of a finished group into the stream's sync and result; the group's files when a unit
    finished, else None."""
    totals = fold_results(sync, results)
    result.files.extend(totals.files)
    if totals.error:
        result.error = result.error or connector.mask(totals.error)
    result.records += totals.records
    result.pages += totals.pages
    result.nulled += totals.nulled
    result.units_done += totals.units_done
    result.empty_pages += totals.empty_pages
    result.drifted += totals.drifted
    for path, count in totals.undeclared.items():
        result.undeclared[path] = result.undeclared.get(path, 0) + count
    result.evolved = merge_evolved(result.evolved, totals.evolved)
    known = {signal.kind for signal in result.warnings}  # one of each kind per stream
    result.warnings.extend(signal.masked(connector.mask) for signal in totals.warnings if signal.kind not in known)
    return totals.files if totals.units_done > 0 else None


def _spark_failure(exc: BaseException) -> str:
    """The gist of an exception from a Spark job: the last line of the Python error it carries, if any."""
    text = str(exc).strip()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for line in reversed(lines):
        head = line.split(":", 1)[0]
        if head.endswith(("Error", "Exception")) and not line.startswith(("at ", "File ")):
            return line
    return lines[0] if lines else type(exc).__name__


__all__ = ["PipelineOptions", "PipelineResult", "ServicesNotShared", "StreamResult", "run_pipeline"]
