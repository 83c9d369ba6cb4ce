"""An Iceberg table in a local folder with its SQLite catalog: files and state in one snapshot, read back."""

from __future__ import annotations

import datetime
import os
import shutil
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyiceberg.catalog.sql import SqlCatalog
from tables.iceberg_writes import APP, USERS, batch, commit, write

from framework.errors import ConfigError, StorageError
from framework.tables.base import Table
from framework.tables.iceberg import APP_ID, STATE, VERSION, IcebergTable, open_iceberg_table
from framework.tables.iceberg_catalog import CATALOG_NAME


def _open(root: Path, name: str = "users", *, clock=None) -> IcebergTable:
    extra = {"clock": clock} if clock else {}
    return open_iceberg_table(str(root / name), "demo", name,
                              {"type": "sqlite", "path": str(root / "_airbyte_state" / "iceberg_catalog.db")}, {},
                              **extra)


def _catalog(root: Path) -> SqlCatalog:
    return SqlCatalog(CATALOG_NAME, uri=f"sqlite:///{root / '_airbyte_state' / 'iceberg_catalog.db'}")


def _ids(root: Path, name: str = "users", snapshot_id: int | None = None) -> list[int]:
    scan = _catalog(root).load_table(("demo", name)).scan(snapshot_id=snapshot_id)
    return sorted(scan.to_arrow()["id"].to_pylist())


def _sync(table: IcebergTable, ids: list[int], version: int, mode: str = "append", **extra):
    data = batch(ids, **extra)
    return table.commit(commit([write(table.data_location(), data)], data.schema, version, mode=mode))


def test_it_meets_the_contract(tmp_path):
    table: Table = _open(tmp_path)
    assert table.data_location() == f"{tmp_path}/users/data"
    assert not table.exists() and table.arrow_schema() is None and table.last_state(APP) is None


def test_two_syncs_land_each_record_once_and_the_state_is_read_back_from_the_table(tmp_path):
    table = _open(tmp_path)
    first = _sync(table, [1, 2, 3], 1)
    second = _sync(table, [4, 5], 2)
    assert first.committed and second.committed and first.table_version != second.table_version
    assert _ids(tmp_path) == [1, 2, 3, 4, 5]
    state = _open(tmp_path).last_state(APP)  # a new sync opens the table afresh
    assert state is not None and state.state == {"cursor": 2} and state.version == 2
    assert state.table_version == second.table_version
    assert _open(tmp_path).last_state("another/app") is None
    snapshot = _catalog(tmp_path).load_table(("demo", "users")).current_snapshot()
    summary = snapshot.summary.additional_properties
    assert summary[APP_ID] == APP and summary[VERSION] == "2" and summary[STATE] == '{"cursor":2}'
    assert summary["added-data-files"] == "1" and summary["added-records"] == "2"


def test_other_tools_read_the_table_and_count_each_id_once(tmp_path, monkeypatch):
    monkeypatch.setenv("POLARS_ICEBERG_PLANNER", "pyiceberg")  # polars plans through pyiceberg, as installed
    table = _open(tmp_path)
    _sync(table, [1, 2, 3], 1)
    _sync(table, [4, 5], 2)
    iceberg = _catalog(tmp_path).load_table(("demo", "users"))
    assert sorted(pl.scan_iceberg(iceberg).select("id").collect()["id"].to_list()) == [1, 2, 3, 4, 5]
    files = [task.file.file_path for task in iceberg.scan().plan_files()]
    counted = duckdb.sql(f"select count(*), count(distinct id) from read_parquet({files!r})").fetchall()
    assert counted == [(5, 5)]
    assert iceberg.scan().to_duckdb("users").sql("select count(*) from users").fetchall() == [(5,)]


def test_the_columns_keep_their_types_and_a_time_is_icebergs_time(tmp_path):
    table = _open(tmp_path)
    _sync(table, [1], 1)
    iceberg = _catalog(tmp_path).load_table(("demo", "users"))
    types = {field.name: str(field.field_type) for field in iceberg.schema().fields}
    assert types["at"] == "time" and types["_airbyte_extracted_at"] == "timestamptz" and types["id"] == "long"
    row = iceberg.scan().to_arrow().to_pylist()[0]
    assert row["at"] == datetime.time(12, 34, 56, 789000)
    assert row["_airbyte_extracted_at"] == datetime.datetime(2023, 11, 14, 22, 13, 20, tzinfo=datetime.timezone.utc)
    assert row["_airbyte_meta"] == {"sync_id": 1, "changes": []}


