"""Staged files and their publication: what a task stages no reader sees; the driver moves it to its key after
saving the state that lists the move; a run that finds moves left undone finishes them; the rest of the
staging area (tasks that outlived their driver) is removed."""

from __future__ import annotations

import os
from datetime import datetime, timezone

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from framework.errors import FrameworkError, StateError
from framework.formats.rolling import RollingWriter, publish
from framework.models.destination import DestinationSettings
from framework.storage.layout import PartNumbers, StreamLayout, next_part_number
from framework.storage.local import LocalStorage
from framework.storage.s3 import S3Storage
from framework.storage.state_store import (
    STAGING_PREFIX,
    STATE_KEY,
    ConnectionState,
    StateStore,
    clear_staging,
    finish_publishing,
    staging_prefix,
)

AT = datetime(2024, 3, 5, tzinfo=timezone.utc)
SCHEMA = pa.schema([("id", pa.int64())])


@pytest.fixture(params=["local", "s3"])
def storage(request, tmp_path):
    if request.param == "local":
        return LocalStorage(str(tmp_path / "out"))
    return S3Storage(request.getfixturevalue("s3_bucket"), "data", request.getfixturevalue("s3_client"))


def staged_writer(storage, settings, attempt="a1", start=0):
    return RollingWriter.for_stream(storage, settings, stream="users", arrow_schema=SCHEMA, avro_schema=None,
                                    generation_id=3, part_numbers=PartNumbers(start, 1, 0), sync_id=7,
                                    started_at=AT, staging=staging_prefix(7, attempt))


def settings_for(storage) -> DestinationSettings:
    return DestinationSettings.model_validate({"output": "unused", "format": {"format_type": "Parquet"}})


def rows(data: bytes | None) -> int:
    assert data is not None
    return pq.read_table(pa.BufferReader(data)).num_rows


def visible(storage) -> list[str]:
    layout = StreamLayout.of(settings_for(storage), "users", "", started_at=AT)
    return [i.key for i in storage.list(layout.scan_prefix) if layout.part_number_of(i.key) is not None]


def test_staged_files_are_complete_but_unseen_until_published(storage):
    writer = staged_writer(storage, settings_for(storage))
    writer.write(pa.RecordBatch.from_pydict({"id": [1, 2, 3]}, schema=SCHEMA))
    (written,) = writer.commit()
    # staged under a name no data glob (`**/*.parquet`) matches
    assert written.staged == staging_prefix(7, "a1") + written.key + ".staged"
    assert visible(storage) == [] and next_part_number(storage, settings_for(storage), "users") == 0
    assert rows(storage.read(written.staged)) == 3
    assert publish(storage, [written.as_dict()]) == 1
    assert visible(storage) == [written.key]
    assert rows(storage.read(written.key)) == 3 and storage.read(written.staged) is None
    assert (storage.list(written.key)[0].metadata or {}).get("ab-generation-id") == "3"  # metadata moved along
    assert publish(storage, [written.as_dict()]) == 0  # moved already: nothing to do, no error


def test_a_move_with_neither_end_there_is_an_error(storage):
    with pytest.raises(FrameworkError, match="neither is there"):
        storage.move("nowhere/a.jsonl", "nowhere/b.jsonl")


def test_a_run_finishes_the_publication_its_predecessor_saved_and_clears_the_rest(storage):
    settings = settings_for(storage)
    covered = staged_writer(storage, settings, "covered")
    covered.write(pa.RecordBatch.from_pydict({"id": [1]}, schema=SCHEMA))
    (file,) = covered.commit()
    zombie = staged_writer(storage, settings, "zombie", start=1)  # a task that outlived its driver
    zombie.write(pa.RecordBatch.from_pydict({"id": [2]}, schema=SCHEMA))
    zombie.commit()
    store = StateStore(storage)
    # the driver died right after saving the state that covers `covered`, before moving its file
    store.save(ConnectionState(7, {"users": {"state": {"n": 1}}}, [{"staged": file.staged, "key": file.key}]),
               "now")
    saved = store.load()
    assert saved.publishing == [{"staged": file.staged, "key": file.key}]
    assert finish_publishing(storage, saved).moved == 1 and saved.publishing == []
    store.save(saved, "later")
    assert "publishing" not in store.load().as_json("x").decode()
    removed = clear_staging(storage)
    assert len(removed) == 1 and "zombie" in removed[0]
    assert visible(storage) == [file.key]
    assert storage.list(STAGING_PREFIX) == []


