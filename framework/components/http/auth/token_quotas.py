"""``RateLimitedMultipleTokenAuthenticator``: several interchangeable tokens, each used until its quota is spent.

Each request is counted in a *pool* (a ``TokenQuota``: the first whose matchers match the request; a pool
without matchers is the default, else the first pool) and sent with a token that still has calls in
that pool: the token in use while it has some, then the next one. Each token's pools are read from the
quota status endpoint (``QuotaStatusSource``, sent with that token) when the first request needs them,
and again after a wait. When every token is spent in a pool, the request waits for the earliest reset
(at least :data:`MIN_EXHAUSTION_WAIT`), all the waits of one request together at most ``max_wait_time``;
a reset further away fails the request as a transient error. Once every token is below its reserve
(``max(budget_min_reserve, budget_reserve_fraction * limit)``) each request waits the seconds left until
the reset divided by the calls left (at most :data:`MAX_BUDGET_DELAY`), spreading them over the window.

A pool with ``remaining_header``, ``reset_header``, ``limit_header`` or ``exhaustion_status_codes`` is
kept in step with every response (:meth:`TokenQuotas.observe`, called by the HTTP client): a later reset
is a new window (the counts are the API's), the same window's count only ever goes down, and a status
of ``exhaustion_status_codes`` without a count spends the token. After a rate-limited answer the client
retries at once, without the backoff, when the token that sent the request is spent and another is not
(:meth:`TokenQuotas.has_alternative`). A quota endpoint answering one of ``unavailable_status_codes``
leaves that token's pools untracked: tokens are then taken in turn, and nothing waits.

**One book for the sync.** The counts live in a :class:`QuotaBook`, a sync-wide service
(:mod:`framework.coordination`): in the process itself in protocol mode, on the Spark driver for a Spark
sync, where it also reads the quota endpoint. A task's request asks the driver's book which token to use
(tokens travel as their place in the list, never as values) and, for a pool kept in step with
responses, tells it what the response said. Two authenticators with the same definition share one book.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta, timezone
from typing import Any

from msgspec import Struct

from framework.components.context import BuildContext, builds
from framework.components.http.auth.base import as_text
from framework.components.http.budget import Matcher
from framework.components.http.client import HttpClient
from framework.components.http.error_handler import Resolution, retry_after_seconds
from framework.components.http.request import HttpRequest, RequestParts
from framework.components.http.token_service import service_name
from framework.components.http.transport import HttpResponse
from framework.errors import ConfigError, HttpStatusError, ReadError, TransportError, place_suffix
from framework.masking import Mask
from framework.models import auth as models
from framework.temporal.clock import Clock
from framework.temporal.durations import parse_duration

__all__ = ["MAX_BUDGET_DELAY", "MIN_EXHAUSTION_WAIT", "Pool", "PoolState", "QuotaBook", "TokenQuotas",
           "build_rate_limited_tokens"]

log = logging.getLogger(__name__)

#: The longest wait of one request to spread a token's last calls over its window (seconds).
MAX_BUDGET_DELAY = 10.0
#: The shortest wait for a reset when every token is spent (a reset time in the past must not spin).
MIN_EXHAUSTION_WAIT = 5.0
#: A response's reset this close before the book's is the same window (the endpoint and headers disagree a little).
RESET_SKEW = timedelta(seconds=60)
#: Delays shorter than this are not worth a sleep.
_SMALLEST_DELAY = 0.1
#: How many times a quota status request is retried after a 429, a 5xx or a connection failure.
_STATUS_RETRIES = 3


class Pool(Struct, frozen=True):
    """A ``TokenQuota`` at run time: where its counts are in the quota answer and in responses, and which
    requests it counts."""

    name: str
    remaining_path: tuple[str, ...]
    reset_path: tuple[str, ...]
    limit_path: tuple[str, ...] | None = None
    matchers: tuple[Matcher, ...] = ()
    remaining_header: str | None = None
    reset_header: str | None = None
    limit_header: str | None = None
    exhaustion_statuses: frozenset[int] = frozenset()

    @property
    def follows_responses(self) -> bool:
        return bool(self.remaining_header or self.reset_header or self.limit_header or self.exhaustion_statuses)


class PoolState(Struct):
    """One token's count in one pool: calls left, when the window resets, the window's calls; ``tracked``
    False where the quota endpoint said it keeps no count."""

    remaining: int
    reset_at: datetime
    limit: int
    tracked: bool = True


class Take(Struct, frozen=True):
    """A call of the book: a token for one request of pool ``pool``; ``waited``: after a wait for a reset."""

    pool: int
    waited: bool = False


class Taken(Struct, frozen=True):
    """The book's answer: the token (its place in the list) and how long to wait before sending, or no token
    and the seconds until the earliest reset (``wait``)."""

    token: int | None
    wait: float = 0.0


class Report(Struct, frozen=True):
    """What a response said of one token's pool (None: the header was absent or unreadable)."""

    token: int
    pool: int
    status: int
    remaining: int | None
    reset_at: datetime | None
    limit: int | None


