"""Each custom kind's adapter in its runtime slot: what the user's method gets, what the runtime gets back,
and errors raised in user code."""

from __future__ import annotations

import pytest
from components.custom.kit import context, model, response, write_components
from hypothesis import given, settings
from hypothesis import strategies as st

from framework.components.custom.builders import CustomPaginationStrategy, signs_requests
from framework.components.custom.loader import UserCodeError
from framework.components.custom.responses import requests_response_of
from framework.components.http.credentials import credentials_added
from framework.components.http.error_handler import FilterErrorHandler
from framework.components.http.request import Injection, RequestParts
from framework.components.pagination import StrategyPaginator
from framework.components.slices import StreamSlice
from framework.engine.connector import open_connector_text
from framework.errors import ConfigError, DecodeError, PaginationLoopError
from framework.temporal.clock import SystemClock

CODE = '''
import requests


class Extractor:
    def extract_records(self, response):
        assert isinstance(response, requests.Response)
        for item in response.json()["data"]:
            yield item


class Filter:
    calls = []

    def filter_records(self, records, stream_state, stream_slice=None, next_page_token=None):
        Filter.calls.append((len(records), dict(stream_state), stream_slice.partition, next_page_token))
        return [r for r in records if r["id"] % 2]


class Upper:
    def transform(self, record, config=None, stream_state=None, stream_slice=None):
        record["name"] = record["name"].upper() + config["suffix"]


class Pages:
    page_size: int

    def __init__(self, page_size=2):
        self.page_size = page_size
        self.seen = 0

    @property
    def initial_token(self):
        return 1

    def next_page_token(self, response, last_page_size, last_record, last_page_token_value=None):
        self.seen += 1
        if last_page_size < self.page_size:
            return None
        return last_page_token_value + 1

    def get_page_size(self):
        return self.page_size


class Shrinking:
    """Told a reduced page size as Airbyte tells it (``page_size_override``), it pages by the size it was given."""

    sizes = []

    @property
    def initial_token(self):
        return 0

    def get_page_size(self):
        return 10

    def next_page_token(self, response, last_page_size, last_record, last_page_token_value=None,
                        page_size_override=None):
        Shrinking.sizes.append(page_size_override)
        size = page_size_override or 10
        return None if last_page_size < size else last_page_token_value + size


class OldPages:
    def next_page_token(self, response, last_page_size, last_record):
        return response.json().get("next")


class Regions:
    def stream_slices(self):
        for region in ("eu", "us"):
            yield {"region": region}

    def get_request_params(self, stream_state=None, stream_slice=None, next_page_token=None):
        return {"region": stream_slice["region"]}


class BadPartition:
    def stream_slices(self):
        yield {"when": object()}


class Schema:
    def get_json_schema(self):
        return {"type": "object", "properties": {"id": {"type": "integer"}}}


class Migration:
    def should_migrate(self, state):
        return "updated" in state

    def migrate(self, state):
        return {"updated_at": state["updated"]}


class Auth:
    def __init__(self, config=None):
        self.config = config
    config: dict

    def get_auth_header(self):
        return {"Authorization": "Token " + self.config["key"]}


class Signer:
    """Signs each request itself (requests' auth protocol), as a NoAuth subclass does; no header of its own."""

    def __init__(self, config=None):
        self.config = config
        self.calls = 0
    config: dict

    def get_auth_header(self):
        return {"Authorization": None}

    def __call__(self, request):
        self.calls += 1
        assert request.url.startswith("https://api.test/v1/items?page=2")
        request.headers.update({"Authorization": "Bearer t-" + self.config["key"], "X-Call": str(self.calls)})
        request.headers.pop("X-Drop", None)
        request.prepare_url(request.url, {"sig": "s1g"})
        return request


class Errors:
    max_retries = 2

    def interpret_response(self, response):
        class Resolution:
            response_action = "IGNORE" if response.status_code == 404 else "SUCCESS"
            failure_type = None
            error_message = None
        return Resolution()


class Backoff:
    def backoff_time(self, response, attempt_count):
        return float(response.headers.get("X-Wait", attempt_count))


class Failing:
    token: str

    def __init__(self, token=None):
        self.token = token

    def extract_records(self, response):
        return helper(self.token)


def helper(token):
    raise KeyError("no data for " + token)
'''


