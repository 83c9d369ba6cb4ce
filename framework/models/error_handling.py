"""Error handling: which responses are errors, and how long to wait before retrying."""

from typing import Annotated, Literal

from pydantic import Field, model_validator

from framework.models.base import BASE, ERROR, Component, spec
from framework.models.custom import CustomBackoffStrategy, CustomErrorHandler


class ConstantBackoffStrategy(Component):
    """Waits the same time before every retry."""

    type: Literal["ConstantBackoffStrategy"] = spec(
        "Component type.", "ConstantBackoffStrategy", "ConstantBackoffStrategy"
    )
    backoff_time_in_seconds: float | str = spec(
        "Seconds to wait; a template must render a number.", 10, template=BASE, result="number"
    )


class ExponentialBackoffStrategy(Component):
    """Waits `factor * 2^attempt` seconds before retry number `attempt`."""

    type: Literal["ExponentialBackoffStrategy"] = spec(
        "Component type.", "ExponentialBackoffStrategy", "ExponentialBackoffStrategy"
    )
    factor: float | str = spec(
        "Multiplier of the doubling wait, in seconds; a template must render a number.",
        5,
        5,
        template=BASE,
        result="number",
    )


class WaitTimeFromHeader(Component):
    """Waits the number of seconds a response header asks for (such as `Retry-After`)."""

    type: Literal["WaitTimeFromHeader"] = spec("Component type.", "WaitTimeFromHeader", "WaitTimeFromHeader")
    header: str = spec("Name of the header with the wait in seconds.", "Retry-After", template=BASE)
    regex: str | None = spec(
        "Regular expression whose first group extracts the number from the header value.", "([-+]?\\d+)", None
    )
    max_waiting_time_in_seconds: float | str | None = spec(
        "Longest wait accepted; a longer one fails the stream instead of stalling it.",
        3600,
        None,
        template=BASE,
        result="number",
    )


class WaitUntilTimeFromHeader(Component):
    """Waits until the epoch time a response header names (such as `X-RateLimit-Reset`)."""

    type: Literal["WaitUntilTimeFromHeader"] = spec(
        "Component type.", "WaitUntilTimeFromHeader", "WaitUntilTimeFromHeader"
    )
    header: str = spec("Name of the header with the epoch time to wait for.", "X-RateLimit-Reset", template=BASE)
    min_wait: float | str | None = spec(
        "Shortest wait in seconds, whatever the header says.", 1, None, template=BASE, result="number"
    )
    regex: str | None = spec(
        "Regular expression whose first group extracts the time from the header value.", "([-+]?\\d+)", None,
        template=BASE,
    )
    max_waiting_time_in_seconds: float | str | None = spec(
        "Longest wait accepted; a longer one fails the stream instead of stalling it.",
        3600,
        None,
        template=BASE,
        result="number",
    )


BackoffStrategy = Annotated[
    ConstantBackoffStrategy | ExponentialBackoffStrategy | WaitTimeFromHeader | WaitUntilTimeFromHeader
    | CustomBackoffStrategy,
    Field(discriminator="type"),
]


class HttpResponseFilter(Component):
    """Matches responses (by status, body text or a predicate) and says what to do with them."""

    type: Literal["HttpResponseFilter"] = spec("Component type.", "HttpResponseFilter", "HttpResponseFilter")
    action: Literal["SUCCESS", "FAIL", "RETRY", "IGNORE", "RATE_LIMITED", "RESET_PAGINATION",
                    "REFRESH_TOKEN_THEN_RETRY", "REDUCE_PAGE_SIZE", "SPLIT_REQUEST_WINDOW"] | None = spec(
        "What a matching response means: SUCCESS reads it, FAIL stops the stream, RETRY retries, "
        "IGNORE skips it, RATE_LIMITED waits and retries without counting towards `max_retries`, "
        "RESET_PAGINATION restarts the slice's pagination (see the retriever's `pagination_reset`), "
        "REFRESH_TOKEN_THEN_RETRY renews the authenticator's token once and retries, REDUCE_PAGE_SIZE asks "
        "for the same page with fewer records (the retriever's `page_size_reduction`), SPLIT_REQUEST_WINDOW "
        "reads the datetime window again as two halves (the retriever's `request_window_splitting`).",
        "IGNORE",
        None,
    )
    failure_type: Literal["system_error", "config_error", "transient_error"] | None = spec(
        "How a failure is reported: a bug (system_error), a user mistake (config_error), or temporary.",
        "config_error",
        None,
    )
    http_codes: tuple[int, ...] = spec("Status codes that match.", [403, 404], ())
    error_message_contains: str | None = spec(
        "Text whose presence in the body makes a response match.", "rate limit exceeded", None
    )
    predicate: str | None = spec(
        "Template that renders true for a matching response.",
        "{{ 'error' in response and response['error']['code'] == 'LIMIT' }}",
        None,
        template=ERROR,
        result="boolean",
    )
    error_message: str | None = spec(
        "Message reported for a matching response.",
        "Access denied: check the API key's scopes.",
        None,
        template=ERROR,
    )

    @model_validator(mode="after")
    def _matches_something(self) -> "HttpResponseFilter":
        if not (self.http_codes or self.error_message_contains or self.predicate):
            raise ValueError("a filter needs at least one of `http_codes`, `error_message_contains` or `predicate`")
        if self.action is None and self.failure_type is None:
            raise ValueError("a filter needs an `action` (or at least a `failure_type`)")
        return self


class DefaultErrorHandler(Component):
    """Retries and classifies errors with response filters and backoff strategies."""

    type: Literal["DefaultErrorHandler"] = spec("Component type.", "DefaultErrorHandler", "DefaultErrorHandler")
    response_filters: tuple[HttpResponseFilter, ...] = spec(
        "Filters tried in order; the first that matches decides.",
        [{"type": "HttpResponseFilter", "http_codes": [404], "action": "IGNORE"}],
        (),
        default_type="HttpResponseFilter",
    )
    max_retries: int | str = spec(
        "Retries before a request fails; a template must render an integer.", 5, 5, template=BASE, result="integer"
    )
    backoff_strategies: tuple[BackoffStrategy, ...] = spec(
        "How long to wait before a retry; the first strategy that gives a time wins.",
        [{"type": "WaitTimeFromHeader", "header": "Retry-After"}],
        (),
    )


class CompositeErrorHandler(Component):
    """Asks several error handlers in turn; the first that recognises a response decides."""

    type: Literal["CompositeErrorHandler"] = spec(
        "Component type.", "CompositeErrorHandler", "CompositeErrorHandler"
    )
    error_handlers: "tuple[ErrorHandler, ...]" = spec(
        "The handlers, in order.",
        [{"type": "DefaultErrorHandler", "response_filters": [{"http_codes": [429], "action": "RATE_LIMITED"}]}],
        default_type="DefaultErrorHandler",
    )


ErrorHandler = Annotated[
    DefaultErrorHandler | CompositeErrorHandler | CustomErrorHandler, Field(discriminator="type")
]


def uses_action(handler: object, action: str) -> bool:
    """Whether a response filter of ``handler`` (a DefaultErrorHandler, or any inside a
    CompositeErrorHandler) has ``action``. A custom handler's actions cannot be known: False."""
    if isinstance(handler, CompositeErrorHandler):
        return any(uses_action(child, action) for child in handler.error_handlers)
    if isinstance(handler, DefaultErrorHandler):
        return any(response_filter.action == action for response_filter in handler.response_filters)
    return False
