"""Sending a request: authentication, error handling, retries and backoff.

:class:`HttpClient` turns :class:`~framework.components.http.request.RequestParts` into a
response. Each attempt applies the authenticator to a *copy* of the parts
(so a refreshed token is used on the next attempt), sends the request and asks
the error handler what the response means:

* SUCCESS returns the response, IGNORE returns ``None``;
* FAIL raises :class:`~framework.errors.HttpStatusError`;
* RETRY and RATE_LIMITED sleep for the handler's backoff and try again, up to
  the handler's ``max_retries``; then the last failure is raised.

A ``give_up`` function, when given, makes the errors of FAIL and of retries
run out instead (the token requests of :mod:`framework.components.http.auth`
report them as authentication errors).

A 401 with an authenticator first asks it to ``refresh()`` once per
:meth:`HttpClient.send`; when it could, the request is repeated at once and
that repeat is not counted as a retry. All the waits of one ``send`` together
may not exceed ``max_rate_limit_wait`` seconds: a wait that would go past it
fails at once instead of stalling the read.

Every message and request description is masked: the authenticator's secrets
become ``****`` (see :mod:`framework.masking`) and then the config ``mask`` applies. The client keeps no
state between or during requests beyond local variables, so one client serves
every thread.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from typing import Protocol

from framework.components.http.error_handler import ErrorHandler, Resolution, excerpt, status_text
from framework.components.http.request import HttpRequest, RequestParts
from framework.components.http.transport import DEFAULT_TIMEOUT, HttpResponse, Transport
from framework.errors import HttpStatusError, ReadError, TransportError
from framework.masking import Mask, masking_credentials

_RETRYING = frozenset({"RETRY", "RATE_LIMITED"})


class Authenticator(Protocol):
    """What the client needs of an authenticator (see :mod:`framework.components.http.auth`)."""

    def apply(self, parts: RequestParts) -> None: ...

    def refresh(self) -> bool: ...

    def secrets(self) -> tuple[str, ...]: ...


def _unmasked(text: str) -> str:
    return text


#: Makes the error raised for a FAIL resolution (``exhausted`` False) or when retries run out
#: (``exhausted`` True), from the last resolution and response (``None`` after a connection failure).
GiveUp = Callable[[Resolution, "HttpResponse | None", bool], ReadError]


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
    ):
        self.transport = transport
        self.error_handler = error_handler
        self.authenticator = authenticator
        self.sleep = sleep
        self.mask = mask
        self.timeout = timeout
        self.max_rate_limit_wait = max_rate_limit_wait
        self.give_up = give_up

    def send(self, parts: RequestParts) -> HttpResponse | None:
        """The response of ``parts``; ``None`` when the error handler says IGNORE."""
        handler = self.error_handler
        sent = retries = limited = 0
        waited = 0.0
        may_refresh = self.authenticator is not None
        while True:
            request = self._prepare(parts)
            response, error = self._exchange(request)
            sent += 1
            if may_refresh and response is not None and response.status == 401:
                may_refresh = False
                if self.authenticator is not None and self.authenticator.refresh():
                    response.close()  # a streamed body left unread
                    continue
            try:
                resolution = handler.interpret(response, error)
                if resolution.action == "SUCCESS":
                    return response
                if resolution.action == "IGNORE":
                    if response is not None:
                        response.close()  # a streamed body left unread
                    return None
                if resolution.action not in _RETRYING:
                    raise self._failure(resolution, response, error)
                if resolution.action == "RATE_LIMITED":
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
                if waited + wait > self.max_rate_limit_wait:
                    raise self._wait_too_long(wait, response, error)
            except ReadError as exc:
                self._finish(exc, request)
                raise
            waited += wait
            if response is not None:
                response.close()  # a streamed body left unread
            self.sleep(wait)

    # -- one attempt ----------------------------------------------------------------

    def _prepare(self, parts: RequestParts) -> HttpRequest:
        if self.authenticator is None:
            return parts.to_request()
        own = dataclasses.replace(
            parts,
            params=dict(parts.params),
            headers=dict(parts.headers),
            json=copy.deepcopy(parts.json),
            data=dict(parts.data) if isinstance(parts.data, dict) else parts.data,
        )
        self.authenticator.apply(own)
        return own.to_request()

    def _exchange(self, request: HttpRequest) -> tuple[HttpResponse | None, TransportError | None]:
        try:
            return self.transport.send(request, self.timeout), None
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


__all__ = ["Authenticator", "GiveUp", "HttpClient", "MAX_RATE_LIMITED_ATTEMPTS"]
