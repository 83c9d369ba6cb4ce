"""A stream's folder rewritten into one schema, and its small files merged (framework.formats.rewrite), on a local
folder and on S3: every reader that takes one file's schema for the folder then sees every column and every
record once; a crash at any point leaves the old files or the new ones; the streams' cursors stay as they were."""

from __future__ import annotations

import os
import time
from datetime import datetime, timezone

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import settings as examples
from hypothesis import strategies as st

from framework.formats.rewrite import Rewrite, StreamFile, compaction, footer_schema, settle_stream, stream_files
from framework.formats.rolling import RollingWriter
from framework.models.destination import DestinationSettings
from framework.storage.layout import PartNumbers
from framework.storage.local import LocalStorage
from framework.storage.s3 import S3Storage
from framework.storage.state_store import ConnectionState, StateStore, clear_staging, finish_publishing
from framework.typed.arrow import ENVELOPE

AT = datetime(2024, 3, 5, tzinfo=timezone.utc)
META = {"sync_id": 1, "changes": []}


@pytest.fixture(params=["local", "s3"])
def storage(request, tmp_path):
    if request.param == "local":
        return LocalStorage(str(tmp_path / "out"))
    return S3Storage(request.getfixturevalue("s3_bucket"), "data", request.getfixturevalue("s3_client"))


def settings(limit_mb: int = 128) -> DestinationSettings:
    return DestinationSettings.model_validate({"output": "unused", "format": {"format_type": "Parquet"},
                                               "file_size_limit_mb": limit_mb})


def land(storage, columns: dict[str, pa.Array], part: int, generation: int = 0, ids: range | None = None) -> str:
    """One file of stream ``events`` as a sync lands it: the envelope, then ``columns``."""
    rows = len(next(iter(columns.values())))
    ids = ids or range(part * 100, part * 100 + rows)
    envelope = [pa.array([f"id-{i}" for i in ids]), pa.array([AT] * rows, ENVELOPE[1].type),
                pa.array([generation] * rows, pa.int64()), pa.array([META] * rows, ENVELOPE[3].type)]
    schema = pa.schema([*ENVELOPE, *(pa.field(n, c.type) for n, c in columns.items())])
    batch = pa.record_batch([*envelope, *columns.values()], schema=schema)
    writer = RollingWriter.for_stream(storage, settings(), stream="events", arrow_schema=schema, avro_schema=None,
                                      generation_id=generation, part_numbers=PartNumbers(part), sync_id=part,
                                      started_at=AT)
    writer.write(batch)
    (written,) = writer.commit()
    return written.key


def drifted(storage) -> list[str]:
    """Three syncs: ``priority`` appears in the second, ``amount`` turns from integer to number and ``code``
    from integer to string in the third."""
    return [
        land(storage, {"id": pa.array([1, 2]), "amount": pa.array([10, 20]), "code": pa.array([7, 8])}, 0),
        land(storage, {"id": pa.array([3]), "amount": pa.array([30]), "code": pa.array([9]),
                       "priority": pa.array(["high"])}, 1),
        land(storage, {"id": pa.array([4, 5]), "amount": pa.array([1.5, None]), "code": pa.array(["x", "y"]),
                       "priority": pa.array([None, "low"])}, 2),
    ]


def store_with_cursor(storage) -> tuple[StateStore, ConnectionState]:
    store = StateStore(storage)
    state = ConnectionState(3, {"events": {"state": {"updated_at": "2024-03-05"}, "generation_id": 0}})
    store.save(state, "now")
    return store, state


def settle(storage, store, state, **more):
    return settle_stream(storage, settings(**more.pop("settings", {})), state, lambda: store.save(state, "now"),
                         stream="events", declared=["id", "amount", "code"], **more)


def download(storage, tmp_path) -> str:
    """The stream's folder as a local folder (S3 objects copied), for the readers."""
    if isinstance(storage, LocalStorage):
        return storage.path("events")
    folder = tmp_path / "copy" / "events"
    folder.mkdir(parents=True)
    for info in storage.list("events/"):
        (folder / info.key.rpartition("/")[2]).write_bytes(storage.read(info.key))
    return str(folder)


