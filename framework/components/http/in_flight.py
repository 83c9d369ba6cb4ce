"""Requests in flight: one limit for the whole sync, paced by the API's 429s.

Against a real API the time of a sync is waiting, and what decides it is how many requests are in
flight at once, up to what the API allows. Every attempt the HTTP client sends holds a *permit* from
the moment it is sent until its response is in (:meth:`InFlight.acquire`, :meth:`InFlight.release`);
a backoff's sleep holds none.

**One limit, many processes.** The permits belong to a :class:`Ledger`, a sync-wide service
(:mod:`framework.coordination`): on the Spark driver for a Spark sync (the driver's own reads and every
task's go through it), in the process itself in protocol mode. Each process keeps the permits it was
granted in an :class:`InFlight` pool and asks the ledger only when its threads want more than it holds,
so a task whose threads keep their permits busy asks nothing per request. A pool gives permits back when
the ledger asks for them (its level went down, or the pool holds more than its share while others wait),
when the task ends (:meth:`InFlight.settle`), and when no thread took one for
:data:`CHECK_IN` seconds (a watch thread, while the pool holds permits: the driver done with its parent
pages must not sit on them); it tells the ledger how its requests went at least every :data:`CHECK_IN`
seconds while it sends. While others wait, the ledger grants a holder at most an even share of the
level, so two tasks on two executors split it rather than one starving the other; the sum of the permits
granted never exceeds the level.

**Adapting to 429.** A response with status 429 (the API says too many) lowers the level at once
(multiplied by :data:`DECREASE`, never below 1); every answered request then raises it by
``1 / level`` while someone waits for a permit (one permit more per round of requests), up to the
limit's ``ceiling``: additive increase, multiplicative decrease, as TCP paces a connection. 429s
that answer requests sent before a decrease do not lower it again (the same burst). Once back at the
level the last 429 came at (the API's cap, most likely), the level climbs :data:`PROBE` times slower:
it tries one more request in flight now and then rather than every few rounds. ``--concurrency
auto`` starts at :data:`AUTO_START` and climbs to :data:`AUTO_CEILING` until the API pushes back;
a fixed limit (the manifest's ``concurrency_level``, ``--concurrency N``) starts at its value and
never goes above it. Without either, the limit is airbyte-cdk's default
(:data:`DEFAULT_LEVEL`): never harder on the API than Airbyte is.

Where a task cannot reach the driver (Spark Connect: :func:`framework.spark.connect.services_bind`),
each task has a ledger of its own, given an even share of the limit (:meth:`Limit.share`).

Everything here is the standard library's threading: the whole stack above the transport (auth,
pagination, custom components) is synchronous, and waiting on a socket releases the GIL.
"""

from __future__ import annotations

import math
import os
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from msgspec import Struct

from framework import coordination

#: The name of the sync-wide service that holds the permits.
SERVICE = "in_flight"

#: airbyte-cdk's requests in flight when a manifest has no ``concurrency_level`` (two worker threads).
DEFAULT_LEVEL = 2
#: ``--concurrency auto``: where the level starts and the most it climbs to.
AUTO_START = 2
AUTO_CEILING = 64
#: A 429 multiplies the level by this.
DECREASE = 0.5
#: Near the level a 429 came at, the level climbs this many times slower: it probes the API's cap now and then
#: instead of running into it every few rounds.
PROBE = 8
#: A pool that holds permits tells the ledger how it goes at least this often (seconds).
CHECK_IN = 0.25
#: A pool refused a permit asks again after this long, doubling up to ``ASK_AGAIN_MAX`` (seconds).
ASK_AGAIN = 0.005
ASK_AGAIN_MAX = 0.05
#: Statuses that say "too many requests".
TOO_MANY = frozenset({429})


