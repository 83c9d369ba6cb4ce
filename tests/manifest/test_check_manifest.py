"""check_manifest / load_manifest: types by field, $parameters, and pydantic errors made readable."""

import pytest
from conftest import EXAMPLE
from pydantic import ValidationError

from framework.errors import ManifestError
from framework.manifest import check_manifest, check_manifest_text, load_manifest
from framework.models import DeclarativeSource, HttpRequester, SimpleRetriever

MINIMAL = """
version: 6.7.0
definitions:
  requester:
    url_base: https://api.example.com
streams:
  - name: items
    retriever:
      requester: {$ref: '#/definitions/requester'}
      record_selector:
        extractor:
          field_path: [data]
check:
  stream_names: [items]
"""


def codes(checked):
    return sorted(d.code for d in checked.diagnostics)


def test_the_example_manifest_is_valid():
    checked = check_manifest(str(EXAMPLE))
    assert checked.diagnostics == ()
    source = load_manifest(str(EXAMPLE))
    assert isinstance(source, DeclarativeSource)
    assert [s.name for s in source.streams] == ["accounts", "orders", "events"]


def test_types_are_implied_by_fields():
    checked = check_manifest_text(MINIMAL)
    assert checked.ok, [d.format() for d in checked.diagnostics]
    retriever = checked.source.streams[0].retriever
    assert isinstance(retriever, SimpleRetriever)
    assert isinstance(retriever.requester, HttpRequester)
    assert retriever.record_selector.extractor.field_path == ("data",)


def test_models_are_frozen():
    source = check_manifest_text(MINIMAL).source
    with pytest.raises(ValidationError):
        source.streams[0].name = "other"  # type: ignore[misc]
    assert isinstance(source.streams, tuple)


def test_parameters_fill_fields_and_propagate_without_overwriting():
    checked = check_manifest_text("""
version: 6.7.0
definitions:
  base:
    retriever:
      requester:
        url_base: https://api.example.com
        path: /fixed
        $parameters: {path: /from-own-parameters}
      record_selector:
        extractor: {field_path: []}
streams:
  - $ref: '#/definitions/base'
    $parameters: {name: items, path: /items, primary_key: id}
  - $ref: '#/definitions/base'
    retriever:
      requester:
        url_base: https://api.example.com
      record_selector:
        extractor: {field_path: []}
    $parameters: {name: other, path: /other}
check:
  stream_names: [items]
""")
    assert checked.ok, [d.format() for d in checked.diagnostics]
    first, second = checked.source.streams
    assert first.name == "items" and first.primary_key == "id"
    assert first.retriever.requester.path == "/fixed"  # set by the component itself
    assert first.retriever.requester.parameters["path"] == "/from-own-parameters"  # own wins over inherited
    assert first.retriever.record_selector.parameters["name"] == "items"
    assert second.retriever.requester.path == "/other"  # filled from the stream's parameters


def test_unknown_field_gets_did_you_mean_at_the_key():
    checked = check_manifest_text(MINIMAL.replace("field_path: [data]", "field_path: [data]\n          field_pth: 1"))
    [problem] = checked.diagnostics
    assert problem.code == "unknown-field" and problem.severity == "error"
    assert problem.line == 13 and problem.column == 11
    assert problem.path == "streams[0].retriever.record_selector.extractor.field_pth"
    assert problem.fix == "did you mean `field_path`?"


def test_other_unknown_keys_are_ignored_with_a_warning_or_rejected_when_strict():
    text = MINIMAL.replace("field_path: [data]", "field_path: [data]\n          description: the items")
    checked = check_manifest_text(text)
    [problem] = checked.diagnostics
    assert checked.ok and problem.severity == "warning" and problem.code == "ignored-field"
    assert checked.source.streams[0].retriever.record_selector.extractor.field_path == ("data",)
    strict = check_manifest_text(text, strict=True)
    assert not strict.ok and strict.errors[0].code == "unknown-field"


def test_old_field_names_are_errors_not_ignored():
    checked = check_manifest_text(MINIMAL.replace("      record_selector:", "      stream_slicer: {cursor_field: x}\n      record_selector:"))
    [problem] = checked.diagnostics
    assert problem.code == "renamed-field" and "partition_router" in problem.message


def test_parameters_do_not_leak_into_request_options():
    checked = check_manifest_text(MINIMAL.replace("  - name: items", """  - name: items
    $parameters: {field_path: [data], field_name: nope}
    incremental_sync:
      type: DatetimeBasedCursor
      cursor_field: updated_at
      datetime_format: '%Y-%m-%d'
      start_datetime: '2020-01-01'
      start_time_option: {inject_into: request_parameter, field_name: since}"""))
    assert checked.ok, [d.format() for d in checked.diagnostics]
    option = checked.source.streams[0].incremental_sync.start_time_option
    assert option.field_name == "since" and option.field_path is None


def test_misspelt_field_in_cursor():
    text = MINIMAL.replace("    retriever:", """    incremental_sync:
      type: DatetimeBasedCursor
      cursor_field: updated_at
      datetime_format: '%Y-%m-%d'
      start_datetime: '2020-01-01'
      step: P1D
      cursor_granularty: P1D
    retriever:""", 1)
    checked = check_manifest_text(text)
    messages = {d.code: d for d in checked.diagnostics}
    assert messages["unknown-field"].fix == "did you mean `cursor_granularity`?"