EXPECTED = {"id": [1, 2, 3, 4, 5], "amount": [10.0, 20.0, 30.0, 1.5, None], "code": ["7", "8", "9", "x", "y"],
            "priority": [None, None, "high", None, "low"]}
COLUMNS = [f.name for f in ENVELOPE] + ["id", "amount", "code", "priority"]


def test_every_reader_sees_every_column_and_record_once_after_the_rewrite(storage, tmp_path):
    drifted(storage)
    store, state = store_with_cursor(storage)
    done = settle(storage, store, state)
    assert (done.files_before, done.files_after, done.unified, done.merged) == (3, 3, 2, 0)  # the newest fits
    folder = download(storage, tmp_path)
    glob = os.path.join(folder, "*.parquet")
    tables = {
        "pyarrow.dataset": ds.dataset(folder, format="parquet").to_table().to_pydict(),
        "pq.read_table": pq.read_table(folder).to_pydict(),
        "polars": pl.read_parquet(folder).to_dict(as_series=False),
        "duckdb": duckdb.sql(f"select * from read_parquet('{glob}')").arrow().read_all().to_pydict(),
    }
    for reader, table in tables.items():
        assert list(table) == COLUMNS, reader
        got = sorted(zip(*(table[c] for c in EXPECTED)), key=lambda row: row[0])
        assert got == list(zip(*EXPECTED.values())), reader
    # the cursor and the generation as they were; nothing left staged or to publish
    assert StateStore(storage).load().streams == {"events": {"state": {"updated_at": "2024-03-05"},
                                                             "generation_id": 0}}
    assert StateStore(storage).load().publishing == []
    assert storage.list("_airbyte_state/staging/") == []


def test_a_folder_of_one_schema_is_left_as_it_is(storage):
    keys = [land(storage, {"id": pa.array([i])}, i) for i in range(3)]
    store, state = store_with_cursor(storage)
    before = [(i.key, i.size) for i in storage.list("events/")]
    done = settle(storage, store, state)
    assert (done.unified, done.merged, done.files_after) == (0, 0, 3)
    assert [(i.key, i.size) for i in storage.list("events/")] == before
    assert [i.key for i in storage.list("events/")] == sorted(keys)


def test_a_rewritten_file_keeps_its_key_and_generation(storage):
    keys = drifted(storage)
    store, state = store_with_cursor(storage)
    settle(storage, store, state)
    listed = {i.key: i.generation for i in storage.list("events/", with_metadata=True)}
    assert listed == dict.fromkeys(keys, 0)


def test_compaction_merges_small_files_of_a_generation_in_part_order(storage, tmp_path):
    drifted(storage)
    land(storage, {"id": pa.array([6])}, 3, generation=1, ids=range(600, 601))
    land(storage, {"id": pa.array([7])}, 4, generation=1, ids=range(700, 701))
    store, state = store_with_cursor(storage)
    done = settle(storage, store, state, compact=True)
    assert (done.files_before, done.files_after, done.merged) == (5, 2, 3)
    files = stream_files(storage, events_layout())
    assert [f.generation for f in files] == [0, 1]
    first = pq.read_table(pa.BufferReader(storage.read(files[0].key))).to_pydict()
    assert first["id"] == [1, 2, 3, 4, 5] and first["code"] == ["7", "8", "9", "x", "y"]
    assert pq.read_table(download(storage, tmp_path)).num_rows == 7
    assert StateStore(storage).load().streams["events"]["state"] == {"updated_at": "2024-03-05"}


def events_layout():  # noqa: N802 - the layout of the test's stream
    from framework.storage.layout import StreamLayout

    return StreamLayout.of(settings(), "events")


def test_compaction_plan_keeps_to_the_limit_and_leaves_large_files_alone():
    def f(part: int, size: int, generation: int | None = 0) -> StreamFile:
        return StreamFile(f"k{part}", size, part, generation, pa.schema([]))

    files = [f(0, 40), f(1, 40), f(2, 40), f(3, 70), f(4, 10), f(5, 10, generation=1), f(6, 10, generation=1),
             f(7, 10)]
    plans = compaction(files, small_bytes=50, most_bytes=100)
    assert plans == [Rewrite(("k0", "k1"), "k0", 0), Rewrite(("k2", "k4", "k7"), "k2", 0),
                     Rewrite(("k5", "k6"), "k5", 1)]
    assert compaction([f(0, 10)], 50, 100) == []


