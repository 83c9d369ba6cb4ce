"""One token for the whole sync: the driver owns refreshes, every stream and Spark task uses its token.

Authenticators that obtain a token at run time (OAuth, session tokens) do not
fetch it themselves: each offers a :class:`TokenKeeper` as a sync-wide service
(:meth:`BuildContext.service <framework.components.context.BuildContext.service>`)
named after what makes the token (:func:`service_name`: a digest of the token
request, never a secret in clear). Authenticators with the same definition get
the same name, so the first keeper offered is the one they all share: on the
driver (and in protocol mode) it runs in place; inside a Spark task the call
goes to the driver's keeper (:mod:`framework.coordination`).

The rule (compare and refresh): a caller asks with the generation of the token
it holds (``held``) and whether the API rejected it (a 401). The keeper
refreshes only when it has no token yet, when its token is due (near expiry,
by the driver's clock), or when the caller's rejected token is still the
current one. A caller holding an older generation gets the current token
without a refresh. Under the keeper's lock, N callers that saw the same token
expire or fail cause one refresh: at most one refresh per expiry across the sync.

Rotating refresh tokens (an OAuthAuthenticator's ``refresh_token_updater``,
:func:`save_rotation`): each token response may carry a new refresh
token, which invalidates the previous one. Only the driver refreshes, and after
each refresh the new refresh token, access token and expiry are saved once
through the run's :class:`~framework.components.config_sink.ConfigSink` (a CONTROL
message in protocol mode, the rewritten ``--config`` file in Spark mode).

Where no coordinator is attached to a Spark task (Spark Connect), each task
keeps its own keeper: tokens are then per task, and a rotating refresh token
would be used by several tasks (the sync fails on the second refresh).
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta, timezone
from typing import Any, Generic, Protocol, TypeVar

import orjson
from msgspec import Struct

from framework.components.config_sink import ConfigSink
from framework.temporal.clock import Clock
from framework.values import replace

log = logging.getLogger(__name__)

#: When a task's clock finds the driver's current token still due, it keeps it this long before asking again.
RECHECK = timedelta(seconds=5)


class TokenLike(Protocol):
    """What a keeper holds: a token value, when to renew it, and its generation (set by the keeper)."""

    @property
    def value(self) -> str: ...

    @property
    def renew_at(self) -> datetime | None: ...

    @property
    def generation(self) -> int: ...


T = TypeVar("T", bound=TokenLike)


class TokenAsk(Struct, frozen=True):
    """A call of a token service: the generation the caller holds (None: none yet), and whether the API
    rejected it (answered 401)."""

    held: int | None = None
    rejected: bool = False


def service_name(kind: str, identity: Any) -> str:
    """The sync-wide service of the token made by ``identity`` (what the token request sends): a digest only."""
    raw = orjson.dumps(identity, default=str, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)
    return f"token:{kind}:{hashlib.sha256(raw).hexdigest()[:32]}"


class TokenKeeper(Generic[T]):
    """The driver's side: the current token of one definition, refreshed by the compare-and-refresh rule.

    ``fetch`` gets a new token (an HTTP request; it may raise); ``fetchable`` is False when no new token
    can be had (an OAuth access token given without a token endpoint). Thread-safe.
    """

    def __init__(self, fetch: Callable[[], T], clock: Clock, initial: T | None = None, fetchable: bool = True):
        self._fetch = fetch
        self._clock = clock
        self._fetchable = fetchable
        self._lock = threading.Lock()
        self._token: T | None = replace(initial, generation=1) if initial is not None else None
        self.refreshes = 0  # tokens fetched (for tests and reports)

    def __call__(self, ask: TokenAsk) -> T:
        with self._lock:
            token = self._token
            if token is None or (self._fetchable and (self._due(token) or
                                                      (ask.rejected and ask.held == token.generation))):
                generation = token.generation + 1 if token is not None else 1
                fetched = self._fetch()
                self.refreshes += 1
                token = self._token = replace(fetched, generation=generation)
            return token

    def _due(self, token: T) -> bool:
        return token.renew_at is not None and self._clock.now() >= token.renew_at


class SharedToken(Generic[T]):
    """An authenticator's side: asks the sync's keeper (in place, or the driver's from a Spark task)."""

    def __init__(self, call: Callable[[TokenAsk], T], clock: Clock):
        self._call = call
        self._clock = clock

    def ask(self, held: T | None, rejected: bool) -> T:
        """The token to use after ``held`` (None: none yet) was found due, or rejected by the API."""
        token = self._call(TokenAsk(held.generation if held is not None else None, rejected))
        now = self._clock.now()
        if held is not None and token.generation == held.generation and token.renew_at is not None \
                and now >= token.renew_at:
            # The driver's clock says it is not due yet: use it a little longer instead of asking on every request.
            token = replace(token, renew_at=now + RECHECK)
        return token


def share(ctx: Any, kind: str, identity: Any, fetch: Callable[[], T], initial: T | None,
          fetchable: bool = True) -> SharedToken[T]:
    """Offer a keeper of this token as the sync-wide service named after ``identity``; the handle to use it."""
    call = ctx.service(service_name(kind, identity), TokenKeeper(fetch, ctx.clock, initial, fetchable))
    return SharedToken(call, ctx.clock)


def save_rotation(sink: ConfigSink | None, updates: Iterable[tuple[tuple[str, ...], str]]) -> None:
    """Save what one refresh under ``refresh_token_updater`` left in force (``(config path, value)`` pairs: the
    refresh token, the access token, its expiry) once, where this run saves its config (a CONTROL message, or
    the config file rewritten); on the driver only, the one place a sync refreshes."""
    if sink is None:
        log.warning("the OAuth refresh token was rotated, but this run has nowhere to save it")
        return
    sink.update(dict(updates))


def _parsed(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        found = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return found.replace(tzinfo=timezone.utc) if found.tzinfo is None else found


__all__ = ["RECHECK", "save_rotation", "SharedToken", "TokenAsk", "TokenKeeper", "TokenLike", "service_name",
           "share"]
