"""The config made from a spec (tests/manifest/spec_config.py) fills what is required, and fits the spec."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from manifest.spec_config import config_from_spec, manifest_config, spec_problems

SPEC = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "required": ["api_key", "start_date", "region", "page_size", "repos", "credentials", "when", "email", "flag"],
    "properties": {
        "api_key": {"type": "string", "airbyte_secret": True},
        "start_date": {"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$"},
        "region": {"type": "string", "enum": ["eu", "us"]},
        "page_size": {"type": "integer", "minimum": 10, "maximum": 500},
        "repos": {"type": "array", "items": {"type": "string", "pattern": "^[\\w.-]+/[\\w.-]+$"}, "minItems": 2},
        "credentials": {"type": "object", "oneOf": [
            {"type": "object", "required": ["auth_type", "token"],
             "properties": {"auth_type": {"const": "token"}, "token": {"type": "string"}}},
            {"type": "object", "required": ["auth_type", "user"],
             "properties": {"auth_type": {"const": "basic"}, "user": {"type": "string"}}},
        ]},
        "when": {"type": "string", "format": "date"},
        "email": {"type": "string", "format": "email"},
        "flag": {"type": "boolean", "default": True},
        "optional": {"type": "string"},
    },
}


def test_every_required_property_gets_a_value_of_its_kind():
    config = config_from_spec(SPEC)
    assert spec_problems(SPEC, config) == []
    assert set(config) == set(SPEC["required"])  # optional properties are left out
    assert config["start_date"] == "2024-01-01T00:00:00Z"  # the first candidate that matches the pattern
    assert config["region"] == "eu" and config["page_size"] == 10 and config["flag"] is True
    assert config["repos"] == ["owner/repo", "owner/repo"]
    assert config["credentials"] == {"auth_type": "token", "token": "example"}  # the first option of the oneOf
    assert config["when"] == "2024-01-01" and config["email"] == "user@example.com"


def test_defaults_and_examples_win_when_they_fit():
    spec = {"type": "object", "required": ["a", "b", "c"], "properties": {
        "a": {"type": "string", "default": "2020-05-05", "format": "date"},
        "b": {"type": "string", "examples": ["not a number", "42"], "pattern": "^[0-9]+$"},
        "c": {"type": "integer", "default": "wrong type", "examples": [7]},
    }}
    assert config_from_spec(spec) == {"a": "2020-05-05", "b": "42", "c": 7}


def test_no_spec_gives_an_empty_config_and_a_manifest_gives_its_spec():
    assert config_from_spec(None) == {} == config_from_spec({})
    assert manifest_config({"version": "6.7.0"}) == {}
    assert manifest_config({"spec": {"connection_specification": SPEC}}) == config_from_spec(SPEC)


def test_a_pattern_no_made_up_string_matches_says_which_property():
    spec = {"type": "object", "required": ["code"], "properties": {"code": {"type": "string", "pattern": "^Z{9}$"}}}
    with pytest.raises(ValueError, match=r"config\.code: no made-up string matches its pattern"):
        config_from_spec(spec)


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(
    st.text("abcdefgh", min_size=1, max_size=5),
    st.one_of(
        st.just({"type": "string"}), st.just({"type": "integer", "minimum": 3}), st.just({"type": "boolean"}),
        st.just({"type": "number", "maximum": 0.5}), st.just({"type": "string", "format": "date-time"}),
        st.sampled_from([["x", "y"], [1, 2]]).map(lambda values: {"enum": values}),
        st.just({"type": "array", "items": {"type": "integer"}}),
        st.just({"type": "object", "required": ["n"], "properties": {"n": {"type": "integer"}}}),
    ),
    max_size=6,
), st.data())
def test_made_up_configs_fit_their_spec(properties, data):
    required = data.draw(st.lists(st.sampled_from(sorted(properties)), unique=True) if properties else st.just([]))
    spec = {"type": "object", "required": required, "properties": properties}
    config = config_from_spec(spec)
    assert spec_problems(spec, config) == []
    assert sorted(config) == sorted(required)