@pytest.mark.parametrize("dies_in", ["move", "delete"])
def test_a_crash_after_the_state_listed_the_moves_is_finished_by_the_next_run(storage, tmp_path, monkeypatch,
                                                                               dies_in):
    drifted(storage)
    store, state = store_with_cursor(storage)

    moved: list[str] = []
    real_move = storage.move

    def move(source, target):
        if dies_in == "move":
            raise KeyboardInterrupt("killed")
        moved.append(target)
        return real_move(source, target)

    def delete(keys):
        if moved:  # the files the merged one replaces (the folder's record went before any move)
            raise KeyboardInterrupt("killed")

    monkeypatch.setattr(storage, "move", move)
    monkeypatch.setattr(storage, "delete", delete)
    with pytest.raises(KeyboardInterrupt):
        settle(storage, store, state, compact=True)
    monkeypatch.undo()
    saved = StateStore(storage).load()
    assert len(saved.publishing) == 1 and saved.publishing[0]["replaces"]
    finish_publishing(storage, saved)  # what the next sync does first
    clear_staging(storage)
    table = pq.read_table(download(storage, tmp_path))
    assert sorted(table.column("id").to_pylist()) == [1, 2, 3, 4, 5]
    assert len(storage.list("events/")) == 1


def test_a_crash_before_the_state_was_saved_leaves_the_old_files(storage):
    keys = drifted(storage)
    before = {i.key: i.size for i in storage.list("events/")}
    store, state = store_with_cursor(storage)

    def killed() -> None:
        raise KeyboardInterrupt("killed")

    with pytest.raises(KeyboardInterrupt):
        settle_stream(storage, settings(), state, killed, stream="events", compact=True)
    assert {i.key: i.size for i in storage.list("events/")} == before and sorted(before) == sorted(keys)
    assert StateStore(storage).load().publishing == []
    clear_staging(storage)
    assert storage.list("_airbyte_state/staging/") == []


def test_a_footer_longer_than_the_first_read_takes_a_second(storage, monkeypatch):
    import framework.formats.rewrite as rewrite

    key = land(storage, {f"column_{i}": pa.array([i]) for i in range(300)}, 0)
    monkeypatch.setattr(rewrite, "FOOTER_GUESS", 64)
    assert footer_schema(storage, key).names[-1] == "column_299"


def test_a_file_that_is_not_parquet_is_named_with_the_fix(storage):
    from framework.errors import StorageError

    land(storage, {"id": pa.array([1])}, 0)
    writer = storage.open_object("events/2024_03_05_1709596800000_1.parquet")
    writer.write(b"not parquet at all")
    writer.commit()
    store, state = store_with_cursor(storage)
    with pytest.raises(StorageError, match=r"_1\.parquet is not a Parquet file.*move it out"):
        settle(storage, store, state)


def test_footers_of_200_files_cost(tmp_path):
    """The cost of comparing footers at every sync (the choice over recording the folder's schema): 200 files
    on a local disk."""
    storage = LocalStorage(str(tmp_path / "out"))
    for part in range(200):
        land(storage, {"id": pa.array([part]), "name": pa.array(["x"])}, part)
    store, state = store_with_cursor(storage)
    started = time.perf_counter()
    done = settle(storage, store, state)
    seconds = time.perf_counter() - started
    assert done.files_before == 200 and done.unified == 0
    assert seconds < 2.0, f"200 footers took {seconds:.2f} s"


def test_the_next_sync_reads_only_the_footers_of_files_the_record_does_not_list(storage, monkeypatch):
    import framework.formats.rewrite as rewrite

    drifted(storage)
    store, state = store_with_cursor(storage)
    settle(storage, store, state)
    read: list[str] = []
    real = rewrite.footer_schema

    def counted(where, key):
        read.append(key)
        return real(where, key)

    monkeypatch.setattr(rewrite, "footer_schema", counted)
    assert settle(storage, store, state).unified == 0 and read == []
    newest = land(storage, {"id": pa.array([6]), "amount": pa.array([7]), "code": pa.array([1]),
                            "rating": pa.array([4.5])}, 3)
    done = settle(storage, store, state)
    assert read == [newest]
    assert (done.files_before, done.unified) == (4, 4)  # `rating` is new to all, and `code` of the newest is text
    files = stream_files(storage, events_layout())
    assert {tuple(f.schema.names) for f in files} == {tuple(COLUMNS + ["rating"])}
    assert [f.generation for f in files] == [0, 0, 0, 0]


