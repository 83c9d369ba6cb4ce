"""The checks of framework.engine.signals: pure, on records and response bodies."""

from __future__ import annotations

from datetime import datetime, timezone

from hypothesis import given
from hypothesis import strategies as st

from framework.engine import signals

records_st = st.lists(st.fixed_dictionaries({"id": st.integers(), "name": st.text(max_size=5)}), min_size=1,
                      max_size=5)


def test_record_lists_finds_nested_lists_of_objects_only():
    body = {"meta": {"count": 2}, "data": {"items": [{"a": 1}, {"a": 2}]}, "tags": ["x", "y"]}
    assert list(signals.record_lists(body)) == [(("data", "items"), 2)]
    assert list(signals.record_lists([{"a": 1}])) == [((), 1)]


def test_empty_extraction_names_the_biggest_list_and_is_silent_when_records_came():
    body = {"tickets": [{"id": i} for i in range(5)], "users": [{"id": 1}]}
    found = signals.empty_extraction("t", 0, body, ["data"])
    assert found is not None and "`tickets`" in found.message and "['tickets']" in found.fix
    assert signals.empty_extraction("t", 3, body, ["data"]) is None
    assert signals.empty_extraction("t", 0, {"tickets": []}, ["data"]) is None  # nothing anywhere: no signal


def test_pagination_stopped_needs_one_page_a_paginator_and_a_next_value():
    body = {"items": [{"id": 1}], "meta": {"next_cursor": "abc"}}
    found = signals.pagination_stopped("t", 1, True, body, 1, "{{ response.next }}")
    assert found is not None and "meta.next_cursor" in found.message and "response.meta.next_cursor" in found.fix
    assert signals.pagination_stopped("t", 2, True, body, 1, None) is None
    assert signals.pagination_stopped("t", 1, False, body, 1, None) is None
    assert signals.pagination_stopped("t", 1, True, {"meta": {"next_cursor": None}}, 1, None) is None


@given(records_st)
def test_a_page_read_twice_is_found_whatever_its_records(records):
    found = signals.repeated_pages("t", [records, list(records)], {"type": "PageIncrement"})
    assert found is not None and "start_from_page: 1" in found.fix


@given(st.lists(records_st, max_size=4, unique_by=lambda page: repr(page)))
def test_distinct_pages_are_never_a_repeat(pages):
    assert signals.repeated_pages("t", pages, None) is None


def test_missing_key_and_cursor_suggest_the_field_the_records_have():
    records = [{"ticket_id": 1, "updated": "x"}, {"ticket_id": 2, "updated": "y"}]
    found = signals.missing_fields("t", records, (("ticketid",),), "updated_at")
    kinds = {s.kind: s for s in found}
    assert "2 of 2 records have no primary key `ticketid` (the records have `ticket_id`)" in kinds["missing-key"].message
    assert "(the records have `updated`)" in kinds["missing-cursor"].message
    assert signals.missing_fields("t", records, (("ticket_id",),), "updated") == []


def test_outside_window_counts_records_beyond_the_bounds():
    window = {"start_time": "2024-01-01", "end_time": "2024-01-31"}
    low, high = datetime(2024, 1, 1, tzinfo=timezone.utc), datetime(2024, 1, 31, tzinfo=timezone.utc)

    def value(record):
        return datetime.fromisoformat(record["at"]).replace(tzinfo=timezone.utc)

    def inside(moment, _window):
        return low <= moment <= high

    records = [{"at": "2024-01-05"}, {"at": "2023-12-01"}, {"at": "2024-02-02"}]
    found = signals.outside_window("t", records, inside, value, window, "at")
    assert found is not None and found.message.startswith("2 of 3 records have `at` outside")
    assert signals.outside_window("t", records[:1], inside, value, window, "at") is None


def test_undeclared_fields_are_listed_and_a_schema_without_properties_is_quiet():
    schema = {"type": "object", "properties": {"id": {}}}
    found = signals.undeclared_fields("t", [{"id": 1, "extra": 2}], schema)
    assert found is not None and "`extra`" in found.message
    assert signals.undeclared_fields("t", [{"id": 1, "extra": 2}], {"type": "object"}) is None


