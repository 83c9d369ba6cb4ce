"""framework.sync and framework.read end to end on the shared Spark session, and their bad input before Spark."""

from __future__ import annotations

import json

import pytest
from spark.test_pipeline import MANIFEST, SECRET, config_for, serve

import framework
from framework import ConfigError, ManifestError, Progress, SyncFailed, SyncReport


@pytest.fixture
def shop(fake_api):
    return serve(fake_api)


@pytest.mark.spark
def test_sync_lands_the_streams_reports_them_typed_and_continues_from_its_state(spark, shop, write_manifest,
                                                                                  tmp_path):
    manifest = write_manifest(MANIFEST)
    config = tmp_path / "config.json"
    config.write_text(json.dumps(config_for(shop)))
    seen: list[Progress] = []

    report = framework.sync(manifest, str(config), output=tmp_path / "out", spark=spark, streams=["items", "notes"],
                            on_progress=seen.append)

    assert isinstance(report, SyncReport) and report.ok and report.sync_id == 1
    assert report.output == str(tmp_path / "out") and report.format == "Parquet"
    items, notes = report.stream("items"), report.stream("notes")
    assert (items.records, notes.records, report.records) == (8, 5, 13)
    assert items.files and all(key.startswith("items/") for key in items.files) and items.bytes > 0
    assert items.state_saved and items.state is not None and "2024-01-04" in json.dumps(items.state)
    assert items.partitions == items.partitions_done == 4 and items.error is None
    assert notes.drift.policy == "drop" and notes.drift.records == 0
    # progress: each stream planned, then progress, then done with everything done and no time left
    for name in ("items", "notes"):
        events = [p for p in seen if p.stream == name]
        assert events[0].event == "planned" and events[-1].event == "done"
        assert events[-1].fraction_done == 1.0 and events[-1].time_left_s == 0.0
        assert events[-1].records == report.stream(name).records
    with pytest.raises(FrozenError):
        items.records = 0  # type: ignore[misc]

    again = framework.sync(manifest, config_for(shop), output=str(tmp_path / "out"), spark=spark, streams=["items"])
    assert again.sync_id == 2 and again.stream("items").records <= 2  # only the last window's lookback again


FrozenError = AttributeError  # msgspec's frozen Structs refuse assignment with AttributeError


@pytest.mark.spark
def test_a_failed_stream_raises_sync_failed_with_the_report_and_the_secret_masked(spark, shop, write_manifest,
                                                                                   tmp_path):
    shop.refuse_since = {"2024-01-04T00:00:00Z"}
    manifest = write_manifest(MANIFEST)
    with pytest.raises(SyncFailed) as failed:
        framework.sync(manifest, config_for(shop), output=tmp_path / "out", spark=spark, streams=["items"])
    report = failed.value.report
    assert isinstance(report, SyncReport) and not report.ok
    assert "401" in report.stream("items").error and SECRET not in str(failed.value)
    assert report.stream("items").records == 6  # the three windows before the refused one landed

    kept = framework.sync(manifest, config_for(shop), output=tmp_path / "out2", spark=spark, streams=["items"],
                          raise_on_failure=False)
    assert not kept.ok and kept.stream("items").error


def test_bad_input_raises_the_frameworks_errors_before_spark(shop, write_manifest, tmp_path):
    good = write_manifest(MANIFEST)
    with pytest.raises(ConfigError, match="unknown streams: nope"):
        framework.sync(good, config_for(shop), output=tmp_path / "out", streams=["nope"])
    with pytest.raises(ConfigError, match="selects no stream"):
        framework.sync(good, config_for(shop), output=tmp_path / "out", streams=[])
    with pytest.raises(ConfigError, match="no such config file"):
        framework.sync(good, tmp_path / "missing.json", output=tmp_path / "out")
    bad = write_manifest("version: 6.7.0\ntype: DeclarativeSource\nstreams: []\n", name="bad.yaml")
    with pytest.raises(ManifestError):
        framework.read(bad, config_for(shop))


@pytest.mark.spark
def test_read_gives_a_dataframe_per_stream(spark, shop, write_manifest):
    frames = framework.read(write_manifest(MANIFEST), config_for(shop), streams=["items", "notes"], spark=spark)
    assert sorted(frames) == ["items", "notes"]
    assert frames["notes"].count() == 5
    assert "_airbyte_raw_id" in frames["items"].columns and frames["items"].count() == 8
