"""The committed JSON Schemas are exactly what the models generate, and they describe real manifests."""

from __future__ import annotations

import json

import jsonschema
import yaml
from conftest import EXAMPLE, REPO

from framework.models import REGISTRY
from framework.models.json_schema import all_schemas, manifest_schema, render


def test_committed_schemas_match_the_models():
    for name, schema in all_schemas().items():
        committed = (REPO / "schemas" / name).read_text(encoding="utf-8")
        assert committed == render(schema), (
            f"schemas/{name} is out of date: run `python -m framework.models.json_schema schemas/`"
        )


def test_every_field_has_a_description_and_an_example():
    missing = []
    for model in REGISTRY.values():
        for name, info in model.model_fields.items():
            if not info.description or not info.examples:
                missing.append(f"{model.__name__}.{name}")
    assert not missing, missing


def test_schema_is_valid_and_accepts_the_example_manifest():
    schema = manifest_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    with open(EXAMPLE) as handle:
        manifest = yaml.safe_load(handle)
    errors = list(jsonschema.Draft202012Validator(schema).iter_errors(manifest))
    assert not errors, [e.message for e in errors[:5]]


def test_schema_rejects_unknown_keys_and_says_what_templates_become():
    schema = manifest_schema()
    validator = jsonschema.Draft202012Validator(schema)
    assert list(validator.iter_errors({"version": "1", "check": {"stream_names": []}, "streams": [], "bogus": 1}))
    assert list(validator.iter_errors({"version": "1", "check": {"stream_names": []}}))  # no streams at all
    made = {"type": "DynamicDeclarativeStream", "stream_template": {"$ref": "#/definitions/t"},
            "components_resolver": {"type": "ConfigComponentsResolver", "stream_config": {"configs_pointer": ["r"]},
                                    "components_mapping": []}}
    assert not list(validator.iter_errors({"version": "1", "check": {"stream_names": []}, "dynamic_streams": [made]}))
    page_size = schema["$defs"]["PageIncrement"]["properties"]["page_size"]
    assert page_size["x-template"]["result"] == "integer"
    assert "config" in page_size["x-template"]["variables"]
    assert schema["$defs"]["DatetimeBasedCursor"]["properties"]["step"]["format"] == "duration"
    assert json.dumps(schema)  # serialisable


def test_every_type_of_the_catalog_has_a_definition():
    """Each component type of framework/catalog.py is in the schema (its definition's `type` constant), also
    a part that no field of the source holds, such as TokenQuota: an editor must know every type a manifest
    may name."""
    from framework.catalog import CATALOG

    schema = manifest_schema()
    defined = {definition.get("properties", {}).get("type", {}).get("const")
               for definition in schema["$defs"].values()} | {schema["properties"]["type"]["const"]}
    assert sorted(set(CATALOG) - defined) == []
    assert schema["$defs"]["TokenQuota"]["properties"]["matchers"]["items"]["$ref"] == \
        "#/$defs/HttpRequestRegexMatcher"
    jsonschema.Draft202012Validator.check_schema(schema)
