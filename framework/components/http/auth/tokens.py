"""Tokens obtained or signed at run time: what the OAuth, JWT and session-token authenticators share.

:class:`RenewedToken` fetches a token on first use and renews it when due or after a 401. It is shared
by every stream, which may be read on several threads: a lock guards renewal, and after a 401 a thread
that finds the token already renewed by another thread retries with the new one instead of fetching yet
another. Authenticators of the same definition, and every Spark task, get their token from one sync-wide
service the driver owns, which refreshes at most once per expiry
(:mod:`~framework.components.http.token_service`).

:func:`exchange` sends a token or login request, retried as :class:`TokenRequestErrors` says.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from msgspec import Struct

from framework.components.context import BuildContext
from framework.components.http.auth.base import present
from framework.components.http.client import HttpClient
from framework.components.http.error_handler import ExponentialBackoff, Resolution, retry_after_seconds
from framework.components.http.request import RequestParts
from framework.components.http.token_service import SharedToken, share
from framework.components.http.transport import HttpResponse
from framework.errors import AuthenticationError, TransportError
from framework.masking import Mask
from framework.temporal.clock import Clock

__all__ = [
    "TOKEN_RENEW_MARGIN",
    "TOKEN_RETRIES",
    "Failed",
    "RenewedToken",
    "Token",
    "TokenRequestErrors",
    "exchange",
    "json_object",
    "renewal_time",
]


#: How many times a token or login request is retried after a 429, a 5xx or a connection failure.
TOKEN_RETRIES = 3
#: A token is renewed this long before it expires (or half its lifetime, when that is shorter).
TOKEN_RENEW_MARGIN = timedelta(seconds=60)
_MAX_BACKOFF = 60.0  # seconds; a longer Retry-After is cut to this


class Token(Struct, frozen=True):
    """A token and when to stop using it (``renew_at``; None: until a 401); when it expires, and which
    generation of the sync's token it is (:mod:`~framework.components.http.token_service`)."""

    value: str
    renew_at: datetime | None
    expires: datetime | None = None
    generation: int = 0


class RenewedToken:
    """A token fetched on first use and renewed when due or after a 401; thread-safe.

    Subclasses define :meth:`_fetch` (may raise AuthenticationError) and may
    set ``_fetchable`` to False when no new token can be had.
    """

    _fetchable = True
    _shared: SharedToken[Token] | None = None  # the sync's token service, when the builder shared it

    def __init__(self, clock: Clock, initial: Token | None = None):
        self._clock = clock
        self._token = initial
        self._lock = threading.Lock()
        self._local = threading.local()  # the token this thread sent last

    def _shared_by(self, ctx: BuildContext, kind: str, identity: Any) -> None:
        """Get tokens from the sync-wide service of this definition (the driver's, in a Spark task)."""
        initial, self._token = self._token, None  # the service's token, even the first
        self._shared = share(ctx, kind, identity, self._fetch, initial, self._fetchable)

    def _obtain(self, rejected: bool) -> Token:
        if self._shared is None:
            return self._fetch()
        return self._shared.ask(self._token, rejected)

    def _fetch(self) -> Token:  # pragma: no cover - abstract
        raise NotImplementedError

    def _due(self, token: Token | None) -> bool:
        if token is None:
            return True
        return token.renew_at is not None and self._fetchable and self._clock.now() >= token.renew_at

    def token(self) -> str:
        """The token to send now, fetched or renewed first when needed."""
        token = self._token
        if self._due(token):
            with self._lock:
                token = self._token
                if self._due(token):
                    token = self._token = self._obtain(False)
        assert token is not None
        self._local.sent = token.value
        return token.value

    def refresh(self) -> bool:
        with self._lock:
            current = self._token
            sent = getattr(self._local, "sent", None)
            if current is not None and sent is not None and current.value != sent:
                return True  # another thread renewed it since this one sent its request
            if not self._fetchable:
                return False
            self._token = self._obtain(True)
            return True

    def _current_secret(self) -> tuple[str, ...]:
        token = self._token
        return present(token.value) if token is not None else ()


def renewal_time(now: datetime, expires: datetime) -> datetime:
    """When to renew a token that expires at ``expires``: a minute early, or halfway for short lives."""
    margin = min(TOKEN_RENEW_MARGIN, max(expires - now, timedelta(0)) / 2)
    return expires - margin


class TokenRequestErrors:
    """The error handler of token and login requests, for the one retry loop
    (:class:`~framework.components.http.client.HttpClient`): a 2xx succeeds; a 429, a 5xx or a
    connection failure is retried ``TOKEN_RETRIES`` times, after what ``Retry-After`` asks (seconds
    or an HTTP date, at most a minute) or else 1, 2, 4 ... s; any other status fails at once."""

    max_retries = TOKEN_RETRIES

    def __init__(self, clock: Clock, refused: Callable[[HttpResponse], bool] | None = None):
        self.clock = clock
        self.refused = refused  # whether an error answer says the refresh token was refused

    def interpret(self, response: HttpResponse | None, error: TransportError | None = None) -> Resolution:
        if response is None:
            reason = error.reason if error is not None else "no response"
            return Resolution("RETRY", "transient_error", f"the connection failed ({reason})")
        if 200 <= response.status < 300:
            return Resolution("SUCCESS")
        said = f"it answered HTTP {response.status}{_error_detail(response)}"
        if response.status == 429 or response.status >= 500:
            return Resolution("RETRY", "transient_error", said)
        if self.refused is not None and self.refused(response):
            said += ("; the refresh token was refused (invalid, expired or already used): "
                     "re-authenticate the source's credentials")
        return Resolution("FAIL", "config_error", said)

    def backoff(self, response: HttpResponse | None, attempt: int) -> float:
        asked = retry_after_seconds(response, self.clock)
        if asked is not None:
            return min(asked, _MAX_BACKOFF)
        return _TOKEN_BACKOFF.wait(response, attempt) or 0.0


_TOKEN_BACKOFF = ExponentialBackoff(0.5)  # 1, 2, 4 ... s for retry 1, 2, 3 ...


#: ``failed(reason, hint, transient)``: the error a failed token or login request raises.
Failed = Callable[[str, str | None, bool], AuthenticationError]


def exchange(ctx: BuildContext, parts: RequestParts, mask: Mask, failed: Failed,
              refused: Callable[[HttpResponse], bool] | None = None) -> HttpResponse:
    """Send a token or login request, retried as :class:`TokenRequestErrors` says.

    ``failed(reason, hint, transient)`` makes the error raised when retries are
    exhausted or the answer is a non-retryable error status.
    """

    def give_up(resolution: Resolution, response: HttpResponse | None, exhausted: bool) -> AuthenticationError:
        hint = "check the URL or try again later" if response is None else None
        return failed(resolution.message or "it failed", hint, exhausted)

    client = HttpClient(ctx.transport, TokenRequestErrors(ctx.clock, refused), sleep=ctx.sleep, mask=mask,
                        give_up=give_up, secret_request=True)
    response = client.send(parts)
    assert response is not None  # the handler never says IGNORE
    return response


def _error_detail(response: HttpResponse) -> str:
    """The OAuth ``error`` code of a failed response (never its description, which may echo input)."""
    try:
        body = response.json()
    except ValueError:
        return ""
    code = body.get("error") if isinstance(body, dict) else None
    if isinstance(code, str) and code.replace("_", "").isalnum() and len(code) <= 40:
        return f" ({code})"
    return ""


def json_object(response: HttpResponse) -> dict | None:
    try:
        body = response.json()
    except ValueError:
        return None
    return body if isinstance(body, dict) else None
