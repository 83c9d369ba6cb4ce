"""The runtime of QueryProperties: chunks, merging by key, the endpoint's list, the selector, building."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from fakes.api_server import FakeApi
from fakes.properties_api import PROPERTIES, serve_properties_api
from hypothesis import given
from hypothesis import strategies as st

from framework.components.query_properties import (
    Chunking,
    PropertiesEndpoint,
    QueryPropertiesReader,
    deep_merge,
    merge_by_key,
    property_name,
    resolved_query_properties,
    with_catalog,
    with_resolved_query_properties,
)
from framework.components.slices import StreamSlice
from framework.engine.connector import open_connector_text
from framework.errors import ConfigError

NAMES = st.lists(st.text("abcdefghij_", min_size=1, max_size=12), max_size=30)


# -- chunks ------------------------------------------------------------------------------------------------


def test_chunks_by_count_start_each_with_the_always_included_properties() -> None:
    chunking = Chunking("property_count", 2)
    assert chunking.split(["a", "b", "c", "d", "e"], ["id"], None) == [["id", "a", "b"], ["id", "c", "d"], ["id", "e"]]


def test_chunks_by_characters_count_each_name_plus_three() -> None:
    chunking = Chunking("characters", 10)
    # "ab" weighs 5, "cde" 6: together 11 > 10
    assert chunking.split(["ab", "cde", "f"], None, None) == [["ab"], ["cde", "f"]]


def test_a_name_longer_than_the_limit_gets_a_chunk_of_its_own_after_an_empty_one() -> None:
    # as Airbyte cuts: the chunk before the long name is sent even when empty
    assert Chunking("characters", 4).split(["long_name", "x"], None, None) == [[], ["long_name"], ["x"]]


def test_the_catalog_narrows_chunked_properties_and_always_included_ones_stay() -> None:
    chunking = Chunking("property_count", 2)
    assert chunking.split(["a", "b", "c", "d"], ["id"], frozenset({"b", "d"})) == [["id", "b", "d"]]


def test_without_a_limit_one_chunk_holds_every_property_then_the_always_included_ones() -> None:
    # Airbyte's order, and its catalog selection is not applied in this case
    assert Chunking("property_count", None).split(["a", "b"], ["id"], frozenset({"a"})) == [["a", "b", "id"]]
    assert Chunking("property_count", 0).split(["a"], None, None) == [["a"]]


@given(NAMES, st.integers(1, 40), st.sampled_from(["characters", "property_count"]))
def test_chunks_keep_every_property_in_order_within_the_limit(names: list[str], limit: int, kind: str) -> None:
    chunks = Chunking(kind, limit).split(names, None, None)
    assert [name for chunk in chunks for name in chunk] == names
    for chunk in chunks:
        weight = sum(len(n) + 3 if kind == "characters" else 1 for n in chunk)
        assert weight <= limit or len(chunk) == 1


def test_without_chunking_the_catalog_narrows_and_always_included_properties_come_first() -> None:
    reader = QueryPropertiesReader(None, ("a", "b", "c"), always_include=("id",), configured=frozenset({"c", "a"}))
    assert reader.chunks() == [["id", "a", "c"]]
    assert QueryPropertiesReader(None, ("a", "b")).chunks() == [["a", "b"]]


# -- merging -----------------------------------------------------------------------------------------------


def test_records_merge_by_key_nested_objects_merged_later_values_winning() -> None:
    key_of = Chunking("property_count", 1, ("id",)).key_of
    first = [{"id": "1", "p": {"a": 1}, "v": "old"}, {"id": "2", "p": {"a": 2}}]
    second = [{"id": "2", "p": {"b": 2}}, {"id": "1", "p": {"b": 1}, "v": "new"}, {"name": "no key"}]
    assert merge_by_key([first, second], key_of) == [
        {"name": "no key"},
        {"id": "1", "p": {"a": 1, "b": 1}, "v": "new"},
        {"id": "2", "p": {"a": 2, "b": 2}},
    ]


def test_a_key_of_several_fields_and_values_of_any_type() -> None:
    key_of = Chunking("property_count", 1, ("parent", "day")).key_of
    assert key_of({"parent": 7, "day": "2024-01-01"}) == (7, "2024-01-01")
    assert key_of({"parent": {"a": 1}, "day": [1]}) == (b'{"a":1}', b"[1]")
    assert key_of({"parent": 7}) is None
    assert key_of({"parent": "", "day": "x"}) is None
    assert key_of({"parent": None, "day": "x"}) is None
    merged = merge_by_key([[{"parent": 1, "day": "d", "a": 1}], [{"parent": 1, "day": "d", "b": 2}]], key_of)
    assert merged == [{"parent": 1, "day": "d", "a": 1, "b": 2}]


@given(st.recursive(st.integers() | st.text(max_size=3),
                    lambda inner: st.dictionaries(st.text("abc", max_size=2), inner, max_size=3), max_leaves=8),
       st.dictionaries(st.text("abc", max_size=2), st.integers(), max_size=3))
def test_deep_merge_keeps_every_key_of_both_sides(left: Any, right: dict) -> None:
    target = dict(left) if isinstance(left, dict) else {"x": left}
    before = set(target)
    deep_merge(target, right)
    assert set(target) == before | set(right)
    assert all(target[k] == v for k, v in right.items())


@given(st.lists(st.dictionaries(st.sampled_from("abcdefgh"), st.integers(), min_size=1), min_size=1, max_size=6),
       st.integers(1, 8))
def test_records_split_by_chunks_of_properties_merge_back_whole(properties: list[dict], limit: int) -> None:
    chunking = Chunking("property_count", limit)
    records = [{"id": f"r{i}", "properties": props} for i, props in enumerate(properties)]
    names = sorted({name for props in properties for name in props})
    pages = [[{"id": r["id"], "properties": {n: r["properties"][n] for n in chunk if n in r["properties"]}}
              for r in records] for chunk in chunking.split(names, None, None)]
    assert merge_by_key(pages, chunking.key_of) == records


# -- the endpoint's property names ----------------------------------------------------------------------------


def test_property_names_by_path_as_airbyte_writes_them() -> None:
    assert property_name({"name": "email"}, ["name"]) == "email"
    assert property_name({"meta": {"id": 5}}, ["meta", "id"]) == "5"
    assert property_name({"list": [{"n": "a"}]}, ["list", "0", "n"]) == "a"
    assert property_name({"other": 1}, ["name"]) == "[]"  # missing: Airbyte's default, as text


# -- reading a page chunk by chunk -------------------------------------------------------------------------


def test_a_page_is_one_request_per_chunk_each_seeing_its_chunk() -> None:
    reader = QueryPropertiesReader("fields", ("a", "b", "c"), chunking=Chunking("property_count", 2))
    seen: list[tuple] = []

    def fetch(variables: dict, params: dict) -> tuple:
        chunk = variables["stream_slice"].extra_fields["query_properties"]
        seen.append((params, chunk, variables["stream_partition"].extra_fields["query_properties"],
                     dict(variables["stream_partition"]), variables["next_page_token"]))
        return f"response {len(seen)}", [{"id": 1}], [{"id": 1, **{name: True for name in chunk}}]

    stream_slice = StreamSlice({"region": "eu"}, {"start": "s"}, {"parent_name": "dropped"})
    response, page, records = reader.read_page(stream_slice, {"next_page_token": 3}, fetch)
    assert seen == [({"fields": "a,b"}, ["a", "b"], ["a", "b"], {"region": "eu"}, 3),
                    ({"fields": "c"}, ["c"], ["c"], {"region": "eu"}, 3)]
    assert (response, page, records) == ("response 2", [{"id": 1}], [{"id": 1, "a": True, "b": True, "c": True}])


def test_without_chunking_the_records_pass_unmerged() -> None:
    reader = QueryPropertiesReader(None, ("a",))
    fetched = reader.read_page(StreamSlice(), {}, lambda v, p: ("r", [], [{"id": 1}, {"id": 1}]))
    assert fetched == ("r", [], [{"id": 1}, {"id": 1}])


# -- built from a manifest, over the fake API ----------------------------------------------------------------

MANIFEST = """
version: 6.7.0
type: DeclarativeSource
check: {type: CheckStream, stream_names: [contacts]}
definitions:
  selector: {type: RecordSelector, extractor: {type: DpathExtractor, field_path: [results]}}
  paginator:
    type: DefaultPaginator
    pagination_strategy: {type: PageIncrement, page_size: 3, start_from_page: 1}
    page_token_option: {type: RequestOption, inject_into: request_parameter, field_name: page}
    page_size_option: {type: RequestOption, inject_into: request_parameter, field_name: per_page}
