"""Parity with Airbyte for asynchronous jobs (AsyncRetriever): ``manifests/async_report.yaml``.

A report stream read in one-day windows, one job per window (at most two at once), the first window's job
failing once; its JSON lines downloaded, filtered and transformed. A first sync, then a second from
each runner's own state after the API got newer records. Both runners must emit the same records,
the same state, and make the same requests. Skipped without airbyte-cdk (see tests/parity/README.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fakes.api_server import FakeApi, ReportJobs
from parity.test_airbyte_parity import (  # noqa: F401  (pytestmark: the parity mark and the skip)
    MANIFESTS,
    Both,
    assert_same_records,
    assert_same_requests,
    catalog_for,
    distinct_requests,
    pytestmark,
    run_cdk,
    run_ours,
)
from parity.test_airbyte_parity import api as api  # noqa: F401  (the fixture)

FIRST = [{"id": n, "amount": n % 4, "updated_at": f"2024-01-0{1 + n // 4}T{n:02d}:00:00Z"} for n in range(12)]
SECOND = FIRST + [{"id": 12, "amount": 5, "updated_at": "2024-01-03T20:00:00Z"},
                  {"id": 13, "amount": 7, "updated_at": "2024-01-04T01:00:00Z"}]


class Events:
    def __init__(self) -> None:
        self.events = FIRST

    def __call__(self, body: dict) -> list[dict]:
        return [e for e in self.events if body["since"] <= e["updated_at"] <= body["until"]]


def run_both(api: FakeApi, jobs: ReportJobs, folder: Path, config: dict, catalog: dict,
             ours_state: list | None = None, cdk_state: list | None = None) -> tuple[Both, list, list]:
    """Both runners, each against a fresh report API (job ids from `job1`, the failing job failing again):
    the runs, and the job bodies each runner created."""
    path = MANIFESTS / "async_report.yaml"
    api.requests.clear()
    jobs.reset()
    ours = run_ours(folder, path, config, catalog, ours_state)
    ours_requests, ours_jobs = distinct_requests(api), list(jobs.created)
    api.requests.clear()
    jobs.reset()
    cdk = run_cdk(folder, path, config, catalog, cdk_state)
    cdk_requests, cdk_jobs = distinct_requests(api), list(jobs.created)
    cdk.check("source-declarative-manifest")
    ours.check("run-manifest --protocol")
    return Both(ours, cdk, ours_requests, cdk_requests), ours_jobs, cdk_jobs


def _config(api: FakeApi, end: str) -> dict[str, Any]:
    return {"base_url": api.url, "start_date": "2024-01-01T00:00:00Z", "end_date": end, "account": "acme"}


def test_report_jobs_over_two_syncs(api: FakeApi, tmp_path: Path) -> None:
    events = Events()
    catalog = catalog_for({"report": "incremental"})

    jobs = ReportJobs(events, fail_once={"acme-2024-01-01T00:00:00Z"}, fmt="jsonl").install(api)
    first, ours_jobs, cdk_jobs = run_both(api, jobs, tmp_path, _config(api, "2024-01-03T23:59:59Z"), catalog)
    assert_same_records(first, "report", partition_of=lambda r: r["window"])
    assert_same_requests(first)
    assert first.ours.stream_state("report") == first.cdk.stream_state("report") == \
        {"updated_at": "2024-01-03T11:00:00Z"}
    assert sorted(map(str, ours_jobs)) == sorted(map(str, cdk_jobs)) and len(cdk_jobs) == 4  # the first twice

    events.events = SECOND
    second, ours_jobs, cdk_jobs = run_both(api, jobs, tmp_path, _config(api, "2024-01-04T23:59:59Z"), catalog,
                                           ours_state=first.ours.state_input(), cdk_state=first.cdk.state_input())
    assert sorted(map(str, ours_jobs)) == sorted(map(str, cdk_jobs))
    assert_same_records(second, "report", partition_of=lambda r: r["window"])
    assert_same_requests(second)
    assert second.ours.stream_state("report") == second.cdk.stream_state("report")
    assert {r["id"] for r in second.ours.records["report"]} >= {12, 13}
