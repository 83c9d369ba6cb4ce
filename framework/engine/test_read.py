"""A test read: the first pages of each stream, the requests made, a few records, and what looks wrong.

What Airbyte's Connector Builder shows a manifest's author, from the command
line (``run-manifest --test-read``): for each selected stream, the first
partition's first window is planned as a sync would plan it, its first pages
are read through a transport that keeps every request and response, and the
checks of :mod:`framework.engine.signals` look at the records and the bodies
they came from. Nothing is written and no state is saved; Spark never starts.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from msgspec import Struct, field

from framework.components.http.request import HttpRequest
from framework.components.http.response_limits import ResponseLimits
from framework.components.http.transport import DEFAULT_LIMITS, DEFAULT_TIMEOUT, HttpResponse, Transport
from framework.components.incremental import DatetimeCursor
from framework.engine import signals
from framework.engine.connector import Connector
from framework.engine.plan import open_sync
from framework.engine.selection import Selection
from framework.engine.sync import StreamSync, Unit, read_unit
from framework.errors import FrameworkError
from framework.interpolation import TemplateEngine


class Exchange(Struct, frozen=True):
    """One request and its response, as the test read shows them (secrets masked)."""

    request: str
    status: int | None
    content_type: str
    size: int
    body: Any = None  # the decoded JSON body, when it was JSON
    error: str | None = None


class RecordingTransport:
    """A transport that keeps every exchange (the test seam of :mod:`framework.components.http.transport`)."""

    def __init__(self, inner: Transport, mask: Callable[[str], str] = lambda text: text) -> None:
        self.inner = inner
        self.mask = mask
        self.exchanges: list[Exchange] = []
        self._lock = threading.Lock()

    def send(self, request: HttpRequest, timeout: float = DEFAULT_TIMEOUT,
             limits: ResponseLimits = DEFAULT_LIMITS) -> HttpResponse:
        try:
            response = self.inner.send(request, timeout, limits)
        except FrameworkError as exc:
            self._keep(Exchange(request.describe(self.mask), None, "", 0, error=self.mask(str(exc))))
            raise
        content = response.content  # read whole: a streamed body is kept for the checks (pages are small)
        try:
            body = response.json()
        except Exception:  # noqa: BLE001 - not JSON: shown by its type and size only
            body = None
        self._keep(Exchange(request.describe(self.mask), response.status,
                            response.headers.get("content-type", ""), len(content), body))
        return response

    def _keep(self, exchange: Exchange) -> None:
        with self._lock:
            self.exchanges.append(exchange)


class PageSeen(Struct):
    number: int
    records: list[dict]
    exchanges: list[Exchange]


class StreamTestRead(Struct):
    """What the test read of one stream saw."""

    name: str
    units: int = 0
    unit: str = ""  # which partition and window was read
    planning: list[Exchange] = field(default_factory=list)  # requests made to plan (parents, dynamic values)
    pages: list[PageSeen] = field(default_factory=list)
    more_pages: bool = False  # the read stopped at the page limit, not at the last page
    signals: list[signals.Signal] = field(default_factory=list)
    error: str | None = None

    @property
    def records(self) -> list[dict]:
        return [record for page in self.pages for record in page.records]


def pagination_strategy(connector: Connector, name: str) -> Mapping[str, Any] | None:
    """The manifest's pagination strategy of stream ``name`` (as written), or None."""
    return signals.pagination_strategy(connector.manifest, name)


def _definition(connector: Connector, name: str) -> Mapping[str, Any]:
    return signals.stream_definition(connector.manifest, name)


def _describe(unit: Any, units: int) -> str:
    parts = [f"unit 1 of {units}"]
    window = unit.slice.cursor_slice if isinstance(unit, Unit) else None
    if window:
        parts.append("window " + ", ".join(f"{k}={v}" for k, v in window.items()))
    partition = unit.slice.partition if isinstance(unit, Unit) else None
    if partition:
        parts.append("partition values " + ", ".join(f"{k}={v}" for k, v in partition.items()
                                                      if not str(k).startswith("_")))
    return "; ".join(parts)


def _pages(connector: Connector, sync: Any, unit: Any) -> Iterator[list[dict]]:
    if isinstance(sync, StreamSync) and isinstance(unit, Unit):  # empty pages too: an empty extraction shows
        for records, _ in read_unit(sync.stream, connector.config, unit):
            yield records
    else:
        yield from sync.read(unit)


