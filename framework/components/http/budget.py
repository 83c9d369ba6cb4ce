"""API budgets (``api_budget``): the calls the whole sync may send, held across every Spark task.

A request waits for a *permit* before it is sent (:meth:`ApiBudget.acquire`, called by the HTTP client's
request loop for every attempt). The first policy whose matchers match the request applies (a policy
without matchers matches every request); a request no policy matches, or one an ``UnlimitedCallRatePolicy``
matches, is sent at once. A matcher's ``weight`` is how many permits the request takes.

**Leases from one ledger.** The policies' windows live in one :class:`Ledger`, a sync-wide service
(:mod:`framework.coordination`): on the Spark driver for a Spark sync, in the process itself in protocol
mode. A task does not ask the ledger per request: it asks for a *lease* of a few permits and spends them
locally. A lease is valid for a short time only (``hold``: 8% of the policy's shortest window, at most one
second, of which half is the lease's life and half a margin for the requests' travel time); permits not used
by then expire, and are handed back with the task's next ask. Because a permit granted at ``t`` may be used
until ``t + hold``, the ledger counts a moving window of ``interval + hold`` over grant times: any
``interval`` of the API's clock then sees at most ``limit`` calls, whatever the tasks' timing, for a cost
of ``hold / (interval + hold)`` of the rate (under 8%: the margin was 40% of a 5% hold once, and a
machine under a load of 13 let a request arrive later than that). The lease size adapts per task and policy: it
doubles while a task spends its leases before they expire, and halves when permits expire unused, between
1 and an eighth of the smallest limit. So a slow task asks once per request, a fast one rarely.

**The API's answers.** A response's ``ratelimit_remaining_header`` and ``ratelimit_reset_header`` (seconds
since the epoch; a small number is taken as seconds from now) and a status among
``status_codes_for_ratelimit_hit`` update the matching policy: a fixed window takes the API's reset time
and never allows more than the API says remain; a status hit or ``remaining`` 0 spends the window (a moving
window is held until the API's reset time when it gives one, else filled up to now). A spent window is
told to the ledger at once; other readings travel with the task's next ask.

Times come from the injected clock and waits go through the injected ``sleep``, so tests run without
waiting. The windows are written here rather than taken from ``pyrate-limiter`` (which airbyte-cdk uses):
what they must do is grant batches that expire, take calls back, widen the window by the hold and follow
the API's reset time, on an injected clock and without a background thread; that is a few lines on a
deque, where the library would need a bucket of ours anyway.
"""

from __future__ import annotations

import itertools
import math
import re
import threading
from collections import deque
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from msgspec import Struct, field

from framework.components.context import BuildContext, builds
from framework.components.http.request import HttpRequest
from framework.components.http.transport import HttpResponse
from framework.errors import ConfigError, InterpolationError
from framework.models.budgets import (
    FixedWindowCallRatePolicy,
    HTTPAPIBudget,
    HttpRequestRegexMatcher,
    MovingWindowCallRatePolicy,
    UnlimitedCallRatePolicy,
)
from framework.temporal.clock import Clock
from framework.temporal.durations import parse_duration

#: The name of the sync-wide service that holds the policies' windows.
SERVICE = "api_budget"

#: A lease's hold as a fraction of the policy's shortest window, and its upper bound in seconds.
HOLD_FRACTION = 0.08
HOLD_MAX = 1.0
#: Of the hold: the part a lease may be used in (the rest covers the requests' travel time).
LEASE_SHARE = 0.5
#: Lease sizes go up to this fraction of the policy's smallest limit.
LEASE_CAP_FRACTION = 1 / 8
#: A "remaining" reset header below this is seconds from now, above it seconds since the epoch.
_EPOCH_FLOOR = 1_000_000_000


# --- matching requests (each task) -------------------------------------------------------------------------


class Matcher(Struct, frozen=True):
    """One ``HttpRequestRegexMatcher``, ready to test requests."""

    method: str | None = None
    url_base: str | None = None
    path_pattern: re.Pattern[str] | None = None
    params: Mapping[str, str] = field(default_factory=dict)
    headers: Mapping[str, str] = field(default_factory=dict)
    weight: int = 1

    def matches(self, request: HttpRequest) -> bool:
        if self.method is not None and request.method.upper() != self.method:
            return False
        url = urlsplit(request.url)
        if self.url_base is not None and f"{url.scheme}://{url.netloc}" != self.url_base:
            return False
        if self.path_pattern is not None and not self.path_pattern.search(url.path.rstrip("/")):
            return False
        if self.params:
            query = dict(parse_qsl(url.query))
            query.update((str(k), str(v)) for k, v in request.params)
            if any(query.get(k) != v for k, v in self.params.items()):
                return False
        if self.headers:
            sent = {str(k).lower(): str(v) for k, v in request.headers.items()}
            if any(sent.get(k) != v for k, v in self.headers.items()):
                return False
        return True


