"""Parity with airbyte-cdk for a state that keeps finished windows beyond its resume value (Airbyte's
concurrent ``date-range`` state, what a sync stopped half way saves): airbyte-cdk and we read it alike.

Scenario (c)'s manifest (``datetime_cursor.yaml``): our sync of the first orders is stopped with window 2
(January 2) unfinished and windows 3 and 4 finished; the state it saved is given to both runners for the
next sync. Both skip the finished windows, read the gap and what came after the last finished one, and
end with the same plain state. Skipped without a python that has airbyte-cdk (``AIRBYTE_CDK_PYTHON``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from fakes.api_server import FakeApi
from parity.test_airbyte_parity import (
    ENABLE,
    FIRST_ORDERS,
    Orders,
    _cdk_available,
    _day,
    canonical,
    catalog_for,
    covered,
    iso_instant,
    run_both,
    windows_of,
)

pytestmark = [
    pytest.mark.parity,
    pytest.mark.skipif(not _cdk_available(),
                       reason=f"parity with airbyte-cdk needs AIRBYTE_CDK_PYTHON set to a python with airbyte-cdk: "
                              f"{ENABLE}"),
]

# As our sync leaves it when January 1, 3 and 4 are read and January 2 is not: January 1 up to its latest
# record, then January 3 and 4 (one-day windows, a second of granularity).
STOPPED = {"state_type": "date-range", "slices": [
    {"start": "2024-01-01T00:00:00Z", "end": "2024-01-01T23:59:59Z", "most_recent_cursor_value": "2024-01-01T23:59:59Z"},
    {"start": "2024-01-03T00:00:00Z", "end": "2024-01-04T23:59:59Z", "most_recent_cursor_value": "2024-01-04T10:00:00Z"},
]}


@pytest.fixture
def api() -> Iterator[FakeApi]:
    with FakeApi() as server:
        yield server


def state_input(stream_state: dict) -> list:
    return [{"type": "STREAM", "stream": {"stream_descriptor": {"name": "orders"}, "stream_state": stream_state}}]


def test_a_state_with_finished_ranges_is_read_alike(api: FakeApi, tmp_path: Path) -> None:
    api.route("GET", "/orders", Orders(FIRST_ORDERS))
    config = {"base_url": api.url, "start_date": "2024-01-01T00:00:00Z", "end_date": "2024-01-05T00:00:00Z"}
    both = run_both(api, tmp_path, "datetime_cursor.yaml", config, catalog_for({"orders": "incremental"}),
                    ours_state=state_input(STOPPED), cdk_state=state_input(STOPPED))
    # January 2's seven orders, nothing of January 3 or 4; we also read again the order at the resume value
    # itself (2024-01-01T23:59:59, see below)
    assert {_day(r) for r in both.cdk.records["orders"]} == {"2024-01-02"}
    at_resume = [canonical(o) for o in FIRST_ORDERS if o["updated_at"] == "2024-01-01T23:59:59Z"]
    assert Counter(canonical(r) for r in both.ours.records["orders"]) == \
        Counter(canonical(r) for r in both.cdk.records["orders"]) + Counter(at_resume)
    assert both.ours.stream_state("orders") == both.cdk.stream_state("orders") == {"updated_at": "2024-01-04T10:00:00Z"}
    ours = covered(windows_of(both.ours_requests, "updated_since", "updated_until")["/orders"], timedelta(seconds=1),
                   iso_instant)
    cdk = covered(windows_of(both.cdk_requests, "updated_since", "updated_until")["/orders"], timedelta(seconds=1),
                  iso_instant)
    # The same time, but for the first gap's start: we read again from the resume value itself (inclusive, as
    # after a plain state), airbyte-cdk from one granularity after the first slice's end (README, difference).
    assert [end for _, end in ours] == [end for _, end in cdk]
    assert [start for start, _ in ours[1:]] == [start for start, _ in cdk[1:]]
    assert ours[0][0] == "2024-01-01T23:59:59" and cdk[0][0] == "2024-01-02T00:00:00"
