"""RecordExpander: the extractor's records into the items of a list inside each."""

from __future__ import annotations

import pytest
from components.records.helpers import build, context, response
from hypothesis import given
from hypothesis import strategies as st

from framework.components.records.expansion import json_copy
from framework.errors import ConfigError, DecodeError

ORDER = {"id": 7, "customer": {"name": "A"}, "lines": {"data": [{"sku": "a", "qty": 1}, {"sku": "b", "qty": 2}]}}


def expander(**more):
    return build({"type": "RecordExpander", "expand_records_from_field": ["lines", "data"], **more})


def test_items_become_records_copied_from_the_list():
    record = json_copy(ORDER)
    items = expander().expand(record)
    assert items == [{"sku": "a", "qty": 1}, {"sku": "b", "qty": 2}]
    items[0]["qty"] = 99
    assert record == ORDER


def test_remain_original_record_embeds_a_copy_of_the_record():
    items = expander(remain_original_record=True).expand(json_copy(ORDER))
    assert items[0] == {"sku": "a", "qty": 1, "original_record": ORDER}
    items[0]["original_record"]["customer"]["name"] = "changed"
    assert items[1]["original_record"]["customer"]["name"] == "A"


def test_merge_parent_then_parent_fields_then_original_record():
    more = {"merge_parent": True, "parent_fields": [
        {"parent_path": ["customer", "name"], "record_path": ["buyer", "name"]},
        {"parent_path": ["missing"], "record_path": ["sku"]},
    ]}
    items = expander(**more).expand(json_copy(ORDER))
    assert items[0] == {"id": 7, "customer": {"name": "A"}, "lines": {}, "sku": None, "qty": 1,
                        "buyer": {"name": "A"}}
    items[0]["customer"]["name"] = "x"
    assert items[1]["customer"]["name"] == "A"


def test_items_that_are_not_objects():
    record = {"id": 1, "tags": ["a", "b"]}
    plain = build({"type": "RecordExpander", "expand_records_from_field": ["tags"]})
    assert plain.expand(record) == ["a", "b"]
    carrying = build({"type": "RecordExpander", "expand_records_from_field": ["tags"],
                      "parent_fields": [{"parent_path": ["id"], "record_path": ["parent_id"]}]})
    assert carrying.expand(record) == [{"value": "a", "parent_id": 1}, {"value": "b", "parent_id": 1}]


@pytest.mark.parametrize("record", [{"id": 1}, {"id": 1, "lines": {"data": []}}, {"id": 1, "lines": {"data": "x"}}])
def test_no_items_skip_or_emit_the_parent(record):
    assert expander().expand(record) == []
    assert expander(on_no_records="emit_parent").expand(record) == [record]


def test_wildcards_expand_every_matched_list_in_order():
    record = {"sections": [{"items": [1, 2]}, {"items": "no"}, {"items": [3]}], "name": "s"}
    items = build({"type": "RecordExpander", "expand_records_from_field": ["sections", "*", "items"],
                   "merge_parent": True}).expand(record)
    assert [item["value"] for item in items] == [1, 2, 3]
    assert items[0]["sections"] == [{}, {"items": "no"}, {}]  # only the lists are left out
    assert record["sections"][0] == {"items": [1, 2]}


def test_path_templates_render_with_config():
    built = build({"type": "RecordExpander", "expand_records_from_field": ["{{ config.field }}"]},
                  context({"field": "rows"}))
    assert built.expand({"rows": [{"a": 1}]}) == [{"a": 1}]


@pytest.mark.parametrize("paths", [{"parent_path": ["*"], "record_path": ["x"]},
                                   {"parent_path": ["id"], "record_path": ["a[0]"]},
                                   {"parent_path": [], "record_path": ["x"]}])
def test_parent_field_paths_name_one_field(paths):
    with pytest.raises(ValueError, match="glob|empty"):
        expander(parent_fields=[paths])


@pytest.mark.parametrize("glob", ["*", "a?", "[0]"])
def test_parent_field_paths_rendered_to_a_glob_fail_at_build(glob):
    with pytest.raises(ConfigError, match="record_path"):
        build({"type": "RecordExpander", "expand_records_from_field": ["lines"],
               "parent_fields": [{"parent_path": ["id"], "record_path": ["{{ config.key }}"]}]}, context({"key": glob}))


def test_a_record_path_through_a_scalar_fails_naming_it():
    bad = expander(parent_fields=[{"parent_path": ["id"], "record_path": ["sku", "id"]}])
    with pytest.raises(DecodeError, match="sku"):
        bad.expand(json_copy(ORDER))


def test_the_extractor_expands_before_checking_records():
    select = build({"type": "RecordSelector", "extractor": {
        "type": "DpathExtractor", "field_path": ["orders"],
        "record_expander": {"type": "RecordExpander", "expand_records_from_field": ["lines", "data"],
                            "parent_fields": [{"parent_path": ["id"], "record_path": ["order_id"]}]}}})
    page, kept = select.select_page(response({"orders": [ORDER, {"id": 8, "lines": {"data": []}}]}),
                                    {"config": {}, "parameters": {}})
    assert kept == [{"sku": "a", "qty": 1, "order_id": 7}, {"sku": "b", "qty": 2, "order_id": 7}]
    assert page == kept


json_values = st.recursive(st.none() | st.integers() | st.text(max_size=3),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=2), inner,
                                                                                      max_size=3), max_leaves=10)


@given(st.lists(json_values, max_size=5))
def test_every_item_is_emitted_once_in_order(items):
    record = {"list": json_copy(items)}
    out = build({"type": "RecordExpander", "expand_records_from_field": ["list"]}).expand(record)
    assert out == items