class Policy(Struct, frozen=True):
    """A policy's matchers and kind (``moving``, ``fixed`` or ``unlimited``) as the tasks see it."""

    kind: str
    matchers: tuple[Matcher, ...]

    def weight_of(self, request: HttpRequest) -> int | None:
        """The permits ``request`` takes under this policy, or None when the policy does not match it."""
        if not self.matchers:
            return 1
        for matcher in self.matchers:
            if matcher.matches(request):
                return matcher.weight
        return None


# --- the windows (the ledger) ------------------------------------------------------------------------------


class Ask(Struct, frozen=True):
    """A task's ask to the ledger: up to ``wanted`` permits (at least ``least``) of policy ``policy``.

    ``returned`` hands back permits of expired leases (lease id, count); ``seen`` is the latest reading
    of the API's headers for the policy, if any."""

    policy: int
    wanted: int
    least: int
    returned: tuple[tuple[int, int], ...] = ()
    seen: Reading | None = None


class Reading(Struct, frozen=True):
    """What a response said of the API's window: calls remaining, when it resets (epoch seconds),
    whether it was a rate-limit hit, and when it was seen (epoch seconds)."""

    at: float
    remaining: int | None = None
    reset: float | None = None
    hit: bool = False

    @property
    def spent(self) -> bool:
        return self.hit or self.remaining == 0


class Grant(Struct, frozen=True):
    """The ledger's answer: ``count`` permits (lease ``lease``) usable for ``valid_for`` seconds, or none
    and ``retry_after`` seconds to wait before asking again."""

    lease: int
    count: int
    valid_for: float = 0.0
    retry_after: float = 0.0


class MovingWindow:
    """Every rate allows a call: at most ``limit`` permits granted in any ``interval + hold``."""

    def __init__(self, rates: tuple[tuple[int, float], ...], hold: float):
        self.rates = tuple((limit, interval + hold) for limit, interval in rates)
        self.hold = hold
        self.span = max(span for _, span in self.rates)
        self.grants: deque[list[float]] = deque()  # [time, count, lease], oldest first
        self.leases: dict[int, list[float]] = {}
        self.held_until = 0.0

    def _forget(self, now: float) -> None:
        while self.grants and self.grants[0][0] <= now - self.span:
            self.leases.pop(int(self.grants.popleft()[2]), None)

    def available(self, now: float) -> int:
        self._forget(now)
        return min(limit - int(sum(c for t, c, _ in self.grants if t > now - span)) for limit, span in self.rates)

    def wait_for(self, now: float, needed: int) -> float:
        """Seconds until ``needed`` permits are free (``needed`` at most the smallest limit)."""
        wait = max(0.0, self.held_until - now)
        for limit, span in self.rates:
            inside = [(t, c) for t, c, _ in self.grants if t > now - span]
            excess = sum(c for _, c in inside) + needed - limit
            for t, c in inside:
                if excess <= 0:
                    break
                excess -= c
                wait = max(wait, t + span - now)
        return wait

    def grant(self, now: float, lease: int, wanted: int, least: int, validity: float) -> Grant:
        if now < self.held_until:
            return Grant(lease, 0, retry_after=self.held_until - now)
        free = self.available(now)
        if free < least:
            return Grant(lease, 0, retry_after=max(self.wait_for(now, least), 1e-3))
        count = min(wanted, free)
        entry = [now, float(count), float(lease)]
        self.grants.append(entry)
        self.leases[lease] = entry
        return Grant(lease, count, valid_for=validity)

    def give_back(self, lease: int, count: int) -> None:
        entry = self.leases.get(lease)
        if entry is not None:
            entry[1] = max(0.0, entry[1] - count)

    def see(self, now: float, reading: Reading) -> None:
        if not reading.spent:
            return  # a moving window takes only "spent" from the API (it cannot place the API's window)
        if reading.reset is not None and reading.reset > now:
            self.held_until = max(self.held_until, reading.reset)  # the API says when it allows calls again
            return
        free = self.available(now)
        if free > 0:  # no word of when: the window is full from now
            self.grants.append([now, float(free), 0.0])


