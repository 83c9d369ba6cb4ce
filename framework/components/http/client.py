"""Sending a request: authentication, error handling, retries and backoff.

:class:`HttpClient` turns :class:`~framework.components.http.request.RequestParts` into a
response. Each attempt applies the authenticator to a *copy* of the parts
(so a refreshed token is used on the next attempt), sends the request and asks
the error handler what the response means:

* SUCCESS returns the response, IGNORE returns ``None``;
* FAIL raises :class:`~framework.errors.HttpStatusError`;
* RETRY and RATE_LIMITED sleep for the handler's backoff and try again, up to
  the handler's ``max_retries``; then the last failure is raised;
* REFRESH_TOKEN_THEN_RETRY asks the authenticator to renew its token (once per
  :meth:`HttpClient.send`), then retries like RETRY; the same answer after a
  renewal fails as a config error. An authenticator that cannot renew (a fixed
  key) gets a plain retry;
* RESET_PAGINATION raises :class:`PaginationResetRequired`, which the
  retriever's page loop turns into a restart of the slice's pagination;
* REDUCE_PAGE_SIZE raises :class:`PageSizeReductionRequired`: the page loop
  asks for the same page again with a smaller page size (``page_size_reduction``);
* SPLIT_REQUEST_WINDOW raises :class:`RequestWindowSplitRequired`: the page
  loop reads the datetime window again as two halves (``request_window_splitting``).

A ``give_up`` function, when given, makes the errors of FAIL and of retries
run out instead (the token requests of :mod:`framework.components.http.auth.tokens`
report them as authentication errors).

An authenticator with ``observe(request, response)`` sees every response (one that counts its tokens'
quotas: :mod:`framework.components.http.auth.token_quotas`), and one with ``has_alternative(request)``
may say that a retry goes out with another token that has calls left: the retry is then sent at once.

A 401 with an authenticator first asks it to ``refresh()`` once per
:meth:`HttpClient.send`; when it could, the request is repeated at once and
that repeat is not counted as a retry. All the waits of one ``send`` together
may not exceed ``max_rate_limit_wait`` seconds: a wait that would go past it
fails at once instead of stalling the read.

With an API budget (``budget``, :mod:`framework.components.http.budget`), every attempt first waits for
a permit of the policy matching the prepared request, and its response's rate-limit headers update the
budget. With the sync's requests in flight (``in_flight``, :mod:`framework.components.http.in_flight`),
every attempt also holds a permit from the moment it is sent until its answer is in (a backoff's sleep
holds none), and its status paces the sync (a 429 lowers the level).

Every message and request description is masked: the authenticator's secrets
become ``****`` (see :mod:`framework.masking`) and then the config ``mask`` applies. The client keeps no
state between or during requests beyond local variables, so one client serves
every thread.
"""

from __future__ import annotations

import copy
import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from framework.components.http.circuit import ConnectError, HostCircuits
from framework.components.http.credentials import Credentials, credentials_added
from framework.components.http.error_handler import ErrorHandler, Resolution, excerpt, status_text
from framework.components.http.request import HttpRequest, RequestParts
from framework.components.http.response_cache import ResponseCache
from framework.components.http.response_limits import ResponseLimits
from framework.components.http.transport import DEFAULT_LIMITS, DEFAULT_TIMEOUT, HttpResponse, Transport
from framework.errors import HttpStatusError, ReadError, TransportError
from framework.masking import Mask, masking_credentials
from framework.values import replace

if TYPE_CHECKING:
    from framework.components.context import RequestBudget, RequestSlots

_RETRYING = frozenset({"RETRY", "RATE_LIMITED", "REFRESH_TOKEN_THEN_RETRY"})


class PaginationResetRequired(ReadError):
    """The error handler said RESET_PAGINATION: the retriever restarts the slice's pagination.

    Raised to the page loop (:mod:`framework.components.retriever`), which catches it; one that
    reaches anything else (there is no pagination to restart) fails with this message.
    """


class PageSizeReductionRequired(ReadError):
    """The error handler said REDUCE_PAGE_SIZE: the page loop asks for the same page with fewer records.

    ``detail`` is the error handler's message about the response. Like :class:`PaginationResetRequired`,
    one that reaches anything but a page loop with ``page_size_reduction`` fails with its message.
    """

    def __init__(self, message: str, detail: str | None = None, **context: Any):
        super().__init__(message, **context)
        self.detail = detail


class RequestWindowSplitRequired(ReadError):
    """The error handler said SPLIT_REQUEST_WINDOW: the window is read again as two halves.

    ``detail`` is the error handler's message; one that reaches anything but a page loop with
    ``request_window_splitting`` fails with its message.
    """

    def __init__(self, message: str, detail: str | None = None, **context: Any):
        super().__init__(message, **context)
        self.detail = detail


