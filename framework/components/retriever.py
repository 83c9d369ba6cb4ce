"""Reading one stream slice: requests, pages and records.

The loop fits on one screen on purpose: build the request, let the slice
(cursor window, partition) and the pager add their values, send, select the
records, ask the pager for the next page. Records come out one page at a time
(a list per page), so callers move them in batches. A streamed response
format (the retriever's ``decoder``: CSV, JSON lines, gzip...) hands out one
page's records in bounded batches as the body streams in.

Pagination restarts (Airbyte's ``pagination_reset``) when the error handler
answers RESET_PAGINATION, or when ``limits.number_of_records`` records were read
since the last start: the pager starts again from its first page. With RESET
(or no ``pagination_reset``) the slice stays the same, and a second restart of
the same slice fails the read; with SPLIT_USING_CURSOR and a datetime cursor the
window then starts at the latest cursor value read so far, and a restart that
makes no progress fails. Records already handed out stay handed out (the
restarted pages may send some again), as in Airbyte.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import parse_qs, urlsplit

from msgspec import Struct

from framework.components.context import BuildContext, builds
from framework.components.http.client import (
    RETRY_LOG,
    PageSizeReductionRequired,
    PaginationResetRequired,
    RequestWindowSplitRequired,
)
from framework.components.http.request import RequestParts
from framework.components.http.requester import Requester, asks_for_properties
from framework.components.http.transport import HttpResponse
from framework.components.oversized_pages import oversized_pages_stream, streaming_oversized
from framework.components.pagination import NoPaginator, Paginator
from framework.components.partitions import LAZY_KEY, embedded_response
from framework.components.records import DpathExtractor, RecordSelector
from framework.components.slices import StreamSlice
from framework.errors import ConfigError, InterpolationError, ReadError, UnreadableBodyError, place_suffix
from framework.models import (
    CustomDecoder,
    DefaultPaginator,
    JsonDecoder,
    NoPagination,
    PageSizeReduction,
    PaginationReset,
    RequestWindowSplitting,
    SimpleRetriever,
)
from framework.temporal.durations import parse_duration
from framework.values import replace

if TYPE_CHECKING:  # pragma: no cover
    import isodate  # loaded with the first duration parsed (framework.temporal.durations)

    # loaded only for a requester with QueryProperties, and a manifest that names a format other than JSON
    from framework.components.query_properties import Fetched, QueryPropertiesReader
    from framework.components.records.decoders import ResponseDecoder

SliceOptions = Callable[[RequestParts, StreamSlice], None]
_SEND = object()  # no first page held by a parent record: request it


class Cursor(Protocol):
    """What a pagination reset needs of a datetime cursor (see :mod:`framework.components.incremental`)."""

    @property
    def partition_field_start(self) -> str: ...

    @property
    def partition_field_end(self) -> str: ...

    @property
    def granularity(self) -> timedelta | isodate.Duration | None: ...

    def record_value(self, record: Mapping[str, Any]) -> datetime | None: ...

    def format(self, dt: datetime) -> Any: ...

    def window_bounds(self, cursor_slice: Mapping[str, Any]) -> tuple[datetime, datetime]: ...


class PaginationResets(Struct, frozen=True):
    """The runtime form of ``pagination_reset``: ``split`` for SPLIT_USING_CURSOR, ``limit`` in records."""

    split: bool = False
    limit: int | None = None
    place: str | None = None


_RESET_BY_DEFAULT = PaginationResets()


class PageSizes(Struct, frozen=True):
    """The runtime form of ``page_size_reduction`` (see PageSizeReduction in the reference)."""

    factor: float
    minimum: int
    max_attempts: int
    backoff: float
    retries_at_minimum: int
    failure_message: str | None
    restore: bool  # reset_policy AFTER_SUCCESSFUL_PAGE
    sleep: Callable[[float], None]
    place: str | None = None


# However the halves are cut, at most this many splits deep (a guard of its own, as in Airbyte).
MAX_SPLIT_DEPTH = 10


class WindowSplits(Struct, frozen=True):
    """The runtime form of ``request_window_splitting``: a refused window is read again as two halves."""

    min_split: timedelta | isodate.Duration | None = None
    failure_message: str | None = None
    place: str | None = None

    def halves(self, window: StreamSlice, cursor: Cursor | None, depth: int,
               detail: str | None) -> tuple[StreamSlice, StreamSlice]:
        """The two halves of ``window``, in order, meeting one ``cursor_granularity`` apart; raises when
        ``window`` cannot be split further (or the splits went ``MAX_SPLIT_DEPTH`` deep)."""
        rejection = f"; the API's answer: {detail}" if detail else ""
        if cursor is None or not window.cursor_slice:
            raise ReadError("the API asked for a smaller window (SPLIT_REQUEST_WINDOW) but the stream reads no "
                            "datetime windows; give it a DatetimeBasedCursor or change the filter's action",
                            place=self.place, failure_type="config_error")
        if depth >= MAX_SPLIT_DEPTH:
            raise ReadError(self._ended(f"the API still refused the window after {MAX_SPLIT_DEPTH} splits"
                                        f"{rejection}"), place=self.place, failure_type="transient_error")
        found = self._split(window, cursor)
        if found is None:
            floor = " or `min_split_window`" if self.min_split is not None else ""
            raise ReadError(self._ended(f"the API refused the window {dict(window.cursor_slice)} even at the "
                                        f"smallest size the cursor's granularity{floor} allows{rejection}"),
                            place=self.place, failure_type="transient_error")
        return found

    def _split(self, window: StreamSlice, cursor: Cursor) -> tuple[StreamSlice, StreamSlice] | None:
        step = cursor.granularity
        if not isinstance(step, timedelta) or step <= timedelta(0):
            return None  # no granularity, or one in months: no unit to count the window in
        low, high = cursor.window_bounds(window.cursor_slice)
        if low >= high:
            return None
        span = high - low
        floor = self.min_split
        if floor is not None and not isinstance(floor, timedelta):  # an isodate.Duration: months or years
            floor = floor.totimedelta(start=low)
        if floor is not None and span <= floor:
            return None
        units = span // step + 1  # the window's bounds are both in it
        if units <= 1:
            return None
        first_end = low + (units // 2) * step - step
        second_start = first_end + step
        if not low <= first_end < second_start <= high:
            return None
        start_key, end_key = cursor.partition_field_start, cursor.partition_field_end

        def part(start: datetime, end: datetime) -> StreamSlice:
            bounds = {**window.cursor_slice, start_key: cursor.format(start), end_key: cursor.format(end)}
            return StreamSlice(window.partition, bounds, window.extra_fields)

        return part(low, first_end), part(second_start, high)

    def _ended(self, message: str) -> str:
        extra = (self.failure_message or "").strip()
        return f"{message}. {extra}" if extra else message


class _Reducer:
    """One slice's page size reductions: the size in effect, the attempts in a row."""

    __slots__ = ("at_minimum", "attempts", "configured", "current", "sizes")

    def __init__(self, sizes: PageSizes, configured: int | None):
        self.sizes = sizes
        self.configured = configured
        self.current: int | None = None  # None: the configured size
        self.attempts = 0
        self.at_minimum = 0

    def reduce(self, detail: str | None) -> int | None:
        """The page size to ask for the same page with (after the wait); raises when there is none."""
        sizes = self.sizes
        size = self.current if self.current is not None else self.configured
        if not isinstance(size, int) or isinstance(size, bool):
            raise ReadError("the API asked for a smaller page (REDUCE_PAGE_SIZE) but the paginator sends no "
                            "page size to reduce; set the strategy's `page_size` and the `page_size_option`",
                            place=sizes.place, failure_type="config_error")
        rejection = f"; the API's answer: {detail}" if detail else ""
        smaller = max(sizes.minimum, int(size // sizes.factor))
        if smaller >= size:
            if self.at_minimum < sizes.retries_at_minimum:
                self.at_minimum += 1
                sizes.sleep(sizes.backoff * self.at_minimum)
                return self.current
            if self.current is None and sizes.minimum > 1:
                raise ReadError(
                    f"the page size ({size}) is already at or below `minimum_page_size` ({sizes.minimum}), so it "
                    f"cannot be reduced{rejection}; raise the page size or lower `minimum_page_size`",
                    place=sizes.place, failure_type="config_error")
            raise ReadError(self._ended(f"the API kept refusing pages down to the smallest page size allowed "
                                        f"({size} records){rejection}"), place=sizes.place,
                            failure_type="transient_error")
        self.attempts += 1
        if self.attempts > sizes.max_attempts:
            raise ReadError(self._ended(f"the API refused pages at every page size asked for, down to {size} "
                                        f"records ({sizes.max_attempts} reductions in a row){rejection}"),
                            place=sizes.place, failure_type="transient_error")
        self.current = smaller
        sizes.sleep(sizes.backoff * self.attempts)
        return smaller

    def _ended(self, message: str) -> str:
        extra = (self.sizes.failure_message or "").strip()
        return f"{message}. {extra}" if extra else message

    def page_went_through(self) -> int | None:
        """A page was read: the attempts start again; the page size to use next."""
        self.attempts = self.at_minimum = 0
        if self.sizes.restore:
            self.current = None
        return self.current


class _Restarts:
    """One slice's pagination restarts: records since the last start, the latest cursor value, how
    many restarts kept the same slice."""

    __slots__ = ("count", "cursor", "latest", "limit", "same", "split")

    def __init__(self, resets: PaginationResets, cursor: Cursor | None, stream_slice: StreamSlice):
        self.limit = resets.limit
        self.cursor = cursor if resets.split and stream_slice.cursor_slice else None
        self.split = self.cursor is not None
        self.count = 0
        self.latest: datetime | None = None
        self.same = 0

    def observe(self, records: list[dict]) -> bool:
        """Count a page's records; True when the limit says to restart."""
        if self.cursor is not None:
            value = self.cursor.record_value
            for record in records:
                found = value(record)
                if found is not None and (self.latest is None or found > self.latest):
                    self.latest = found
        if self.limit is None:
            return False
        self.count += len(records)
        return self.count >= self.limit

    def restart(self, original: StreamSlice, current: StreamSlice, why: str, place: str | None) -> StreamSlice:
        """The slice to read from the first page again; fails when restarting would not move on."""
        following = current
        if self.cursor is not None and self.latest is not None:
            start_key = self.cursor.partition_field_start
            window = dict(original.cursor_slice)
            window[start_key] = self.cursor.format(self.latest)
            following = StreamSlice(original.partition, window, original.extra_fields)
        elif self.cursor is not None:
            following = original
        if following == current:
            self.same += 1
            allowed = 1 if self.split else 2
            if self.same >= allowed:
                raise ReadError(
                    f"pagination was restarted ({why}) {self.same} time{'s' * (self.same != 1)} for the same "
                    + ("window without reading further in it" if self.split else "slice")
                    + "; the API keeps asking for it: check the filter that says RESET_PAGINATION, the "
                    "`pagination_reset` limits, and that records come in ascending cursor order",
                    place=place, failure_type="system_error")
        else:
            self.same = 0
        self.count = 0
        return following


#: Who watches the pages read in this context (a normal run's warnings, :class:`framework.engine.signals.UnitWatch`):
#: called with each response whose records were selected whole (None in its place when the body is not JSON),
#: the page as the API sent it and the records kept. None (the default): nobody, at no cost.
PAGE_WATCH: ContextVar[Callable[[HttpResponse | None, list[dict], list[dict]], None] | None] = ContextVar(
    "page_watch", default=None)


def _no_options(parts: RequestParts, stream_slice: StreamSlice) -> None:
    return None


class Retriever(Struct, frozen=True):
    requester: Requester
    selector: RecordSelector
    paginator: Paginator
    parameters: Mapping[str, Any]
    slice_options_on_every_page: bool = True
    decode: Callable[[HttpResponse], HttpResponse] | None = None  # a custom decoder (CustomDecoder)
    query_properties: QueryPropertiesReader | None = None  # the requester's QueryProperties
    resets: PaginationResets = _RESET_BY_DEFAULT
    page_sizes: PageSizes | None = None
    windows: WindowSplits | None = None
    decoder: ResponseDecoder | None = None  # a response format other than JSON (the selector reads with it)

    def read(self, stream_slice: StreamSlice, config: Mapping[str, Any], *,
             slice_options: SliceOptions = _no_options,
             stream_state: Mapping[str, Any] | None = None,
             cursor: Cursor | None = None) -> Iterator[list[dict]]:
        """The records of one slice, one list per page. ``cursor``: the stream's datetime cursor, for a
        SPLIT_USING_CURSOR pagination reset and for splitting windows."""
        if self.windows is None:
            return self._pages(stream_slice, config, slice_options, stream_state, cursor)
        return self._split_windows(self.windows, stream_slice, config, slice_options, stream_state, cursor, 0)

    def _split_windows(self, windows: WindowSplits, window: StreamSlice, config: Mapping[str, Any],
                       slice_options: SliceOptions, stream_state: Mapping[str, Any] | None, cursor: Cursor | None,
                       depth: int) -> Iterator[list[dict]]:
        """The window's pages; when the API refuses it (SPLIT_REQUEST_WINDOW), its two halves' pages, each
        read from its first page (pages of the window read before the refusal stay read, as in Airbyte)."""
        try:
            yield from self._pages(window, config, slice_options, stream_state, cursor)
        except RequestWindowSplitRequired as signal:
            for half in windows.halves(window, cursor, depth, signal.detail):
                yield from self._split_windows(windows, half, config, slice_options, stream_state, cursor, depth + 1)

    def _pages(self, stream_slice: StreamSlice, config: Mapping[str, Any], slice_options: SliceOptions,
               stream_state: Mapping[str, Any] | None, cursor: Cursor | None) -> Iterator[list[dict]]:
        original = stream_slice
        base = {"config": config, "parameters": self.parameters, "stream_state": stream_state or {}}
        variables = {**base, **stream_slice.template_variables()}
        restarts = _Restarts(self.resets, cursor, stream_slice)
        pager = self.paginator.start()
        reducer = _Reducer(self.page_sizes, pager.page_size()) if self.page_sizes is not None else None
        first = True
        watch = PAGE_WATCH.get()
        while True:
            page_variables = {**variables, **pager.token_variables()}
            fetch = functools.partial(self._fetch, stream_slice=stream_slice, pager=pager,
                                      slice_options=slice_options, first=first)
            try:
                if self.query_properties is None:
                    response, page, records = fetch(page_variables, {})
                else:  # one request per chunk of properties, their records merged by key
                    response, page, records = self.query_properties.read_page(stream_slice, page_variables, fetch)
            except PaginationResetRequired:  # the error handler said RESET_PAGINATION
                stream_slice = restarts.restart(original, stream_slice, "RESET_PAGINATION", self.resets.place)
                variables = {**base, **stream_slice.template_variables()}
                pager, first = self.paginator.start(), True
                if reducer is not None:  # the reduced size carries over, as the attempts do
                    pager.size_override = reducer.current
                continue
            except PageSizeReductionRequired as signal:  # REDUCE_PAGE_SIZE: the same page, fewer records
                if reducer is None:
                    raise
                pager.size_override = reducer.reduce(signal.detail)
                continue
            if response is None:  # the error handler said to ignore this response
                if records:
                    yield records
                return
            unsent = records  # the page's records, not handed out yet
            try:
                decoder = self.decoder
                if page is None:  # a streamed body, left unread by `_fetch`: its records in batches as it comes
                    unsent = []
                    page = []
                    for batch, records in self.selector.select_batches(response, page_variables):
                        page = batch
                        if records:
                            yield records
                    records = []
                    # as in Airbyte, paginators do not see a streamed body (only JSON in gzip may be paged:
                    # one batch, so `page` is the whole page)
                    more = pager.advance(response.with_json({}), page, variables)
                else:
                    if decoder is not None and not isinstance(self.paginator, NoPaginator):
                        from framework.components.records.decoders import XmlDocument  # loaded: it built `decoder`

                        if isinstance(decoder, XmlDocument):
                            response = response.with_json(decoder.pagination_body(response.content))
                    more = pager.advance(response, page, variables)  # judged by the page as the API sent it
                    if watch is not None:
                        watch(response if decoder is None else None, page, records)
            except (ReadError, InterpolationError) as exc:
                failure = self._failure(exc, response)
                if unsent:  # the page was read: its records go out before the failure, as in airbyte-cdk
                    yield unsent
                raise failure from None
            if reducer is not None:  # after `advance`, which judged the page by the size it was asked with
                pager.size_override = reducer.page_went_through()
            if records:
                yield records
            if (restarts.limit is not None or restarts.split) and restarts.observe(records):
                stream_slice = restarts.restart(original, stream_slice, f"{restarts.limit} records read",
                                                self.resets.place)
                variables = {**base, **stream_slice.template_variables()}
                pager, first = self.paginator.start(), True
                continue
            if not more:
                return
            first = False

    def _fetch(self, variables: Mapping[str, Any], params: Mapping[str, str], stream_slice: StreamSlice,
               pager: Any, slice_options: SliceOptions, first: bool) -> Fetched:
        """Send one request and select its records: (response or None, the page as sent, the records kept)."""
        parts = self.requester.parts(variables)
        parts.params.update(params)
        if first or self.slice_options_on_every_page:
            slice_options(parts, stream_slice)
        pager.apply(parts)
        _drop_params_in_url(parts)
        embedded = stream_slice.extra_fields.get(LAZY_KEY, _SEND) if first else _SEND
        attempt = 0
        while True:
            # a parent record may hold this first page (lazy_read_pointer): then it is not requested
            response = self.requester.send(parts) if embedded is _SEND else embedded_response(embedded)
            if response is None:
                return None, [], []
            if self.decode is not None and embedded is _SEND:
                response = self.decode(response)
            if (response.oversized or self.decoder is not None and self.decoder.streamed) \
                    and self.query_properties is None:
                return response, None, []  # the caller reads the body in batches as it streams in
            try:
                page, records = self.selector.select_page(response, variables)
            except UnreadableBodyError as exc:  # truncated, or an error page sent with 200: retried as a 5xx
                attempt += 1
                if embedded is not _SEND or not self._retry_unreadable(exc, response, attempt):
                    raise self._failure(exc, response) from None
                continue
            except (ReadError, InterpolationError) as exc:
                raise self._failure(exc, response) from None
            return response, page, records

    def _retry_unreadable(self, exc: UnreadableBodyError, response: HttpResponse, attempt: int) -> bool:
        """Wait before asking again for a body that could not be read; False when the retries are spent
        (the error then says how many attempts were made)."""
        client = self.requester.client
        most = client.error_handler.max_retries
        if attempt > most:
            exc.reason = f"gave up after {attempt} attempts: {exc.reason}"
            exc.args = (exc.reason,)
            return False
        wait = client.error_handler.backoff(response, attempt)
        if RETRY_LOG.isEnabledFor(logging.WARNING):
            stream = f"stream `{client.stream}`: " if client.stream else ""
            RETRY_LOG.warning(self.requester.mask(
                f"{stream}retrying {response.request.describe()} after a body that is not JSON "
                f"(attempt {attempt} of {most}), waiting {wait:g} s"))
        client.sleep(wait)
        return True

    def _failure(self, exc: ReadError | InterpolationError, response: HttpResponse) -> ReadError:
        if isinstance(exc, ReadError):  # the body may echo a token: mask it again, with the credentials too
            return self.requester.hide_secrets(exc).with_context(request=self.requester.describe(response.request))
        # a template that fails on this response
        return ReadError(self.requester.mask(str(exc)), request=self.requester.describe(response.request))


def _drop_params_in_url(parts: RequestParts) -> None:
    """Leave out query parameters the URL already carries with the same value (a next-page URL
    usually repeats the page size, say): sending them twice confuses some APIs."""
    url = parts.url if parts.url is not None else parts.path
    if not parts.params or "?" not in url:
        return
    in_url = parse_qs(urlsplit(url).query, keep_blank_values=True)
    for name, values in in_url.items():
        if name in parts.params:
            value = parts.params[name]
            text = ("true" if value else "false") if isinstance(value, bool) else str(value)
            if text == values[0]:
                del parts.params[name]


def _query_properties(model: SimpleRetriever, ctx: BuildContext, path: tuple) -> QueryPropertiesReader | None:
    """The requester's QueryProperties, their runtime loaded only for a requester that has them."""
    if not asks_for_properties(model.requester):
        return None
    from framework.components.query_properties import build_query_properties

    return build_query_properties(model, ctx, path)


@builds("SimpleRetriever")
def build_retriever(model: SimpleRetriever, ctx: BuildContext, path: tuple) -> Retriever:
    paginator_model = model.paginator
    if paginator_model is None:
        paginator_model = NoPagination.model_construct()  # all defaults: no validator to build, for start-up speed
    requester = ctx.build(model.requester, path + ("requester",))
    selector = ctx.build(model.record_selector, path + ("record_selector",))
    decoder: ResponseDecoder | None = None
    if model.decoder is not None and not isinstance(model.decoder, (CustomDecoder, JsonDecoder)):
        from framework.components.records.decoders import pagination_capable  # with a format other than JSON only

        if isinstance(paginator_model, DefaultPaginator) and not pagination_capable(model.decoder):
            raise ConfigError(
                f"a DefaultPaginator cannot read {model.decoder.type} responses"
                f"{place_suffix(ctx.place(path + ('paginator',)))}; as in Airbyte, only JsonDecoder, XmlDecoder "
                "and a GzipDecoder of JsonDecoder can be paged: remove the paginator or change the `decoder`")
        if isinstance(selector, RecordSelector) and isinstance(selector.extractor, DpathExtractor):
            decoder = ctx.build(model.decoder, path + ("decoder",))
            selector = replace(selector, extractor=selector.extractor.with_decoder(decoder))
            if decoder.streamed:
                requester = replace(requester, stream=True)
        # else a custom extractor, which reads the response its own way
    if oversized_pages_stream(model, requester, selector):
        requester = streaming_oversized(requester)
    paginator = ctx.build(paginator_model, path + ("paginator",))
    if model.page_size_reduction is not None and getattr(getattr(paginator, "strategy", None), "takes_page_size",
                                                         True) is False:
        where = path + ("paginator", "pagination_strategy")
        raise ConfigError(
            f"`page_size_reduction` tells the pagination strategy the smaller page size, but "
            f"`{getattr(getattr(paginator_model, 'pagination_strategy', None), 'class_name', '?')}.next_page_token` "
            "takes no "
            f"`page_size_override`{place_suffix(ctx.place(where))}; add `page_size_override: Optional[int] = None` "
            "to it (a strategy that does not stop on its page size can ignore the value)")
    return Retriever(
        requester=requester,
        selector=selector,
        paginator=paginator,
        parameters=model.parameters,
        slice_options_on_every_page=not model.ignore_stream_slicer_parameters_on_paginated_requests,
        decode=ctx.build(model.decoder, path + ("decoder",)).decoded if isinstance(model.decoder, CustomDecoder)
        else None,
        query_properties=_query_properties(model, ctx, path),
        resets=_resets(model.pagination_reset, ctx.place(path + ("pagination_reset",))),
        page_sizes=_page_sizes(model.page_size_reduction, ctx, path + ("page_size_reduction",)),
        windows=_windows(model.request_window_splitting, ctx.place(path + ("request_window_splitting",))),
        decoder=decoder,
    )


def _windows(model: RequestWindowSplitting | None, place: str | None) -> WindowSplits | None:
    if model is None:
        return None
    floor = parse_duration(model.min_split_window) if model.min_split_window else None
    return WindowSplits(floor, model.failure_message, place)


def _page_sizes(model: PageSizeReduction | None, ctx: BuildContext, path: tuple) -> PageSizes | None:
    if model is None:
        return None
    return PageSizes(factor=model.reduction_factor, minimum=model.minimum_page_size, max_attempts=model.max_attempts,
                     backoff=model.backoff_seconds, retries_at_minimum=model.retries_at_minimum_page_size,
                     failure_message=model.failure_message, restore=model.reset_policy == "AFTER_SUCCESSFUL_PAGE",
                     sleep=ctx.sleep, place=ctx.place(path))


def _resets(model: PaginationReset | None, place: str | None) -> PaginationResets:
    if model is None:
        return _RESET_BY_DEFAULT
    limit = model.limits.number_of_records if model.limits is not None else None
    return PaginationResets(split=model.action == "SPLIT_USING_CURSOR", limit=limit, place=place)


__all__ = ["MAX_SPLIT_DEPTH", "Cursor", "PageSizes", "PaginationResets", "Retriever", "WindowSplits",
           "build_retriever"]