def test_a_commit_already_made_for_its_version_is_not_made_again(tmp_path):
    table = _open(tmp_path)
    data = batch([1, 2])
    files = [write(table.data_location(), data)]
    made = table.commit(commit(files, data.schema, 7))
    again = table.commit(commit(files, data.schema, 7))
    older = table.commit(commit([write(table.data_location(), batch([9]))], data.schema, 6))
    assert made.committed and not again.committed and not older.committed
    assert again.table_version == made.table_version
    assert _ids(tmp_path) == [1, 2]


def test_a_sync_with_no_new_records_still_commits_its_state(tmp_path):
    table = _open(tmp_path)
    _sync(table, [1], 1)
    result = table.commit(commit([], batch([]).schema, 2, state={"cursor": "later"}))
    assert result.committed and _ids(tmp_path) == [1]
    assert table.last_state(APP).state == {"cursor": "later"}


def test_overwrite_replaces_the_files_in_one_snapshot_and_time_travel_reads_the_old_ones(tmp_path):
    table = _open(tmp_path)
    first = _sync(table, [1, 2, 3], 1)
    _sync(table, [4], 2)
    replaced = _sync(table, [10, 11], 3, mode="overwrite")
    assert _ids(tmp_path) == [10, 11]
    iceberg = _catalog(tmp_path).load_table(("demo", "users"))
    snapshot = iceberg.current_snapshot()
    assert str(snapshot.snapshot_id) == replaced.table_version and snapshot.summary.operation.value == "overwrite"
    assert snapshot.summary["deleted-data-files"] == "2" and snapshot.summary["added-data-files"] == "1"
    assert _ids(tmp_path, snapshot_id=int(first.table_version)) == [1, 2, 3]
    assert table.orphans() == []  # the replaced files are still the earlier snapshots'


def test_a_new_field_adds_a_nullable_column_in_the_same_commit_and_a_dropped_one_stays(tmp_path):
    table = _open(tmp_path)
    _sync(table, [1], 1)
    wider = {"type": "object", "properties": {**USERS["properties"], "email": {"type": "string"}}}
    data = batch([2], wider, email="b@example.com")
    result = table.commit(commit([write(table.data_location(), data)], data.schema, 2))
    assert result.schema_change.added == ("email",) and result.schema_change.widened == ()
    narrower = {"type": "object", "properties": {"id": {"type": "integer"}}}
    data = batch([3], narrower)
    assert table.commit(commit([write(table.data_location(), data)], data.schema, 3)).schema_change.added == ()
    rows = {row["id"]: row for row in _catalog(tmp_path).load_table(("demo", "users")).scan().to_arrow().to_pylist()}
    assert rows[1]["email"] is None and rows[2]["email"] == "b@example.com" and rows[3]["name"] is None
    field = _catalog(tmp_path).load_table(("demo", "users")).schema().find_field("email")
    assert not field.required


def test_an_int_column_is_widened_to_long_and_a_float_to_double(tmp_path):
    table = _open(tmp_path)
    base = batch([1])
    narrow = pa.table({"_airbyte_raw_id": ["a"], "n": pa.array([1], pa.int32()), "f": pa.array([1.5], pa.float32())})
    narrow = narrow.cast(pa.schema([base.schema.field("_airbyte_raw_id"), pa.field("n", pa.int32()),
                                    pa.field("f", pa.float32())]))
    table.commit(commit([write(table.data_location(), narrow)], narrow.schema, 1))
    wide = pa.table({"_airbyte_raw_id": ["b"], "n": pa.array([2**40], pa.int64()), "f": pa.array([0.1], pa.float64())})
    wide = wide.cast(pa.schema([base.schema.field("_airbyte_raw_id"), pa.field("n", pa.int64()),
                                pa.field("f", pa.float64())]))
    result = table.commit(commit([write(table.data_location(), wide)], wide.schema, 2))
    assert result.schema_change.widened == (("n", "int", "long"), ("f", "float", "double"))
    back = _catalog(tmp_path).load_table(("demo", "users")).scan().to_arrow()
    assert back.schema.field("n").type == pa.int64() and sorted(back["n"].to_pylist()) == [1, 2**40]
    # a narrower file into the widened table needs no change: readers promote it
    again = table.commit(commit([write(table.data_location(), narrow)], narrow.schema, 3))
    assert again.committed and again.schema_change.widened == ()


