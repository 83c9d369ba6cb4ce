"""The transport: the one place where requests leave the process.

Everything above it works with :class:`HttpRequest` and :class:`HttpResponse`
values, so tests can replace the network with a function
(:class:`FunctionTransport`) and the real one (:class:`RequestsTransport`) is
a thin adapter over a ``requests`` session per thread (connection reuse).
Connection failures and timeouts are raised as
:class:`~framework.errors.TransportError`; status codes are not errors here.
"""

from __future__ import annotations

import io
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any, BinaryIO, Protocol, cast
from urllib.parse import urlsplit

import orjson
import requests
import requests.utils
from requests.structures import CaseInsensitiveDict

from framework.components.http.circuit import ConnectError
from framework.components.http.credentials import Credentials, keeps_credentials, strip_body, strip_params
from framework.components.http.request import HttpRequest
from framework.components.http.response_limits import REAPER, ResponseLimits, deadline_message, too_large
from framework.errors import ReadError, TransportError

DEFAULT_TIMEOUT = 60.0  # seconds, for connecting and for each read
DEFAULT_LIMITS = ResponseLimits()  # the cap on a body read whole and the deadline of one attempt

_UNSET: Any = object()


class HttpResponse:
    """A response: status, headers (looked up without regard to case) and the raw body;
    ``json()`` decodes once, with orjson.

    A streamed response (``content`` None, ``stream`` a binary file) reads its body only
    when asked: :meth:`body` hands the stream itself to one reader (a streamed response
    format), while ``content`` reads it whole first (an error handler that looks at the
    body, say), so a body is never held twice.
    """

    def __init__(self, status: int, headers: CaseInsensitiveDict[str], content: bytes | None, request: HttpRequest,
                 _json: Any = _UNSET, *, stream: BinaryIO | None = None, oversized: bool = False) -> None:
        self.status = status
        self.oversized = oversized  # a body past the size cap, handed on as a stream (ResponseLimits.stream_oversized)
        self.headers = headers
        self.request = request
        self._content = content if content is not None or stream is not None else b""
        self._json = _json
        self._stream = stream

    def __repr__(self) -> str:
        return f"HttpResponse(status={self.status}, request={self.request.describe()!r})"

    @property
    def content(self) -> bytes:
        content = self._content
        if content is None:
            stream = self._stream
            if stream is None:
                raise RuntimeError("the streamed body of this response was read already")
            try:
                content = self._content = stream.read()
            finally:
                self._stream = None
                stream.close()
        return content

    def body(self) -> BinaryIO:
        """The body as a binary file, for one reader: the stream itself when it was not read yet."""
        stream = self._stream
        if stream is not None and self._content is None:
            self._stream = None
            return stream
        return io.BytesIO(self.content)

    def close(self) -> None:
        """Let go of a streamed body that will not be read (the connection goes back to its pool)."""
        stream, self._stream = self._stream, None
        if stream is not None:
            stream.close()

    def decoded_as(self, document: Any) -> Any:
        """Keep ``document`` as this body's JSON (read another way than orjson's) and answer it."""
        self._json = document
        return document

    def with_json(self, document: Any) -> HttpResponse:
        """The same response whose ``json()`` is ``document`` (what a paginator reads of a non-JSON format)."""
        view = HttpResponse(self.status, self.headers, self._content, self.request, document)
        view._stream = self._stream
        return view

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", errors="replace")

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 400

    def json(self) -> Any:
        """The body as JSON; raises ``orjson.JSONDecodeError`` (a ValueError) when it is not."""
        if self._json is _UNSET:
            self._json = orjson.loads(self.content) if self.content.strip() else None
        return self._json


class Transport(Protocol):
    """Sends one request and returns its response, whatever the status."""

    def send(self, request: HttpRequest, timeout: float = DEFAULT_TIMEOUT,
             limits: ResponseLimits = DEFAULT_LIMITS) -> HttpResponse: ...


