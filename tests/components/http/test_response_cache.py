"""The sync's response cache: a parent stream's pages requested once per sync, bounded, one sender per request."""

from __future__ import annotations

import threading
import time
from collections import Counter

import pytest
from fakes.api_server import FakeApi, paged
from hypothesis import given, settings
from hypothesis import strategies as st
from requests.structures import CaseInsensitiveDict

from framework.components.http.request import HttpRequest, RequestParts
from framework.components.http.response_cache import ResponseCache, caches_requests, request_key
from framework.components.http.transport import HttpResponse
from framework.components.partitions import parent_stream_names
from framework.engine.connector import open_connector_text
from framework.engine.plan import open_sync
from framework.manifest import check_manifest_text


def _answer(status: int = 200, body: bytes = b'{"data": [1]}') -> HttpResponse:
    return HttpResponse(status, CaseInsensitiveDict({"Content-Type": "application/json"}), body,
                        HttpRequest("GET", "http://api.test/docs"))


class Sender:
    def __init__(self, status: int = 200, body: bytes = b'{"data": [1]}', delay: float = 0.0):
        self.status, self.body, self.delay = status, body, delay
        self.sent: list[RequestParts] = []
        self.lock = threading.Lock()

    def __call__(self, parts: RequestParts) -> HttpResponse:
        with self.lock:
            self.sent.append(parts)
        if self.delay:
            time.sleep(self.delay)
        return _answer(self.status, self.body)


def _get(path: str = "/docs", **params: object) -> RequestParts:
    return RequestParts(url_base="http://api.test", path=path, params=dict(params))


def test_a_request_is_sent_once_and_each_caller_gets_a_fresh_response():
    cache, send = ResponseCache(), Sender()
    first = cache.send(_get(page=1), send)
    first.json()["data"].append("changed downstream")
    again = cache.send(_get(page=1), send)
    assert len(send.sent) == 1 and again.json() == {"data": [1]} and again is not first
    assert cache.send(_get(page=2), send).status == 200 and len(send.sent) == 2
    assert (cache.hits, cache.misses) == (1, 2)


def test_failures_posts_and_streamed_requests_are_not_kept():
    cache = ResponseCache()
    failing = Sender(status=500)
    cache.send(_get(), failing)
    cache.send(_get(), failing)
    assert len(failing.sent) == 2 and len(cache) == 0
    ok = Sender()
    post = RequestParts(method="POST", url_base="http://api.test", path="/docs", json={"q": 1})
    streamed = RequestParts(url_base="http://api.test", path="/docs", stream=True)
    for parts in (post, post, streamed, streamed):
        cache.send(parts, ok)
    assert len(ok.sent) == 4 and len(cache) == 0
    assert request_key(post) is None and request_key(streamed) is None


def test_the_key_is_the_request_as_its_requester_made_it():
    assert request_key(_get(a=1, b=2)) == request_key(RequestParts(url_base="http://api.test/", path="docs",
                                                                   params={"b": 2, "a": 1}))
    assert request_key(_get(a=1)) != request_key(_get(a=2))
    with_header = RequestParts(url_base="http://api.test", path="/docs", headers={"X-Tenant": "a"})
    assert request_key(with_header) != request_key(_get())


def test_threads_asking_at_once_wait_for_the_one_that_sends():
    cache, send = ResponseCache(), Sender(delay=0.2)
    answers: list[HttpResponse | None] = []
    threads = [threading.Thread(target=lambda: answers.append(cache.send(_get(), send))) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(send.sent) == 1 and len(answers) == 6 and all(a is not None and a.status == 200 for a in answers)


def test_a_failed_send_lets_the_next_caller_send_it():
    cache = ResponseCache()

    def broken(parts: RequestParts) -> HttpResponse:
        raise OSError("down")

    with pytest.raises(OSError):
        cache.send(_get(), broken)
    send = Sender()
    assert cache.send(_get(), send).status == 200 and len(send.sent) == 1


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 20), st.integers(0, 400)), max_size=60))
def test_the_cache_holds_at_most_its_bytes_and_never_a_body_too_large(requests):
    cache = ResponseCache(max_bytes=1000, largest=300)
    for page, size in requests:
        cache.send(_get(page=page), Sender(body=b"x" * size))
        assert cache.bytes <= 1000
        assert cache.bytes == sum(len(kept.content) for kept in cache._kept.values())
        assert all(len(kept.content) <= 300 for kept in cache._kept.values())


