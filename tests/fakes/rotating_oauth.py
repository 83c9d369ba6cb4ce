"""An OAuth provider with rotating refresh tokens and short-lived access tokens, on a :class:`FakeApi`.

Each refresh (``POST /oauth/token``, grant ``refresh_token``) must present the
current refresh token; it is then invalidated and a new one issued with a new
access token (``at-<n>``, ``rt-<n>``). Access tokens stop working ``lifetime``
seconds after they were issued (the API answers 401); the token response
announces ``expires_in`` (by default the true lifetime; a larger value makes
tokens expire unannounced, mid-sync). Every refresh is recorded (when, with
which refresh token, whether it was accepted) so tests can count them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fakes.api_server import FakeApi, RecordedRequest, Reply


@dataclass(frozen=True)
class Refresh:
    at: float
    presented: str | None
    accepted: bool
    issued: str | None  # the access token issued


class RotatingOAuth:
    def __init__(self, api: FakeApi, *, lifetime: float, announced: float | None = None,
                 first_refresh_token: str = "rt-0", client_secret: str = "cs-secret"):
        self.lifetime = lifetime
        self.announced = announced if announced is not None else lifetime
        self.refresh_token = first_refresh_token
        self.client_secret = client_secret
        self.issued: dict[str, float] = {}  # access token -> when issued
        self.refreshes: list[Refresh] = []
        self.rejected_calls = 0  # data requests answered 401
        self._lock = threading.Lock()
        self._count = 0
        api.route("POST", "/oauth/token", self._token)

    @property
    def accepted(self) -> list[Refresh]:
        return [r for r in self.refreshes if r.accepted]

    def _token(self, request: RecordedRequest) -> Reply:
        form = request.form()
        with self._lock:
            presented = form.get("refresh_token")
            ok = (form.get("grant_type") == "refresh_token" and presented == self.refresh_token
                  and form.get("client_secret") == self.client_secret)
            if not ok:
                self.refreshes.append(Refresh(time.time(), presented, False, None))
                return Reply(400, {"error": "invalid_grant"})
            self._count += 1
            access, self.refresh_token = f"at-{self._count}", f"rt-{self._count}"
            self.issued[access] = time.time()
            self.refreshes.append(Refresh(time.time(), presented, True, access))
            return Reply(200, {"access_token": access, "refresh_token": self.refresh_token,
                               "expires_in": self.announced, "token_type": "Bearer"})

    def valid(self, request: RecordedRequest) -> bool:
        header = request.headers.get("Authorization") or ""
        token = header.removeprefix("Bearer ")
        with self._lock:
            issued = self.issued.get(token)
            return issued is not None and time.time() - issued < self.lifetime

    def guard(self, answer: Callable[[RecordedRequest], Any]) -> Callable[[RecordedRequest], Any]:
        """``answer`` behind the access token check: 401 for a missing, unknown or expired token."""

        def guarded(request: RecordedRequest) -> Any:
            if not self.valid(request):
                with self._lock:
                    self.rejected_calls += 1
                return Reply(401, {"error": "invalid_token"})
            return answer(request)

        return guarded

    def refreshes_while_valid(self) -> list[Refresh]:
        """Accepted refreshes made while the access token issued before still worked and was not yet due:
        refreshes that a shared token would not have made (the renewal margin is half the announced life)."""
        found = []
        accepted = self.accepted
        for before, after in zip(accepted, accepted[1:], strict=False):
            started = self.issued[before.issued or ""]
            if after.at - started < min(self.lifetime, self.announced / 2) * 0.9:
                found.append(after)
        return found


#: A manifest whose two streams share one OAuth definition with a rotating refresh token; ``items`` reads
#: 8 shards (8 Spark tasks), 5 pages each, ``others`` one page. Config: base_url, client_secret, credentials.
MANIFEST = """
version: 6.7.0
type: DeclarativeSource
check: {type: CheckStream, stream_names: [others]}
definitions:
  auth:
    type: OAuthAuthenticator
    token_refresh_endpoint: "{{ config['base_url'] }}/oauth/token"
    client_id: cid
    client_secret: "{{ config['client_secret'] }}"
    refresh_token_updater: {}
  requester:
    type: HttpRequester
    url_base: "{{ config['base_url'] }}"
    http_method: GET
    authenticator: {$ref: "#/definitions/auth"}
  selector: {type: RecordSelector, extractor: {type: DpathExtractor, field_path: [data]}}
  schema:
    type: InlineSchemaLoader
    schema: {type: object, properties: {id: {type: integer}, shard: {type: string}}}
streams:
  - type: DeclarativeStream
    name: items
    primary_key: [shard, id]
    schema_loader: {$ref: "#/definitions/schema"}
    retriever:
      type: SimpleRetriever
      requester: {$ref: "#/definitions/requester", path: "/items/{{ stream_partition.shard }}"}
      record_selector: {$ref: "#/definitions/selector"}
      partition_router: {type: ListPartitionRouter, values: [a, b, c, d, e, f, g, h], cursor_field: shard}
      paginator:
        type: DefaultPaginator
        pagination_strategy: {type: PageIncrement, page_size: 10, start_from_page: 1}
        page_token_option: {type: RequestOption, inject_into: request_parameter, field_name: page}
        page_size_option: {type: RequestOption, inject_into: request_parameter, field_name: per_page}
  - type: DeclarativeStream
    name: others
    primary_key: id
    schema_loader: {$ref: "#/definitions/schema"}
    retriever:
      type: SimpleRetriever
      requester: {$ref: "#/definitions/requester", path: /others}
      record_selector: {$ref: "#/definitions/selector"}
"""

SHARDS = "abcdefgh"
PER_SHARD = 45


def serve_items(api: FakeApi, provider: RotatingOAuth, page_seconds: float) -> None:
    """``/items/{shard}`` (45 records in pages of 10, each page taking ``page_seconds``) and ``/others``."""
    from fakes.api_server import paged

    def items(request: RecordedRequest) -> Any:
        time.sleep(page_seconds)
        shard = request.path_params["shard"]
        return paged([{"id": i, "shard": shard} for i in range(PER_SHARD)], request, style="page")

    api.route("GET", "/items/{shard}", provider.guard(items))
    api.route("GET", "/others", provider.guard(lambda r: {"data": [{"id": 1, "shard": "-"}]}))