class RequestsTransport:
    """The real network, through ``requests`` (one session per thread, so connections are reused)."""

    def __init__(self) -> None:
        self._local = threading.local()

    def _session(self) -> _Session:
        session = getattr(self._local, "session", None)
        if session is None:
            session = self._local.session = _Session()
            # requests reads proxies, CA bundle and .netrc from the environment on every request (a few per
            # cent of a fast read); we read them once per scheme and host instead (see _environment).
            session.trust_env = False
            self._local.environment = {}
        return session

    def _environment(self, url: str) -> tuple[dict[str, str], bool | str, tuple[str, str] | None]:
        """Proxies, ``verify`` and .netrc auth from the environment for ``url``'s scheme and host, as
        requests would find them (``HTTPS_PROXY``, ``NO_PROXY``, ``REQUESTS_CA_BUNDLE``, ``~/.netrc``)."""
        parts = urlsplit(url)
        key = (parts.scheme, parts.netloc)
        found = self._local.environment.get(key)
        if found is None:
            base = f"{parts.scheme}://{parts.netloc}/"
            proxies = requests.utils.get_environ_proxies(base)
            verify = os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE") or True
            found = self._local.environment[key] = (proxies, verify, requests.utils.get_netrc_auth(base))
        return found

    def send(self, request: HttpRequest, timeout: float = DEFAULT_TIMEOUT,
             limits: ResponseLimits = DEFAULT_LIMITS) -> HttpResponse:
        started = time.monotonic()
        timeout = min(timeout, limits.deadline)  # no single wait may outlast the whole attempt's deadline
        body: Any = None
        headers = dict(request.headers)
        if request.json is not None:
            body = orjson.dumps(request.json)
            headers.setdefault("Content-Type", "application/json")
        elif request.data is not None:
            body = request.data
        try:
            session = self._session()
            session.sending = request
            proxies, verify, netrc_auth = self._environment(request.url)
            auth = netrc_auth if netrc_auth is not None and "Authorization" not in headers else None
            raw = session.request(
                request.method, request.url, params=list(request.params) or None,
                headers=headers, data=body, timeout=timeout, proxies=proxies, verify=verify, auth=auth,
                stream=True,
            )
            # requests' own `content` reads a body 10 KiB at a time (30 reads for a page of 300 KB); read it
            # in large pieces instead, through the same iter_content (so its errors are requests' as before)
            content = None if request.stream else _read_whole(raw, limits, started)
            if isinstance(content, _Oversized):
                return HttpResponse(raw.status_code, raw.headers, None, request, oversized=True,
                                    stream=cast(BinaryIO, io.BufferedReader(content.body, STREAM_CHUNK)))
        except (requests.exceptions.InvalidHeader, UnicodeEncodeError) as exc:
            raise ReadError(_invalid_header(headers, exc), failure_type="config_error") from None
        except (requests.exceptions.MissingSchema, requests.exceptions.InvalidSchema,
                requests.exceptions.InvalidURL) as exc:
            # A malformed URL or header never gets better by retrying: say what to fix, at once.
            raise ReadError(f"the request is invalid: {_reason(exc)}; check `url_base` and `path` in the manifest "
                            "and the URL values in the config (a URL needs http:// or https://)",
                            failure_type="config_error") from None
        except requests.exceptions.ConnectTimeout:
            raise ConnectError(f"could not connect: no answer within {timeout:g} s") from None
        except (requests.exceptions.Timeout, requests.exceptions.ConnectionError) as exc:
            if time.monotonic() - started >= limits.deadline:  # the wait was cut short by the deadline
                raise TransportError(deadline_message(limits)) from None
            if isinstance(exc, requests.exceptions.Timeout):
                raise TransportError(f"the request timed out after {timeout:g} s ({type(exc).__name__})") from None
            if isinstance(exc, requests.exceptions.ProxyError) or not _never_connected(exc):
                raise TransportError(f"could not connect: {_reason(exc)}") from None
            raise ConnectError(f"could not connect: {_reason(exc)}") from None
        except requests.exceptions.RequestException as exc:
            raise TransportError(f"the request failed: {_reason(exc)}") from None
        except _DeadlinePassed:
            raise TransportError(deadline_message(limits)) from None
        if request.stream:
            return HttpResponse(raw.status_code, raw.headers, None, request, stream=_streamed_body(raw))
        return HttpResponse(raw.status_code, raw.headers, content, request)


#: The headers a request made only of credentials (a token or login request) keeps on a redirect to another
#: origin.
_PLAIN_HEADERS = frozenset({"accept", "accept-encoding", "user-agent", "connection", "content-type",
                            "content-length"})


