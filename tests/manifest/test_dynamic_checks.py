"""validate-manifest's checks of ``dynamic_streams``: the template is checked as a stream, mappings' paths."""

from __future__ import annotations

from framework.manifest import check_manifest_text

HEAD = """version: 6.7.0
type: DeclarativeSource
check: {type: CheckStream, stream_names: [made_later]}
streams:
  - type: DeclarativeStream
    name: a
    schema_loader: {type: InlineSchemaLoader, schema: {}}
    retriever:
      type: SimpleRetriever
      requester: {type: HttpRequester, url_base: "https://x.io", path: /a}
      record_selector: {type: RecordSelector, extractor: {type: DpathExtractor, field_path: []}}
dynamic_streams:
  - type: DynamicDeclarativeStream
    name: made
    stream_template:
      type: DeclarativeStream
      retriever:
        type: SimpleRetriever
        requester: {type: HttpRequester, url_base: "https://x.io", path: /placeholder}
        record_selector: {type: RecordSelector, extractor: {type: DpathExtractor, field_path: []}}
"""


def resolver(mapping: str = "{type: ComponentMappingDefinition, field_path: [name], value: x}",
             kind: str = "ConfigComponentsResolver", more: str = "") -> str:
    source = ("      stream_config: {type: StreamConfig, configs_pointer: [reports]}\n"
              if kind == "ConfigComponentsResolver" else
              "      retriever:\n        type: SimpleRetriever\n"
              "        requester: {type: HttpRequester, url_base: 'https://x.io', path: /tables}\n"
              "        record_selector: {type: RecordSelector, extractor: {type: DpathExtractor, field_path: []}}\n"
              + more)
    return f"    components_resolver:\n      type: {kind}\n{source}      components_mapping:\n        - {mapping}\n"


def problems(text: str) -> list[tuple[str, str, int]]:
    return [(d.severity, d.code, d.line) for d in check_manifest_text(text).diagnostics]


def test_a_valid_definition_has_no_problems_and_check_may_name_a_made_stream():
    assert problems(HEAD + resolver()) == []


def test_an_empty_field_path_is_located():
    found = problems(HEAD + resolver("{type: ComponentMappingDefinition, field_path: [], value: x}"))
    assert found == [("error", "empty-path", 25)]


def test_the_template_is_checked_as_a_stream():
    bad = HEAD.replace("path: /placeholder", "path: /placeholder, http_metod: GET")
    assert ("error", "unknown-field", 19) in [(s, c, line) for s, c, line in problems(bad + resolver())]
    template = HEAD.replace("path: /placeholder}", "path: \"{{ nope }}\"}")
    assert [c for _s, c, _line in problems(template + resolver())] == ["template-variable"]


def test_a_mappings_template_may_use_components_values_but_not_record():
    ok = resolver("{type: ComponentMappingDefinition, field_path: [name], "
                  "value: \"{{ components_values.name }}{{ stream_template_config.name }}\"}")
    assert problems(HEAD + ok) == []
    bad = resolver("{type: ComponentMappingDefinition, field_path: [name], value: \"{{ record.name }}\"}")
    assert [c for _s, c, _line in problems(HEAD + bad)] == ["template-variable"]


def test_a_condition_outside_the_config_resolver_is_ignored_with_a_warning():
    mapping = "{type: ComponentMappingDefinition, field_path: [name], value: x, condition: \"{{ true }}\"}"
    assert problems(HEAD + resolver(mapping, "HttpComponentsResolver")) == [("warning", "ignored-condition", 28)]
    assert problems(HEAD + resolver(mapping)) == []


def test_the_http_resolver_reads_no_parent_stream():
    router = ("        partition_router:\n          type: SubstreamPartitionRouter\n          parent_stream_configs:\n"
              "            - {type: ParentStreamConfig, stream: {$ref: '#/streams/0'}, parent_key: id, "
              "partition_field: pid}\n")
    found = problems(HEAD + resolver(kind="HttpComponentsResolver", more=router))
    assert [(s, c) for s, c, _line in found] == [("error", "resolver-router")]
    plain = "        partition_router: {type: ListPartitionRouter, values: [a, b], cursor_field: region}\n"
    assert problems(HEAD + resolver(kind="HttpComponentsResolver", more=plain)) == []


def test_a_check_config_names_a_dynamic_stream_and_counts_at_least_one():
    check = ("check:\n  type: CheckStream\n  stream_names: [a]\n  dynamic_streams_check_configs:\n"
             "    - {type: DynamicStreamCheckConfig, dynamic_stream_name: %s, stream_count: %d}\n")
    text = HEAD + resolver()
    good = text.replace("check: {type: CheckStream, stream_names: [made_later]}\n", check % ("made", 1))
    assert problems(good) == []
    bad = text.replace("check: {type: CheckStream, stream_names: [made_later]}\n", check % ("mad", 0))
    assert [(c, line) for _s, c, line in problems(bad)] == [("unknown-stream", 7), ("bad-count", 7)]
    dynamic = text.replace("check: {type: CheckStream, stream_names: [made_later]}",
                           "check: {type: CheckDynamicStream, stream_count: 0}")
    assert [(c, line) for _s, c, line in problems(dynamic)] == [("bad-count", 3)]
