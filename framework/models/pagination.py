"""Paginators: how the next page is asked for and when to stop."""

from typing import Annotated, Literal

from pydantic import Field, model_validator

from framework.models.base import BASE, RESPONSE, Component, spec
from framework.models.custom import CustomPaginationStrategy
from framework.models.decoders import Decoder
from framework.models.requests import RequestOption, RequestPath


class CursorPagination(Component):
    """The next page is named by a value in the response (a cursor, a next-page URL)."""

    type: Literal["CursorPagination"] = spec("Component type.", "CursorPagination", "CursorPagination")
    cursor_value: str = spec(
        "Template of the next page's token; a result that is empty or false (nothing, blank, `{}`, `[]`, `0`, "
        "`false`) ends pagination, and a lookup through a key the response lacks fails the read.",
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


class PaginationResetLimits(Component):
    """When to restart pagination on the reader's own initiative: after so many records of one slice."""

    takes_parameters = False

    type: Literal["PaginationResetLimits"] = spec(
        "Component type.", "PaginationResetLimits", "PaginationResetLimits"
    )
    number_of_records: int | None = spec(
        "Restart pagination once this many records of the slice were read since it last started "
        "(for APIs that stop paginating after a fixed number of records).",
        10000,
        None,
    )


class PaginationReset(Component):
    """What restarting pagination means, when an error filter says RESET_PAGINATION or a limit is reached."""

    takes_parameters = False

    type: Literal["PaginationReset"] = spec("Component type.", "PaginationReset", "PaginationReset")
    action: Literal["SPLIT_USING_CURSOR", "RESET"] = spec(
        "RESET restarts from the first page of the same slice (once; a second reset fails the stream). "
        "SPLIT_USING_CURSOR restarts from the first page with the window starting at the latest cursor "
        "value read so far (records must come in ascending cursor order); without progress it fails.",
        "SPLIT_USING_CURSOR",
    )
    limits: PaginationResetLimits | None = spec(
        "When to restart without being asked; only when the API asks (RESET_PAGINATION) when left out.",
        {"type": "PaginationResetLimits", "number_of_records": 10000},
        None,
    )


class PageSizeReduction(Component):
    """How the page size shrinks when an error filter says REDUCE_PAGE_SIZE: the same page is asked for
    again with `floor(page size / reduction_factor)` records, after a short wait."""

    takes_parameters = False

    type: Literal["PageSizeReduction"] = spec("Component type.", "PageSizeReduction", "PageSizeReduction")
    reduction_factor: float = spec("Divisor of the page size at each reduction; more than 1.", 2, 2)
    minimum_page_size: int = spec(
        "Smallest page size asked for; below it the read fails (after `retries_at_minimum_page_size`).", 10, 1
    )
    max_attempts: int = spec(
        "Reductions in a row without a page getting through before the read fails; every page that gets "
        "through starts the count again.",
        5,
        5,
    )
    backoff_seconds: float = spec(
        "Seconds to wait before asking again, times the number of attempts in a row (the error handler's "
        "backoff is not used here).",
        0.5,
        0.5,
    )
    retries_at_minimum_page_size: int = spec(
        "Times the same page is asked for again, unchanged, once the page size cannot shrink further.", 3, 0
    )
    failure_message: str | None = spec(
        "Sentence added to the error when the page size cannot shrink further: what the user can do.",
        "Select fewer fields on this stream.",
        None,
    )
    reset_policy: Literal["NEVER", "AFTER_SUCCESSFUL_PAGE"] = spec(
        "When the configured page size comes back: never (the rest of the slice keeps the reduced size), or "
        "after every page that gets through.",
        "NEVER",
        "NEVER",
    )

    @model_validator(mode="after")
    def _in_range(self) -> "PageSizeReduction":
        if self.reduction_factor <= 1:
            raise ValueError(f"`reduction_factor` must be more than 1, not {self.reduction_factor:g}")
        if self.minimum_page_size < 1:
            raise ValueError(f"`minimum_page_size` must be 1 or more, not {self.minimum_page_size}")
        if self.max_attempts < 1:
            raise ValueError(f"`max_attempts` must be 1 or more, not {self.max_attempts}")
        if self.backoff_seconds < 0:
            raise ValueError(f"`backoff_seconds` cannot be negative, not {self.backoff_seconds:g}")
        if self.retries_at_minimum_page_size < 0:
            raise ValueError(f"`retries_at_minimum_page_size` cannot be negative, not "
                             f"{self.retries_at_minimum_page_size}")
        return self


class RequestWindowSplitting(Component):
    """How a datetime window is split when an error filter says SPLIT_REQUEST_WINDOW: the window is read
    again as two halves, one after the other (each split further if need be)."""

    takes_parameters = False

    type: Literal["RequestWindowSplitting"] = spec(
        "Component type.", "RequestWindowSplitting", "RequestWindowSplitting"
    )
    min_split_window: str | None = spec(
        "ISO 8601 duration: a window this short or shorter is not split further (the cursor's "
        "`cursor_granularity` is the floor anyway).",
        "P1D",
        None,
        format="duration",
    )
    failure_message: str | None = spec(
        "Sentence added to the error when the window cannot be split further: what the user can do.",
        "Lower `time_window` so that each request covers less data.",
        None,
    )