class FixedWindow:
    """``limit`` permits per ``period``; a window starts with the first grant, or when the API says."""

    def __init__(self, limit: int, period: float, hold: float):
        self.limit = limit
        self.period = period
        self.margin = hold * (1 - LEASE_SHARE)
        self.count = 0
        self.ends: float | None = None  # the current window's end; None before the first grant
        self.number = 0  # which window the count is of
        self.leases: dict[int, int] = {}  # lease -> the window it was granted in

    def _roll(self, now: float) -> None:
        if self.ends is None:
            return
        if now >= self.ends:
            skipped = math.floor((now - self.ends) / self.period) + 1
            self.ends += skipped * self.period
            self.count = 0
            self.number += 1
            self.leases.clear()

    def grant(self, now: float, lease: int, wanted: int, least: int, validity: float) -> Grant:
        if self.ends is None:
            self.ends = now + self.period
        self._roll(now)
        left = self.ends - now
        usable = min(validity, left - self.margin)
        if usable <= 0 or self.limit - self.count < least:
            return Grant(lease, 0, retry_after=max(left, 1e-3))
        count = min(wanted, self.limit - self.count)
        self.count += count
        self.leases[lease] = self.number
        return Grant(lease, count, valid_for=usable)

    def give_back(self, lease: int, count: int) -> None:
        if self.leases.get(lease) == self.number:
            self.count = max(0, self.count - count)

    def see(self, now: float, reading: Reading) -> None:
        self._roll(now)
        if reading.reset is not None and reading.reset > now:
            self.ends = reading.reset  # the API's window: ours ends when it does
        if self.ends is None:
            self.ends = now + self.period
        if reading.spent:
            self.count = self.limit
        elif reading.remaining is not None and (
                reading.reset == self.ends if reading.reset is not None else reading.at >= self.ends - self.period):
            # a reading of this window (a stale one says nothing of it); never more than the API allows
            self.count = max(self.count, self.limit - reading.remaining)


Window = MovingWindow | FixedWindow


class Ledger:
    """The policies' windows: the sync-wide service tasks ask for leases (:data:`SERVICE`)."""

    def __init__(self, windows: tuple[Window | None, ...], clock: Clock, holds: tuple[float, ...]):
        self.windows = windows
        self.clock = clock
        self.holds = holds
        self._lock = threading.Lock()
        self._ids = itertools.count(1)

    def __call__(self, payload: Any) -> Any:
        if isinstance(payload, Ask):
            return self.ask(payload)
        if isinstance(payload, tuple) and len(payload) == 2 and isinstance(payload[1], Reading):
            self.see(payload[0], payload[1])
            return None
        raise TypeError(f"the API budget got a request it does not know: {type(payload).__name__}")

    def _window(self, policy: int) -> Window:
        window = self.windows[policy] if 0 <= policy < len(self.windows) else None
        if window is None:
            raise ValueError(f"the API budget has no limited policy {policy}")
        return window

    def ask(self, ask: Ask) -> Grant:
        window = self._window(ask.policy)
        with self._lock:
            now = self.clock.now().timestamp()
            for lease, count in ask.returned:
                window.give_back(lease, count)
            if ask.seen is not None:
                window.see(now, ask.seen)
            return window.grant(now, next(self._ids), ask.wanted, ask.least,
                                self.holds[ask.policy] * LEASE_SHARE)

    def see(self, policy: int, reading: Reading) -> None:
        window = self._window(policy)
        with self._lock:
            window.see(self.clock.now().timestamp(), reading)


# --- the tasks' side ---------------------------------------------------------------------------------------


class _Lease(Struct):
    id: int
    left: int
    granted: int
    expires: float


class _Pocket(Struct):
    """A task's permits of one policy: its leases, the next lease size, what to tell the ledger."""

    size: int = 1
    cap: int = 1
    leases: list[_Lease] = field(default_factory=list)
    returned: list[tuple[int, int]] = field(default_factory=list)
    seen: Reading | None = None


class Ticket(Struct, frozen=True):
    """What :meth:`ApiBudget.acquire` hands the client for :meth:`ApiBudget.observe`: the policy applied."""

    policy: int


