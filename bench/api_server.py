"""A fast local JSON API for benchmarks: N synthetic records in numbered pages.

    python bench/api_server.py --records 200000 [--port 0] [--page-size 1000] [--shards 1]
                               [--latency-ms 0] [--max-concurrent 0]
                               [--event-windows 30] [--event-pages 10] [--event-page-size 100]
                               [--accounts 1000] [--account-page-size 100] [--order-pages 2] [--orders-per-page 5]

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
``GET`` or ``POST /_stats/reset`` answers the same counters and sets them to
zero (the most in flight to the requests in flight then), so one server can
count several runs apart.

Two shapes of real APIs for bench/latency.py (both answer ``{"data": [...],
"next_cursor": C}``, ``C`` null on the last page, sent back as ``cursor``):

* ``GET /events?start_time=A&end_time=B``: the events whose ``updated_at``
  lies in ``[A, B]`` (ISO 8601 instants, both ends included; either may be
  left out), ``--event-page-size`` a page. The API holds ``--event-windows``
  days from 2024-01-01T00:00:00Z of ``--event-pages`` pages each (by default
  30 x 10 x 100 = 30,000 events), spread evenly over each day, so a client
  asking for daily windows gets exactly ``--event-pages`` pages a window.
* ``GET /accounts`` (``--accounts`` parents, ``--account-page-size`` a page)
  and ``GET /accounts/{id}/orders`` (``--order-pages`` pages of
  ``--orders-per-page`` orders for each account): a parent stream and its
  children.

The cursor holds the rest of the request (where the next page starts and
where the window ends), so a client may or may not send the window again
with it.
"""

from __future__ import annotations

import argparse
import re
import sys
import threading
import time
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
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
        self._cache: dict[tuple[int, int, int, int], bytes] = {}
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

    def reset(self) -> dict[str, int]:
        """The counters as they were; then zero (the most in flight: those in flight now)."""
        with self._lock:
            before = {"requests": self.requests, "refused": self.refused, "most_in_flight": self.most,
                      "max_concurrent": self.limit}
            self.requests = self.refused = 0
            self.most = self.now
            return before


# -- the shapes of real APIs: events in datetime windows, parents and their children --------------------------

EVENTS_PATH = "/events"
ACCOUNTS_PATH = "/accounts"
ORDERS_PATH = re.compile(r"^/accounts/(\d+)/orders$")
EVENTS_EPOCH = datetime(2024, 1, 1)  # the first window's start (naive, read as UTC)
DAY_SECONDS = 86_400
KINDS = ("view", "click", "signup", "purchase", "refund")


def iso(instant: datetime) -> str:
    """A naive UTC datetime as ``2024-01-01T00:00:00Z``."""
    return instant.isoformat() + "Z"


def parse_instant(text: str) -> datetime:
    """An ISO 8601 instant (``Z``, an offset, or none: UTC) as a naive UTC datetime; ValueError if it is not one."""
    value = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    if value.tzinfo is not None:
        value = value.astimezone(timezone.utc).replace(tzinfo=None)
    return value


def _cursor_pair(text: str, total: int) -> tuple[int, int]:
    """A cursor ``FIRST-STOP`` (the next page's first number, the window's end): ValueError if it is not one."""
    first, stop = (int(part) for part in text.split("-"))
    if not 0 <= first <= stop <= total:
        raise ValueError(text)
    return first, stop


def _page_body(records: list[dict[str, Any]], next_cursor: str | None) -> bytes:
    return orjson.dumps({"data": records, "next_cursor": next_cursor})


