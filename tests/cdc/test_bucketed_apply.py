"""The bucketed image on Spark: applies read and rewrite only the buckets their changes touch, and the image
after any history (deletes, updates, re-inserts of the same keys across applies, a crash between writing the
buckets and moving the pointer, an image of an older version) equals a from-scratch apply of all records.

Records are staged the way a sync's tasks stage them (typed Parquet under the staging folder) and applied
with :func:`framework.cdc.apply.apply_changes` directly; the image is read back with pyarrow from the files the
pointer names, and the operation files are replayed with Python's json module.
"""

from __future__ import annotations

import io
import json
from datetime import datetime, timezone
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import framework.cdc.apply as apply_module
from framework.cdc.apply import ApplyResult, apply_changes
from framework.cdc.buckets import bucket_of, parse_image_file
from framework.cdc.plan import ChangeStream
from framework.cdc.pointer import load_pointer
from framework.errors import FrameworkError
from framework.models.destination import DestinationSettings
from framework.storage import storage_for
from framework.temporal.clock import FixedClock

pytestmark = pytest.mark.spark

NOW = datetime(2021, 5, 12, 2, 50, 41, 959000, tzinfo=timezone.utc)
FIELDS = ("id", "name", "updated_at", "_ab_cdc_deleted_at")
Row = tuple  # (id, name, day, deleted)


class Target:
    """One output folder (or bucket) and the stream's change data in it."""

    def __init__(self, settings: DestinationSettings, fields: tuple[str, ...] = FIELDS):
        self.settings, self.storage, self.fields = settings, storage_for(settings), fields

    def change(self, sync_id: int, fields: tuple[str, ...] | None = None) -> ChangeStream:
        return ChangeStream(stream="items", namespace="", fields=fields or self.fields, keys=(0,),
                            cursor="updated_at", deleted_field="_ab_cdc_deleted_at", incremental=True,
                            sync_id=sync_id, format_type="replicant_json", image="full", include_header=False,
                            catalog=None, schema="test", root="_airbyte_cdc/items/", op_prefix="items/")

    def stage(self, sync_id: int, rows: list[Row], extra: bool = False) -> None:
        table = pa.table({
            "_airbyte_extracted_at": pa.array([NOW] * len(rows), pa.timestamp("ms", tz="UTC")),
            "id": pa.array([r[0] for r in rows], pa.int64()),
            "name": pa.array([r[1] for r in rows], pa.string()),
            "updated_at": pa.array([datetime(2021, 1, r[2], tzinfo=timezone.utc) for r in rows],
                                   pa.timestamp("us", tz="UTC")),
            "_ab_cdc_deleted_at": pa.array([r[3] for r in rows], pa.string()),
            **({"extra": pa.array([f"x{r[0]}" for r in rows], pa.string())} if extra else {}),
        })
        sink = io.BytesIO()
        pq.write_table(table, sink)
        self.storage.write_atomic(f"{self.change(sync_id).staging_prefix()}1620787841959_00000.parquet",
                                  sink.getvalue(), {})

    def apply(self, spark: Any, sync_id: int, rows: list[Row] | None = None, compact: bool = False,
              **stage: Any) -> ApplyResult:
        if rows is not None:
            self.stage(sync_id, rows, **stage)
        return apply_changes(spark, self.storage, self.settings, self.change(sync_id), completed=True,
                             clock=FixedClock(NOW), cores=2, compact=compact)

    def pointer(self):
        return load_pointer(self.storage, "_airbyte_cdc/items/pointer.json")

    def image(self) -> dict[str, dict]:
        """Each key's row in the newest file the pointer names that has it, tombstones dropped."""
        newest: dict[str, tuple[int, dict]] = {}
        for key in self.pointer().image_keys:
            where = parse_image_file(key)
            assert where is not None, key
            for row in pq.read_table(io.BytesIO(self.storage.read(key))).to_pylist():
                if row["_cdc_key"] not in newest or newest[row["_cdc_key"]][0] < where[0]:
                    newest[row["_cdc_key"]] = (where[0], row)
        return {k: {f: row.get(f) for f in self.fields} for k, (_, row) in newest.items() if not row["_cdc_deleted"]}

    def operations(self) -> list[dict]:
        keys = sorted(info.key for info in self.storage.list("items/", with_metadata=False)
                      if info.key.rsplit("/", 1)[-1].startswith("cdc_"))
        version = self.pointer().version
        return [json.loads(line) for key in keys if int(key.rsplit("/", 1)[-1].split("_")[1]) <= version
                for line in self.storage.read(key).decode().splitlines()]

    def replayed(self) -> dict[str, dict]:
        """The image the operation files describe, replayed in order (full images: ``after`` is the row)."""
        state: dict[str, dict] = {}
        for op in self.operations():
            values = op["before"] if op["opType"] == "D" else op["after"]
            key = json.dumps([values["id"]], separators=(",", ":"))
            if op["opType"] == "D":
                del state[key]
            else:
                state[key] = {f: values[f] for f in self.fields}
        return state

    def files_on_disk(self) -> set[str]:
        return {info.key for info in self.storage.list("_airbyte_cdc/items/image/", with_metadata=False)}


