"""Asynchronous jobs end to end in protocol mode: a report-job API on the fake server (tests/fakes/api_server.py)."""

from __future__ import annotations

import io
from typing import Any

import orjson
import pytest
import yaml
from engine.test_reading import run as run  # noqa: F401  (the fixture)
from engine.test_reading import source
from fakes.api_server import ReportJobs

from framework.engine.connector import open_connector
from framework.engine.selection import select_streams
from framework.protocol.read import read

ACCOUNTS = [f"a{i:02d}" for i in range(20)]
SCHEMA = {"type": "object", "properties": {"id": {"type": "string"}, "account": {"type": "string"},
                                           "amount": {"type": ["null", "integer"]}}}


def rows(body: dict) -> list[dict]:
    account = body["account"]
    return [{"id": f"{account}-{n}", "account": account, "amount": n} for n in range(3)]


def report_stream(*, fmt: str = "csv", timeout: Any = None, **more: Any) -> dict:
    retriever: dict[str, Any] = {
        "type": "AsyncRetriever",
        "partition_router": {"type": "ListPartitionRouter", "values": ACCOUNTS, "cursor_field": "account"},
        "creation_requester": {"type": "HttpRequester", "url_base": "{{ config.base_url }}", "path": "/reports",
                               "http_method": "POST",
                               "request_body_json": {"account": "{{ stream_partition.account }}"}},
        "polling_requester": {"type": "HttpRequester", "url_base": "{{ config.base_url }}",
                              "path": "/reports/{{ creation_response['id'] }}"},
        "status_mapping": {"type": "AsyncJobStatusMap", "running": ["pending"], "completed": ["ready"],
                           "failed": ["failed"], "timeout": ["timeout"]},
        "status_extractor": {"type": "DpathExtractor", "field_path": ["status"]},
        "download_target_extractor": {"type": "DpathExtractor", "field_path": ["urls"]},
        "download_requester": {"type": "HttpRequester", "url_base": "{{ config.base_url }}",
                               "path": "{{ download_target }}"},
        "download_decoder": {"type": "CsvDecoder"} if fmt == "csv" else {"type": "JsonlDecoder"},
        "delete_requester": {"type": "HttpRequester", "url_base": "{{ config.base_url }}",
                             "path": "/reports/{{ creation_response.id }}/delete", "http_method": "POST"},
        "record_selector": {"type": "RecordSelector", "extractor": {"type": "DpathExtractor", "field_path": []}},
        **more,
    }
    if timeout is not None:
        retriever["polling_job_timeout"] = timeout
    return {"type": "DeclarativeStream", "name": "report", "primary_key": "id",
            "schema_loader": {"type": "InlineSchemaLoader", "schema": SCHEMA}, "retriever": retriever}


@pytest.fixture(autouse=True)
def _fast_polls(monkeypatch):
    monkeypatch.setenv("FRAMEWORK_ASYNC_POLL_SECONDS", "0")


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_twenty_partitions_some_failing_once_within_the_job_limit(run, fake_api, fmt):
    jobs = ReportJobs(rows, fail_once={"a03", "a11", "a17"}, polls=2, fmt=fmt).install(fake_api)
    manifest = source(report_stream(fmt=fmt))
    manifest["max_concurrent_async_job_count"] = 3
    result = run(manifest)
    assert not result.failed, result.output
    got = sorted(result.records("report"), key=lambda r: r["id"])
    expected = sorted((r for a in ACCOUNTS for r in rows({"account": a})), key=lambda r: r["id"])
    if fmt == "csv":  # CSV values are text
        expected = [{k: str(v) for k, v in r.items()} for r in expected]
    assert got == expected
    assert jobs.peak == 3  # several jobs at once, never more than the limit
    assert len(jobs.created) == 23  # the three failed jobs were created again
    assert sorted(jobs.deleted) == sorted(set(jobs.deleted)) and len(jobs.deleted) == 20