def test_a_type_iceberg_cannot_widen_is_reported_and_nothing_is_committed(tmp_path):
    table = _open(tmp_path)
    _sync(table, [1], 1)
    changed = {"type": "object", "properties": {"id": {"type": "integer"}, "name": {"type": "integer"}}}
    data = batch([2], changed)
    data = data.set_column(data.schema.get_field_index("name"), "name", pa.array([5], pa.int64()))
    plan = table.plan_schema(data.schema)
    assert plan.incompatible == (("name", "string", "long"),)
    with pytest.raises(ConfigError, match=r"cannot take the stream's type of `name` \(string in the table, long"):
        table.commit(commit([write(table.data_location(), data)], data.schema, 2))
    assert _ids(tmp_path) == [1] and table.last_state(APP).version == 1


def test_files_written_but_never_committed_are_orphans_removed_after_the_grace_period(tmp_path):
    now = [2_000_000_000.0]
    table = _open(tmp_path, clock=lambda: now[0])
    _sync(table, [1, 2], 1)
    lost = write(table.data_location(), batch([3, 4]))  # a driver killed before its commit
    assert table.last_state(APP).version == 1 and _ids(tmp_path) == [1, 2]
    assert table.orphans() == [lost.path]
    os.utime(lost.path, (now[0] - 60, now[0] - 60))
    assert table.remove_orphans(older_than_seconds=3600) == []  # still within the grace period
    _sync(table, [3, 4], 2)  # the next sync reads that work again and lands it once
    assert table.remove_orphans(older_than_seconds=30) == [lost.path]
    assert not os.path.exists(lost.path) and table.orphans() == []
    assert _ids(tmp_path) == [1, 2, 3, 4]


def test_a_process_killed_inside_the_commit_leaves_the_table_and_its_state_as_they_were(tmp_path):
    table = _open(tmp_path)
    _sync(table, [1, 2], 1)
    script = textwrap.dedent(f"""
        import os, signal, sys
        sys.path.insert(0, {str(Path(__file__).parent.parent)!r})
        from pyiceberg.catalog.sql import SqlCatalog
        from tables.iceberg_writes import batch, commit, write
        from framework.tables.iceberg import open_iceberg_table

        def killed(self, *args, **kwargs):  # the new metadata is written; the catalog's pointer never moves
            os.kill(os.getpid(), signal.SIGKILL)

        SqlCatalog.commit_table = killed
        table = open_iceberg_table({str(tmp_path / 'users')!r}, "demo", "users",
                                   {{"type": "sqlite", "path": {str(tmp_path / '_airbyte_state' / 'iceberg_catalog.db')!r}}}, {{}})
        data = batch([3, 4])
        table.commit(commit([write(table.data_location(), data)], data.schema, 2))
    """)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path.cwd()), *sys.path])}
    killed = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, timeout=120)
    assert killed.returncode == -9, killed.stderr.decode()[-2000:]
    reopened = _open(tmp_path)
    assert reopened.last_state(APP).version == 1 and _ids(tmp_path) == [1, 2]
    assert len(reopened.orphans()) == 1
    _sync(reopened, [3, 4], 2)
    assert _ids(tmp_path) == [1, 2, 3, 4] and reopened.last_state(APP).version == 2


def test_a_lost_catalog_entry_is_found_again_from_the_tables_metadata(tmp_path):
    table = _open(tmp_path)
    _sync(table, [1], 1)
    _sync(table, [2], 2)
    shutil.rmtree(tmp_path / "_airbyte_state")
    again = _open(tmp_path)
    assert again.exists() and again.last_state(APP).version == 2
    _sync(again, [3], 3)
    assert _ids(tmp_path) == [1, 2, 3]


