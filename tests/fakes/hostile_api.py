"""An HTTP API that answers with what hurts a client: bodies too large, compressed ones that unpack to far
more, bodies that arrive one byte at a time.

Paths (each answer counts in :attr:`HostileApi.hits`, by path)::

    /bomb?mib=N      gzip of N MiB of zeros (a few KiB per 100 MiB on the wire), Content-Encoding: gzip
    /page?records=N  {"data": [N records of about 100 bytes], "next": null}, sent in pieces
    /drip?seconds=S  a JSON body of S bytes, one byte a second (Content-Length given, so the client waits)
    /ok              {"data": [{"id": 1}]}

The gzip bomb is made once per size and cached (zeros compress about 1000:1). The server listens on
127.0.0.1 in a daemon thread; use it as a context manager.
"""

from __future__ import annotations

import functools
import threading
import time
import zlib
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Self
from urllib.parse import parse_qs, urlsplit


@functools.lru_cache(maxsize=4)
def gzip_of_zeros(mib: int) -> bytes:
    """A gzip stream that unpacks to ``mib`` MiB of zero bytes."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = bytes(1 << 20)
    parts = [packer.compress(block) for _ in range(mib)]
    parts.append(packer.flush())
    return b"".join(parts)


def page_piece(first: int, count: int) -> bytes:
    return b",".join(b'{"id":%d,"name":"record %d","padding":"%s"}' % (i, i, b"x" * 60)
                     for i in range(first, first + count))


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
        pass

    def do_GET(self) -> None:  # noqa: N802 - the base class's name
        parts = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        with self.server.lock:
            self.server.hits[parts.path] += 1
        try:
            if parts.path == "/bomb":
                body = gzip_of_zeros(int(query.get("mib", "100")))
                self._head(len(body), {"Content-Encoding": "gzip"})
                self.wfile.write(body)
            elif parts.path == "/page":
                self._page(int(query.get("records", "1000")))
            elif parts.path == "/drip":
                seconds = int(query.get("seconds", "30"))
                self._head(seconds)
                sent = 0
                try:
                    for _ in range(seconds):
                        self.wfile.write(b" ")
                        self.wfile.flush()
                        sent += 1
                        time.sleep(1.0)
                finally:  # how much of the body went out before the client hung up (or all of it)
                    with self.server.lock:
                        self.server.drips.append(sent)
                    self.server.drip_ended.set()
            else:
                body = b'{"data": [{"id": 1}]}'
                self._head(len(body))
                self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _head(self, length: int, extra: dict[str, str] | None = None) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(length))
        for name, value in (extra or {}).items():
            self.send_header(name, value)
        self.end_headers()

    def _page(self, records: int) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

        def chunk(data: bytes) -> None:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

        chunk(b'{"meta": {"count": %d}, "data": [' % records)
        step = 10_000
        for first in range(0, records, step):
            piece = page_piece(first, min(step, records - first))
            chunk((b"," if first else b"") + piece)
        chunk(b'], "next": null}')
        self.wfile.write(b"0\r\n\r\n")


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    lock: threading.Lock
    hits: Counter[str]
    drips: list[int]
    drip_ended: threading.Event


class HostileApi:
    def __init__(self) -> None:
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.lock = threading.Lock()
        self._server.hits = Counter()
        self._server.drips = []
        self._server.drip_ended = threading.Event()
        self.port = self._server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True, name="hostile-api")

    @property
    def hits(self) -> Counter[str]:
        return self._server.hits

    def drip_sent(self, wait: float = 30.0) -> int:
        """The bytes the last /drip answer sent before it ended (its client hung up, or the body was whole);
        waits up to ``wait`` seconds for one to end."""
        self._server.drip_ended.wait(wait)
        with self._server.lock:
            return self._server.drips[-1] if self._server.drips else -1

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def main() -> None:
    """Serve until interrupted, printing the URL: for measuring a real sync against it."""
    with HostileApi() as api:
        print(api.url, flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
