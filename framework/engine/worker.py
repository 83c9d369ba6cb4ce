"""What a worker process (a Spark task, the DataFrame reader's) needs: the connector and typed pages.

* :class:`ConnectorSource` - the manifest text, config, every stream's
  schema (:func:`all_schemas`), the custom components' code shipped with
  the manifest, the query properties the driver read (:meth:`ConnectorSource.with_query_properties`)
  and the streams ``dynamic_streams`` made on the driver (``templates``):
  all a worker needs to build the connector again, without the driver's files
  or a second read of a property endpoint;
* :func:`worker_connector` - that connector, built once per process (the last
  one is kept, so a worker that reads several tasks of one sync builds it once);
* :class:`PageTyper` and :func:`read_group` - a group of units read page by
  page, one after the other or several at once (``readers``), into the Arrow
  batches the sink writes, with a :class:`~framework.engine.results.UnitResult`
  for each unit and the connector's masking on failure.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import orjson
import pyarrow as pa
from msgspec import Struct, field

from framework.components.custom.loader import materialize
from framework.components.dynamic import Templates
from framework.components.http.client import NETWORK_WAIT
from framework.components.http.in_flight import DEFAULT_LEVEL
from framework.components.job_slots import prefetch, release
from framework.components.partitions import parents_of
from framework.components.query_properties import resolved_query_properties, with_resolved_query_properties
from framework.components.retriever import PAGE_WATCH
from framework.components.stream import Stream
from framework.engine.connector import Connector, open_connector_text
from framework.engine.live_progress import TaskTicker
from framework.engine.results import UnitResult
from framework.engine.scheduler import Page, concurrent_pages
from framework.engine.signals import ReadFacts, UnitWatch, stream_definition
from framework.engine.sync import read_unit
from framework.formats import raw_batch
from framework.typed import RecordConverter
from framework.typed.drift import Drift
from framework.typed.raw_ids import random_uuids
from framework.values import replace

__all__ = ["ConnectorSource", "PageTyper", "all_schemas", "read_group", "worker_connector"]


class ConnectorSource(Struct, frozen=True):
    """A connector as text: what a worker builds it from (small and picklable; nothing read from disk).

    ``shipped`` holds the custom components' files the driver loaded (path
    relative to the manifest folder's parent -> text) and ``allow_custom_code``
    the driver's decision to run them (None: as the environment says). A
    worker without those files writes them to a temporary folder keyed by
    their hash, in the same layout, and builds the connector from there.
    """

    manifest_text: str
    manifest_file: str
    base_dir: str | None
    config: Mapping[str, Any]
    schemas: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # every stream's, parents too
    shipped: Mapping[str, str] = field(default_factory=dict)
    allow_custom_code: bool | None = None
    #: by stream: the query properties the driver read from an endpoint and the catalog's selection of them
    query_properties: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    #: the streams dynamic_streams made on the driver (None: made by whoever opens the source)
    templates: Templates | None = None

    @classmethod
    def of(cls, manifest_path: str, manifest_text: str, config: Mapping[str, Any],
           schemas: Mapping[str, Mapping[str, Any]] | None = None, *, shipped: Mapping[str, str] | None = None,
           allow_custom_code: bool | None = None) -> ConnectorSource:
        """The source of the manifest at ``manifest_path`` (its text already read), relative files beside it."""
        return cls(manifest_text, manifest_path, os.path.dirname(os.path.abspath(manifest_path)), dict(config),
                   dict(schemas or {}), dict(shipped or {}), allow_custom_code)

    @classmethod
    def of_connector(cls, connector: Connector, manifest_path: str, manifest_text: str) -> ConnectorSource:
        """The source of ``connector`` (opened from ``manifest_path``): every schema and the code it loaded."""
        source = cls.of(manifest_path, manifest_text, connector.given_config, all_schemas(connector),
                        shipped=connector.shipped_files, allow_custom_code=connector.custom_code_allowed)
        return replace(source, templates=connector.templates)

    def with_query_properties(self, connector: Connector, stream: str) -> ConnectorSource:
        """This source carrying the query properties ``connector`` asks ``stream``'s API for: a
        PropertiesFromEndpoint's list (read now, once per sync, here) and the catalog's selection,
        so that the tasks ask for the same without reading the endpoint again."""
        found = resolved_query_properties({stream: connector.stream(stream)})
        if not found:
            return self
        return replace(self, query_properties={**self.query_properties, **found})

    def open(self) -> Connector:
        """A new connector from this source (on the driver: schema files are read where ``schemas`` lack them)."""
        base_dir = self._code_dir()
        if self.schemas and base_dir is not None and not os.path.isdir(base_dir):
            base_dir = None  # another machine, without the manifest's folder: every schema came with the source
        connector = open_connector_text(self.manifest_text, self.config, file=self.manifest_file,
                                        base_dir=base_dir, schemas=self.schemas or None,
                                        allow_custom_code=self.allow_custom_code, templates=self.templates,
                                        keep_responses=False)
        if not self.query_properties:
            return connector
        return replace(connector, streams=with_resolved_query_properties(connector.streams,
                                                                                     self.query_properties))

    def _code_dir(self) -> str | None:
        """The manifest's folder, or where the shipped files were written when this machine lacks them."""
        if not self.shipped or self.base_dir is None:
            return self.base_dir
        parent = os.path.dirname(os.path.abspath(self.base_dir))
        for relative, text in self.shipped.items():
            try:
                with open(os.path.join(parent, relative), encoding="utf-8") as handle:
                    if handle.read() == text:
                        continue
            except OSError:
                pass
            return materialize(self.shipped, os.path.basename(os.path.abspath(self.base_dir)))
        return self.base_dir


