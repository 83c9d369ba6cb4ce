"""Airbyte's construction convention: declared fields pick the keys, config and parameters when declared,
nested components built first."""

from __future__ import annotations

import pytest
from components.custom.kit import context, model, response, write_components

from framework.components.custom.builders import user_component
from framework.components.custom.construct import declared_fields
from framework.components.custom.loader import UserCodeError
from framework.components.custom.responses import requests_response_of
from framework.errors import ConfigError

CODE = """
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional


@dataclass
class Base:
    field_path: list = field(default_factory=list)


@dataclass
class Extractor(Base):
    config: Optional[Mapping[str, Any]] = None
    parameters: Optional[Mapping[str, Any]] = None
    limit: int = 10
    inner: Optional[Any] = None
    inners: list = field(default_factory=list)

    def extract_records(self, response):
        return response.json()["data"][: self.limit]


class Plain:
    def __init__(self, *, name=None, config=None):
        self.name = name
        self.config = config

    def extract_records(self, response):
        return []


class Nested:
    extractor: "DpathExtractor"

    def __init__(self, extractor=None):
        self.extractor = extractor

    def extract_records(self, response):
        return self.extractor.extract_records(response)


class Picky:
    needed: int

    def __init__(self, needed):
        self.needed = needed

    def extract_records(self, response):
        return []


class Broken:
    def __init__(self):
        raise ValueError("cannot start with token s3cr3t")

    def extract_records(self, response):
        return []
"""


@pytest.fixture
def ctx(tmp_path):
    write_components(tmp_path, CODE)
    return context(tmp_path, config={"region": "eu"}, secrets=("s3cr3t",))


def test_declared_fields_span_bases_and_dataclass_fields(ctx):
    cls = ctx.code.load_class(__import__("framework.components.custom.names", fromlist=["x"]).resolve_class_name(
        "components.Extractor", ctx.base_dir), "x", None)
    assert {"field_path", "config", "parameters", "limit", "inner", "inners"} <= set(declared_fields(cls))


def test_declared_keys_config_and_parameters_are_passed_others_are_not(ctx):
    found = user_component(model("CustomRecordExtractor", "components.Extractor", limit=2, unknown="dropped",
                                 field_path=["data"], **{"$parameters": {"name": "items"}}), ctx, ("x",)).user_object
    assert (found.limit, found.field_path, found.config, found.parameters) == (2, ["data"], {"region": "eu"},
                                                                               {"name": "items"})
    plain = user_component(model("CustomRecordExtractor", "components.Plain", name="n", other=1), ctx, ("x",))
    assert (plain.user_object.name, plain.user_object.config) == (None, None)  # no declared fields: nothing


def test_nested_components_are_built_first_custom_ones_as_objects_built_ins_seen_through_airbyte_names(ctx):
    found = user_component(model(
        "CustomRecordExtractor", "components.Extractor",
        inner={"type": "CustomRecordExtractor", "class_name": "components.Extractor", "limit": 1},
        inners=[{"type": "DpathExtractor", "field_path": ["data"]}, 3],
    ), ctx, ("x",)).user_object
    assert type(found.inner).__name__ == "Extractor" and found.inner.limit == 1
    assert found.inner.config == {"region": "eu"}
    assert found.inners[1] == 3
    assert found.inners[0].extract_records(requests_response_of(response({"data": [{"id": 1}]}))) == [{"id": 1}]


def test_a_mapping_without_type_takes_the_type_its_field_declares(ctx):
    nested = user_component(model("CustomRecordExtractor", "components.Nested",
                                  extractor={"field_path": ["items"]}), ctx, ("x",))
    from framework.components.custom.builders import CustomExtractor

    assert CustomExtractor(nested).extract(response({"items": [{"a": 1}]})) == [{"a": 1}]


def test_a_class_that_cannot_take_the_keys_is_a_config_error_and_a_raising_constructor_a_user_error(ctx):
    with pytest.raises(ConfigError, match=r"`components.Picky` could not be built.*needed.*manifest.yaml:s.0"):
        user_component(model("CustomRecordExtractor", "components.Picky"), ctx, ("s", 0))
    with pytest.raises(UserCodeError) as caught:
        user_component(model("CustomRecordExtractor", "components.Broken"), ctx, ("s", 0))
    text = str(caught.value)
    assert "building the record extractor `components.Broken` raised ValueError" in text
    assert "s3cr3t" not in text and "****" in text
    assert 'components.py", line' in text and "in __init__" in text
    assert isinstance(caught.value.__cause__, ValueError)
