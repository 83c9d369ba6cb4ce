"""The executors' Python workers are readied while the driver plans (framework/normalization/files.py
``warm_workers``), for the streams that go through them only, and the workers build the sink's storage
without pydantic's plugin scan (``_storage``)."""

from __future__ import annotations

import os
import threading

import pytest

from framework.normalization import files, runner
from framework.normalization.runner import normalize
from normalization.conftest import at, land, table_rows

SCHEMA = {"type": "object", "properties": {
    "id": {"type": "integer"}, "lines": {"type": "array", "items": {"type": "object", "properties": {
        "sku": {"type": "string"}}}}}}


class _Settings:
    """Stands in for DestinationSettings: records what PYDANTIC_DISABLE_PLUGINS said while it validated."""

    seen: list[str | None] = []

    @classmethod
    def model_validate(cls, value: object) -> object:
        cls.seen.append(os.environ.get("PYDANTIC_DISABLE_PLUGINS"))
        return value


@pytest.mark.parametrize("chosen", [None, "some_plugin"])
def test_storage_is_built_without_the_plugin_scan_unless_the_user_chose(monkeypatch, chosen):
    monkeypatch.setattr(files, "DestinationSettings", _Settings)
    monkeypatch.setattr(files, "storage_for", lambda settings: settings)
    if chosen is None:
        monkeypatch.delenv("PYDANTIC_DISABLE_PLUGINS", raising=False)
    else:
        monkeypatch.setenv("PYDANTIC_DISABLE_PLUGINS", chosen)
    _Settings.seen = []
    assert files._storage({"output": "/x"}) == {"output": "/x"}
    assert _Settings.seen == ["__all__" if chosen is None else chosen]
    assert os.environ.get("PYDANTIC_DISABLE_PLUGINS") == chosen  # as it was


def _recording(monkeypatch) -> list[threading.Thread | None]:
    started: list[threading.Thread | None] = []

    def warm(spark, destination_json):
        thread = files.warm_workers(spark, destination_json)
        started.append(thread)
        return thread

    monkeypatch.setattr(runner, "warm_workers", warm)
    return started


@pytest.mark.spark
def test_a_one_pass_stream_warms_the_workers_and_waits_for_the_warm_up(spark, output, local_settings,
                                                                         monkeypatch):
    settings = local_settings("parquet")
    land(settings, "orders", [{"id": i, "lines": [{"sku": f"s{i}"}]} for i in range(5)], SCHEMA, emitted_at=at(1))
    started = _recording(monkeypatch)
    result = normalize(spark, settings, full_refresh=True)
    assert not result.failed
    [thread] = started
    assert thread is not None and not thread.is_alive()  # joined before normalize returned
    [lines] = [name for name in result.streams[0].tables if name.endswith("lines")]
    assert sorted(r["sku"] for r in table_rows(output, lines)) == [f"s{i}" for i in range(5)]


@pytest.mark.spark
def test_a_deduplicated_stream_starts_no_warm_up(spark, output, local_settings, monkeypatch):
    settings = local_settings("parquet")
    land(settings, "orders", [{"id": i, "lines": []} for i in range(3)], SCHEMA, emitted_at=at(1),
         primary_key=["id"], cursor="id", destination_sync_mode="append_dedup")
    started = _recording(monkeypatch)
    assert not normalize(spark, settings, full_refresh=True).failed
    assert started == []  # Spark's own writer, no Python workers to ready
