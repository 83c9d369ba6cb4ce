"""DynamicSchemaLoader in a manifest: what validate-manifest accepts and what it reports, with places."""

from __future__ import annotations

from framework.manifest import check_manifest

MANIFEST = """\
version: 6.7.0
type: DeclarativeSource
check: {{type: CheckStream, stream_names: [s]}}
streams:
  - type: DeclarativeStream
    name: s
    retriever:
      type: SimpleRetriever
      requester: {{type: HttpRequester, url_base: "http://api", path: /s}}
      record_selector: {{type: RecordSelector, extractor: {{type: DpathExtractor, field_path: []}}}}
    schema_loader:
      type: DynamicSchemaLoader
      $parameters: {{where: fields}}
      retriever:
        type: SimpleRetriever
        requester: {{type: HttpRequester, url_base: "http://api", path: /fields}}
        record_selector: {{type: RecordSelector, extractor: {{type: DpathExtractor, field_path: []}}}}
      schema_type_identifier:
        schema_pointer: ["{{{{ parameters.where }}}}"]
        key_pointer: [name]
        types_mapping:
          - target_type: {target}
            current_type: int64
            condition: "{condition}"
"""


def check(write_manifest, target: str = "integer", condition: str = "{{ raw_schema.nullable }}"):
    return check_manifest(write_manifest(MANIFEST.format(target=target, condition=condition)))


def test_a_dynamic_schema_loader_without_types_on_its_parts_is_valid(write_manifest):
    checked = check(write_manifest)
    assert checked.ok, [d.format() for d in checked.diagnostics]
    identifier = checked.source.streams[0].schema_loader.schema_type_identifier
    assert identifier.schema_pointer == ("{{ parameters.where }}",)
    assert identifier.types_mapping[0].target_type == "integer"


def test_complex_and_paired_target_types_are_valid(write_manifest):
    assert check(write_manifest, "{field_type: array, items: {field_type: array, items: string}}").ok
    assert check(write_manifest, "[string, integer]").ok


def test_an_unknown_target_type_is_located_with_a_suggestion(write_manifest):
    (problem,) = check(write_manifest, "intger").diagnostics
    assert (problem.line, problem.column) == (22, 26)
    assert "`intger` is not allowed for `target_type`" in problem.message and "integer" in problem.fix


def test_items_only_for_arrays(write_manifest):
    (problem,) = check(write_manifest, "{field_type: object, items: string}").diagnostics
    assert "`items` is only for `field_type: array`" in problem.message and problem.line == 22


def test_a_condition_may_use_raw_schema_and_config_only(write_manifest):
    (problem,) = check(write_manifest, condition="{{ record.x }}").diagnostics
    assert "`record` is not available in `condition`" in problem.message and "raw_schema" in problem.fix
    assert problem.line == 24
