"""surely_fits never vouches for a config jsonschema rejects, and judges its keywords as jsonschema does."""

from __future__ import annotations

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from framework.engine.config_fit import surely_fits

JUDGED_ONLY_KEYS = ["type", "properties", "required", "additionalProperties", "enum", "const", "items", "minimum",
                    "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength", "pattern",
                    "minItems", "maxItems", "minProperties", "maxProperties", "oneOf", "anyOf", "allOf"]
NAMES = st.sampled_from(["a", "b", "c", "start_date", "api_key"])
TYPES = st.sampled_from(["string", "integer", "number", "boolean", "object", "array", "null"])
STRINGS = st.sampled_from(["", "x", "abc", "2024-01-01", "AbC-12", "é", "a b"])
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.sampled_from([0.0, 1.0, 1.5, -2.5]), STRINGS)
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                        st.dictionaries(NAMES, inner, max_size=3)), max_leaves=8)
NUMBER_BOUND = st.one_of(st.integers(-3, 3), st.sampled_from([0.5, -1.5]))


def schemas(extra_keys: bool) -> st.SearchStrategy:
    def node(children: st.SearchStrategy) -> st.SearchStrategy:
        keys = {
            "type": st.one_of(TYPES, st.lists(TYPES, min_size=1, max_size=2, unique=True)),
            "properties": st.dictionaries(NAMES, children, max_size=3),
            "required": st.lists(NAMES, max_size=2, unique=True),
            "additionalProperties": st.one_of(st.booleans(), children),
            "enum": st.lists(STRINGS, min_size=1, max_size=3, unique=True),
            "const": STRINGS,
            "items": children,
            "minimum": NUMBER_BOUND, "maximum": NUMBER_BOUND,
            "exclusiveMinimum": NUMBER_BOUND, "exclusiveMaximum": NUMBER_BOUND,
            "minLength": st.integers(0, 3), "maxLength": st.integers(0, 3),
            "pattern": st.sampled_from(["^a", "[0-9]", "^[A-Za-z-0-9]+$", "b$"]),
            "minItems": st.integers(0, 2), "maxItems": st.integers(0, 2),
            "minProperties": st.integers(0, 2), "maxProperties": st.integers(0, 2),
            "oneOf": st.lists(children, min_size=1, max_size=3),
            "anyOf": st.lists(children, min_size=1, max_size=3),
            "allOf": st.lists(children, min_size=1, max_size=3),
            # annotations Airbyte's specs carry: no effect on validity
            "title": st.just("A title"), "airbyte_secret": st.booleans(), "order": st.integers(0, 3),
        }
        if extra_keys:  # keywords left to jsonschema, and values judged only for strings
            keys.update({"format": st.sampled_from(["date", "date-time", "email"]),
                         "enum": st.lists(SCALARS, min_size=1, max_size=3), "const": SCALARS,
                         "uniqueItems": st.booleans(), "not": children,
                         "patternProperties": st.dictionaries(st.just("^a"), children, max_size=1)})
        return st.lists(st.sampled_from(sorted(keys)), max_size=4, unique=True).flatmap(
            lambda chosen: st.fixed_dictionaries({key: keys[key] for key in chosen}))

    return st.recursive(st.fixed_dictionaries({}), node, max_leaves=6)


def jsonschema_valid(schema: dict, value: object, formats: bool = True) -> bool:
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft7Validator)
    checker = cls.FORMAT_CHECKER if formats else None
    return not any(cls(schema, format_checker=checker).iter_errors(value))


@settings(max_examples=600, deadline=None)
@given(schemas(extra_keys=True), VALUES, st.booleans())
def test_never_vouches_for_a_config_jsonschema_rejects(schema: dict, value: object, formats: bool) -> None:
    if surely_fits(schema, value, formats=formats):
        assert jsonschema_valid(schema, value, formats)


@settings(max_examples=600, deadline=None)
@given(schemas(extra_keys=False), VALUES)
def test_judges_its_keywords_as_jsonschema(schema: dict, value: object) -> None:
    assert surely_fits(schema, value) == jsonschema_valid(schema, value)


AIRBYTE_LIKE = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "required": ["api_key", "region"],
    "additionalProperties": True,
    "properties": {
        "api_key": {"type": "string", "airbyte_secret": True, "title": "API key", "order": 0},
        "region": {"type": "string", "enum": ["eu", "us"], "default": "us"},
        "page_size": {"type": "integer", "minimum": 1, "maximum": 1000},
        "credentials": {"oneOf": [
            {"type": "object", "required": ["auth_type", "token"],
             "properties": {"auth_type": {"const": "token"}, "token": {"type": "string"}}},
            {"type": "object", "required": ["auth_type", "client_id"],
             "properties": {"auth_type": {"const": "oauth"}, "client_id": {"type": "string"}}},
        ]},
    },
}


@pytest.mark.parametrize(("config", "fits"), [
    ({"api_key": "k", "region": "eu"}, True),
    ({"api_key": "k", "region": "eu", "page_size": 10, "credentials": {"auth_type": "token", "token": "t"}}, True),
    ({"api_key": "k", "region": "asia"}, False),
    ({"api_key": "k"}, False),
    ({"api_key": "k", "region": "eu", "page_size": 0}, False),
    ({"api_key": "k", "region": "eu", "page_size": True}, False),
    ({"api_key": "k", "region": "eu", "page_size": 2.5}, False),
    ({"api_key": "k", "region": "eu", "page_size": 10.0}, True),
    ({"api_key": "k", "region": "eu", "credentials": {"auth_type": "token"}}, False),
])
def test_an_airbyte_like_spec(config: dict, fits: bool) -> None:
    assert surely_fits(AIRBYTE_LIKE, config) is fits
    assert jsonschema_valid(AIRBYTE_LIKE, config) is fits


@pytest.mark.parametrize("schema", [
    {"$schema": "http://json-schema.org/draft-04/schema#", "type": "object"},  # another draft
    {"type": "object", "properties": {"start": {"type": "string", "format": "date"}}},  # format asserted
    {"$ref": "#/definitions/x", "definitions": {"x": {"type": "object"}}},
    {"type": "object", "properties": {"n": {"enum": [1, 2]}}},  # numbers in an enum
])
def test_leaves_what_it_does_not_judge_to_jsonschema(schema: dict) -> None:
    assert surely_fits(schema, {"start": "2024-01-01", "n": 1}) is False


def test_format_is_not_asserted_when_formats_are_off() -> None:
    schema = {"type": "object", "properties": {"start": {"type": "string", "format": "date"}}}
    assert surely_fits(schema, {"start": "not a date"}, formats=False) is True
