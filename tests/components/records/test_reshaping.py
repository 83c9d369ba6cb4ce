"""KeysToLower, KeysToSnakeCase, KeysReplace, FlattenFields and DpathFlattenFields."""

from __future__ import annotations

import pytest
from components.records.helpers import build, context
from hypothesis import given
from hypothesis import strategies as st

from framework.components.records.reshaping import flatten, snake_case

VARS = {"config": {"sep": "-"}, "parameters": {}, "stream_slice": {"id": "s1"}, "stream_partition": {"id": "s1"}}


def apply_page(data: dict, records: list[dict], ctx=None) -> list[dict]:
    return build(data, ctx).apply_page(records, VARS)


# -- KeysToLower


def test_keys_to_lower_renames_top_level_keys_only():
    out = apply_page({"type": "KeysToLower"}, [{"Id": 1, "Nested": {"Inner": 2}, "ok": 3}])
    assert out == [{"id": 1, "nested": {"Inner": 2}, "ok": 3}]


def test_keys_to_lower_a_key_that_changes_wins_over_the_lower_case_one():
    assert apply_page({"type": "KeysToLower"}, [{"name": 1, "Name": 2}, {"Name": 2, "name": 1}]) == [
        {"name": 2}, {"name": 2}]


# -- KeysToSnakeCase


@pytest.mark.parametrize("key, expected", [
    ("createdAt", "created_at"), ("CreatedAt", "created_at"), ("Unit Price", "unit_price"),
    ("HTTPResponse", "httpresponse"), ("userID", "user_id"), ("a1b2", "a_1_b_2"), ("2fa", "_2_fa"),
    ("__id__", "_id_"), ("snake_case", "snake_case"), ("with-dash", "with_dash"), ("", ""), ("  ", ""),
    ("Café Crème", "cafe_creme"), ("x.y.z", "x_y_z"), ("ABC", "abc"),
])
def test_snake_case_words(key, expected):
    assert snake_case(key) == expected


def test_keys_to_snake_case_goes_through_objects_not_lists():
    out = apply_page({"type": "KeysToSnakeCase"},
                     [{"userId": 1, "billingAddress": {"zipCode": "1"}, "lineItems": [{"unitPrice": 2}]}])
    assert out == [{"user_id": 1, "billing_address": {"zip_code": "1"}, "line_items": [{"unitPrice": 2}]}]


def test_keys_to_snake_case_later_key_wins_on_collision():
    assert apply_page({"type": "KeysToSnakeCase"}, [{"userId": 1, "user_id": 2}]) == [{"user_id": 2}]


@given(st.text(max_size=12))
def test_snake_case_is_ascii_lower_and_stable(key):
    once = snake_case(key)
    assert once == once.lower()
    assert all(char.isalnum() or char == "_" for char in once if char.isascii())


# -- KeysReplace


def test_keys_replace_constant_texts_everywhere_in_objects():
    out = apply_page({"type": "KeysReplace", "old": " ", "new": "_"},
                     [{"created at": 1, "the customer": {"first name": "a"}, "list": [{"a b": 1}]}])
    assert out == [{"created_at": 1, "the_customer": {"first_name": "a"}, "list": [{"a b": 1}]}]


def test_keys_replace_templates_see_config_record_and_slice():
    out = apply_page({"type": "KeysReplace", "old": "{{ record.prefix }}", "new": "{{ config.sep }}"},
                     [{"prefix": "x", "axb": 1}, {"prefix": "b", "abc": 2}])
    assert out == [{"prefi-": "x", "a-b": 1}, {"prefix": "b", "a-c": 2}]
    out = apply_page({"type": "KeysReplace", "old": "ID", "new": "{{ stream_slice.id }}"}, [{"ID": 1}])
    assert out == [{"s1": 1}]


# -- FlattenFields


def test_flatten_fields_names_nested_keys_by_themselves_unless_taken():
    record = {"id": 1, "customer": {"id": 9, "name": "A"}, "empty": {}}
    assert flatten(record) == {"name": "A", "id": 1}  # the walk meets customer.id before id: id's value wins
    assert flatten({"id": 1, "customer": {"name": "A", "id": 9}}) == {"name": "A", "id": 1}
    assert flatten({"customer": {"id": 9}, "id": 1}) == {"id": 1, "customer.id": 9}


def test_flatten_fields_after_a_list_keys_carry_their_parents():
    record = {"a": {"b": 1}, "tags": ["x", {"k": "v"}], "z": {"y": 2}}
    assert flatten(record) == {"y": 2, "tags.1.k": "v", "tags.0": "x", "a.b": 1}
    assert flatten(record, flatten_lists=False) == {"y": 2, "tags": ["x", {"k": "v"}], "b": 1}


def test_flatten_fields_builds_from_the_manifest():
    assert apply_page({"type": "FlattenFields", "flatten_lists": False}, [{"a": {"b": [1]}}]) == [{"b": [1]}]
    assert apply_page({"type": "FlattenFields"}, [{"a": {"b": [1]}}]) == [{"b.0": 1}]


json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=3),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=2), inner,
                                                                                      max_size=3), max_leaves=12)


@given(st.dictionaries(st.text(max_size=2), json_values, max_size=4))
def test_flattened_records_hold_no_objects(record):
    flat = flatten(record)
    assert all(type(value) is not dict for value in flat.values())
    assert all(type(value) is not list for value in flat.values())


# -- DpathFlattenFields


def dpath(**more) -> dict:
    return {"type": "DpathFlattenFields", "field_path": ["data"], **more}


def test_dpath_flatten_lifts_the_object_fields():
    assert apply_page(dpath(), [{"id": 1, "data": {"a": 1, "b": {"c": 2}}}]) == [
        {"id": 1, "data": {"a": 1, "b": {"c": 2}}, "a": 1, "b": {"c": 2}}]
    assert apply_page(dpath(delete_origin_value=True), [{"id": 1, "data": {"a": 1}}]) == [{"id": 1, "a": 1}]


def test_dpath_flatten_does_nothing_on_a_conflict_or_a_non_object():
    records = [{"id": 1, "data": {"id": 2}}, {"id": 3, "data": [1]}, {"id": 4}, {"id": 5, "data": None}]
    assert apply_page(dpath(delete_origin_value=True), [dict(r) for r in records]) == records


def test_dpath_flatten_key_transformation_and_replace_record():
    keys = {"type": "KeyTransformation", "prefix": "{{ config.p }}", "suffix": "_x"}
    out = apply_page(dpath(key_transformation=keys), [{"id": 1, "data": {"id": 2}}], context({"p": "d_"}))
    assert out == [{"id": 1, "data": {"id": 2}, "d_id_x": 2}]
    out = apply_page(dpath(replace_record=True), [{"id": 1, "data": {"a": 1}}, {"id": 2, "data": {}}])
    assert out == [{"a": 1}, {"id": 2, "data": {}}]


def test_dpath_flatten_wildcards_take_the_first_match_and_delete_every_match():
    records = [{"id": 1, "data": [{"a": 1}, {"b": 2}]}]
    out = apply_page({"type": "DpathFlattenFields", "field_path": ["data", "*"], "delete_origin_value": True},
                     records)
    assert out == [{"id": 1, "data": [None], "a": 1}]  # a list item that is not the last becomes null


def test_dpath_flatten_path_templates_render_with_config():
    out = apply_page({"type": "DpathFlattenFields", "field_path": ["{{ config.key }}"]},
                     [{"attrs": {"a": 1}}], context({"key": "attrs"}))
    assert out == [{"attrs": {"a": 1}, "a": 1}]
