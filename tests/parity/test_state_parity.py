"""Parity with airbyte-cdk for incremental state (issue 37's "State" part).

Same harness as ``test_airbyte_parity.py``: our ``run-manifest --protocol`` and
airbyte-cdk's ``source-declarative-manifest read`` against one fake API, records and
final states compared.

* ``no_records.yaml``: the state after a sync that read no record is the cursor's
  start, unpartitioned (an epoch cursor and a date cursor), per partition (a
  partition without records keeps its start) and under a global substream cursor;
  the next sync from it reads the same;
* a randomized comparison (``state_cases.py``): cursor configurations drawn from a
  fixed seed, two syncs each, and ours from the CDK's state; every one identical
  (the configurations where we differ by design are in ``bench/state_parity.py``'s
  measurement, not here: see docs/incremental.md, "Where we differ from Airbyte");
* a saved parent state of another shape is read, the parent from its start;
* the two places where airbyte-cdk is wrong and we keep ours (docs/airbyte-differences.md,
  "State"): a saved state in another of the cursor's formats, and duplicates with
  per-partition, client-side filtering and a lookback.

Skipped without a python that has airbyte-cdk (``AIRBYTE_CDK_PYTHON``).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from fakes.api_server import ApiError, FakeApi, RecordedRequest
from parity.state_cases import START, Case, CasesApi, comparable_state, draw_many, iso, manifest_of, run_batch
from parity.test_airbyte_parity import (
    ENABLE,
    Both,
    _cdk_available,
    assert_same_records,
    catalog_for,
    distinct_requests,
    run_cdk,
    run_ours,
)

HERE = Path(__file__).resolve().parent
MANIFESTS = HERE / "manifests" / "state"

pytestmark = [
    pytest.mark.parity,
    pytest.mark.skipif(not _cdk_available(),
                       reason=f"parity with airbyte-cdk needs AIRBYTE_CDK_PYTHON set to a python with airbyte-cdk: "
                              f"{ENABLE}"),
]


@pytest.fixture
def api() -> Iterator[FakeApi]:
    with FakeApi() as server:
        yield server


def run_both(api: FakeApi, folder: Path, manifest: str, config: dict, catalog: dict,
             ours_state: list | None = None, cdk_state: list | None = None) -> Both:
    path = MANIFESTS / manifest
    api.requests.clear()
    ours = run_ours(folder, path, config, catalog, ours_state)
    ours_requests = distinct_requests(api)
    api.requests.clear()
    cdk = run_cdk(folder, path, config, catalog, cdk_state)
    cdk_requests = distinct_requests(api)
    cdk.check("source-declarative-manifest")
    ours.check("run-manifest --protocol")
    return Both(ours, cdk, ours_requests, cdk_requests)


def without_form(state: Any) -> Any:
    """A per-partition state without what differs only in form: ``lookback_window`` (the sync's duration in
    seconds, when it read records), an empty ``parent_state`` (the CDK writes one without a parent) and the
    order of ``states`` (tests/parity/README.md, 8)."""
    if not isinstance(state, dict):
        return state
    out = {key: value for key, value in state.items()
           if key != "lookback_window" and not (key == "parent_state" and not value)}
    if isinstance(out.get("states"), list):
        out["states"] = sorted(out["states"], key=lambda entry: json.dumps(entry["partition"], sort_keys=True))
    return out


# -- item 2: the state after a sync that read no record ---------------------------------------------------


class Store:
    """Records by path, filtered by the request's since/until (epoch seconds compared as numbers)."""

    def __init__(self) -> None:
        self.rows: dict[str, list[dict]] = {}

    def __call__(self, request: RecordedRequest) -> dict:
        since, until = request.param("since"), request.param("until")
        if since is None or until is None:
            raise ApiError(400, "since and until are required")
        out = []
        for row in self.rows.get(request.path, []):
            value = row.get("timestamp", row.get("date", row.get("updated_at")))
            if since.isdigit():
                keep = int(since) <= int(value) <= int(until)
            else:
                keep = since <= value[:len(since)] and value[:len(until)] <= until
            if keep:
                out.append(row)
        return {"data": out}


