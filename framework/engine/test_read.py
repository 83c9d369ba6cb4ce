"""A test read: the first pages of each stream, the requests made, a few records, and what looks wrong.

What Airbyte's Connector Builder shows a manifest's author, from the command
line (``run-manifest --test-read``): for each selected stream, the first
partition's first window is planned as a sync would plan it, its first pages
are read through a transport that keeps every request and response, and the
checks of :mod:`framework.engine.signals` look at the records and the bodies
they came from. Nothing is written and no state is saved; Spark never starts.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any
from urllib.parse import urlencode

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
from framework.errors import ConfigError, FrameworkError
from framework.interpolation import TemplateEngine
from framework.masking import MASKED

#: A response body kept for display is cut at this many bytes (the builder shows it; pages are small).
BODY_LIMIT = 64 * 1024

#: Headers whose values are credentials whatever the request says (shown as ``****``).
SECRET_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie", "set-cookie", "x-api-key",
                            "api-key", "x-auth-token"})


class Exchange(Struct, frozen=True):
    """One request and its response, as the test read shows them (secrets masked)."""

    request: str
    status: int | None
    content_type: str
    size: int
    body: Any = None  # the decoded JSON body, when it was JSON
    error: str | None = None
    method: str = ""
    url: str = ""  # with its query, masked
    request_headers: dict[str, str] = field(default_factory=dict)
    request_body: str | None = None  # a JSON or form body as sent, masked
    response_headers: dict[str, str] = field(default_factory=dict)
    text: str | None = None  # a body that is not JSON, as text (cut at BODY_LIMIT), masked
    truncated: bool = False  # ``text`` was cut


def masked_headers(headers: Mapping[str, Any], mask: Callable[[str], str],
                   credentials: frozenset[str] = frozenset()) -> dict[str, str]:
    """``headers`` for display: a credential header's value as ``****`` (an authenticator's, or one of
    :data:`SECRET_HEADERS`), every other value through ``mask``."""
    return {str(name): MASKED if str(name).lower() in SECRET_HEADERS or str(name).lower() in credentials
            else mask(str(value)) for name, value in headers.items()}


def _request_body(request: HttpRequest, mask: Callable[[str], str]) -> str | None:
    if request.json is not None:
        return mask(json.dumps(request.json, indent=2, ensure_ascii=False, default=str))
    if request.data is None:
        return None
    if isinstance(request.data, Mapping):
        return mask(urlencode([(str(k), str(v)) for k, v in request.data.items()]))
    return mask(request.data.decode("utf-8", "replace") if isinstance(request.data, bytes) else str(request.data))


def _text(content: bytes, mask: Callable[[str], str]) -> tuple[str, bool]:
    return mask(content[:BODY_LIMIT].decode("utf-8", "replace")), len(content) > BODY_LIMIT


class Stopped(FrameworkError):
    """The test read was stopped (:attr:`RecordingTransport.stop` set) before a request was sent."""


class RecordingTransport:
    """A transport that keeps every exchange (the test seam of :mod:`framework.components.http.transport`).

    ``stop``, once set, makes every later request raise :class:`Stopped` without being sent."""

    def __init__(self, inner: Transport, mask: Callable[[str], str] = lambda text: text,
                 stop: threading.Event | None = None) -> None:
        self.inner = inner
        self.mask = mask
        self.stop = stop
        self.exchanges: list[Exchange] = []
        self._lock = threading.Lock()

    def send(self, request: HttpRequest, timeout: float = DEFAULT_TIMEOUT,
             limits: ResponseLimits = DEFAULT_LIMITS) -> HttpResponse:
        if self.stop is not None and self.stop.is_set():
            raise Stopped("the test read was stopped")
        mask = self.mask
        credentials = request.credentials.header_names() if request.credentials is not None else frozenset()
        method, url = request.method, mask(request.full_url())
        headers = masked_headers(request.headers, mask, credentials)
        sent = _request_body(request, mask)
        try:
            response = self.inner.send(request, timeout, limits)
        except FrameworkError as exc:
            self._keep(Exchange(request.describe(mask), None, "", 0, error=mask(str(exc)), method=method, url=url,
                                request_headers=headers, request_body=sent))
            raise
        content = response.content  # read whole: a streamed body is kept for the checks (pages are small)
        try:
            body = response.json()
        except Exception:  # noqa: BLE001 - not JSON: shown as text
            body = None
        text, cut = _text(content, mask) if body is None else (None, False)
        self._keep(Exchange(request.describe(mask), response.status, response.headers.get("content-type", ""),
                            len(content), body, method=method, url=url, request_headers=headers,
                            request_body=sent, response_headers=masked_headers(response.headers, mask),
                            text=text, truncated=cut))
        return response

    def _keep(self, exchange: Exchange) -> None:
        with self._lock:
            self.exchanges.append(exchange)


class PageSeen(Struct):
    number: int
    records: list[dict]
    exchanges: list[Exchange]
    state: dict | None = None  # the stream's state were the read to end after this page (None: no cursor)


class StreamTestRead(Struct):
    """What the test read of one stream saw."""

    name: str
    units: int = 0
    unit: str = ""  # which partition and window was read
    partitions: int = 0  # how many partitions the plan has (a partition's units are its windows)
    stopped: bool = False  # stopped (``stop`` set) before the pages asked for were read
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


def _describe(unit: Any, index: int, units: int) -> str:
    parts = [f"unit {index + 1} of {units}"]
    window = unit.slice.cursor_slice if isinstance(unit, Unit) else None
    if window:
        parts.append("window " + ", ".join(f"{k}={v}" for k, v in window.items()))
    partition = _partition_values(unit)
    if partition:
        parts.append("partition values " + ", ".join(f"{k}={v}" for k, v in partition.items()))
    return "; ".join(parts)


def _partition_values(unit: Any) -> dict[str, Any]:
    partition = unit.slice.partition if isinstance(unit, Unit) else None
    return {str(k): v for k, v in (partition or {}).items() if not str(k).startswith("_")}


def _pages(connector: Connector, sync: Any, unit: Any) -> Iterator[tuple[list[dict], Any]]:
    """Each page's records and the latest cursor value in them (None when not known)."""
    if isinstance(sync, StreamSync) and isinstance(unit, Unit):  # empty pages too: an empty extraction shows
        yield from read_unit(sync.stream, connector.config, unit)
    else:
        for records in sync.read(unit):
            yield records, None


