"""validate-manifest on `request_body`: templates checked inside every kind, conflicts located."""

from framework.manifest import check_manifest_text

MANIFEST = """\
version: 6.7.0
streams:
  - name: items
    retriever:
      requester:
        url_base: https://api.example.com
        path: /graphql
        http_method: POST
BODY
      record_selector:
        extractor: {field_path: []}
check:
  stream_names: [items]
"""


def check(body: str):
    return check_manifest_text(MANIFEST.replace("BODY", body))


def test_every_kind_of_body_is_accepted():
    for body in (
        "        request_body: {type: RequestBodyJsonObject, value: {a: {b: [1, '{{ config.x }}']}}}",
        "        request_body: {type: RequestBodyUrlEncodedForm, value: {a: '{{ config.x }}'}}",
        "        request_body: {type: RequestBodyPlainText, value: 'x={{ next_page_token.t }}'}",
        "        request_body: {type: RequestBodyGraphQL, value: {query: 'query { a }', variables: {n: 1}}}",
    ):
        checked = check(body)
        assert checked.ok, [d.format() for d in checked.diagnostics]


def test_a_variable_the_body_cannot_use_is_located_inside_graphql_variables():
    checked = check("        request_body:\n"
                    "          type: RequestBodyGraphQL\n"
                    "          value:\n"
                    "            query: 'query { a }'\n"
                    "            variables: {after: '{{ response.cursor }}'}")
    (problem,) = checked.diagnostics
    assert problem.code == "template-variable" and "`response` is not available" in problem.message
    assert (problem.line, problem.path) == (13, "streams[0].retriever.requester.request_body.value.variables.after")


def test_a_json_body_and_a_form_together_are_an_error_at_the_requester():
    checked = check("        request_body: {type: RequestBodyJsonObject, value: {a: 1}}\n"
                    "        request_body_data: {b: '2'}")
    (problem,) = checked.diagnostics
    assert problem.severity == "error" and "keep only `request_body`" in problem.message
    assert problem.line == 9


def test_an_unknown_body_kind_is_located_with_a_suggestion():
    checked = check("        request_body: {type: RequestBodyXml, value: '<a/>'}")
    (problem,) = checked.diagnostics
    assert problem.code == "unknown-type" and (problem.line, problem.column) == (9, 30)
    assert problem.fix == "did you mean `RequestBodyPlainText`?"


def test_a_graphql_query_that_does_not_parse_is_a_located_warning():
    checked = check("        request_body:\n"
                    "          type: RequestBodyGraphQL\n"
                    "          value: {query: 'query { items(first: 10) { id }'}")
    assert checked.ok
    (warning,) = checked.diagnostics
    assert (warning.severity, warning.code, warning.line) == ("warning", "graphql-syntax", 11)
    assert "line 1, column 32 of the query" in warning.message


def test_a_graphql_query_with_templates_is_left_to_the_api():
    checked = check("        request_body:\n"
                    "          type: RequestBodyGraphQL\n"
                    "          value: {query: 'query { items(first: {{ config.n }}) { id }'}")
    assert checked.ok and not checked.diagnostics