class Authenticator(Protocol):
    """What the client needs of an authenticator (see :mod:`framework.components.http.auth`)."""

    def apply(self, parts: RequestParts) -> None: ...

    def refresh(self) -> bool: ...

    def secrets(self) -> tuple[str, ...]: ...


class NetworkWait:
    """The requests this process sent and the seconds they spent in the transport (sent, waited for, read),
    all threads together: what tells a reader whether the API's answers or its CPU bound it (the readers of
    :func:`framework.engine.worker.read_group`)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.seconds = 0.0
        self.requests = 0

    def add(self, seconds: float) -> None:
        with self._lock:
            self.seconds += seconds
            self.requests += 1


#: The process's :class:`NetworkWait`.
NETWORK_WAIT = NetworkWait()


def _unmasked(text: str) -> str:
    return text


#: Makes the error raised for a FAIL resolution (``exhausted`` False) or when retries run out
#: (``exhausted`` True), from the last resolution and response (``None`` after a connection failure).
GiveUp = Callable[[Resolution, "HttpResponse | None", bool], ReadError]


#: Where retries are logged: one WARNING line each (stream, request, status or error, attempt, wait).
RETRY_LOG = logging.getLogger("framework.http")

# Rate-limited answers are retried until the wait budget is spent, or this many times at most
# (an API answering 429 with `Retry-After: 0` forever must not spin for ever).
MAX_RATE_LIMITED_ATTEMPTS = 100


class HttpClient:
    """Sends requests with authentication, retries and backoff; see the module docstring."""

    def __init__(
        self,
        transport: Transport,
        error_handler: ErrorHandler,
        authenticator: Authenticator | None = None,
        *,
        sleep: Callable[[float], None],
        mask: Mask = _unmasked,
        timeout: float = DEFAULT_TIMEOUT,
        max_rate_limit_wait: float = 3600.0,
        give_up: GiveUp | None = None,
        stream: str | None = None,
        circuits: HostCircuits | None = None,
        budget: RequestBudget | None = None,
        in_flight: RequestSlots | None = None,
        limits: ResponseLimits = DEFAULT_LIMITS,
        credential_hosts: tuple[str, ...] = (),
        secret_request: bool = False,
        cache: ResponseCache | None = None,
    ):
        self.transport = transport
        self.error_handler = error_handler
        self.authenticator = authenticator
        self.sleep = sleep
        self.mask = mask
        self.timeout = timeout
        self.max_rate_limit_wait = max_rate_limit_wait
        self.give_up = give_up
        self.stream = stream
        self.circuits = circuits  # connection failures per host, shared by the process's requests
        self.budget = budget
        self.in_flight = in_flight
        self.limits = limits  # the cap on a body's size and the deadline of one attempt
        # Credentials follow a redirect to another origin only to these hosts (see http/credentials.py);
        # a token or login request (``secret_request``) is credentials through and through.
        self.credential_hosts = credential_hosts
        self.secret_request = secret_request
        self.cache = cache  # the sync's responses of parent streams (http/response_cache.py), when this caches
        # an authenticator that counts its tokens' quotas sees every response, and may say a retry needs no wait
        self._observe: Callable[[HttpRequest, HttpResponse], None] | None = getattr(authenticator, "observe", None)
        self._rotates: Callable[[HttpRequest], bool] | None = getattr(authenticator, "has_alternative", None)

    def send(self, parts: RequestParts) -> HttpResponse | None:
        """The response of ``parts``; ``None`` when the error handler says IGNORE.

        With a ``cache``, an answer kept from the same request earlier in the sync (before any budget,
        circuit or permit: a kept answer costs the API nothing)."""
        if self.cache is not None:
            return self.cache.send(parts, self._send)
        return self._send(parts)

    def _send(self, parts: RequestParts) -> HttpResponse | None:
        handler = self.error_handler
        sent = retries = limited = 0
        waited = 0.0
        may_refresh = self.authenticator is not None
        refreshed = False  # the token was renewed during this send
        circuits = self.circuits
        while True:
            request = self._prepare(parts)
            if circuits is not None:
                self._circuit_check(circuits, request)
            ticket = self.budget.acquire(request) if self.budget is not None else None  # waits for a permit
            try:
                response, error = self._exchange_within(request)
            except ReadError as exc:  # a body past the size cap: the same request would get it again
                if ticket is not None:
                    self.budget.observe(ticket, None)  # type: ignore[union-attr]
                self._finish(exc, request)
                raise
            if ticket is not None:
                self.budget.observe(ticket, response)  # type: ignore[union-attr]
            sent += 1
            if circuits is not None:
                self._circuit_note(circuits, request, response, error)
            if self._observe is not None and response is not None:
                self._observe(request, response)  # an authenticator that counts its tokens' quotas
            if may_refresh and response is not None and response.status == 401:
                may_refresh = False
                if self.authenticator is not None and self.authenticator.refresh():
                    response.close()  # a streamed body left unread
                    refreshed = True
                    continue
            try:
                resolution = handler.interpret(response, error)
                action = resolution.action
                if action == "SUCCESS":
                    return response
                if action == "IGNORE":
                    if response is not None:
                        response.close()  # a streamed body left unread
                    return None
                if action == "RESET_PAGINATION":
                    said = status_text(response.status) if response is not None else "no response"
                    raise PaginationResetRequired(
                        f"the error handler asked to restart pagination (RESET_PAGINATION, {said}), "
                        "but this request is not part of a paginated read; change the filter's action")
                if action == "REDUCE_PAGE_SIZE":
                    said = status_text(response.status) if response is not None else "no response"
                    raise PageSizeReductionRequired(
                        f"the error handler asked for a smaller page (REDUCE_PAGE_SIZE, {said}), but this "
                        "request has no `page_size_reduction` to shrink it; add one to the retriever or change "
                        "the filter's action", resolution.message, failure_type="config_error")
                if action == "SPLIT_REQUEST_WINDOW":
                    said = status_text(response.status) if response is not None else "no response"
                    raise RequestWindowSplitRequired(
                        f"the error handler asked for a smaller window (SPLIT_REQUEST_WINDOW, {said}), but this "
                        "request has no `request_window_splitting` to split it; add one to the retriever or "
                        "change the filter's action", resolution.message, failure_type="config_error")
                if action not in _RETRYING:
                    raise self._failure(resolution, response, error)
                if action == "REFRESH_TOKEN_THEN_RETRY":
                    if refreshed:
                        raise self._rejected_after_refresh(resolution, response, error)
                    if self._refresh():
                        refreshed, may_refresh = True, False
                if action == "RATE_LIMITED":
                    # Rate limits do not count towards max_retries; the wait budget bounds them.
                    limited += 1
                    if limited > MAX_RATE_LIMITED_ATTEMPTS:
                        raise self._exhausted(sent, resolution, response, error)
                    attempt = limited
                else:
                    if retries >= handler.max_retries:
                        raise self._exhausted(sent, resolution, response, error)
                    retries += 1
                    attempt = retries
                wait = handler.backoff(response, attempt)
                if wait and self._rotates is not None and self._rotates(request):
                    wait = 0.0  # the retry goes out with another token, which has calls left
                if waited + wait > self.max_rate_limit_wait:
                    raise self._wait_too_long(wait, response, error)
            except ReadError as exc:
                self._finish(exc, request)
                raise
            self._log_retry(request, response, error, action, attempt,
                            MAX_RATE_LIMITED_ATTEMPTS if action == "RATE_LIMITED" else handler.max_retries, wait)
            waited += wait
            if response is not None:
                response.close()  # a streamed body left unread
            self.sleep(wait)

    def _circuit_check(self, circuits: HostCircuits, request: HttpRequest) -> None:
        try:
            circuits.check(request.url)
        except ReadError as exc:
            self._finish(exc, request)
            raise

    def _circuit_note(self, circuits: HostCircuits, request: HttpRequest, response: HttpResponse | None,
                      error: TransportError | None) -> None:
        """Tell the host's circuit how the attempt went; raise when the host has refused connections too long."""
        if response is not None:
            circuits.answered(request.url)
        elif isinstance(error, ConnectError):
            try:
                circuits.failed(request.url, error)
            except ReadError as exc:
                self._finish(exc, request)
                raise

    def _log_retry(self, request: HttpRequest, response: HttpResponse | None, error: TransportError | None,
                   action: str, attempt: int, most: int, wait: float) -> None:
        """One line per retry, on the ``framework.http`` logger (the CLI shows it as text, JSON or a LOG message)."""
        if not RETRY_LOG.isEnabledFor(logging.WARNING):
            return
        what = status_text(response.status) if response is not None else (
            error.reason if error is not None else "no response")
        stream = f"stream `{self.stream}`: " if self.stream else ""
        kind = "rate limited" if action == "RATE_LIMITED" else "retrying"
        RETRY_LOG.warning(self._masker()(f"{stream}{kind} {request.describe()} after {what} (attempt {attempt} of "
                                       f"{most}), waiting {wait:g} s"))

    def _refresh(self) -> bool:
        """Renew the authenticator's token for REFRESH_TOKEN_THEN_RETRY; False when it has none to renew.

        A renewal that fails for a passing reason leaves the retry to the old token (as Airbyte
        does); any other failure (the token endpoint refused the credentials) is raised."""
        if self.authenticator is None:
            return False
        try:
            return self.authenticator.refresh()
        except ReadError as exc:
            if exc.failure_type == "transient_error":
                return False
            raise

    def _rejected_after_refresh(self, resolution: Resolution, response: HttpResponse | None,
                                error: TransportError | None) -> ReadError:
        said = status_text(response.status) if response is not None else (error.reason if error else "no response")
        detail = f" ({resolution.message})" if resolution.message else ""
        message = (f"the API rejected the request again after the access token was renewed ({said}){detail}; "
                   "check the credentials in the config and the scopes they grant")
        if response is None:
            return TransportError(message, failure_type="config_error")
        return HttpStatusError(message, status=response.status, failure_type="config_error")

    # -- one attempt ----------------------------------------------------------------

    def _prepare(self, parts: RequestParts) -> HttpRequest:
        if self.authenticator is None:
            if self.secret_request:
                return replace(parts.to_request(), credentials=Credentials(everything=True,
                                                                           hosts=self.credential_hosts))
            return parts.to_request()
        own = replace(
            parts,
            params=dict(parts.params),
            headers=dict(parts.headers),
            json=copy.deepcopy(parts.json),
            data=dict(parts.data) if isinstance(parts.data, dict) else parts.data,
        )
        self.authenticator.apply(own)
        credentials = credentials_added(parts.headers, own.headers, parts.params, own.params, parts.data, own.data,
                                        parts.json, own.json, self.authenticator.secrets(), self.credential_hosts)
        if self.secret_request:
            credentials = replace(credentials, everything=True)
        return replace(own.to_request(), credentials=credentials)

    def _exchange_within(self, request: HttpRequest) -> tuple[HttpResponse | None, TransportError | None]:
        """:meth:`_exchange` holding a permit of the sync's requests in flight, when there is a limit."""
        slots = self.in_flight
        if slots is None:
            return self._exchange(request)
        slots.acquire()
        status = None
        started = time.perf_counter()
        try:
            response, error = self._exchange(request)
            status = response.status if response is not None else None
            return response, error
        finally:
            NETWORK_WAIT.add(time.perf_counter() - started)
            slots.release(status)

    def _exchange(self, request: HttpRequest) -> tuple[HttpResponse | None, TransportError | None]:
        try:
            return self.transport.send(request, self.timeout, self.limits), None
        except TransportError as exc:
            return None, exc

    # -- errors ---------------------------------------------------------------------

    def _failure(self, resolution: Resolution, response: HttpResponse | None,
                 error: TransportError | None) -> ReadError:
        if self.give_up is not None:
            return self.give_up(resolution, response, False)
        if response is None:
            message = resolution.message or (error.reason if error is not None else "the request failed")
            return TransportError(message, failure_type=resolution.failure_type)
        message = resolution.message or status_text(response.status)
        return HttpStatusError(message, status=response.status, failure_type=resolution.failure_type)

    def _exhausted(self, sent: int, resolution: Resolution, response: HttpResponse | None,
                   error: TransportError | None) -> ReadError:
        if self.give_up is not None:
            return self.give_up(resolution, response, True)
        head = f"gave up after {sent} attempt{'s' if sent != 1 else ''}"
        if response is None:
            reason = error.reason if error is not None else "no response"
            return TransportError(f"{head}: {reason}; check the network and try again later",
                                  failure_type="transient_error")
        body = excerpt(response.text)
        last = f"the last response was {status_text(response.status)}" + (f": {body}" if body else "")
        return HttpStatusError(f"{head}; {last}; try again later",
                               status=response.status, failure_type="transient_error")

    def _wait_too_long(self, wait: float, response: HttpResponse | None, error: TransportError | None) -> ReadError:
        message = (f"the API asked to wait {wait:g} s before retrying, which would take this request's waits "
                   f"past the limit of {self.max_rate_limit_wait:g} s; try again later")
        if response is None:
            return TransportError(message, failure_type="transient_error")
        return HttpStatusError(message, status=response.status, failure_type="transient_error")

    def _finish(self, exc: ReadError, request: HttpRequest) -> None:
        """Mask ``exc``'s message and fill in the (masked) request it was about."""
        masked = self._masker()
        exc.reason = masked(exc.reason)
        exc.args = (exc.reason,)
        exc.with_context(request=request.describe(masked))

    def _masker(self) -> Mask:
        if self.authenticator is None:
            return self.mask
        return masking_credentials(self.authenticator, self.mask)


__all__ = ["NETWORK_WAIT", "Authenticator", "GiveUp", "HttpClient", "MAX_RATE_LIMITED_ATTEMPTS", "NetworkWait",
           "RETRY_LOG", "PageSizeReductionRequired", "PaginationResetRequired", "RequestWindowSplitRequired"]
