"""Which destination sync mode each stream gets: Airbyte's UI defaults, --sync-mode, --dedup and a catalog's."""

from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from framework.engine.selection import Selection, select_streams
from framework.errors import ConfigError
from framework.sync_modes import MODES, default_mode, with_destination_modes

STREAMS = {
    "accounts": SimpleNamespace(cursor=None, primary_key=(("id",),)),  # full refresh
    "events": SimpleNamespace(cursor=object(), primary_key=()),  # incremental, no key
    "orders": SimpleNamespace(cursor=object(), primary_key=(("id",),)),  # incremental, keyed
}


def modes(catalog=None, **flags):
    chosen = with_destination_modes(select_streams(STREAMS, catalog), STREAMS, catalog, **flags)
    return {s.name: s.destination_sync_mode for s in chosen}


def test_without_a_catalog_full_refresh_overwrites_and_incremental_appends():
    assert modes() == {"accounts": "overwrite", "events": "append", "orders": "append"}


def test_dedup_dedups_only_incremental_streams_with_a_primary_key():
    assert modes(dedup=True) == {"accounts": "overwrite", "events": "append", "orders": "append_dedup"}
    assert modes(forced="append_dedup") == modes(dedup=True)


@pytest.mark.parametrize("forced", ["append", "overwrite"])
def test_sync_mode_forces_one_mode_on_every_stream(forced):
    assert set(modes(forced=forced).values()) == {forced}


def test_dedup_with_forced_append_keeps_dedup_for_keyed_incremental_streams():
    assert modes(forced="append", dedup=True) == {"accounts": "append", "events": "append", "orders": "append_dedup"}


def test_dedup_with_overwrite_is_refused_with_the_fix():
    with pytest.raises(ConfigError, match="drop one of the two flags"):
        modes(forced="overwrite", dedup=True)


def test_a_catalogs_destination_sync_mode_is_each_entrys_own_unless_forced():
    catalog = {"streams": [
        {"stream": {"name": "accounts"}, "sync_mode": "full_refresh", "destination_sync_mode": "append"},
        {"stream": {"name": "orders"}, "sync_mode": "incremental", "destination_sync_mode": "append_dedup"},
        {"stream": {"name": "events"}, "sync_mode": "full_refresh"},
    ]}
    assert modes(catalog) == {"accounts": "append", "orders": "append_dedup", "events": "overwrite"}
    assert modes(catalog, forced="overwrite") == {"accounts": "overwrite", "orders": "overwrite",
                                                  "events": "overwrite"}


@pytest.mark.parametrize(("entry", "message"), [
    ({"stream": {"name": "events"}, "sync_mode": "incremental", "destination_sync_mode": "append_dedup"},
     "no primary key"),
    ({"stream": {"name": "events"}, "sync_mode": "incremental", "destination_sync_mode": "upsert"},
     "must be append, overwrite or append_dedup"),
])
def test_bad_catalog_modes_say_what_to_fix(entry, message):
    with pytest.raises(ConfigError, match=message):
        modes({"streams": [entry]})


def test_a_selection_without_a_mode_stays_as_before():
    assert Selection("orders", True) == Selection("orders", True, None, "")


@given(st.booleans(), st.booleans(), st.sampled_from([None, *MODES]), st.booleans())
def test_the_rule_for_any_stream_and_flags(incremental, keyed, forced, dedup):
    if dedup and forced == "overwrite":
        return  # refused (above)
    mode = default_mode(incremental, keyed, forced=forced, dedup=dedup)
    assert mode in MODES
    if mode == "append_dedup":  # only ever for an incremental stream with a key
        assert incremental and keyed
    elif forced in ("append", "overwrite"):
        assert mode == forced
    else:
        assert mode == ("append" if incremental else "overwrite")
    assert (mode == "append_dedup") == ((dedup or forced == "append_dedup") and incremental and keyed)