def text_image(image: dict[str, dict]) -> dict[str, dict]:
    """JSON operation files spell a null as ``"null"``: compare images that way."""
    return {k: {f: "null" if v is None else v for f, v in row.items()} for k, row in image.items()}


def model(history: list[list[Row]], extra: bool = False) -> dict[str, dict]:
    """What the image must hold after these syncs: the latest record of each key, deleted ones gone."""
    state: dict[str, dict] = {}
    for rows in history:
        latest: dict[int, Row] = {}
        for row in rows:
            if row[0] not in latest or latest[row[0]][2] <= row[2]:
                latest[row[0]] = row
        for key_id, (_, name, day, deleted) in latest.items():
            key = f'["{key_id}"]'
            if deleted:
                state.pop(key, None)
            else:
                state[key] = {"id": str(key_id), "name": name, "updated_at": f"2021-01-{day:02d}T00:00:00.000000Z",
                              "_ab_cdc_deleted_at": None, **({"extra": f"x{key_id}"} if extra else {})}
    return state


def buckets_of(ids: list[int], count: int) -> set[int]:
    return set(bucket_of(pa.array([f'["{i}"]' for i in ids]), count).to_pylist())


def local(tmp_path, name: str = "out") -> Target:
    return Target(DestinationSettings.model_validate({"output": str(tmp_path / name), "format": {
        "format_type": "replicant_json", "mode": "realtime", "image": "full", "schema": "test"}}))


HISTORY: list[list[Row]] = [
    [(i, f"item {i}", 1, None) for i in range(400)],
    # updates, deletes, new keys, one key twice (the later record wins), a delete of a key never seen
    [(3, "three", 2, None), (7, "seven", 2, None), (7, "seven again", 3, None), (11, None, 2, None),
     (20, "x", 2, "2021-01-02"), (21, "x", 2, "2021-01-02"), (1000, "new", 2, None), (1001, "new", 2, None),
     (5000, "ghost", 2, "2021-01-02"), (30, "item 30", 1, None)],
    # a deleted key comes back, a new key goes, an updated key changes again
    [(20, "back", 4, None), (1000, "gone", 4, "2021-01-04"), (3, "three again", 4, None)],
    # many changes: most buckets are rewritten (their deltas folded in)
    [(i, f"bulk {i}", 5, None) for i in range(0, 400, 2)],
]


