"""What a response means (success, retry, ignore, fail) and how long to wait before a retry.

An error handler turns a response (or a transport failure) into a
:class:`Resolution` and says how many seconds to wait before retry number
``attempt``. The :class:`~framework.components.http.client.HttpClient` acts on both.

:class:`FilterErrorHandler` is the runtime form of a manifest
``DefaultErrorHandler``: its response filters are tried in order and the first
that matches decides; a response no filter matches gets the default mapping
(:func:`default_resolution`). A filter matches when the status is one of its
``http_codes``, *or* its ``error_message_contains`` occurs in the body, *or*
its ``predicate`` renders true (``response`` is the decoded JSON body, ``{}``
when the body is not JSON, and ``headers`` the response headers). A filter
with a ``failure_type`` but no ``action`` keeps the default action for the
status. A connection failure or timeout is always RETRY.

Backoff strategies are tried in order and the first that gives a time wins.
When none is configured, or none gives a time, a ``Retry-After`` header
(seconds or an HTTP date) is honoured, else the wait is ``5 * 2**attempt``.

:class:`FirstMatchErrorHandler`, the runtime form of ``CompositeErrorHandler``,
keeps it simple: the first child with a *matching filter* decides (and gives
the backoff); when no child's filter matches, the first child's default
mapping and backoff apply. Its ``max_retries`` is the largest of its children's.

Handlers hold no per-request state, so one handler serves every thread.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import timezone
from email.utils import parsedate_to_datetime
from http import HTTPStatus
from typing import Any, Protocol

from msgspec import Struct

from framework.components.context import BuildContext, builds
from framework.components.http.transport import HttpResponse
from framework.errors import ConfigError, InterpolationError, ReadError, TransportError, place_suffix
from framework.models import error_handling as models
from framework.models.custom import CustomErrorHandler
from framework.temporal.clock import Clock

DEFAULT_MAX_RETRIES = 5
DEFAULT_BACKOFF_FACTOR = 5.0
EXCERPT_CHARS = 200
_MAX_EXPONENT = 60  # 2**60 seconds is forever already; keeps the float finite

ACTIONS = ("SUCCESS", "FAIL", "RETRY", "IGNORE", "RATE_LIMITED")


class Resolution(Struct, frozen=True):
    """What to do with a response: ``action``, how a failure is reported, and a message."""

    action: str  # "SUCCESS" | "FAIL" | "RETRY" | "IGNORE" | "RATE_LIMITED"
    failure_type: str | None = None  # "system_error" | "config_error" | "transient_error"
    message: str | None = None


class ErrorHandler(Protocol):
    """Classifies responses and says how long to wait before a retry."""

    max_retries: int

    def interpret(self, response: HttpResponse | None, error: TransportError | None = None) -> Resolution: ...

    def backoff(self, response: HttpResponse | None, attempt: int) -> float: ...


# -- the default mapping ------------------------------------------------------------


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """``text`` on one line, cut to ``limit`` characters (with ``...`` when cut)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit] + "..."


def status_text(status: int) -> str:
    """``HTTP 404 Not Found`` (the number alone for a status without a standard phrase)."""
    try:
        return f"HTTP {status} {HTTPStatus(status).phrase}"
    except ValueError:
        return f"HTTP {status}"


def _with_body(message: str, response: HttpResponse) -> str:
    body = excerpt(response.text)
    return f"{message}: {body}" if body else message


def default_resolution(response: HttpResponse | None, error: TransportError | None = None) -> Resolution:
    """The resolution of a response no filter matched (and of a transport failure)."""
    if response is None:
        reason = error.reason if error is not None else "no response"
        return Resolution("RETRY", "transient_error", reason)
    status = response.status
    said = status_text(status)
    if 200 <= status < 400:
        return Resolution("SUCCESS")
    if status == 401:
        return Resolution("FAIL", "config_error",
                          f"the API refused the credentials ({said}); check the credentials in the config")
    if status == 403:
        return Resolution("FAIL", "config_error",
                          f"the API denied access ({said}); check that the credentials in the config "
                          "are allowed to read this stream")
    if status == 404:
        return Resolution("FAIL", "system_error",
                          f"the API found nothing at this URL ({said}); check the stream's url_base and "
                          "path in the manifest, and any IDs the config puts into the URL")
    if status == 408:
        return Resolution("RETRY", "transient_error", f"the API timed out ({said})")
    if status == 429:
        return Resolution("RATE_LIMITED", "transient_error", f"the API rate limit was reached ({said})")
    if 500 <= status < 600:
        return Resolution("RETRY", "transient_error", _with_body(f"the API had a server error ({said})", response))
    if status == 400:
        return Resolution("FAIL", "system_error",
                          _with_body(f"the API rejected the request as invalid ({said})", response))
    return Resolution("FAIL", "system_error", _with_body(f"the API answered with an error ({said})", response))


