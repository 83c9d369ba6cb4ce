"""The builder's HTTP server: the page, its assets and the JSON API of :mod:`.session`, on the loopback address.

The standard library's ``ThreadingHTTPServer`` (no web framework: one local user, JSON over HTTP, a running
test read polled). Two guards keep other web pages the browser has open away from it: a request whose
``Host`` is not this server's address (DNS rebinding) and a request whose ``Origin`` is another site are
refused with 403. Nothing is logged per request: bodies carry the config.

Beyond the contract the page was written against: ``GET /api/test-read/<id>?since=N`` answers only the pages
after page N, so a long read's poll does not send its early pages again.
"""

from __future__ import annotations

import json
import mimetypes
import re
import sys
import threading
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from framework.builder.session import ApiError, Session

STATIC = Path(__file__).resolve().parent / "static"
_ASSET = re.compile(r"^[A-Za-z0-9_.-]+$")
_RUN = re.compile(r"^/api/test-read/([0-9]+)(/stop)?$")
#: the largest request body the API reads (a manifest and its config)
MAX_BODY = 16 * 1024 * 1024

_FALLBACK = b"""<!doctype html><meta charset="utf-8"><title>manifest-builder</title>
<p>The builder's page is not installed (framework/builder/static/index.html is missing); the API answers
under <code>/api/</code>.</p>
"""


class BuilderServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], session: Session) -> None:
        super().__init__(address, _Handler)
        self.session = session
        host = self.host
        port = self.server_address[1]
        self.hosts = {f"{name}:{port}" for name in (host, "127.0.0.1", "localhost", "[::1]")}
        self.loopback = host in ("127.0.0.1", "localhost", "::1")

    @property
    def host(self) -> str:
        host = self.server_address[0]
        return host.decode() if isinstance(host, bytes) else str(host)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.server_address[1]}/"


class _Handler(BaseHTTPRequestHandler):
    server: BuilderServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        pass  # nothing per request (see the module docs)

    # -- answers --------------------------------------------------------------------------------------

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.end_headers()
        self.wfile.write(body)

    def _json(self, status: int, value: Any) -> None:
        self._send(status, json.dumps(value, ensure_ascii=False, default=str).encode(), "application/json")

    def _error(self, status: int, message: str) -> None:
        self._json(status, {"error": message})

    def _allowed(self) -> bool:
        server = self.server
        if server.loopback and self.headers.get("Host", "") not in server.hosts:
            self._error(403, "this server answers requests to its own address only")
            return False
        origin = self.headers.get("Origin")
        if origin and origin != "null" and urlsplit(origin).netloc not in server.hosts | {
                self.headers.get("Host", "")}:
            self._error(403, f"requests from {origin} are refused: open the builder's own page")
            return False
        return True

    def _body(self) -> Mapping[str, Any]:
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            raise ApiError(413, f"the request is {length:,} bytes; the builder reads at most {MAX_BODY:,}")
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except ValueError as exc:
            raise ApiError(400, f"the request body is not JSON ({exc})") from None
        if not isinstance(body, dict):
            raise ApiError(400, "the request body must be a JSON object")
        return body

    def _answer(self, call: Any) -> None:
        try:
            self._json(200, call())
        except ApiError as exc:
            self._error(exc.status, str(exc))
        except Exception as exc:  # noqa: BLE001 - the page shows it; the server goes on
            message = self.server.session.mask()(f"{type(exc).__name__}: {exc}")
            print(f"manifest-builder: {self.command} {self.path} failed: {message}", file=sys.stderr)
            self._error(500, message)

    # -- routes ---------------------------------------------------------------------------------------

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        if not self._allowed():
            return
        path = urlsplit(self.path).path
        session = self.server.session
        if path in ("/", "/index.html"):
            index = STATIC / "index.html"
            self._send(200, index.read_bytes() if index.is_file() else _FALLBACK, "text/html; charset=utf-8")
        elif path.startswith("/static/"):
            name = path[len("/static/"):]
            asset = STATIC / name
            if not _ASSET.match(name) or not asset.is_file():
                self._error(404, f"no asset {name!r}")
                return
            kind = mimetypes.guess_type(name)[0] or "application/octet-stream"
            self._send(200, asset.read_bytes(), kind + ("; charset=utf-8" if kind.startswith("text/") or
                                                        kind.endswith("javascript") else ""))
        elif path == "/api/session":
            self._answer(session.session)
        elif (found := _RUN.match(path)) and not found.group(2):
            since = parse_qs(urlsplit(self.path).query).get("since", ["0"])[0]
            self._answer(lambda: session.run(found.group(1)).as_json(int(since) if since.isdigit() else 0))
        else:
            self._error(404, f"no such page: GET {path}")

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        if not self._allowed():
            return
        path = urlsplit(self.path).path
        session = self.server.session
        routes = {"/api/validate": session.validate, "/api/test-read": session.test_read,
                  "/api/infer": session.infer, "/api/accept-schema": session.accept_schema,
                  "/api/save": session.save}
        try:
            body = self._body()
        except ApiError as exc:
            self._error(exc.status, str(exc))
            return
        if path in routes:
            self._answer(lambda: routes[path](body))
        elif (found := _RUN.match(path)) and found.group(2):
            self._answer(lambda: {"status": session.run(found.group(1)).stop()})
        else:
            self._error(404, f"no such API: POST {path}")


def start(session: Session, host: str = "127.0.0.1", port: int = 0) -> tuple[BuilderServer, threading.Thread]:
    """The server for ``session``, serving in a background thread (port 0: a free one)."""
    server = BuilderServer((host, port), session)
    thread = threading.Thread(target=server.serve_forever, args=(0.1,), name="manifest-builder", daemon=True)
    thread.start()
    return server, thread


__all__ = ["MAX_BODY", "STATIC", "BuilderServer", "start"]
