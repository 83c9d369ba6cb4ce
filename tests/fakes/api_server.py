"""A fake JSON HTTP API for integration and end-to-end tests.

:class:`FakeApi` serves routes you register on ``127.0.0.1`` (an ephemeral
port) from a background thread, records every request it receives, and can
inject failures (error statuses, slow answers, dropped connections)::

    with FakeApi() as api:
        api.route("GET", "/accounts/{id}/orders", lambda r: paged(ORDERS, r, style="cursor"))
        api.fault(status=429, headers={"Retry-After": "0"})     # the first request is throttled
        ...  # point the code under test at api.url
        assert api.requests[1].param("cursor") is None

Handlers take a :class:`RecordedRequest` and return a :class:`Reply`, or a
dict or list (answered as ``200`` JSON). Raising :class:`ApiError` answers
with that status and ``{"error": message}``. A handler that raises anything
else gets a ``500`` and the exception is kept in ``FakeApi.errors``; leaving
the ``with`` block (or the ``fake_api`` fixture) then fails the test, so a bug
in a handler is not mistaken for a bug in the client.

The server is built for speed: bodies are encoded with orjson, every answer
carries ``Content-Length`` and connections are kept alive (HTTP/1.1), each
answer goes out in one write with Nagle's algorithm off, and nothing is logged.

A rate limit (:meth:`FakeApi.limit`) counts the requests per window of the
server's clock and answers ``429`` above the limit, as an API with a budget does.

Helpers for handlers: :func:`paged` serves a list in pages (page numbers,
offset/limit or cursors) and :func:`dated` keeps the items whose date field
lies within the bounds given in query parameters.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import itertools
import math
import re
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Literal, Self
from urllib.parse import parse_qs, unquote

import orjson
import pytest

__all__ = [
    "ApiError",
    "FakeApi",
    "Headers",
    "RateLimit",
    "RecordedRequest",
    "Reply",
    "ReportJobs",
    "dated",
    "fake_api",
    "paged",
]

_SECRET_WORDS = ("auth", "token", "key", "secret", "password", "cookie", "signature", "session")


def _looks_secret(name: str) -> bool:
    lowered = name.lower()
    return any(word in lowered for word in _SECRET_WORDS)


class Headers(Mapping[str, str]):
    """Request headers, looked up without regard to case.

    Repeated headers are joined with ``", "``. Iteration yields the names as
    the client spelled them. The repr masks values of headers whose names
    suggest a credential (``Authorization``, ``X-Api-Key``, ``Cookie``...).
    """

    __slots__ = ("_items",)

    def __init__(self, pairs: Iterable[tuple[str, str]] | Mapping[str, str] = ()):
        items: dict[str, tuple[str, str]] = {}
        for name, value in pairs.items() if isinstance(pairs, Mapping) else pairs:
            key = name.lower()
            if key in items:
                first_name, joined = items[key]
                items[key] = (first_name, f"{joined}, {value}")
            else:
                items[key] = (name, value)
        self._items = items

    def __getitem__(self, name: str) -> str:
        return self._items[name.lower()][1]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._items

    def __iter__(self) -> Iterator[str]:
        return (name for name, _ in self._items.values())

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        shown = {name: "****" if _looks_secret(name) else value for name, value in self._items.values()}
        return f"Headers({shown!r})"


@dataclass(frozen=True, eq=False, repr=False)
class RecordedRequest:
    """One request as the server received it.

    ``path`` is the path as sent (still percent-encoded, without the query);
    ``target`` is path plus ``?query``. ``query`` maps each parameter to all
    its values (blank values kept). ``path_params`` holds the values matched
    by ``{name}`` placeholders of the route, percent-decoded. ``connection``
    numbers the client connections (1, 2, ...): requests with the same number
    came over one kept-alive connection. ``received_at`` and ``answered_at``
    are the server's ``time.time()`` when the request came in and when its
    answer was sent (0.0 until then, and for requests built by hand).
    """

    method: str
    target: str
    path: str
    query: Mapping[str, list[str]]
    headers: Headers
    body: bytes = b""
    path_params: Mapping[str, str] = field(default_factory=dict)
    connection: int = 0
    received_at: float = 0.0
    answered_at: float = 0.0

    @classmethod
    def build(
        cls,
        target: str = "/",
        method: str = "GET",
        headers: Mapping[str, str] | None = None,
        body: bytes = b"",
        path_params: Mapping[str, str] | None = None,
    ) -> RecordedRequest:
        """A request made by hand, for calling handlers and helpers without a server."""
        path, _, query = target.partition("?")
        return cls(
            method=method.upper(),
            target=target,
            path=path,
            query=parse_qs(query, keep_blank_values=True),
            headers=Headers(headers or {}),
            body=body,
            path_params=dict(path_params or {}),
        )

    def param(self, name: str, default: str | None = None) -> str | None:
        """The first value of query parameter ``name``, or ``default`` when it is absent."""
        values = self.query.get(name)
        return values[0] if values else default

    def json(self) -> Any:
        """The body decoded as JSON."""
        return orjson.loads(self.body)

    def form(self) -> dict[str, str]:
        """The body decoded as an HTML form (``a=1&b=2``); the first value of each field."""
        fields = parse_qs(self.body.decode("utf-8"), keep_blank_values=True)
        return {name: values[0] for name, values in fields.items()}

    def __repr__(self) -> str:
        path, _, query = self.target.partition("?")
        if query:
            parts = []
            for pair in query.split("&"):
                name, eq, _value = pair.partition("=")
                parts.append(f"{name}=****" if eq and _looks_secret(unquote(name)) else pair)
            path = f"{path}?{'&'.join(parts)}"
        return f"<RecordedRequest {self.method} {path} body={len(self.body)} bytes>"


@dataclass(frozen=True)
class Reply:
    """An answer: ``body`` may be bytes or str (sent as is) or anything orjson encodes.

    ``None`` sends an empty body. ``Content-Type`` is ``application/json``
    unless ``headers`` names another; ``Content-Length`` is always computed.
    """

    status: int = 200
    body: Any = None
    headers: Mapping[str, str] = field(default_factory=dict)


class ApiError(Exception):
    """Raise from a handler (or helper) to answer ``status`` with ``{"error": message}``."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.reply = Reply(status, {"error": message})


