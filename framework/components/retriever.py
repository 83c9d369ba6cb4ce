"""Reading one stream slice: requests, pages and records.

The loop fits on one screen on purpose: build the request, let the slice
(cursor window, partition) and the pager add their values, send, select the
records, ask the pager for the next page. Records come out one page at a time
(a list per page), so callers move them in batches.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

from framework.components.http.request import RequestParts
from framework.components.http.requester import Requester
from framework.components.http.transport import HttpResponse
from framework.components.pagination import Paginator
from framework.components.partitions import LAZY_KEY, embedded_response
from framework.components.records import RecordSelector
from framework.components.registry import BuildContext, builds
from framework.components.slices import StreamSlice
from framework.errors import InterpolationError, ReadError
from framework.models import CustomDecoder, NoPagination, SimpleRetriever

SliceOptions = Callable[[RequestParts, StreamSlice], None]
_SEND = object()  # no first page held by a parent record: request it


def _no_options(parts: RequestParts, stream_slice: StreamSlice) -> None:
    return None


@dataclass(frozen=True)
class Retriever:
    requester: Requester
    selector: RecordSelector
    paginator: Paginator
    parameters: Mapping[str, Any]
    slice_options_on_every_page: bool = True
    decode: Callable[[HttpResponse], HttpResponse] | None = None  # a custom decoder (CustomDecoder)

    def read(self, stream_slice: StreamSlice, config: Mapping[str, Any], *,
             slice_options: SliceOptions = _no_options,
             stream_state: Mapping[str, Any] | None = None) -> Iterator[list[dict]]:
        """The records of one slice, one list per page."""
        variables = {"config": config, "parameters": self.parameters,
                     "stream_state": stream_state or {}, **stream_slice.template_variables()}
        pager = self.paginator.start()
        first = True
        while True:
            page_variables = {**variables, **pager.token_variables()}
            parts = self.requester.parts(page_variables)
            if first or self.slice_options_on_every_page:
                slice_options(parts, stream_slice)
            pager.apply(parts)
            _drop_params_in_url(parts)
            embedded = stream_slice.extra_fields.get(LAZY_KEY, _SEND) if first else _SEND
            # a parent record may hold this first page (lazy_read_pointer): then it is not requested
            response = self.requester.send(parts) if embedded is _SEND else embedded_response(embedded)
            if response is None:  # the error handler said to ignore this response
                return
            if self.decode is not None and embedded is _SEND:
                response = self.decode(response)
            try:
                page, records = self.selector.select_page(response, page_variables)
                more = pager.advance(response, page, variables)  # judged by the page as the API sent it
            except ReadError as exc:  # the body may echo a token: mask it again, with the credentials too
                self.requester.hide_secrets(exc).with_context(request=self.requester.describe(response.request))
                raise
            except InterpolationError as exc:  # a template that fails on this response
                raise ReadError(self.requester.mask(str(exc)),
                                request=self.requester.describe(response.request)) from None
            if records:
                yield records
            if not more:
                return
            first = False


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


@builds("SimpleRetriever")
def build_retriever(model: SimpleRetriever, ctx: BuildContext, path: tuple) -> Retriever:
    paginator_model = model.paginator
    if paginator_model is None:
        paginator_model = NoPagination()
    return Retriever(
        requester=ctx.build(model.requester, path + ("requester",)),
        selector=ctx.build(model.record_selector, path + ("record_selector",)),
        paginator=ctx.build(paginator_model, path + ("paginator",)),
        parameters=model.parameters,
        slice_options_on_every_page=not model.ignore_stream_slicer_parameters_on_paginated_requests,
        decode=ctx.build(model.decoder, path + ("decoder",)).decoded if isinstance(model.decoder, CustomDecoder)
        else None,
    )


__all__ = ["Retriever", "build_retriever"]
