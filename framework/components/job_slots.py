"""The sync-wide slots of asynchronous jobs, and the engine's hooks into AsyncRetriever's jobs.

Kept apart from :mod:`framework.components.async_jobs` so that the engine (connector, scheduler, Spark
worker) can call these for every stream without importing the asynchronous jobs' runtime: that loads only
when a manifest has an AsyncRetriever (its builder is on demand, :mod:`framework.components.context`).
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from framework.errors import ConfigError

if TYPE_CHECKING:  # pragma: no cover
    from framework.components.context import BuildContext
    from framework.components.slices import StreamSlice

__all__ = ["LEASE_SECONDS", "SERVICE", "JobSlots", "offer_job_slots", "prefetch", "release"]

#: Seconds a slot stays taken without being renewed (its task died): then it is free again.
LEASE_SECONDS = 300.0
SERVICE = "async_job_slots"
_RUNTIME = "framework.components.async_jobs"


class JobSlots:
    """The sync-wide slots of running jobs: a service (thread-safe; payloads and answers are tuples).

    ``("acquire", holder)`` answers True when ``holder`` has (or now takes) a
    slot; ``("release", holder)`` gives it back; ``("renew", holders)``
    extends their leases; ``("peak",)`` answers the most slots ever taken at
    once. Leases older than ``lease`` seconds are dropped first.
    """

    def __init__(self, limit: int, lease: float = LEASE_SECONDS, now: Callable[[], float] = time.monotonic):
        self.limit = max(1, limit)
        self.lease = lease
        self._now = now
        self._held: dict[str, float] = {}
        self._lock = threading.Lock()
        self.peak = 0

    def __call__(self, payload: tuple) -> Any:
        op = payload[0]
        with self._lock:
            now = self._now()
            for holder, at in list(self._held.items()):
                if now - at > self.lease:
                    del self._held[holder]
            if op == "acquire":
                holder = payload[1]
                if holder not in self._held and len(self._held) >= self.limit:
                    return False
                self._held[holder] = now
                self.peak = max(self.peak, len(self._held))
                return True
            if op == "release":
                self._held.pop(payload[1], None)
                return None
            if op == "renew":
                for holder in payload[1]:
                    if holder in self._held:
                        self._held[holder] = now
                return None
            if op == "peak":
                return self.peak
        raise ValueError(f"unknown job slot operation {op!r}")


def _has_async(value: Any) -> bool:
    if isinstance(value, Mapping):
        return value.get("type") == "AsyncRetriever" or any(_has_async(item) for item in value.values())
    if isinstance(value, (list, tuple)):
        return any(_has_async(item) for item in value)
    return False


def offer_job_slots(ctx: BuildContext, source: Any, manifest: Any) -> None:
    """Offer the sync's :class:`JobSlots` (``max_concurrent_async_job_count`` rendered; 1 when left out, as in
    airbyte-cdk) before any stream is built, when the manifest has an AsyncRetriever: every AsyncRetriever of
    the connector shares it, and the Spark driver serves it to the tasks."""
    if not _has_async(manifest):
        return
    limit = source.max_concurrent_async_job_count
    value = 1 if limit is None else ctx.render(limit, source.parameters, "integer")
    try:
        count = int(value)
    except (TypeError, ValueError):
        raise ConfigError(f"max_concurrent_async_job_count must be a whole number, got {value!r}") from None
    ctx.service(SERVICE, JobSlots(count))


def _job_retriever(stream: Any) -> Any:
    """The stream's retriever when it reads through asynchronous jobs, else None. Without the runtime
    imported no such retriever exists (it is imported to build one), so this never imports it."""
    runtime = sys.modules.get(_RUNTIME)
    retriever = getattr(stream, "retriever", None)
    if runtime is None or not isinstance(retriever, runtime.AsyncJobRetriever):
        return None
    return retriever


def prefetch(stream: Any, slices: Iterable[StreamSlice], config: Mapping[str, Any]) -> None:
    """Submit the jobs of ``slices`` together when ``stream`` reads through asynchronous jobs (else nothing)."""
    retriever = _job_retriever(stream)
    if retriever is not None:
        retriever.submit(slices, config)


def release(stream: Any, slices: Iterable[StreamSlice]) -> None:
    """Forget the jobs of ``slices`` left unread (abort them, free their slots)."""
    retriever = _job_retriever(stream)
    if retriever is not None:
        retriever.release(slices)
