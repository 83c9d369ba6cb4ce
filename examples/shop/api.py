"""The example shop API: a small local HTTP API with realistic data, for the demo and the tests.

Run it with ``python examples/shop/api.py --port 8765``; it prints
``listening on http://127.0.0.1:8765`` once it accepts connections and a
summary of what it served when stopped (Ctrl-C or SIGTERM).

The data is made up but deterministic (a seeded random generator): about 50
accounts, their orders with nested line items, and a feed of events, spread
over the 60 days before ``--now`` (default: the real now). The newest item
is a few minutes older than ``--now``. Counts and contents depend only on
``--seed``; ``--now`` only moves the dates.

Endpoints (JSON; every data endpoint needs ``Authorization: Bearer <key>``,
``401`` otherwise):

``GET /accounts`` and ``GET /accounts/{id}/orders``
    ``{"data": [...], "next_cursor": "..." | null}``, oldest change first
    (by ``updated_at``, then ``id``). ``limit`` (1..100, default 50) and
    ``cursor`` (the ``next_cursor`` of the previous page) page through them;
    ``updated_since`` and ``updated_until`` (ISO 8601, both inclusive) filter
    on ``updated_at``. An account's ``updated_at`` moves whenever one of its
    orders changes, so reading the accounts changed since a time finds every
    account with new or changed orders. Orders do not repeat their account id.
``GET /events``
    ``{"data": [...]}``, oldest first; ``page`` (from 1) and ``per_page``
    (1..200, default 100); ``since`` and ``until`` (epoch seconds, both
    inclusive) filter on ``occurred_at``. A short page is the last one.
    Some events are ``heartbeat``s of the API itself, which clients skip.
``POST /_admin/advance``
    Adds new data dated between the newest item and now: a few new accounts,
    new orders (on new and existing accounts), status changes of existing
    orders, and their events. Answers what changed. No key needed.
``GET /_admin/stats``
    Requests served, by status; ``throttled`` counts the ``429`` answers.

Rate limit: at most ``--rate-limit`` requests per second per API key (a
token bucket that allows bursts of as many); a request over the limit gets
``429`` with ``Retry-After`` (whole seconds). ``--rate-limit 0`` turns it off.

Served over HTTP/1.1 with keep-alive (every answer has a ``Content-Length``),
one thread per connection, bodies encoded with orjson.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import math
import random
import signal
import socket
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import IO, Any
from urllib.parse import parse_qs, urlsplit

import orjson

__all__ = [
    "API_KEY",
    "HISTORY",
    "Advance",
    "RateLimiter",
    "Shop",
    "ShopApi",
    "ShopServer",
    "generate",
    "main",
]

#: The key the example config uses; any other is refused with 401.
API_KEY = "demo-key-not-secret"
#: How far back the generated data goes from ``now``.
HISTORY = timedelta(days=60)
#: The newest generated item is this much older than ``now``.
QUIET_PERIOD = timedelta(minutes=5)
ISO = "%Y-%m-%dT%H:%M:%SZ"
MAX_LIMIT = 100
#: Requests per second per API key (and the burst allowed) of ``api.py`` run from the command line.
DEFAULT_RATE_LIMIT = 50.0
MAX_PER_PAGE = 200

_COUNTRIES = (("US", "USD", 9), ("DE", "EUR", 5), ("GB", "GBP", 4), ("FR", "EUR", 3), ("NL", "EUR", 2),
              ("CA", "CAD", 2), ("SE", "SEK", 1), ("JP", "JPY", 1), (None, "USD", 2))
_RATES = {"USD": 1.0, "EUR": 0.92, "GBP": 0.79, "CAD": 1.36, "SEK": 10.4, "JPY": 151.0}
_CATALOG = (("MUG-BLUE", 12.5), ("MUG-RED", 12.5), ("TEE-S-BLK", 19.0), ("TEE-M-BLK", 19.0),
            ("TEE-L-WHT", 19.0), ("HOODIE-M-GRY", 49.0), ("CAP-NVY", 15.0), ("STICKER-PACK", 4.5),
            ("NOTEBOOK-A5", 8.9), ("BOTTLE-750", 22.0), ("TOTE-NAT", 14.0), ("SOCKS-PAIR", 9.5),
            ("POSTER-A2", 18.0), ("PIN-ENAMEL", 6.0))
_NAME_FIRST = ("Acme", "Blue Harbor", "Northwind", "Copper Leaf", "Quiet Fox", "Juniper", "Old Mill",
               "Silver Birch", "Brightside", "Granite", "Maple Row", "Sunny Hill", "Tidewater", "Red Kite")
_NAME_SECOND = ("Coffee", "Outfitters", "Books", "Bikes", "Studio", "Bakery", "Garden Supply", "Records",
                "Crafts", "Tea House")
_HEARTBEAT_EVERY = timedelta(hours=3)


def _text(dt: datetime) -> str:
    return dt.strftime(ISO)


def _second(dt: datetime) -> datetime:
    return dt.astimezone(timezone.utc).replace(microsecond=0)


# -- the data ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Advance:
    """How much :meth:`Shop.advance` adds each time."""

    new_accounts: int = 3
    new_orders: int = 30
    changed_orders: int = 12
    logins: int = 20


@dataclass
class Shop:
    """The API's data. Lists are never changed in place: :meth:`advance` swaps in new ones,
    so a request reads a consistent snapshot without a lock.

    Accounts and each account's orders are kept sorted by ``(updated_at, id)``,
    events by ``(occurred_at, id)``; dates are ``YYYY-MM-DDTHH:MM:SSZ`` text,
    which sorts like the instants.
    """

    seed: int
    accounts: list[dict]
    orders: dict[int, list[dict]]
    events: list[dict]
    mark: datetime  # the newest instant in the data
    generation: int = 0
    next_order_id: int = 1
    next_event_id: int = 1
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def counts(self) -> dict[str, int]:
        return {"accounts": len(self.accounts), "orders": sum(len(v) for v in self.orders.values()),
                "events": len(self.events),
                "heartbeats": sum(1 for e in self.events if e["kind"] == "heartbeat")}

    def advance(self, now: datetime, amounts: Advance = Advance()) -> dict[str, Any]:
        """Add data dated after the newest item, up to ``now`` (at least one second later).

        New orders go to new and existing accounts; some existing orders move
        to their next status. Every account they touch gets a new
        ``updated_at``. Returns what changed: ``{"accounts": {"new": n,
        "changed": n}, "orders": {...}, "events": {"new": n, "heartbeats": n}, "now": ...}``.
        """
        with self._lock:
            self.generation += 1
            rng = random.Random(f"{self.seed}/advance/{self.generation}")
            start = self.mark + timedelta(seconds=1)
            end = max(_second(now), start)
            span = int((end - start).total_seconds())

            def moment() -> datetime:
                return start + timedelta(seconds=rng.randint(0, span))

            accounts = {a["id"]: dict(a) for a in self.accounts}
            orders = {k: list(v) for k, v in self.orders.items()}
            events: list[tuple[datetime, str, dict]] = []
            touched: dict[int, datetime] = {}
            new_ids = []
            for _ in range(amounts.new_accounts):
                account_id = max(accounts) + 1
                created = moment()
                accounts[account_id] = _account(rng, account_id, created)
                orders[account_id] = []
                new_ids.append(account_id)
                events.append((created, "account.created", {"account_id": account_id,
                                                            "name": accounts[account_id]["name"]}))
            # Status changes of existing orders (ones that still have a next status).
            movable = [(aid, i) for aid, items in sorted(orders.items()) for i, o in enumerate(items)
                       if _next_status(o["status"]) is not None]
            changed = rng.sample(movable, min(amounts.changed_orders, len(movable)))
            for account_id, index in changed:
                order = dict(orders[account_id][index])
                when = moment()
                order["status"] = _next_status(order["status"])
                order["updated_at"] = _text(when)
                orders[account_id][index] = order
                touched[account_id] = max(when, touched.get(account_id, when))
                events.append((when, "order.status_changed", {"order_id": order["id"], "account_id": account_id,
                                                              "status": order["status"]}))
            # New orders, dated in order of their ids.
            when_new = sorted(moment() for _ in range(amounts.new_orders))
            owners = [new_ids[i % len(new_ids)] if new_ids and i % 3 == 0 else rng.choice(sorted(accounts))
                      for i in range(amounts.new_orders)]
            for when, account_id in zip(when_new, owners):
                when = max(when, _parse(accounts[account_id]["created_at"]))
                order = _order(rng, self.next_order_id, accounts[account_id], when, ["pending"], [when])
                self.next_order_id += 1
                orders[account_id].append(order)
                touched[account_id] = max(when, touched.get(account_id, when))
                events.append((when, "order.created", {"order_id": order["id"], "account_id": account_id,
                                                       "total": order["total"], "currency": order["currency"]}))
            for account_id, when in touched.items():
                if when > _parse(accounts[account_id]["updated_at"]):
                    accounts[account_id]["updated_at"] = _text(when)
            earlier = sorted(a["id"] for a in self.accounts)
            for _ in range(amounts.logins):
                account_id = rng.choice(earlier)
                events.append((moment(), "login", _login(rng, account_id)))
            events.append((end, "heartbeat", {"service": "shop-api", "healthy": True}))
            new_events = self._number_events(events)
            self.accounts = sorted(accounts.values(), key=_by_update)
            self.orders = {k: sorted(v, key=_by_update) for k, v in orders.items()}
            self.events = self.events + new_events
            self.mark = end
            changed_accounts = sum(1 for a in touched if a not in new_ids)
            return {
                "now": _text(end),
                "accounts": {"new": len(new_ids), "changed": changed_accounts},
                "orders": {"new": amounts.new_orders, "changed": len(changed)},
                "events": {"new": len(new_events),
                           "heartbeats": sum(1 for e in new_events if e["kind"] == "heartbeat")},
            }

    def _number_events(self, events: list[tuple[datetime, str, dict]]) -> list[dict]:
        out = []
        for when, kind, payload in sorted(events, key=lambda e: e[0]):
            out.append({"id": f"evt_{self.next_event_id:07d}", "kind": kind, "occurred_at": _text(when),
                        "payload": payload})
            self.next_event_id += 1
        return out


def _by_update(item: Mapping[str, Any]) -> tuple[str, int]:
    return item["updated_at"], item["id"]


def _parse(text: str) -> datetime:
    return datetime.strptime(text, ISO).replace(tzinfo=timezone.utc)


def _account(rng: random.Random, account_id: int, created: datetime) -> dict:
    country, _, _ = rng.choices(_COUNTRIES, weights=[c[2] for c in _COUNTRIES])[0]
    first = _NAME_FIRST[account_id % len(_NAME_FIRST)]
    second = _NAME_SECOND[(account_id * 7 + account_id // len(_NAME_FIRST)) % len(_NAME_SECOND)]
    return {"id": account_id, "name": f"{first} {second}", "country": country,
            "created_at": _text(created), "updated_at": _text(created)}


def _currency(country: str | None) -> str:
    return next(c[1] for c in _COUNTRIES if c[0] == country)


def _line_items(rng: random.Random, currency: str) -> list[dict]:
    rate = _RATES[currency]
    digits = 0 if currency == "JPY" else 2
    items = []
    for sku, price in rng.sample(_CATALOG, rng.choice((1, 1, 2, 2, 3, 4))):
        items.append({"sku": sku, "quantity": rng.choice((1, 1, 1, 2, 2, 3, 5)),
                      "unit_price": round(price * rate, digits)})
    return items


def _order(rng: random.Random, order_id: int, account: Mapping[str, Any], ordered: datetime,
           statuses: Sequence[str], times: Sequence[datetime]) -> dict:
    currency = _currency(account["country"])
    items = _line_items(rng, currency)
    total = round(sum(i["quantity"] * i["unit_price"] for i in items), 0 if currency == "JPY" else 2)
    return {"id": order_id, "status": statuses[-1], "total": total, "currency": currency,
            "ordered_at": _text(ordered), "updated_at": _text(times[-1]), "line_items": items}


_NEXT = {"pending": "paid", "paid": "shipped", "shipped": "delivered"}


def _next_status(status: str) -> str | None:
    return _NEXT.get(status)


def _lifecycle(rng: random.Random, ordered: datetime) -> list[tuple[str, datetime]]:
    """An order's statuses and when it reached each: pending, paid, shipped, delivered (or
    cancelled; some delivered orders are refunded later)."""
    steps = [("pending", ordered)]
    when = ordered
    if rng.random() < 0.06:
        return steps + [("cancelled", when + timedelta(hours=rng.uniform(1, 30)))]
    for status, low, high in (("paid", 0.02, 3), ("shipped", 12, 72), ("delivered", 24, 120)):
        when = when + timedelta(hours=rng.uniform(low, high))
        steps.append((status, when))
    if rng.random() < 0.04:
        steps.append(("refunded", when + timedelta(days=rng.uniform(2, 12))))
    return steps


def _login(rng: random.Random, account_id: int) -> dict:
    return {"account_id": account_id, "ip": f"198.51.100.{rng.randint(1, 254)}",
            "user_agent": rng.choice(("Firefox/128", "Chrome/126", "Safari/17", "ShopApp/3.2 (iOS)"))}


def generate(now: datetime | None = None, seed: int = 7, accounts: int = 50) -> Shop:
    """The shop's data over the :data:`HISTORY` before ``now`` (default: the real now).

    Items are dated at whole seconds, none later than ``now - QUIET_PERIOD``.
    """
    now = _second(now or datetime.now(timezone.utc))
    mark = now - QUIET_PERIOD
    begin = now - HISTORY + timedelta(hours=1)
    rng = random.Random(seed)
    span = (mark - begin).total_seconds()

    def at(fraction: float) -> datetime:
        return _second(begin + timedelta(seconds=span * fraction))

    created = sorted(at(rng.uniform(0, 0.5)) for _ in range(accounts))
    account_list = [_account(rng, i + 1, when) for i, when in enumerate(created)]
    raw: list[tuple[datetime, int, list[tuple[str, datetime]]]] = []
    events: list[tuple[datetime, str, dict]] = []
    for account in account_list:
        start = _parse(account["created_at"])
        events.append((start, "account.created", {"account_id": account["id"], "name": account["name"]}))
        for _ in range(max(0, int(rng.gauss(15, 6)))):
            ordered = _second(start + (mark - start) * rng.random())
            raw.append((ordered, account["id"], [(s, _second(t)) for s, t in _lifecycle(rng, ordered) if t <= mark]))
        for _ in range(rng.randint(3, 20)):
            events.append((_second(start + (mark - start) * rng.random()), "login", _login(rng, account["id"])))
    by_id = {a["id"]: a for a in account_list}
    orders: dict[int, list[dict]] = {a["id"]: [] for a in account_list}
    for order_id, (ordered, account_id, steps) in enumerate(sorted(raw, key=lambda r: (r[0], r[1])), start=1):
        order = _order(rng, order_id, by_id[account_id], ordered, [s for s, _ in steps], [t for _, t in steps])
        orders[account_id].append(order)
        for status, when in steps:
            kind, payload = ("order.created", {"order_id": order_id, "account_id": account_id,
                                               "total": order["total"], "currency": order["currency"]}) \
                if status == "pending" else \
                ("order.status_changed", {"order_id": order_id, "account_id": account_id, "status": status})
            events.append((when, kind, payload))
        if order["updated_at"] > by_id[account_id]["updated_at"]:
            by_id[account_id]["updated_at"] = order["updated_at"]
    beat = begin
    while beat <= mark:
        events.append((beat, "heartbeat", {"service": "shop-api", "healthy": True}))
        beat += _HEARTBEAT_EVERY
    shop = Shop(seed=seed, accounts=sorted(account_list, key=_by_update),
                orders={k: sorted(v, key=_by_update) for k, v in orders.items()}, events=[], mark=mark,
                next_order_id=len(raw) + 1)
    shop.events = shop._number_events(events)
    return shop


# -- the rate limit ------------------------------------------------------------------------


class RateLimiter:
    """At most ``rate`` requests per second per client, in bursts of up to ``burst`` (a token bucket).

    ``take(client)`` answers 0 when the request may go ahead, else the seconds
    until it could. ``clock`` is a monotonic clock in seconds (injected in tests).
    """

    def __init__(self, rate: float, burst: int | None = None, clock: Callable[[], float] = time.monotonic):
        if rate <= 0:
            raise ValueError("rate must be positive; use no limiter to turn the limit off")
        self.rate = rate
        self.burst = float(burst if burst is not None else max(1, math.ceil(rate)))
        self.clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def take(self, client: str) -> float:
        with self._lock:
            now = self.clock()
            tokens, then = self._buckets.get(client, (self.burst, now))
            tokens = min(self.burst, tokens + (now - then) * self.rate)
            if tokens >= 1.0:
                self._buckets[client] = (tokens - 1.0, now)
                return 0.0
            self._buckets[client] = (tokens, now)
            return (1.0 - tokens) / self.rate


# -- HTTP ----------------------------------------------------------------------------------


class _BadRequest(Exception):
    def __init__(self, status: int, message: str, headers: Mapping[str, str] | None = None):
        super().__init__(message)
        self.status = status
        self.headers = dict(headers or {})


def _one(params: Mapping[str, list[str]], name: str) -> str | None:
    values = params.get(name)
    return values[-1] if values else None


def _integer(params: Mapping[str, list[str]], name: str, default: int, low: int, high: int | None) -> int:
    raw = _one(params, name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise _BadRequest(400, f"`{name}` must be a whole number, not {raw!r}") from None
    if value < low:
        raise _BadRequest(400, f"`{name}` must be at least {low}, not {value}")
    return value if high is None else min(value, high)


def _iso_param(params: Mapping[str, list[str]], name: str) -> str | None:
    raw = _one(params, name)
    if raw is None or raw == "":
        return None
    try:
        value = datetime.fromisoformat(raw.replace("Z", "+00:00").replace(" ", "+"))
    except ValueError:
        raise _BadRequest(400, f"`{name}` must be an ISO 8601 datetime like 2024-05-01T00:00:00Z, "
                               f"not {raw!r}") from None
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return _text(value.astimezone(timezone.utc))


def _epoch_param(params: Mapping[str, list[str]], name: str) -> str | None:
    raw = _one(params, name)
    if raw is None or raw == "":
        return None
    try:
        value = datetime.fromtimestamp(int(raw), timezone.utc)
    except (ValueError, OverflowError, OSError):
        raise _BadRequest(400, f"`{name}` must be whole epoch seconds like 1714521600, not {raw!r}") from None
    return _text(value)


def _encode_cursor(item: Mapping[str, Any]) -> str:
    return base64.urlsafe_b64encode(orjson.dumps([item["updated_at"], item["id"]])).decode().rstrip("=")


def _decode_cursor(token: str) -> tuple[str, int]:
    try:
        updated_at, item_id = orjson.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        return str(updated_at), int(item_id)
    except (binascii.Error, orjson.JSONDecodeError, TypeError, ValueError):
        raise _BadRequest(400, "`cursor` is not one this API gave out; send the `next_cursor` of the "
                               "previous page, or no cursor for the first page") from None


def _cursor_page(items: Sequence[dict], params: Mapping[str, list[str]]) -> dict:
    """Items (sorted by ``(updated_at, id)``) filtered on ``updated_since``/``updated_until`` and
    paged by ``limit``/``cursor``."""
    limit = _integer(params, "limit", 50, 1, MAX_LIMIT)
    since, until = _iso_param(params, "updated_since"), _iso_param(params, "updated_until")
    token = _one(params, "cursor")
    after = _decode_cursor(token) if token else None
    page: list[dict] = []
    more = False
    for item in items:
        updated = item["updated_at"]
        if (since is not None and updated < since) or (after is not None and (updated, item["id"]) <= after):
            continue
        if until is not None and updated > until:
            break  # sorted: nothing later matches
        if len(page) == limit:
            more = True
            break
        page.append(item)
    return {"data": page, "next_cursor": _encode_cursor(page[-1]) if more else None}


#: The shapes the API can answer events in (``--shape``): 1 as the connector's schema declares them; 2 as
#: after an API change: every event gains ``priority`` (a whole number from 1 to 3) and ``payload`` is sent
#: as JSON text instead of an object (docs/when-data-looks-wrong.md, "Schema drift").
SHAPES = (1, 2)


def shaped(event: Mapping[str, Any], shape: int) -> dict:
    """``event`` as the API of ``shape`` sends it."""
    if shape == 1:
        return dict(event)
    number = int(str(event["id"]).rpartition("_")[2] or 0)
    return {**event, "priority": number % 3 + 1, "payload": orjson.dumps(event["payload"]).decode()}


def _events_page(events: Sequence[dict], params: Mapping[str, list[str]], shape: int = 1) -> dict:
    page = _integer(params, "page", 1, 1, None)
    per_page = _integer(params, "per_page", 100, 1, MAX_PER_PAGE)
    since, until = _epoch_param(params, "since"), _epoch_param(params, "until")
    chosen = [e for e in events if (since is None or e["occurred_at"] >= since)
              and (until is None or e["occurred_at"] <= until)]
    first = (page - 1) * per_page
    return {"data": [shaped(e, shape) for e in chosen[first:first + per_page]]}


@dataclass
class Stats:
    requests: int = 0
    statuses: Counter = field(default_factory=Counter)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def count(self, status: int) -> None:
        with self.lock:
            self.requests += 1
            self.statuses[status] += 1

    def as_dict(self) -> dict[str, Any]:
        with self.lock:
            return {"requests": self.requests, "throttled": self.statuses[429],
                    "statuses": {str(k): v for k, v in sorted(self.statuses.items())}}


class ShopServer(ThreadingHTTPServer):
    """The HTTP server of a :class:`Shop` (see the module docstring for the endpoints)."""

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], shop: Shop, *, api_key: str = API_KEY,
                 limiter: RateLimiter | None = None, log: IO[str] | None = None,
                 clock: Callable[[], datetime] = lambda: datetime.now(timezone.utc), shape: int = 1):
        self.shop = shop
        self.shape = shape  # the shape events are sent in (SHAPES); a test may change it between syncs
        self.api_key = api_key
        self.limiter = limiter
        self.log = log
        self.clock = clock
        self.stats = Stats()
        self._log_lock = threading.Lock()
        super().__init__(address, _Handler)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"

    def answer(self, method: str, target: str, headers: Mapping[str, str]) -> tuple[int, dict, dict[str, str]]:
        """``(status, body, extra headers)`` for one request."""
        parts = urlsplit(target)
        path = parts.path.rstrip("/") or "/"
        params = parse_qs(parts.query, keep_blank_values=True)
        try:
            if path.startswith("/_admin/"):
                return self._admin(method, path)
            if method != "GET":
                raise _BadRequest(405, f"{method} is not allowed here; the data endpoints are read with GET",
                                  {"Allow": "GET"})
            key = self._authorize(headers)
            if self.limiter is not None:
                wait = self.limiter.take(key)
                if wait > 0:
                    seconds = max(1, math.ceil(wait))
                    raise _BadRequest(429, f"rate limit exceeded; retry in {seconds} s",
                                      {"Retry-After": str(seconds)})
            return 200, self._data(path, params), {}
        except _BadRequest as exc:
            return exc.status, {"error": str(exc)}, exc.headers

    def _authorize(self, headers: Mapping[str, str]) -> str:
        scheme, _, token = (headers.get("Authorization") or "").partition(" ")
        if scheme.lower() != "bearer" or token.strip() != self.api_key:
            raise _BadRequest(401, "missing or wrong API key; send `Authorization: Bearer <your key>`",
                              {"WWW-Authenticate": 'Bearer realm="shop"'})
        return token.strip()

    def _data(self, path: str, params: Mapping[str, list[str]]) -> dict:
        shop = self.shop
        if path == "/accounts":
            return _cursor_page(shop.accounts, params)
        if path == "/events":
            return _events_page(shop.events, params, self.shape)
        segments = path.strip("/").split("/")
        if len(segments) == 3 and segments[0] == "accounts" and segments[2] == "orders":
            try:
                account_id = int(segments[1])
            except ValueError:
                raise _BadRequest(404, f"no account {segments[1]!r}; account ids are whole numbers") from None
            orders = shop.orders.get(account_id)
            if orders is None:
                raise _BadRequest(404, f"no account {account_id}")
            return _cursor_page(orders, params)
        raise _BadRequest(404, f"no endpoint {path}; try /accounts, /accounts/{{id}}/orders or /events")

    def _admin(self, method: str, path: str) -> tuple[int, dict, dict[str, str]]:
        if path == "/_admin/advance":
            if method != "POST":
                raise _BadRequest(405, "use POST /_admin/advance", {"Allow": "POST"})
            return 200, self.shop.advance(self.clock()), {}
        if path == "/_admin/stats":
            return 200, {**self.stats.as_dict(), "data": self.shop.counts()}, {}
        raise _BadRequest(404, f"no admin endpoint {path}; try /_admin/advance or /_admin/stats")

    def write_log(self, line: str) -> None:
        if self.log is not None:
            with self._log_lock:
                self.log.write(line + "\n")
                self.log.flush()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: ShopServer
    server_version = "ShopAPI/1.0"

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def _serve(self, method: str) -> None:
        started = time.perf_counter()
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)  # keeps the connection in step; the admin endpoints take no body
        try:
            status, body, extra = self.server.answer(method, self.path, self.headers)
        except Exception as exc:  # noqa: BLE001 - a bug here must not leave the client waiting
            status, body, extra = 500, {"error": f"the shop API failed: {exc!r}"}, {}
        payload = orjson.dumps(body)
        head = [f"HTTP/1.1 {status} {self.responses.get(status, ('',))[0]}",
                "Content-Type: application/json", f"Content-Length: {len(payload)}"]
        head += [f"{k}: {v}" for k, v in extra.items()]
        if self.close_connection:
            head.append("Connection: close")
        self.server.stats.count(status)  # before answering: a client that asks for stats next sees it
        self.wfile.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + payload)
        if self.server.log is not None:
            millis = (time.perf_counter() - started) * 1000
            self.server.write_log(f"{_text(datetime.now(timezone.utc))} {method} {self.path} {status} "
                                  f"{len(payload)}B {millis:.1f}ms")

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        self._serve("GET")

    def do_POST(self) -> None:  # noqa: N802
        self._serve("POST")

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet: the log is ours
        return


class ShopApi:
    """The API in a background thread, for tests and scripts::

        with ShopApi(now=..., rate_limit=None) as api:
            ...  # api.url, api.shop, api.server.stats
    """

    def __init__(self, *, now: datetime | None = None, seed: int = 7, port: int = 0,
                 rate_limit: float | None = None, api_key: str = API_KEY,
                 clock: Callable[[], datetime] = lambda: datetime.now(timezone.utc), shape: int = 1):
        limiter = RateLimiter(rate_limit) if rate_limit else None
        self.shop = generate(now, seed)
        self.server = ShopServer(("127.0.0.1", port), self.shop, api_key=api_key, limiter=limiter, clock=clock,
                                 shape=shape)
        self._thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), name="shop-api",
                                        daemon=True)

    @property
    def url(self) -> str:
        return self.server.url

    def __enter__(self) -> ShopApi:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._thread.join()


# -- command line --------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description="Serve the example shop API on 127.0.0.1.")
    parser.add_argument("--port", type=int, default=8765, help="port to listen on (default 8765; 0 picks one)")
    parser.add_argument("--now", help="ISO 8601 instant the data ends at (default: now)")
    parser.add_argument("--seed", type=int, default=7, help="seed of the generated data (default 7)")
    parser.add_argument("--rate-limit", type=float, default=DEFAULT_RATE_LIMIT, metavar="N",
                        help=f"requests per second per API key before 429 (default {DEFAULT_RATE_LIMIT:g}; "
                             "0 turns it off)")
    parser.add_argument("--api-key", default=API_KEY, help="the key clients must send (default: the demo's)")
    parser.add_argument("--log", metavar="FILE", help="append one line per request to FILE")
    parser.add_argument("--shape", type=int, choices=SHAPES, default=1,
                        help="2: events as after an API change (a new field, priority, and payload as JSON text)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    now = None
    if args.now:
        try:
            now = datetime.fromisoformat(args.now.replace("Z", "+00:00"))
        except ValueError:
            print(f"api.py: --now {args.now!r} is not an ISO 8601 instant like 2024-05-01T12:00:00Z",
                  file=sys.stderr)
            return 2
        now = now if now.tzinfo else now.replace(tzinfo=timezone.utc)
    log = open(args.log, "a", encoding="utf-8") if args.log else None  # noqa: SIM115 - closed below
    try:
        server = ShopServer(("127.0.0.1", args.port), generate(now, args.seed), api_key=args.api_key,
                            limiter=RateLimiter(args.rate_limit) if args.rate_limit > 0 else None, log=log,
                            shape=args.shape)
    except OSError as exc:
        print(f"api.py: cannot listen on 127.0.0.1:{args.port} ({exc.strerror}); stop what uses the port "
              "or pick another with --port", file=sys.stderr)
        return 1

    def stop(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    counts = server.shop.counts()
    print(f"listening on {server.url} ({counts['accounts']} accounts, {counts['orders']} orders, "
          f"{counts['events']} events; rate limit "
          f"{f'{args.rate_limit:g} requests/s' if args.rate_limit > 0 else 'off'})", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        stats = server.stats.as_dict()
        print(f"shop API stopped: served {stats['requests']} requests, {stats['throttled']} answered 429 "
              "(rate limited)", flush=True)
        if log is not None:
            log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