def test_read_stream(connector: Connector, recorder: RecordingTransport, selection: Selection, *,
                     pages: int = 3) -> StreamTestRead:
    """Read the first ``pages`` pages of the stream's first unit; see the module docs."""
    stream = connector.stream(selection.name).with_cursor_field(selection.cursor_field)
    seen = StreamTestRead(stream.name)
    start = len(recorder.exchanges)
    try:
        sync = open_sync(connector, stream, None, incremental=selection.incremental)
        units = sync.plan()
        seen.units = len(units)
        seen.planning = recorder.exchanges[start:]
        if not units:
            return seen
        unit = units[0]
        seen.unit = _describe(unit, len(units))
        reading = _pages(connector, sync, unit)
        try:
            mark = len(recorder.exchanges)
            for records in reading:
                seen.pages.append(PageSeen(len(seen.pages) + 1, list(records), recorder.exchanges[mark:]))
                mark = len(recorder.exchanges)
                if len(seen.pages) >= pages:
                    seen.more_pages = next(reading, None) is not None
                    break
            if not seen.pages and len(recorder.exchanges) > mark:  # answered, but no record came out
                seen.pages.append(PageSeen(1, [], recorder.exchanges[mark:]))
        finally:
            close = getattr(reading, "close", None)
            if close is not None:
                close()
    except FrameworkError as exc:
        seen.error = connector.mask(str(exc))
    seen.signals = _signals(connector, stream, seen, unit if seen.pages else None)
    return seen


def _signals(connector: Connector, stream: Any, seen: StreamTestRead, unit: Any) -> list[signals.Signal]:
    definition = _definition(connector, stream.name)
    retriever = signals.dig(definition, "retriever") or {}
    field_path = signals.dig(retriever, "record_selector", "extractor", "field_path")
    strategy = signals.dig(retriever, "paginator", "pagination_strategy")
    paginated = signals.dig(retriever, "paginator", "type") not in (None, "NoPagination")
    found: list[signals.Signal | None] = []
    for page in seen.pages:
        bodies = [e.body for e in page.exchanges if e.status is not None and 200 <= e.status < 300]
        found.append(signals.empty_extraction(stream.name, len(page.records), bodies[0] if bodies else None,
                                              field_path if isinstance(field_path, list) else None))
        if found[-1] is not None:
            break
    if seen.pages and not seen.more_pages:
        last = seen.pages[-1]
        bodies = [e.body for e in last.exchanges if e.status is not None and 200 <= e.status < 300]
        found.append(signals.pagination_stopped(
            stream.name, len(seen.pages), paginated, bodies[-1] if bodies else None, len(last.records),
            signals.dig(strategy, "cursor_value") if isinstance(strategy, Mapping) else None))
    found.append(signals.repeated_pages(stream.name, [p.records for p in seen.pages],
                                        strategy if isinstance(strategy, Mapping) else None))
    records = seen.records
    result = [s for s in found if s is not None]
    result.extend(signals.missing_fields(stream.name, records, stream.primary_key, stream.cursor_field))
    cursor = stream.cursor
    if isinstance(cursor, DatetimeCursor) and isinstance(unit, Unit) and unit.slice.cursor_slice:
        outside = signals.outside_window(stream.name, records, cursor.in_window, cursor.record_value,
                                         unit.slice.cursor_slice, cursor.cursor_field)
        if outside is not None:
            result.append(outside)
    undeclared = signals.undeclared_fields(stream.name, records, stream.json_schema)
    if undeclared is not None:
        result.append(undeclared)
    engine = TemplateEngine()
    context = {"config": connector.config}
    left_out = signals.none_parameters(stream.name, signals.dig(retriever, "requester", "request_parameters"),
                                       lambda template: engine.gives_none(template, context))
    if left_out is not None:
        result.append(left_out)
    return result


def test_read(connector: Connector, recorder: RecordingTransport, selections: Sequence[Selection], *,
              pages: int = 3) -> list[StreamTestRead]:
    """The test read of each selected stream (one failing does not stop the others)."""
    return [test_read_stream(connector, recorder, selection, pages=pages) for selection in selections]


# pytest would collect these as tests (their names start with "test")
test_read.__test__ = False  # type: ignore[attr-defined]
test_read_stream.__test__ = False  # type: ignore[attr-defined]

__all__ = ["Exchange", "PageSeen", "RecordingTransport", "StreamTestRead", "pagination_strategy", "test_read",
           "test_read_stream"]
