"""Responses between the user's code and the runtime: Airbyte's classes read :class:`requests.Response`.

:func:`requests_response_of` shows the runtime's response to a custom component
as a :class:`requests.Response` (its ``json()`` the runtime's, decoded once);
:func:`http_response_of` takes one a component made back as the runtime's.
"""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

import orjson
import requests
from requests.structures import CaseInsensitiveDict
from requests.utils import get_encoding_from_headers

from framework.components.http.request import HttpRequest
from framework.components.http.transport import HttpResponse

__all__ = ["http_response_of", "requests_response_of"]


class _Response(requests.Response):
    """A :class:`requests.Response` whose ``json()`` is the runtime's (decoded once, with orjson)."""

    _ours: HttpResponse

    def json(self, **kwargs: Any) -> Any:
        if kwargs:
            return super().json(**kwargs)
        try:
            return self._ours.json()
        except ValueError as exc:
            raise requests.JSONDecodeError(str(exc), self.text, 0) from None


def requests_response_of(response: HttpResponse) -> requests.Response:
    """``response`` as a :class:`requests.Response` (made once per response, however many components read it)."""
    cached = response.__dict__.get("_as_requests")
    if cached is not None:
        return cached
    out = _Response()
    out._ours = response
    out.status_code = response.status
    out.headers = CaseInsensitiveDict(response.headers)
    out._content = response.content
    out.encoding = get_encoding_from_headers(out.headers) or "utf-8"
    request = response.request
    out.url = request.full_url()
    try:
        out.reason = HTTPStatus(response.status).phrase
    except ValueError:
        out.reason = ""
    prepared = requests.PreparedRequest()
    prepared.method = request.method
    prepared.url = out.url
    prepared.headers = CaseInsensitiveDict(request.headers)
    prepared.body = orjson.dumps(request.json) if request.json is not None else request.data
    out.request = prepared
    response.__dict__["_as_requests"] = out
    return out


def http_response_of(response: requests.Response) -> HttpResponse:
    """A :class:`requests.Response` (from user code) as the runtime's response."""
    sent = response.request
    request = HttpRequest(sent.method or "GET", sent.url or response.url or "", headers=dict(sent.headers or {}))
    return HttpResponse(response.status_code, CaseInsensitiveDict(response.headers), response.content, request)