class _Session(requests.Session):
    """A ``requests`` session whose redirects to another origin (scheme, host or port) drop every credential
    the authenticator put into the request (see :mod:`framework.components.http.credentials`), not only
    ``Authorization`` as requests does."""

    sending: HttpRequest | None = None  # the request being sent by this session's thread

    def rebuild_auth(self, prepared_request: requests.PreparedRequest, response: requests.Response) -> None:
        request = self.sending
        if request is None:  # pragma: no cover - every request goes through RequestsTransport.send
            super().rebuild_auth(prepared_request, response)
            return
        credentials = request.credentials or Credentials()
        url = prepared_request.url or ""
        if keeps_credentials(credentials, request.url, url):
            return
        headers = prepared_request.headers
        if credentials.everything:
            dropped = {name for name in headers if name.lower() not in _PLAIN_HEADERS}
        else:
            names = credentials.header_names() | {"authorization", "proxy-authorization", "cookie"}
            dropped = {name for name in headers if name.lower() in names}
        for name in dropped:
            del headers[name]
        prepared_request.url = strip_params(url, credentials)
        if prepared_request.body is not None and (credentials.everything or credentials.data or credentials.json):
            json_body, data_body = strip_body(request.json, request.data, credentials)
            headers.pop("Content-Length", None)
            if json_body is not None:
                prepared_request.prepare_body(orjson.dumps(json_body), None)
            elif data_body is not None:
                prepared_request.prepare_body(data_body, None)
            else:
                prepared_request.body = None
                headers.pop("Content-Type", None)
                headers.pop("Transfer-Encoding", None)


STREAM_CHUNK = 1 << 16  # bytes read from the socket at a time for a streamed body
BODY_CHUNK = 1 << 20  # bytes read at a time for a body read whole


class _DeadlinePassed(Exception):
    """The reaper ended the connection: the attempt's deadline passed while its body was read."""


class _Oversized:
    """A body past the cap that is to be streamed: what was read of it, and the rest to come."""

    def __init__(self, body: _BodyStream) -> None:
        self.body = body


def _read_whole(raw: requests.Response, limits: ResponseLimits, started: float) -> bytes | _Oversized:
    """The body of ``raw``, decompressed, at most ``limits.max_bytes`` of it and within ``limits.deadline``
    of ``started``: past the cap :class:`ResponseTooLargeError`, past the deadline :class:`_DeadlinePassed`.

    Counted on the decoded chunks as they arrive (urllib3 decompresses at most one chunk's worth at a time),
    so a small compressed body that unpacks to gigabytes stops at the cap."""
    declared = raw.headers.get("Content-Length", "")
    if declared.isdigit() and int(declared) > limits.max_bytes and not raw.headers.get("Content-Encoding") \
            and not limits.stream_oversized:
        raw.close()
        raise too_large(limits)
    if time.monotonic() - started > limits.deadline:
        raw.close()
        raise _DeadlinePassed()
    expired = threading.Event()

    def cut() -> None:
        expired.set()
        _shut(raw)

    ticket = REAPER.register(started + limits.deadline, cut)
    chunks: list[bytes] = []
    size = 0
    try:
        pieces = raw.iter_content(BODY_CHUNK)
        for chunk in pieces:
            size += len(chunk)
            if size > limits.max_bytes:
                if limits.stream_oversized:
                    chunks.append(chunk)
                    return _Oversized(_BodyStream(raw, pieces, chunks))
                raw.close()
                raise too_large(limits)
            chunks.append(chunk)
    except (requests.exceptions.RequestException, OSError, ValueError, AttributeError):
        if expired.is_set():
            raw.close()
            raise _DeadlinePassed() from None
        raise
    finally:
        REAPER.cancel(ticket)
    if expired.is_set():
        raw.close()
        raise _DeadlinePassed()
    return b"".join(chunks)


def _shut(raw: requests.Response) -> None:
    """End ``raw``'s connection from another thread, so that a read blocked on it returns at once."""
    connection = getattr(raw.raw, "_connection", None) or getattr(raw.raw, "connection", None)
    sock = getattr(connection, "sock", None)
    if sock is None:
        fp = getattr(getattr(raw.raw, "_fp", None), "fp", None)
        sock = getattr(getattr(fp, "raw", None), "_sock", None)
    if sock is not None:
        sock.shutdown(socket.SHUT_RDWR)


class _BodyStream(io.RawIOBase):
    """A streamed ``requests`` body as a raw binary file: ``Content-Encoding`` undone, the network's
    failures raised as :class:`~framework.errors.TransportError`, the connection released on close."""

    def __init__(self, raw: requests.Response, chunks: Iterator[bytes] | None = None,
                 read: list[bytes] | None = None) -> None:
        super().__init__()
        self._raw = raw
        self._chunks: Iterator[bytes] = raw.iter_content(STREAM_CHUNK) if chunks is None else chunks
        self._read = read or []  # what was read already (an oversized body's first pieces), handed out first
        self._read.reverse()
        self._left = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        left = self._left
        while not left and self._read:
            left = self._read.pop()
        while not left:
            try:
                left = next(self._chunks, b"")
            except requests.exceptions.RequestException as exc:
                raise TransportError(f"the connection failed while the response body was read: {_reason(exc)}",
                                     failure_type="transient_error") from None
            if not left:
                return 0
        size = min(len(buffer), len(left))
        buffer[:size] = left[:size]
        self._left = left[size:]
        return size

    def close(self) -> None:
        if not self.closed:
            self._raw.close()
        super().close()


