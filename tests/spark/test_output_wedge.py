"""An output never wedges: a saved state that lists staged files which are gone (another sync without the lease
cleared them, as issue 36 saw: every later run then stopped with "neither is there") sets its stream back, so
the next sync reads those records again, once; and a sync with no state into a folder that holds the stream's
files says so, and how to start over."""

from __future__ import annotations

import warnings

import pytest
from spark.test_pipeline import MANIFEST, Shop, read_parquet, saved_state, serve, settings_for, sync

from framework.spark import pipeline
from framework.spark.pipeline import OutputNotice
from framework.storage.local import LocalStorage
from framework.storage.state_store import STAGING_PREFIX, STATE_KEY

pytestmark = pytest.mark.spark

FIRST_END = "2024-01-02T23:59:59Z"  # items 1 to 4


@pytest.fixture
def shop(fake_api) -> Shop:
    return serve(fake_api)


@pytest.fixture
def manifest(write_manifest) -> str:
    return write_manifest(MANIFEST)


class Killed(BaseException):
    """The driver dies here (a BaseException: nothing of the pipeline handles it)."""


def test_a_publication_whose_staged_files_are_gone_sets_the_stream_back_and_nothing_is_lost(
        spark, shop, manifest, tmp_path, monkeypatch):
    out = tmp_path / "out"
    assert not sync(spark, manifest, shop, settings_for(out), streams=["items"], end=FIRST_END).failed
    assert [r["id"] for r in read_parquet(out, "items")] == [1, 2, 3, 4]
    storage = LocalStorage(str(out))

    def publish_then_lose(target, files):  # (of several, the first published;) the staged others deleted; death
        staged = [f for f in files if f.get("staged")]
        if len(staged) > 1:
            target.move(staged[0]["staged"], staged[0]["key"])
            staged = staged[1:]
        target.delete([f["staged"] for f in staged])
        raise Killed

    monkeypatch.setattr(pipeline, "publish", publish_then_lose)
    with pytest.raises(Killed):
        sync(spark, manifest, shop, settings_for(out), streams=["items"], tasks_per_core=1)
    wedged = saved_state(out)
    assert wedged["publishing"] and wedged["publishing_stream"] == "items"
    assert wedged["publishing_before"]["state"] == {"updated_at": "2024-01-02T18:00:00Z"}
    lost = [item["staged"] for item in wedged["publishing"] if storage.read(item["key"]) is None]
    assert lost and all(storage.read(key) is None for key in lost)  # neither staged nor published

    monkeypatch.undo()
    with pytest.warns(OutputNotice, match="were gone before they were published"):
        again = sync(spark, manifest, shop, settings_for(out), streams=["items"])
    assert not again.failed
    # every id, and twice only item 4, the record at the first sync's saved cursor value, which any next sync
    # reads again (Airbyte's inclusive window start): the lost files' records are back, none of them twice
    assert [r["id"] for r in read_parquet(out, "items")] == [1, 2, 3, 4, 4, 5, 6, 7, 8]
    state = saved_state(out)
    assert "publishing" not in state and state["streams"]["items"]["state"] == {"updated_at": "2024-01-04T18:00:00Z"}
    assert not (out / STAGING_PREFIX).exists()
    # and the run after that goes on as usual
    assert not sync(spark, manifest, shop, settings_for(out), streams=["items"]).failed
    assert [r["id"] for r in read_parquet(out, "items")].count(8) == 2  # its inclusive window start, as always


def test_a_sync_without_state_into_a_folder_with_the_streams_files_says_how_to_start_over(spark, shop, manifest,
                                                                                           tmp_path):
    out = tmp_path / "out"
    with warnings.catch_warnings():
        warnings.simplefilter("error", OutputNotice)  # a new output: nothing to say
        assert not sync(spark, manifest, shop, settings_for(out), streams=["items"]).failed
    (out / STATE_KEY).unlink()
    with pytest.warns(OutputNotice, match=r"already holds files of 'items'.*--sync-mode overwrite"):
        assert not sync(spark, manifest, shop, settings_for(out), streams=["items"]).failed
    with warnings.catch_warnings():  # an overwrite starts over: nothing to say
        warnings.simplefilter("error", OutputNotice)
        (out / STATE_KEY).unlink()
        assert not sync(spark, manifest, shop, settings_for(out), streams=["items"], sync_mode="overwrite").failed
    assert [r["id"] for r in read_parquet(out, "items")] == list(range(1, 9))
