"""Progress while the first groups still run: the tasks tell the driver what they read as they read.

The fake API holds every window's second page until the sync's progress
callback has seen a ``tick`` that counts records: so no group can return
before that tick, and the test only counts and orders events (no timing).
"""

from __future__ import annotations

import json
import threading

import pytest
from fakes.api_server import Reply, dated, paged
from spark.test_pipeline import MANIFEST, Shop, _authorized, config_for, settings_for

from framework.engine.connector import open_connector
from framework.engine.selection import select_streams
from framework.spark.pipeline import PipelineOptions, run_pipeline

pytestmark = pytest.mark.spark


def test_progress_ticks_count_records_before_the_first_group_returns(spark, fake_api, write_manifest, tmp_path):
    shop = Shop(fake_api)
    released_by_progress = threading.Event()
    release = threading.Event()

    def items(request):
        _authorized(request)
        if request.param("page") == "2" and not release.wait(120):  # held until progress was seen
            return Reply(503, {"error": "released by timeout"})
        page = paged(dated(shop.items, request, "updated_at", "since", "until"), request, default_page_size=2)
        return Reply(200, json.dumps(page).encode())

    fake_api.route("GET", "/items", items)
    manifest = write_manifest(MANIFEST)
    events: list[tuple[str, int, int, float | None, float]] = []

    def progress(event, result):
        events.append((event, result.records, result.units_done, result.work_done, result.work))
        if event == "tick" and result.records > 0 and not release.is_set():
            released_by_progress.set()
            release.set()

    connector = open_connector(manifest, config_for(shop), sleep=lambda seconds: None)
    result = run_pipeline(connector, manifest, select_streams(connector.streams, None, ["items"]),
                          settings_for(tmp_path / "out"), spark, options=PipelineOptions(), progress=progress)

    items_result = result.streams[0]
    assert items_result.error is None and items_result.records == 8
    assert released_by_progress.is_set(), "no tick counted records while the groups were held"
    kinds = [event for event, *_ in events]
    first_group = kinds.index("group")
    ticks_before = [e for e in events[:first_group] if e[0] == "tick" and e[1] > 0]
    assert ticks_before, events
    # what the tick counted came from the running tasks: no group had returned, no unit was folded
    assert all(units_done == 0 or work_done > 0 for _, _, units_done, work_done, _ in ticks_before)
    # four daily windows: the work planned is their seconds, and all of it is done at the end
    assert kinds[0] == "planned" and kinds[-1] == "done"
    assert events[-1][4] == pytest.approx(4 * 86_400, rel=0.01) and events[-1][3] == events[-1][4]
