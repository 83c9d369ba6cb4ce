"""A fake API whose tokens each have a quota of calls per window, with a GitHub-style ``/rate_limit``
(tests of RateLimitedMultipleTokenAuthenticator: tests/components/http/test_token_quotas.py and the parity test)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from fakes.api_server import RecordedRequest, Reply
from framework.components.http.request import HttpRequest
from framework.components.http.transport import FunctionTransport


class QuotaApi:
    """An API whose tokens each have ``limit`` calls per ``window`` (by the clock given), and a ``/rate_limit``
    that reports them GitHub's way; a spent token gets 429 with ``X-RateLimit-Remaining: 0``. ``used``
    is what other clients spent of a token already (the API's count, not the book's)."""

    def __init__(self, clock: Any, tokens: dict[str, int], window: float = 3600.0, unavailable: bool = False):
        self.clock = clock
        self.limits = dict(tokens)
        self.window = window
        self.unavailable = unavailable
        self.used: dict[str, int] = dict.fromkeys(tokens, 0)
        self.window_start = clock.now()
        self.sent: list[tuple[str, str]] = []  # (path, token) of every request
        self.status_reads = 0
        self.pages = 3  # records (one a page) of a data path served by :meth:`route`

    def _roll(self) -> None:
        if (self.clock.now() - self.window_start).total_seconds() >= self.window:
            self.window_start = self.clock.now()
            self.used = dict.fromkeys(self.used, 0)

    def reset(self) -> int:
        return int((self.window_start + timedelta(seconds=self.window)).timestamp())

    def answer(self, path: str, authorization: str | None) -> tuple[int, dict, Any]:
        self._roll()
        token = (authorization or "").removeprefix("token ")
        if token not in self.limits:
            return 401, {}, {"message": "Bad credentials"}
        self.sent.append((path, token))
        if path == "/rate_limit":
            self.status_reads += 1
            if self.unavailable:
                return 404, {}, {"message": "Rate limiting is not enabled."}
            left = self.limits[token] - self.used[token]
            return 200, {}, {"resources": {"core": {"remaining": left, "reset": self.reset(),
                                                    "limit": self.limits[token]}}}
        left = self.limits[token] - self.used[token]
        headers = {"X-RateLimit-Reset": str(self.reset())}
        if left <= 0 and not self.unavailable:
            return 429, {**headers, "X-RateLimit-Remaining": "0"}, {"message": "API rate limit exceeded"}
        self.used[token] += 1
        return 200, {**headers, "X-RateLimit-Remaining": str(left - 1)}, {"data": [{"path": path}]}

    def transport(self, base: str) -> FunctionTransport:
        """The API as a transport for the URLs under ``base``."""

        def handler(request: HttpRequest) -> tuple[int, dict, Any]:
            return self.answer(request.url.removeprefix(base), request.headers.get("Authorization"))
        return FunctionTransport(handler)

    def route(self, request: RecordedRequest) -> Reply:
        """A FakeApi handler: ``/rate_limit`` as :meth:`answer` says, data paths paged by ``?page=`` (pages 1 to
        ``pages`` hold one record each)."""
        status, headers, body = self.answer(request.path, request.headers.get("Authorization"))
        if status == 200 and request.path != "/rate_limit":
            page = int(request.param("page") or 1)
            body = {"data": [{"page": page, "path": request.path}] if page <= self.pages else []}
        return Reply(status, body, headers)
