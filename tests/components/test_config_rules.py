"""The spec's config rules: transformations and validations, as airbyte-cdk 7.39 applies them."""

from __future__ import annotations

import copy
from datetime import datetime, timezone
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from framework.components.config_rules import ValidationFailed
from framework.components.context import BuildContext
from framework.errors import ConfigError
from framework.interpolation import TemplateEngine
from framework.models import REGISTRY
from framework.temporal.clock import FixedClock

PATH = ("spec", "config_normalization_rules", "transformations", 0)


def ctx() -> BuildContext:
    clock = FixedClock(datetime(2024, 1, 2, tzinfo=timezone.utc))
    return BuildContext(config={}, engine=TemplateEngine(clock), transport=object(), clock=clock)


def build(data: dict) -> Any:
    model = REGISTRY[data["type"]].model_validate(data)
    return ctx().build(model, PATH)


def transformed(rule: dict, config: dict) -> dict:
    working = copy.deepcopy(config)
    build(rule).transform(working)
    return working


# -- ConfigAddFields ----------------------------------------------------------------------------------------


def test_add_fields_renders_with_the_config_and_creates_nested_objects():
    rule = {"type": "ConfigAddFields", "fields": [
        {"path": ["api", "host"], "value": "{{ config['base'] | replace('https://', '') }}"},
        {"path": ["pages"], "value": "{{ config['per_page'] * 2 }}"},
        {"path": ["label"], "value": "fixed"},
        {"path": ["count"], "value": "5", "value_type": "string"}]}
    assert transformed(rule, {"base": "https://x.io", "per_page": 50}) == {
        "base": "https://x.io", "per_page": 50, "api": {"host": "x.io"}, "pages": 100, "label": "fixed",
        "count": "5"}


def test_add_fields_condition_sees_the_value_and_its_path():
    rule = {"type": "ConfigAddFields", "condition": "{{ value > 10 and path == ['big'] }}", "fields": [
        {"path": ["big"], "value": "{{ config['n'] }}"}]}
    assert transformed(rule, {"n": 11}) == {"n": 11, "big": 11}
    assert transformed(rule, {"n": 3}) == {"n": 3}


def test_add_fields_through_a_value_that_is_not_an_object_is_a_config_error():
    rule = {"type": "ConfigAddFields", "fields": [{"path": ["api", "host"], "value": "h"}]}
    with pytest.raises(ConfigError, match="`api` is not an object"):
        transformed(rule, {"api": "v1"})


# -- ConfigRemapField ---------------------------------------------------------------------------------------


def test_remap_replaces_a_known_value_and_leaves_the_rest():
    rule = {"type": "ConfigRemapField", "field_path": ["auth", "region"], "map": {"europe": "eu"}}
    assert transformed(rule, {"auth": {"region": "europe"}}) == {"auth": {"region": "eu"}}
    assert transformed(rule, {"auth": {"region": "asia"}}) == {"auth": {"region": "asia"}}
    assert transformed(rule, {"auth": "token"}) == {"auth": "token"}
    assert transformed(rule, {}) == {}
    assert transformed(rule, {"auth": {"region": ["europe"]}}) == {"auth": {"region": ["europe"]}}


def test_remap_renders_its_path_and_map_and_a_map_template():
    rule = {"type": "ConfigRemapField", "field_path": ["{{ config['which'] }}"],
            "map": {"{{ config['old'] }}": "{{ config['new'] }}"}}
    assert transformed(rule, {"which": "plan", "plan": "a", "old": "a", "new": "b"})["plan"] == "b"
    whole = {"type": "ConfigRemapField", "field_path": ["plan"], "map": "{{ config['plans'] }}"}
    assert transformed(whole, {"plan": "a", "plans": {"a": "z"}})["plan"] == "z"
    with pytest.raises(ConfigError, match="`map` rendered text that is not JSON"):
        transformed(whole, {"plan": "a", "plans": "nope"})
    with pytest.raises(ConfigError, match="not an object"):
        transformed(whole, {"plan": "a", "plans": [1]})


def test_remap_values_are_read_as_literals_as_airbyte_reads_them():
    rule = {"type": "ConfigRemapField", "field_path": ["v"],
            "map": {"a": "1", "b": "[1, 2]", "c": "x", "d": 5, "e": ""}}
    assert [transformed(rule, {"v": v})["v"] for v in "abcde"] == [1, [1, 2], "x", 5, None]