class Alternative(Struct, frozen=True):
    """Whether a token other than ``token`` has calls in ``pool`` while ``token`` has none."""

    token: int
    pool: int


Seed = Callable[[int], list[PoolState]]


class QuotaBook:
    """The sync's counts of every token in every pool (see the module docs); thread-safe."""

    def __init__(self, tokens: int, pools: tuple[Pool, ...], seed: Seed, clock: Clock, reserve_fraction: float,
                 min_reserve: int):
        self._tokens = tokens
        self._pools = pools
        self._seed = seed
        self._clock = clock
        self._reserve_fraction = reserve_fraction
        self._min_reserve = min_reserve
        self._lock = threading.RLock()
        self._states: list[list[PoolState]] | None = None  # [token][pool]
        self._active = 0
        self.seedings = 0

    def __call__(self, message: Take | Report | Alternative) -> Any:
        if isinstance(message, Take):
            return self.take(message.pool, message.waited)
        if isinstance(message, Report):
            self.report(message)
            return None
        return self.has_alternative(message.token, message.pool)

    def states(self) -> list[list[PoolState]]:
        with self._lock:
            if self._states is None:
                self._reseed()
            assert self._states is not None
            return self._states

    def _reseed(self) -> None:
        self._states = [self._seed(token) for token in range(self._tokens)]
        self.seedings += 1
        untracked = [token + 1 for token, pools in enumerate(self._states) if not all(p.tracked for p in pools)]
        if untracked:
            log.warning("the quota status endpoint keeps no count for token(s) %s: they are taken in turn, "
                        "without waiting for a reset", ", ".join(map(str, untracked)))

    def take(self, pool: int, waited: bool = False) -> Taken:
        with self._lock:
            states = self.states()
            if waited and all(row[pool].tracked and row[pool].remaining <= 0 for row in states):
                self._reseed()  # still spent after the wait: the endpoint says what the new window holds
                states = self.states()
            count = self._tokens
            for step in range(count):
                token = (self._active + step) % count
                state = states[token][pool]
                if not state.tracked:
                    self._active = (token + 1) % count  # no counts to go by: the tokens in turn
                    return Taken(token)
                if state.remaining > 0:
                    state.remaining -= 1
                    self._active = token
                    return Taken(token, self._delay(pool, token))
            now = self._clock.now()
            soonest = min((row[pool].reset_at - now).total_seconds() for row in states)
            return Taken(None, soonest)

    def _delay(self, pool: int, token: int) -> float:
        """Seconds to wait before this request, spreading the last calls over the window (0: none)."""
        assert self._states is not None
        column = [row[pool] for row in self._states]
        if any(not state.tracked for state in column):
            return 0.0
        if not all(state.remaining <= max(self._min_reserve, state.limit * self._reserve_fraction)
                   for state in column):
            return 0.0
        left = max((column[token].reset_at - self._clock.now()).total_seconds(), 0.0)
        calls = sum(max(state.remaining, 0) for state in column)
        if calls <= 0 or left <= 0:
            return 0.0
        delay = min(left / calls, MAX_BUDGET_DELAY)
        return delay if delay >= _SMALLEST_DELAY else 0.0

    def report(self, report: Report) -> None:
        with self._lock:
            if self._states is None:
                return  # not read yet: the quota endpoint's answer is the better one
            state = self._states[report.token][report.pool]
            if not state.tracked:
                return
            pool = self._pools[report.pool]
            remaining = report.remaining
            if remaining is None and report.status in pool.exhaustion_statuses:
                remaining = 0
            reset_at, limit = report.reset_at, report.limit
            if remaining is None and reset_at is None and limit is None:
                return
            if limit is not None and limit > 0 and (reset_at is None or reset_at >= state.reset_at):
                state.limit = limit
            if reset_at is not None and reset_at > state.reset_at:  # a new window: the API's counts
                state.reset_at = reset_at
                state.remaining = remaining if remaining is not None else state.limit
            elif remaining is not None and ((remaining <= 0 and report.status in pool.exhaustion_statuses)
                                            or reset_at is None or reset_at >= state.reset_at - RESET_SKEW):
                state.remaining = min(state.remaining, remaining)  # the same window: only ever fewer

    def has_alternative(self, token: int, pool: int) -> bool:
        with self._lock:
            if self._states is None:
                return False
            sender = self._states[token][pool]
            if not sender.tracked or sender.remaining > 0:
                return False
            return any(row[pool].remaining > 0 for index, row in enumerate(self._states) if index != token)