# -- response filters ---------------------------------------------------------------


def _decoded(response: HttpResponse) -> Any:
    try:
        body = response.json()
    except ValueError:
        return {}
    return {} if body is None else body


class ResponseFilter(Struct, frozen=True):
    """The runtime form of an ``HttpResponseFilter`` (templates rendered per response)."""

    action: str | None
    failure_type: str | None
    http_codes: frozenset[int]
    error_message_contains: str | None
    predicate: str | None
    error_message: str | None
    parameters: Mapping[str, Any]
    ctx: BuildContext
    place: str | None = None

    def match(self, response: HttpResponse) -> Resolution | None:
        """The resolution this filter gives ``response``, or ``None`` when it does not match."""
        if not self._matches(response):
            return None
        default = default_resolution(response)
        action = self.action or default.action
        failure_type = self.failure_type or default.failure_type
        if failure_type is None and action == "FAIL":
            failure_type = "system_error"
        message = default.message
        if self.error_message:
            message = self._render(self.error_message, "string", response)
        elif message is None:
            said = status_text(response.status)
            message = _with_body(f"a response filter marked the response as {action} ({said})", response)
        return Resolution(action, failure_type, message)

    def _matches(self, response: HttpResponse) -> bool:
        if response.status in self.http_codes:
            return True
        if self.error_message_contains is not None and self.error_message_contains in response.text:
            return True
        if self.predicate is not None:
            return bool(self._render(self.predicate, "boolean", response))
        return False

    def _render(self, source: str, result: str, response: HttpResponse) -> Any:
        try:
            return self.ctx.render(source, self.parameters, result,
                                   response=_decoded(response), headers=response.headers)
        except InterpolationError as exc:
            raise ReadError(f"a response filter's template failed: {exc}", place=self.place) from exc


# -- backoff strategies -------------------------------------------------------------


class BackoffStrategy(Protocol):
    def wait(self, response: HttpResponse | None, attempt: int) -> float | None: ...


class ConstantBackoff(Struct, frozen=True):
    seconds: float

    def wait(self, response: HttpResponse | None, attempt: int) -> float | None:
        return max(0.0, self.seconds)


class ExponentialBackoff(Struct, frozen=True):
    """``factor * 2**attempt`` seconds."""

    factor: float = DEFAULT_BACKOFF_FACTOR

    def wait(self, response: HttpResponse | None, attempt: int) -> float | None:
        return max(0.0, self.factor * 2.0 ** min(max(attempt, 0), _MAX_EXPONENT))


def _header_number(response: HttpResponse | None, header: str, regex: re.Pattern[str] | None) -> float | None:
    if response is None:
        return None
    value = response.headers.get(header)
    if value is None:
        return None
    text = str(value)
    if regex is not None:
        found = regex.search(text)
        if found is None:
            return None
        text = found.group(1) if regex.groups else found.group(0)
    try:
        return float(text)
    except ValueError:
        return None


def _too_long(wait: float, header: str, limit: float | None, place: str | None) -> None:
    if limit is not None and wait > limit:
        raise ReadError(
            f"the API asked to wait {wait:g} s (header `{header}`), longer than max_waiting_time_in_seconds "
            f"({limit:g} s); raise that limit in the manifest or read this stream later",
            place=place, failure_type="transient_error",
        )


def retry_after_seconds(response: HttpResponse | None, clock: Clock) -> float | None:
    """The wait a ``Retry-After`` header asks for (seconds or an HTTP date), or ``None``."""
    if response is None:
        return None
    value = response.headers.get("Retry-After")
    if value is None:
        return None
    text = str(value).strip()
    try:
        return max(0.0, float(text))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - clock.now()).total_seconds())


class WaitFromHeader(Struct, frozen=True):
    """Waits the seconds a header asks for; longer than ``max_wait`` is an error."""

    header: str
    regex: re.Pattern[str] | None = None
    max_wait: float | None = None
    place: str | None = None

    def wait(self, response: HttpResponse | None, attempt: int) -> float | None:
        seconds = _header_number(response, self.header, self.regex)
        if seconds is None:
            return None
        seconds = max(0.0, seconds)
        _too_long(seconds, self.header, self.max_wait, self.place)
        return seconds


