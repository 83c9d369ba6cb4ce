"""AddFields and RemoveFields."""

from __future__ import annotations

import pytest
from components.records.helpers import build, context
from hypothesis import given
from hypothesis import strategies as st

from framework.errors import DecodeError, FrameworkError, InterpolationError

VARS = {"config": {"region": "eu"}, "parameters": {}, "stream_slice": {"account": "a1"},
        "stream_partition": {"account": "a1"}}


def add(*fields, condition="", ctx=None, **more):
    return build({"type": "AddFields", "fields": list(fields), "condition": condition, **more}, ctx)


def field(path, value, value_type=None):
    data = {"path": path, "value": value}
    if value_type:
        data["value_type"] = value_type
    return data


def test_adds_nested_fields_creating_objects():
    record = {"id": 1, "meta": {"kept": True}}
    add(field(["meta", "origin", "region"], "{{ config.region }}"), field(["source"], "api")).apply(record, VARS)
    assert record == {"id": 1, "meta": {"kept": True, "origin": {"region": "eu"}}, "source": "api"}


def test_values_can_read_the_record_and_earlier_fields():
    record = {"id": 7, "name": "x"}
    add(field(["copied"], "{{ record['id'] }}"), field(["label"], "{{ record.name }}-{{ record.copied }}"),
        field(["account"], "{{ stream_partition.account }}")).apply(record, VARS)
    assert record == {"id": 7, "name": "x", "copied": 7, "label": "x-7", "account": "a1"}


@pytest.mark.parametrize(
    "value, value_type, expected",
    [
        ("{{ 1 }}", None, 1),
        ("{{ record.id }}", None, 7),
        ("{{ record.id }}", "string", "7"),
        ("{{ record.id * 1.5 }}", None, 10.5),
        ("{{ record.flag }}", None, True),
        ("{{ record.text }}", "integer", 42),
        ("{{ record.text }}", "number", 42),
        ("{{ record.text }}", None, 42),
        ("{{ record.text }}", "string", "42"),
        ("{{ record.id }}", "boolean", True),
        ("{{ record.missing }}", None, None),
        ("12", None, 12),
        ("12", "string", "12"),
        ("1.5", "number", 1.5),
        ("api", None, "api"),
        ("false", "boolean", False),
        ("{{ [record.id, 2] }}", None, [7, 2]),
    ],
)
def test_value_types(value, value_type, expected):
    record = {"id": 7, "flag": True, "text": "42"}
    add(field(["out"], value, value_type)).apply(record, VARS)
    assert record["out"] == expected
    assert type(record["out"]) is type(expected)


def test_constant_values_are_evaluated_once():
    ctx = context()
    transformation = add(field(["source"], "api"), ctx=ctx)
    before = ctx.engine.cache_info().hits + ctx.engine.cache_info().misses
    for n in range(5):
        record = {"id": n}
        transformation.apply(record, VARS)
        assert record["source"] == "api"
    assert ctx.engine.cache_info().hits + ctx.engine.cache_info().misses == before


def test_constant_containers_are_not_shared_between_records():
    transformation = add(field(["tags"], "['a']"))
    first, second = {}, {}
    transformation.apply(first, VARS)
    transformation.apply(second, VARS)
    first["tags"].append("b")
    assert second["tags"] == ["a"]


def test_bad_constant_fails_at_build():
    with pytest.raises(InterpolationError):
        add(field(["n"], "many", "integer"))


def test_empty_path_fails_at_build():
    with pytest.raises(FrameworkError, match="empty path"):
        add(field([], "x"))


def test_path_through_a_scalar_is_an_error():
    with pytest.raises(DecodeError, match="`meta` is string"):
        add(field(["meta", "x"], "1")).apply({"meta": "text"}, VARS)


def test_condition_sees_the_value_as_property():
    transformation = add(field(["a"], "{{ record.x }}"), field(["b"], "{{ record.y }}"),
                         condition="{{ property is not none }}")
    record = {"x": 1}
    transformation.apply(record, VARS)
    assert record == {"x": 1, "a": 1}


def test_condition_sees_the_value_as_value_and_its_path_as_airbyte_renders_them():
    transformation = add(field(["a"], "{{ record.x }}"), field(["b", "c"], "{{ record.y }}"),
                         condition="{{ value is not none and path[0] in ['a', 'b'] }}")
    record = {"x": 1, "y": 2}
    transformation.apply(record, VARS)
    assert record == {"x": 1, "y": 2, "a": 1, "b": {"c": 2}}
    only_b = add(field(["a"], "1"), field(["b"], "2"), condition="{{ path == ['b'] }}")
    record = {}
    only_b.apply(record, VARS)
    assert record == {"b": 2}