class TokenQuotas:
    """The authenticator: a token from the sync's :class:`QuotaBook` for each request (see the module docs)."""

    def __init__(self, tokens: tuple[str, ...], pools: tuple[Pool, ...], header: str, method: str,
                 call: Callable[[Any], Any], clock: Clock, sleep: Callable[[float], None], max_wait: float,
                 place: str | None):
        self._tokens = tokens
        self._index = {token: index for index, token in enumerate(tokens)}
        self._pools = pools
        self._header = header
        self._method = method
        self._call = call
        self._clock = clock
        self._sleep = sleep
        self._max_wait = max_wait
        self._place = place
        default = next((i for i, pool in enumerate(pools) if not pool.matchers), None)
        self._default = default if default is not None else 0
        self._unmatched_told = False

    def __repr__(self) -> str:
        return f"TokenQuotas({len(self._tokens)} tokens, pools={[pool.name for pool in self._pools]})"

    def value(self, token: int) -> str:
        return f"{self._method} {self._tokens[token]}".strip()

    def pool_of(self, request: HttpRequest) -> int:
        """The pool a request counts in: the first whose matchers match it, else the default pool."""
        for index, pool in enumerate(self._pools):
            if pool.matchers and any(matcher.matches(request) for matcher in pool.matchers):
                return index
        if all(pool.matchers for pool in self._pools) and not self._unmatched_told:
            self._unmatched_told = True
            log.warning("%s matches no quota pool; it is counted in `%s` (a pool without matchers would take "
                        "such requests)%s", request.method + " " + request.url, self._pools[0].name,
                        place_suffix(self._place))
        return self._default

    def apply(self, parts: RequestParts) -> None:
        pool = self.pool_of(parts.to_request())
        started: datetime | None = None
        waited = False
        while True:
            taken: Taken = self._call(Take(pool, waited))
            if taken.token is not None:
                if taken.wait >= _SMALLEST_DELAY:
                    self._sleep(taken.wait)
                parts.headers[self._header] = self.value(taken.token)
                return
            now = self._clock.now()
            started = started or now
            left = self._max_wait - (now - started).total_seconds()
            if left <= 0 or taken.wait >= left:
                raise TransportError(
                    f"the rate limits of all {len(self._tokens)} tokens are spent (quota `{self._pools[pool].name}`), "
                    f"and the next reset is in {max(taken.wait, 0):.0f} s, past `max_wait_time` "
                    f"({self._max_wait:g} s); try again later, or add tokens" + place_suffix(self._place),
                    failure_type="transient_error")
            wait = min(max(taken.wait, MIN_EXHAUSTION_WAIT), left)
            log.info("the rate limits of all tokens are spent (quota `%s`): waiting %.0f s for the reset",
                     self._pools[pool].name, wait)
            self._sleep(wait)
            waited = True

    def _sender(self, request: HttpRequest) -> int | None:
        sent = next((value for name, value in request.headers.items() if name.lower() == self._header.lower()), None)
        if not sent:
            return None
        prefix = f"{self._method} " if self._method else ""
        if not sent.startswith(prefix):
            return None
        return self._index.get(sent[len(prefix):].strip())

    def observe(self, request: HttpRequest, response: HttpResponse) -> None:
        """Keep the sending token's pool in step with what ``response`` says (pools with headers or statuses)."""
        pool = self.pool_of(request)
        spec = self._pools[pool]
        if not spec.follows_responses:
            return
        token = self._sender(request)
        if token is None:
            return
        remaining = _header_int(response, spec.remaining_header)
        reset_at = _header_time(response, spec.reset_header)
        limit = _header_int(response, spec.limit_header)
        if remaining is None and reset_at is None and limit is None and response.status not in spec.exhaustion_statuses:
            return
        self._call(Report(token, pool, response.status, remaining, reset_at, limit))

    def has_alternative(self, request: HttpRequest) -> bool:
        """Whether a retry of ``request`` goes out with another token that has calls (no need to wait)."""
        token = self._sender(request)
        return token is not None and bool(self._call(Alternative(token, self.pool_of(request))))

    def refresh(self) -> bool:
        return False

    def secrets(self) -> tuple[str, ...]:
        return self._tokens