Handler = Callable[[RecordedRequest], Reply | dict | list] | Reply | dict | list

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


@dataclass
class RateLimit:
    """The server's rate limit (:meth:`FakeApi.limit`) and what it counted.

    Windows are ``period`` seconds of the server's ``time.time()``, aligned on the epoch (window ``k``
    is ``[k * period, (k + 1) * period)``). ``counted[k]`` is how many requests arrived in window ``k``
    (answered or not); ``refused`` how many were answered 429.
    """

    calls: int
    period: float
    path: str | None = None
    headers: bool = False
    counted: dict[int, int] = field(default_factory=dict)
    refused: int = 0

    def full_windows(self) -> list[int]:
        """The counts of the windows between the first and the last one that saw requests (those two
        are partly outside the run, so left out), in order; windows without requests count 0."""
        if len(self.counted) < 3:
            return []
        first, last = min(self.counted), max(self.counted)
        return [self.counted.get(k, 0) for k in range(first + 1, last)]


@dataclass(frozen=True)
class _Route:
    method: str
    template: str
    pattern: re.Pattern[str]
    placeholders: int
    handler: Handler

    @classmethod
    def compile(cls, method: str, template: str, handler: Handler) -> _Route:
        if not template.startswith("/") or "?" in template:
            raise ValueError(
                f"route path {template!r} must start with '/' and hold no query; "
                "read query parameters in the handler with request.param(name)"
            )
        names = _PLACEHOLDER.findall(template)
        if len(set(names)) != len(names):
            raise ValueError(f"route path {template!r} uses a placeholder name twice; give each a distinct name")
        regex, last = [], 0
        for match in _PLACEHOLDER.finditer(template):
            regex.append(re.escape(template[last : match.start()]))
            regex.append(f"(?P<{match.group(1)}>[^/]+)")
            last = match.end()
        regex.append(re.escape(template[last:]))
        return cls(method.upper(), template, re.compile("".join(regex)), len(names), handler)


@dataclass
class _Fault:
    """A pending failure; mutable counters, guarded by the server lock."""

    after: int
    times: int
    status: int | None
    body: Any
    headers: Mapping[str, str]
    hang: float | None
    path: str | None
    close_connection: bool
    passed: int = 0  # matching requests served normally so far

    def matches(self, path: str) -> bool:
        return self.path is None or path.startswith(self.path)

    def reply(self) -> Reply:
        status = 500 if self.status is None else self.status
        body = {"error": f"injected fault ({status})"} if self.body is ... else self.body
        return Reply(status, body, self.headers)