@pytest.mark.parametrize("condition, added", [("false", False), ("true", True), ("{{ record.ok }}", True)])
def test_constant_and_record_conditions(condition, added):
    record = {"ok": True}
    add(field(["a"], "1"), condition=condition).apply(record, VARS)
    assert ("a" in record) is added


def test_parameters_of_the_component_are_used():
    record = {}
    add(field(["p"], "{{ parameters.name }}"), **{"$parameters": {"name": "orders"}}).apply(record, VARS)
    assert record == {"p": "orders"}


def remove(*pointers, condition=""):
    return build({"type": "RemoveFields", "field_pointers": [list(p) for p in pointers], "condition": condition})


def test_removes_top_level_and_nested_fields_if_present():
    record = {"id": 1, "_links": {"self": "u"}, "meta": {"raw": "x", "kept": 1}}
    remove(["_links"], ["meta", "raw"], ["absent"], ["meta", "absent", "deeper"], ["id", "x"]).apply(record, VARS)
    assert record == {"id": 1, "meta": {"kept": 1}}


def test_wildcards_over_objects_and_lists():
    record = {
        "lines": [{"id": 1, "debug": "a"}, {"id": 2, "debug": "b"}, {"id": 3}],
        "by_region": {"eu": {"total": 1, "raw": {}}, "us": {"total": 2, "raw": []}},
        "scratch": {"a": 1, "b": 2},
    }
    remove(["lines", "*", "debug"], ["by_region", "*", "raw"], ["scratch", "*"]).apply(record, VARS)
    assert record == {"lines": [{"id": 1}, {"id": 2}, {"id": 3}],
                      "by_region": {"eu": {"total": 1}, "us": {"total": 2}}, "scratch": {}}


def test_list_items_by_index_and_wildcard():
    record = {"a": [1, 2, 3], "b": [1, 2, 3]}
    remove(["a", "1"], ["b", "*"]).apply(record, VARS)
    assert record == {"a": [1, 3], "b": []}


def test_remove_condition_sees_the_value_as_property():
    record = {"a": "", "b": "x", "c": None, "nested": {"d": "", "e": 0}}
    remove(["*"], ["nested", "*"], condition="{{ property == '' }}").apply(record, VARS)
    assert record == {"b": "x", "c": None, "nested": {"e": 0}}


def test_remove_condition_false_constant_removes_nothing():
    record = {"a": 1}
    remove(["a"], condition="false").apply(record, VARS)
    assert record == {"a": 1}


json_values = st.recursive(st.none() | st.integers() | st.text(max_size=3),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
                               st.text("abc", max_size=2), inner, max_size=3), max_leaves=10)


@given(record=st.dictionaries(st.text("abcd", min_size=1, max_size=2), json_values, max_size=5),
       key=st.text("abcd", min_size=1, max_size=2))
def test_remove_then_key_is_gone_and_others_stay(record, key):
    expected = {k: v for k, v in record.items() if k != key}
    remove([key]).apply(record, VARS)
    assert record == expected


@given(record=st.dictionaries(st.text("abcd", min_size=1, max_size=2), json_values, max_size=5),
       path=st.lists(st.text("xyz", min_size=1, max_size=2), min_size=1, max_size=3), value=st.integers())
def test_added_field_can_be_read_back(record, path, value):
    add(field(path, str(value), "integer")).apply(record, VARS)
    node = record
    for key in path:
        node = node[key]
    assert node == value


def test_add_fields_condition_sees_the_value_and_the_path():
    """Airbyte renders AddFields' condition with the field's `value` and `path` (source-github's manifest)."""
    transformation = add(field(["reactions", "plus_one"], "{{ record.get('up') }}"),
                         field(["other"], "{{ record.get('missing') }}"),
                         condition="{{ value is not none and path[0] == 'reactions' }}")
    assert transformation.apply({"up": 3}, VARS) == {"up": 3, "reactions": {"plus_one": 3}}
    assert transformation.apply({}, VARS) == {}
    legacy = add(field(["a"], "{{ 1 }}"), condition="{{ property == 1 }}")  # the name Airbyte's schema documents
    assert legacy.apply({}, VARS) == {"a": 1}