def worker_connector(source: ConnectorSource) -> Connector:
    """The connector of ``source``, built once per process (for the last source asked for)."""
    def text(value: Any) -> str:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()

    return _cached_connector(source.manifest_text, text(source.config), source.manifest_file, source.base_dir,
                             text(source.schemas), text(source.shipped), source.allow_custom_code,
                             text(source.query_properties), text(source.templates))


@functools.lru_cache(maxsize=1)
def _cached_connector(manifest_text: str, config_json: str, manifest_file: str, base_dir: str | None,
                      schemas_json: str, shipped_json: str, allow_custom_code: bool | None,
                      query_properties_json: str = "{}", templates_json: str = "null") -> Connector:
    templates = orjson.loads(templates_json)
    return ConnectorSource(manifest_text, manifest_file, base_dir, orjson.loads(config_json),
                           orjson.loads(schemas_json), orjson.loads(shipped_json), allow_custom_code,
                           orjson.loads(query_properties_json),
                           None if templates is None else tuple(tuple(made) for made in templates)).open()


def all_schemas(connector: Connector) -> dict[str, dict]:
    """Every stream's schema by name, parents of substreams included (executors may lack the files)."""
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


class PageTyper(Struct, frozen=True):
    """A page of records as the batch the sink writes: typed by ``converter``, or (None) raw JSON for JSONL and CSV.

    Called with the records and their extraction time, it answers the batch and
    how many values typing nulled.
    """

    converter: RecordConverter | None
    generation_id: int = 0
    sync_id: int = 0

    def __call__(self, records: list[dict], extracted_at_ms: int) -> tuple[pa.RecordBatch, int]:
        converter = self.converter
        if converter is None:
            return raw_batch(records, random_uuids(len(records)), extracted_at_ms, self.generation_id,
                             sync_id=self.sync_id), 0
        batch = converter.convert(records, extracted_at_ms=extracted_at_ms, generation_id=self.generation_id,
                                  sync_id=self.sync_id)
        return batch, converter.last_nulled

    def drift(self) -> tuple[Drift | None, tuple[tuple[str, str], ...]]:
        """The undeclared fields of the last page typed (None: none, or not typed) and the columns the
        ``evolve`` policy has typed so far (typed/drift.py)."""
        converter = self.converter
        if converter is None:
            return None, ()
        return (converter.last_drift or None), tuple(converter.evolved.items())


