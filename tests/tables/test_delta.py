"""framework/tables/delta.py: files written elsewhere committed with the state, read back by other readers."""

from __future__ import annotations

import datetime as dt
import os
import uuid

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytest.importorskip("deltalake", reason="the tables extra (deltalake) is not installed: pip install '.[tables]'")

from framework.tables.base import DataFile, TableCommit  # noqa: E402
from framework.tables.columns import stored_batch, stored_schema  # noqa: E402
from framework.tables.delta import DeltaLakeTable  # noqa: E402
from framework.typed import RecordConverter, parse_schema  # noqa: E402

SCHEMA = {"type": "object", "properties": {
    "id": {"type": "integer"}, "name": {"type": ["null", "string"]},
    "at": {"type": "string", "format": "date-time"}, "opens": {"type": "string", "format": "time"}}}
APP = "manifest-framework:items"


def converter(schema: dict = SCHEMA) -> RecordConverter:
    return RecordConverter(parse_schema(schema, stream="items"), stream="items")


def write_file(table: DeltaLakeTable, ids: range, schema: dict = SCHEMA) -> tuple[DataFile, pa.Schema]:
    """A Parquet file of typed records inside the table's data folder, as an executor writes it."""
    conv = converter(schema)
    records = [{"id": i, "name": f"n{i}", "at": "2024-01-02T03:04:05Z", "opens": "09:30:00", "extra": i}
               for i in ids]
    batch = conv.convert(records, extracted_at_ms=1_704_067_200_000, generation_id=0, sync_id=1)
    schema_out = stored_schema(batch.schema, "delta")
    batch = stored_batch(batch, schema_out)
    os.makedirs(table.data_location(), exist_ok=True)
    path = f"{table.data_location()}/part-{uuid.uuid4().hex}.parquet"
    pq.write_table(pa.Table.from_batches([batch]), path)
    return DataFile(path, os.path.getsize(path), batch.num_rows), schema_out


def commit(table: DeltaLakeTable, ids: range, version: int, mode: str = "append", schema: dict = SCHEMA,
           state: dict | None = None):
    file, arrow_schema = write_file(table, ids, schema)
    return table.commit(TableCommit((file,), arrow_schema, mode, state or {"cursor": version}, APP,  # type: ignore[arg-type]
                                    version))


def ids_in(location: str, version: int | None = None) -> list[int]:
    # polars, not DeltaTable.to_pyarrow_table(): deltalake 1.6's pyarrow reader can abort the interpreter at exit
    import polars as pl

    return sorted(pl.read_delta(location, version=version)["id"].to_list())


def test_a_first_commit_creates_the_table_with_its_state(tmp_path):
    table = DeltaLakeTable(str(tmp_path / "items"))
    assert not table.exists() and table.last_state(APP) is None and table.arrow_schema() is None
    result = commit(table, range(5), 1, state={"updated_at": "2024-01-02"})
    assert result.committed and result.table_version == "0"
    state = table.last_state(APP)
    assert state is not None and state.state == {"updated_at": "2024-01-02"} and state.version == 1
    schema = table.arrow_schema()
    assert schema is not None and schema.field("opens").type == pa.string()  # Delta has no TIME
    assert ids_in(table.location) == list(range(5))


def test_a_commit_of_a_version_already_there_is_not_made_again(tmp_path):
    table = DeltaLakeTable(str(tmp_path / "items"))
    commit(table, range(3), 1)
    again = commit(table, range(3), 1)
    assert not again.committed
    assert ids_in(table.location) == [0, 1, 2]
    assert commit(table, range(3, 6), 2).committed
    assert ids_in(table.location) == list(range(6)) and table.last_state(APP).version == 2  # type: ignore[union-attr]


def test_a_new_field_adds_a_nullable_column_and_older_rows_read_null(tmp_path):
    import polars as pl

    table = DeltaLakeTable(str(tmp_path / "items"))
    commit(table, range(2), 1)
    wider = {**SCHEMA, "properties": {**SCHEMA["properties"], "extra": {"type": ["null", "integer"]}}}
    result = commit(table, range(2, 4), 2, schema=wider)
    assert result.committed and result.schema_change.added == ("extra",)
    frame = pl.read_delta(table.location).sort("id")
    assert frame["id"].to_list() == [0, 1, 2, 3] and frame["extra"].to_list() == [None, None, 2, 3]


