"""Reading one stream slice: requests, pages and records.

The loop fits on one screen on purpose: build the request, let the slice
(cursor window, partition) and the pager add their values, send, select the
records, ask the pager for the next page. Records come out one page at a time
(a list per page), so callers move them in batches. A streamed response
format (the retriever's ``decoder``: CSV, JSON lines, gzip...) hands out one
page's records in bounded batches as the body streams in.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

from framework.components.http.request import RequestParts
from framework.components.http.requester import Requester
from framework.components.http.transport import HttpResponse
from framework.components.pagination import NoPaginator, Paginator
from framework.components.records import DpathExtractor, RecordSelector
from framework.components.records.decoders import ResponseDecoder, XmlDocument, pagination_capable
from framework.components.registry import BuildContext, builds
from framework.components.slices import StreamSlice
from framework.errors import ConfigError, InterpolationError, ReadError, place_suffix
from framework.models import CustomDecoder, DefaultPaginator, JsonDecoder, NoPagination, SimpleRetriever

SliceOptions = Callable[[RequestParts, StreamSlice], None]


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
    decoder: ResponseDecoder | None = None  # a response format other than JSON (the selector reads with it)

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
            response = self.requester.send(parts)
            if response is None:  # the error handler said to ignore this response
                return
            if self.decode is not None:
                response = self.decode(response)
            try:
                decoder = self.decoder
                if decoder is not None and decoder.streamed:
                    page: list[dict] = []
                    for batch, records in self.selector.select_batches(response, page_variables):
                        page = batch
                        if records:
                            yield records
                    records = []
                    # as in Airbyte, paginators do not see a streamed body (only JSON in gzip may be paged:
                    # one batch, so `page` is the whole page)
                    more = pager.advance(response.with_json({}), page, variables)
                else:
                    page, records = self.selector.select_page(response, page_variables)
                    if isinstance(decoder, XmlDocument) and not isinstance(self.paginator, NoPaginator):
                        response = response.with_json(decoder.pagination_body(response.content))
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
    requester = ctx.build(model.requester, path + ("requester",))
    selector = ctx.build(model.record_selector, path + ("record_selector",))
    decoder: ResponseDecoder | None = None
    if model.decoder is not None and not isinstance(model.decoder, (CustomDecoder, JsonDecoder)):
        if isinstance(paginator_model, DefaultPaginator) and not pagination_capable(model.decoder):
            raise ConfigError(
                f"a DefaultPaginator cannot read {model.decoder.type} responses"
                f"{place_suffix(ctx.place(path + ('paginator',)))}; as in Airbyte, only JsonDecoder, XmlDecoder "
                "and a GzipDecoder of JsonDecoder can be paged: remove the paginator or change the `decoder`")
        if isinstance(selector, RecordSelector) and isinstance(selector.extractor, DpathExtractor):
            decoder = ctx.build(model.decoder, path + ("decoder",))
            selector = dataclasses.replace(selector, extractor=selector.extractor.with_decoder(decoder))
            if decoder.streamed:
                requester = dataclasses.replace(requester, stream=True)
        # else a custom extractor, which reads the response its own way
    return Retriever(
        requester=requester,
        selector=selector,
        paginator=ctx.build(paginator_model, path + ("paginator",)),
        parameters=model.parameters,
        slice_options_on_every_page=not model.ignore_stream_slicer_parameters_on_paginated_requests,
        decode=ctx.build(model.decoder, path + ("decoder",)).decoded if isinstance(model.decoder, CustomDecoder)
        else None,
        decoder=decoder,
    )


__all__ = ["Retriever", "build_retriever"]