def _streamed_body(raw: requests.Response) -> BinaryIO:
    return cast(BinaryIO, io.BufferedReader(_BodyStream(raw), STREAM_CHUNK))


def _invalid_header(headers: Mapping[str, Any], exc: BaseException) -> str:
    """What is wrong with a header requests refused, naming the header but never showing its value
    (it is often a credential)."""
    for name, value in headers.items():
        text = value.decode("latin-1") if isinstance(value, bytes) else str(value)
        if any(ord(char) > 255 for char in text):
            return (f"the value of the header `{name}` has characters HTTP headers cannot carry (outside "
                    "Latin-1); check the config value it comes from (a token is usually plain ASCII), or encode "
                    "it in the manifest's template (`| base64encode`, say) if the API expects that")
        if text != text.strip() or "\n" in text or "\r" in text:
            what = ("ends with a line break" if text.rstrip(" \t") != text.rstrip() else
                    "has a line break" if "\n" in text or "\r" in text else "starts or ends with whitespace")
            return (f"the value of the header `{name}` {what}, which HTTP does not allow; it usually comes from a "
                    "config value written with a trailing newline (`echo` adds one): remove the whitespace from "
                    "the config value (or the manifest's template)")
    return f"a header is invalid ({type(exc).__name__}); check the headers the manifest sets"


def _reason(exc: BaseException) -> str:
    # requests wraps urllib3 errors several levels deep; the innermost says what happened.
    inner: BaseException = exc
    while inner.args and isinstance(inner.args[0], BaseException):
        inner = inner.args[0]
    reason = getattr(inner, "reason", None)
    text = str(reason if reason is not None else inner)
    # urllib3 puts the connection object's repr in front of the reason
    return text.split(">: ", 1)[-1] if ">: " in text else text


def _never_connected(exc: BaseException) -> bool:
    """Whether a requests ConnectionError is a connection that was never made (refused, no such host), as
    opposed to one that broke after the request went out (reset, remote closed)."""
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            break
        name = type(seen).__name__
        if name in ("NewConnectionError", "NameResolutionError", "ConnectionRefusedError", "gaierror"):
            return True
        seen = seen.__cause__ or seen.__context__ or (seen.args[0] if seen.args and isinstance(seen.args[0],
                                                                                             BaseException) else None)
        reason = getattr(seen, "reason", None)
        if isinstance(reason, BaseException) and type(reason).__name__ in ("NewConnectionError",
                                                                             "NameResolutionError"):
            return True
    return "Connection refused" in str(exc) or "Name or service not known" in str(exc)


class FunctionTransport:
    """A transport made of a function: the test seam. ``handler(request)`` returns
    ``(status, headers, body)`` with ``body`` as bytes, text or JSON-able data,
    or raises :class:`~framework.errors.TransportError`."""

    def __init__(self, handler: Callable[[HttpRequest], tuple[int, Mapping[str, str], Any]]):
        self.handler = handler
        self.requests: list[HttpRequest] = []

    def send(self, request: HttpRequest, timeout: float = DEFAULT_TIMEOUT,
             limits: ResponseLimits = DEFAULT_LIMITS) -> HttpResponse:
        self.requests.append(request)
        status, headers, body = self.handler(request)
        if isinstance(body, str):
            content = body.encode()
        elif isinstance(body, (bytes, bytearray)):
            content = bytes(body)
        else:
            content = orjson.dumps(body)
        if len(content) > limits.max_bytes and not request.stream:
            if not limits.stream_oversized:
                raise too_large(limits)
            return HttpResponse(status, CaseInsensitiveDict(headers), None, request, stream=io.BytesIO(content),
                                oversized=True)
        if request.stream:  # as the network would: the body read from a stream
            return HttpResponse(status, CaseInsensitiveDict(headers), None, request, stream=io.BytesIO(content))
        return HttpResponse(status, CaseInsensitiveDict(headers), content, request)


__all__ = [
    "DEFAULT_LIMITS",
    "DEFAULT_TIMEOUT",
    "FunctionTransport",
    "HttpResponse",
    "RequestsTransport",
    "Transport",
]