# -- reading the quota endpoint --------------------------------------------------------------------------------


def _header_int(response: HttpResponse, name: str | None) -> int | None:
    if not name:
        return None
    value = response.headers.get(name)
    try:
        return int(str(value).strip()) if value is not None else None
    except ValueError:
        return None


def _header_time(response: HttpResponse, name: str | None) -> datetime | None:
    if not name:
        return None
    value = response.headers.get(name)
    try:
        return reset_time(value) if value is not None else None
    except ValueError:
        return None


def reset_time(value: Any) -> datetime:
    """A reset time as the API gives it: seconds since the epoch (a number or its text) or ISO 8601."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a time")
    if isinstance(value, (int, float)):
        return datetime.fromtimestamp(float(value), timezone.utc)
    text = str(value).strip()
    try:
        return datetime.fromtimestamp(float(text), timezone.utc)
    except ValueError:
        pass
    found = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return found.replace(tzinfo=timezone.utc) if found.tzinfo is None else found


class _QuotaStatusErrors:
    """The quota request's error handler: 2xx and the ``unavailable`` statuses are answers; a 429, a 5xx or a
    connection failure is retried; anything else fails (the token was refused, or the URL is wrong)."""

    max_retries = _STATUS_RETRIES

    def __init__(self, clock: Clock, unavailable: frozenset[int]):
        self.clock = clock
        self.unavailable = unavailable

    def interpret(self, response: HttpResponse | None, error: TransportError | None = None) -> Resolution:
        if response is None:
            return Resolution("RETRY", "transient_error", f"the connection failed ({error.reason if error else '?'})")
        if 200 <= response.status < 300 or response.status in self.unavailable:
            return Resolution("SUCCESS")
        if response.status == 429 or response.status >= 500:
            return Resolution("RETRY", "transient_error", f"it answered HTTP {response.status}")
        return Resolution("FAIL", "config_error", f"it answered HTTP {response.status}")

    def backoff(self, response: HttpResponse | None, attempt: int) -> float:
        asked = retry_after_seconds(response, self.clock)
        return min(asked, 60.0) if asked is not None else float(2 ** (attempt - 1))


def _dig(body: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        if not isinstance(body, Mapping) or key not in body:
            raise KeyError(key)
        body = body[key]
    return body


class _Seeder:
    """Reads one token's pools from the quota status endpoint (on the driver, or in protocol mode)."""

    def __init__(self, ctx: BuildContext, tokens: tuple[str, ...], pools: tuple[Pool, ...], url: str, method: str,
                 headers: Mapping[str, str], unavailable: frozenset[int], header: str, auth_method: str,
                 mask: Mask, place: str | None):
        self._ctx, self._tokens, self._pools, self._url, self._method = ctx, tokens, pools, url, method
        self._headers, self._unavailable, self._header, self._auth_method = headers, unavailable, header, auth_method
        self._mask, self._place = mask, place

    def __call__(self, token: int) -> list[PoolState]:
        ctx = self._ctx
        parts = RequestParts(method=self._method, url=self._url, headers={
            **self._headers, self._header: f"{self._auth_method} {self._tokens[token]}".strip()})

        def give_up(resolution: Resolution, response: HttpResponse | None, exhausted: bool) -> ReadError:
            said = resolution.message or "it failed"
            fix = ("check that the token is valid" if response is not None and response.status in (401, 403)
                   else "check the URL, or try again later")
            message = (f"the quota status request of token {token + 1} ({self._method} {self._url}) failed: {said}; "
                       f"{fix}" + place_suffix(self._place))
            if response is None:
                return TransportError(message, failure_type="transient_error")
            return HttpStatusError(message, status=response.status,
                                   failure_type="transient_error" if exhausted else "config_error")

        client = HttpClient(ctx.transport, _QuotaStatusErrors(ctx.clock, self._unavailable), sleep=ctx.sleep,
                            mask=self._mask, give_up=give_up, secret_request=True)
        response = client.send(parts)
        assert response is not None
        now = ctx.clock.now()
        if response.status in self._unavailable:
            return [PoolState(0, now, 0, tracked=False) for _ in self._pools]
        try:
            body = response.json()
        except ValueError:
            body = None
        states = []
        for pool in self._pools:
            values = []
            for what, path in (("remaining", pool.remaining_path), ("reset", pool.reset_path),
                               ("limit", pool.limit_path or pool.remaining_path)):
                try:
                    values.append(_dig(body, path))
                except KeyError:
                    raise ConfigError(
                        f"the quota status answer of {self._url} has nothing at `{'.'.join(path)}`, the {what} of "
                        f"quota `{pool.name}`; fix the TokenQuota's `{what}_path` to where the answer holds it"
                        + place_suffix(self._place)) from None
            try:
                remaining, reset, limit = int(values[0]), reset_time(values[1]), int(values[2])
            except (TypeError, ValueError):
                raise ConfigError(
                    f"the quota status answer of {self._url} gives quota `{pool.name}` remaining {values[0]!r}, reset "
                    f"{values[1]!r}, limit {values[2]!r}: counts must be integers and the reset seconds since the "
                    "epoch or ISO 8601; fix the TokenQuota's paths" + place_suffix(self._place)) from None
            states.append(PoolState(remaining, reset, limit))
        return states