def test_a_damaged_record_or_one_with_other_sizes_is_not_trusted(storage, monkeypatch):
    import framework.formats.rewrite as rewrite
    from framework.formats.folder_record import record_key

    keys = drifted(storage)
    store, state = store_with_cursor(storage)
    settle(storage, store, state)
    table = pq.read_table(pa.BufferReader(storage.read(keys[0])))
    sink = pa.BufferOutputStream()
    pq.write_table(table.append_column("note", pa.array(["n"] * table.num_rows)), sink)
    writer = storage.open_object(keys[0], {"ab-generation-id": "0"})
    writer.write(sink.getvalue().to_pybytes())  # replaced behind the record's back: another size
    writer.commit()
    read: list[str] = []
    real = rewrite.footer_schema
    monkeypatch.setattr(rewrite, "footer_schema", lambda where, key: read.append(key) or real(where, key))
    assert settle(storage, store, state).unified == 2  # the two others gain `note`
    assert read == [keys[0]]
    storage.write_atomic(record_key("events"), b"{not json")
    assert settle(storage, store, state).files_before == 3
    assert sorted(read) == sorted([keys[0], *keys])


def test_a_value_that_cannot_be_rewritten_names_its_file_and_leaves_the_folder_as_it_was(storage):
    from framework.errors import StorageError

    land(storage, {"id": pa.array([1])}, 0)
    huge = land(storage, {"id": pa.array([2**64 - 1], pa.uint64())}, 1)
    before = {i.key: i.size for i in storage.list("events/")}
    store, state = store_with_cursor(storage)
    with pytest.raises(StorageError, match=rf"{huge.rpartition('/')[2]} could not be rewritten .* as they were"):
        settle(storage, store, state)
    assert {i.key: i.size for i in storage.list("events/")} == before
    assert storage.list("_airbyte_state/staging/") == []


@given(st.lists(st.tuples(st.integers(1, 120), st.sampled_from([0, 1, None])), max_size=30),
       st.integers(1, 100), st.integers(1, 200))
@examples(max_examples=200, deadline=None)
def test_any_compaction_plan_merges_small_files_of_one_generation_in_order_within_the_limit(sizes, small, most):
    files = [StreamFile(f"k{n}", size, n, generation, pa.schema([])) for n, (size, generation) in enumerate(sizes)]
    plans = compaction(files, small, most)
    by_key = {f.key: f for f in files}
    taken = [key for plan in plans for key in plan.sources]
    assert len(taken) == len(set(taken))  # a file in one merge at most
    for plan in plans:
        chosen = [by_key[key] for key in plan.sources]
        assert len(chosen) > 1 and plan.target == plan.sources[0]
        assert all(f.size < small and f.generation == plan.generation for f in chosen)
        assert [f.part_number for f in chosen] == sorted(f.part_number for f in chosen)
        assert sum(f.size for f in chosen) <= most
    # a small file left alone could not have joined the merge before it, nor started one with the next
    for generation in {f.generation for f in files}:
        small_ones = [f for f in files if f.size < small and f.generation == generation]
        merged = sum(len(p.sources) for p in plans if p.generation == generation)
        assert merged == 0 or merged >= 2
        if len(small_ones) >= 2 and all(a.size + b.size > most for a, b in zip(small_ones, small_ones[1:])):
            assert merged == 0


def test_a_narrower_file_of_a_later_sync_is_widened_alone(storage, tmp_path):
    drifted(storage)
    store, state = store_with_cursor(storage)
    settle(storage, store, state)
    before = {i.key: i.size for i in storage.list("events/")}
    narrow = land(storage, {"id": pa.array([6])}, 3)  # a sync whose records lack every optional field
    done = settle(storage, store, state)
    assert (done.files_before, done.unified) == (4, 1)
    after = {i.key: i.size for i in storage.list("events/")}
    assert {k: after[k] for k in before} == before and after[narrow] != 0
    table = pl.read_parquet(download(storage, tmp_path))
    assert table.columns == COLUMNS and table.height == 6
