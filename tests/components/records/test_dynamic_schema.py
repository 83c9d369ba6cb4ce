"""DynamicSchemaLoader: a stream schema built from a record the API returns."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from framework.components.context import BuildContext
from framework.components.http.transport import FunctionTransport, Transport
from framework.components.records import load_schema
from framework.components.records.dynamic_schema import AIRBYTE_TYPES, SchemaTypeError
from framework.errors import ReadError
from framework.models.schema_loaders import DynamicSchemaLoader

PATH = ("streams", 0, "schema_loader")
NULLABLE = {name: schema for name, schema in AIRBYTE_TYPES.items()}


def context(config: dict | None = None, transport: Transport | None = None) -> BuildContext:
    return BuildContext(config=config or {}, transport=transport, sleep=lambda seconds: None)


def loader(identifier: dict | None = None, **more: Any) -> DynamicSchemaLoader:
    return DynamicSchemaLoader.model_validate({
        "type": "DynamicSchemaLoader",
        "retriever": {"type": "SimpleRetriever",
                      "requester": {"type": "HttpRequester", "url_base": "http://api", "path": "/fields"},
                      "record_selector": {"type": "RecordSelector",
                                          "extractor": {"type": "DpathExtractor", "field_path": ["data"]}}},
        "schema_type_identifier": identifier or {"schema_pointer": ["fields"], "key_pointer": ["name"],
                                                 "type_pointer": ["type"]},
        **more})


def serve(*bodies: Any) -> tuple[FunctionTransport, list]:
    seen: list = []

    def handler(request):
        seen.append(request.url)
        return 200, {"Content-Type": "application/json"}, bodies[min(len(seen), len(bodies)) - 1]

    return FunctionTransport(handler), seen


def load(model: DynamicSchemaLoader, *bodies: Any, config: dict | None = None) -> dict:
    transport, _ = serve(*bodies)
    return load_schema(model, context(config, transport=transport), "contacts", PATH)


def record(*fields: dict) -> dict:
    return {"data": [{"fields": list(fields)}]}


def test_fields_become_nullable_properties_of_their_airbyte_types_in_order():
    schema = load(loader(), record({"name": "id", "type": "integer"}, {"name": "when", "type": "date"},
                                   {"name": "plain"}))
    assert schema == {"$schema": "https://json-schema.org/draft-07/schema#", "type": "object",
                      "additionalProperties": True,
                      "properties": {"id": {"type": ["null", "integer"]},
                                     "when": {"type": ["null", "string"], "format": "date"},
                                     "plain": {"type": ["null", "string"]}}}
    assert list(schema["properties"]) == ["id", "when", "plain"]


def test_without_a_type_pointer_every_field_is_a_string():
    model = loader({"schema_pointer": ["fields"], "key_pointer": ["name"]})
    schema = load(model, record({"name": "a", "type": "integer"}))
    assert schema["properties"] == {"a": {"type": ["null", "string"]}}


def test_types_mapping_first_match_wins_and_conditions_see_the_raw_definition():
    model = loader({"schema_pointer": ["fields"], "key_pointer": ["name"], "type_pointer": ["type"],
                    "types_mapping": [
                        {"current_type": "num", "target_type": "integer",
                         "condition": "{{ raw_schema['scale'] == 0 }}"},
                        {"current_type": "num", "target_type": "number"},
                        {"current_type": ["text", "null"], "target_type": ["string", "integer"]},
                        {"current_type": "list", "target_type": {"field_type": "array",
                                                                 "items": {"field_type": "array",
                                                                           "items": "integer"}}},
                    ]})
    schema = load(model, record({"name": "a", "type": "num", "scale": 0}, {"name": "b", "type": "num", "scale": 2},
                                {"name": "c", "type": ["text", "null"]}, {"name": "d", "type": "list"}))
    assert schema["properties"] == {
        "a": {"type": ["null", "integer"]},
        "b": {"type": ["null", "number"]},
        "c": {"oneOf": [{"type": ["null", "string"]}, {"type": ["null", "integer"]}]},
        "d": {"type": ["null", "array"], "items": {"type": ["null", "array"], "items": {"type": ["null", "integer"]}}},
    }


def test_pointers_are_templates_of_the_config():
    model = loader({"schema_pointer": ["{{ config['where'] }}"], "key_pointer": ["name"]})
    assert load(model, {"data": [{"cols": [{"name": "x"}]}]}, config={"where": "cols"})["properties"] == {
        "x": {"type": ["null", "string"]}}


def test_filter_and_transformations_work_on_the_properties():
    model = loader(schema_filter={"type": "RecordFilter",
                                  "condition": "{{ not (record.keys() | first).startswith('_') }}"},
                   schema_transformations=[{"type": "AddFields", "fields": [
                       {"path": ["added"], "value": "{{ {'type': 'boolean'} }}"}]},
                       {"type": "RemoveFields", "field_pointers": [["drop"]]}])
    schema = load(model, record({"name": "_hidden", "type": "string"}, {"name": "drop", "type": "string"},
                                {"name": "kept", "type": "boolean"}))
    assert schema["properties"] == {"kept": {"type": ["null", "boolean"]}, "added": {"type": "boolean"}}


def test_no_record_gives_an_empty_schema_and_only_the_first_record_counts():
    assert load(loader(), {"data": []})["properties"] == {}
    transport, seen = serve({"data": [{"fields": [{"name": "a"}]}, {"fields": [{"name": "b"}]}]})
    schema = load_schema(loader(), context(transport=transport), "contacts", PATH)
    assert list(schema["properties"]) == ["a"] and len(seen) == 1


def test_only_the_first_page_is_requested():
    model = loader(retriever={
        "type": "SimpleRetriever",
        "requester": {"type": "HttpRequester", "url_base": "http://api", "path": "/fields"},
        "record_selector": {"type": "RecordSelector", "extractor": {"type": "DpathExtractor", "field_path": ["data"]}},
        "paginator": {"type": "DefaultPaginator", "pagination_strategy": {"type": "PageIncrement", "page_size": 1},
                      "page_token_option": {"type": "RequestOption", "inject_into": "request_parameter",
                                            "field_name": "page"}}})
    transport, seen = serve(record({"name": "a"}), record({"name": "b"}))
    assert list(load_schema(model, context(transport=transport), "c", PATH)["properties"]) == ["a"]
    assert len(seen) == 1


def test_one_read_per_definition_and_build_context():
    transport, seen = serve(record({"name": "a"}))
    ctx = context(transport=transport)
    first = load_schema(loader(), ctx, "one", PATH)
    first["properties"]["mutated"] = {}
    second = load_schema(loader(), ctx, "two", ("streams", 1, "schema_loader"))
    assert len(seen) == 1 and "mutated" not in second["properties"]
    load_schema(loader(), context(transport=transport), "one", PATH)
    assert len(seen) == 2  # another connector opening reads again


@pytest.mark.parametrize(("fields", "message"), [
    ([{"name": 5, "type": "string"}], "not a field name"),
    ([{"name": "a", "type": "int64"}], "'int64' is not an Airbyte type"),
    ([{"name": "a", "type": ["string", "integer", "number"]}], "neither a type name nor two of them"),
    ([{"name": "a", "type": ["string", "null"]}], "'null' is not an Airbyte type"),
])
def test_bad_field_definitions_name_the_stream_and_the_fix(fields, message):
    with pytest.raises(SchemaTypeError, match=message) as caught:
        load(loader(), record(*fields))
    assert "stream `contacts`" in str(caught.value) and caught.value.failure_type == "config_error"


def test_a_record_without_the_field_list_is_an_error():
    with pytest.raises(ReadError, match="nothing at `fields`, not a list of field definitions"):
        load(loader(), {"data": [{"columns": []}]})


@given(st.lists(st.tuples(st.text(min_size=1, max_size=8), st.sampled_from(sorted(AIRBYTE_TYPES))), max_size=12))
def test_any_field_list_gives_the_last_type_of_each_name_in_first_seen_order(pairs):
    expected: dict[str, dict] = {}
    for name, kind in pairs:
        expected[name] = copy.deepcopy(NULLABLE[kind])
    schema = load(loader(), record(*({"name": name, "type": kind} for name, kind in pairs)))
    assert schema["properties"] == expected and list(schema["properties"]) == list(expected)