streams:
  - type: DeclarativeStream
    name: contacts
    primary_key: id
    schema_loader: {type: InlineSchemaLoader, schema: {type: object, properties: {}}}
    retriever:
      type: SimpleRetriever
      requester:
        type: HttpRequester
        url_base: "{{ config['base_url'] }}"
        path: /contacts
        request_parameters:
          archived: "false"
          properties:
            type: QueryProperties
            property_list:
              type: PropertiesFromEndpoint
              property_field_path: [name]
              retriever:
                type: SimpleRetriever
                requester: {type: HttpRequester, url_base: "{{ config['base_url'] }}", path: /properties}
                record_selector: {$ref: "#/definitions/selector"}
                paginator:
                  type: DefaultPaginator
                  pagination_strategy: {type: PageIncrement, page_size: 2, start_from_page: 1}
                  page_token_option: {type: RequestOption, inject_into: request_parameter, field_name: page}
            property_chunking: {type: PropertyChunking, property_limit_type: property_count, property_limit: 4}
            property_selector:
              type: JsonSchemaPropertySelector
      record_selector: {$ref: "#/definitions/selector"}
      paginator: {$ref: "#/definitions/paginator"}
"""


def _connector(api: FakeApi, text: str = MANIFEST) -> Any:
    return open_connector_text(text, {"base_url": api.url})


def test_the_requester_sends_the_chunk_in_its_parameter_and_its_other_parameters(fake_api: FakeApi) -> None:
    serve_properties_api(fake_api)
    connector = _connector(fake_api)
    pages = list(connector.stream("contacts").read_slice(StreamSlice(), connector.config))
    records = [r for page in pages for r in page]
    assert [len(page) for page in pages] == [3, 3, 1]
    assert [r["id"] for r in records] == [f"c{i}" for i in range(7)]
    assert all(set(r["properties"]) == set(PROPERTIES) for r in records)
    asked = [(r.param("properties"), r.param("page"), r.param("archived")) for r in fake_api.received("/contacts")]
    first, second = ",".join(PROPERTIES[:4]), ",".join(PROPERTIES[4:])
    assert asked == [(first, None, "false"), (second, None, "false"), (first, "2", "false"), (second, "2", "false"),
                     (first, "3", "false"), (second, "3", "false")]


def test_the_endpoint_is_read_once_however_many_slices_are_read(fake_api: FakeApi) -> None:
    serve_properties_api(fake_api)
    connector = _connector(fake_api)
    stream = connector.stream("contacts")
    for _ in range(3):
        list(stream.read_slice(StreamSlice(), connector.config))
    assert [r.param("page") for r in fake_api.received("/properties")] == [None, "2", "3", "4"]


def test_the_catalog_narrows_the_properties_and_a_worker_gets_the_list_without_reading_it(fake_api: FakeApi) -> None:
    serve_properties_api(fake_api)
    connector = _connector(fake_api)
    catalog = {"streams": [{"stream": {"name": "contacts", "json_schema": {
        "properties": {"email": {}, "city": {}, "not_a_property": {}}}}}]}
    narrowed = with_catalog(connector.streams, catalog)
    assert narrowed["contacts"].retriever.query_properties.chunks() == [["email", "city"]]
    assert with_catalog(connector.streams, {"streams": []})["contacts"] is connector.stream("contacts")

    resolved = resolved_query_properties(narrowed)
    assert resolved == {"contacts": {"properties": list(PROPERTIES), "configured": ["city", "email", "not_a_property"]}}
    fake_api.requests.clear()
    worker = _connector(fake_api)  # as an executor rebuilds it
    streams = with_resolved_query_properties(worker.streams, resolved)
    list(streams["contacts"].read_slice(StreamSlice(), worker.config))
    assert fake_api.received("/properties") == []
    assert {r.param("properties") for r in fake_api.received("/contacts")} == {"email,city"}


def test_query_properties_in_the_requester_field_are_read_by_templates(fake_api: FakeApi) -> None:
    serve_properties_api(fake_api)
    data = yaml.safe_load(MANIFEST)
    requester = data["streams"][0]["retriever"]["requester"]
    requester["request_parameters"] = {"properties": "{{ stream_slice.extra_fields['query_properties'] | join(',') }}"}
    requester["query_properties"] = {"type": "QueryProperties", "property_list": ["email", "city"],
                                     "always_include_properties": ["phone"]}
    connector = _connector(fake_api, yaml.safe_dump(data))
    list(connector.stream("contacts").read_slice(StreamSlice(), connector.config))
    assert {r.param("properties") for r in fake_api.received("/contacts")} == {"phone,email,city"}


def test_the_deprecated_fetch_properties_from_endpoint_feeds_the_slice(fake_api: FakeApi) -> None:
    serve_properties_api(fake_api)
    data = yaml.safe_load(MANIFEST)
    requester = data["streams"][0]["retriever"]["requester"]
    endpoint = requester["request_parameters"].pop("properties")["property_list"]
    requester["request_parameters"]["properties"] = "{{ stream_partition.extra_fields.query_properties | join(',') }}"
    requester["fetch_properties_from_endpoint"] = endpoint
    connector = _connector(fake_api, yaml.safe_dump(data))
    list(connector.stream("contacts").read_slice(StreamSlice(), connector.config))
    assert {r.param("properties") for r in fake_api.received("/contacts")} == {",".join(PROPERTIES)}


def test_a_custom_retriever_for_the_properties_is_refused_with_its_place(fake_api: FakeApi) -> None:
    data = yaml.safe_load(MANIFEST)
    query = data["streams"][0]["retriever"]["requester"]["request_parameters"]["properties"]
    query["property_list"]["retriever"] = {"type": "CustomRetriever", "class_name": "components.Props"}
    with pytest.raises(ConfigError, match="CustomRetriever .*`components.Props`.* not supported"):
        _connector(fake_api, yaml.safe_dump(data))


def test_an_endpoint_failure_fails_the_read_that_needs_it(fake_api: FakeApi) -> None:
    serve_properties_api(fake_api)
    fake_api.fault(status=400, path="/properties")
    connector = _connector(fake_api)
    endpoint = connector.stream("contacts").retriever.query_properties.property_list
    assert isinstance(endpoint, PropertiesEndpoint)
    with pytest.raises(Exception, match="400"):
        list(connector.stream("contacts").read_slice(StreamSlice(), connector.config))


def _ignoring_404(api: FakeApi) -> Any:
    data = yaml.safe_load(MANIFEST)
    data["streams"][0]["retriever"]["requester"]["error_handler"] = {
        "type": "DefaultErrorHandler",
        "response_filters": [{"type": "HttpResponseFilter", "action": "IGNORE", "http_codes": [404]}]}
    return _connector(api, yaml.safe_dump(data))


def test_an_ignored_chunk_leaves_its_properties_out_and_paging_goes_on(fake_api: FakeApi) -> None:
    serve_properties_api(fake_api)
    connector = _ignoring_404(fake_api)
    fake_api.fault(status=404, path="/contacts", after=0, times=1)  # the first chunk of the first page
    pages = list(connector.stream("contacts").read_slice(StreamSlice(), connector.config))
    assert [len(page) for page in pages] == [3, 3, 1]
    assert set(pages[0][0]["properties"]) == set(PROPERTIES[4:])
    assert set(pages[1][0]["properties"]) == set(PROPERTIES)


def test_an_ignored_last_chunk_ends_the_read_after_the_page(fake_api: FakeApi) -> None:
    serve_properties_api(fake_api)
    connector = _ignoring_404(fake_api)
    fake_api.fault(status=404, path="/contacts", after=1, times=1)  # the last chunk of the first page
    pages = list(connector.stream("contacts").read_slice(StreamSlice(), connector.config))
    assert [len(page) for page in pages] == [3]  # as Airbyte: no response for the paginator, so no next page
    assert set(pages[0][0]["properties"]) == set(PROPERTIES[:4])
    assert len(fake_api.received("/contacts")) == 2
