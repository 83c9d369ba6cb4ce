"""validate-manifest's checks of migrations, config rules, ConditionalStreams and StateDelegatingStream."""

from __future__ import annotations

from framework.manifest import check_manifest_text

STREAM = """
  - type: DeclarativeStream
    name: {name}
    schema_loader: {{type: InlineSchemaLoader, schema: {{}}}}
    retriever:
      type: SimpleRetriever
      requester: {{type: HttpRequester, url_base: "https://x.io", path: /{name}}}
      record_selector: {{type: RecordSelector, extractor: {{type: DpathExtractor, field_path: []}}}}
"""


def manifest(streams: str, spec: str = "") -> str:
    return ("version: 6.7.0\ntype: DeclarativeSource\ncheck: {type: CheckStream, stream_names: [a]}\nstreams:"
            + streams + spec)


def codes(text: str) -> list[tuple[str, int]]:
    return [(d.code, d.line) for d in check_manifest_text(text).errors]


def test_streams_of_two_conditional_groups_may_share_a_name_but_not_with_a_listed_stream():
    two_groups = manifest(STREAM.format(name="a") + """
  - type: ConditionalStreams
    condition: "{{ config['sandbox'] }}"
    streams:""" + STREAM.format(name="b").replace("\n  ", "\n      ") + """
  - type: ConditionalStreams
    condition: "{{ not config['sandbox'] }}"
    streams:""" + STREAM.format(name="b").replace("\n  ", "\n      "))
    assert codes(two_groups) == []
    clash = manifest(STREAM.format(name="a") + """
  - type: ConditionalStreams
    condition: "{{ config['sandbox'] }}"
    streams:""" + STREAM.format(name="a").replace("\n  ", "\n      "))
    [(code, line)] = codes(clash)
    assert code == "duplicate-stream" and line == 17


def test_check_may_name_a_conditional_stream():
    text = manifest("""
  - type: ConditionalStreams
    condition: "{{ config['x'] }}"
    streams:""" + STREAM.format(name="a").replace("\n  ", "\n      "))
    assert codes(text) == []


def test_a_conditions_template_is_checked():
    text = manifest("""
  - type: ConditionalStreams
    condition: "{{ record['x'] }}"
    streams:""" + STREAM.format(name="a").replace("\n  ", "\n      "))
    assert [c for c, _ in codes(text)] == ["template-variable"]


def test_legacy_migration_needs_an_incremental_sync():
    text = manifest(STREAM.format(name="p") + STREAM.format(name="a").replace(
        "    retriever:\n", "    state_migrations: [{type: LegacyToPerPartitionStateMigration}]\n    retriever:\n").replace(
        "field_path: []}}\n", "field_path: []}}\n      partition_router:\n        type: SubstreamPartitionRouter\n"
        "        parent_stream_configs: [{type: ParentStreamConfig, stream: {type: DeclarativeStream, name: p, "
        "retriever: {type: SimpleRetriever, requester: {type: HttpRequester, url_base: 'https://x.io'}, "
        "record_selector: {type: RecordSelector, extractor: {type: DpathExtractor, field_path: []}}}}, "
        "parent_key: id, partition_field: pid}]\n", 1))
    found = check_manifest_text(text).errors
    assert [d.code for d in found] == ["legacy-migration"] and "incremental_sync" in found[0].message


def test_config_rules_with_empty_paths_and_bad_schemas_are_located():
    spec = """
spec:
  type: Spec
  connection_specification: {type: object}
  config_normalization_rules:
    type: ConfigNormalizationRules
    transformations:
      - {type: ConfigRemapField, field_path: [], map: {a: b}}
    validations:
      - type: DpathValidator
        field_path: [x]
        validation_strategy: {type: ValidateAdheresToSchema, base_schema: {type: 12}}
      - type: PredicateValidator
        value: 1
        validation_strategy: {type: ValidateAdheresToSchema, base_schema: "not json"}
"""
    assert [c for c, _ in codes(manifest(STREAM.format(name="a"), spec))] == ["empty-path", "bad-schema",
                                                                              "bad-schema"]


def test_a_retention_period_must_be_a_duration():
    inner = STREAM.format(name="a").replace("\n    ", "\n      ").replace("\n  - type", "\n      type")
    text = manifest("""
  - type: StateDelegatingStream
    name: a
    api_retention_period: 30 days
    full_refresh_stream:""" + inner + "    incremental_stream:" + inner)
    assert [c for c, _ in codes(text)] == ["bad-duration"]