def read_group(connector: Connector, stream: Stream, units: Iterable[Any], typer: PageTyper,
               write: Callable[[pa.RecordBatch], None] | None = None, *,
               start_state: Mapping[str, Any] | None = None, readers: int = 1,
               ticker: TaskTicker | None = None) -> Iterator[pa.RecordBatch | UnitResult]:
    """Read ``units`` page by page, up to ``readers`` of them at once, each page typed by ``typer``.

    With ``readers`` 1 (or a single unit, or when this process's requests show
    the API answers at once: :class:`ReadersChoice`) the units are read one after the
    other in this thread. With more, up to ``min(readers, len(units))`` threads
    read them (:func:`~framework.engine.scheduler.concurrent_pages`, taking
    units in the order given) while this thread types and writes their pages in
    the order they arrive: a unit's pages stay in order, units interleave (the
    rolling writer does not care). Each reader thread watches its own unit's
    pages (:data:`~framework.components.retriever.PAGE_WATCH`, a
    :class:`~framework.engine.signals.UnitWatch` per unit). Memory: besides the
    page being typed, at most ``readers`` pages (one per reader, waiting) plus
    the queue's ``2 * readers`` are held; pages are taken as they arrive, so a
    unit's records never pile up behind a slow neighbour.

    Yields each page's batch (or, when ``write`` is given, hands it to
    ``write`` instead) and, once a unit's last page is handled, its
    :class:`UnitResult` (units in the order they finish). The first failure
    (reading, typing or writing a page) ends the reading (the other readers
    finish their request in flight and quit): every unit not finished then
    (the failed one first among them when read one at a time) gets a result
    with the connector-masked message, after the results of the units
    finished before. A stream airbyte-cdk reads (``stream.bridge``) is
    read by :func:`~framework.engine.bridge.read_bridged_unit`, always one unit
    at a time (its readers are not known to be thread-safe), its result's
    ``latest`` being the unit's most recent record and ``start_state`` the
    state the sync started from (a unit of ours carries its own). The
    asynchronous jobs of the group's units (job slots) are prefetched before
    the first unit and released after the last. ``ticker`` (a Spark task's)
    is told of each page and each finished unit as they are handled, so the
    driver shows progress while the group runs
    (:mod:`framework.engine.live_progress`).
    """
    stream = connector.stream_for_start(stream, start_state)  # a StateDelegatingStream: the definition read
    config = connector.config
    units = list(units)
    if ticker is not None:
        ticker.begin(units)
    slices = [unit.slice for unit in units if hasattr(unit, "slice")]
    prefetch(stream, slices, config)  # asynchronous jobs: the group's jobs created together, polled together
    threads = READING.readers(readers, len(units))
    waited, sent = NETWORK_WAIT.seconds, NETWORK_WAIT.requests
    try:
        yield from _read_units(connector, stream, units, typer, write, start_state, threads, ticker)
        READING.learn(NETWORK_WAIT.seconds - waited, NETWORK_WAIT.requests - sent)
    finally:
        release(stream, slices)  # the jobs of units left unread: aborted, their slots freed
        connector.settle_requests()  # the permits of requests in flight go back: the next group may run elsewhere


class ReadersChoice:
    """How many units a group is read at once in this process: threads pay only when the API keeps the
    readers waiting. A reader thread beside the thread that types and writes costs a CPU-bound read about a
    quarter of its speed (the two take turns at the interpreter's lock: bench/README.md), so a group is
    read in threads when this process's requests took :data:`SLOW` seconds or more each in the transport
    (the last group's, else those sent before it: the connection check, a substream's parents); with no
    request sent yet, when the sync's level was set above airbyte-cdk's default (the user said the API is
    worth waiting on in parallel). Otherwise it is read in this thread, and its requests teach the next
    group."""

    #: A request that spends this long in the transport is the API's waiting, not this process's work
    #: (a page of a local API that answers at once: 1 to 5 ms).
    SLOW = 0.02

    def __init__(self) -> None:
        self.waiting: bool | None = None  # the last group's requests were slow (None: no group read yet)

    def readers(self, readers: int, units: int) -> int:
        if readers <= 1 or units <= 1:
            return 1
        waiting = self.waiting
        if waiting is None:
            sent = NETWORK_WAIT.requests
            waiting = NETWORK_WAIT.seconds / sent >= self.SLOW if sent else readers > DEFAULT_LEVEL
        return readers if waiting else 1

    def learn(self, seconds: float, requests: int) -> None:
        """The requests of a group read here: ``requests`` of them, ``seconds`` in the transport in all."""
        if requests:
            self.waiting = seconds / requests >= self.SLOW