def _choose(units: Sequence[Any], partition: int | None) -> tuple[int, int]:
    """(the index of the unit to read, the number of partitions): the first unit of partition number
    ``partition`` (0-based, in plan order; None: the first unit)."""
    order = list(dict.fromkeys(unit.partition for unit in units if isinstance(unit, Unit))) or list(range(len(units)))
    if partition is None:
        return 0, len(order)
    if not 0 <= partition < len(order):
        raise ConfigError(f"partition {partition} is not in the plan: it has {len(order)} partition(s); pick one of "
                          f"0 to {len(order) - 1}")
    wanted = order[partition]
    return next(i for i, unit in enumerate(units) if (unit.partition if isinstance(unit, Unit) else i) == wanted), \
        len(order)


def _state_after(stream: Any, unit: Any, latest: Any, partitioned: bool) -> dict | None:
    """The stream's state were the read to end after a page whose newest cursor value so far is ``latest``."""
    cursor = stream.cursor
    if cursor is None or not isinstance(unit, Unit):
        return None
    value = latest if latest is not None else unit.prior
    state = dict(cursor.state_of(value)) if value is not None else {}
    if partitioned:
        return {"states": [{"partition": _partition_values(unit), "cursor": state}]}
    return state


def test_read_stream(connector: Connector, recorder: RecordingTransport, selection: Selection, *,
                     pages: int = 3, partition: int | None = None, stop: threading.Event | None = None,
                     on_page: Callable[[PageSeen], None] | None = None) -> StreamTestRead:
    """Read the first ``pages`` pages of the stream's first unit (of partition number ``partition``, when
    given); see the module docs. ``stop``, once set, ends the read before its next page (and its next request,
    when ``recorder.stop`` is the same event); ``on_page`` sees each page as it is read."""
    stream = connector.stream(selection.name).with_cursor_field(selection.cursor_field)
    seen = StreamTestRead(stream.name)
    start = len(recorder.exchanges)
    unit = None
    try:
        sync = open_sync(connector, stream, None, incremental=selection.incremental)
        units = sync.plan()
        seen.units = len(units)
        seen.planning = recorder.exchanges[start:]
        if not units:
            return seen
        index, seen.partitions = _choose(units, partition)
        unit = units[index]
        seen.unit = _describe(unit, index, len(units))
        partitioned = bool(getattr(sync, "partitioned", False))
        reading = _pages(connector, sync, unit)
        newest = None
        try:
            mark = len(recorder.exchanges)
            for records, latest in reading:
                if latest is not None and (newest is None or latest > newest):
                    newest = latest
                page = PageSeen(len(seen.pages) + 1, list(records), recorder.exchanges[mark:],
                                _state_after(stream, unit, newest, partitioned))
                seen.pages.append(page)
                mark = len(recorder.exchanges)
                if on_page is not None:
                    on_page(page)
                if len(seen.pages) >= pages:
                    seen.more_pages = next(reading, None) is not None
                    break
                if stop is not None and stop.is_set():
                    seen.stopped = True
                    break
            if not seen.pages and len(recorder.exchanges) > mark:  # answered, but no record came out
                seen.pages.append(PageSeen(1, [], recorder.exchanges[mark:],
                                           _state_after(stream, unit, None, partitioned)))
                if on_page is not None:
                    on_page(seen.pages[-1])
        finally:
            close = getattr(reading, "close", None)
            if close is not None:
                close()
    except FrameworkError as exc:
        if stop is not None and stop.is_set():
            seen.stopped = True
        else:
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

__all__ = ["BODY_LIMIT", "SECRET_HEADERS", "Exchange", "PageSeen", "RecordingTransport", "Stopped", "StreamTestRead",
           "masked_headers", "pagination_strategy", "test_read",
           "test_read_stream"]
