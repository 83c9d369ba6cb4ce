"""load_schema: inline schemas, schema files, the default file, and $ref resolution."""

from __future__ import annotations

import json

import pytest
from components.records.helpers import context

from framework.components.records import PERMISSIVE_SCHEMA, load_schema
from framework.errors import ConfigError
from framework.models.records import InlineSchemaLoader, JsonFileSchemaLoader

PATH = ("streams", 0, "schema_loader")


def write(folder, name, data):
    file = folder / name
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(data if isinstance(data, str) else json.dumps(data))
    return file


def file_loader(**data):
    return JsonFileSchemaLoader.model_validate({"type": "JsonFileSchemaLoader", **data})


def test_inline_schema_is_returned_as_plain_dicts():
    schema = {"type": "object", "properties": {"id": {"type": "integer"}}}
    model = InlineSchemaLoader.model_validate({"type": "InlineSchemaLoader", "schema": schema})
    loaded = load_schema(model, context(), "orders", PATH)
    assert loaded == schema
    loaded["properties"]["x"] = {}
    assert "x" not in model.schema_["properties"]


def test_inline_schema_local_refs_are_resolved():
    schema = {"definitions": {"money": {"type": "number"}},
              "type": "object", "properties": {"total": {"$ref": "#/definitions/money", "description": "sum"}}}
    model = InlineSchemaLoader.model_validate({"type": "InlineSchemaLoader", "schema": schema})
    loaded = load_schema(model, context(), "orders", PATH)
    assert loaded["properties"]["total"] == {"type": "number", "description": "sum"}


def test_default_file_of_the_stream(tmp_path):
    write(tmp_path, "schemas/orders.json", {"type": "object", "properties": {"id": {"type": "integer"}}})
    ctx = context(base_dir=str(tmp_path))
    expected = {"type": "object", "properties": {"id": {"type": "integer"}}}
    assert load_schema(file_loader(), ctx, "orders", PATH) == expected
    assert load_schema(None, ctx, "orders", PATH) == expected


def test_no_loader_and_no_file_gives_the_permissive_schema(tmp_path):
    loaded = load_schema(None, context(base_dir=str(tmp_path)), "orders", PATH)
    assert loaded == PERMISSIVE_SCHEMA
    loaded["properties"]["x"] = 1
    assert PERMISSIVE_SCHEMA["properties"] == {}


def test_file_path_is_rendered_and_relative_to_the_manifest(tmp_path):
    write(tmp_path, "defs/eu_orders.json", {"type": "object"})
    ctx = context({"region": "eu"}, base_dir=str(tmp_path))
    model = file_loader(file_path="defs/{{ config.region }}_{{ parameters.name }}.json",
                        **{"$parameters": {"name": "orders"}})
    assert load_schema(model, ctx, "orders", PATH) == {"type": "object"}


def test_file_path_from_the_package_root_as_airbyte_connector_packages_write_it(tmp_path):
    """``./source_x/schemas/a.json`` in source_x/manifest.yaml: from the manifest's parent, as validate-manifest
    finds it; the manifest's own folder first."""
    write(tmp_path, "source_x/schemas/orders.json", {"type": "object", "title": "parent"})
    ctx = context(base_dir=str(tmp_path / "source_x"))
    model = file_loader(file_path="./source_x/schemas/{{ parameters.name }}.json", **{"$parameters": {"name": "orders"}})
    assert load_schema(model, ctx, "orders", PATH) == {"type": "object", "title": "parent"}
    write(tmp_path, "source_x/source_x/schemas/orders.json", {"type": "object", "title": "own"})
    assert load_schema(model, ctx, "orders", PATH) == {"type": "object", "title": "own"}
    with pytest.raises(ConfigError, match=str(tmp_path / "source_x" / "source_x" / "schemas" / "users.json")):
        load_schema(file_loader(file_path="./source_x/schemas/users.json"), ctx, "users", PATH)


def test_absolute_file_path(tmp_path):
    file = write(tmp_path, "elsewhere/s.json", {"type": "object"})
    ctx = context(base_dir=str(tmp_path / "manifest_dir"))
    assert load_schema(file_loader(file_path=str(file)), ctx, "orders", PATH) == {"type": "object"}


def test_missing_file_is_a_config_error_naming_stream_and_file(tmp_path):
    ctx = context(base_dir=str(tmp_path), locate=lambda path: "manifest.yaml:3:5")
    with pytest.raises(ConfigError) as caught:
        load_schema(file_loader(), ctx, "orders", PATH)
    message = str(caught.value)
    assert "stream `orders`" in message
    assert str(tmp_path / "schemas" / "orders.json") in message
    assert "does not exist" in message and "InlineSchemaLoader" in message
    assert "manifest.yaml:3:5" in message


@pytest.mark.parametrize("text, problem", [("{\"type\": ", "is not valid JSON"),
                                           ("[1, 2]", "not a JSON object")])