class ApiBudget:
    """A task's view of the budget: matches requests to policies, spends leased permits, waits for more."""

    def __init__(self, policies: tuple[Policy, ...], call: Callable[[Any], Any], clock: Clock,
                 sleep: Callable[[float], None], caps: tuple[int, ...], remaining_header: str = "ratelimit-remaining",
                 reset_header: str = "ratelimit-reset", hit_statuses: tuple[int, ...] = (429,)):
        self.policies = policies
        self.call = call
        self.clock = clock
        self.sleep = sleep
        self.remaining_header = remaining_header
        self.reset_header = reset_header
        self.hit_statuses = frozenset(hit_statuses)
        self._pockets = tuple(_Pocket(cap=cap) for cap in caps)
        self._lock = threading.Lock()
        self.waited = 0.0  # seconds spent waiting for permits (for reports and tests)

    def policy_of(self, request: HttpRequest) -> tuple[int, int] | None:
        """The index of the policy that applies to ``request`` and the permits it takes (None: no policy)."""
        for index, policy in enumerate(self.policies):
            weight = policy.weight_of(request)
            if weight is not None:
                return index, weight
        return None

    def acquire(self, request: HttpRequest) -> Ticket | None:
        """Wait until ``request`` may be sent; what :meth:`observe` needs of it (None: not limited)."""
        found = self.policy_of(request)
        if found is None or self.policies[found[0]].kind == "unlimited":
            return None
        policy, weight = found
        pocket = self._pockets[policy]
        while True:
            with self._lock:
                now = self._now()
                if self._take(pocket, weight, now):
                    return Ticket(policy)
                ask = Ask(policy, max(pocket.size, weight), weight, tuple(pocket.returned), pocket.seen)
                pocket.returned.clear()
                pocket.seen = None
            asked_at = self._now()
            grant: Grant = self.call(ask)
            with self._lock:
                if grant.count > 0:
                    pocket.leases.append(_Lease(grant.lease, grant.count, grant.count, asked_at + grant.valid_for))
                    continue
            self.waited += grant.retry_after
            self.sleep(grant.retry_after)

    def _take(self, pocket: _Pocket, weight: int, now: float) -> bool:
        """Spend ``weight`` permits of a live lease; expired leases are handed back and shrink the size."""
        live = []
        for lease in pocket.leases:
            if lease.expires <= now:
                if lease.left:
                    pocket.returned.append((lease.id, lease.left))
                    pocket.size = max(1, pocket.size // 2)
            else:
                live.append(lease)
        pocket.leases = live
        for lease in live:
            if lease.left >= weight:
                lease.left -= weight
                if lease.left == 0:
                    live.remove(lease)
                    if lease.granted >= pocket.size:  # spent in time: the next lease may be larger
                        pocket.size = min(pocket.cap, pocket.size * 2)
                return True
        return False

    def observe(self, ticket: Ticket | None, response: HttpResponse | None) -> None:
        """Read the API's rate-limit answer in ``response`` into the budget of the ticket's policy."""
        if ticket is None or response is None:
            return
        remaining = _integer(response.headers.get(self.remaining_header))
        reset = _integer(response.headers.get(self.reset_header))
        hit = response.status in self.hit_statuses
        if remaining is None and reset is None and not hit:
            return
        now = self._now()
        reset_at = None if reset is None else float(reset) if reset >= _EPOCH_FLOOR else now + reset
        reading = Reading(now, remaining, reset_at, hit)
        pocket = self._pockets[ticket.policy]
        if reading.spent:
            with self._lock:
                pocket.leases.clear()  # what this task still holds would be refused
                pocket.seen = None
            self.call((ticket.policy, reading))
        else:
            with self._lock:
                pocket.seen = reading

    def _now(self) -> float:
        return self.clock.now().timestamp()


def _integer(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        return int(float(value.strip()))
    except ValueError:
        return None


# --- building ----------------------------------------------------------------------------------------------


def _seconds(text: str, where: str) -> float:
    found = parse_duration(text)
    # a duration in months or years (isodate.Duration) has a length from a start: any will do here
    seconds = found.total_seconds() if isinstance(found, timedelta) else \
        found.totimedelta(start=datetime(2000, 1, 1)).total_seconds()
    if seconds <= 0:
        raise ConfigError(f"{where}: the duration `{text}` must be longer than zero; write one such as `PT1M`")
    return float(seconds)


def _positive(ctx: BuildContext, value: int | str, what: str, where: str) -> int:
    try:
        rendered = ctx.render(value, {}, "integer")
    except InterpolationError as exc:
        raise ConfigError(f"{where}: `{what}` must be a whole number of at least 1: {exc}; fix the manifest or "
                          "the config value it reads") from None
    if not isinstance(rendered, int) or isinstance(rendered, bool) or rendered < 1:
        raise ConfigError(f"{where}: `{what}` must be a whole number of at least 1, got {rendered!r}; "
                          "fix the manifest or the config value it reads")
    return rendered


class PolicyLimit(Struct, frozen=True):
    """What a call-rate policy builds to: its window (None: unlimited), how long a lease is held, its smallest
    limit (no request may weigh more)."""

    window: Window | None
    hold: float
    smallest: int


def _where(ctx: BuildContext, path: tuple) -> str:
    return ctx.place(path) or ".".join(map(str, path))


@builds("HttpRequestRegexMatcher")
def build_request_matcher(model: HttpRequestRegexMatcher, ctx: BuildContext, path: tuple) -> Matcher:
    where = _where(ctx, path)
    try:
        pattern = re.compile(model.url_path_pattern) if model.url_path_pattern else None
    except re.error as exc:
        raise ConfigError(f"{where}: `url_path_pattern` is not a regular expression ({exc})") from None
    return Matcher(
        method=model.method.upper() if model.method else None,
        url_base=model.url_base.rstrip("/") if model.url_base else None,
        path_pattern=pattern,
        params={str(k): str(v) for k, v in model.params.items()},
        headers={str(k).lower(): str(v) for k, v in model.headers.items()},
        weight=_positive(ctx, model.weight, "weight", where) if model.weight is not None else 1,
    )


@builds("MovingWindowCallRatePolicy")
def build_moving_window_policy(model: MovingWindowCallRatePolicy, ctx: BuildContext, path: tuple) -> PolicyLimit:
    where = _where(ctx, path)
    if not model.rates:
        raise ConfigError(f"{where}: a MovingWindowCallRatePolicy needs at least one rate in `rates`")
    rates = tuple((_positive(ctx, rate.limit, "limit", where), _seconds(rate.interval, where)) for rate in model.rates)
    hold = min(HOLD_MAX, HOLD_FRACTION * min(interval for _, interval in rates))
    return PolicyLimit(MovingWindow(rates, hold), hold, min(limit for limit, _ in rates))


@builds("FixedWindowCallRatePolicy")
def build_fixed_window_policy(model: FixedWindowCallRatePolicy, ctx: BuildContext, path: tuple) -> PolicyLimit:
    where = _where(ctx, path)
    if model.call_limit < 1:
        raise ConfigError(f"{where}: `call_limit` must be at least 1")
    period = _seconds(model.period, where)
    hold = min(HOLD_MAX, HOLD_FRACTION * period)
    return PolicyLimit(FixedWindow(model.call_limit, period, hold), hold, model.call_limit)


@builds("UnlimitedCallRatePolicy")
def build_unlimited_policy(model: UnlimitedCallRatePolicy, ctx: BuildContext, path: tuple) -> PolicyLimit:
    return PolicyLimit(None, 0.0, 0)


@builds("HTTPAPIBudget")
def build_api_budget(model: HTTPAPIBudget, ctx: BuildContext, path: tuple) -> ApiBudget:
    """The task side of the budget; its :class:`Ledger` is offered as the sync-wide service."""
    policies: list[Policy] = []
    windows: list[Window | None] = []
    holds: list[float] = []
    caps: list[int] = []
    for index, policy in enumerate(model.policies):
        here = path + ("policies", index)
        where = ctx.place(here) or ".".join(map(str, here))
        matchers: tuple[Matcher, ...] = tuple(ctx.build(m, here + ("matchers", i))
                                              for i, m in enumerate(policy.matchers))
        limit: PolicyLimit = ctx.build(policy, here)
        window, hold, smallest = limit.window, limit.hold, limit.smallest
        heaviest = max((m.weight for m in matchers), default=1)
        if window is not None and heaviest > smallest:
            raise ConfigError(f"{where}: a request of weight {heaviest} could never be sent under a limit of "
                              f"{smallest}; lower the matcher's `weight` or raise the limit")
        policies.append(Policy("unlimited" if window is None else
                               "moving" if isinstance(window, MovingWindow) else "fixed", matchers))
        windows.append(window)
        holds.append(hold)
        caps.append(max(1, int(smallest * LEASE_CAP_FRACTION)))
    ledger = Ledger(tuple(windows), ctx.clock, tuple(holds))
    call = ctx.service(SERVICE, ledger)
    return ApiBudget(tuple(policies), call, ctx.clock, ctx.sleep, tuple(caps),
                     remaining_header=model.ratelimit_remaining_header, reset_header=model.ratelimit_reset_header,
                     hit_statuses=model.status_codes_for_ratelimit_hit)


__all__ = ["SERVICE", "ApiBudget", "Ask", "FixedWindow", "Grant", "Ledger", "Matcher", "MovingWindow", "Policy",
           "PolicyLimit", "Reading", "Ticket", "build_api_budget", "build_fixed_window_policy",
           "build_moving_window_policy", "build_request_matcher", "build_unlimited_policy"]