#: This process's choice (a Python worker runs one task at a time).
READING = ReadersChoice()


class _Tally:
    """What the pages handled so far of one unit came to."""

    __slots__ = ("drift", "evolved", "latest", "nulled", "pages", "records")

    def __init__(self) -> None:
        self.records = self.pages = self.nulled = 0
        self.latest: Any = None
        self.drift: Drift | None = None  # the undeclared fields of its records
        self.evolved: tuple[tuple[str, str], ...] = ()  # the evolve policy's columns after its last page


def _read_units(connector: Connector, stream: Stream, units: list[Any], typer: PageTyper,
                write: Callable[[pa.RecordBatch], None] | None, start_state: Mapping[str, Any] | None,
                readers: int, ticker: TaskTicker | None = None) -> Iterator[pa.RecordBatch | UnitResult]:
    bridged = stream.bridge is not None
    if bridged:
        from framework.engine.bridge import read_bridged_unit
    config = connector.config
    facts = None if bridged else ReadFacts.of(stream_definition(connector.manifest, stream.name))
    watches: dict[int, UnitWatch] = {}  # by unit index, each made by the thread that reads its unit

    def read_one(unit: Any) -> Iterator[tuple[list[dict], Any]]:
        # the unit's first pages, watched for what looks wrong (engine/signals.py): a few pages, then counts only
        watch = UnitWatch(stream.name, facts, stream.primary_key, stream.cursor_field) if facts is not None else None
        if watch is not None:
            watches[unit.index] = watch
        watching = PAGE_WATCH.set(watch)
        try:
            if bridged:
                yield from read_bridged_unit(connector, stream, unit, start_state)
            else:
                yield from read_unit(stream, config, unit)
        finally:
            try:
                PAGE_WATCH.reset(watching)
            except ValueError:  # resumed in another context: nobody watches there either
                PAGE_WATCH.set(None)

    def result(unit: Any, tally: _Tally | None, error: str | None) -> UnitResult:
        watch = watches.get(unit.index)
        tally = tally or _Tally()
        drift = tally.drift
        return UnitResult(unit.index, tally.records, tally.pages, tally.nulled, tally.latest, error,
                          warnings=tuple(watch.signals()) if watch is not None else (),
                          empty_pages=watch.empty if watch is not None else 0,
                          drifted=drift.records if drift else 0, undeclared=drift.fields if drift else {},
                          evolved=tally.evolved)

    tallies: dict[int, _Tally] = {}
    # a PageTyper says what its last page held that the schema does not declare; any other typer, nothing
    drift_of: Callable[[], tuple[Drift | None, tuple[tuple[str, str], ...]]] | None = getattr(typer, "drift", None)
    finished: set[int] = set()
    failed: str | None = None
    events = concurrent_pages(units, read_one, 1 if bridged else readers)
    try:
        for event in events:
            index = event.unit.index
            if isinstance(event, Page):
                page, page_latest = event.records
                batch, page_nulled = typer(page, int(time.time() * 1000))
                page_drift, evolved = drift_of() if drift_of is not None else (None, ())
                if write is not None:
                    write(batch)
                else:
                    yield batch
                tally = tallies.get(index)
                if tally is None:
                    tally = tallies[index] = _Tally()
                tally.records += len(page)
                tally.pages += 1
                tally.nulled += page_nulled
                tally.evolved = evolved
                if page_drift is not None:
                    if tally.drift is None:
                        tally.drift = Drift()
                    tally.drift.add(page_drift)
                if page_latest is not None and (bridged or tally.latest is None or page_latest > tally.latest):
                    tally.latest = page_latest  # bridged: the unit's most recent record so far
                if ticker is not None:
                    ticker.page(len(page))
            else:
                finished.add(index)
                if ticker is not None:
                    ticker.unit_done(index)
                yield result(event.unit, tallies.pop(index, None), None)
    except Exception as exc:  # noqa: BLE001 - the units fail; the caller weighs its other units' data
        failed = connector.mask(str(exc) or type(exc).__name__)
    finally:
        events.close()  # the readers stopped (a failure, or this generator closed early) and briefly joined
    if failed is not None:
        for unit in units:
            if unit.index not in finished:
                yield result(unit, tallies.get(unit.index), failed)