def test_invalid_file_is_a_config_error(tmp_path, text, problem):
    write(tmp_path, "schemas/orders.json", text)
    with pytest.raises(ConfigError, match=problem):
        load_schema(file_loader(), context(base_dir=str(tmp_path)), "orders", PATH)


def test_refs_to_sibling_files_and_their_definitions(tmp_path):
    write(tmp_path, "schemas/shared/address.json",
          {"type": "object", "properties": {"city": {"$ref": "../common.json#/definitions/text"}}})
    write(tmp_path, "schemas/common.json", {"definitions": {"text": {"type": ["null", "string"]},
                                                            "id": {"type": "integer"}}})
    write(tmp_path, "schemas/orders.json", {
        "type": "object",
        "properties": {
            "id": {"$ref": "common.json#/definitions/id"},
            "ship_to": {"$ref": "shared/address.json"},
            "bill_to": {"$ref": "shared/address.json"},
        },
    })
    loaded = load_schema(None, context(base_dir=str(tmp_path)), "orders", PATH)
    address = {"type": "object", "properties": {"city": {"type": ["null", "string"]}}}
    assert loaded["properties"] == {"id": {"type": "integer"}, "ship_to": address, "bill_to": address}
    assert loaded["properties"]["ship_to"] is not loaded["properties"]["bill_to"]


def test_recursive_refs_are_left_in_place(tmp_path):
    write(tmp_path, "schemas/tree.json", {
        "definitions": {"node": {"type": "object", "properties": {"children": {
            "type": "array", "items": {"$ref": "#/definitions/node"}}}}},
        "$ref": "#/definitions/node",
    })
    loaded = load_schema(None, context(base_dir=str(tmp_path)), "tree", PATH)
    assert loaded["type"] == "object"
    assert loaded["properties"]["children"]["items"] == {"$ref": "#/definitions/node"}


def test_dangling_ref_and_missing_ref_file_are_config_errors(tmp_path):
    write(tmp_path, "schemas/a.json", {"properties": {"x": {"$ref": "#/definitions/nope"}}})
    write(tmp_path, "schemas/b.json", {"properties": {"x": {"$ref": "gone.json"}}})
    ctx = context(base_dir=str(tmp_path))
    with pytest.raises(ConfigError, match="points to nothing"):
        load_schema(None, ctx, "a", PATH)
    with pytest.raises(ConfigError, match="gone.json does not exist"):
        load_schema(None, ctx, "b", PATH)


def test_url_refs_are_kept():
    schema = {"properties": {"x": {"$ref": "https://example.com/s.json"}}}
    model = InlineSchemaLoader.model_validate({"type": "InlineSchemaLoader", "schema": schema})
    assert load_schema(model, context(), "s", PATH) == schema


def test_a_list_of_loaders_merges_their_properties_the_earlier_winning(tmp_path):
    """Airbyte's CompositeSchemaLoader (hubspot's manifest): properties merged, an earlier loader's winning, the
    first loader's listed last; nothing else of the loaders' schemas; null admitted. A loader without
    `properties` adds none; an empty list is no loader; a missing file of one loader is an error."""
    from framework.models.source import DeclarativeStream

    write(tmp_path, "schemas/extra.json", {"type": "object", "required": ["id"], "additionalProperties": False,
                                           "properties": {"id": {"type": "string"}, "city": {"type": "string"}}})
    write(tmp_path, "schemas/orders.json", {"type": "object", "properties": {"default": {"type": "boolean"}}})
    stream = DeclarativeStream.model_validate({
        "type": "DeclarativeStream", "name": "orders",
        "retriever": {"type": "SimpleRetriever",
                      "requester": {"type": "HttpRequester", "url_base": "https://example.invalid"},
                      "record_selector": {"type": "RecordSelector",
                                          "extractor": {"type": "DpathExtractor", "field_path": []}}},
        "schema_loader": [
            {"type": "InlineSchemaLoader", "schema": {"properties": {"id": {"type": "integer"},
                                                                     "name": {"type": "string"}}}},
            {"type": "JsonFileSchemaLoader", "file_path": "schemas/extra.json"},
            {"type": "InlineSchemaLoader", "schema": {"type": "object"}},
        ]})
    assert isinstance(stream.schema_loader, tuple) and len(stream.schema_loader) == 3
    ctx = context(base_dir=str(tmp_path))
    loaded = load_schema(stream.schema_loader, ctx, "orders", PATH)
    assert loaded == {"$schema": "http://json-schema.org/draft-07/schema#", "type": ["null", "object"],
                      "properties": {"id": {"type": "integer"}, "city": {"type": "string"}, "name": {"type": "string"}}}
    assert list(loaded["properties"]) == ["id", "city", "name"]  # Airbyte's order
    assert load_schema((), ctx, "orders", PATH) == {"type": "object", "properties": {"default": {"type": "boolean"}}}
    with pytest.raises(ConfigError, match=r"stream `orders`: the schema file .*missing\.json does not exist"):
        load_schema((stream.schema_loader[0], file_loader(file_path="schemas/missing.json")), ctx, "orders", PATH)
