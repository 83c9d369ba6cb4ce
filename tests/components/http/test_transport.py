"""RequestsTransport on the real network stack: environment settings (proxies, NO_PROXY, .netrc) still apply,
though they are read once per host rather than on every request."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from framework.components.http.request import HttpRequest
from framework.components.http.transport import RequestsTransport


class _Recorder(ThreadingHTTPServer):
    def __init__(self, body: bytes):
        self.seen: list[tuple[str, str | None]] = []
        self.body = body
        super().__init__(("127.0.0.1", 0), _Handler)


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - the http.server API
        self.server.seen.append((self.path, self.headers.get("Authorization")))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(self.server.body)))
        self.end_headers()
        self.wfile.write(self.server.body)

    def log_message(self, *args: object) -> None:
        return


@pytest.fixture
def servers():
    started = [_Recorder(b'{"from": "proxy"}'), _Recorder(b'{"from": "origin"}')]
    threads = [threading.Thread(target=s.serve_forever, daemon=True) for s in started]
    for thread in threads:
        thread.start()
    yield started
    for server in started:
        server.shutdown()
        server.server_close()


def _get(url: str) -> HttpRequest:
    return HttpRequest(method="GET", url=url)


def test_an_http_proxy_from_the_environment_is_used(servers, monkeypatch):
    proxy, origin = servers
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.server_port}")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    transport = RequestsTransport()
    for _ in range(2):
        assert transport.send(_get("http://api.example.invalid/items?page=1")).json() == {"from": "proxy"}
    assert [path for path, _ in proxy.seen] == ["http://api.example.invalid/items?page=1"] * 2  # absolute form


def test_no_proxy_hosts_go_direct(servers, monkeypatch):
    proxy, origin = servers
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.server_port}")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    response = RequestsTransport().send(_get(f"http://127.0.0.1:{origin.server_port}/items"))
    assert response.json() == {"from": "origin"} and proxy.seen == []


def test_netrc_credentials_are_sent_unless_the_request_has_its_own(servers, monkeypatch, tmp_path):
    _, origin = servers
    netrc = tmp_path / "netrc"
    netrc.write_text("machine 127.0.0.1 login reader password pw\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    transport = RequestsTransport()
    url = f"http://127.0.0.1:{origin.server_port}/items"
    transport.send(_get(url))
    transport.send(HttpRequest(method="GET", url=url, headers=(("Authorization", "Bearer own"),)))
    assert [auth for _, auth in origin.seen] == ["Basic cmVhZGVyOnB3", "Bearer own"]


def test_a_streamed_response_is_read_only_when_asked_with_content_encoding_undone():
    import gzip

    from fakes.api_server import FakeApi, Reply

    body = b'{"id": 1}\n' * 50_000
    with FakeApi() as api:
        api.route("GET", "/export", Reply(200, gzip.compress(body), {"Content-Encoding": "gzip"}))
        api.route("GET", "/missing", Reply(404, {"error": "no such export"}))
        transport = RequestsTransport()
        response = transport.send(HttpRequest("GET", api.url + "/export", stream=True))
        assert response.status == 200 and response._content is None  # nothing read yet
        stream = response.body()
        assert stream.read(10) == b'{"id": 1}\n'
        assert len(stream.read()) == len(body) - 10
        stream.close()
        failed = transport.send(HttpRequest("GET", api.url + "/missing", stream=True))
        assert failed.status == 404 and "no such export" in failed.text  # an error handler may read it whole
        unread = transport.send(HttpRequest("GET", api.url + "/export", stream=True))
        unread.close()  # let go without reading: the next request still gets an answer
        assert transport.send(HttpRequest("GET", api.url + "/missing")).status == 404


def test_a_connection_that_breaks_while_a_streamed_body_is_read_is_a_transport_error():
    import requests

    from framework.components.http.transport import _streamed_body
    from framework.errors import TransportError

    class Broken(requests.Response):
        closed_by_us = False

        def iter_content(self, chunk_size=1, decode_unicode=False):
            yield b'{"id": 1}\n'
            raise requests.exceptions.ChunkedEncodingError("Connection broken: IncompleteRead")

        def close(self):
            Broken.closed_by_us = True

    body = _streamed_body(Broken())
    assert body.readline() == b'{"id": 1}\n'
    with pytest.raises(TransportError, match="while the response body was read: Connection broken"):
        body.read()
    body.close()
    assert Broken.closed_by_us
