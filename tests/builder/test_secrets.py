"""The config's secrets kept off the page and put back (framework/builder/secrets.py)."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from framework.builder.secrets import PLACEHOLDER, masked_config, masked_config_text, restore, secret_paths

SPEC = {"type": "object", "properties": {
    "api_key": {"type": "string", "airbyte_secret": True},
    "base_url": {"type": "string"},
    "credentials": {"type": "object", "oneOf": [
        {"properties": {"client_secret": {"type": "string", "airbyte_secret": True},
                        "client_id": {"type": "string"}}},
    ]},
    "tokens": {"type": "array", "items": {"type": "string", "airbyte_secret": True}},
}}

secrets = st.text(min_size=1, max_size=20).filter(lambda text: text != PLACEHOLDER)


@given(api_key=secrets, client_secret=secrets, tokens=st.lists(secrets, max_size=3),
       base_url=st.text(max_size=10), client_id=st.text(max_size=10))
def test_every_secret_is_hidden_and_put_back_at_its_place(api_key, client_secret, tokens, base_url, client_id):
    config = {"api_key": api_key, "base_url": base_url, "tokens": tokens,
              "credentials": {"client_secret": client_secret, "client_id": client_id}}
    paths = secret_paths(SPEC, config)
    shown = masked_config(config, paths)
    assert shown["api_key"] == PLACEHOLDER and shown["credentials"]["client_secret"] == PLACEHOLDER
    assert shown["tokens"] == [PLACEHOLDER] * len(tokens)
    assert shown["base_url"] == base_url and shown["credentials"]["client_id"] == client_id
    assert json.loads(masked_config_text(config, paths)) == shown
    assert restore(shown, config) == config


def test_a_value_typed_instead_of_the_placeholder_is_taken_and_an_unknown_placeholder_stays():
    config = {"api_key": "real-key-123", "base_url": "http://a"}
    assert restore({"api_key": "new-key-456", "base_url": "http://b"}, config) == {"api_key": "new-key-456",
                                                                                  "base_url": "http://b"}
    assert restore({"password": PLACEHOLDER}, config) == {"password": PLACEHOLDER}


def test_an_empty_secret_is_not_a_secret_place():
    assert secret_paths(SPEC, {"api_key": "", "base_url": "x"}) == []
