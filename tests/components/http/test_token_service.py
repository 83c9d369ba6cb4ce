"""One token for the whole sync: the compare-and-refresh rule, sharing by definition, rotating refresh tokens."""

from __future__ import annotations

import threading
import urllib.parse
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

import pytest
from fakes.api_server import ApiError, FakeApi
from hypothesis import given, settings
from hypothesis import strategies as st

from framework import coordination
from framework.components import context as registry
from framework.components.config_sink import ConfigSink
from framework.components.http.auth import oauth
from framework.components.http.request import RequestParts
from framework.components.http.token_service import RECHECK, SharedToken, TokenAsk, TokenKeeper, service_name
from framework.components.http.transport import FunctionTransport
from framework.engine.connector import open_connector_text
from framework.engine.plan import open_sync
from framework.errors import ConfigError
from framework.models import OAuthAuthenticator, SessionTokenAuthenticator
from framework.temporal.clock import FixedClock

START = datetime(2024, 1, 1, 12, 0, tzinfo=timezone.utc)
TOKEN_URL = "https://auth.example.com/oauth/token"


@dataclass(frozen=True)
class Tok:
    value: str
    renew_at: datetime | None
    generation: int = 0


class Counter:
    def __init__(self, lifetime: timedelta | None = timedelta(minutes=10), clock: FixedClock | None = None,
                 delay: threading.Event | None = None):
        self.count = 0
        self.lifetime = lifetime
        self.clock = clock or FixedClock(START)
        self.delay = delay

    def __call__(self) -> Tok:
        if self.delay is not None:
            self.delay.wait(0.05)  # widen the race window
        self.count += 1
        renew = self.clock.now() + self.lifetime if self.lifetime is not None else None
        return Tok(f"t{self.count}", renew)


# --- the compare-and-refresh rule --------------------------------------------------------------------------------


def test_first_ask_fetches_then_the_token_is_reused():
    fetch = Counter()
    keeper = TokenKeeper(fetch, fetch.clock)
    first = keeper(TokenAsk())
    assert (first.value, first.generation) == ("t1", 1)
    assert keeper(TokenAsk(held=None)) == first and keeper(TokenAsk(held=1)) == first
    assert fetch.count == 1


def test_a_rejected_current_token_is_refreshed_once_an_older_one_is_not():
    fetch = Counter()
    keeper = TokenKeeper(fetch, fetch.clock)
    keeper(TokenAsk())
    second = keeper(TokenAsk(held=1, rejected=True))
    assert (second.value, second.generation) == ("t2", 2)
    # a caller that still held generation 1 gets generation 2 without another refresh
    assert keeper(TokenAsk(held=1, rejected=True)) == second
    assert fetch.count == 2


def test_a_due_token_is_refreshed_once_by_the_keepers_clock():
    fetch = Counter(lifetime=timedelta(seconds=30))
    keeper = TokenKeeper(fetch, fetch.clock)
    keeper(TokenAsk())
    fetch.clock.advance(timedelta(seconds=29))
    assert keeper(TokenAsk(held=1)).generation == 1
    fetch.clock.advance(timedelta(seconds=1))
    assert keeper(TokenAsk(held=1)).generation == 2
    assert keeper(TokenAsk(held=1)).generation == 2
    assert fetch.count == 2


def test_an_initial_token_is_generation_one_and_a_token_that_cannot_be_renewed_is_kept():
    fetch = Counter()
    keeper = TokenKeeper(fetch, fetch.clock, initial=Tok("given", START - timedelta(1)), fetchable=False)
    assert keeper(TokenAsk(held=1, rejected=True)) == Tok("given", START - timedelta(1), 1)
    assert fetch.count == 0


