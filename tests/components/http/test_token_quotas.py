"""RateLimitedMultipleTokenAuthenticator: tokens taken in turn by their quotas, waits for a reset, the API's
answers kept in step, one book for the sync (a Spark task asks the driver's)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from fakes.api_server import FakeApi, RecordedRequest, Reply
from fakes.quota_api import QuotaApi
from hypothesis import given, settings
from hypothesis import strategies as st

from framework import coordination
from framework.components.context import BuildContext, builder_of
from framework.components.http.auth.token_quotas import MAX_BUDGET_DELAY, Pool, PoolState, QuotaBook, reset_time
from framework.components.http.client import HttpClient
from framework.components.http.error_handler import default_error_handler
from framework.components.http.request import HttpRequest, RequestParts
from framework.components.http.transport import FunctionTransport
from framework.engine.connector import open_connector_text
from framework.engine.plan import open_sync
from framework.errors import ConfigError, HttpStatusError, TransportError
from framework.models import RateLimitedMultipleTokenAuthenticator
from framework.temporal.clock import FixedClock

START = datetime(2024, 1, 1, 12, 0, tzinfo=timezone.utc)
API = "https://api.test"


def model(**extra: Any) -> RateLimitedMultipleTokenAuthenticator:
    data: dict[str, Any] = {
        "type": "RateLimitedMultipleTokenAuthenticator",
        "tokens": "{{ config['tokens'] }}",
        "auth_method": "token",
        "quota_status_source": {"type": "QuotaStatusSource", "url": API + "/rate_limit"},
        "quotas": [{"type": "TokenQuota", "name": "core", "remaining_path": ["resources", "core", "remaining"],
                    "reset_path": ["resources", "core", "reset"], "limit_path": ["resources", "core", "limit"]}],
        "budget_reserve_fraction": 0, "budget_min_reserve": 0,
    }
    data.update(extra)
    return RateLimitedMultipleTokenAuthenticator.model_validate(data)


class World:
    def __init__(self, tokens: dict[str, int], window: float = 3600.0, unavailable: bool = False):
        self.clock = FixedClock(START)
        self.sleeps: list[float] = []
        self.api = QuotaApi(self.clock, tokens, window, unavailable)
        self.ctx = BuildContext({"tokens": ",".join(tokens)}, transport=self.api.transport(API), clock=self.clock,
                                sleep=self.sleep)

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.clock.advance(timedelta(seconds=seconds))

    def build(self, **extra: Any) -> Any:
        return builder_of("RateLimitedMultipleTokenAuthenticator")(model(**extra), self.ctx, ("auth",))

    def send(self, auth: Any, path: str = "/items") -> Any:
        client = HttpClient(self.ctx.transport, default_error_handler(self.ctx), auth, sleep=self.sleep)
        return client.send(RequestParts(url=API + path))


def tokens_sent(world: World) -> list[str]:
    return [token for path, token in world.api.sent if path != "/rate_limit"]


def test_each_token_is_used_until_its_quota_is_spent_then_the_next():
    world = World({"t1": 3, "t2": 2})
    auth = world.build()
    for _ in range(5):
        assert world.send(auth).status == 200
    assert tokens_sent(world) == ["t1", "t1", "t1", "t2", "t2"]
    assert world.api.status_reads == 2 and world.sleeps == []  # each token's quota read once, nothing waited


def test_when_every_token_is_spent_the_request_waits_for_the_reset_and_reads_the_quotas_again():
    world = World({"t1": 1, "t2": 1}, window=600)
    auth = world.build()
    world.send(auth)
    world.send(auth)
    assert world.send(auth).status == 200
    assert world.sleeps == [600.0]  # until the earliest reset
    assert tokens_sent(world) == ["t1", "t2", "t2"] and world.api.status_reads == 4  # read again: both refilled


def test_a_reset_past_max_wait_time_fails_the_request_as_transient():
    world = World({"t1": 1}, window=7200)
    auth = world.build(max_wait_time="PT30M")
    world.send(auth)
    with pytest.raises(TransportError) as caught:
        world.send(auth)
    assert caught.value.failure_type == "transient_error"
    assert "all 1 tokens are spent (quota `core`)" in str(caught.value) and "max_wait_time" in str(caught.value)
    assert world.sleeps == []


def test_a_token_the_api_says_is_spent_is_left_at_once_and_the_retry_does_not_wait():
    world = World({"t1": 5, "t2": 5})
    auth = world.build(quotas=[{"type": "TokenQuota", "name": "core", "remaining_path": ["resources", "core",
                                                                                         "remaining"],
                                "reset_path": ["resources", "core", "reset"], "remaining_header": "X-RateLimit-Remaining",
                                "reset_header": "X-RateLimit-Reset", "exhaustion_status_codes": [429]}])
    world.send(auth)
    world.api.used["t1"] = 5  # another client spent t1: the API answers 429, the book still counts 4 left
    assert world.send(auth).status == 200
    assert tokens_sent(world) == ["t1", "t1", "t2"]  # the 429 with Remaining 0 left t1; the retry used t2
    assert sum(world.sleeps) == 0  # no backoff: another token had calls


def test_an_endpoint_that_keeps_no_count_leaves_the_tokens_taken_in_turn():
    world = World({"t1": 100, "t2": 100}, unavailable=True)
    auth = world.build(quota_status_source={"type": "QuotaStatusSource", "url": API + "/rate_limit",
                                            "unavailable_status_codes": [404]})
    for _ in range(4):
        world.send(auth)
    assert tokens_sent(world) == ["t1", "t2", "t1", "t2"] and world.sleeps == []


def test_without_unavailable_codes_a_404_from_the_quota_endpoint_fails_naming_it():
    world = World({"t1": 100}, unavailable=True)
    with pytest.raises(HttpStatusError, match="quota status request of token 1 .*rate_limit.* failed"):
        world.send(world.build())


def test_the_last_calls_are_spread_over_the_time_left():
    world = World({"t1": 10, "t2": 10}, window=38)
    auth = world.build(budget_reserve_fraction=1, budget_min_reserve=0)  # every token is within its reserve
    world.send(auth)
    assert world.sleeps == [pytest.approx(38 / 19)]  # 38 s left, 19 calls left after this one


def test_tokens_from_one_text_or_a_list_empty_ones_left_out_and_none_is_an_error():
    world = World({"t1": 1, "t2": 1})
    world.ctx = BuildContext({"tokens": " t1 ; ;t2 "}, transport=world.api.transport(API), clock=world.clock,
                             sleep=world.sleep)
    auth = world.build(token_delimiter=";")
    assert auth.secrets() == ("t1", "t2")
    listed = world.build(tokens=["{{ config['tokens'] }}", " "])
    assert listed.secrets() == (" t1 ; ;t2 ".strip(),)
    world.ctx = BuildContext({"tokens": ""}, transport=world.api.transport(API), clock=world.clock, sleep=world.sleep)
    with pytest.raises(ConfigError, match="no token"):
        world.build()


def test_a_path_the_quota_answer_lacks_is_an_error_naming_it():
    world = World({"t1": 1})
    auth = world.build(quotas=[{"type": "TokenQuota", "name": "graphql", "remaining_path": ["resources", "graphql",
                                                                                            "remaining"],
                                "reset_path": ["resources", "graphql", "reset"]}])
    with pytest.raises(ConfigError, match="nothing at `resources.graphql.remaining`.*quota `graphql`"):
        world.send(auth)


def test_requests_are_counted_in_the_pool_their_matchers_pick():
    world = World({"t1": 2})
    auth = world.build(quotas=[
        {"type": "TokenQuota", "name": "search", "remaining_path": ["resources", "core", "remaining"],
         "reset_path": ["resources", "core", "reset"], "matchers": [{"url_path_pattern": "^/search"}]},
        {"type": "TokenQuota", "name": "core", "remaining_path": ["resources", "core", "remaining"],
         "reset_path": ["resources", "core", "reset"]}])
    assert auth.pool_of(HttpRequest("GET", API + "/search/code")) == 0
    assert auth.pool_of(HttpRequest("GET", API + "/items")) == 1


def test_the_max_wait_time_must_have_a_fixed_length():
    with pytest.raises(ConfigError, match="months or years"):
        World({"t1": 1}).build(max_wait_time="P1M")


def test_in_a_spark_task_tokens_come_from_the_drivers_book():
    world = World({"t1": 2, "t2": 2})
    world.build()  # the driver's authenticator: its book is the sync-wide service

    def no_quota_endpoint(request: HttpRequest) -> tuple[int, dict, Any]:
        if request.url.endswith("/rate_limit"):
            raise AssertionError("a task never reads the quota endpoint: the driver's book does")
        return world.api.answer(request.url.removeprefix(API), request.headers.get("Authorization"))

    task = BuildContext({"tokens": "t1,t2"}, transport=FunctionTransport(no_quota_endpoint), clock=world.clock,
                        sleep=world.sleep)
    in_task = builder_of("RateLimitedMultipleTokenAuthenticator")(model(), task, ("auth",))
    with coordination.Coordinator(world.ctx.services) as coordinator, coordination.attached(coordinator.address):
        for _ in range(4):
            HttpClient(task.transport, default_error_handler(task), in_task, sleep=world.sleep).send(
                RequestParts(url=API + "/items"))
    assert tokens_sent(world) == ["t1", "t1", "t2", "t2"] and world.api.status_reads == 2


def test_reset_times_are_epoch_seconds_or_iso_8601():
    assert reset_time(1704110400) == reset_time("1704110400") == reset_time("2024-01-01T12:00:00Z") == START
    with pytest.raises(ValueError):
        reset_time("soon")


@settings(max_examples=80, deadline=None)
@given(st.lists(st.integers(0, 6), min_size=1, max_size=4), st.integers(1, 40))
def test_the_book_never_hands_out_a_call_a_token_does_not_have(limits, asks):
    pool = Pool("core", ("r",), ("s",))
    clock = FixedClock(START)
    book = QuotaBook(len(limits), (pool,), lambda token: [PoolState(limits[token], START + timedelta(hours=1),
                                                                    limits[token])], clock, 0.0, 0)
    handed: list[int] = []
    for _ in range(asks):
        taken = book.take(0)
        if taken.token is None:
            assert taken.wait == 3600.0
            assert len(handed) == sum(limits)
            break
        handed.append(taken.token)
    for token, limit in enumerate(limits):
        assert handed.count(token) <= limit
    assert handed == sorted(handed)  # a token is used until it is spent, then the next
    assert MAX_BUDGET_DELAY == 10.0


# -- end to end, against the fake API --------------------------------------------------------------------------

MANIFEST = """
version: 6.7.0
type: DeclarativeSource
definitions:
  requester:
    type: HttpRequester
    url_base: "{{ config['base_url'] }}"
    authenticator:
      type: RateLimitedMultipleTokenAuthenticator
      tokens: "{{ config['tokens'] }}"
      auth_method: token
      budget_reserve_fraction: 0
      budget_min_reserve: 0
      quota_status_source: {type: QuotaStatusSource, url: "{{ config['base_url'] }}/rate_limit"}
      quotas:
        - type: TokenQuota
          name: core
          remaining_path: [resources, core, remaining]
          reset_path: [resources, core, reset]
          remaining_header: X-RateLimit-Remaining
          reset_header: X-RateLimit-Reset
          exhaustion_status_codes: [429]
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
  - {$ref: "#/definitions/stream", name: issues, $parameters: {name: issues}}
  - {$ref: "#/definitions/stream", name: commits, $parameters: {name: commits}}
