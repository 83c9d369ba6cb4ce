"""How large a response may be and how long one request may take, whatever the API sends.

:class:`ResponseLimits` is what every :class:`~framework.components.http.client.HttpClient` hands its
transport with a request: ``max_bytes``, the most bytes a body read whole may have *after* its
``Content-Encoding`` is undone (counted as it streams, so a gzip bomb stops at the cap and is never
unpacked further), and ``deadline``, the seconds one attempt may take from connecting to its last
byte (the per-read ``timeout`` alone lets a body that drips one byte at a time run for ever).

A requester's ``max_response_bytes`` and ``request_deadline`` set them for its requests; the
others take run-manifest's ``--max-response-size`` and ``--request-deadline``, which reach every
process of the sync as :data:`MAX_BYTES_ENV` and :data:`DEADLINE_ENV`, else the defaults below.

An oversized body raises :class:`ResponseTooLargeError` (never retried: the same request gets the
same body); a deadline passed is a :class:`~framework.errors.TransportError`, retried like a timeout.
:class:`Reaper` is the one thread per process that ends the connections of attempts past their
deadline (a blocked socket read cannot watch the clock itself).
"""

from __future__ import annotations

import heapq
import itertools
import os
import re
import threading
import time
from collections.abc import Callable, Mapping

from msgspec import Struct

from framework.errors import ConfigError, ReadError

#: The default cap on a body read whole, after decompression: 256 MiB.
DEFAULT_MAX_RESPONSE_BYTES = 256 * 1024 * 1024
#: The default time one attempt may take, connection to last byte: 10 minutes.
DEFAULT_REQUEST_DEADLINE = 600.0

MAX_BYTES_ENV = "FRAMEWORK_MAX_RESPONSE_BYTES"
DEADLINE_ENV = "FRAMEWORK_REQUEST_DEADLINE"

_UNITS = {"": 1, "b": 1, "k": 1000, "kb": 1000, "kib": 1024, "m": 1000 ** 2, "mb": 1000 ** 2, "mib": 1024 ** 2,
          "g": 1000 ** 3, "gb": 1000 ** 3, "gib": 1024 ** 3}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$")


class ResponseLimits(Struct, frozen=True):
    """The cap on a body's decompressed bytes and the deadline of one attempt, in seconds."""

    max_bytes: int = DEFAULT_MAX_RESPONSE_BYTES
    deadline: float = DEFAULT_REQUEST_DEADLINE
    #: where the cap was set, for the message that names it
    max_bytes_setting: str = "the default"
    #: a body past the cap is handed on as a stream (its records read at their field_path by an incremental
    #: JSON parser: :mod:`framework.components.records.json_stream`) instead of failing
    stream_oversized: bool = False


class ResponseTooLargeError(ReadError):
    """A response body went past ``max_bytes`` after decompression; retrying would get the same body."""

    default_failure_type = "config_error"


def parse_size(text: str, what: str) -> int:
    """Bytes of ``"256MiB"``, ``"1GB"``, ``"1000000"``; a ConfigError naming ``what`` when it is not a size."""
    match = _SIZE.match(str(text))
    unit = match.group(2).lower() if match else ""
    if match is None or unit not in _UNITS or float(match.group(1)) <= 0:
        raise ConfigError(f"{what} is {text!r}, which is not a size: give a positive number of bytes, "
                          "optionally with a unit (KiB, MiB, GiB, KB, MB, GB), such as 256MiB")
    return int(float(match.group(1)) * _UNITS[unit])


def parse_seconds(text: str, what: str) -> float:
    """Seconds of ``"600"`` or ``"2.5"``; a ConfigError naming ``what`` when it is not a positive number."""
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not seconds > 0 or seconds == float("inf"):
        raise ConfigError(f"{what} is {text!r}; give a positive number of seconds, such as 600")
    return seconds


