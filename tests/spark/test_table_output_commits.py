"""framework/spark/table_output.py without Spark: the versions a stream's commits take, two outputs racing for one
table, an overwrite held to its final commit, and the evolve policy's columns read from the files' footers."""

from __future__ import annotations

import os

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytest.importorskip("deltalake", reason="the tables extra (deltalake) is not installed: pip install '.[tables]'")


from framework.errors import StorageError  # noqa: E402
from framework.models.destination import DestinationSettings  # noqa: E402
from framework.spark.table_output import StreamTable  # noqa: E402
from framework.storage import LocalStorage  # noqa: E402

DECLARED = pa.schema([("id", pa.int64()), ("name", pa.string())])


def open_stream(root, *, overwrite: bool = False, sync_id: int = 1, footers: bool = False):
    settings = DestinationSettings.model_validate({"output": str(root), "format": {"format_type": "delta"}})
    return StreamTable.open(settings, LocalStorage(str(root)), "items", "", declared=DECLARED, overwrite=overwrite,
                            sync_id=sync_id, generation=0, read_footers=footers)


def written(root, name: str, ids: list[int], schema: pa.Schema = DECLARED) -> dict:
    """A file as a task reports it: its key under the output, bytes and records."""
    key = f"items/data/{name}.parquet"
    path = root / key
    path.parent.mkdir(parents=True, exist_ok=True)
    columns = {f.name: (ids if f.name == "id" else [None] * len(ids)) for f in schema}
    pq.write_table(pa.table(columns, schema=schema), path)
    return {"key": key, "bytes": os.path.getsize(path), "records": len(ids)}


def rows(root) -> list[int]:
    return sorted(pl.read_delta(str(root / "items"))["id"].to_list())  # polars: deltalake's pyarrow reader aborts at exit


def test_each_commit_takes_the_next_version_and_the_next_sync_goes_on_from_the_table(tmp_path):
    stream, state = open_stream(tmp_path)
    assert state is None and stream.version == 1
    stream.commit([written(tmp_path, "a", [1, 2])], {"cursor": 2}, final=False)
    stream.commit([written(tmp_path, "b", [3])], {"cursor": 3}, final=True)
    assert rows(tmp_path) == [1, 2, 3] and [c.committed for c in stream.commits] == [True, True]
    following, state = open_stream(tmp_path, sync_id=2)
    assert state == {"cursor": 3} and following.version == 3


def test_two_outputs_racing_for_one_table_land_the_window_once(tmp_path):
    first, _ = open_stream(tmp_path)
    second, _ = open_stream(tmp_path)  # started from the same commit: the same version
    first.commit([written(tmp_path, "a", [1, 2])], {"cursor": 2}, final=True)
    with pytest.raises(StorageError, match="another sync .* committed this stream's window first"):
        second.commit([written(tmp_path, "b", [1, 2])], {"cursor": 2}, final=True)
    assert rows(tmp_path) == [1, 2]
    assert [p.rsplit("/", 1)[-1] for p in second.table.orphans()] == ["b.parquet"]


def test_an_overwrite_commits_once_at_the_end(tmp_path):
    before, _ = open_stream(tmp_path)
    before.commit([written(tmp_path, "old", [9])], {}, final=True)
    stream, _ = open_stream(tmp_path, overwrite=True, sync_id=2)
    assert stream.commit([written(tmp_path, "a", [1])], {"c": 1}, final=False) is None
    assert rows(tmp_path) == [9]  # nothing of the overwrite shows before its end
    stream.commit([written(tmp_path, "b", [2])], {"c": 2}, final=True)
    assert rows(tmp_path) == [1, 2] and len(stream.commits) == 1


def test_columns_the_evolve_policy_added_come_from_the_files_and_are_reported(tmp_path):
    first, _ = open_stream(tmp_path)
    first.commit([written(tmp_path, "a", [1])], {}, final=True)
    stream, _ = open_stream(tmp_path, sync_id=2, footers=True)
    wider = DECLARED.append(pa.field("priority", pa.int64()))
    stream.commit([written(tmp_path, "b", [2], wider)], {}, final=True)
    assert stream.added == ["priority"]
    table = pl.read_delta(str(tmp_path / "items")).sort("id")
    assert table["priority"].to_list() == [None, None]


def test_a_file_outside_the_data_folder_is_never_committed(tmp_path):
    stream, _ = open_stream(tmp_path)
    with pytest.raises(StorageError, match="outside the table's data folder"):
        stream.commit([{"key": "other/x.parquet", "bytes": 1, "records": 1}], {}, final=True)