def test_another_formats_table_at_the_location_is_refused(tmp_path):
    (tmp_path / "users" / "_delta_log").mkdir(parents=True)
    with pytest.raises(ConfigError, match=r"holds a Delta table, not an Iceberg one: choose `--format delta`"):
        _open(tmp_path).exists()


def test_a_catalog_name_taken_by_a_table_elsewhere_is_refused(tmp_path):
    _sync(_open(tmp_path), [1], 1)
    elsewhere = open_iceberg_table(str(tmp_path / "other"), "demo", "users",
                                   {"type": "sqlite", "path": str(tmp_path / "_airbyte_state" / "iceberg_catalog.db")}, {})
    with pytest.raises(ConfigError, match=r"lives at .*/users, not at .*/other: another output uses that name"):
        elsewhere.last_state(APP)


def test_a_table_not_written_by_this_destination_is_refused(tmp_path):
    (tmp_path / "x" / "_airbyte_state").mkdir(parents=True)
    catalog = SqlCatalog(CATALOG_NAME, uri=f"sqlite:///{tmp_path / 'x' / '_airbyte_state' / 'iceberg_catalog.db'}")
    catalog.create_namespace("demo")
    catalog.create_table(("demo", "users"), schema=pa.schema([pa.field("order_id", pa.int64())]),
                         location=str(tmp_path / "x" / "users"))
    with pytest.raises(ConfigError, match=r"was not written by this destination \(it has no `_airbyte_raw_id`"):
        _sync(_open(tmp_path / "x"), [1], 1)


def test_compaction_merges_small_files_in_one_snapshot_and_keeps_rows_and_state(tmp_path):
    table = _open(tmp_path)
    for version in range(1, 7):
        _sync(table, [version * 10, version * 10 + 1], version)
    before = _ids(tmp_path)
    result = table.compact()
    assert (result.files_before, result.files_after) == (6, 1)
    assert _ids(tmp_path) == before
    assert table.last_state(APP).version == 6 and table.orphans() == []
    assert table.compact() == type(result)(1, 1)  # nothing left to merge: no snapshot
    _sync(table, [99], 7)
    assert _ids(tmp_path) == [*before, 99]


@pytest.mark.parametrize("other_version", [2, 3], ids=["same-window", "next-window"])
def test_two_writers_one_commits_and_the_other_retries_on_the_fresh_snapshot(tmp_path, other_version):
    (tmp_path / "alias").symlink_to(tmp_path)  # a second catalog session on the same file, as another process has
    first = _open(tmp_path)
    other = open_iceberg_table(str(tmp_path / "users"), "demo", "users",
                               {"type": "sqlite", "path": str(tmp_path / "alias" / "_airbyte_state" / "iceberg_catalog.db")}, {})
    _sync(first, [1], 1)
    ours, theirs = batch([2]), batch([2] if other_version == 2 else [3])
    our_files = [write(first.data_location(), ours)]
    their_files = our_files if other_version == 2 else [write(first.data_location(), theirs)]
    original = IcebergTable._data_files
    raced = []

    def racing(self, metadata, io, data_files):
        if self is first and not raced:  # the other writer commits meanwhile
            raced.append(threading.Thread(target=other.commit, args=(commit(their_files, theirs.schema, other_version),)))
            raced[0].start()
            raced[0].join()
        return original(self, metadata, io, data_files)

    IcebergTable._data_files = racing  # type: ignore[method-assign]
    try:
        result = first.commit(commit(our_files, ours.schema, 2))
    finally:
        IcebergTable._data_files = original  # type: ignore[method-assign]
    assert raced
    if other_version == 2:  # the same window: found there on the fresh snapshot, not landed twice
        assert not result.committed and _ids(tmp_path) == [1, 2]
    else:  # a later window landed first; ours is older than what the table has: not committed either
        assert not result.committed and _ids(tmp_path) == [1, 3] and first.last_state(APP).version == 3