def test_an_overwrite_replaces_the_files_and_time_travel_reads_the_older_ones(tmp_path):

    table = DeltaLakeTable(str(tmp_path / "items"))
    commit(table, range(4), 1)
    commit(table, range(10, 12), 2, mode="overwrite")
    assert ids_in(table.location) == [10, 11]
    assert ids_in(table.location, version=0) == [0, 1, 2, 3]
    assert table.orphans() == []  # replaced files are named by the log: time travel, not orphans


def test_files_no_commit_names_are_orphans_removed_after_the_grace_period(tmp_path):
    now = [2_000_000_000.0]
    table = DeltaLakeTable(str(tmp_path / "items"), clock=lambda: now[0])
    commit(table, range(3), 1)
    lost, _ = write_file(table, range(100, 103))  # a driver killed before the commit
    assert table.orphans() == [lost.path]
    assert ids_in(table.location) == [0, 1, 2]  # never read
    os.utime(lost.path, (now[0] - 10, now[0] - 10))
    assert table.remove_orphans(3600) == []
    assert table.remove_orphans(5) == [lost.path] and not os.path.exists(lost.path)
    assert table.orphans() == []


def test_compaction_merges_files_in_one_commit_and_keeps_the_state(tmp_path):
    table = DeltaLakeTable(str(tmp_path / "items"))
    for version in range(1, 5):
        commit(table, range(version * 10, version * 10 + 3), version)
    result = table.compact()
    assert (result.files_before, result.files_after) == (4, 1)
    assert len(ids_in(table.location)) == 12
    assert table.last_state(APP).state == {"cursor": 4}  # type: ignore[union-attr]
    assert table.orphans() == []


def test_a_file_outside_the_table_is_refused(tmp_path):
    from framework.errors import StorageError

    table = DeltaLakeTable(str(tmp_path / "items"))
    other = DeltaLakeTable(str(tmp_path / "other"))
    file, schema = write_file(other, range(2))
    with pytest.raises(StorageError, match="not inside the Delta table"):
        table.commit(TableCommit((file,), schema, "append", {}, APP, 1))


def test_time_columns_are_stored_as_iso_text_for_delta_only():
    schema = pa.schema([("t", pa.time64("us")), ("s", pa.struct([("t", pa.time64("us"))]))])
    assert stored_schema(schema, "delta").field("t").type == pa.string()
    assert stored_schema(schema, "delta").field("s").type == pa.struct([("t", pa.string())])
    assert stored_schema(schema, "iceberg") == schema
    batch = pa.record_batch([pa.array([dt.time(9, 30)], pa.time64("us")),
                             pa.array([{"t": dt.time(1, 2, 3)}], schema.field("s").type)], schema=schema)
    out = stored_batch(batch, stored_schema(schema, "delta"))
    assert out.column(0).to_pylist() == ["09:30:00.000000"] and out.column(1).to_pylist() == [{"t": "01:02:03.000000"}]


def test_a_column_the_table_holds_in_another_kind_is_written_in_its_type_and_what_does_not_fit_is_nulled():
    from framework.tables.columns import table_types, to_table_types
    from framework.typed.arrow import META_TYPE

    meta = pa.array([{"sync_id": 1, "changes": []}] * 3, META_TYPE)
    batch = pa.record_batch([pa.array([1.0, 2.5, None]), pa.array([1, 2, 3]), pa.array(["a", "7", "b"]), meta],
                            names=["price", "count", "code", "_airbyte_meta"])
    table = pa.schema([("price", pa.int64()), ("count", pa.float64()), ("code", pa.string()),
                       ("_airbyte_meta", META_TYPE)])
    types = table_types(table, batch.schema)
    assert types == {"price": pa.int64(), "count": pa.float64()}  # same kinds (code) need nothing
    out, nulled = to_table_types(batch, types)
    assert out.column(0).to_pylist() == [1, None, None] and nulled == 1  # 2.5 does not fit an integer
    assert out.column(1).to_pylist() == [1.0, 2.0, 3.0]  # widened
    assert out.column(3).to_pylist()[1]["changes"] == [
        {"field": "price", "change": "NULLED", "reason": "DESTINATION_TYPECAST_ERROR"}]
    assert out.column(3).to_pylist()[0]["changes"] == []
    assert to_table_types(batch, {}) == (batch, 0)
