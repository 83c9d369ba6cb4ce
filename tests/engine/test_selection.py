from types import SimpleNamespace

import pytest

from framework.engine.selection import Selection, parse_state, select_streams
from framework.errors import ConfigError, StateError

STREAMS = {"accounts": SimpleNamespace(cursor=None), "orders": SimpleNamespace(cursor=object())}


def test_without_a_catalog_every_stream_is_read_incrementally_where_it_can_be():
    assert select_streams(STREAMS, None) == [Selection("accounts", False), Selection("orders", True)]
    assert select_streams(STREAMS, None, ["orders"]) == [Selection("orders", True)]


def test_a_catalog_selects_streams_and_modes_in_its_order():
    catalog = {"streams": [{"stream": {"name": "orders"}, "sync_mode": "full_refresh"},
                           {"stream": {"name": "accounts"}, "sync_mode": "full_refresh"}]}
    assert select_streams(STREAMS, catalog) == [Selection("orders", False), Selection("accounts", False)]


@pytest.mark.parametrize("catalog, message", [
    ({"streams": [{"stream": {"name": "nope"}}]}, "not in the manifest"),
    ({"streams": [{"stream": {"name": "accounts"}, "sync_mode": "incremental"}]}, "no incremental_sync"),
    ({"streams": "x"}, "needs a `streams` list"),
])
def test_bad_catalogs_say_what_to_fix(catalog, message):
    with pytest.raises(ConfigError, match=message):
        select_streams(STREAMS, catalog)


def test_unknown_stream_names_in_streams_flag():
    with pytest.raises(ConfigError, match="unknown streams: nope"):
        select_streams(STREAMS, None, ["nope"])


def test_state_in_every_airbyte_shape():
    stream = {"type": "STREAM", "stream": {"stream_descriptor": {"name": "orders"}, "stream_state": {"u": 1}}}
    assert parse_state([stream]) == {"orders": {"u": 1}}
    assert parse_state([{"type": "STATE", "state": stream}]) == {"orders": {"u": 1}}
    assert parse_state({"orders": {"u": 2}}) == {"orders": {"u": 2}}
    glob = {"type": "GLOBAL", "global": {"stream_states": [stream["stream"]]}}
    assert parse_state([glob]) == {"orders": {"u": 1}}
    with pytest.raises(StateError, match="unknown type"):
        parse_state([{"type": "WAT"}])
    with pytest.raises(StateError, match="the state of stream `events` should be an object .* not a str"):
        parse_state({"events": "2024-01-15T00:00:00Z"})