class _Body:
    """A response whose JSON body is ``document`` (what a retriever hands a page watcher)."""

    def __init__(self, document) -> None:
        self.document = document
        self.reads = 0

    def json(self):
        self.reads += 1
        return self.document


FACTS = signals.ReadFacts.of({"name": "t", "retriever": {
    "record_selector": {"extractor": {"field_path": ["data"]}},
    "paginator": {"type": "DefaultPaginator", "pagination_strategy": {
        "type": "CursorPagination", "cursor_value": "{{ response.next }}"}}}})


def test_read_facts_of_a_definition_as_written():
    assert FACTS.field_path == ("data",) and FACTS.paginated and FACTS.cursor_value == "{{ response.next }}"
    assert signals.ReadFacts.of({}) == signals.ReadFacts()
    assert signals.stream_definition({"streams": [{"name": "a"}, {"name": "t", "x": 1}]}, "t") == {"name": "t", "x": 1}


def test_a_unit_watch_reads_the_first_body_only_and_counts_empty_pages():
    watch = signals.UnitWatch("t", FACTS, [["id"]], None)
    first, second = _Body({"tickets": [{"id": 1}], "meta": {"next_cursor": "2"}}), _Body({"tickets": []})
    watch(first, [], [])
    watch(second, [], [])
    watch(None, [{"id": 3}], [{"id": 3}])
    assert (watch.responses, watch.empty, first.reads, second.reads) == (3, 2, 1, 0)
    kinds = [signal.kind for signal in watch.signals()]
    assert kinds == ["extractor-empty"]  # three responses: paging did not stop after one


def test_a_unit_watch_of_one_page_that_names_a_next_page_warns():
    watch = signals.UnitWatch("t", FACTS, [["id"]], None)
    watch(_Body({"data": [{"id": 1}], "meta": {"next_cursor": "abc"}}), [{"id": 1}], [{"id": 1}])
    (signal,) = watch.signals()
    assert signal.kind == "pagination-stopped" and "`meta.next_cursor` = abc" in signal.message


def test_a_unit_watch_keeps_a_bounded_number_of_pages():
    watch = signals.UnitWatch("t", signals.ReadFacts(), [["id"]], None, limit=2)
    for n in range(50):
        watch(None, [{"id": n}], [{"id": n}])
    assert len(watch.pages) == 2 and watch.responses == 50 and watch.empty == 0
    assert watch.signals() == []


def test_pagination_strategy_is_the_streams_as_written_or_none():
    strategy = {"type": "PageIncrement", "page_size": 10}
    manifest = {"streams": [
        {"name": "paged", "retriever": {"paginator": {"pagination_strategy": strategy}}},
        {"name": "plain", "retriever": {"paginator": {"type": "NoPagination"}}},
        {"name": "odd", "retriever": {"paginator": {"pagination_strategy": "not a mapping"}}},
    ]}
    assert signals.pagination_strategy(manifest, "paged") == strategy
    assert signals.pagination_strategy(manifest, "plain") is None
    assert signals.pagination_strategy(manifest, "odd") is None
    assert signals.pagination_strategy(manifest, "missing") is None


def test_none_parameters_names_what_airbyte_would_send_as_none():
    from framework.interpolation import TemplateEngine

    engine = TemplateEngine()
    config = {"units": None, "city": "Oslo"}
    params = {"lang": "{{ config.get('lang') }}", "units": "{{ config['units'] }}", "region": "{{ config['region'] }}",
              "city": "{{ config['city'] }}", "fixed": "yes", "page": "{{ next_page_token['x'] }}",
              "day": "{{ stream_slice['start'] + config['nothing'] }}"}
    found = signals.none_parameters("s", params, lambda template: engine.gives_none(template, {"config": config}))
    assert found is not None and found.kind == "none-parameter"
    assert "request parameters `lang`, `units` are left out" in found.message
    assert "`lang=None`" in found.message and "config.get('lang', ...)" in found.fix
    assert signals.none_parameters("s", {"city": "{{ config['city'] }}"}, lambda t: False) is None
    assert signals.none_parameters("s", "{{ config['params'] }}", lambda t: True) is None