def test_the_local_staging_folder_goes_whole(tmp_path):
    storage = LocalStorage(str(tmp_path))
    folder = tmp_path / STAGING_PREFIX / "sync-3" / "abc"
    folder.mkdir(parents=True)
    (folder / ".part.jsonl.123.tmp").write_bytes(b"half")  # a killed task's temporary
    clear_staging(storage)
    assert not os.path.exists(tmp_path / STAGING_PREFIX)


def test_a_publication_an_older_version_saved_under_its_unsuffixed_staged_names_still_finishes(storage):
    settings = settings_for(storage)
    writer = staged_writer(storage, settings, "old")
    writer.write(pa.RecordBatch.from_pydict({"id": [1, 2]}, schema=SCHEMA))
    (file,) = writer.commit()
    old_name = file.staged.removesuffix(".staged")  # where the previous layout staged it
    assert storage.move(file.staged, old_name)
    store = StateStore(storage)
    store.save(ConnectionState(7, {"users": {}}, [{"staged": old_name, "key": file.key}]), "now")
    assert finish_publishing(storage, store.load()).moved == 1
    assert visible(storage) == [file.key] and rows(storage.read(file.key)) == 2


def test_a_publication_whose_staged_files_are_gone_sets_its_stream_back(storage):
    """The wedge of issue 36: staged files the state lists are gone, not published. The stream's entry goes back
    to what it was before that save, the files of the same publication already moved go too, and the state
    no longer lists them: the next sync reads those units again, once."""
    settings = settings_for(storage)
    files = []
    for number, attempt in enumerate(("a1", "a2")):  # two tasks' files, one publication
        with staged_writer(storage, settings, attempt, start=number) as writer:
            writer.write(pa.record_batch([pa.array([number])], schema=SCHEMA))
            files += [f.as_dict() for f in writer.commit()]
    before = {"state": {"updated_at": "2024-01-02"}, "generation_id": 3}
    saved = ConnectionState(7, {"users": {"state": {"updated_at": "2024-01-04"}, "generation_id": 3}},
                            [{"staged": f["staged"], "key": f["key"]} for f in files], "users", before)
    store = StateStore(storage)
    store.save(saved, "now")
    loaded = store.load()
    assert loaded.publishing_stream == "users" and loaded.publishing_before == before
    storage.move(files[0]["staged"], files[0]["key"])  # the first was published, then the rest was lost
    storage.delete([f["staged"] for f in files[1:]])
    done = finish_publishing(storage, loaded)
    assert done.set_back == "users" and done.lost == tuple(f["staged"] for f in files[1:])
    assert loaded.streams["users"] == before and loaded.publishing == [] and visible(storage) == []
    store.save(loaded, "now")
    assert "publishing" not in orjson.loads(storage.read(STATE_KEY))


def test_a_lost_publication_of_a_stream_new_to_the_state_drops_its_entry(storage):
    saved = ConnectionState(1, {"users": {"state": {"updated_at": "x"}, "generation_id": 0}},
                            [{"staged": "_airbyte_state/staging/sync-1/a/users/f.parquet.staged",
                              "key": "users/f.parquet"}], "users", None)
    assert finish_publishing(storage, saved).set_back == "users" and "users" not in saved.streams


def test_a_lost_publication_of_an_older_state_that_names_no_stream_is_explained(storage):
    saved = ConnectionState(1, {}, [{"staged": "_airbyte_state/staging/sync-1/a/users/f.parquet.staged",
                                     "key": "users/f.parquet"}])
    with pytest.raises(StateError, match="--sync-mode overwrite"):
        finish_publishing(storage, saved)
