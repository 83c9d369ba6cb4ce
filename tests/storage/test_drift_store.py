"""The evolved columns kept next to the output: saved atomically, merged in order, shown in the landed catalog."""

from __future__ import annotations

import json

import pytest

from framework.errors import StateError
from framework.storage.drift_store import (
    DRIFT_KEY,
    EvolvedColumns,
    load_evolved,
    save_evolved,
    with_evolved_columns,
)
from framework.storage.local import LocalStorage
from framework.storage.state_store import CatalogStore


def entry(name: str = "events", properties: dict | None = None) -> dict:
    schema = {"type": "object", "properties": properties if properties is not None else {"id": {"type": "integer"}}}
    return {"stream": {"name": name, "json_schema": schema}, "sync_mode": "incremental",
            "destination_sync_mode": "append", "cursor_field": [], "primary_key": []}


def test_nothing_recorded_reads_as_no_columns_and_a_record_reads_back_in_order(tmp_path):
    storage = LocalStorage(str(tmp_path))
    assert load_evolved(storage) == {}
    save_evolved(storage, {"events": (("priority", "integer"), ("b", "string")), "empty": ()})
    assert json.loads((tmp_path / DRIFT_KEY).read_text()) == {
        "streams": {"events": {"evolved": {"priority": "integer", "b": "string"}}}}
    assert load_evolved(storage) == {"events": (("priority", "integer"), ("b", "string"))}


def test_a_damaged_record_is_refused_with_the_fix(tmp_path):
    storage = LocalStorage(str(tmp_path))
    storage.write_atomic(DRIFT_KEY, b"{not json", {})
    with pytest.raises(StateError, match="schema_drift.json: the record of evolved columns is damaged"):
        load_evolved(storage)


def test_the_catalog_entry_gets_the_columns_and_a_declared_property_stays_as_declared():
    added = with_evolved_columns(entry(), (("priority", "integer"), ("id", "string")))
    assert added["stream"]["json_schema"]["properties"] == {
        "id": {"type": "integer"}, "priority": {"type": ["null", "integer"]}}
    assert entry()["stream"]["json_schema"]["properties"] == {"id": {"type": "integer"}}  # not changed in place
    widened = with_evolved_columns(added, (("priority", "string"),), evolved_before=["priority"])
    assert widened["stream"]["json_schema"]["properties"]["priority"] == {"type": ["null", "string"]}
    assert with_evolved_columns(entry(properties={}), (("priority", "integer"),)) == entry(properties={})


def test_recording_saves_only_what_grew_and_updates_the_landed_catalog(tmp_path):
    storage = LocalStorage(str(tmp_path))
    CatalogStore(storage).merge([entry(), entry("other")])
    columns = EvolvedColumns(storage)
    assert columns.of("events") == ()
    assert columns.record("events", ()) is False
    assert columns.record("events", (("priority", "integer"),)) is True
    assert columns.record("events", (("priority", "integer"),)) is False  # the same: nothing written
    assert columns.record("events", (("note", "string"), ("priority", "number"))) is True
    assert EvolvedColumns(storage).of("events") == (("priority", "number"), ("note", "string"))
    catalog = {e["stream"]["name"]: e["stream"]["json_schema"]["properties"] for e in CatalogStore(storage).load()}
    assert catalog["events"] == {"id": {"type": "integer"}, "priority": {"type": ["null", "number"]},
                                 "note": {"type": ["null", "string"]}}
    assert catalog["other"] == {"id": {"type": "integer"}}


def test_recording_never_replaces_a_property_the_schema_declares(tmp_path):
    storage = LocalStorage(str(tmp_path))
    save_evolved(storage, {"events": (("id", "string"),)})  # recorded before the schema declared `id`
    CatalogStore(storage).merge([with_evolved_columns(entry(), (("id", "string"),))])
    assert EvolvedColumns(storage).record("events", (("priority", "integer"),)) is True
    properties = CatalogStore(storage).load()[0]["stream"]["json_schema"]["properties"]
    assert properties == {"id": {"type": "integer"}, "priority": {"type": ["null", "integer"]}}