class FakeApi:
    """A JSON API on 127.0.0.1 (ephemeral port) served from a background thread.

    The port is bound when the object is made, so ``url`` is usable before
    :meth:`start`. Use it as a context manager (or the ``fake_api`` fixture).
    """

    def __init__(self, *, check_handler_errors: bool = True, host: str = "127.0.0.1"):
        self.requests: list[RecordedRequest] = []
        self.errors: list[BaseException] = []
        self.check_handler_errors = check_handler_errors
        self._lock = threading.Lock()
        self._routes: tuple[_Route, ...] = ()
        self._faults: list[_Fault] = []
        self.rate_limit: RateLimit | None = None
        self._connections: dict[socket.socket, int] = {}
        self._connection_ids = itertools.count(1)
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._server = _Server(self, host)
        bound, port = self._server.server_address[:2]
        self.url = f"http://{bound!s}:{port}"

    # -- configuration -------------------------------------------------------------------------

    def route(self, method: str, path: str, handler: Handler) -> None:
        """Answer ``method`` (``"*"`` for any) on ``path`` with ``handler``.

        ``path`` may hold ``{name}`` placeholders, each matching one path
        segment; the values arrive in ``request.path_params``. ``handler`` is
        called with the request, or is a Reply/dict/list sent as is. Routes
        with fewer placeholders win over ones with more; among equals the
        earlier registered wins; registering the same method and path again
        replaces the handler.
        """
        new = _Route.compile(method, path, handler)
        with self._lock:
            kept = [r for r in self._routes if (r.method, r.template) != (new.method, new.template)]
            kept.append(new)
            kept.sort(key=lambda r: r.placeholders)
            self._routes = tuple(kept)

    def fault(
        self,
        *,
        after: int | None = None,
        times: int = 1,
        status: int | None = None,
        body: Any = ...,
        headers: Mapping[str, str] | None = None,
        hang: float | None = None,
        path: str | None = None,
        close_connection: bool = False,
    ) -> None:
        """Make the next ``times`` matching requests fail.

        A request matches when its path starts with ``path`` (any path if
        None); the fault starts once ``after`` matching requests have been
        served normally. A failing request is answered with ``status``
        (default 500), ``body`` (default ``{"error": "injected fault (500)"}``)
        and ``headers``, e.g. ``status=429, headers={"Retry-After": "0"}``.
        With ``hang`` the server first waits that many seconds; given
        ``hang`` without ``status`` it then answers normally (a slow server).
        With ``close_connection`` it drops the connection instead of
        answering. Faults are consumed in the order they were added.
        """
        if times < 1:
            raise ValueError(f"fault(times={times}) must be at least 1")
        if after is not None and after < 0:
            raise ValueError(f"fault(after={after}) must not be negative")
        if hang is not None and hang < 0:
            raise ValueError(f"fault(hang={hang}) must not be negative")
        if status is None and hang is None and not close_connection:
            status = 500
        fault = _Fault(after or 0, times, status, body, dict(headers or {}), hang, path, close_connection)
        with self._lock:
            self._faults.append(fault)

    def limit(self, calls: int, period: float, *, path: str | None = None, headers: bool = False) -> RateLimit:
        """Allow ``calls`` requests (whose path starts with ``path``; any when None) per window of
        ``period`` seconds; answer ``429`` with ``Retry-After`` to the others. With ``headers`` every
        counted answer says ``ratelimit-remaining`` and ``ratelimit-reset`` (the window's end, epoch
        seconds). Returns the :class:`RateLimit` that counts the requests per window."""
        if calls < 1 or period <= 0:
            raise ValueError(f"limit({calls}, {period}) needs at least one call per positive period")
        limit = RateLimit(calls, period, path, headers)
        with self._lock:
            self.rate_limit = limit
        return limit

    def received(self, path: str | None = None, method: str | None = None) -> list[RecordedRequest]:
        """The recorded requests, optionally only those with this exact path and/or method."""
        with self._lock:
            recorded = list(self.requests)
        return [
            r
            for r in recorded
            if (path is None or r.path == path) and (method is None or r.method == method.upper())
        ]

    # -- lifecycle -----------------------------------------------------------------------------

    def start(self) -> Self:
        if self._stopping.is_set():
            raise RuntimeError("this FakeApi was stopped; make a new one")
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._server.serve_forever,
                kwargs={"poll_interval": 0.01},
                name=f"FakeApi {self.url}",
                daemon=True,
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving; wakes hanging requests and closes kept-alive connections."""
        if self._stopping.is_set():
            return
        self._stopping.set()
        if self._thread is not None:
            self._server.shutdown()
        with self._lock:
            open_sockets = list(self._connections)
        for sock in open_sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._server.server_close()
        if self._thread is not None:
            self._thread.join()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
        if exc_type is None and self.errors and self.check_handler_errors:
            first = self.errors[0]
            raise AssertionError(
                f"a FakeApi handler raised {type(first).__name__}: {first} "
                f"({len(self.errors)} handler error(s) in all); fix the handler, or return "
                "Reply(500, ...) if the failure is intended"
            ) from first

    def __repr__(self) -> str:
        return f"<FakeApi {self.url} requests={len(self.requests)}>"

    # -- serving (called from the server threads) ----------------------------------------------

    def _connection_opened(self, sock: socket.socket) -> int:
        with self._lock:
            number = next(self._connection_ids)
            self._connections[sock] = number
        return number

    def _connection_closed(self, sock: socket.socket) -> None:
        with self._lock:
            self._connections.pop(sock, None)

    def _match(self, method: str, path: str) -> tuple[_Route | None, dict[str, str]]:
        for candidate in self._routes:
            if candidate.method == method or candidate.method == "*":
                found = candidate.pattern.fullmatch(path)
                if found:
                    return candidate, {k: unquote(v) for k, v in found.groupdict().items()}
        return None, {}

    def _take_fault(self, path: str) -> _Fault | None:
        with self._lock:
            for fault in self._faults:
                if fault.matches(path) and fault.passed >= fault.after:
                    fault.times -= 1
                    if fault.times == 0:
                        self._faults.remove(fault)
                    return fault
            for fault in self._faults:
                if fault.matches(path):
                    fault.passed += 1
            return None

    def _serve(self, exchange: _Handler) -> None:
        body = _read_body(exchange)
        target = exchange.path
        path, _, query = target.partition("?")
        route, params = self._match(exchange.command, path)
        request = RecordedRequest(
            method=exchange.command,
            target=target,
            path=path,
            query=parse_qs(query, keep_blank_values=True) if query else {},
            headers=Headers(exchange.headers.items()),
            body=body,
            path_params=params,
            connection=exchange.connection_id,
            received_at=time.time(),
        )
        with self._lock:
            index = len(self.requests)
            self.requests.append(request)

        def answered() -> None:  # stamped before the answer goes out, so a client that has it sees the time
            with self._lock:  # (unless the test cleared the log meanwhile)
                if index < len(self.requests) and self.requests[index] is request:
                    self.requests[index] = dataclasses.replace(request, answered_at=time.time())

        limited = self._count(path, request.received_at)
        if limited is not None and limited.status == 429:
            answered()
            _send(exchange, limited)
            return
        fault = self._take_fault(path)
        if fault is not None:
            if fault.hang and self._stopping.wait(fault.hang):
                answered()
                _drop(exchange)
                return
            if fault.close_connection:
                answered()
                _drop(exchange)
                return
            if fault.status is not None:
                answered()
                _send(exchange, fault.reply())
                return
        reply = self._answer(route, request)
        if limited is not None:
            reply = dataclasses.replace(reply, headers={**limited.headers, **reply.headers})
        answered()
        _send(exchange, reply)

    def _count(self, path: str, at: float) -> Reply | None:
        """Count a request in the rate limit's window: a 429 above the limit, else the headers to add
        (None when no limit applies)."""
        limit = self.rate_limit
        if limit is None or (limit.path is not None and not path.startswith(limit.path)):
            return None
        window = math.floor(at / limit.period)
        with self._lock:
            seen = limit.counted[window] = limit.counted.get(window, 0) + 1
            if seen > limit.calls:
                limit.refused += 1
        ends = (window + 1) * limit.period
        headers = {"ratelimit-remaining": str(max(0, limit.calls - seen)),
                   "ratelimit-reset": str(math.ceil(ends))} if limit.headers else {}
        if seen > limit.calls:
            return Reply(429, {"error": "rate limit exceeded"},
                         {"Retry-After": str(max(1, math.ceil(ends - at))), **headers})
        return Reply(200, None, headers)

    def _answer(self, route: _Route | None, request: RecordedRequest) -> Reply:
        if route is None:
            return Reply(404, {"error": "no route"})
        try:
            result = route.handler(request) if callable(route.handler) else route.handler
            if isinstance(result, Reply):
                return result
            if isinstance(result, (dict, list)):
                return Reply(200, result)
            raise TypeError(
                f"the handler of {route.method} {route.template} returned {type(result).__name__}; "
                "return a Reply, a dict or a list"
            )
        except ApiError as error:
            return error.reply
        except Exception as error:  # noqa: BLE001 - reported through FakeApi.errors
            with self._lock:
                self.errors.append(error)
            return Reply(500, {"error": "handler raised", "detail": f"{type(error).__name__}: {error}"})


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, api: FakeApi, host: str = "127.0.0.1"):
        self.api = api
        super().__init__((host, 0), _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Stay quiet: connection errors are the client's business (often on purpose)."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: _Server
    connection_id: int

    def setup(self) -> None:
        super().setup()
        self.connection_id = self.server.api._connection_opened(self.connection)

    def finish(self) -> None:
        try:
            super().finish()
        except OSError:
            pass
        finally:
            self.server.api._connection_closed(self.connection)

    def log_message(self, format: str, *args: Any) -> None:
        """No request logging."""

    def _dispatch(self) -> None:
        self.server.api._serve(self)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _dispatch


def _read_body(exchange: _Handler) -> bytes:
    length = exchange.headers.get("Content-Length")
    if length:
        return exchange.rfile.read(int(length))
    if "chunked" not in exchange.headers.get("Transfer-Encoding", "").lower():
        return b""
    chunks = []
    while True:
        size = int(exchange.rfile.readline(65537).split(b";", 1)[0].strip() or b"0", 16)
        if size == 0:
            while exchange.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                pass  # trailers
            return b"".join(chunks)
        chunks.append(exchange.rfile.read(size))
        exchange.rfile.readline(65537)


def _encode(body: Any) -> bytes:
    if body is None:
        return b""
    if isinstance(body, (bytes, bytearray, memoryview)):
        return bytes(body)
    if isinstance(body, str):
        return body.encode("utf-8")
    return orjson.dumps(body, option=orjson.OPT_NON_STR_KEYS)


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Status"


def _send(exchange: _Handler, reply: Reply) -> None:
    status = reply.status
    no_body = status == 204 or status == 304 or status < 200
    body = b"" if no_body else _encode(reply.body)
    lines = [f"HTTP/1.1 {status} {_phrase(status)}"]
    typed = False
    for name, value in reply.headers.items():
        lowered = name.lower()
        if lowered in ("content-length", "transfer-encoding"):
            continue
        if lowered == "content-type":
            typed = True
        elif lowered == "connection" and value.lower() == "close":
            exchange.close_connection = True
            continue
        lines.append(f"{name}: {value}")
    if not typed:
        lines.append("Content-Type: application/json")
    if not no_body:
        lines.append(f"Content-Length: {len(body)}")
    if exchange.close_connection:
        lines.append("Connection: close")
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    try:
        exchange.wfile.write(head if exchange.command == "HEAD" else head + body)
    except OSError:
        exchange.close_connection = True


def _drop(exchange: _Handler) -> None:
    exchange.close_connection = True
    try:
        exchange.connection.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


# -- helpers for handlers ------------------------------------------------------------------------

PageStyle = Literal["page", "offset", "cursor"]


def paged(
    items: Sequence[Any],
    request: RecordedRequest,
    *,
    style: PageStyle = "page",
    page_size_param: str = "per_page",
    default_page_size: int = 10,
    max_page_size: int | None = None,
    page_param: str = "page",
    first_page: int = 1,
    offset_param: str = "offset",
    cursor_param: str = "cursor",
    data_key: str = "data",
) -> dict[str, Any]:
    """One page of ``items``, chosen by the request's query parameters.

    The page size is ``?per_page=`` (``page_size_param``), else
    ``default_page_size``, capped at ``max_page_size``. The shapes:

    - ``"page"``: ``?page=N`` (from ``first_page``, default 1) ->
      ``{"data": [...], "page": N, "total_pages": T}``;
    - ``"offset"``: ``?offset=K`` (default 0) -> ``{"data": [...], "offset": K, "total": len(items)}``;
    - ``"cursor"``: ``?cursor=C`` (absent on the first request) ->
      ``{"data": [...], "next_cursor": "..."}``, ``next_cursor`` being ``None`` on the last page.

    Pages past the end are empty. Malformed parameters and cursors the
    server never issued are answered ``400``.
    """
    size = _int_param(request, page_size_param, default_page_size, minimum=1)
    if max_page_size is not None:
        size = min(size, max_page_size)
    if style == "page":
        page = _int_param(request, page_param, first_page, minimum=first_page)
        start = (page - first_page) * size
        return {data_key: list(items[start : start + size]), "page": page, "total_pages": math.ceil(len(items) / size)}
    if style == "offset":
        start = _int_param(request, offset_param, 0, minimum=0)
        return {data_key: list(items[start : start + size]), "offset": start, "total": len(items)}
    if style == "cursor":
        cursor = request.param(cursor_param)
        start = _cursor_offset(cursor) if cursor else 0
        end = start + size
        return {data_key: list(items[start:end]), "next_cursor": _cursor_for(end) if end < len(items) else None}
    raise ValueError(f"paged(style={style!r}) is not one of 'page', 'offset', 'cursor'")


def _int_param(request: RecordedRequest, name: str, default: int, *, minimum: int) -> int:
    text = request.param(name)
    if text is None or text == "":
        return default
    try:
        value = int(text)
    except ValueError:
        raise ApiError(400, f"query parameter {name}={text!r} is not an integer") from None
    if value < minimum:
        raise ApiError(400, f"query parameter {name}={value} is below the minimum {minimum}")
    return value


def _cursor_for(offset: int) -> str:
    return base64.urlsafe_b64encode(f"offset:{offset}".encode()).decode().rstrip("=")


def _cursor_offset(cursor: str) -> int:
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        label, _, number = text.partition(":")
        if label == "offset" and number.isdigit():
            return int(number)
    except ValueError:
        pass
    raise ApiError(400, f"cursor {cursor!r} was not issued by this server; send back next_cursor as received")


DateFormat = str  # "iso", "epoch", or a strptime pattern such as "%Y-%m-%d %H:%M"


def dated(
    items: Iterable[Mapping[str, Any]],
    request: RecordedRequest,
    field: str,
    start_param: str = "start",
    end_param: str = "end",
    fmt: DateFormat = "iso",
    *,
    item_fmt: DateFormat | None = None,
) -> list[Mapping[str, Any]]:
    """The items whose ``field`` lies within ``[?start, ?end]``, both bounds inclusive.

    ``fmt`` says how the query bounds are written: ``"iso"`` (ISO 8601;
    ``Z`` or an offset; without one, UTC; a bare date means midnight),
    ``"epoch"`` (seconds, may be fractional) or a strptime pattern. Item
    values are read with ``item_fmt`` (default: ``fmt``); numbers are always
    epoch seconds and datetime objects are used as they are. A missing bound
    is open. When any bound is given, items without ``field`` are left out.
    A malformed bound is answered ``400``.
    """
    start = _bound(request, start_param, fmt)
    end = _bound(request, end_param, fmt)
    if start is None and end is None:
        return list(items)
    item_format = item_fmt or fmt
    kept = []
    for item in items:
        value = item.get(field)
        if value is None:
            continue
        instant = _instant(value, item_format)
        if (start is None or instant >= start) and (end is None or instant <= end):
            kept.append(item)
    return kept


def _bound(request: RecordedRequest, name: str, fmt: DateFormat) -> dt.datetime | None:
    text = request.param(name)
    if text is None or text == "":
        return None
    try:
        return _instant(text, fmt)
    except (ValueError, OverflowError, OSError):
        raise ApiError(400, f"query parameter {name}={text!r} is not a date in format {fmt!r}") from None


def _instant(value: Any, fmt: DateFormat) -> dt.datetime:
    if isinstance(value, bool):
        raise TypeError(f"{value!r} is not a date")
    if isinstance(value, (int, float)):
        return dt.datetime.fromtimestamp(value, dt.timezone.utc)
    if isinstance(value, dt.datetime):
        return _aware(value)
    if isinstance(value, dt.date):
        return dt.datetime(value.year, value.month, value.day, tzinfo=dt.timezone.utc)
    text = str(value).strip()
    if fmt == "epoch":
        return dt.datetime.fromtimestamp(float(text), dt.timezone.utc)
    if fmt == "iso":
        return _aware(dt.datetime.fromisoformat(text))
    return _aware(dt.datetime.strptime(text, fmt))


def _aware(moment: dt.datetime) -> dt.datetime:
    return moment.replace(tzinfo=dt.timezone.utc) if moment.tzinfo is None else moment


# -- pytest fixture ------------------------------------------------------------------------------


class ReportJobs:
    """A report-job API (asynchronous jobs) on a :class:`FakeApi`, under ``prefix``.

    ``POST {prefix}`` with a JSON body creates a job (``{"id": ..., "status": "pending"}``);
    ``GET {prefix}/{id}`` answers its status: ``pending`` for the first ``polls`` polls, then
    ``ready`` with ``urls`` (one download path) or, on the first attempt of a body whose
    ``account`` is in ``fail_once``, ``failed``; ``GET {prefix}/{id}/file`` serves the records
    ``records(body)`` gives, as CSV (``fmt="csv"``) or JSON lines; ``POST {prefix}/{id}/delete``
    deletes it. ``peak`` is the most jobs running at once (created, not yet answered as done),
    ``created`` every job body in order, ``deleted`` the deleted ids.
    """

    def __init__(self, records: Callable[[Mapping[str, Any]], list[dict]], *, fail_once: Iterable[str] = (),
                 polls: int = 1, fmt: Literal["csv", "jsonl"] = "csv", prefix: str = "/reports"):
        self.records = records
        self.fail_once = set(fail_once)
        self.polls = polls
        self.fmt = fmt
        self.prefix = prefix
        self.peak = 0
        self.running: set[str] = set()
        self.created: list[dict] = []
        self.deleted: list[str] = []
        self._jobs: dict[str, dict] = {}
        self._failed: set[str] = set()
        self._lock = threading.Lock()

    def reset(self) -> None:
        """Forget every job (ids start again at ``job1``, ``fail_once`` fails again): a new client's turn."""
        with self._lock:
            self.peak = 0
            self.running.clear()
            self.created.clear()
            self.deleted.clear()
            self._jobs.clear()
            self._failed.clear()

    def install(self, api: FakeApi) -> ReportJobs:
        api.route("POST", self.prefix, self._create)
        api.route("GET", self.prefix + "/{id}", self._poll)
        api.route("GET", self.prefix + "/{id}/file", self._file)
        api.route("POST", self.prefix + "/{id}/delete", self._delete)
        return self

    def _create(self, request: RecordedRequest) -> dict:
        body = request.json()
        with self._lock:
            job_id = f"job{len(self.created) + 1}"
            self.created.append(body)
            self._jobs[job_id] = {"body": body, "polls": 0}
            self.running.add(job_id)
            self.peak = max(self.peak, len(self.running))
        return {"id": job_id, "status": "pending"}

    def _poll(self, request: RecordedRequest) -> dict:
        job_id = request.path_params["id"]
        with self._lock:
            job = self._jobs.get(job_id)
            if job is None:
                raise ApiError(404, f"no job {job_id}")
            job["polls"] += 1
            if job["polls"] <= self.polls:
                return {"id": job_id, "status": "pending"}
            self.running.discard(job_id)
            account = str(job["body"].get("account"))
            if account in self.fail_once and account not in self._failed:
                self._failed.add(account)
                return {"id": job_id, "status": "failed"}
        return {"id": job_id, "status": "ready", "urls": [f"{self.prefix}/{job_id}/file"]}

    def _file(self, request: RecordedRequest) -> Reply:
        job = self._jobs[request.path_params["id"]]
        rows = self.records(job["body"])
        if self.fmt == "jsonl":
            return Reply(body=b"".join(orjson.dumps(row) + b"\n" for row in rows),
                         headers={"Content-Type": "application/jsonl"})
        names = list(rows[0]) if rows else ["id"]
        lines = [",".join(names)] + [",".join(str(row.get(name, "")) for name in names) for row in rows]
        return Reply(body="\n".join(lines) + "\n", headers={"Content-Type": "text/csv"})

    def _delete(self, request: RecordedRequest) -> dict:
        with self._lock:
            self.deleted.append(request.path_params["id"])
        return {"deleted": True}


@pytest.fixture
def fake_api() -> Iterator[FakeApi]:
    """A started :class:`FakeApi`, stopped after the test."""
    with FakeApi() as api:
        yield api