def test_a_job_failing_every_time_fails_its_partition_after_three_attempts(run, fake_api):
    class Always(ReportJobs):
        def _poll(self, request):
            answer = super()._poll(request)
            if self._jobs[request.path_params["id"]]["body"]["account"] == "a05" and answer["status"] == "ready":
                return {"id": answer["id"], "status": "failed"}
            return answer

    jobs = Always(rows).install(fake_api)
    result = run(source(report_stream()))
    assert result.failed
    assert [b["account"] for b in jobs.created].count("a05") == 3
    message = result.errors()[0]["message"]
    assert "did not complete in 3 attempts" in message and "a05" in message


def test_an_unknown_status_names_the_status_mapping(run, fake_api):
    fake_api.route("POST", "/reports", {"id": "j1", "status": "queued"})
    fake_api.route("GET", "/reports/j1", {"id": "j1", "status": "exploded"})
    stream = report_stream()
    stream["retriever"]["partition_router"]["values"] = ["a00"]
    result = run(source(stream))
    assert result.failed
    assert "`exploded`" in result.errors()[0]["message"] and "status_mapping" in result.errors()[0]["message"]


def test_a_sync_stopped_while_jobs_run_loses_nothing_on_the_next_run(write_manifest, fake_api):
    """Windows read incrementally, one job each; the third window's job never completes in the first sync,
    which fails there. Its state covers only the windows whose records were handed out, and the next sync,
    from that state, reads the rest: every record arrives."""
    events = [{"id": n, "updated_at": f"2024-01-0{1 + n // 3}T{n:02d}:00:00Z"} for n in range(12)]
    broken = {"on": True}

    class Reports(ReportJobs):
        def _poll(self, request):
            answer = super()._poll(request)
            body = self._jobs[request.path_params["id"]]["body"]
            if broken["on"] and body["since"].startswith("2024-01-03") and answer["status"] == "ready":
                return {"id": answer["id"], "status": "failed"}
            return answer

    Reports(lambda body: [e for e in events if body["since"] <= e["updated_at"] <= body["until"]],
            fmt="jsonl").install(fake_api)
    stream = report_stream(fmt="jsonl")
    retriever = stream["retriever"]
    del retriever["partition_router"]
    retriever["creation_requester"]["request_body_json"] = {"since": "{{ stream_interval.start_time }}",
                                                            "until": "{{ stream_interval.end_time }}"}
    stream["incremental_sync"] = {"type": "DatetimeBasedCursor", "cursor_field": "updated_at",
                                  "datetime_format": "%Y-%m-%dT%H:%M:%SZ", "start_datetime": "2024-01-01T00:00:00Z",
                                  "end_datetime": "2024-01-04T23:59:59Z", "step": "P1D", "cursor_granularity": "PT1S"}
    stream["schema_loader"]["schema"] = {"type": "object", "properties": {"id": {"type": "integer"},
                                                                           "updated_at": {"type": "string"}}}
    path = write_manifest(yaml.safe_dump(source(stream), sort_keys=False))

    def sync(states: dict) -> tuple[list[dict], dict, bool]:
        connector = open_connector(path, {"base_url": fake_api.url}, sleep=lambda seconds: None)
        out = io.BytesIO()
        # one window at a time: which windows end before the failure is what the test pins down
        report = read(connector, select_streams(connector.streams, None), states, out, io.StringIO(), concurrency=1)
        messages = [orjson.loads(line) for line in out.getvalue().splitlines()]
        got = [m["record"]["data"] for m in messages if m["type"] == "RECORD"]
        saved = [m["state"]["stream"]["stream_state"] for m in messages if m["type"] == "STATE"]
        return got, (saved[-1] if saved else {}), report.failed

    first, state, failed = sync({})
    assert failed and {r["id"] for r in first} == set(range(6))  # windows 1 and 2; window 3 failed
    assert state == {"updated_at": "2024-01-02T05:00:00Z"}
    broken["on"] = False
    second, state, failed = sync({"report": state})
    assert not failed
    assert {r["id"] for r in first} | {r["id"] for r in second} == set(range(12))
    assert state == {"updated_at": "2024-01-04T11:00:00Z"}