def test_a_writer_that_lost_the_race_to_another_stream_commits_on_the_fresh_snapshot(tmp_path):
    (tmp_path / "alias").symlink_to(tmp_path)
    first = _open(tmp_path)
    other = open_iceberg_table(str(tmp_path / "users"), "demo", "users",
                               {"type": "sqlite", "path": str(tmp_path / "alias" / "_airbyte_state" / "iceberg_catalog.db")}, {})
    _sync(first, [1], 1)
    ours, theirs = batch([2]), batch([3])
    our_files, their_files = [write(first.data_location(), ours)], [write(first.data_location(), theirs)]
    original = IcebergTable._data_files
    raced = []

    def racing(self, metadata, io, data_files):
        if self is first and not raced:  # another app (a backfill, say) commits to the table meanwhile
            raced.append(threading.Thread(target=other.commit,
                                          args=(commit(their_files, theirs.schema, 1, app_id="backfill"),)))
            raced[0].start()
            raced[0].join()
        return original(self, metadata, io, data_files)

    IcebergTable._data_files = racing  # type: ignore[method-assign]
    try:
        result = first.commit(commit(our_files, ours.schema, 2))
    finally:
        IcebergTable._data_files = original  # type: ignore[method-assign]
    assert raced and result.committed
    assert _ids(tmp_path) == [1, 2, 3] and first.last_state(APP).version == 2 and first.last_state("backfill").version == 1


def test_a_commit_of_a_missing_file_fails_clearly_and_commits_nothing(tmp_path):
    table = _open(tmp_path)
    _sync(table, [1], 1)
    data = batch([2])
    written = write(table.data_location(), data)
    os.remove(written.path)
    with pytest.raises(StorageError, match=r"the data file .* cannot be committed .*the next sync reads its records"):
        table.commit(commit([written], data.schema, 2))
    assert table.last_state(APP).version == 1


def test_the_history_names_each_syncs_state(tmp_path):
    table = _open(tmp_path)
    _sync(table, [1], 1)
    _sync(table, [2], 2, mode="overwrite")
    history = table.history()
    assert [(row["operation"], row["version"], row["state"]) for row in history] == [
        ("overwrite", "2", {"cursor": 2}), ("append", "1", {"cursor": 1})]


def test_a_parquet_file_written_elsewhere_is_added_as_is(tmp_path):
    table = _open(tmp_path)
    data = batch([1, 2])
    file = write(table.data_location(), data)
    size = os.path.getsize(file.path)
    table.commit(commit([file], data.schema, 1))
    iceberg = _catalog(tmp_path).load_table(("demo", "users"))
    assert [task.file.file_path for task in iceberg.scan().plan_files()] == [file.path]
    assert os.path.getsize(file.path) == size and pq.read_metadata(file.path).num_rows == 2


def test_a_location_that_cannot_be_written_is_a_clear_error_and_nothing_is_committed(tmp_path):
    (tmp_path / "blocked").write_text("a file where the output folder should be")
    table = open_iceberg_table(str(tmp_path / "blocked" / "users"), "demo", "users",
                               {"type": "sqlite", "path": str(tmp_path / "catalog.db")}, {})
    data = batch([1])
    with pytest.raises(ConfigError, match=r"cannot be created at .*/blocked/users \(.*\); give a writable output"):
        table.commit(commit([], data.schema, 1))
    assert not table.exists()


def test_the_data_files_committed_are_what_pyicebergs_add_files_makes_with_each_files_statistics(tmp_path):
    from pyiceberg.io.pyarrow import parquet_file_to_data_file

    table = _open(tmp_path)
    data = batch(list(range(100, 110)))
    files = [write(table.data_location(), data), write(table.data_location(), batch([7, 8]))]
    table.commit(commit(files, data.schema, 1))
    iceberg = _catalog(tmp_path).load_table(("demo", "users"))
    committed = {task.file.file_path: task.file for task in iceberg.scan().plan_files()}
    for file in files:
        ours, theirs = committed[file.path], parquet_file_to_data_file(iceberg.io, iceberg.metadata, file.path)
        for name in ("record_count", "file_size_in_bytes", "column_sizes", "value_counts", "null_value_counts",
                     "lower_bounds", "upper_bounds", "split_offsets"):
            assert getattr(ours, name) == getattr(theirs, name), name
    id_field = iceberg.schema().find_field("id").field_id
    assert committed[files[0].path].record_count == 10 and id_field in committed[files[0].path].lower_bounds
    assert iceberg.scan(row_filter="id >= 100").to_arrow().num_rows == 10
    assert len(list(iceberg.scan(row_filter="id >= 100").plan_files())) == 1  # the bounds prune the other file