class Limit(Struct, frozen=True):
    """How many requests the sync keeps in flight: ``level`` at the start, never more than ``ceiling``.

    ``said`` is who set it: ``manifest`` (its ``concurrency_level``), ``flag`` (``--concurrency N``),
    ``auto`` (``--concurrency auto``) or ``default`` (nobody: airbyte-cdk's default)."""

    level: int
    ceiling: int
    said: str

    @classmethod
    def fixed(cls, level: int, said: str) -> Limit:
        level = max(1, int(level))
        return cls(level, level, said)

    @classmethod
    def auto(cls) -> Limit:
        return cls(AUTO_START, AUTO_CEILING, "auto")

    @classmethod
    def default(cls) -> Limit:
        return cls(DEFAULT_LEVEL, DEFAULT_LEVEL, "default")

    def share(self, parts: int) -> Limit:
        """An even share of this limit for one of ``parts`` processes that cannot share a ledger (at least 1)."""
        parts = max(1, parts)
        return Limit(max(1, self.level // parts), max(1, self.ceiling // parts), self.said)

    def describe(self) -> str:
        if self.said == "auto":
            return f"auto (from {self.level}, at most {self.ceiling})"
        if self.said == "default":
            return (f"{self.level} (the manifest sets no concurrency_level, so airbyte-cdk's default; set it to "
                    "what the API allows in flight, or pass --concurrency N or auto)")
        return f"{self.level} ({'the manifest' if self.said == 'manifest' else '--concurrency'})"


class Ask(Struct, frozen=True):
    """A pool's word to the ledger: it waits for ``wanted`` more permits, gives ``returned`` back, and its
    requests answered since its last word (``answered``, of which ``refused`` were answered 429)."""

    holder: str
    wanted: int = 0
    returned: int = 0
    answered: int = 0
    refused: int = 0


class Answer(Struct, frozen=True):
    """The ledger's answer: ``granted`` permits, ``give_back`` to return as they fall idle, and whether
    others wait (``contended``)."""

    granted: int
    give_back: int = 0
    contended: bool = False


class Pace(Struct, frozen=True):
    """What the ledger saw of a sync: its limit, the requests answered and refused (429), the most permits
    out at once (the most requests in flight), and the level now, at its lowest and at its highest."""

    limit: Limit
    requests: int = 0
    refused: int = 0
    most_in_flight: int = 0
    level: int = 0
    lowest: int = 0
    highest: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {"concurrency": self.limit.said, "concurrency_level": self.limit.level,
                "concurrency_ceiling": self.limit.ceiling, "requests": self.requests, "rate_limited": self.refused,
                "most_in_flight": self.most_in_flight, "level": self.level, "lowest_level": self.lowest,
                "highest_level": self.highest}

    def describe(self) -> str:
        """One line for a person: the limit, the most in flight, and what 429s did to the level."""
        text = f"requests in flight: at most {self.most_in_flight}, limit {self.limit.describe()}"
        if self.refused:
            text += (f"; the API answered {self.refused} of {self.requests} requests 429 (too many), so the "
                     f"level went down to {self.lowest} and ended at {self.level}")
        elif self.limit.said == "auto":
            text += f"; the level climbed to {self.highest} without a 429"
        return text


class Ledger:
    """The sync's permits (a sync-wide service): see the module docstring. Thread-safe."""

    def __init__(self, limit: Limit, now: Callable[[], float] = time.monotonic):
        self._lock = threading.Lock()
        self._now = now
        self.limit = limit
        self._level = float(limit.level)
        self._held: dict[str, int] = {}
        self._waiting: set[str] = set()
        self._callers: dict[str, Any] = {}  # holder -> the coordinator connection it asked through
        self._since_decrease = 0
        self._decreased_at = -math.inf
        self._refused_at = math.inf  # the permits out when the API last answered 429
        self._requests = self._refused = self._most = 0
        self._lowest: int | None = None  # the lowest level a 429 brought it to (None: no 429 yet)
        self._highest = limit.level

    def set_limit(self, limit: Limit) -> None:
        """Start over with ``limit`` (the front end's choice, before any request)."""
        with self._lock:
            self.limit = limit
            self._level = float(limit.level)
            self._lowest, self._highest = None, limit.level

    @property
    def level(self) -> int:
        return max(1, int(self._level))

    def __call__(self, ask: Ask) -> Answer:
        caller = coordination.caller()
        with self._lock:
            if caller is not None:
                self._callers[ask.holder] = caller
            held = self._held.get(ask.holder, 0) - min(ask.returned, self._held.get(ask.holder, 0))
            self._pace(ask)
            level = self.level
            free = level - (sum(self._held.values()) - self._held.get(ask.holder, 0)) - held
            if ask.wanted > 0:
                self._waiting.add(ask.holder)
            share = self._share(level)
            contended = bool(self._waiting - {ask.holder})
            room = min(ask.wanted, free, share - held if contended else ask.wanted)
            granted = max(0, room)
            held += granted
            if held:
                self._held[ask.holder] = held
            else:
                self._held.pop(ask.holder, None)
                self._callers.pop(ask.holder, None)
            if granted >= ask.wanted:
                self._waiting.discard(ask.holder)
            self._most = max(self._most, sum(self._held.values()))
            over = sum(self._held.values()) > level
            give_back = max(0, held - share) if (contended or over) else 0
            return Answer(granted, give_back, bool(self._waiting - {ask.holder}))

    def _share(self, level: int) -> int:
        active = set(self._held) | self._waiting
        return max(1, math.ceil(level / max(1, len(active))))

    def _pace(self, ask: Ask) -> None:
        """AIMD: a 429 (not of the same burst) lowers the level; answers raise it while someone waits."""
        self._requests += ask.answered
        if ask.refused:
            self._refused += ask.refused
            now = self._now()
            if self._since_decrease >= self.level or now - self._decreased_at >= 1.0:
                out = sum(self._held.values())
                self._refused_at = max(1, min(self.level, out) if out else self.level)
                self._level = max(1.0, self._level * DECREASE)
                self._since_decrease = 0
                self._decreased_at = now
                self._lowest = self.level if self._lowest is None else min(self._lowest, self.level)
        ok = ask.answered - ask.refused
        self._since_decrease += ok
        if ok > 0 and self._waiting and self._level < self.limit.ceiling:
            step = ok / max(1.0, self._level)
            if self._level + 1 >= self._refused_at:  # at the cap the API showed: probe past it rarely
                step /= PROBE
            self._level = min(float(self.limit.ceiling), self._level + step)
            self._highest = max(self._highest, self.level)

    def disconnected(self, caller: Any) -> None:
        """The coordinator connection ``caller`` closed (its task's process ended): its permits come back."""
        with self._lock:
            for holder in [h for h, c in self._callers.items() if c == caller]:
                self._held.pop(holder, None)
                self._waiting.discard(holder)
                del self._callers[holder]

    def pace(self) -> Pace:
        with self._lock:
            return Pace(self.limit, self._requests, self._refused, self._most, self.level,
                        self.level if self._lowest is None else self._lowest, self._highest)


class InFlight:
    """A process's permits, spent by its threads; see the module docstring. Thread-safe."""

    def __init__(self, call: Callable[[Ask], Answer], now: Callable[[], float] = time.monotonic):
        self._call = call
        self._now = now
        self.holder = f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self._cond = threading.Condition()
        self._held = self._busy = self._waiting = 0
        self._asking = False
        self._answered = self._refused = 0
        self._give_back = 0  # permits the ledger asked back, returned as they fall idle
        self._returning = 0  # permits taken off ``_held`` that the next word to the ledger hands back
        self._told_at = now()
        self._sent_at = now()  # when a permit was last taken
        self._watching = False  # the idle watch runs (a thread, while this pool holds permits)

    def acquire(self) -> None:
        """Wait for a permit (the ledger is asked when this process holds none free)."""
        pause = ASK_AGAIN
        with self._cond:
            self._waiting += 1
        try:
            while True:
                with self._cond:
                    while True:
                        if self._busy < self._held:
                            self._busy += 1
                            self._sent_at = self._now()
                            return
                        if not self._asking:
                            break
                        self._cond.wait(0.05)
                    self._asking = True
                    ask = self._ask(wanted=self._waiting - (self._held - self._busy))
                try:
                    answer = self._call(ask)
                except BaseException:
                    with self._cond:
                        self._asking = False
                        self._cond.notify_all()
                    raise
                with self._cond:
                    self._asking = False
                    self._take(answer)
                    self._cond.notify_all()
                    if answer.granted:
                        pause = ASK_AGAIN
                        continue
                    # refused: ask again a little later, or sooner when one of this process's permits frees
                    self._cond.wait(pause)
                pause = min(ASK_AGAIN_MAX, pause * 2)
        finally:
            with self._cond:
                self._waiting -= 1

    def release(self, status: int | None) -> None:
        """The request's answer is in (``status`` None: none came): its permit is free again."""
        with self._cond:
            self._busy -= 1
            self._answered += 1
            refused = status in TOO_MANY
            if refused:
                self._refused += 1
            idle = self._held - self._busy
            back = 0
            if self._give_back and idle:
                back = min(self._give_back, idle)
                self._give_back -= back
            if self._waiting:
                self._cond.notify()
            tell = refused or back > 0 or self._now() - self._told_at >= CHECK_IN
            self._held -= back
            self._returning += back
            if not tell or self._asking:  # an ask in progress carries them next
                return
            ask = self._ask(wanted=self._waiting - (self._held - self._busy))
        self._tell(ask)

    def settle(self) -> None:
        """Give every permit back (a task's end: the next task may run in another process)."""
        with self._cond:
            if self._held == 0 and not self._answered:
                return
            self._returning += self._held - self._busy
            self._held = self._busy
            self._give_back = 0
            ask = self._ask(wanted=0)
        self._tell(ask)

    def _ask(self, wanted: int) -> Ask:
        """The next word to the ledger, carrying what happened since the last (under the lock)."""
        ask = Ask(self.holder, max(0, wanted), self._returning, self._answered, self._refused)
        self._answered = self._refused = self._returning = 0
        self._told_at = self._now()
        return ask

    def _take(self, answer: Answer) -> None:
        self._held += answer.granted
        self._give_back = answer.give_back
        if self._held and not self._watching:
            self._watching = True
            threading.Thread(target=self._watch_idle, name="in-flight-idle", daemon=True).start()

    def _watch_idle(self) -> None:
        """While this pool holds permits: every :data:`CHECK_IN` seconds, give back those no thread took since
        (a driver done reading parents, a task's reader between units), so no permit sits idle for long."""
        while True:
            time.sleep(CHECK_IN)
            with self._cond:
                if self._held == 0:
                    self._watching = False
                    return
                idle = self._held - self._busy - self._waiting
                if idle <= 0 or self._asking or self._now() - self._sent_at < CHECK_IN:
                    continue
                self._held -= idle
                self._returning += idle
                ask = self._ask(wanted=0)
            self._tell(ask)

    def _tell(self, ask: Ask) -> None:
        try:
            answer = self._call(ask)
        except coordination.CoordinatorError:  # the driver is gone: its ledger with it
            return
        with self._cond:
            self._take(answer)
            if answer.granted:
                self._cond.notify_all()


def build_in_flight(services: Callable[[str, Any], Callable[[Any], Any]],
                    limit: Limit) -> tuple[InFlight, Ledger]:
    """A connector's pool and its ledger, the ledger offered through ``services`` (``BuildContext.service``).

    The waits here are for other threads' permits, in real time: the injected clock and sleep are the API's."""
    ledger = Ledger(limit)
    call = services(SERVICE, ledger)
    return InFlight(call), ledger


__all__ = ["AUTO_CEILING", "AUTO_START", "Answer", "Ask", "DECREASE", "DEFAULT_LEVEL", "InFlight", "Ledger", "Limit",
           "Pace", "SERVICE", "build_in_flight"]
