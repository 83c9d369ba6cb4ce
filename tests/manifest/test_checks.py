"""The checks a schema cannot do: templates, durations, formats, streams, parents, schema files."""

import json

from framework.manifest import check_manifest, check_manifest_text

BASE = """
version: 6.7.0
definitions:
  retriever:
    requester:
      url_base: https://api.example.com
      path: /items
    record_selector:
      extractor: {field_path: []}
streams:
  - name: items
    retriever: {$ref: '#/definitions/retriever'}
STREAM_EXTRA
check:
  stream_names: [items]
"""


def check(extra: str = "", url_base: str | None = None, **replace):
    text = BASE.replace("STREAM_EXTRA", extra)
    if url_base is not None:
        text = text.replace("url_base: https://api.example.com", f"url_base: {url_base}")
    for old, new in replace.items():
        text = text.replace(old, new)
    return check_manifest_text(text)


def by_code(checked):
    out = {}
    for d in checked.diagnostics:
        out.setdefault(d.code, []).append(d)
    return out


CURSOR = """    incremental_sync:
      type: DatetimeBasedCursor
      cursor_field: updated_at
      datetime_format: "FORMAT"
      start_datetime: "2020-01-01"
      STEP
"""


def cursor(fmt="%Y-%m-%d", step="step: P1D\n      cursor_granularity: PT1S"):
    return CURSOR.replace("FORMAT", fmt).replace("STEP", step)


def test_clean_manifest_has_no_problems():
    assert check(cursor()).diagnostics == ()


def test_template_syntax_error():
    found = by_code(check(url_base="\"{{ config['x' }}\""))
    [problem] = found["template-syntax"]
    assert problem.path == "streams[0].retriever.requester.url_base"
    assert problem.line == 6


def test_variable_not_available_in_field():
    found = by_code(check(url_base="\"{{ record.id }}\""))
    [problem] = found["template-variable"]
    assert "`record` is not available in `url_base`" in problem.message


def test_unknown_variable_gets_a_suggestion():
    found = by_code(check(url_base="\"{{ confg['x'] }}\""))
    [problem] = found["template-variable"]
    assert problem.fix == "did you mean `config`?"


def test_variable_available_where_it_belongs():
    text = """    retriever:
      requester:
        url_base: https://x
        path: "/a/{{ stream_partition.id }}"
      partition_router: {type: ListPartitionRouter, cursor_field: id, values: ["1", "2"]}
      record_selector:
        extractor: {field_path: []}
        record_filter: {condition: "{{ record.a > 1 }}"}
      paginator:
        type: DefaultPaginator
        pagination_strategy: {type: CursorPagination, cursor_value: "{{ last_record.id }}", stop_condition: "{{ response.done }}"}
"""
    checked = check_manifest_text(BASE.replace("    retriever: {$ref: '#/definitions/retriever'}\n", text).replace("STREAM_EXTRA", ""))
    assert checked.diagnostics == (), [d.format() for d in checked.diagnostics]


def test_unknown_filter():
    found = by_code(check(url_base="\"{{ config.x | base64encod }}\""))
    assert found.get("template-filter") or found.get("template-syntax")


def test_bad_durations():
    found = by_code(check(cursor(step="step: 1d\n      cursor_granularity: PT1S")))
    [problem] = found["bad-duration"]
    assert problem.path.endswith("incremental_sync.step")
    assert "P1D" in problem.fix


def test_step_without_granularity_and_the_reverse():
    found = by_code(check(cursor(step="step: P1D")))
    assert "needs `cursor_granularity`" in found["invalid-component"][0].message
    found = by_code(check(cursor(step="cursor_granularity: PT1S")))
    assert "needs `step`" in found["invalid-component"][0].message


def test_bad_datetime_format_directive():
    found = by_code(check(cursor(fmt="%Y-%m-%Q")))
    [problem] = found["bad-datetime-format"]
    assert "%Q" in problem.message


def test_special_datetime_formats_are_fine():
    for fmt in ("%s", "%ms", "%s_as_float", "%epoch_microseconds", "%Y-%m-%dT%H:%M:%S.%_msZ"):
        assert check(cursor(fmt=fmt)).diagnostics == (), fmt


def test_duplicate_stream_names():
    extra = "  - name: items\n    retriever: {$ref: '#/definitions/retriever'}\n"
    found = by_code(check(extra))
    [problem] = found["duplicate-stream"]
    assert problem.path == "streams[1].name"


def test_check_names_an_unknown_stream():
    found = by_code(check(**{"stream_names: [items]": "stream_names: [itemz]"}))
    [problem] = found["unknown-stream"]
    assert problem.fix == "did you mean `items`?"
    # a warning (as airbyte-cdk, only `--check` fails on it: discover and read work)
    assert problem.severity == "warning" and "`run-manifest --check` will fail" in problem.message