class WaitUntilFromHeader(Struct, frozen=True):
    """Waits until the epoch time (seconds) a header names, at least ``min_wait``.

    A time already past means no wait (or ``min_wait``)."""

    header: str
    clock: Clock
    regex: re.Pattern[str] | None = None
    min_wait: float | None = None
    max_wait: float | None = None
    place: str | None = None

    def wait(self, response: HttpResponse | None, attempt: int) -> float | None:
        until = _header_number(response, self.header, self.regex)
        if until is None:
            return None
        seconds = max(until - self.clock.now().timestamp(), self.min_wait or 0.0, 0.0)
        _too_long(seconds, self.header, self.max_wait, self.place)
        return seconds


# -- handlers -----------------------------------------------------------------------


class FilterErrorHandler:
    """Response filters, then the default mapping; backoff strategies, then the default backoff."""

    def __init__(self, filters: Sequence[ResponseFilter] = (), strategies: Sequence[BackoffStrategy] = (),
                 *, max_retries: int = DEFAULT_MAX_RETRIES, clock: Clock):
        self.filters = tuple(filters)
        self.strategies = tuple(strategies)
        self.max_retries = max_retries
        self.clock = clock

    def match(self, response: HttpResponse | None) -> Resolution | None:
        """The resolution of the first filter that matches, or ``None``."""
        if response is None:
            return None
        for response_filter in self.filters:
            found = response_filter.match(response)
            if found is not None:
                return found
        return None

    def interpret(self, response: HttpResponse | None, error: TransportError | None = None) -> Resolution:
        return self.match(response) or default_resolution(response, error)

    def backoff(self, response: HttpResponse | None, attempt: int) -> float:
        for strategy in self.strategies:
            seconds = strategy.wait(response, attempt)
            if seconds is not None:
                return seconds
        seconds = retry_after_seconds(response, self.clock)
        if seconds is not None:
            return seconds
        return ExponentialBackoff(DEFAULT_BACKOFF_FACTOR).wait(response, attempt) or 0.0


class MatchingErrorHandler(ErrorHandler, Protocol):
    """An error handler that also says whether one of its own filters matches (``None``: none does)."""

    def match(self, response: HttpResponse | None) -> Resolution | None: ...


class FirstMatchErrorHandler:
    """Several handlers: the first with a matching filter decides, else the first's defaults."""

    def __init__(self, handlers: Sequence[MatchingErrorHandler]):
        if not handlers:
            raise ValueError("a CompositeErrorHandler needs at least one error handler")
        self.handlers = tuple(handlers)
        self.max_retries = max(handler.max_retries for handler in self.handlers)

    def _decide(self, response: HttpResponse | None) -> tuple[MatchingErrorHandler, Resolution | None]:
        for handler in self.handlers:
            found = handler.match(response)
            if found is not None:
                return handler, found
        return self.handlers[0], None

    def match(self, response: HttpResponse | None) -> Resolution | None:
        return self._decide(response)[1]

    def interpret(self, response: HttpResponse | None, error: TransportError | None = None) -> Resolution:
        handler, found = self._decide(response)
        return found or handler.interpret(response, error)

    def backoff(self, response: HttpResponse | None, attempt: int) -> float:
        return self._decide(response)[0].backoff(response, attempt)


# -- building -----------------------------------------------------------------------


def default_error_handler(ctx: BuildContext) -> FilterErrorHandler:
    """The handler of a requester without ``error_handler``: default mapping and backoff."""
    return FilterErrorHandler(max_retries=DEFAULT_MAX_RETRIES, clock=ctx.clock)


def _seconds(ctx: BuildContext, value: Any, parameters: Mapping[str, Any], what: str,
             path: tuple) -> float | None:
    if value is None:
        return None
    number = ctx.render(value, parameters, "number")
    if number is None:
        raise ConfigError(f"`{what}` rendered to nothing; it must be a number of seconds" + _where(ctx, path))
    return float(number)


def _regex(source: str | None, ctx: BuildContext, path: tuple) -> re.Pattern[str] | None:
    if source is None:
        return None
    try:
        return re.compile(source)
    except re.error as exc:
        raise ConfigError(f"the backoff `regex` {source!r} is not a valid regular expression: {exc}"
                          + _where(ctx, path)) from None


@builds("ConstantBackoffStrategy")
def build_constant_backoff(model: models.ConstantBackoffStrategy, ctx: BuildContext, path: tuple) -> ConstantBackoff:
    seconds = _seconds(ctx, model.backoff_time_in_seconds, model.parameters, "backoff_time_in_seconds", path)
    return ConstantBackoff(seconds or 0.0)


