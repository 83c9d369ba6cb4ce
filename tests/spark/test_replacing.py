"""An overwrite's older files go only after its state is saved; a run that died in between is finished next time."""

from __future__ import annotations

from datetime import datetime, timezone

import pyarrow as pa

from framework.formats.rolling import RollingWriter
from framework.models.destination import DestinationSettings
from framework.spark.replacing import MARK, finish_replacing, mark_replacing, replace_older
from framework.storage.layout import PartNumbers, StreamLayout
from framework.storage.local import LocalStorage
from framework.storage.state_store import ConnectionState, StateStore

SCHEMA = pa.schema([("id", pa.int64())])
AT = datetime(2024, 3, 5, tzinfo=timezone.utc)


def land(storage, settings, generation, start):
    writer = RollingWriter.for_stream(storage, settings, stream="notes", arrow_schema=SCHEMA, avro_schema=None,
                                      generation_id=generation, part_numbers=PartNumbers(start, 1, 0), sync_id=1,
                                      started_at=AT)
    writer.write(pa.RecordBatch.from_pydict({"id": [1, 2]}, schema=SCHEMA))
    return [f.key for f in writer.commit()]


def files(storage, settings):
    layout = StreamLayout.of(settings, "notes")
    return sorted(i.key for i in storage.list(layout.scan_prefix) if layout.part_number_of(i.key) is not None)


def test_a_run_finishes_the_deletes_of_an_overwrite_that_died_after_saving_its_state(tmp_path):
    storage = LocalStorage(str(tmp_path / "out"))
    settings = DestinationSettings.model_validate({"output": str(tmp_path / "out")})
    old, new = land(storage, settings, 1, 0), land(storage, settings, 2, 1)
    state = ConnectionState(2, {"notes": {"generation_id": 2}, "other": {"generation_id": 5}})
    mark_replacing(state, "notes")
    StateStore(storage).save(state, "now")  # ... and the process died here

    saved = StateStore(storage).load()
    assert saved.streams["notes"][MARK] is True and files(storage, settings) == sorted(old + new)
    assert finish_replacing(storage, settings, saved) == ["notes"]
    assert files(storage, settings) == new and MARK not in saved.streams["notes"]
    assert finish_replacing(storage, settings, saved) == []  # nothing left to do


def test_replace_older_keeps_the_generation_the_state_names(tmp_path):
    storage = LocalStorage(str(tmp_path / "out"))
    settings = DestinationSettings.model_validate({"output": str(tmp_path / "out")})
    land(storage, settings, 3, 0)
    kept = land(storage, settings, 4, 1)
    state = ConnectionState(4, {"notes": {"generation_id": 4, MARK: True}})
    assert len(replace_older(storage, settings, state, "notes")) == 1
    assert files(storage, settings) == kept and state.streams["notes"] == {"generation_id": 4}
