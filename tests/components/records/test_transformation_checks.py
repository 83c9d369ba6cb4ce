"""validate-manifest on the transformations: what Airbyte accepts passes, mistakes are placed."""

from __future__ import annotations

import textwrap

from framework.manifest import check_manifest_text

HEAD = """\
version: 6.7.0
type: DeclarativeSource
check: {type: CheckStream, stream_names: [s]}
streams:
  - type: DeclarativeStream
    name: s
    schema_loader: {type: InlineSchemaLoader, schema: {type: object}}
    retriever:
      type: SimpleRetriever
      requester: {type: HttpRequester, url_base: "http://x", path: /s}
      record_selector:
        type: RecordSelector
        extractor:
          type: DpathExtractor
          field_path: [data]
"""


def check(extractor_more: str = "", transformations: str = "", selector_more: str = ""):
    text = HEAD + textwrap.indent(textwrap.dedent(extractor_more), " " * 10)
    text += textwrap.indent(textwrap.dedent(selector_more), " " * 8)
    if transformations:
        text += "    transformations:\n" + textwrap.indent(textwrap.dedent(transformations), " " * 6)
    return check_manifest_text(text, file="m.yaml")


def test_every_transformation_of_the_language_validates():
    checked = check(
        extractor_more="""\
        record_expander:
          type: RecordExpander
          expand_records_from_field: [lines, "*", "{{ config['field'] }}"]
          remain_original_record: true
          merge_parent: true
          on_no_records: emit_parent
          parent_fields:
            - {type: ParentFieldPath, parent_path: [id], record_path: [parent, id]}
        """,
        selector_more="""\
        schema_normalization: Default
        transform_before_filtering: true
        """,
        transformations="""\
        - type: AddFields
          condition: "{{ value is not none and path[0] != 'x' and record and stream_slice is defined }}"
          fields: [{path: [reactions, plus_one], value: "{{ record.get('reactions', {}).get('+1') }}"}]
        - {type: KeysToLower}
        - {type: KeysToSnakeCase}
        - {type: KeysReplace, old: " ", new: "{{ config['sep'] }}-{{ record.id }}-{{ stream_partition.id }}"}
        - {type: FlattenFields, flatten_lists: false}
        - type: DpathFlattenFields
          field_path: [data, "*"]
          delete_origin_value: true
          replace_record: false
          key_transformation: {type: KeyTransformation, prefix: "{{ config['p'] }}", suffix: _x}
        """)
    assert checked.ok, [d.message for d in checked.diagnostics]
    source = checked.source
    assert source is not None
    assert [t.type for t in source.streams[0].transformations] == [
        "AddFields", "KeysToLower", "KeysToSnakeCase", "KeysReplace", "FlattenFields", "DpathFlattenFields"]


def test_mistakes_are_placed():
    checked = check(
        extractor_more="""\
        record_expander:
          expand_records_from_field: [lines]
          on_no_records: keep
          parent_fields:
            - {parent_path: ["*"], record_path: [x]}
        """,
        transformations="""\
        - {type: AddFields, condition: "{{ vale }}", fields: [{path: [a], value: "1"}]}
        - {type: KeysReplace, old: a}
        - {type: FlattenFields, flatten_list: true}
        """)
    assert len(checked.errors) == 5, [d.message for d in checked.errors]
    assert {d.line for d in checked.errors} == {18, 20, 22, 23, 24}
    assert all(d.file == "m.yaml" and d.column > 0 for d in checked.errors)