@dataclass(frozen=True)
class Events:
    """``/events``: ``windows`` days of ``pages`` pages of ``page_size`` events, spread evenly over each day.

    Event ``n`` (0-based) is of day ``n // per_window``; its ``updated_at`` is that day's start plus its
    place in the day, whole seconds, so a daily window with ``cursor_granularity: PT1S`` (a day's start to
    its last second) holds exactly ``per_window`` events."""

    windows: int = 30
    pages: int = 10
    page_size: int = 100

    @property
    def per_window(self) -> int:
        return self.pages * self.page_size

    @property
    def total(self) -> int:
        return self.windows * self.per_window

    @property
    def end(self) -> datetime:
        """The last second of the last window."""
        return EVENTS_EPOCH + timedelta(days=self.windows, seconds=-1)

    def updated_at(self, number: int) -> datetime:
        day, place = divmod(number, self.per_window)
        return EVENTS_EPOCH + timedelta(days=day, seconds=place * DAY_SECONDS // self.per_window)

    def record(self, number: int) -> dict[str, Any]:
        return {"id": number + 1, "updated_at": iso(self.updated_at(number)), "kind": KINDS[number % len(KINDS)],
                "account_id": number % 997 + 1, "amount": round((number * 7919 % 100_000) / 100, 2)}

    def span(self, start: datetime | None, end: datetime | None) -> tuple[int, int]:
        """The events updated in ``[start, end]`` (None: open): the first one's number and the one after the last."""
        numbers = range(self.total)
        first = 0 if start is None else bisect_left(numbers, start, key=self.updated_at)
        stop = self.total if end is None else bisect_right(numbers, end, key=self.updated_at)
        return first, max(first, stop)

    def page(self, first: int, stop: int) -> bytes:
        """The page of the events from ``first`` on (up to ``stop``), and the cursor of the next if any."""
        last = min(first + self.page_size, stop)
        return _page_body([self.record(n) for n in range(first, last)], f"{last}-{stop}" if last < stop else None)

    def answer(self, query: dict[str, list[str]]) -> tuple[int, bytes]:
        try:
            if query.get("cursor"):
                first, stop = _cursor_pair(query["cursor"][0], self.total)
            else:
                start, end = (parse_instant(query[name][0]) if query.get(name) else None
                              for name in ("start_time", "end_time"))
                first, stop = self.span(start, end)
        except (ValueError, TypeError):
            return 400, b'{"error":"start_time and end_time must be ISO 8601 instants, cursor a next_cursor"}'
        return 200, self.page(first, stop)


@dataclass(frozen=True)
class Accounts:
    """``/accounts`` (``count`` parents, ``page_size`` a page) and ``/accounts/{id}/orders`` (``order_pages``
    pages of ``orders_per_page`` orders for each account; the cursor is the next page's number)."""

    count: int = 1000
    page_size: int = 100
    order_pages: int = 2
    orders_per_page: int = 5

    @property
    def parent_pages(self) -> int:
        return max(1, -(-self.count // self.page_size))

    @property
    def orders(self) -> int:
        return self.count * self.order_pages * self.orders_per_page

    def account(self, number: int) -> dict[str, Any]:
        return {"id": number, "name": f"Account {number}", "tier": TIERS[number % len(TIERS)],
                "created_at": iso(EPOCH + timedelta(hours=number))}

    def order(self, account: int, page: int, place: int) -> dict[str, Any]:
        number = ((account - 1) * self.order_pages + page - 1) * self.orders_per_page + place + 1
        return {"id": number, "account_id": account, "status": STATUSES[number % len(STATUSES)],
                "amount": round((number * 7919 % 100_000) / 100, 2), "currency": CURRENCIES[number % len(CURRENCIES)]}

    def answer_accounts(self, query: dict[str, list[str]]) -> tuple[int, bytes]:
        try:
            first = int(query["cursor"][0]) if query.get("cursor") else 0
        except ValueError:
            return 400, b'{"error":"cursor must be a next_cursor"}'
        last = min(first + self.page_size, self.count)
        records = [self.account(n) for n in range(first + 1, last + 1)]
        return 200, _page_body(records, str(last) if last < self.count else None)

    def answer_orders(self, account: int, query: dict[str, list[str]]) -> tuple[int, bytes]:
        if not 1 <= account <= self.count:
            return 404, b'{"error":"no such account"}'
        try:
            page = int(query["cursor"][0]) if query.get("cursor") else 1
        except ValueError:
            return 400, b'{"error":"cursor must be a next_cursor"}'
        records = [self.order(account, page, k) for k in range(self.orders_per_page)] \
            if 1 <= page <= self.order_pages else []
        return 200, _page_body(records, str(page + 1) if page < self.order_pages else None)


@dataclass(frozen=True)
class Shapes:
    """The endpoints beside ``/records``: :class:`Events` and :class:`Accounts`."""

    events: Events = field(default_factory=Events)
    accounts: Accounts = field(default_factory=Accounts)

    def answer(self, path: str, query: dict[str, list[str]]) -> tuple[int, bytes] | None:
        """The status and body for ``path``, or None when it is none of these endpoints."""
        if path == EVENTS_PATH:
            return self.events.answer(query)
        if path == ACCOUNTS_PATH:
            return self.accounts.answer_accounts(query)
        orders = ORDERS_PATH.match(path)
        if orders:
            return self.accounts.answer_orders(int(orders.group(1)), query)
        return None


def handler_for(pages: Pages, default_per_page: int, latency_s: float = 0.0,
                in_flight: InFlight | None = None, shapes: Shapes | None = None) -> type[BaseHTTPRequestHandler]:
    flight = in_flight if in_flight is not None else InFlight()
    endpoints = shapes if shapes is not None else Shapes()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive
        disable_nagle_algorithm = True  # headers and body go out without waiting for an ACK

        def do_GET(self) -> None:
            path = urlsplit(self.path).path
            if path == "/_stats":
                self._send(200, orjson.dumps(flight.stats()))
                return
            if path == "/_stats/reset":
                self._send(200, orjson.dumps(flight.reset()))
                return
            if not flight.enter():
                self._send(429, b'{"error":"too many requests in flight"}', b"Retry-After: 1\r\n")
                return
            try:
                if latency_s:
                    time.sleep(latency_s)
                answer = self._answer()
            finally:
                # Out of flight before the answer goes out: a client that sends its next request as soon as
                # it reads this one's answer must not find the place still taken (a 429 it did not earn).
                flight.leave()
            self._send(*answer)

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                self.rfile.read(length)
            if urlsplit(self.path).path == "/_stats/reset":
                self._send(200, orjson.dumps(flight.reset()))
            else:
                self._send(404, b'{"error":"POST only /_stats/reset"}')

        def _answer(self) -> tuple[int, bytes]:
            """The status and body of the request (``/records``, or one of the shapes)."""
            parts = urlsplit(self.path)
            query = parse_qs(parts.query)
            if parts.path != PATH:
                answer = endpoints.answer(parts.path, query)
                if answer is None:
                    return 404, (b'{"error":"not found; the endpoints are /records, /events, /accounts and '
                                 b'/accounts/{id}/orders"}')
                return answer
            try:
                page = _int_param(query, "page", 1)
                per_page = _int_param(query, "per_page", default_per_page)
                shard = _int_param(query, "shard", 0)
                shards = _int_param(query, "shards", 1)
            except ValueError:
                return 400, b'{"error":"page, per_page, shard and shards must be integers"}'
            if per_page < 1 or per_page > 100_000:
                return 400, b'{"error":"per_page must be between 1 and 100000"}'
            if shards < 1 or shards > 10_000 or not 0 <= shard < shards:
                return 400, b'{"error":"shards must be between 1 and 10000 and shard between 0 and shards - 1"}'
            return 200, pages.body(page, per_page, shard, shards)

        def _send(self, status: int, body: bytes, more_headers: bytes = b"") -> None:
            head = (f"HTTP/1.1 {status} {self.responses[status][0]}\r\n"
                    f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n").encode("ascii") \
                + more_headers + b"\r\n"
            self.wfile.write(head + body)  # one write: no small header packet ahead of the body

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            return

    return Handler


class Server(ThreadingHTTPServer):
    """A thread a connection, and room for many connections waiting to be accepted: with the default backlog
    of 5, a client opening dozens at once would see some dropped and sent again a second later."""

    daemon_threads = True
    request_queue_size = 1024


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
    shapes = parser.add_argument_group("the shapes of bench/latency.py")
    shapes.add_argument("--event-windows", type=int, default=Events.windows, help="days of events (30)")
    shapes.add_argument("--event-pages", type=int, default=Events.pages, help="pages of events a day (10)")
    shapes.add_argument("--event-page-size", type=int, default=Events.page_size, help="events a page (100)")
    shapes.add_argument("--accounts", type=int, default=Accounts.count, help="accounts, the parents (1000)")
    shapes.add_argument("--account-page-size", type=int, default=Accounts.page_size, help="accounts a page (100)")
    shapes.add_argument("--order-pages", type=int, default=Accounts.order_pages, help="pages of orders an account (2)")
    shapes.add_argument("--orders-per-page", type=int, default=Accounts.orders_per_page, help="orders a page (5)")
    args = parser.parse_args(argv)
    pages = Pages(args.records)
    pages.warm(args.page_size, args.shards)
    endpoints = Shapes(Events(args.event_windows, args.event_pages, args.event_page_size),
                       Accounts(args.accounts, args.account_page_size, args.order_pages, args.orders_per_page))
    handler = handler_for(pages, args.page_size, args.latency_ms / 1000, InFlight(args.max_concurrent), endpoints)
    server = Server((args.host, args.port), handler)
    host, port = str(server.server_address[0]), server.server_address[1]
    print(f"ready http://{host}:{port}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main(sys.argv[1:])