def test_applies_touch_only_their_buckets_and_any_history_equals_a_from_scratch_apply(spark, tmp_path):
    target = local(tmp_path)
    first = target.apply(spark, 1, HISTORY[0])
    buckets = first.buckets
    assert buckets >= 16 and first.touched == first.rewritten == buckets and first.counts.inserts == 400
    assert target.image() == model(HISTORY[:1])

    before = target.pointer()
    second = target.apply(spark, 2, HISTORY[1])
    changed = [row[0] for row in HISTORY[1]]
    assert second.touched == len(buckets_of(changed, buckets)) and second.rewritten == 0  # deltas only
    assert (second.counts.inserts, second.counts.updates, second.counts.deletes) == (2, 3, 2)
    after = target.pointer()
    for index in set(range(buckets)) - buckets_of(changed, buckets):
        assert after.layout[index].files == before.layout[index].files  # shared, not copied
    assert all(set(before.layout[b].files) < set(after.layout[b].files) for b in buckets_of(changed[:6], buckets))
    assert target.image() == model(HISTORY[:2]) and after.image_rows == 400

    third = target.apply(spark, 3, HISTORY[2])
    assert third.rewritten == 0 and (third.counts.inserts, third.counts.updates, third.counts.deletes) == (1, 1, 1)
    assert target.image() == model(HISTORY[:3])

    fourth = target.apply(spark, 4, HISTORY[3])
    assert fourth.rewritten > buckets // 2 and fourth.counts.updates == 200
    assert target.image() == model(HISTORY)
    assert text_image(target.image()) == text_image(target.replayed())
    # nothing but the files the pointer names stays (older versions' files go once no pointer needs them)
    assert target.files_on_disk() == set(target.pointer().image_keys)
    mut_ids = [json.loads(op["cursor"])["mutId"] for op in target.operations()]
    assert mut_ids == list(range(1, len(mut_ids) + 1))

    scratch = local(tmp_path, "scratch")
    for sync_id, rows in enumerate(HISTORY, start=1):
        scratch.stage(sync_id, rows)
    scratch.apply(spark, len(HISTORY))
    assert scratch.image() == target.image()


def test_a_crash_between_the_bucket_files_and_the_pointer_leaves_the_previous_image_and_the_next_apply_redoes_it(
        spark, tmp_path, monkeypatch):
    target = local(tmp_path)
    target.apply(spark, 1, HISTORY[0])
    pointer, image = target.pointer(), target.image()

    def crash(*args: Any) -> None:
        raise OSError("the machine went down")

    monkeypatch.setattr(apply_module, "save_pointer", crash)
    with pytest.raises(FrameworkError, match="nothing was committed"):
        target.apply(spark, 2, HISTORY[1])
    leftovers = {key for key in target.files_on_disk() - set(pointer.image_keys)
                 if key.endswith((".parquet", ".parquet.staged"))}
    assert leftovers and all(parse_image_file(key)[0] == 2 for key in leftovers)  # the new version's files...
    assert target.pointer() == pointer and target.image() == image  # ... and the previous image, intact

    monkeypatch.undo()
    target.stage(3, HISTORY[2])
    redone = target.apply(spark, 3)  # applies syncs 2 and 3
    assert redone.version == 2 and target.pointer().applied_sync == 3
    assert target.image() == model(HISTORY[:3]) and text_image(target.image()) == target.replayed()
    assert target.files_on_disk() == set(target.pointer().image_keys)
    mut_ids = [json.loads(op["cursor"])["mutId"] for op in target.operations()]
    assert mut_ids == list(range(1, len(mut_ids) + 1))


def test_an_unbucketed_image_of_an_older_version_is_read_and_written_bucketed(spark, tmp_path):
    target = local(tmp_path)
    old = model(HISTORY[:1])
    legacy_key = "_airbyte_cdc/items/image/v00000001/part-00000.parquet"
    sink = io.BytesIO()
    pq.write_table(pa.table({"_cdc_key": list(old), **{f: [row[f] for row in old.values()] for f in FIELDS}}), sink)
    target.storage.write_atomic(legacy_key, sink.getvalue(), {})
    target.storage.write_atomic("_airbyte_cdc/items/pointer.json", json.dumps({
        "version": 1, "applied_sync": 1, "mut_id": 400, "image_rows": 400, "image_keys": [legacy_key],
        "fields": list(FIELDS)}).encode(), {})

    result = target.apply(spark, 2, HISTORY[1])
    assert result.touched == result.rewritten == result.buckets >= 16
    assert (result.counts.inserts, result.counts.updates, result.counts.deletes) == (2, 3, 2)
    assert target.image() == model(HISTORY[:2]) and legacy_key not in target.files_on_disk()
    assert json.loads(target.operations()[0]["cursor"])["mutId"] == 401


