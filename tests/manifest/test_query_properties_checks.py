"""validate-manifest on query properties: the models' rules and where a requester takes its properties from."""

from __future__ import annotations

from framework.manifest import check_manifest_text
from framework.models import HttpRequester, QueryProperties

BASE = """\
version: 6.7.0
streams:
  - name: contacts
    schema_loader: {type: InlineSchemaLoader, schema: {}}
    retriever:
      requester:
        url_base: https://api.example.com
        path: /contacts
REQUESTER
      record_selector:
        extractor: {field_path: [results]}
check:
  stream_names: [contacts]
"""

ENDPOINT = """{type: PropertiesFromEndpoint, property_field_path: [name],
                         retriever: {requester: {url_base: https://api.example.com, path: /properties},
                                     record_selector: {extractor: {field_path: []}}}}"""


def check(requester: str):
    return check_manifest_text(BASE.replace("REQUESTER", requester), "manifest.yaml")


def codes(checked) -> list[tuple[str, str, int, str]]:
    return [(d.code, d.severity, d.line, d.message) for d in checked.diagnostics]


def test_a_query_properties_parameter_is_a_typed_component() -> None:
    checked = check(f"""        request_parameters:
          archived: "false"
          properties:
            type: QueryProperties
            property_list: {ENDPOINT}
            always_include_properties: [id]
            property_chunking:
              type: PropertyChunking
              property_limit_type: characters
              property_limit: 100
              record_merge_strategy: {{type: GroupByKeyMergeStrategy, key: [id, day]}}
            property_selector: {{type: JsonSchemaPropertySelector, transformations: [{{type: RemoveFields, field_pointers: [[a]]}}]}}""")
    assert checked.ok, [d.format() for d in checked.diagnostics]
    requester = checked.source.streams[0].retriever.requester
    assert isinstance(requester, HttpRequester)
    query = requester.request_parameters["properties"]
    assert isinstance(query, QueryProperties)
    assert query.property_chunking.record_merge_strategy.key == ("id", "day")
    assert requester.request_parameters["archived"] == "false"


def test_two_query_properties_in_the_parameters_are_an_error_at_the_second() -> None:
    checked = check("""        request_parameters:
          properties: {type: QueryProperties, property_list: [a]}
          fields: {type: QueryProperties, property_list: [b]}""")
    assert not checked.ok
    assert ("query-properties-twice", "error", 11) in [c[:3] for c in codes(checked)]
    problem = next(d for d in checked.diagnostics if d.code == "query-properties-twice")
    assert "`properties`, `fields`" in problem.message and "remove `fields`" in (problem.fix or "")


def test_fetch_properties_from_endpoint_beside_a_query_properties_parameter_is_an_error() -> None:
    checked = check(f"""        request_parameters:
          properties: {{type: QueryProperties, property_list: [a]}}
        fetch_properties_from_endpoint: {ENDPOINT}""")
    assert ("query-properties-twice", "error", 11) in [c[:3] for c in codes(checked)]


def test_fetch_properties_from_endpoint_alone_is_deprecated() -> None:
    checked = check(f"""        fetch_properties_from_endpoint: {ENDPOINT}""")
    assert checked.ok
    assert [c[:3] for c in codes(checked)] == [("deprecated-field", "warning", 9)]


def test_query_properties_beside_a_parameter_one_is_ignored_with_a_warning() -> None:
    checked = check("""        request_parameters:
          properties: {type: QueryProperties, property_list: [a]}
        query_properties: {type: QueryProperties, property_list: [b]}""")
    assert checked.ok
    assert [c[:3] for c in codes(checked)] == [("ignored-field", "warning", 11)]


def test_rules_of_the_components_are_located() -> None:
    chunking = """        query_properties:
          type: QueryProperties
          property_list: [a]
          property_chunking:
            type: PropertyChunking
            property_limit_type: property_count
            LINE"""
    checked = check(chunking.replace("LINE", "property_limit: -1"))
    assert [(d.code, d.line) for d in checked.diagnostics] == [("invalid-component", 15)]
    assert "`property_limit` must be a positive number" in checked.diagnostics[0].message
    checked = check(chunking.replace("LINE", "record_merge_strategy: {type: GroupByKeyMergeStrategy, key: [id, '']}"))
    assert [(d.code, d.line) for d in checked.diagnostics] == [("invalid-component", 15)]
    assert "`key` needs at least one field" in checked.diagnostics[0].message


def test_a_wrong_limit_type_and_a_missing_list_are_named() -> None:
    checked = check("""        query_properties:
          type: QueryProperties
          property_chunking: {type: PropertyChunking, property_limit_type: chars}""")
    messages = [d.message for d in checked.diagnostics]
    assert any("property_list" in m for m in messages), messages
    assert any("`chars` is not allowed for `property_limit_type`" in m for m in messages), messages


def test_a_misspelt_field_of_a_parameter_query_properties_is_caught() -> None:
    checked = check("""        request_parameters:
          properties: {type: QueryProperties, property_lst: [a]}""")
    assert not checked.ok
    assert any(d.code == "unknown-field" and "property_lst" in d.message for d in checked.diagnostics)
