"""A full disk while the state or the catalog is saved: one clear error, the previous state kept intact."""

from __future__ import annotations

import errno

import pytest

from framework.errors import StorageError
from framework.storage.local import LocalStorage
from framework.storage.state_store import CatalogStore, ConnectionState, StateStore


class FullDisk(LocalStorage):
    def write_atomic(self, key, data, metadata=None):
        raise OSError(errno.ENOSPC, "No space left on device")


def test_a_state_that_cannot_be_saved_is_one_error_and_the_old_state_stays(tmp_path):
    good = StateStore(LocalStorage(str(tmp_path)))
    good.save(ConnectionState(1, {"items": {"state": {"updated_at": "2024-01-01"}, "generation": 0}}), "t1")
    full = StateStore(FullDisk(str(tmp_path)))
    with pytest.raises(StorageError) as caught:
        full.save(ConnectionState(2, {"items": {"state": {"updated_at": "2024-02-01"}, "generation": 0}}), "t2")
    assert "No space left on device" in str(caught.value) and "the state saved before is kept" in str(caught.value)
    kept = good.load()
    assert kept.sync_id == 1 and kept.stream_state("items") == {"updated_at": "2024-01-01"}
    assert not [p for p in tmp_path.rglob("*.tmp")]


def test_a_catalog_that_cannot_be_saved_is_one_error(tmp_path):
    with pytest.raises(StorageError, match="No space left on device.*nothing was read"):
        CatalogStore(FullDisk(str(tmp_path))).merge([{"stream": {"name": "items"}}])
