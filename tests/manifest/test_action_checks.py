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
def test_every_action_that_needs_nothing_more_is_accepted_without_a_word(action):
    checked = check(action)
    assert checked.ok and not checked.diagnostics, [d.format() for d in checked.diagnostics]


SPLITTABLE = """      request_window_splitting: {type: RequestWindowSplitting, min_split_window: PT1H}
    incremental_sync:
      type: DatetimeBasedCursor
      cursor_field: updated_at
      datetime_format: "%Y-%m-%dT%H:%M:%SZ"
      start_datetime: "2024-01-01T00:00:00Z"
      GRANULARITY
"""


def test_split_request_window_with_request_window_splitting_and_a_granular_cursor_is_accepted():
    checked = check("SPLIT_REQUEST_WINDOW", SPLITTABLE.replace("GRANULARITY", "step: P1D\n      cursor_granularity: PT1S"))
    assert checked.ok and not checked.diagnostics, [d.format() for d in checked.diagnostics]


def test_split_request_window_without_request_window_splitting_is_an_error_as_in_airbyte():
    (problem,) = check("SPLIT_REQUEST_WINDOW").diagnostics
    assert "add one (`request_window_splitting" in problem.message


def test_request_window_splitting_needs_a_cursor_granularity():
    (problem,) = check("SPLIT_REQUEST_WINDOW", SPLITTABLE.replace("GRANULARITY", "")).diagnostics
    assert "needs a DatetimeBasedCursor with `cursor_granularity`" in problem.message
    assert problem.path == "streams[0].incremental_sync"


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


REDUCIBLE = """      paginator:
        type: DefaultPaginator
        pagination_strategy: {type: OFFSET_OR_NOT, page_size: 100}
        page_size_option: {type: RequestOption, inject_into: request_parameter, field_name: limit}
      page_size_reduction: {type: PageSizeReduction, minimum_page_size: 10, backoff_seconds: 0}
"""


def test_reduce_page_size_with_page_size_reduction_is_accepted():
    checked = check("REDUCE_PAGE_SIZE", REDUCIBLE.replace("OFFSET_OR_NOT", "OffsetIncrement"))
    assert checked.ok and not checked.diagnostics, [d.format() for d in checked.diagnostics]


def test_page_size_reduction_with_a_custom_strategy_is_accepted_as_in_airbyte():
    custom = REDUCIBLE.replace("{type: OFFSET_OR_NOT, page_size: 100}",
                               "{type: CustomPaginationStrategy, class_name: shop.Pages}")
    checked = check("REDUCE_PAGE_SIZE", custom)
    assert not [d for d in checked.diagnostics if "page_size_reduction" in d.message], \
        [d.format() for d in checked.diagnostics]


def test_reduce_page_size_without_page_size_reduction_is_an_error_as_in_airbyte():
    (problem,) = check("REDUCE_PAGE_SIZE").diagnostics
    assert problem.severity == "error" and "add one (`page_size_reduction" in problem.message
    assert problem.path == "streams[0].retriever"


@pytest.mark.parametrize(("change", "says"), [
    (("OFFSET_OR_NOT", "PageIncrement"), "works with CursorPagination, OffsetIncrement and a "
                                         "CustomPaginationStrategy whose `next_page_token` takes "
                                         "`page_size_override`, not PageIncrement"),
    (("        page_size_option: {type: RequestOption, inject_into: request_parameter, field_name: limit}\n", ""),
     "needs a DefaultPaginator with a `page_size_option`"),
    (("page_size: 100", "page_size: 10"), "can never reduce a `page_size` of 10"),
    (("minimum_page_size: 10,", "reduction_factor: 1,"), "`reduction_factor` must be more than 1"),
])
def test_page_size_reduction_that_cannot_work_is_an_error(change, says):
    more = REDUCIBLE.replace("OFFSET_OR_NOT", "OffsetIncrement").replace(*change)
    if change[0] == "OFFSET_OR_NOT":
        more = REDUCIBLE.replace(*change)
    problems = check("REDUCE_PAGE_SIZE", more).diagnostics
    assert any(says in p.message for p in problems), [p.format() for p in problems]