def test_a_new_field_rewrites_every_bucket(spark, tmp_path):
    target = local(tmp_path)
    target.apply(spark, 1, HISTORY[0][:50])
    target.fields = (*FIELDS, "extra")
    result = target.apply(spark, 2, HISTORY[0][:50], extra=True)
    assert result.rewritten == result.buckets and result.counts.updates == 50
    assert target.image() == model([HISTORY[0][:50]], extra=True)


def test_delta_buckets_on_s3(spark, s3_settings):
    target = Target(s3_settings(format={"format_type": "replicant_json", "mode": "realtime", "image": "full"}))
    target.apply(spark, 1, HISTORY[0][:200])
    result = target.apply(spark, 2, [(3, "three", 2, None), (4, "x", 2, "2021-01-02"), (999, "new", 2, None)])
    assert result.rewritten == 0 and result.touched >= 1
    assert target.image() == model([HISTORY[0][:200], [(3, "three", 2, None), (4, "x", 2, "2021-01-02"),
                                                        (999, "new", 2, None)]])
    assert text_image(target.image()) == text_image(target.replayed())
    assert target.files_on_disk() == set(target.pointer().image_keys)


def test_a_compacting_apply_rewrites_every_bucket_as_one_base(spark, tmp_path):
    target = local(tmp_path)
    target.apply(spark, 1, HISTORY[0])
    target.apply(spark, 2, HISTORY[1])
    assert any(bucket.layers > 1 for bucket in target.pointer().layout)  # deltas to fold in
    result = target.apply(spark, 3, HISTORY[2], compact=True)
    assert result.touched == result.rewritten == result.buckets
    assert (result.counts.inserts, result.counts.updates, result.counts.deletes) == (1, 1, 1)
    layout = target.pointer().layout
    assert all(bucket.delta_rows == 0 and {parse_image_file(key)[0] for key in bucket.files} <= {3}
               for bucket in layout)
    assert sum(bucket.rows for bucket in layout) == len(model(HISTORY[:3]))
    assert target.image() == model(HISTORY[:3]) and text_image(target.image()) == target.replayed()
    assert target.files_on_disk() == set(target.pointer().image_keys)


def test_partitions_follow_the_bytes_without_a_cap_and_large_applies_cache_on_disk(spark, tmp_path, monkeypatch):
    """The apply's partitions grow with the bytes it reads, past twice the cores (the cap a 10,000,000-key image
    ran out of heap with); an apply over the memory threshold caches its rows on disk only."""
    monkeypatch.setattr(apply_module, "_PARTITION_BYTES", 1024)
    monkeypatch.setattr(apply_module, "_MEMORY_BYTES", 0)
    target = local(tmp_path)
    target.stage(1, HISTORY[0])
    staged_bytes = sum(info.size for info in target.storage.list("_airbyte_cdc/items/staging/"))
    first = target.apply(spark, 1)
    op_files = [f for f in first.files if f["records"]]
    assert staged_bytes > 5 * 1024 and len(op_files) > 4 and sum(f["records"] for f in op_files) == 400
    second = target.apply(spark, 2, HISTORY[1])
    assert second.rewritten == 0 and target.image() == model(HISTORY[:2])
    fourth = target.apply(spark, 3, HISTORY[3], compact=True)
    assert fourth.rewritten == fourth.buckets and target.image() == model([*HISTORY[:2], HISTORY[3]])
    assert text_image(target.image()) == target.replayed()