NO_RECORDS = {"events": "incremental", "transactions": "incremental", "region_orders": "incremental",
              "account_orders": "incremental"}


def test_a_sync_that_reads_no_record_keeps_the_start_and_the_next_sync_reads_alike(api: FakeApi,
                                                                                   tmp_path: Path) -> None:
    store = Store()
    for path in ("/events", "/transactions", "/regions/eu/orders", "/regions/us/orders", "/accounts/1/orders",
                 "/accounts/2/orders"):
        api.route("GET", path, store)
    api.route("GET", "/accounts", {"data": [{"id": 1}, {"id": 2}]})
    store.rows["/regions/eu/orders"] = [{"id": "eu-1", "updated_at": "2024-01-02T05:00:00Z"}]
    config = {"base_url": api.url, "start_date": "2024-01-01", "end_date": "2024-01-20",
              "start_epoch": "1704067200", "end_epoch": "1705708800"}
    catalog = catalog_for(NO_RECORDS)

    first = run_both(api, tmp_path, "no_records.yaml", config, catalog)
    assert first.cdk.stream_state("events") == {"timestamp": "1704067200"}  # mailgun's case
    assert first.cdk.stream_state("transactions") == {"date": "2024-01-01"}  # plaid's case
    for stream in NO_RECORDS:
        assert without_form(first.ours.stream_state(stream)) == without_form(first.cdk.stream_state(stream)), stream
    partitions = {e["partition"]["region"]: e["cursor"] for e in first.ours.stream_state("region_orders")["states"]}
    assert partitions == {"eu": {"updated_at": "2024-01-02T05:00:00Z"}, "us": {"updated_at": "2024-01-01T00:00:00Z"}}
    assert "state" not in first.ours.stream_state("account_orders")  # a global cursor with nothing read: none yet

    store.rows.update({
        "/events": [{"id": "e1", "timestamp": 1704153600}, {"id": "e0", "timestamp": 1703980800}],  # 01-02, 12-31
        "/transactions": [{"id": "t1", "date": "2024-01-15"}, {"id": "t0", "date": "2023-12-20"}],
        "/regions/us/orders": [{"id": "us-1", "updated_at": "2024-01-01T00:00:00Z"},
                               {"id": "us-2", "updated_at": "2024-01-12T00:00:00Z"}],
        "/accounts/2/orders": [{"id": "a2-1", "updated_at": "2024-01-03T00:00:00Z"}]})
    config.update(end_date="2024-01-25", end_epoch="1706140800")
    second = run_both(api, tmp_path, "no_records.yaml", config, catalog,
                      ours_state=first.ours.state_input(), cdk_state=first.cdk.state_input())
    for stream in NO_RECORDS:
        assert_same_records(second, stream, partition_of=lambda record: record["id"][:2])
        assert without_form(second.ours.stream_state(stream)) == without_form(second.cdk.stream_state(stream)), stream
    assert {r["id"] for r in second.cdk.records["region_orders"]} == {"eu-1", "us-1", "us-2"}  # us from its start


# -- the randomized comparison --------------------------------------------------------------------------------

#: The seed and number of cursor configurations CI compares (bench/state_parity.py runs 160 of seed 37).
SEED, CASES = 2026, 20


def test_randomized_cursor_configurations_read_and_keep_state_alike(api: FakeApi, tmp_path: Path) -> None:
    cases = draw_many(CASES, SEED, avoid_known=True)
    verdicts = run_batch(api, tmp_path, cases)
    assert any(case.client_side for case in cases) and {case.mode for case in cases} == {
        "plain", "per_partition", "global"}  # the draw covers what it is meant to
    differing = [f"{v.case.name} ({v.case.knobs()}): {v.differences}" for v in verdicts if not v.identical]
    assert not differing, "\n".join(differing)


# -- a saved parent state of another shape ----------------------------------------------------------------------