def test_a_misspelt_required_field_is_one_error_whose_fix_is_the_rename():
    text = MINIMAL.replace("    retriever:", """    incremental_sync:
      type: DatetimeBasedCursor
      cursor_feild: created_at
      datetime_format: '%Y-%m-%d'
      start_datetime: '2020-01-01'
    retriever:""", 1)
    checked = check_manifest_text(text)
    errors = [d for d in checked.diagnostics if d.severity == "error"]
    assert [(d.code, d.fix) for d in errors] == [("unknown-field", "did you mean `cursor_field`?")]
    assert "updated_at" not in " ".join(d.format() for d in checked.diagnostics)  # no example value as a fix


def test_missing_required_field_suggests_an_example():
    checked = check_manifest_text(MINIMAL.replace("    url_base: https://api.example.com\n", "    path: /x\n"))
    [problem] = checked.diagnostics
    assert problem.code == "missing-field"
    assert "url_base" in problem.message and "HttpRequester" in problem.message
    assert problem.line == 9  # where the incomplete requester is used


def test_unknown_and_unsupported_component_types():
    checked = check_manifest_text(MINIMAL.replace("field_path: [data]", "field_path: [data]\n        type: DpathExtracter"))
    [problem] = checked.diagnostics
    assert problem.code == "unknown-type" and problem.fix == "did you mean `DpathExtractor`?"
    checked = check_manifest_text(MINIMAL.replace(
        "        extractor:\n          field_path: [data]",
        "        extractor:\n          type: CartesianProductStreamSlicer"))
    [problem] = checked.diagnostics
    assert problem.code == "unsupported-component"
    assert "CartesianProductStreamSlicer" in problem.message


def test_component_in_the_wrong_place():
    checked = check_manifest_text(MINIMAL.replace("      requester: {$ref: '#/definitions/requester'}",
                                                  "      requester: {type: NoPagination}"))
    [problem] = checked.diagnostics
    assert problem.code == "wrong-component" and "HttpRequester" in problem.fix


def test_old_path_injection_points_to_request_path():
    checked = check_manifest_text(MINIMAL.replace("check:", """    retriever:
      requester: {$ref: '#/definitions/requester'}
      record_selector: {extractor: {field_path: []}}
      paginator:
        pagination_strategy: {type: CursorPagination, cursor_value: '{{ response.next }}'}
        page_token_option: {inject_into: path}
check:""").replace("  - name: items\n    retriever:\n      requester: {$ref: '#/definitions/requester'}\n      record_selector:\n        extractor:\n          field_path: [data]\n", "  - name: items\n"))
    problems = [d for d in checked.diagnostics if d.code == "invalid-value"]
    assert problems and "RequestPath" in problems[0].fix


def test_wrong_scalar_type_is_plain_english():
    checked = check_manifest_text(MINIMAL.replace("  - name: items", "  - name: items\n    primary_key: {a: 1}"))
    [problem] = checked.diagnostics
    assert problem.code == "wrong-type"
    assert problem.message.startswith("`primary_key` must be")
    assert "template" not in problem.message
    checked = check_manifest_text(MINIMAL.replace("field_path: [data]", "field_path: [data]\n      paginator: {type: DefaultPaginator, pagination_strategy: {type: PageIncrement, page_size: [1]}}").replace("        extractor:\n", "        extractor:\n", 1))
    messages = [d.message for d in checked.diagnostics if d.code == "wrong-type"]
    assert messages and "an integer or a template string" in messages[0]


def test_model_rule_points_at_the_named_field():
    checked = check_manifest_text(MINIMAL.replace("      record_selector:", """      paginator:
        type: DefaultPaginator
        pagination_strategy: {type: PageIncrement}
        page_size_option: {inject_into: header, field_name: x, field_path: [y]}
      record_selector:"""))
    [problem] = checked.diagnostics
    assert problem.code == "invalid-component" and "exactly one of" in problem.message


def test_load_manifest_raises_with_every_problem(write_manifest):
    path = write_manifest("version: 1\nstreams: []\ncheck: {stream_names: [a]}\nbogus: 1\n")
    with pytest.raises(ManifestError) as raised:
        load_manifest(path)
    assert raised.value.diagnostics
    assert path in str(raised.value)


def test_not_a_mapping():
    checked = check_manifest_text("- a\n- b\n")
    assert codes(checked) == ["not-a-mapping"]


def test_template_reaching_python_internals_is_an_error():
    checked = check_manifest_text(MINIMAL.replace("https://api.example.com", "\"{{ ''.__class__.__mro__ }}\""))
    assert "template-unsafe" in codes(checked)


def test_parent_streams_are_typed_and_take_their_own_parameters():
    checked = check_manifest_text("""
version: 6.7.0
definitions:
  requester: {url_base: https://api.example.com}
  users:
    retriever:
      requester: {$ref: '#/definitions/requester'}
      record_selector: {extractor: {field_path: []}}
    $parameters: {name: users, path: /users}
streams:
  - '#/definitions/users'
  - name: teams
    $parameters: {path: /teams}
    retriever:
      requester: {$ref: '#/definitions/requester'}
      record_selector: {extractor: {field_path: []}}
      partition_router:
        type: SubstreamPartitionRouter
        parent_stream_configs:
          - {stream: {$ref: '#/definitions/users'}, parent_key: id, partition_field: user_id}
check: {stream_names: [users]}
""")
    assert checked.ok, [d.format() for d in checked.diagnostics]
    parent = checked.source.streams[1].retriever.partition_router.parent_stream_configs[0].stream
    assert parent.name == "users"
    assert parent.retriever.requester.path == "/users"  # its own parameter, not the child's
    assert checked.source.streams[1].retriever.requester.path == "/teams"
