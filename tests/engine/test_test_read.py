"""The recording transport of a test read (framework/engine/test_read.py): requests and responses kept whole,
secrets masked, a long body cut, a stopped read sending nothing more."""

from __future__ import annotations

import threading

import orjson
import pytest
from requests.structures import CaseInsensitiveDict

from framework.components.http.credentials import Credentials
from framework.components.http.request import HttpRequest
from framework.components.http.transport import HttpResponse
from framework.engine.test_read import BODY_LIMIT, RecordingTransport, Stopped
from framework.masking import Masker

MASK = Masker.of(["s3cret-value"])


class Fixed:
    def __init__(self, body: bytes, content_type: str = "application/json") -> None:
        self.body, self.content_type, self.sent = body, content_type, []

    def send(self, request, timeout=30.0, limits=None):
        self.sent.append(request)
        headers = CaseInsensitiveDict({"Content-Type": self.content_type, "X-Echo": "s3cret-value"})
        return HttpResponse(200, headers, self.body, request)


def test_the_request_and_response_are_kept_with_credentials_and_secrets_masked():
    inner = Fixed(orjson.dumps({"data": [1, 2]}))
    recorder = RecordingTransport(inner, MASK)
    request = HttpRequest("POST", "http://h/items", params=(("key", "s3cret-value"),),
                          headers={"Authorization": "Bearer abc", "X-Token": "tok-123", "Accept": "application/json"},
                          json={"filter": "s3cret-value"}, credentials=Credentials(headers=("X-Token",)))
    recorder.send(request)
    (kept,) = recorder.exchanges
    assert kept.method == "POST" and kept.url == "http://h/items?key=****"
    assert kept.request_headers == {"Authorization": "****", "X-Token": "****", "Accept": "application/json"}
    assert kept.request_body == '{\n  "filter": "****"\n}'
    assert kept.response_headers["X-Echo"] == "****" and kept.body == {"data": [1, 2]} and kept.text is None


def test_a_long_text_body_is_cut_and_marked():
    recorder = RecordingTransport(Fixed(b"x" * (BODY_LIMIT + 10), "text/plain"), MASK)
    recorder.send(HttpRequest("GET", "http://h/"))
    (kept,) = recorder.exchanges
    assert kept.truncated and len(kept.text) == BODY_LIMIT and kept.size == BODY_LIMIT + 10


def test_a_stopped_recorder_sends_nothing():
    inner = Fixed(b"{}")
    stop = threading.Event()
    recorder = RecordingTransport(inner, MASK, stop=stop)
    stop.set()
    with pytest.raises(Stopped):
        recorder.send(HttpRequest("GET", "http://h/"))
    assert inner.sent == [] and recorder.exchanges == []
