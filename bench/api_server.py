"""A fast local JSON API for benchmarks: N synthetic records in numbered pages.

    python bench/api_server.py --records 200000 [--port 0] [--page-size 1000] [--shards 1]
                               [--latency-ms 0] [--max-concurrent 0]

``GET /records?page=N&per_page=M`` answers ``{"data": [...], "page": N}``
with records ``(N - 1) * M + 1`` to ``N * M`` (pages start at 1; a page past
the end has an empty ``data``). With ``shard=K&shards=S`` (``0 <= K < S``) it
pages through shard K alone: the K-th of S contiguous, disjoint ranges that
together hold every record once (``K * total // S + 1`` to
``(K + 1) * total // S``), so S partitions of a connector can read the API
side by side. Every record is made from its number alone, so two servers
with the same ``--records`` serve the same bytes. Each page's body is encoded
once with orjson and kept, and the pages of the default page size (of each of
``--shards`` shards, when given) are encoded before the server says it is
ready, so the server answers a request with one socket write and is never
what a benchmark measures.

It runs in its own process (so it does not share the client's GIL), speaks
HTTP/1.1 with keep-alive and Content-Length, and prints ``ready <url>`` on
stdout once it listens, where ``<url>`` is the base URL (``http://127.0.0.1:PORT``).

An API as real ones are: ``--latency-ms L`` answers each page L ms after it
was asked for (waiting needs no CPU of the client, only requests in flight),
and ``--max-concurrent N`` refuses a request while N others are in flight
(``429`` with ``Retry-After: 1``), as APIs that cap requests in flight do.
``GET /_stats`` answers what was served: ``requests``, ``refused`` (the 429s)
and ``most_in_flight``, the most requests it held at once; a benchmark reads
it after a run to say how close the client came to what the API allows.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from datetime import datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import orjson

PATH = "/records"
EPOCH = datetime(2024, 1, 1)  # naive, read as UTC: isoformat() + "Z" is the fastest ISO string
STATUSES = ("pending", "paid", "shipped", "refunded", "cancelled")
CURRENCIES = ("EUR", "USD", "GBP", "CHF", "JPY")
TIERS = ("free", "pro", "enterprise")
TAGS = ("priority", "gift", "wholesale", "repeat", "promo", "export", "fragile")


def make_record(number: int) -> dict[str, Any]:
    """Record ``number`` (1-based): the same dict for the same number, always."""
    created = EPOCH + timedelta(seconds=number * 37)
    updated = created + timedelta(minutes=number % 600)
    account = number % 997 + 1
    return {
        "id": number,
        "account_id": account,
        "status": STATUSES[number % len(STATUSES)],
        "amount": round((number * 7919 % 1_000_000) / 100, 2),
        "currency": CURRENCIES[number % len(CURRENCIES)],
        "created_at": created.isoformat() + "Z",
        "updated_at": updated.isoformat() + "Z",
        "customer": {
            "name": f"Customer {account}",
            "email": f"customer{account}@example.com",
            "tier": TIERS[account % len(TIERS)],
            "address": {"city": f"City {account % 50}", "country": ("DE", "FR", "US", "GB")[account % 4]},
        },
        "tags": [TAGS[(number + k) % len(TAGS)] for k in range(number % 3 + 1)],
    }


class Pages:
    """Encoded page bodies, made on first use and kept (thread-safe)."""

    def __init__(self, total: int):
        self.total = total
        self._cache: dict[tuple[int, int], bytes] = {}
        self._lock = threading.Lock()

    def shard_range(self, shard: int, shards: int) -> tuple[int, int]:
        """The first record number of shard ``shard`` of ``shards`` and how many records it holds."""
        start = shard * self.total // shards
        return start + 1, (shard + 1) * self.total // shards - start

    def body(self, page: int, per_page: int, shard: int = 0, shards: int = 1) -> bytes:
        key = (page, per_page, shard, shards)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        offset, size = self.shard_range(shard, shards)
        first = (page - 1) * per_page
        last = min(page * per_page, size)
        records = [make_record(offset + n) for n in range(first, last)] if page >= 1 else []
        body = orjson.dumps({"data": records, "page": page})
        with self._lock:
            return self._cache.setdefault(key, body)

    def warm(self, per_page: int, shards: int = 1) -> None:
        for shard in range(shards):
            size = self.shard_range(shard, shards)[1]
            for page in range(1, size // per_page + 2):
                self.body(page, per_page, shard, shards)


def _int_param(query: dict[str, list[str]], name: str, default: int) -> int:
    values = query.get(name)
    if not values:
        return default
    return int(values[0])


class InFlight:
    """The requests being answered: at most ``limit`` at once (0: no limit), the most seen, the refusals."""

    def __init__(self, limit: int = 0):
        self.limit = limit
        self.now = 0
        self.most = 0
        self.requests = 0
        self.refused = 0
        self._lock = threading.Lock()

    def enter(self) -> bool:
        """Take a place for a request; False (counted as refused) when ``limit`` are in flight already."""
        with self._lock:
            self.requests += 1
            if self.limit and self.now >= self.limit:
                self.refused += 1
                return False
            self.now += 1
            self.most = max(self.most, self.now)
            return True

    def leave(self) -> None:
        with self._lock:
            self.now -= 1

    def stats(self) -> dict[str, int]:
        with self._lock:
            return {"requests": self.requests, "refused": self.refused, "most_in_flight": self.most,
                    "max_concurrent": self.limit}


def handler_for(pages: Pages, default_per_page: int, latency_s: float = 0.0,
                in_flight: InFlight | None = None) -> type[BaseHTTPRequestHandler]:
    flight = in_flight if in_flight is not None else InFlight()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive
        disable_nagle_algorithm = True  # headers and body go out without waiting for an ACK

        def do_GET(self) -> None:
            if urlsplit(self.path).path == "/_stats":
                self._send(200, orjson.dumps(flight.stats()))
                return
            if not flight.enter():
                self._send(429, b'{"error":"too many requests in flight"}', b"Retry-After: 1\r\n")
                return
            try:
                if latency_s:
                    time.sleep(latency_s)
                self._answer()
            finally:
                flight.leave()

        def _answer(self) -> None:
            parts = urlsplit(self.path)
            if parts.path != PATH:
                self._send(404, b'{"error":"not found; the records are at /records"}')
                return
            query = parse_qs(parts.query)
            try:
                page = _int_param(query, "page", 1)
                per_page = _int_param(query, "per_page", default_per_page)
                shard = _int_param(query, "shard", 0)
                shards = _int_param(query, "shards", 1)
            except ValueError:
                self._send(400, b'{"error":"page, per_page, shard and shards must be integers"}')
                return
            if per_page < 1 or per_page > 100_000:
                self._send(400, b'{"error":"per_page must be between 1 and 100000"}')
                return
            if shards < 1 or shards > 10_000 or not 0 <= shard < shards:
                self._send(400, b'{"error":"shards must be between 1 and 10000 and shard between 0 and shards - 1"}')
                return
            self._send(200, pages.body(page, per_page, shard, shards))

        def _send(self, status: int, body: bytes, more_headers: bytes = b"") -> None:
            head = (f"HTTP/1.1 {status} {self.responses[status][0]}\r\n"
                    f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n").encode("ascii") \
                + more_headers + b"\r\n"
            self.wfile.write(head + body)  # one write: no small header packet ahead of the body

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            return

    return Handler


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=200_000, help="how many records the API holds")
    parser.add_argument("--port", type=int, default=0, help="port to listen on (0: any free port)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--page-size", type=int, default=1000, help="per_page when the request has none")
    parser.add_argument("--shards", type=int, default=1,
                        help="encode the pages of this many shards before ready (default 1: the whole range)")
    parser.add_argument("--latency-ms", type=float, default=0.0, help="answer each page this long after it is asked")
    parser.add_argument("--max-concurrent", type=int, default=0,
                        help="refuse (429, Retry-After: 1) a request while this many are in flight (0: no limit)")
    args = parser.parse_args(argv)
    pages = Pages(args.records)
    pages.warm(args.page_size, args.shards)
    handler = handler_for(pages, args.page_size, args.latency_ms / 1000, InFlight(args.max_concurrent))
    server = ThreadingHTTPServer((args.host, args.port), handler)
    server.daemon_threads = True
    host, port = server.server_address[:2]
    print(f"ready http://{host}:{port}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main(sys.argv[1:])