# -- the builder --------------------------------------------------------------------------------------------------


def _tokens_of(model: models.RateLimitedMultipleTokenAuthenticator, ctx: BuildContext) -> tuple[str, ...]:
    params = model.parameters
    if isinstance(model.tokens, str):
        text = as_text(ctx.render(model.tokens, params))
        return tuple(token.strip() for token in text.split(model.token_delimiter or ",") if token.strip())
    return tuple(token for token in (as_text(ctx.render(raw, params)).strip() for raw in model.tokens) if token)


def _max_wait(text: str, place: str | None) -> float:
    found = parse_duration(text)
    if not isinstance(found, timedelta):
        raise ConfigError(f"`max_wait_time` is {text!r}, a duration in months or years, whose length depends on "
                          "when it starts; write it in days, hours or minutes (`PT2H`)" + place_suffix(place))
    return max(found.total_seconds(), 0.0)


@builds("RateLimitedMultipleTokenAuthenticator")
def build_rate_limited_tokens(model: models.RateLimitedMultipleTokenAuthenticator, ctx: BuildContext,
                              path: tuple) -> TokenQuotas:
    place = ctx.place(path)
    tokens = _tokens_of(model, ctx)
    if not tokens:
        raise ConfigError("the RateLimitedMultipleTokenAuthenticator has no token: `tokens` rendered to nothing; "
                          "put the tokens in the config" + place_suffix(place))
    pools = tuple(
        Pool(quota.name, tuple(quota.remaining_path), tuple(quota.reset_path),
             tuple(quota.limit_path) if quota.limit_path else None,
             tuple(ctx.build(m, path + ("quotas", i, "matchers", k)) for k, m in enumerate(quota.matchers)),
             quota.remaining_header, quota.reset_header, quota.limit_header, frozenset(quota.exhaustion_status_codes))
        for i, quota in enumerate(model.quotas))
    source = model.quota_status_source
    url = as_text(ctx.render(source.url, model.parameters))
    headers = {str(k): as_text(ctx.render(v, model.parameters)) for k, v in source.request_headers.items()}
    unavailable = frozenset(source.unavailable_status_codes)
    max_wait = _max_wait(as_text(ctx.render(model.max_wait_time, model.parameters)), place)
    auth_method = model.auth_method

    def mask(text: str) -> str:
        for token in tokens:
            text = text.replace(token, "****")
        return ctx.mask(text)

    seeder = _Seeder(ctx, tokens, pools, url, source.http_method, headers, unavailable, model.header, auth_method,
                     mask, place)
    book = QuotaBook(len(tokens), pools, seeder, ctx.clock, model.budget_reserve_fraction, model.budget_min_reserve)
    identity = {"tokens": tokens, "pools": [(p.name, p.remaining_path, p.reset_path, p.limit_path, p.remaining_header,
                                             p.reset_header, p.limit_header, sorted(p.exhaustion_statuses),
                                             repr(p.matchers)) for p in pools],
                "url": url, "method": source.http_method, "headers": headers, "unavailable": sorted(unavailable),
                "header": model.header, "auth_method": auth_method, "max_wait": max_wait,
                "reserve": (model.budget_reserve_fraction, model.budget_min_reserve)}
    call = ctx.service(service_name("quotas", identity), book)
    return TokenQuotas(tokens, pools, model.header, auth_method, call, ctx.clock, ctx.sleep, max_wait, place)
