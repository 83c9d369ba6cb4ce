"""ParentStreamConfig `lazy_read_pointer`: a first sync reads the child's first page from the parent record."""

from __future__ import annotations

import pytest
from engine.incremental_kit import at, cursor, iso, option, source, stream, sync, write
from pydantic import ValidationError

from framework.models import ParentStreamConfig

ACCOUNTS = [{"id": 1, "updated_at": iso(at(0)),
             "orders": {"data": [{"id": "a", "updated_at": iso(at(1))}], "next": "2"}},
            {"id": 2, "updated_at": iso(at(0)), "orders": {"data": [], "next": None}}]
MORE = {("1", "2"): {"data": [{"id": "b", "updated_at": iso(at(2))}], "next": None},
        ("1", None): {"data": [{"id": "a", "updated_at": iso(at(1))}], "next": "2"},
        ("2", None): {"data": [{"id": "c", "updated_at": iso(at(3))}], "next": None}}


def manifest(incremental: dict | None) -> dict:
    router = {"type": "SubstreamPartitionRouter", "parent_stream_configs": [
        {"type": "ParentStreamConfig", "stream": stream("accounts", "/accounts"), "parent_key": "id",
         "partition_field": "account_id", "lazy_read_pointer": ["orders"]}]}
    child = stream("orders", "/accounts/{{ stream_partition.account_id }}/orders", incremental=incremental,
                   router=router)
    child["retriever"]["paginator"] = {
        "type": "DefaultPaginator", "page_token_option": option("page"),
        "pagination_strategy": {"type": "CursorPagination", "cursor_value": "{{ response.next }}",
                                "stop_condition": "{{ not response.next }}"}}
    return source(child)


def install(api) -> None:
    api.route("GET", "/accounts", {"data": ACCOUNTS})
    api.route("GET", "/accounts/{a}/orders", lambda r: MORE[(r.path_params["a"], r.param("page"))])


def test_a_first_sync_reads_the_embedded_page_and_requests_only_the_pages_after_it(tmp_path, fake_api):
    install(fake_api)
    run = sync(write(tmp_path, manifest(None)), fake_api)
    assert not run.failed, run.errors()
    assert run.ids() == ["a", "b"]  # account 2's embedded page is empty, and says there is no more
    assert [(r.path, r.param("page")) for r in run.requests if r.path.endswith("/orders")] == [
        ("/accounts/1/orders", "2")]


def test_with_state_every_page_is_requested(tmp_path, fake_api):
    install(fake_api)
    path = write(tmp_path, manifest(cursor(step=None, cursor_granularity=None, start_time_option=None,
                                           end_time_option=None)))
    first = sync(path, fake_api)
    assert first.ids() == ["a", "b"]
    second = sync(path, fake_api, first.state)
    assert [(r.path, r.param("page")) for r in second.requests if r.path.endswith("/orders")] == [
        ("/accounts/1/orders", None), ("/accounts/1/orders", "2"), ("/accounts/2/orders", None)]
    assert second.ids() == ["a", "b", "c"]


def test_a_wildcard_pointer_is_refused():
    with pytest.raises(ValidationError, match="wildcard"):
        ParentStreamConfig.model_validate({"type": "ParentStreamConfig", "stream": {
            "type": "DeclarativeStream", "name": "p", "retriever": {
                "type": "SimpleRetriever", "requester": {"type": "HttpRequester", "url_base": "http://x", "path": "/"},
                "record_selector": {"type": "RecordSelector",
                                    "extractor": {"type": "DpathExtractor", "field_path": []}}}},
            "parent_key": "id", "partition_field": "p", "lazy_read_pointer": ["items", "*"]})