@builds("ExponentialBackoffStrategy")
def build_exponential_backoff(model: models.ExponentialBackoffStrategy, ctx: BuildContext,
                              path: tuple) -> ExponentialBackoff:
    factor = _seconds(ctx, model.factor, model.parameters, "factor", path)
    return ExponentialBackoff(DEFAULT_BACKOFF_FACTOR if factor is None else factor)


@builds("WaitTimeFromHeader")
def build_wait_from_header(model: models.WaitTimeFromHeader, ctx: BuildContext, path: tuple) -> WaitFromHeader:
    params = model.parameters
    header = str(ctx.render(model.header, params))
    max_wait = _seconds(ctx, model.max_waiting_time_in_seconds, params, "max_waiting_time_in_seconds", path)
    return WaitFromHeader(header, _regex(model.regex, ctx, path), max_wait, ctx.place(path))


@builds("WaitUntilTimeFromHeader")
def build_wait_until_from_header(model: models.WaitUntilTimeFromHeader, ctx: BuildContext,
                                 path: tuple) -> WaitUntilFromHeader:
    params = model.parameters
    header = str(ctx.render(model.header, params))
    max_wait = _seconds(ctx, model.max_waiting_time_in_seconds, params, "max_waiting_time_in_seconds", path)
    regex_source = None if model.regex is None else str(ctx.render(model.regex, params))
    min_wait = _seconds(ctx, model.min_wait, params, "min_wait", path)
    return WaitUntilFromHeader(header, ctx.clock, _regex(regex_source, ctx, path), min_wait, max_wait,
                               ctx.place(path))


@builds("HttpResponseFilter")
def build_response_filter(model: models.HttpResponseFilter, ctx: BuildContext, path: tuple) -> ResponseFilter:
    return ResponseFilter(
        action=model.action,
        failure_type=model.failure_type,
        http_codes=frozenset(model.http_codes),
        error_message_contains=model.error_message_contains,
        predicate=model.predicate,
        error_message=model.error_message,
        parameters=model.parameters,
        ctx=ctx,
        place=ctx.place(path),
    )


def build_error_handler(model: models.DefaultErrorHandler | models.CompositeErrorHandler | CustomErrorHandler,
                        ctx: BuildContext, path: tuple = ()) -> Any:
    """The runtime handler of a ``DefaultErrorHandler``, ``CompositeErrorHandler`` or custom model (its builder)."""
    return ctx.build(model, path)


def _where(ctx: BuildContext, path: tuple) -> str:
    return place_suffix(ctx.place(path))


@builds("DefaultErrorHandler")
def build_default_error_handler(model: models.DefaultErrorHandler, ctx: BuildContext,
                                path: tuple) -> FilterErrorHandler:
    max_retries = ctx.render(model.max_retries, model.parameters, "integer")
    if not isinstance(max_retries, int) or max_retries < 0:
        raise ConfigError(f"`max_retries` must be a whole number of 0 or more, not {max_retries!r}"
                          + _where(ctx, path + ("max_retries",)))
    filters: list[ResponseFilter] = [ctx.build(f, path + ("response_filters", i))
                                     for i, f in enumerate(model.response_filters)]
    strategies: list[BackoffStrategy] = [ctx.build(s, path + ("backoff_strategies", i))
                                         for i, s in enumerate(model.backoff_strategies)]
    return FilterErrorHandler(filters, strategies, max_retries=max_retries, clock=ctx.clock)


@builds("CompositeErrorHandler")
def build_composite_error_handler(model: models.CompositeErrorHandler, ctx: BuildContext,
                                  path: tuple) -> FirstMatchErrorHandler:
    if not model.error_handlers:
        raise ConfigError("a CompositeErrorHandler needs at least one entry in `error_handlers`" + _where(ctx, path))
    return FirstMatchErrorHandler([
        build_error_handler(child, ctx, path + ("error_handlers", i)) for i, child in enumerate(model.error_handlers)
    ])


__all__ = [
    "ACTIONS",
    "ConstantBackoff",
    "ErrorHandler",
    "ExponentialBackoff",
    "FilterErrorHandler",
    "FirstMatchErrorHandler",
    "Resolution",
    "ResponseFilter",
    "WaitFromHeader",
    "WaitUntilFromHeader",
    "build_error_handler",
    "default_error_handler",
    "default_resolution",
    "excerpt",
    "retry_after_seconds",
    "status_text",
]
