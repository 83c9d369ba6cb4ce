"""A circuit breaker per host: an API that refuses every connection fails the sync in bounded time.

Airbyte's default error handler retries a failed connection 5 times with
10 s, 20 s, 40 s, 80 s and 160 s waits; a stream of nine partitions read one
after another then takes a quarter of an hour to fail when the API is down,
saying nothing new. Here every request of a process to one host shares one
:class:`HostCircuits` record: once the host has refused every connection
(connection refused, unknown host, connect timeout) for ``give_up_after``
seconds with no answer in between, the circuit opens and every request to
that host (the retry in progress and every other partition's) fails at once
with one message. Any answer, even an error status, closes it again.

The clock is injected (``now``, monotonic seconds), so the rule is tested
without waiting; Spark tasks each keep their own record (each gives up within
the same bound).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from urllib.parse import urlsplit

from msgspec import Struct

from framework.errors import TransportError

#: Seconds of connection failures to one host, with no answer in between, before requests to it stop.
GIVE_UP_AFTER = 120.0


class ConnectError(TransportError):
    """The connection could not be made at all (refused, unknown host, connect timeout)."""


class CircuitOpenError(TransportError):
    """Requests to a host stopped: it refused every connection for too long."""

    default_failure_type = "system_error"


class _Host(Struct):
    first_failure: float
    failures: int = 0
    last_reason: str = ""
    open: bool = False


class HostCircuits:
    """Connection failures per host, shared by every request of a process (thread-safe)."""

    def __init__(self, now: Callable[[], float] = time.monotonic, give_up_after: float = GIVE_UP_AFTER) -> None:
        self._now = now
        self.give_up_after = give_up_after
        self._hosts: dict[str, _Host] = {}
        self._lock = threading.Lock()

    @staticmethod
    def host_of(url: str) -> str:
        parts = urlsplit(url)
        return parts.netloc or url

    def check(self, url: str) -> None:
        """Raise :class:`CircuitOpenError` when requests to ``url``'s host stopped."""
        host = self.host_of(url)
        with self._lock:
            found = self._hosts.get(host)
            if found is None or not found.open:
                return
            raise self._open_error(host, found)

    def failed(self, url: str, error: TransportError) -> None:
        """A connection to ``url``'s host failed; raise :class:`CircuitOpenError` when it is time to stop."""
        host = self.host_of(url)
        now = self._now()
        with self._lock:
            found = self._hosts.get(host)
            if found is None:
                found = self._hosts[host] = _Host(first_failure=now)
            found.failures += 1
            found.last_reason = str(error)
            if now - found.first_failure >= self.give_up_after:
                found.open = True
            if found.open:
                raise self._open_error(host, found)

    def answered(self, url: str) -> None:
        """``url``'s host answered (any status): its failures are forgotten."""
        host = self.host_of(url)
        if host in self._hosts:
            with self._lock:
                self._hosts.pop(host, None)

    def _open_error(self, host: str, found: _Host) -> CircuitOpenError:
        return CircuitOpenError(
            f"{host} refused every connection for {self._now() - found.first_failure:.0f} s ({found.failures} "
            f"attempts across the sync's partitions; last: {found.last_reason}): giving up on it; check that the "
            f"API is up and reachable from here, and the `url_base` in the manifest and config")


__all__ = ["GIVE_UP_AFTER", "CircuitOpenError", "ConnectError", "HostCircuits"]
