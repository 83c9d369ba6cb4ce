"""normalize-output's modes per stream: the landed one, else Airbyte's defaults; --sync-mode and --dedup."""

import pytest

from framework.errors import ConfigError
from framework.normalization.plan import plan_catalog

SCHEMA = {"type": "object", "properties": {"id": {"type": "integer"}, "updated": {"type": "string"}}}


def entry(name, sync_mode, key=True, landed=None):
    stream = {"name": name, "json_schema": SCHEMA, "default_cursor_field": ["updated"]}
    if key:
        stream["source_defined_primary_key"] = [["id"]]
    out = {"stream": stream, "sync_mode": sync_mode}
    if landed:
        out["destination_sync_mode"] = landed
    return out


ENTRIES = [entry("accounts", "full_refresh"), entry("events", "incremental", key=False),
           entry("orders", "incremental")]


def modes(entries=ENTRIES, forced=None, dedup=False):
    return {p.stream: p.destination_sync_mode for p in plan_catalog(entries, "spark", forced, dedup=dedup)}


def test_entries_without_a_mode_get_airbytes_defaults():
    assert modes() == {"accounts": "overwrite", "events": "append", "orders": "append"}


def test_the_landed_mode_wins_and_dedup_dedups_keyed_incremental_streams():
    landed = [entry("accounts", "full_refresh", landed="append"), entry("orders", "incremental", landed="append")]
    assert modes(landed) == {"accounts": "append", "orders": "append"}
    assert modes(landed, dedup=True) == {"accounts": "append", "orders": "append_dedup"}
    assert modes(dedup=True) == {"accounts": "overwrite", "events": "append", "orders": "append_dedup"}


def test_a_forced_mode_applies_to_every_stream():
    assert set(modes(forced="overwrite").values()) == {"overwrite"}
    with pytest.raises(ConfigError, match="drop one of the two flags"):
        modes(forced="overwrite", dedup=True)