@pytest.fixture
def ctx(tmp_path):
    write_components(tmp_path, CODE)
    return context(tmp_path, config={"suffix": "!", "key": "k3y"}, secrets=("k3y", "s3cr3t"))


def build(ctx, kind, name, **options):
    return ctx.build(model(kind, f"components.{name}", **options), ("streams", 0, kind))


def test_an_extractor_gets_a_requests_response_and_its_records_become_dicts(ctx):
    extractor = build(ctx, "CustomRecordExtractor", "Extractor")
    assert extractor.extract(response({"data": [{"id": 1}, {"id": 2}]})) == [{"id": 1}, {"id": 2}]


@pytest.fixture(scope="module")
def extractor(tmp_path_factory):
    folder = tmp_path_factory.mktemp("extractor")
    write_components(folder, CODE)
    return build(context(folder), "CustomRecordExtractor", "Extractor")


@settings(max_examples=60, deadline=None)
@given(records=st.lists(st.dictionaries(st.text(min_size=1, max_size=5),
                                        st.integers(-2**63, 2**63 - 1) | st.text(max_size=5) | st.none(),
                                        max_size=4), max_size=6),
       status=st.sampled_from([200, 201, 299]))
def test_any_page_of_records_comes_out_as_the_api_sent_it(extractor, records, status):
    assert extractor.extract(response({"data": records}, status)) == records


def test_the_requests_response_carries_status_headers_body_url_and_is_made_once(ctx):
    ours = response({"a": 1}, 201, {"Link": "<x>"}, url="http://api.test/items?page=2")
    theirs = requests_response_of(ours)
    assert (theirs.status_code, theirs.headers["link"], theirs.json(), theirs.url, theirs.reason) == (
        201, "<x>", {"a": 1}, "http://api.test/items?page=2", "Created")
    assert theirs.request.method == "GET" and requests_response_of(ours) is theirs


def test_a_filter_is_called_once_per_page_with_state_slice_and_token(ctx):
    record_filter = build(ctx, "CustomRecordFilter", "Filter")
    records = [{"id": i} for i in range(5)]
    view = StreamSlice({"region": "eu"}).view()
    kept = record_filter.keep(records, {"stream_state": {"updated_at": "x"}, "stream_slice": view,
                                        "next_page_token": {"next_page_token": 2}})
    assert kept == [{"id": 1}, {"id": 3}]
    assert record_filter.user_object.calls[-1] == (5, {"updated_at": "x"}, {"region": "eu"}, {"next_page_token": 2})


def test_a_transformation_changes_the_record_in_place_once_per_record(ctx):
    transformation = build(ctx, "CustomTransformation", "Upper")
    record = {"name": "ann"}
    assert transformation.apply(record, {"config": ctx.config}) is record
    assert record == {"name": "ANN!"}


def _pages(strategy, bodies):
    paginator = StrategyPaginator(strategy, Injection("request_parameter", ("page",)),
                                  size_into=Injection("request_parameter", ("limit",)))
    pager = paginator.start()
    sent = []
    for body in bodies:
        parts = RequestParts()
        pager.apply(parts)
        sent.append(dict(parts.params))
        if not pager.advance(response(body), body["data"], {}):
            break
    return sent


def test_a_pagination_strategy_runs_in_the_default_paginator_with_a_fresh_object_per_slice(ctx):
    strategy = build(ctx, "CustomPaginationStrategy", "Pages", page_size=2)
    assert isinstance(strategy, CustomPaginationStrategy)
    pages = [{"data": [{"id": 1}, {"id": 2}]}, {"data": [{"id": 3}, {"id": 4}]}, {"data": [{"id": 5}]}]
    assert _pages(strategy, pages) == [{"limit": 2, "page": 1}, {"limit": 2, "page": 2}, {"limit": 2, "page": 3}]
    assert _pages(strategy, pages) == [{"limit": 2, "page": 1}, {"limit": 2, "page": 2}, {"limit": 2, "page": 3}]
    assert strategy.first()[0].user_object.seen == 0  # each slice gets its own object