def test_a_parent_state_of_another_shape_reads_the_parent_from_its_start(api: FakeApi, tmp_path: Path) -> None:
    store = Store()
    store.rows.update({
        "/accounts": [{"id": "p1", "updated_at": "2024-01-04T00:00:00Z"},
                      {"id": "p2", "updated_at": "2024-01-05T00:00:00Z"}],
        "/accounts/p1/orders": [{"id": "o1", "updated_at": "2024-01-02T00:00:00Z"},
                                {"id": "o2", "updated_at": "2024-01-04T00:00:00Z"}],
        "/accounts/p2/orders": [{"id": "o3", "updated_at": "2024-01-05T00:00:00Z"}]})
    for path in store.rows:
        api.route("GET", path, store)
    config = {"base_url": api.url, "start_date": "2024-01-01T00:00:00Z", "end_date": "2024-01-06T00:00:00Z"}
    saved = [{"type": "STREAM", "stream": {"stream_descriptor": {"name": "orders"}, "stream_state": {
        "states": [{"partition": {"account_id": "p1", "parent_slice": {}}, "cursor": {"updated_at":
                                                                                       "2024-01-03T00:00:00Z"}}],
        "state": {"updated_at": "2024-01-03T00:00:00Z"}, "use_global_cursor": False, "lookback_window": 0,
        "parent_state": {"accounts": {"modified_since": "2024-01-03"}}}}}]
    both = run_both(api, tmp_path, "parent_state.yaml", config, catalog_for({"orders": "incremental"}),
                    ours_state=saved, cdk_state=saved)
    # both read every account (the parent from its start), p1 from its own cursor
    assert sorted(r["id"] for r in both.cdk.records["orders"]) == ["o2", "o3"]
    assert_same_records(both, "orders", partition_of=lambda record: record["id"])
    assert ("GET", "/accounts", (("since", "2024-01-01T00:00:00Z"), ("until", "2024-01-06T00:00:00Z"))) \
        in both.ours_requests & both.cdk_requests
    ours, cdk = both.ours.stream_state("orders"), both.cdk.stream_state("orders")
    assert without_form(ours)["states"] == without_form(cdk)["states"]
    # the CDK keeps the key it could not read beside the new cursor; we write the parent's state anew
    assert cdk["parent_state"]["accounts"]["updated_at"] == ours["parent_state"]["accounts"]["updated_at"]
    assert "the saved state of its parent stream `accounts` has none of the keys" in both.ours.stderr


# -- where airbyte-cdk is wrong and we keep ours ------------------------------------------------------------------


def test_client_side_filtering_with_a_lookback_gives_each_record_once(api: FakeApi, tmp_path: Path) -> None:
    """Per partition, client-side filtering and a lookback, against an API that ignores the window: airbyte-cdk
    keeps a record once per window that returned it (the range filter only); we keep it in its own window."""
    case = Case(0, "per_partition", "P1D", "P1D", client_side=True, api_filters=False, dependency=False,
                end=START + timedelta(days=4), end_later=START + timedelta(days=4),
                first={"p1": ["2024-01-01T06:00:00Z", "2024-01-03T00:00:00Z"], "p2": ["2024-01-04T00:00:00Z"]})
    path = tmp_path / "duplicates.yaml"
    path.write_text(yaml.safe_dump(manifest_of([case]), sort_keys=False))
    CasesApi([case]).install(api)
    config = {"base_url": api.url, "start_date": iso(START), "end_c000": iso(case.end)}
    catalog = catalog_for({"c000": "incremental"})
    ours, cdk = run_ours(tmp_path, path, config, catalog), run_cdk(tmp_path, path, config, catalog)
    ours.check("run-manifest --protocol")
    cdk.check("source-declarative-manifest")
    mine = Counter(r["id"] for r in ours.records["c000"])
    theirs = Counter(r["id"] for r in cdk.records["c000"])
    assert set(mine) == set(theirs) == {"c000-p1-0", "c000-p1-1", "c000-p2-0"}
    assert set(mine.values()) == {1}
    assert theirs["c000-p1-0"] > 1, theirs  # the CDK's duplicates: once per window of the range
    assert comparable_state(case, ours.stream_state("c000")) == comparable_state(case, cdk.stream_state("c000"))