def test_many_threads_that_saw_the_same_token_rejected_cause_one_refresh():
    fetch = Counter(delay=threading.Event())
    keeper = TokenKeeper(fetch, fetch.clock)
    keeper(TokenAsk())
    answers: list[Tok] = []
    barrier = threading.Barrier(16)

    def caller():
        barrier.wait()
        answers.append(keeper(TokenAsk(held=1, rejected=True)))

    threads = [threading.Thread(target=caller) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert fetch.count == 2
    assert {a.value for a in answers} == {"t2"}


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 8), st.integers(0, 40)), min_size=1, max_size=12))
def test_one_refresh_per_expiry_or_rejection_whatever_the_callers(rounds):
    """Rounds of N concurrent callers, each holding the current token and either seeing it expire (the clock
    moved past its renewal) or having it rejected: exactly one refresh per round that needed one."""
    fetch = Counter(lifetime=timedelta(seconds=20))
    keeper = TokenKeeper(fetch, fetch.clock)
    current = keeper(TokenAsk())
    expected = 1
    for callers, seconds in rounds:
        fetch.clock.advance(timedelta(seconds=seconds))
        due = fetch.clock.now() >= current.renew_at
        rejected = not due  # a round whose token did not expire is one where the API said 401
        barrier = threading.Barrier(callers)
        seen: list[Tok] = []
        ask = TokenAsk(held=current.generation, rejected=rejected)
        threads = [threading.Thread(target=_call_after, args=(barrier, keeper, ask, seen)) for _ in range(callers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        expected += 1
        assert fetch.count == expected
        assert len({t.generation for t in seen}) == 1
        current = seen[0]


def _call_after(barrier: threading.Barrier, keeper: TokenKeeper, ask: TokenAsk, seen: list) -> None:
    barrier.wait()
    seen.append(keeper(ask))


def test_a_task_keeps_a_token_the_driver_still_finds_valid_a_little_longer():
    clock = FixedClock(START)
    driver_token = Tok("t1", START - timedelta(seconds=1), 1)  # the task's clock runs ahead of the driver's
    shared = SharedToken(lambda ask: driver_token, clock)
    got = shared.ask(driver_token, rejected=False)
    assert got.value == "t1" and got.renew_at == START + RECHECK


def test_the_service_name_is_a_digest_that_never_shows_the_secret():
    one = service_name("oauth", [TOKEN_URL, {"client_secret": "very-secret"}])
    assert one == service_name("oauth", [TOKEN_URL, {"client_secret": "very-secret"}])
    assert one != service_name("oauth", [TOKEN_URL, {"client_secret": "other"}])
    assert "very-secret" not in one and "auth.example.com" not in one and one.startswith("token:oauth:")


# --- authenticators built on one context share one token ---------------------------------------------------------


class _Context(registry.BuildContext):
    def build(self, model, path):
        return registry.builder_of(model.type)(model, self, path)


def token_endpoint(issued: list[dict], rotate: bool = False, lifetime: int = 3600):
    state = {"refresh": "rt-0"}

    def handler(request):
        form = dict(urllib.parse.parse_qsl(request.data if isinstance(request.data, str) else
                                           urllib.parse.urlencode(request.data or {})))
        issued.append(form)
        if rotate:
            if form.get("refresh_token") != state["refresh"]:
                return 400, {}, {"error": "invalid_grant"}
            state["refresh"] = f"rt-{len(issued)}"
            return 200, {}, {"access_token": f"at-{len(issued)}", "expires_in": lifetime,
                             "refresh_token": state["refresh"]}
        return 200, {}, {"access_token": f"at-{len(issued)}", "expires_in": lifetime}

    return handler


def oauth_model(**more):
    return OAuthAuthenticator.model_validate({
        "type": "OAuthAuthenticator", "token_refresh_endpoint": TOKEN_URL, "client_id": "cid",
        "client_secret": "{{ config['client_secret'] }}", "refresh_token": "{{ config['refresh_token'] }}", **more})


def make_ctx(handler, config=None, sink=None, clock=None):
    return _Context(config=config or {"client_secret": "cs", "refresh_token": "rt-0"},
                    transport=FunctionTransport(handler), clock=clock or FixedClock(START), sleep=lambda s: None,
                    config_sink=sink)


def bearer(authenticator) -> str:
    parts = RequestParts("GET", url="https://api.example.com/items")
    authenticator.apply(parts)
    return parts.headers["Authorization"]


def test_two_streams_with_the_same_oauth_definition_share_one_token():
    issued: list[dict] = []
    ctx = make_ctx(token_endpoint(issued))
    one = registry.builder_of("OAuthAuthenticator")(oauth_model(), ctx, ("streams", 0, "auth"))
    two = registry.builder_of("OAuthAuthenticator")(oauth_model(), ctx, ("streams", 1, "auth"))
    assert bearer(one) == bearer(two) == "Bearer at-1"
    assert len(issued) == 1 and len(ctx.services) == 1
    # a 401 seen by one: one refresh, and the other gets the new token when it asks after its own 401
    assert one.refresh() and bearer(one) == "Bearer at-2"
    assert two.refresh() and bearer(two) == "Bearer at-2"
    assert len(issued) == 2


def test_different_definitions_get_different_tokens():
    issued: list[dict] = []
    ctx = make_ctx(token_endpoint(issued))
    one = registry.builder_of("OAuthAuthenticator")(oauth_model(), ctx, ("a",))
    two = registry.builder_of("OAuthAuthenticator")(oauth_model(scopes=["read"]), ctx, ("b",))
    assert bearer(one) != bearer(two) and len(ctx.services) == 2


def test_session_tokens_with_the_same_login_share_one_session():
    logins: list[object] = []

    def handler(request):
        logins.append(request)
        return 200, {}, {"token": f"s{len(logins)}"}

    ctx = make_ctx(handler)
    model = SessionTokenAuthenticator.model_validate({
        "type": "SessionTokenAuthenticator",
        "login_requester": {"type": "HttpRequester", "url_base": "https://api.example.com", "path": "/login",
                            "http_method": "POST", "request_body_json": {"user": "ann"}},
        "session_token_path": ["token"], "request_authentication": {"type": "Bearer"}})
    one = registry.builder_of("SessionTokenAuthenticator")(model, ctx, ("a",))
    two = registry.builder_of("SessionTokenAuthenticator")(model, ctx, ("b",))
    assert bearer(one) == bearer(two) == "Bearer s1" and len(logins) == 1


def test_in_a_task_the_token_comes_from_the_drivers_keeper():
    issued: list[dict] = []
    driver = make_ctx(token_endpoint(issued))
    registry.builder_of("OAuthAuthenticator")(oauth_model(), driver, ("a",))

    def no_network(request):
        raise AssertionError("a task never asks the token endpoint")

    task = make_ctx(no_network)
    in_task = registry.builder_of("OAuthAuthenticator")(oauth_model(), task, ("a",))
    with coordination.Coordinator(driver.services) as coordinator, coordination.attached(coordinator.address):
        assert bearer(in_task) == "Bearer at-1"
        assert in_task.refresh() and bearer(in_task) == "Bearer at-2"
    assert len(issued) == 2


# --- rotating refresh tokens -----------------------------------------------------------------------------------


UPDATER = {"refresh_token_updater": {"refresh_token_config_path": ["credentials", "refresh_token"],
                                     "access_token_config_path": ["credentials", "access_token"],
                                     "token_expiry_date_config_path": ["credentials", "token_expiry_date"]}}


def rotating_config(**credentials):
    return {"client_secret": "cs", "credentials": {"refresh_token": "rt-0", **credentials}}


def test_a_rotated_refresh_token_is_used_next_and_saved_once_per_rotation():
    issued: list[dict] = []
    saved: list[dict] = []
    config = rotating_config()
    sink = ConfigSink(config, saved.append)
    clock = FixedClock(START)
    ctx = make_ctx(token_endpoint(issued, rotate=True, lifetime=600), config, sink, clock)
    model = oauth_model(refresh_token=None, **UPDATER)
    one = registry.builder_of("OAuthAuthenticator")(model, ctx, ("a",))
    two = registry.builder_of("OAuthAuthenticator")(model, ctx, ("b",))
    assert bearer(one) == bearer(two) == "Bearer at-1"
    clock.advance(timedelta(minutes=10))
    assert bearer(two) == bearer(one) == "Bearer at-2"
    assert [form["refresh_token"] for form in issued] == ["rt-0", "rt-1"]
    assert len(saved) == 2 and sink.saves == 2
    assert saved[-1]["credentials"] == {"refresh_token": "rt-2", "access_token": "at-2",
                                        "token_expiry_date": (START + timedelta(minutes=20)).isoformat()}
    assert saved[-1]["client_secret"] == "cs"
    assert "rt-2" in one.secrets()


def test_a_held_access_token_in_the_config_is_used_until_it_expires():
    issued: list[dict] = []
    expiry = (START + timedelta(hours=1)).isoformat()
    config = rotating_config(access_token="at-held", token_expiry_date=expiry)
    ctx = make_ctx(token_endpoint(issued, rotate=True), config, ConfigSink(config, lambda c: None))
    held = registry.builder_of("OAuthAuthenticator")(oauth_model(refresh_token=None, **UPDATER), ctx, ("a",))
    assert bearer(held) == "Bearer at-held" and issued == []


def test_a_held_access_token_without_a_readable_expiry_is_refreshed_first():
    issued: list[dict] = []
    config = rotating_config(access_token="at-held", token_expiry_date="")
    ctx = make_ctx(token_endpoint(issued, rotate=True), config, ConfigSink(config, lambda c: None))
    held = registry.builder_of("OAuthAuthenticator")(oauth_model(refresh_token=None, **UPDATER), ctx, ("a",))
    assert bearer(held) == "Bearer at-1" and len(issued) == 1


def test_no_refresh_token_at_the_updaters_path_is_a_config_error_naming_it():
    ctx = make_ctx(token_endpoint([]), {"client_secret": "cs"})
    with pytest.raises(ConfigError, match=r"`credentials\.refresh_token`"):
        registry.builder_of("OAuthAuthenticator")(oauth_model(refresh_token=None, **UPDATER), ctx, ("a",))


def test_the_oauth_model_accepts_the_updater_without_a_refresh_token_field():
    model = oauth_model(refresh_token=None, refresh_token_updater={})
    assert model.refresh_token_updater.refresh_token_config_path == ("credentials", "refresh_token")
    assert isinstance(oauth.OAuth, type)


# -- a token the API expires early, end to end -------------------------------------------------------------

EARLY_MANIFEST = """
version: 6.7.0
type: DeclarativeSource
definitions:
  requester:
    type: HttpRequester
    url_base: "{{ config['base_url'] }}"
    authenticator:
      type: OAuthAuthenticator
      token_refresh_endpoint: "{{ config['base_url'] }}/oauth/token"
      client_id: "{{ config['client_id'] }}"
      client_secret: "{{ config['client_secret'] }}"
      refresh_token: "{{ config['refresh_token'] }}"
  stream:
    type: DeclarativeStream
    schema_loader: {type: InlineSchemaLoader, schema: {type: object}}
    retriever:
      type: SimpleRetriever
      requester: {$ref: "#/definitions/requester", path: "/{{ parameters.name }}"}
      record_selector: {type: RecordSelector, extractor: {type: DpathExtractor, field_path: [data]}}
      paginator:
        type: DefaultPaginator
        pagination_strategy: {type: PageIncrement, page_size: 1, start_from_page: 1}
        page_token_option: {type: RequestOption, inject_into: request_parameter, field_name: page}
streams:
  - {$ref: "#/definitions/stream", name: users, $parameters: {name: users}}
  - {$ref: "#/definitions/stream", name: teams, $parameters: {name: teams}}
check: {type: CheckStream, stream_names: [users]}
"""


class EarlyExpiry:
    """An OAuth API whose access tokens last an hour by ``expires_in``, but which revokes the first after it
    served ``serves`` requests: the next request with it is answered 401 while it is not yet expired."""

    def __init__(self, serves: int = 3):
        self.serves = serves
        self.issued: list[str] = []
        self.rejected = 0
        self.served: dict[str, int] = {}

    def token(self, request):  # noqa: ANN001, ANN201 - a route handler
        self.issued.append(f"access-{len(self.issued) + 1}")
        return {"access_token": self.issued[-1], "expires_in": 3600}

    def data(self, request):  # noqa: ANN001, ANN201 - a route handler
        sent = (request.headers.get("Authorization") or "").removeprefix("Bearer ")
        if sent not in self.issued or (sent == "access-1" and self.served.get(sent, 0) >= self.serves):
            self.rejected += 1
            raise ApiError(401, "token revoked")
        self.served[sent] = self.served.get(sent, 0) + 1
        page = int(request.param("page") or 1)
        return {"data": [{"id": page}] if page <= 2 else []}


def test_a_token_the_api_expires_early_is_refreshed_once_and_the_request_retried():
    api_state = EarlyExpiry(serves=3)
    with FakeApi() as api:
        api.route("POST", "/oauth/token", api_state.token)
        api.route("GET", "/users", api_state.data)
        api.route("GET", "/teams", api_state.data)
        config = {"base_url": api.url, "client_id": "cid", "client_secret": "csecret", "refresh_token": "rtok"}
        connector = open_connector_text(EARLY_MANIFEST, config)
        read = {}
        for name in ("users", "teams"):
            sync = open_sync(connector, connector.streams[name], None)
            read[name] = [record for unit in sync.plan() for page in sync.read(unit) for record in page]
        token_requests = len(api.received("/oauth/token"))
    assert read == {"users": [{"id": 1}, {"id": 2}], "teams": [{"id": 1}, {"id": 2}]}
    # users' 3 requests with access-1; teams' first is refused (401): one refresh for the sync, that request
    # sent again with access-2, and the rest of the sync uses it (one token for both streams)
    assert api_state.rejected == 1
    assert token_requests == 2 and api_state.issued == ["access-1", "access-2"]
    assert api_state.served == {"access-1": 3, "access-2": 3}
