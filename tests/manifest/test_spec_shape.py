"""framework.manifest.spec_shape: a True answer must mean that jsonschema's draft 7 meta-schema check finds nothing.

``plainly_valid`` spares validate-manifest the import of jsonschema for specs that are plainly fine; when it
says False, jsonschema decides. So the one property that matters: never True for a spec jsonschema rejects.
"""

from __future__ import annotations

import jsonschema
from hypothesis import given, settings
from hypothesis import strategies as st

from framework.manifest.spec_shape import KEYWORDS, plainly_valid

META = jsonschema.Draft7Validator(jsonschema.Draft7Validator.META_SCHEMA)


def meta_valid(schema) -> bool:
    return not any(True for _ in META.iter_errors(schema))


def test_every_keyword_of_the_draft7_meta_schema_has_a_shape():
    assert set(KEYWORDS) == set(jsonschema.Draft7Validator.META_SCHEMA["properties"])


def test_usual_specs_are_plainly_valid():
    spec = {
        "$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "required": ["api_key"],
        "additionalProperties": True,
        "properties": {
            "api_key": {"type": "string", "airbyte_secret": True, "order": 0, "title": "API key"},
            "start_date": {"type": "string", "format": "date-time", "pattern": "^[0-9]{4}", "examples": ["2024"]},
            "page_size": {"type": ["integer", "null"], "minimum": 1, "maximum": 100, "default": 50},
            "region": {"type": "string", "enum": ["eu", "us"]},
            "credentials": {"type": "object", "oneOf": [
                {"title": "OAuth", "type": "object", "properties": {"token": {"type": "string", "const": "x"}}},
                {"title": "Key", "required": ["key"], "properties": {"key": {"type": "string"}}}]},
            "ids": {"type": "array", "items": {"type": "integer"}, "minItems": 0, "uniqueItems": True},
        },
    }
    assert plainly_valid(spec) and meta_valid(spec)


def test_what_jsonschema_rejects_is_never_plainly_valid():
    for bad in ({"type": "objekt"}, {"type": ["string", "string"]}, {"type": []}, {"required": ["a", "a"]},
                {"required": "a"}, {"properties": {"a": 1}}, {"properties": []}, {"minLength": -1},
                {"maxItems": 1.5}, {"multipleOf": 0}, {"items": []}, {"anyOf": []}, {"enum": "a"},
                {"title": 3}, {"readOnly": "yes"}, {"dependencies": {"a": ["b", "b"]}}, {"minimum": True},
                {"properties": {"a": {"properties": {"b": {"type": "strin"}}}}}, 7, "object", None):
        assert not meta_valid(bad), bad
        assert not plainly_valid(bad), bad


_simple = st.sampled_from(["array", "boolean", "integer", "null", "number", "object", "string", "strin"])
_values = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.floats(-2, 2, allow_nan=False),
                    st.text(max_size=3), _simple)


def _schemas(children):
    keyword = st.sampled_from(sorted(KEYWORDS) + ["airbyte_secret", "order"])
    value = st.one_of(_values, children, st.lists(st.one_of(_values, children), max_size=3),
                      st.dictionaries(st.text(max_size=3), st.one_of(_values, children), max_size=3),
                      st.lists(_simple, max_size=3))
    return st.dictionaries(keyword, value, max_size=4)


SCHEMAS = st.recursive(st.one_of(st.booleans(), st.just({})), _schemas, max_leaves=12)


@settings(max_examples=600, deadline=None)
@given(SCHEMAS)
def test_plainly_valid_implies_jsonschema_agrees(schema):
    if plainly_valid(schema):
        assert meta_valid(schema), schema


@settings(max_examples=200, deadline=None)
@given(st.recursive(st.just({"type": "string"}), lambda inner: st.dictionaries(
    st.sampled_from(["properties", "definitions"]), st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_size=2).map(lambda d: {"type": "object", **d}), max_leaves=10))
def test_well_formed_nested_specs_are_plainly_valid(schema):
    assert meta_valid(schema)
    assert plainly_valid(schema)
