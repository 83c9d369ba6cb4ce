"""The landed catalog next to the output: merged per sync, damaged files reported with the fix."""

from __future__ import annotations

import pytest

from framework.errors import StateError
from framework.storage.local import LocalStorage
from framework.storage.state_store import CatalogStore, configured_entry


class _Stream:
    def __init__(self, name: str, cursor: str | None = None, key: str | None = None):
        self.name, self.cursor_name, self.key = name, cursor, key

    def catalog_entry(self) -> dict:
        entry = {"name": self.name, "json_schema": {"type": "object"}}
        if self.cursor_name:
            entry["default_cursor_field"] = [self.cursor_name]
        if self.key:
            entry["source_defined_primary_key"] = [[self.key]]
        return entry


def test_a_sync_replaces_its_streams_entries_and_keeps_the_others(tmp_path):
    store = CatalogStore(LocalStorage(str(tmp_path)))
    assert store.load() == []
    store.merge([configured_entry(_Stream("a", "updated", "id"), True, "append"),
                 configured_entry(_Stream("b"), False, "overwrite")])
    store.merge([configured_entry(_Stream("a", "updated", "id"), False, "overwrite")])

    entries = {e["stream"]["name"]: e for e in store.load()}
    assert set(entries) == {"a", "b"}
    assert (entries["a"]["sync_mode"], entries["a"]["destination_sync_mode"], entries["a"]["cursor_field"],
            entries["a"]["primary_key"]) == ("full_refresh", "overwrite", [], [["id"]])
    assert (entries["b"]["sync_mode"], entries["b"]["primary_key"]) == ("full_refresh", [])


def test_an_incremental_entry_carries_the_cursor(tmp_path):
    entry = configured_entry(_Stream("a", "updated", "id"), True, "append")
    assert entry["cursor_field"] == ["updated"] and entry["sync_mode"] == "incremental"


def test_a_damaged_catalog_names_the_file_and_the_fix(tmp_path):
    storage = LocalStorage(str(tmp_path))
    storage.write_atomic("_airbyte_state/catalog.json", b"{not json")
    with pytest.raises(StateError, match=r"catalog.json: the landed catalog is damaged .*run a sync again"):
        CatalogStore(storage).load()
