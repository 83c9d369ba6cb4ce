"""The sync's cache of responses: a parent stream's pages requested once, however many streams read them.

airbyte-cdk turns ``use_cache`` on for every stream used as a parent (unless the manifest says
``use_cache: false``), so a parent selected as a stream of its own and read again for each of its
substreams is requested once per sync. :class:`ResponseCache` does the same for the requesters that
:func:`caches_requests` picks: a successful (200) answer to a GET is kept, keyed by the request as its
requester made it (method, URL, query, headers and body, before the authenticator adds its credentials,
so the key holds no secret and a renewed token still finds it), and handed out again as a fresh
response, its body decoded anew, since records are changed in place downstream.

One request is sent once even when several threads ask for it at the same time (a parent read for
two substreams side by side): the first sends it, the others wait for its answer. A request that
fails, or is answered with anything but 200, is not kept; the next caller sends it itself.

Memory is bounded: at most :data:`CACHE_BYTES` of bodies are kept, the least recently used dropped
first, and a body larger than :data:`LARGEST_BODY` is never kept. A dropped page is requested again
when it is read again: the cache saves requests, it never changes what is read. Streamed responses
(CSV, JSON lines, gzip read as they arrive) and oversized pages are not kept either.

The cache lives as long as the connector of one sync. On Spark the parents of substreams are read on
the driver, where the substreams' plans share it; a parent selected as a stream of its own is read
again by the Spark task that reads it (docs/airbyte-differences.md), and a task's connector keeps no
responses at all (``keep_responses=False``: it never reads a page twice).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Collection
from typing import Any

import orjson
from requests.structures import CaseInsensitiveDict

from framework.components.http.request import RequestParts
from framework.components.http.transport import HttpResponse

__all__ = ["CACHE_BYTES", "LARGEST_BODY", "ResponseCache", "caches_requests", "request_key"]

#: The most bytes of response bodies one sync's cache keeps.
CACHE_BYTES = 64 * 1024 * 1024
#: A body larger than this is never kept.
LARGEST_BODY = 8 * 1024 * 1024

Key = tuple[Any, ...]


def caches_requests(stream: str | None, parents: Collection[str], use_cache: bool, said: bool,
                    path: tuple = ("retriever", "requester")) -> bool:
    """Whether a requester of ``stream`` sends through the sync's cache: ``use_cache: true``, or the requester
    of a SimpleRetriever (``path`` ends in ``retriever.requester``) of a stream used as a parent (``parents``)
    that does not say ``use_cache: false`` (``said``: the manifest set it). An AsyncRetriever's requesters are
    never cached unless they say so: a job's status is asked again with the same request until it changes."""
    if use_cache:
        return True
    return stream is not None and stream in parents and not said and tuple(path[-2:]) == ("retriever", "requester")


def request_key(parts: RequestParts) -> Key | None:
    """What tells two requests apart for the cache; None for a request never cached (not a GET, or streamed)."""
    if parts.method.upper() != "GET" or parts.stream:
        return None
    request = parts.to_request()
    headers = tuple(sorted((name.lower(), value) for name, value in request.headers.items()))
    body = orjson.dumps(request.json, option=orjson.OPT_SORT_KEYS) if request.json is not None else None
    data = tuple(sorted((str(k), str(v)) for k, v in request.data.items())) if isinstance(request.data, dict) \
        else request.data
    return request.url, tuple(sorted(request.params)), headers, body, data


class _Kept:
    __slots__ = ("content", "headers", "request", "status")

    def __init__(self, response: HttpResponse, content: bytes):
        self.status = response.status
        self.headers = dict(response.headers)
        self.content = content
        self.request = response.request

    def response(self) -> HttpResponse:
        return HttpResponse(self.status, CaseInsensitiveDict(self.headers), self.content, self.request)


class ResponseCache:
    """Responses of one sync, bounded, shared by threads; see the module docs."""

    def __init__(self, max_bytes: int = CACHE_BYTES, largest: int = LARGEST_BODY):
        self.max_bytes = max_bytes
        self.largest = min(largest, max_bytes)
        self._lock = threading.Lock()
        self._kept: OrderedDict[Key, _Kept] = OrderedDict()
        self._sending: dict[Key, threading.Event] = {}
        self.bytes = 0
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._kept)

    def send(self, parts: RequestParts, send: Callable[[RequestParts], HttpResponse | None]) -> HttpResponse | None:
        """The answer to ``parts``: kept from an earlier request, or ``send(parts)``'s (kept when it is a 200)."""
        key = request_key(parts)
        if key is None:
            return send(parts)
        while True:
            with self._lock:
                kept = self._kept.get(key)
                if kept is not None:
                    self._kept.move_to_end(key)
                    self.hits += 1
                    return kept.response()
                waiting = self._sending.get(key)
                if waiting is None:
                    done = self._sending[key] = threading.Event()
                    self.misses += 1
                    break
            waiting.wait()  # another thread sends it: take its answer, or send it when it kept none
        try:
            response = send(parts)
            if response is not None:
                self._keep(key, response)
            return response
        finally:
            with self._lock:
                del self._sending[key]
            done.set()

    def _keep(self, key: Key, response: HttpResponse) -> None:
        if response.status != 200 or response.oversized:
            return
        content = response.content
        size = len(content)
        if size > self.largest:
            return
        with self._lock:
            old = self._kept.pop(key, None)
            if old is not None:
                self.bytes -= len(old.content)
            self._kept[key] = _Kept(response, content)
            self.bytes += size
            while self.bytes > self.max_bytes and self._kept:
                _, dropped = self._kept.popitem(last=False)
                self.bytes -= len(dropped.content)
