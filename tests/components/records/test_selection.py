"""RecordFilter and RecordSelector: which records are kept, in which order steps run, normalization."""

from __future__ import annotations

import pytest
from components.records.helpers import build, response, selector

from framework.components.slices import StreamSlice
from framework.errors import InterpolationError

ROWS = {"data": [{"id": 1, "status": "live"}, {"id": 2, "status": "draft"}, {"id": 3, "status": "live"}]}


def variables(**more):
    found = {"config": {}, "parameters": {}}
    found.update(more)
    return found


def test_filter_drops_records_whose_condition_is_false():
    select = selector(["data"], record_filter={"type": "RecordFilter",
                                                "condition": "{{ record['status'] != 'draft' }}"})
    assert [r["id"] for r in select.select(response(ROWS), variables())] == [1, 3]


@pytest.mark.parametrize("skip, kept", [(99, [3]), (3, [])])
def test_filter_sees_config_parameters_and_slice(skip, kept):
    select = build({"type": "RecordSelector", "extractor": {"type": "DpathExtractor", "field_path": ["data"]},
                    "record_filter": {"type": "RecordFilter", "$parameters": {"wanted": "live"},
                                      "condition": "{{ record.id >= config.minimum and "
                                                   "record.status == parameters.wanted and "
                                                   "record.id != stream_partition.skip }}"}})
    found = select.select(response(ROWS), variables(config={"minimum": 2},
                                                    **StreamSlice({"skip": skip}).template_variables()))
    assert [r["id"] for r in found] == kept


@pytest.mark.parametrize("condition, kept", [("", 3), ("true", 3), ("false", 0), ("{{ false }}", 0)])
def test_constant_conditions(condition, kept):
    select = selector(["data"], record_filter={"type": "RecordFilter", "condition": condition})
    assert len(select.select(response(ROWS), variables())) == kept


def test_filter_condition_without_markup_costs_nothing_per_record():
    select = selector(["data"], record_filter={"type": "RecordFilter", "condition": "true"})
    assert select.record_filter is None


def test_filter_template_errors_surface_at_build():
    with pytest.raises(InterpolationError):
        selector(["data"], record_filter={"type": "RecordFilter", "condition": "{{ record['id' }}"})


class Mark:
    """A transformation that records what it saw and marks the record."""

    def __init__(self):
        self.seen = []

    def apply(self, record, variables):
        self.seen.append(record["id"])
        record["status"] = "live"
        return record


@pytest.mark.parametrize("before, kept, seen", [(False, [1, 3], [1, 3]), (True, [1, 2, 3], [1, 2, 3])])
def test_transform_before_or_after_filtering(before, kept, seen):
    mark = Mark()
    select = selector(["data"], transform_before_filtering=before,
                      record_filter={"type": "RecordFilter", "condition": "{{ record.status == 'live' }}"})
    select = select.with_transformations([mark])
    found = select.select(response(ROWS), variables())
    assert [r["id"] for r in found] == kept
    assert mark.seen == seen
    assert all(r["status"] == "live" for r in found)


def test_transformations_see_variables_and_chain():
    select = selector(["data"]).with_transformations([
        build({"type": "AddFields", "fields": [{"path": ["account"], "value": "{{ stream_partition.account }}"}]}),
        build({"type": "AddFields", "fields": [{"path": ["key"], "value": "{{ record.account }}-{{ record.id }}"}]}),
        build({"type": "RemoveFields", "field_pointers": [["status"]]}),
    ])
    found = select.select(response(ROWS), variables(**StreamSlice({"account": "acme"}).template_variables()))
    assert found[0] == {"id": 1, "account": "acme", "key": "acme-1"}


def test_with_transformations_appends_and_leaves_the_original():
    first = Mark()
    base = selector(["data"])
    one = base.with_transformations([first])
    two = one.with_transformations([Mark()])
    assert base.transformations == ()
    assert len(one.transformations) == 1 and len(two.transformations) == 2
    assert two.transformations[0] is first


def test_nothing_to_do_returns_the_extracted_list():
    resp = response(ROWS)
    assert selector(["data"]).select(resp, variables()) is resp.json()["data"]


SCHEMA = {"type": "object", "properties": {"id": {"type": "integer"}, "amount": {"type": ["null", "number"]},
                                            "code": {"type": "string"}}}


def test_default_normalization_casts_to_the_schema():
    select = selector([], schema_normalization="Default").with_schema(SCHEMA)
    found = select.select(response([{"id": "12", "amount": "1.5", "code": 7, "other": "3"}]), variables())
    assert found == [{"id": 12, "amount": 1.5, "code": "7", "other": "3"}]


def test_normalization_none_ignores_the_schema():
    select = selector([]).with_schema(SCHEMA)
    found = select.select(response([{"id": "12"}]), variables())
    assert found == [{"id": "12"}]


def test_normalization_runs_after_transformations_and_filter():
    added = build({"type": "AddFields", "fields": [{"path": ["code"], "value": "{{ record.id * 10 }}"}]})
    select = selector(["data"], schema_normalization="Default",
                      record_filter={"type": "RecordFilter", "condition": "{{ record.id is number }}"})
    select = select.with_transformations([added]).with_schema(SCHEMA)
    found = select.select(response({"data": [{"id": 4}, {"id": "5"}]}), variables())
    assert found == [{"id": 4, "code": "40"}]


class Upper:
    """A transformation without ``apply_page``: applied record by record."""

    def apply(self, record, variables):
        record["status"] = record["status"].upper()
        return record


def test_transformations_without_apply_page_run_record_by_record():
    select = selector(["data"]).with_transformations([Upper(), build({"type": "KeysToLower"})])
    found = select.select(response({"data": [{"ID": 1, "status": "a"}, {"ID": 2, "status": "b"}]}), variables())
    assert found == [{"id": 1, "status": "A"}, {"id": 2, "status": "B"}]


@pytest.mark.parametrize("given, client_side, before", [
    (None, False, False), (None, True, True), (False, True, False), (True, False, True)])
def test_transform_before_filtering_defaults_as_airbyte(given, client_side, before):
    """Left out: before the filter on a client-side incremental stream, after it otherwise."""
    more = {} if given is None else {"transform_before_filtering": given}
    select = selector(["data"], **more)
    if client_side:
        select = select.with_client_side_incremental()
    assert bool(select.transform_before_filtering) is before


@pytest.mark.parametrize("before", [False, True])
def test_the_page_paginators_see_holds_the_transformed_records(before):
    """``last_record`` reads the names the transformations give (Airbyte's is the last record it emits)."""
    select = selector(["data"], transform_before_filtering=before,
                      record_filter={"type": "RecordFilter", "condition": "{{ record.get('id', record.get('ID')) != 2 }}"})
    select = select.with_transformations([build({"type": "KeysToLower"})])
    page, kept = select.select_page(response({"data": [{"ID": 1}, {"ID": 2}, {"ID": 3}]}), variables())
    assert kept == [{"id": 1}, {"id": 3}]
    assert len(page) == 3 and page[-1] == {"id": 3} and page[0] == {"id": 1}
    assert page[1] == ({"id": 2} if before else {"ID": 2})  # filtered out before the transformations ran