def test_remap_treats_a_star_as_a_key():
    rule = {"type": "ConfigRemapField", "field_path": ["*", "status"], "map": {"a": "b"}}
    assert transformed(rule, {"x": {"status": "a"}}) == {"x": {"status": "a"}}
    assert transformed(rule, {"*": {"status": "a"}}) == {"*": {"status": "b"}}


# no markup nor literals (a map's keys and values are templates; "1" reads as 1 and "" as None, as in airbyte-cdk)
PLAIN = st.text(alphabet="ab-_", min_size=1, max_size=3)


@given(st.dictionaries(PLAIN, PLAIN, max_size=4), PLAIN)
def test_remap_result_is_the_map_value_or_the_old_one(mapping, value):
    rule = {"type": "ConfigRemapField", "field_path": ["v"], "map": mapping}
    assert transformed(rule, {"v": value})["v"] == mapping.get(value, value)


# -- ConfigRemoveFields -------------------------------------------------------------------------------------


def test_remove_fields_skips_what_is_absent_and_matches_stars():
    rule = {"type": "ConfigRemoveFields", "field_pointers": [["legacy"], ["auth", "old"], ["reports", "*", "tmp"],
                                                              ["not", "there"]]}
    config = {"legacy": 1, "auth": {"old": 2, "new": 3}, "reports": [{"tmp": 1, "name": "a"}, {"name": "b"}]}
    assert transformed(rule, config) == {"auth": {"new": 3}, "reports": [{"name": "a"}, {"name": "b"}]}


def test_remove_fields_condition_is_rendered_once_with_the_config():
    rule = {"type": "ConfigRemoveFields", "field_pointers": [["token"]], "condition": "{{ config['mode'] == 'oauth' }}"}
    assert transformed(rule, {"mode": "oauth", "token": "t"}) == {"mode": "oauth"}
    assert transformed(rule, {"mode": "key", "token": "t"}) == {"mode": "key", "token": "t"}


@given(st.recursive(st.dictionaries(st.sampled_from("abc"), st.integers(), max_size=3),
                    lambda inner: st.dictionaries(st.sampled_from("abc"), inner, max_size=3), max_leaves=8),
       st.lists(st.sampled_from("abc*"), min_size=1, max_size=3))
def test_remove_fields_twice_is_removing_once(config, pointer):
    rule = {"type": "ConfigRemoveFields", "field_pointers": [pointer]}
    once = transformed(rule, config)
    assert transformed(rule, once) == once


# -- validations --------------------------------------------------------------------------------------------


def validate(rule: dict, config: dict) -> None:
    build(rule).validate(config)


SCHEMA = {"type": "ValidateAdheresToSchema", "base_schema": {"type": "object", "required": ["name"]}}


def test_dpath_validator_checks_each_value_a_star_matches_and_skips_an_absent_path():
    rule = {"type": "DpathValidator", "field_path": ["reports", "*"], "validation_strategy": SCHEMA}
    validate(rule, {"reports": [{"name": "a"}, {"name": "b"}]})
    validate(rule, {})
    with pytest.raises(ValidationFailed) as failed:
        validate(rule, {"reports": [{"name": "a"}, {"title": "b"}]})
    assert failed.value.path == ("reports", 1) and "'name' is a required property" in failed.value.reason


def test_a_string_value_is_parsed_as_json_first():
    rule = {"type": "DpathValidator", "field_path": ["report"], "validation_strategy": SCHEMA}
    validate(rule, {"report": '{"name": "x"}'})
    with pytest.raises(ValidationFailed, match="not valid JSON"):
        validate(rule, {"report": "name=x"})


def test_predicate_validator_renders_its_value_with_the_config():
    rule = {"type": "PredicateValidator", "value": "{{ config['version'] }}",
            "validation_strategy": {"type": "ValidateAdheresToSchema", "base_schema": {"enum": [1, 2]}}}
    validate(rule, {"version": 2})
    with pytest.raises(ValidationFailed, match="is not one of"):
        validate(rule, {"version": 3})


def test_a_base_schema_template_is_rendered_with_the_config():
    rule = {"type": "PredicateValidator", "value": "{{ config['v'] }}",
            "validation_strategy": {"type": "ValidateAdheresToSchema", "base_schema": "{{ config['schema'] }}"}}
    validate(rule, {"v": 3, "schema": {"type": "integer"}})
    validate(rule, {"v": 3, "schema": '{"type": "integer"}'})
    with pytest.raises(ValidationFailed):
        validate(rule, {"v": "x", "schema": {"type": "integer"}})