PARENTS = """
version: 6.7.0
definitions:
  requester: {url_base: https://x}
  selector: {extractor: {field_path: []}}
  a:
    name: a
    retriever:
      requester: {$ref: '#/definitions/requester'}
      record_selector: {$ref: '#/definitions/selector'}
      partition_router:
        type: SubstreamPartitionRouter
        parent_stream_configs:
          - stream: PARENT_OF_A
            parent_key: id
            partition_field: b_id
  b:
    name: b
    retriever:
      requester: {$ref: '#/definitions/requester'}
      record_selector: {$ref: '#/definitions/selector'}
      partition_router:
        type: SubstreamPartitionRouter
        parent_stream_configs:
          - stream: {name: a, retriever: {requester: {$ref: '#/definitions/requester'}, record_selector: {$ref: '#/definitions/selector'}}}
            parent_key: id
            partition_field: a_id
streams:
  - '#/definitions/a'
  - '#/definitions/b'
check: {stream_names: [a]}
"""


def test_parent_that_does_not_exist():
    found = by_code(check_manifest_text(PARENTS.replace("PARENT_OF_A", "customers")))
    [problem] = found["unknown-parent"]
    assert "`customers` does not exist" in problem.message


def test_parents_forming_a_cycle():
    text = PARENTS.replace(
        "PARENT_OF_A",
        "{name: b, retriever: {requester: {$ref: '#/definitions/requester'}, record_selector: {$ref: '#/definitions/selector'}}}",
    )
    found = by_code(check_manifest_text(text))
    [problem] = found["parent-cycle"]
    assert "a -> b -> a" in problem.message or "b -> a -> b" in problem.message


def test_cursor_and_key_missing_from_inline_schema_are_warnings():
    extra = cursor() + """    primary_key: [id, code]
    schema_loader:
      type: InlineSchemaLoader
      schema: {type: object, properties: {id: {type: integer}, updated: {type: string}}}
"""
    checked = check(extra)
    assert checked.ok
    found = by_code(checked)
    assert found["cursor-not-in-schema"][0].severity == "warning"
    assert found["key-not-in-schema"][0].message.startswith("primary key `code`")


def test_schema_files(tmp_path):
    (tmp_path / "schemas").mkdir()
    (tmp_path / "schemas" / "items.json").write_text(json.dumps({"type": "object", "properties": {"uid": {}}}))
    path = tmp_path / "manifest.yaml"
    path.write_text(BASE.replace("STREAM_EXTRA", "    primary_key: id\n"))
    checked = check_manifest(str(path))
    assert [d.code for d in checked.diagnostics] == ["key-not-in-schema"]
    path.write_text(BASE.replace("STREAM_EXTRA", "    schema_loader: {type: JsonFileSchemaLoader, file_path: 'schemas/{{ parameters.name }}_v2.json'}\n    $parameters: {name: items}\n"))
    checked = check_manifest(str(path))
    [problem] = checked.diagnostics
    assert problem.code == "file-not-found" and "items_v2.json" in problem.message


def test_invalid_connection_specification():
    checked = check_manifest_text(BASE.replace("STREAM_EXTRA", "") + "spec:\n  connection_specification: {type: objekt}\n")
    assert [d.code for d in checked.diagnostics] == ["bad-spec"]


def test_a_missing_default_schema_file_is_a_warning_as_airbyte_reads_untyped(tmp_path):
    path = tmp_path / "manifest.yaml"
    path.write_text(BASE.replace("STREAM_EXTRA", ""))
    checked = check_manifest(str(path))
    [problem] = checked.diagnostics
    assert checked.ok and problem.severity == "warning" and problem.code == "file-not-found"
    assert "no `schema_loader`" in problem.message and "schemas/items.json" in problem.message
    path.write_text(BASE.replace("STREAM_EXTRA", "    schema_loader: {type: JsonFileSchemaLoader}\n"))
    [problem] = check_manifest(str(path)).diagnostics  # a loader that names the file: it must be there
    assert problem.severity == "error" and problem.code == "file-not-found"


def test_a_required_property_named_twice_is_a_warning():
    spec = ("spec:\n  connection_specification:\n    type: object\n    required: [api_key, api_key, b]\n"
            "    properties: {api_key: {type: string}, b: {type: string}}\n")
    checked = check_manifest_text(BASE.replace("STREAM_EXTRA", "") + spec)
    [problem] = checked.diagnostics
    assert checked.ok and problem.severity == "warning" and problem.code == "spec-required-twice"
    assert "`api_key`" in problem.message and "`b`" not in problem.message
    assert problem.path == "spec.connection_specification.required" and problem.line == 19


def test_documentation_url_in_the_protocol_spelling_is_an_ignored_field_warning():
    spec = "spec:\n  documentationUrl: https://docs.example.com\n  connection_specification: {type: object}\n"
    checked = check_manifest_text(BASE.replace("STREAM_EXTRA", "") + spec)
    [problem] = checked.diagnostics
    assert checked.ok and problem.severity == "warning" and problem.code == "ignored-field"
    assert problem.fix == "rename it to `documentation_url`"


def test_every_problem_of_a_bad_spec_is_reported_at_its_place():
    spec = "spec:\n  connection_specification:\n    type: objekt\n    properties: {a: {minLength: -1}}\n"
    checked = check_manifest_text(BASE.replace("STREAM_EXTRA", "") + spec)
    assert [d.code for d in checked.diagnostics] == ["bad-spec", "bad-spec"]
    assert {d.path for d in checked.diagnostics} == {"spec.connection_specification.type",
                                                    "spec.connection_specification.properties.a.minLength"}