def test_which_requesters_send_through_the_cache():
    parents = frozenset({"docs"})
    assert caches_requests("docs", parents, False, False)
    assert not caches_requests("docs", parents, False, True)  # `use_cache: false` written in the manifest
    assert not caches_requests("pages", parents, False, False)
    assert caches_requests("pages", parents, True, True)
    assert not caches_requests(None, parents, False, False)
    # an AsyncRetriever's requesters ask the same request again until a job's status changes
    assert not caches_requests("docs", parents, False, False, ("streams", 0, "retriever", "polling_requester"))
    assert caches_requests("docs", parents, False, False, ("streams", 0, "retriever", "requester"))


MANIFEST = """
version: 6.7.0
type: DeclarativeSource
definitions:
  requester:
    type: HttpRequester
    url_base: "{{ config['base_url'] }}"
  docs:
    type: DeclarativeStream
    name: docs
    primary_key: id
    schema_loader: {type: InlineSchemaLoader, schema: {type: object}}
    retriever:
      type: SimpleRetriever
      requester: {$ref: "#/definitions/requester", path: /docs%s}
      record_selector: {type: RecordSelector, extractor: {type: DpathExtractor, field_path: [data]}}
      paginator:
        type: DefaultPaginator
        pagination_strategy: {type: PageIncrement, page_size: 2, start_from_page: 1}
        page_token_option: {type: RequestOption, inject_into: request_parameter, field_name: page}
        page_size_option: {type: RequestOption, inject_into: request_parameter, field_name: per_page}
  child:
    type: DeclarativeStream
    schema_loader: {type: InlineSchemaLoader, schema: {type: object}}
    retriever:
      type: SimpleRetriever
      requester: {$ref: "#/definitions/requester", path: "/docs/{{ stream_partition.doc }}/{{ parameters.name }}"}
      record_selector: {type: RecordSelector, extractor: {type: DpathExtractor, field_path: [data]}}
      partition_router:
        type: SubstreamPartitionRouter
        parent_stream_configs:
          - {type: ParentStreamConfig, stream: {$ref: "#/definitions/docs"}, parent_key: id, partition_field: doc}
streams:
  - $ref: "#/definitions/docs"
  - {$ref: "#/definitions/child", name: pages, $parameters: {name: pages}}
  - {$ref: "#/definitions/child", name: tables, $parameters: {name: tables}}
check: {type: CheckStream, stream_names: [docs]}
"""


def _read_all(api: FakeApi, manifest: str) -> Counter:
    docs = [{"id": f"d{i}"} for i in range(1, 4)]
    api.route("GET", "/docs", lambda request: paged(docs, request))
    api.route("GET", "/docs/{id}/{kind}", lambda request: {"data": [{"id": request.path_params["kind"]}]})
    connector = open_connector_text(manifest, {"base_url": api.url})
    for name in ("docs", "pages", "tables"):
        sync = open_sync(connector, connector.streams[name], None)
        for unit in sync.plan():
            for _ in sync.read(unit):
                pass
    return Counter(r.path for r in api.received())


def test_a_parent_read_as_a_stream_and_for_two_substreams_is_requested_once_per_page():
    with FakeApi() as api:
        counts = _read_all(api, MANIFEST % "")
    assert counts["/docs"] == 2  # its two pages, once each (three reads of them without the cache)
    assert counts["/docs/d1/pages"] == counts["/docs/d3/tables"] == 1


def test_use_cache_false_on_a_parent_is_respected():
    with FakeApi() as api:
        counts = _read_all(api, MANIFEST % ", use_cache: false")
    assert counts["/docs"] == 6


def test_the_parent_streams_are_found_at_any_depth():
    checked = check_manifest_text(MANIFEST % "", "<manifest>", None)
    assert checked.source is not None
    assert parent_stream_names(checked.source.streams) == frozenset({"docs"})
    assert parent_stream_names([]) == frozenset()


def test_a_spark_tasks_connector_keeps_no_responses():
    text = MANIFEST % ""
    assert open_connector_text(text, {"base_url": "http://api.test"}).context.response_cache is not None
    task = open_connector_text(text, {"base_url": "http://api.test"}, keep_responses=False)
    assert task.context.response_cache is None
    assert all(s.retriever.requester.client.cache is None for s in task.streams.values())  # type: ignore[attr-defined]