def limits_from_environment(environ: Mapping[str, str] | None = None) -> ResponseLimits:
    """The limits run-manifest's flags set for this sync (:data:`MAX_BYTES_ENV`, :data:`DEADLINE_ENV`)."""
    env = os.environ if environ is None else environ
    size, deadline = env.get(MAX_BYTES_ENV), env.get(DEADLINE_ENV)
    return ResponseLimits(
        parse_size(size, f"{MAX_BYTES_ENV} (--max-response-size)") if size else DEFAULT_MAX_RESPONSE_BYTES,
        parse_seconds(deadline, f"{DEADLINE_ENV} (--request-deadline)") if deadline else DEFAULT_REQUEST_DEADLINE,
        "--max-response-size" if size else "the default")


def requester_limits(base: ResponseLimits, max_bytes: int | None, deadline: float | None) -> ResponseLimits:
    """``base`` with a requester's own ``max_response_bytes`` and ``request_deadline`` where it sets them."""
    if max_bytes is None and deadline is None:
        return base
    return ResponseLimits(base.max_bytes if max_bytes is None else max_bytes,
                          base.deadline if deadline is None else deadline,
                          base.max_bytes_setting if max_bytes is None else "the requester's `max_response_bytes`",
                          base.stream_oversized)


def too_large(limits: ResponseLimits) -> ResponseTooLargeError:
    """The error of a body past ``limits.max_bytes``: which setting capped it and how to raise it."""
    return ResponseTooLargeError(
        f"the response body is larger than {limits.max_bytes:,} bytes once decompressed (the cap set by "
        f"{limits.max_bytes_setting}); it was not read further and will not be asked for again. If the API "
        "really sends pages this large, raise the cap with the requester's `max_response_bytes` or "
        "run-manifest's --max-response-size (or ask for smaller pages: a page size in the paginator)")


def deadline_message(limits: ResponseLimits) -> str:
    return (f"the request took longer than its deadline of {limits.deadline:g} s (connection to last byte; "
            "`request_deadline` in the requester or --request-deadline)")


class Reaper:
    """One daemon thread that calls each registered function once its deadline (``time.monotonic``) passes,
    unless it was cancelled first: what ends the connection of an attempt past its deadline."""

    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._heap: list[tuple[float, int, Callable[[], None]]] = []
        self._live: set[int] = set()
        self._ids = itertools.count()
        self._thread: threading.Thread | None = None

    def register(self, deadline: float, action: Callable[[], None]) -> int:
        with self._lock:
            ticket = next(self._ids)
            heapq.heappush(self._heap, (deadline, ticket, action))
            self._live.add(ticket)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="request-deadlines", daemon=True)
                self._thread.start()
            elif self._heap[0][1] == ticket:
                self._lock.notify()
            return ticket

    def cancel(self, ticket: int) -> None:
        with self._lock:
            self._live.discard(ticket)
            heap = self._heap
            if len(heap) > 2 * len(self._live) + 64:  # most entries cancelled: drop them (amortized, per request)
                heap[:] = [entry for entry in heap if entry[1] in self._live]
                heapq.heapify(heap)

    def __len__(self) -> int:
        """The entries still held (due or cancelled but not dropped yet)."""
        with self._lock:
            return len(self._heap)

    def _run(self) -> None:
        while True:
            with self._lock:
                while self._heap and self._heap[0][1] not in self._live:
                    heapq.heappop(self._heap)
                if not self._heap:
                    self._lock.wait(60.0)
                    continue
                due, ticket, action = self._heap[0]
                now = time.monotonic()
                if due > now:
                    self._lock.wait(due - now)
                    continue
                heapq.heappop(self._heap)
                self._live.discard(ticket)
            try:
                action()
            except Exception:  # noqa: BLE001 - a connection that cannot be shut is ended by its own read anyway
                pass


#: The process's reaper.
REAPER = Reaper()

__all__ = ["DEADLINE_ENV", "DEFAULT_MAX_RESPONSE_BYTES", "DEFAULT_REQUEST_DEADLINE", "MAX_BYTES_ENV", "REAPER",
           "Reaper", "ResponseLimits", "ResponseTooLargeError", "deadline_message", "limits_from_environment",
           "parse_seconds", "parse_size", "requester_limits", "too_large"]
