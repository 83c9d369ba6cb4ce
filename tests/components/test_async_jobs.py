"""Asynchronous jobs (components/async_jobs.py): status mapping, the sync-wide slots, timeouts on an injected
clock, retries, downloads."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from framework.components.async_jobs import AsyncJobRetriever, JobSlots
from framework.components.context import BuildContext
from framework.components.http.transport import FunctionTransport
from framework.components.slices import StreamSlice
from framework.errors import ReadError
from framework.models import AsyncJobStatusMap, AsyncRetriever
from framework.temporal.clock import FixedClock

PATH = ("streams", 0, "retriever")
MAPPING = {"type": "AsyncJobStatusMap", "running": ["pending"], "completed": ["ready"], "failed": ["failed"],
           "timeout": ["timeout"]}


def model(**more: Any) -> AsyncRetriever:
    return AsyncRetriever.model_validate({
        "type": "AsyncRetriever",
        "creation_requester": {"type": "HttpRequester", "url_base": "http://api", "path": "/jobs",
                               "http_method": "POST"},
        "polling_requester": {"type": "HttpRequester", "url_base": "http://api",
                              "path": "/jobs/{{ creation_response.id }}"},
        "download_requester": {"type": "HttpRequester", "url_base": "http://api",
                               "path": "/jobs/{{ creation_response.id }}/rows"},
        "abort_requester": {"type": "HttpRequester", "url_base": "http://api",
                            "path": "/jobs/{{ creation_response.id }}/abort", "http_method": "POST"},
        "status_mapping": MAPPING,
        "status_extractor": {"type": "DpathExtractor", "field_path": ["status"]},
        "record_selector": {"type": "RecordSelector", "extractor": {"type": "DpathExtractor", "field_path": []}},
        "download_extractor": {"type": "DpathExtractor", "field_path": ["rows"]},
        **more})


class Api:
    """Jobs answer the statuses in ``script`` (per attempt: a list of polling statuses), then their rows."""

    def __init__(self, *scripts: list[str]):
        self.scripts = list(scripts)
        self.created: list[datetime] = []
        self.aborted: list[str] = []
        self.polls: dict[str, int] = {}
        self.clock = FixedClock(datetime(2024, 1, 1, tzinfo=UTC))

    def __call__(self, request) -> tuple[int, dict, Any]:
        path = request.url.removeprefix("http://api")
        if path == "/jobs":
            self.created.append(self.clock.now())
            return 200, {}, {"id": f"j{len(self.created)}"}
        job = path.split("/")[2]
        attempt = int(job[1:]) - 1
        if path.endswith("/abort"):
            self.aborted.append(job)
            return 200, {}, {}
        if path.endswith("/files"):  # the download target requester's answer
            return 200, {}, {"files": [f"/jobs/{job}/rows", f"/jobs/{job}/rows"]}
        if path.endswith("/rows"):
            return 200, {}, {"rows": [{"id": 1, "job": job}, {"id": 2, "job": job}]}
        script = self.scripts[min(attempt, len(self.scripts) - 1)]
        seen = self.polls[job] = self.polls.get(job, 0) + 1
        return 200, {}, {"id": job, "status": script[min(seen, len(script)) - 1]}

    def retriever(self, monkeypatch, poll: float = 10, **more: Any) -> AsyncJobRetriever:
        monkeypatch.setenv("FRAMEWORK_ASYNC_POLL_SECONDS", str(poll))
        ctx = BuildContext(config={}, transport=FunctionTransport(self), clock=self.clock,
                           sleep=lambda seconds: self.clock.advance(timedelta(seconds=seconds)))
        built = ctx.build(model(**more), PATH)
        assert isinstance(built, AsyncJobRetriever)
        return built


def records(retriever: AsyncJobRetriever) -> list[dict]:
    return [r for page in retriever.read(StreamSlice({"account": "a"}), {}) for r in page]


def test_the_status_map_lists_each_api_word_once():
    statuses = AsyncJobStatusMap.model_validate({**MAPPING, "skipped": ["empty"]}).statuses()
    assert statuses == {"pending": "running", "ready": "completed", "failed": "failed", "timeout": "timeout",
                        "empty": "skipped"}
    with pytest.raises(ValidationError, match="`ready` is listed under both `completed` and `failed`"):
        AsyncJobStatusMap.model_validate({**MAPPING, "failed": ["ready"]})
    with pytest.raises(ValidationError, match="`download_target_extractor`"):
        model(download_target_requester={"type": "HttpRequester", "url_base": "http://api", "path": "/files"})


def test_a_job_is_polled_until_completed_then_downloaded(monkeypatch):
    api = Api(["pending", "pending", "ready"])
    assert records(api.retriever(monkeypatch)) == [{"id": 1, "job": "j1"}, {"id": 2, "job": "j1"}]
    assert api.polls == {"j1": 3} and len(api.created) == 1


def test_a_failed_job_is_created_again_and_the_third_failure_gives_up(monkeypatch):
    api = Api(["failed"], ["pending", "failed"], ["ready"])
    assert [r["job"] for r in records(api.retriever(monkeypatch))] == ["j3", "j3"]
    api = Api(["failed"])
    with pytest.raises(ReadError, match="did not complete in 3 attempts"):
        records(api.retriever(monkeypatch))
    assert len(api.created) == 3


def test_a_job_running_past_the_timeout_is_aborted_and_retried(monkeypatch):
    api = Api(["pending"] * 100, ["ready"])  # polled every 10 s: the first job runs past one minute
    assert [r["job"] for r in records(api.retriever(monkeypatch, polling_job_timeout=1))] == ["j2", "j2"]
    assert api.aborted == ["j1"]
    assert api.created[1] - api.created[0] > timedelta(minutes=1)


def test_the_api_saying_timeout_aborts_and_a_failed_job_waits_before_its_retry(monkeypatch):
    api = Api(["timeout"], ["failed"], ["ready"])
    assert [r["job"] for r in records(api.retriever(monkeypatch, failed_retry_wait_time_in_seconds=60))] == \
        ["j3", "j3"]
    assert api.aborted == ["j1"]
    assert api.created[1] - api.created[0] < timedelta(seconds=60)  # a timed-out job: at once
    assert api.created[2] - api.created[1] >= timedelta(seconds=60)  # a failed one: after the wait


def test_download_targets_from_their_own_request_read_the_polling_response(monkeypatch):
    api = Api(["ready"])
    retriever = api.retriever(
        monkeypatch, download_target_requester={"type": "HttpRequester", "url_base": "http://api",
                                                "path": "/jobs/{{ polling_response.id }}/files"},
        download_target_extractor={"type": "DpathExtractor", "field_path": ["files"]},
        download_requester={"type": "HttpRequester", "url_base": "http://api", "path": "{{ download_target }}"})
    assert [r["job"] for r in records(retriever)] == ["j1"] * 4  # two targets, two records each


def test_a_skipped_job_gives_no_records(monkeypatch):
    api = Api(["empty"])
    assert records(api.retriever(monkeypatch, status_mapping={**MAPPING, "skipped": ["empty"]})) == []


def test_slots_are_leases_given_back_or_expired():
    now = [0.0]
    slots = JobSlots(2, lease=60, now=lambda: now[0])
    assert slots(("acquire", "a")) and slots(("acquire", "b"))
    assert not slots(("acquire", "c"))
    assert slots(("acquire", "a"))  # a holder keeps its slot
    slots(("release", "a"))
    assert slots(("acquire", "c"))
    now[0] = 50
    slots(("renew", ("c",)))
    now[0] = 100  # b was not renewed: its task died
    assert slots(("acquire", "d")) and not slots(("acquire", "e"))
    assert slots(("peak",)) == 2
    assert JobSlots(0).limit == 1


@given(st.integers(1, 5), st.lists(st.tuples(st.booleans(), st.integers(0, 9)), max_size=60))
def test_slots_never_exceed_the_limit(limit, operations):
    slots = JobSlots(limit)
    held: set[int] = set()
    for take, holder in operations:
        if take:
            if slots(("acquire", str(holder))):
                held.add(holder)
        else:
            slots(("release", str(holder)))
            held.discard(holder)
        assert len(held) <= limit
    assert slots(("peak",)) <= limit