check: {type: CheckStream, stream_names: [issues]}
"""


class _RealClock:
    def now(self) -> datetime:
        return datetime.now(timezone.utc)


def test_two_streams_share_the_tokens_quotas_and_rotate_when_the_api_says_the_limit_is_reached():
    quota = QuotaApi(_RealClock(), {"ta": 10, "tb": 20})

    def route(request: RecordedRequest) -> Reply:
        page = int(request.param("page") or 1)
        status, headers, body = quota.answer(request.path, request.headers.get("Authorization"))
        if request.path != "/rate_limit" and tokens_sent_to(quota).count("ta") == 2:
            quota.used["ta"] = 10  # another client spends the rest of ta: the API answers 429 from now on
        if status == 200 and request.path != "/rate_limit":
            body = {"data": [{"page": page, "path": request.path}] if page <= 3 else []}
        return Reply(status, body, headers)

    with FakeApi() as api:
        for path in ("/rate_limit", "/issues", "/commits"):
            api.route("GET", path, route)
        connector = open_connector_text(MANIFEST, {"base_url": api.url, "tokens": "ta, tb"})
        read = {}
        for name in ("issues", "commits"):
            sync = open_sync(connector, connector.streams[name], None)
            read[name] = [r for unit in sync.plan() for page in sync.read(unit) for r in page]
    assert [r["page"] for r in read["issues"]] == [1, 2, 3] and [r["page"] for r in read["commits"]] == [1, 2, 3]
    # ta twice, then a 429 (Remaining 0) on its third: the book spends ta, the request is sent again at once
    # with tb, and every later request of both streams (one book for the sync) goes out with tb
    assert tokens_sent_to(quota) == ["ta", "ta", "ta"] + ["tb"] * 6
    assert quota.status_reads == 2


def tokens_sent_to(quota: QuotaApi) -> list[str]:
    return [token for path, token in quota.sent if path != "/rate_limit"]