SPEC = """
spec:
  connection_specification:
    type: object
    properties:
      api_token: {type: string, airbyte_secret: true}
      region: {type: string}
"""


def test_a_config_key_the_spec_does_not_declare_is_a_warning_with_the_likely_key():
    assert "config-key-undeclared" not in by_code(check_manifest_text(BASE.replace("STREAM_EXTRA", "") + SPEC))
    text = (BASE.replace("STREAM_EXTRA", "") + SPEC).replace(
        "path: /items", "path: \"/items/{{ config['api_key'] }}/{{ config.region }}/{{ config.get('regoin') }}\"")
    problems = by_code(check_manifest_text(text)).get("config-key-undeclared", [])
    assert [(p.severity, p.fix) for p in problems] == [("warning", "did you mean `api_token`?"),
                                                       ("warning", "did you mean `region`?")]
    assert "`config['api_key']`" in problems[0].message and problems[0].line == text.splitlines().index(
        next(line for line in text.splitlines() if "path:" in line)) + 1


def test_config_keys_are_not_judged_without_a_spec_listing_them():
    checked = check(**{"path: /items": "path: \"/{{ config['anything'] }}\""})
    assert "config-key-undeclared" not in by_code(checked)


def test_a_partition_key_no_router_gives_is_a_warning_with_the_likely_key():
    router = """    retriever:
      $ref: '#/definitions/retriever'
      partition_router:
        type: ListPartitionRouter
        cursor_field: ticket_id
        values: ["1", "2"]
      requester:
        url_base: https://api.example.com
        path: "/tickets/{{ stream_partition.ticketid }}/{{ stream_partition.ticket_id }}"
"""
    text = BASE.replace("    retriever: {$ref: '#/definitions/retriever'}\nSTREAM_EXTRA", router)
    (problem,) = by_code(check_manifest_text(text))["partition-key-unknown"]
    assert problem.severity == "warning" and problem.fix == "did you mean `ticket_id`?"
    assert "`stream_partition.ticketid`, which the stream's partition router does not give (it gives ticket_id)" \
        in problem.message


def test_a_list_of_schema_loaders_is_checked_loader_by_loader(tmp_path):
    """hubspot's `schema_loader` is a list (Airbyte's schema allows it): each loader is checked at its place in
    the list, and the keys against the merged properties (an earlier loader's winning)."""
    (tmp_path / "schemas").mkdir()
    (tmp_path / "schemas" / "more.json").write_text(json.dumps({"type": "object", "properties": {"code": {}}}))
    loaders = ("    primary_key: [id, code]\n    schema_loader:\n"
               "      - {type: InlineSchemaLoader, schema: {properties: {id: {type: integer}}}}\n"
               "      - {type: JsonFileSchemaLoader, file_path: schemas/more.json}\n"
               "      - {file_path: schemas/gone.json}\n")
    path = tmp_path / "manifest.yaml"
    path.write_text(BASE.replace("STREAM_EXTRA", loaders))
    [problem] = check_manifest(str(path)).diagnostics
    assert (problem.code, problem.path) == ("file-not-found", "streams[0].schema_loader[2].file_path")
    assert "gone.json" in problem.message
    path.write_text(BASE.replace("STREAM_EXTRA", loaders.replace("      - {file_path: schemas/gone.json}\n", "")))
    checked = check_manifest(str(path))
    assert checked.ok and checked.diagnostics == ()  # `code` is in the second loader's schema
    path.write_text(BASE.replace("STREAM_EXTRA", loaders.replace("[id, code]", "[id, uid]").replace(
        "      - {file_path: schemas/gone.json}\n", "")))
    [problem] = check_manifest(str(path)).diagnostics
    assert problem.code == "key-not-in-schema" and "`uid`" in problem.message


def test_streams_may_be_left_out_only_when_dynamic_streams_make_them():
    """As Airbyte's schema: `streams` or `dynamic_streams` (a manifest of made streams alone is read)."""
    [problem] = check_manifest_text("version: 6.7.0\ncheck: {stream_names: []}\n").diagnostics
    assert (problem.code, problem.line, problem.severity) == ("missing-field", 1, "error")
    assert "`streams`" in problem.message and problem.fix and "dynamic_streams" in problem.fix
    made = """version: 6.7.0
check: {stream_names: []}
definitions:
  table: {name: t, retriever: {requester: {url_base: https://x, path: /t}, record_selector: {extractor: {field_path: []}}}}
dynamic_streams:
  - stream_template: {$ref: '#/definitions/table'}
    components_resolver:
      type: ConfigComponentsResolver
      stream_config: {configs_pointer: [tables]}
      components_mapping: [{field_path: [name], value: "{{ components_values['name'] }}"}]
"""
    checked = check_manifest_text(made)
    assert checked.ok and checked.source is not None and checked.source.streams == (), checked.diagnostics
