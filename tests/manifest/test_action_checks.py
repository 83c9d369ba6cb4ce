"""validate-manifest on HttpResponseFilter's actions and the retriever's `pagination_reset`."""

import pytest

from framework.manifest import check_manifest_text

MANIFEST = """\
version: 6.7.0
streams:
  - name: items
    retriever:
      requester:
        url_base: https://api.example.com
        path: /items
        error_handler:
          response_filters:
            - http_codes: [409]
              action: ACTION
      record_selector:
        extractor: {field_path: []}
RETRIEVER_MORE
check:
  stream_names: [items]
"""


def check(action: str, more: str = ""):
    return check_manifest_text(MANIFEST.replace("ACTION", action).replace("RETRIEVER_MORE\n", more))


@pytest.mark.parametrize("action", ["SUCCESS", "FAIL", "RETRY", "IGNORE", "RATE_LIMITED", "RESET_PAGINATION",
                                    "REFRESH_TOKEN_THEN_RETRY"])
def test_every_action_airbyte_runs_is_accepted_without_a_word(action):
    checked = check(action)
    assert checked.ok and not checked.diagnostics, [d.format() for d in checked.diagnostics]


@pytest.mark.parametrize("action", ["REDUCE_PAGE_SIZE", "SPLIT_REQUEST_WINDOW"])
def test_actions_accepted_but_not_run_are_a_located_warning(action):
    checked = check(action)
    assert checked.ok
    (warning,) = checked.diagnostics
    assert (warning.severity, warning.code, warning.line, warning.column) == ("warning", "action-not-run", 11, 23)
    assert "RETRY or FAIL" in warning.fix


def test_an_unknown_action_is_an_error_with_a_suggestion():
    (problem,) = check("RESET_PAGINATIONS").diagnostics
    assert problem.severity == "error" and problem.fix == "did you mean `RESET_PAGINATION`?"


def test_pagination_reset_is_accepted_with_its_limits():
    more = ("      pagination_reset:\n        type: PaginationReset\n        action: SPLIT_USING_CURSOR\n"
            "        limits: {type: PaginationResetLimits, number_of_records: 1000}\n")
    checked = check("RESET_PAGINATION", more)
    assert checked.ok and not checked.diagnostics, [d.format() for d in checked.diagnostics]


def test_pagination_reset_limits_with_a_record_filter_are_an_error_as_in_airbyte():
    more = ("      pagination_reset:\n        action: RESET\n        limits: {number_of_records: 10}\n")
    text = MANIFEST.replace("ACTION", "RETRY").replace("RETRIEVER_MORE\n", more).replace(
        "        extractor: {field_path: []}\n",
        "        extractor: {field_path: []}\n        record_filter: {condition: '{{ record.id > 1 }}'}\n")
    (problem,) = check_manifest_text(text).diagnostics
    assert "cannot be used with a `record_filter`" in problem.message
    assert problem.path.endswith("retriever.pagination_reset")


def test_a_bad_pagination_reset_action_is_located():
    (problem,) = check("RETRY", "      pagination_reset: {type: PaginationReset, action: SPLIT}\n").diagnostics
    assert problem.line == 14 and "SPLIT_USING_CURSOR" in (problem.fix or "") + problem.message
