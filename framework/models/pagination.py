"""Paginators: how the next page is asked for and when to stop."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from framework.models.base import BASE, RESPONSE, Component, spec
from framework.models.custom import CustomPaginationStrategy
from framework.models.decoders import Decoder
from framework.models.requests import RequestOption, RequestPath


class CursorPagination(Component):
    """The next page is named by a value in the response (a cursor, a next-page URL)."""

    type: Literal["CursorPagination"] = spec("Component type.", "CursorPagination", "CursorPagination")
    cursor_value: str = spec(
        "Template of the next page's token; an empty result ends pagination.",
        "{{ response.meta.next_cursor }}",
        template=RESPONSE,
        result="any",
    )
    stop_condition: str | None = spec(
        "Template that renders true when there is no next page.",
        "{{ not response.meta.has_more }}",
        None,
        template=RESPONSE,
        result="boolean",
    )
    page_size: int | str | None = spec(
        "Records asked for per page; a template must render an integer.", 100, None, template=BASE, result="integer"
    )
    decoder: Decoder | None = spec(
        "Ignored, as Airbyte ignores it here: the retriever's `decoder` reads every response of the stream.",
        {"type": "JsonDecoder"}, None)


class PageIncrement(Component):
    """Pages are numbered: 1, 2, 3, ... (or from `start_from_page`)."""

    type: Literal["PageIncrement"] = spec("Component type.", "PageIncrement", "PageIncrement")
    page_size: int | str | None = spec(
        "Records per page; a shorter page is the last. A template must render an integer.",
        100,
        None,
        template=BASE,
        result="integer",
    )
    start_from_page: int = spec("Number of the first page.", 1, 0)
    inject_on_first_request: bool = spec("Send the page number on the first request too.", True, False)


class OffsetIncrement(Component):
    """Pages are addressed by record offset: 0, page_size, 2*page_size, ..."""

    type: Literal["OffsetIncrement"] = spec("Component type.", "OffsetIncrement", "OffsetIncrement")
    page_size: int | str | None = spec(
        "Records per page; a shorter page is the last. A template must render an integer.",
        100,
        None,
        template=BASE | {"response"},
        result="integer",
    )
    inject_on_first_request: bool = spec("Send offset 0 on the first request too.", True, False)


PaginationStrategy = Annotated[
    CursorPagination | PageIncrement | OffsetIncrement | CustomPaginationStrategy, Field(discriminator="type")
]


class DefaultPaginator(Component):
    """Pages through results with a strategy, putting the page token and size into the request."""

    type: Literal["DefaultPaginator"] = spec("Component type.", "DefaultPaginator", "DefaultPaginator")
    pagination_strategy: PaginationStrategy = spec(
        "How the next page's token is computed.",
        {"type": "CursorPagination", "cursor_value": "{{ response.next }}"},
    )
    page_token_option: Annotated[RequestOption | RequestPath, Field(discriminator="type")] | None = spec(
        "Where the page token goes; RequestPath replaces the path with it (for next-page URLs).",
        {"type": "RequestOption", "inject_into": "request_parameter", "field_name": "page"},
        None,
        default_type="RequestOption",
    )
    page_size_option: RequestOption | None = spec(
        "Where the page size goes.",
        {"type": "RequestOption", "inject_into": "request_parameter", "field_name": "per_page"},
        None,
    )
    decoder: Decoder | None = spec(
        "Ignored, as Airbyte ignores it here: the retriever's `decoder` reads every response of the stream.",
        {"type": "JsonDecoder"}, None)


class NoPagination(Component):
    """One request per partition: the API does not page."""

    takes_parameters = False

    type: Literal["NoPagination"] = spec("Component type.", "NoPagination", "NoPagination")


Paginator = Annotated[DefaultPaginator | NoPagination, Field(discriminator="type")]
