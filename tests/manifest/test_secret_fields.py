"""The places of a config's secrets: named, never shown; the same values the masker hides."""

from __future__ import annotations

import json
import re

from hypothesis import given
from hypothesis import strategies as st

from framework.manifest.config_check import secret_values
from framework.manifest.secret_fields import secret_fields

SCHEMA = {
    "type": "object",
    "properties": {
        "api_key": {"type": "string", "airbyte_secret": True},
        "start_date": {"type": "string"},
        "credentials": {"oneOf": [
            {"type": "object", "properties": {"auth_type": {"const": "oauth"},
                                              "client_secret": {"type": "string", "airbyte_secret": True},
                                              "client_id": {"type": "string"}}},
            {"type": "object", "properties": {"auth_type": {"const": "password"},
                                              "password": {"type": "string", "airbyte_secret": True}}},
        ]},
        "accounts": {"type": "array", "items": {"type": "object", "properties": {
            "name": {"type": "string"}, "token": {"type": "string", "airbyte_secret": True}}}},
    },
}


def test_the_places_of_the_secrets_in_config_order():
    config = {"start_date": "2024-01-01", "credentials": {"auth_type": "oauth", "client_id": "id",
                                                          "client_secret": "cs"},
              "accounts": [{"name": "a", "token": "t1"}, {"name": "b"}, {"name": "c", "token": "t3"}],
              "api_key": "k"}
    assert secret_fields(SCHEMA, config) == ("credentials.client_secret", "accounts[0].token", "accounts[2].token",
                                             "api_key")


def test_empty_and_missing_secrets_and_no_schema_name_nothing():
    assert secret_fields(SCHEMA, {"api_key": "", "credentials": {"password": None}, "start_date": "x"}) == ()
    assert secret_fields(None, {"api_key": "k"}) == ()
    assert secret_fields({"type": "object", "properties": {"api_key": {"type": "string"}}}, {"api_key": "k"}) == ()


_text = st.text(alphabet="abcXYZ019-_", min_size=0, max_size=6)
_configs = st.fixed_dictionaries({}, optional={
    "api_key": _text, "start_date": _text,
    "credentials": st.fixed_dictionaries({}, optional={"auth_type": st.sampled_from(["oauth", "password"]),
                                                       "client_secret": _text, "client_id": _text,
                                                       "password": st.one_of(st.none(), _text)}),
    "accounts": st.lists(st.fixed_dictionaries({}, optional={"name": _text, "token": _text}), max_size=3),
})


def _at(config, path):
    value = config
    for name, index in re.findall(r"([^.\[\]]+)|\[(\d+)\]", path):
        value = value[int(index)] if index else value[name]
    return value


@given(_configs)
def test_every_place_holds_a_value_the_masker_hides_and_only_those(config):
    fields = secret_fields(SCHEMA, config)
    hidden = secret_values(SCHEMA, config)
    assert bool(fields) == bool(hidden)
    for path in fields:
        value = _at(config, path)
        assert value not in (None, "") and json.dumps(value) in hidden