def test_after_expiring_old_snapshots_the_state_stays_and_their_files_become_orphans(tmp_path):
    now = [4_000_000_000.0]
    table = _open(tmp_path, clock=lambda: now[0])
    _sync(table, [1, 2], 1)
    _sync(table, [3], 2, mode="overwrite")
    iceberg = _catalog(tmp_path).load_table(("demo", "users"))
    current = iceberg.current_snapshot().snapshot_id
    iceberg.maintenance.expire_snapshots().by_ids(
        [s.snapshot_id for s in iceberg.snapshots() if s.snapshot_id != current]).commit()
    assert table.last_state(APP).version == 2 and _ids(tmp_path) == [3]
    replaced = table.orphans()
    assert len(replaced) == 1  # the first sync's file: no snapshot names it now
    assert table.remove_orphans(older_than_seconds=0) == replaced and _ids(tmp_path) == [3]


OPERATIONS = st.lists(st.one_of(
    st.tuples(st.sampled_from(["append", "overwrite", "lost"]), st.lists(st.integers(0, 50), max_size=4)),
    st.tuples(st.sampled_from(["retry", "compact"]), st.just([]))), min_size=1, max_size=5)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(OPERATIONS)
def test_any_sequence_of_syncs_retries_kills_and_compactions_leaves_what_was_committed(tmp_path_factory, operations):
    root = tmp_path_factory.mktemp("sequence")
    table = _open(root)
    expected: list[int] = []
    version = 0
    last = None
    lost: list[str] = []
    for kind, ids in operations:
        if kind in ("append", "overwrite"):
            version += 1
            data = batch(ids)
            last = commit([write(table.data_location(), data)] if ids else [], data.schema, version, mode=kind)
            assert table.commit(last).committed
            expected = sorted(ids) if kind == "overwrite" else sorted(expected + ids)
        elif kind == "lost":
            lost.append(write(table.data_location(), batch(ids)).path)
        elif kind == "retry" and last is not None:
            assert not table.commit(last).committed
        elif kind == "compact":
            table.compact()
    if version:
        assert _ids(root) == expected and table.last_state(APP).version == version
    assert sorted(table.orphans()) == sorted(lost)
    assert sorted(table.remove_orphans(older_than_seconds=0)) == sorted(lost)
    if version:
        assert _ids(root) == expected


def test_compaction_reads_files_of_older_schemas_in_the_tables_current_one(tmp_path):
    table = _open(tmp_path)
    raw_id = batch([1]).schema.field("_airbyte_raw_id")
    old = pa.table({"_airbyte_raw_id": ["a"], "n": pa.array([1], pa.int32())},
                   schema=pa.schema([raw_id, pa.field("n", pa.int32())]))
    new = pa.table({"_airbyte_raw_id": ["b"], "n": pa.array([2**40], pa.int64()), "tag": ["x"]},
                   schema=pa.schema([raw_id, pa.field("n", pa.int64()), pa.field("tag", pa.string())]))
    table.commit(commit([write(table.data_location(), old)], old.schema, 1))
    table.commit(commit([write(table.data_location(), new)], new.schema, 2))
    result = table.compact()
    assert (result.files_before, result.files_after) == (2, 1)
    back = _catalog(tmp_path).load_table(("demo", "users")).scan().to_arrow()
    assert back.schema.field("n").type == pa.int64()
    assert sorted(back.select(["n", "tag"]).to_pylist(), key=lambda row: row["n"]) == [
        {"n": 1, "tag": None}, {"n": 2**40, "tag": "x"}]


def test_a_second_output_with_its_own_catalog_is_refused_the_first_outputs_table(tmp_path):
    _sync(_open(tmp_path), [1], 1)
    second = open_iceberg_table(str(tmp_path / "users"), "demo", "users",
                                {"type": "sqlite", "path": str(tmp_path / "elsewhere" / "iceberg_catalog.db")}, {})
    with pytest.raises(ConfigError, match=r"was made in the catalog .*/_airbyte_state/iceberg_catalog.db, not in "
                                          r".*/elsewhere/iceberg_catalog.db: two outputs must not share a table"):
        second.commit(commit([write(second.data_location(), batch([2]))], batch([2]).schema, 1))
    assert _ids(tmp_path) == [1]