def test_a_reduced_page_size_is_told_to_a_custom_strategy_that_takes_page_size_override(ctx):
    strategy = build(ctx, "CustomPaginationStrategy", "Shrinking")
    assert strategy.takes_page_size and not build(ctx, "CustomPaginationStrategy", "OldPages").takes_page_size
    paginator = StrategyPaginator(strategy, Injection("request_parameter", ("offset",)),
                                  size_into=Injection("request_parameter", ("limit",)))
    pager = paginator.start()
    pager.size_override = 4  # the page loop's REDUCE_PAGE_SIZE
    parts = RequestParts()
    pager.apply(parts)
    assert parts.params == {"limit": 4, "offset": 0}
    sizes = type(strategy.user_object).sizes
    sizes.clear()
    assert pager.advance(response({"data": [1, 2, 3, 4]}), [1, 2, 3, 4], {})
    assert sizes == [4] and pager.token == 4
    pager.size_override = None
    assert not pager.advance(response({"data": [1]}), [1], {}) and sizes == [4, None]


def test_an_older_three_argument_strategy_works_and_a_repeated_token_is_a_loop(ctx):
    strategy = build(ctx, "CustomPaginationStrategy", "OldPages")
    assert _pages(strategy, [{"data": [{}], "next": "b"}, {"data": [{}]}]) == [{}, {"page": "b"}]
    with pytest.raises(PaginationLoopError, match="page token `b` again"):
        _pages(strategy, [{"data": [{}], "next": "b"}, {"data": [{}], "next": "b"}, {"data": [{}]}])


def test_a_partition_router_lists_partitions_and_puts_them_into_requests(ctx):
    router = build(ctx, "CustomPartitionRouter", "Regions")
    partitions = list(router.partitions(lambda parent: iter(())))
    assert [p.partition for p in partitions] == [{"region": "eu"}, {"region": "us"}]
    parts = RequestParts()
    router.apply(parts, StreamSlice({"region": "us"}, {"start": "2024"}))
    assert parts.params == {"region": "us"}


def test_a_partition_that_is_not_json_is_refused_with_the_reason(ctx):
    router = build(ctx, "CustomPartitionRouter", "BadPartition")
    with pytest.raises(DecodeError, match="not all JSON values"):
        list(router.partitions(lambda parent: iter(())))


def test_schema_loader_and_state_migration(ctx):
    assert build(ctx, "CustomSchemaLoader", "Schema").load()["properties"] == {"id": {"type": "integer"}}
    migration = build(ctx, "CustomStateMigration", "Migration")
    assert migration.apply({"updated": "2024"}) == {"updated_at": "2024"}
    assert migration.apply({"updated_at": "2024"}) == {"updated_at": "2024"}


def test_authenticator_headers_are_sent_and_masked(ctx):
    auth = build(ctx, "CustomAuthenticator", "Auth")
    parts = RequestParts()
    auth.apply(parts)
    assert parts.headers == {"Authorization": "Token k3y"}
    assert "k3y" in auth.secrets() and auth.refresh() is False


def test_an_authenticator_with_a_call_of_its_own_signs_each_request_and_what_it_sets_is_credentials(ctx):
    auth = build(ctx, "CustomAuthenticator", "Signer")
    parts = RequestParts(url_base="https://api.test/v1", path="/items", params={"page": 2},
                         headers={"X-Drop": "1", "Accept": "application/json"})
    before = RequestParts(url_base=parts.url_base, path=parts.path, params=dict(parts.params),
                          headers=dict(parts.headers))
    auth.apply(parts)
    assert parts.headers == {"Accept": "application/json", "Authorization": "Bearer t-k3y", "X-Call": "1"}
    assert parts.params == {"page": 2, "sig": "s1g"}
    assert {"Bearer t-k3y", "t-k3y", "s1g"} <= set(auth.secrets())
    found = credentials_added(before.headers, parts.headers, before.params, parts.params, None, None, None, None,
                              auth.secrets())
    assert set(found.headers) == {"Authorization", "X-Call"} and found.params == ("sig",)
    auth.apply(RequestParts(url_base="https://api.test/v1", path="/items", params={"page": 2}))
    assert auth.user_object.calls == 2  # called on every request, as requests calls an auth object


def test_an_authenticator_with_only_a_header_is_not_called(ctx):
    assert not signs_requests(build(ctx, "CustomAuthenticator", "Auth").user_object)
    assert signs_requests(build(ctx, "CustomAuthenticator", "Signer").user_object)


def test_error_handler_and_backoff_strategy(ctx):
    handler = build(ctx, "CustomErrorHandler", "Errors")
    assert handler.max_retries == 2
    assert handler.interpret(response({}, 404)).action == "IGNORE"
    assert handler.interpret(response({}, 200)).action == "SUCCESS"
    assert handler.backoff(response({}, 500, {"Retry-After": "7"}), 1) == 7.0  # the default backoff
    backoff = build(ctx, "CustomBackoffStrategy", "Backoff")
    assert backoff.wait(response({}, 429, {"X-Wait": "3"}), 1) == 3.0
    assert FilterErrorHandler([], [backoff], clock=SystemClock()).backoff(response({}, 429), 4) == 4.0


def test_an_exception_in_user_code_names_kind_class_place_and_keeps_the_users_traceback_masked(ctx):
    extractor = build(ctx, "CustomRecordExtractor", "Failing", token="s3cr3t")
    with pytest.raises(UserCodeError) as caught:
        extractor.extract(response({"data": []}))
    error = caught.value
    text = str(error.with_context(stream="items"))
    assert text.startswith("stream `items`: the record extractor `components.Failing` raised KeyError in "
                           "`extract_records`: ")
    assert "manifest: manifest.yaml:streams.0.CustomRecordExtractor" in text
    assert "in extract_records" in text and "in helper" in text and 'raise KeyError("no data for " + token)' in text
    assert "s3cr3t" not in text
    assert isinstance(error.__cause__, KeyError)
    assert "builders.py" not in error.user_traceback  # only the user's frames
    import pickle

    assert str(pickle.loads(pickle.dumps(error))) == text


def test_a_transformation_that_raises_names_itself_and_keeps_the_users_frames(ctx):
    transformation = build(ctx, "CustomTransformation", "Upper")
    with pytest.raises(UserCodeError, match=r"the transformation `components.Upper` raised KeyError in `transform`") \
            as caught:
        transformation.apply({"name": "ann"}, {"config": {}})
    assert 'record["name"].upper() + config["suffix"]' in caught.value.user_traceback
    assert "builders.py" not in caught.value.user_traceback


JSON = st.recursive(st.none() | st.booleans() | st.integers(-2**53, 2**53) | st.text(max_size=4),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
                    max_leaves=6)


@pytest.fixture(scope="module")
def echo_router(tmp_path_factory):
    folder = tmp_path_factory.mktemp("router")
    write_components(folder, '''
from dataclasses import dataclass


@dataclass
class Echo:
    partitions: list

    def stream_slices(self):
        yield from self.partitions
''')
    return folder


@settings(max_examples=50, deadline=None)
@given(partitions=st.lists(st.dictionaries(st.text(min_size=1, max_size=4).filter(lambda k: k != "type"), JSON,
                                            max_size=3), max_size=5))
def test_any_json_partitions_become_the_streams_partitions_and_survive_pickling(echo_router, partitions):
    import pickle

    router = build(context(echo_router), "CustomPartitionRouter", "Echo", partitions=partitions)
    routed = list(router.partitions(lambda parent: iter(())))
    assert [dict(p.partition) for p in routed] == partitions
    assert pickle.loads(pickle.dumps(routed)) == routed


REDUCED_MANIFEST = """
version: 6.7.0
type: DeclarativeSource
check: {type: CheckStream, stream_names: [items]}
streams:
  - type: DeclarativeStream
    name: items
    schema_loader: {type: InlineSchemaLoader, schema: {type: object}}
    retriever:
      type: SimpleRetriever
      requester: {type: HttpRequester, url_base: "https://api.test", path: /items}
      record_selector: {type: RecordSelector, extractor: {type: DpathExtractor, field_path: [data]}}
      paginator:
        type: DefaultPaginator
        pagination_strategy: {type: CustomPaginationStrategy, class_name: components.%s}
        page_size_option: {type: RequestOption, inject_into: request_parameter, field_name: limit}
        page_token_option: {type: RequestOption, inject_into: request_parameter, field_name: offset}
      page_size_reduction: {type: PageSizeReduction, minimum_page_size: 1}
"""


def test_page_size_reduction_needs_a_custom_strategy_that_takes_page_size_override(ctx, tmp_path):
    connector = open_connector_text(REDUCED_MANIFEST % "Shrinking", {}, base_dir=str(tmp_path), allow_custom_code=True)
    assert "items" in connector.streams
    with pytest.raises(ConfigError, match=r"`components.OldPages.next_page_token` takes no `page_size_override`"):
        open_connector_text(REDUCED_MANIFEST % "OldPages", {}, base_dir=str(tmp_path), allow_custom_code=True)
