"""Asynchronous jobs (AsyncRetriever): one job on the API's side per partition, created, polled, downloaded.

The unit of the engine stays a partition (times a datetime window): reading a
unit waits for its job to complete and then downloads its records, page by
page, as any retriever hands them out. What differs is that jobs take time and
the API allows only so many at once:

* :class:`JobSlots` is the sync-wide count of running jobs, a service the
  Spark driver owns (:mod:`framework.coordination`): a partition takes a slot
  before its job is created and gives it back when the job is done (completed,
  skipped, or given up), so the jobs running at once in all tasks together
  never exceed ``max_concurrent_async_job_count``. A slot is a lease: its
  holder renews it while it waits, and a slot whose task died frees itself
  after :data:`LEASE_SECONDS`.
* :class:`JobBoard` holds the jobs of one process: the units a task (or the
  protocol reader) will read are submitted together (:func:`submit`), their
  jobs created as slots allow and polled together, every
  :data:`POLL_SECONDS` (Airbyte's 5 s; the environment variable
  ``FRAMEWORK_ASYNC_POLL_SECONDS`` changes it). No thread of its own: whoever
  waits for a job, or reads a download, moves the board on.
* As in airbyte-cdk, a job that failed (or could not be created, or timed
  out: ``polling_job_timeout``, 60 minutes by default, after which it is
  aborted) is created again, :data:`MAX_ATTEMPTS` attempts in all; then its
  partition fails, and the others go on. A skipped job gives no records.
* The records of a completed job are downloaded per download target with the
  ``download_requester``, paged by ``download_paginator``, read with the
  ``download_decoder`` and ``download_extractor``, then filtered and
  transformed by the ``record_selector``; the job is deleted after
  (``delete_requester``).
"""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import datetime, timedelta
from typing import Any

import orjson
from msgspec import Struct, field

from framework.components.context import BuildContext, builds
from framework.components.http.requester import Requester
from framework.components.http.transport import HttpResponse
from framework.components.job_slots import LEASE_SECONDS, SERVICE, JobSlots, offer_job_slots, prefetch, release
from framework.components.pagination import Paginator
from framework.components.records import DpathExtractor
from framework.components.records.decoders import ResponseDecoder
from framework.components.records.extraction import decode_body, find_records
from framework.components.retriever import Retriever
from framework.components.slices import StreamSlice
from framework.errors import ConfigError, InterpolationError, ReadError, place_suffix
from framework.models import AsyncRetriever, CustomDecoder, JsonDecoder, NoPagination
from framework.models import DpathExtractor as DpathExtractorModel
from framework.temporal.clock import Clock
from framework.values import replace

__all__ = ["LEASE_SECONDS", "MAX_ATTEMPTS", "POLL_SECONDS", "AsyncJobRetriever", "JobBoard", "JobSettings",
           "JobSlots", "offer_job_slots", "prefetch", "release"]

#: Attempts of a partition's job in all (the first and two retries), as airbyte-cdk.
MAX_ATTEMPTS = 3
#: Seconds between two polls of the running jobs (airbyte-cdk's wait); FRAMEWORK_ASYNC_POLL_SECONDS changes it.
POLL_SECONDS = 5.0
#: The minutes after which a running job times out, when the manifest says nothing (airbyte-cdk's).
DEFAULT_TIMEOUT_MINUTES = 60

RUNNING, COMPLETED, FAILED, TIMEOUT, SKIPPED = "running", "completed", "failed", "timeout", "skipped"
_WAITING, _GIVEN_UP = "waiting", "given up"


def poll_seconds() -> float:
    """The wait between polls: ``FRAMEWORK_ASYNC_POLL_SECONDS`` when set, else :data:`POLL_SECONDS`."""
    text = os.environ.get("FRAMEWORK_ASYNC_POLL_SECONDS", "").strip()
    try:
        return max(0.0, float(text)) if text else POLL_SECONDS
    except ValueError:
        raise ConfigError(f"FRAMEWORK_ASYNC_POLL_SECONDS must be a number of seconds, got {text!r}") from None


class JobSettings(Struct, frozen=True):
    timeout: timedelta
    failed_wait: float | None  # failed_retry_wait_time_in_seconds
    poll: float = POLL_SECONDS
    max_attempts: int = MAX_ATTEMPTS


class _JobSlice(StreamSlice, frozen=True):
    """A slice whose templates also read the job's responses and download target (as Airbyte hands them)."""

    def template_variables(self) -> dict[str, Any]:
        found = super().template_variables()
        for name in ("creation_response", "polling_response", "download_target"):
            if name in self.extra_fields:
                found[name] = self.extra_fields[name]
        return found


def _job_slice(base: StreamSlice, **extra: Any) -> _JobSlice:
    return _JobSlice(base.partition, base.cursor_slice, {**base.extra_fields, **extra})


def response_context(response: HttpResponse) -> dict[str, Any]:
    """A job response as templates read it: its JSON object, with ``headers`` and ``request`` where it has none."""
    body = response.json()
    found = dict(body) if isinstance(body, Mapping) else {}
    found.setdefault("headers", dict(response.headers))
    found.setdefault("request", {"method": response.request.method, "url": response.request.url})
    return found


class Job(Struct, eq=False):
    """One partition's job: its state on the board, attempts, slot, and the responses templates read."""

    slice: StreamSlice
    state: str = _WAITING  # _WAITING (no job yet), RUNNING, COMPLETED, FAILED, TIMEOUT, SKIPPED, _GIVEN_UP
    attempts: int = 0
    slot: str | None = None
    started: datetime | None = None
    creation: dict[str, Any] | None = None
    polling: dict[str, Any] | None = None
    creation_failed: bool = False
    retry_at: datetime | None = None
    error: ReadError | None = None
    history: list[str] = field(default_factory=list)


class Requesters(Struct, frozen=True):
    creation: Requester
    polling: Requester
    download_target: Requester | None
    abort: Requester | None
    delete: Requester | None
    statuses: Mapping[str, str]
    status_path: tuple[str, ...]
    target_path: tuple[str, ...] | None
    place: str | None
    mapping_place: str | None


class JobBoard:
    """The jobs of one retriever in this process (see the module docstring). Thread-safe."""

    def __init__(self, requesters: Requesters, settings: JobSettings, slots: Callable[[tuple], Any], clock: Clock,
                 sleep: Callable[[float], None], parameters: Mapping[str, Any]):
        self.requesters = requesters
        self.settings = settings
        self.slots = slots
        self.clock = clock
        self.sleep = sleep
        self.parameters = parameters
        self.config: Mapping[str, Any] = {}
        self._jobs: dict[bytes, Job] = {}
        self._lock = threading.RLock()
        self._last_poll: datetime | None = None

    # -- the caller's side
    def submit(self, slices: Iterable[StreamSlice], config: Mapping[str, Any]) -> None:
        """Jobs for ``slices`` (in this order), created as slots allow when the board moves on."""
        with self._lock:
            self.config = config
            for one in slices:
                self._jobs.setdefault(_key(one), Job(one))

    def wait(self, stream_slice: StreamSlice, config: Mapping[str, Any]) -> Job:
        """The job of ``stream_slice`` once completed or skipped (its slot given back); raises when given up."""
        self.submit((stream_slice,), config)
        key = _key(stream_slice)
        while True:
            with self._lock:
                self._advance()
                job = self._jobs[key]
                if job.state in (COMPLETED, SKIPPED):
                    return job
                if job.state == _GIVEN_UP:
                    del self._jobs[key]
                    assert job.error is not None
                    raise job.error
                wait = self._until_next_poll()
            self.sleep(wait)

    def tick(self) -> None:
        """Move the board on when a poll is due (called between download pages); renews the leases."""
        with self._lock:
            if self._until_next_poll() <= 0:
                self._advance()

    def done(self, stream_slice: StreamSlice) -> None:
        """The slice's records were read: delete its job on the API's side."""
        with self._lock:
            job = self._jobs.pop(_key(stream_slice), None)
        if job is not None and job.state == COMPLETED and self.requesters.delete is not None:
            self._send(self.requesters.delete, job, "delete")

    def release(self, slices: Iterable[StreamSlice]) -> None:
        """Forget the jobs of ``slices`` not read (a task that stops early): abort those running, free their slots."""
        with self._lock:
            for one in slices:
                job = self._jobs.pop(_key(one), None)
                if job is None:
                    continue
                if job.state == RUNNING:
                    self._abort(job)
                self._free(job)

    # -- moving the board on (under the lock)
    def _until_next_poll(self) -> float:
        if self._last_poll is None:
            return 0.0
        passed = (self.clock.now() - self._last_poll).total_seconds()
        return max(0.0, self.settings.poll - passed)

    def _advance(self) -> None:
        now = self.clock.now()
        for job in list(self._jobs.values()):  # retries first, then new jobs in submission order
            if job.state in (FAILED, TIMEOUT):
                self._retry(job, now)
        for job in list(self._jobs.values()):
            if job.state == _WAITING and job.attempts == 0:
                if not self._take_slot(job):
                    break
                self._create(job)
        if self._until_next_poll() <= 0:
            self._poll()
            self._last_poll = self.clock.now()
            held = tuple(job.slot for job in self._jobs.values() if job.slot is not None)
            if held:
                self.slots(("renew", held))

    def _take_slot(self, job: Job) -> bool:
        if job.slot is not None:
            return True
        holder = f"job-{uuid.uuid4().hex}"
        if self.slots(("acquire", holder)):
            job.slot = holder
            return True
        return False

    def _free(self, job: Job) -> None:
        if job.slot is not None:
            holder, job.slot = job.slot, None
            self.slots(("release", holder))

    def _create(self, job: Job) -> None:
        job.attempts += 1
        job.polling = None
        job.retry_at = None
        try:
            response = self._request(self.requesters.creation, _job_slice(job.slice), "creation")
            job.creation = response_context(response)
        except (ReadError, InterpolationError, ValueError) as exc:
            error = exc if isinstance(exc, ReadError) else ReadError(str(exc), place=self.requesters.place)
            job.history.append(f"could not be created: {error}")
            if error.failure_type == "config_error":
                self._give_up(job, error)
                return
            job.state, job.creation_failed, job.error = FAILED, True, error
            return
        job.state, job.creation_failed, job.started = RUNNING, False, self.clock.now()

    def _poll(self) -> None:
        now = self.clock.now()
        for job in list(self._jobs.values()):
            if job.state != RUNNING:
                continue
            if job.started is not None and now - job.started > self.settings.timeout:
                job.history.append(f"timed out after {self.settings.timeout}")
                self._abort(job)
                job.state = TIMEOUT
                continue
            try:
                response = self._request(self.requesters.polling,
                                         _job_slice(job.slice, creation_response=job.creation), "polling")
                found = find_records(decode_body(response), self.requesters.status_path)
            except (ReadError, InterpolationError, ValueError) as exc:
                self._give_up(job, exc if isinstance(exc, ReadError) else ReadError(str(exc)))
                continue
            word = str(found[0]) if found else "None"
            status = self.requesters.statuses.get(word)
            if status is None:
                known = ", ".join(sorted(self.requesters.statuses)) or "none"
                self._give_up(job, ReadError(
                    f"the API answered the job status `{word}`, which `status_mapping` does not list (it lists: "
                    f"{known}); add it under running, completed, failed, timeout or skipped"
                    f"{place_suffix(self.requesters.mapping_place)}", failure_type="config_error"))
                continue
            if status == COMPLETED:
                job.polling = response_context(response)
                job.state = COMPLETED
                self._free(job)
            elif status == SKIPPED:
                job.state = SKIPPED
                self._free(job)
            elif status == FAILED:
                job.history.append("failed")
                job.state = FAILED
            elif status == TIMEOUT:
                job.history.append("timed out on the API's side")
                self._abort(job)
                job.state = TIMEOUT

    def _retry(self, job: Job, now: datetime) -> None:
        if job.attempts >= self.settings.max_attempts:
            why = "; ".join(job.history) or job.state
            self._give_up(job, ReadError(
                f"the asynchronous job of partition {dict(job.slice.partition)}"
                f"{' window ' + str(dict(job.slice.cursor_slice)) if job.slice.cursor_slice else ''} did not "
                f"complete in {job.attempts} attempts ({why})", place=self.requesters.place,
                failure_type="system_error"))
            return
        wait = self.settings.failed_wait
        if wait and job.state == FAILED and not job.creation_failed:
            if job.retry_at is None:
                job.retry_at = now + timedelta(seconds=wait)
            if now < job.retry_at:
                return
        self._create(job)

    def _give_up(self, job: Job, error: ReadError) -> None:
        job.state, job.error = _GIVEN_UP, error
        self._free(job)

    def _abort(self, job: Job) -> None:
        if self.requesters.abort is not None:
            try:
                self._send(self.requesters.abort, job, "abort")
            except ReadError:  # a job that cannot be aborted times out on the API's side anyway
                pass

    def _send(self, requester: Requester, job: Job, what: str) -> None:
        response = self._request(requester, _job_slice(job.slice, creation_response=job.creation), what)
        response.close()

    def _request(self, requester: Requester, job_slice: StreamSlice, what: str) -> HttpResponse:
        variables = {"config": self.config, "parameters": self.parameters, "stream_state": {},
                     **job_slice.template_variables()}
        response = requester.send(requester.parts(variables))
        if response is None:
            raise ReadError(f"the {what} request's response was ignored by its error handler, but the job needs "
                            "it; make the error handler fail or retry instead", place=requester.place)
        return response

    def targets(self, job: Job) -> list[str]:
        """The download targets of a completed job (one empty target without a `download_target_extractor`)."""
        path = self.requesters.target_path
        if path is None:
            return [""]
        requester = self.requesters.download_target
        if requester is not None:
            response = self._request(requester, _JobSlice(extra_fields={"polling_response": job.polling}),
                                     "download target")
            body = decode_body(response)
        else:
            body = {k: v for k, v in (job.polling or {}).items() if k not in ("headers", "request")}
        return [str(target) for target in find_records(body, path)]


def _key(one: StreamSlice) -> bytes:
    return orjson.dumps([one.partition, one.cursor_slice], option=orjson.OPT_SORT_KEYS, default=str)


class AsyncJobRetriever(Struct, frozen=True):
    """The runtime of an AsyncRetriever: :meth:`read` answers a slice's downloaded records, page by page.

    ``selector`` is the record selector (with the download extractor), which the
    stream may replace (transformations, schema) as for a SimpleRetriever.
    """

    board: JobBoard
    download: Retriever
    selector: Any
    parameters: Mapping[str, Any]
    query_properties: None = None  # none here (what the engine asks a SimpleRetriever for)

    def read(self, stream_slice: StreamSlice, config: Mapping[str, Any], *, slice_options: Any = None,
             stream_state: Mapping[str, Any] | None = None, cursor: Any = None) -> Iterator[list[dict]]:
        board = self.board
        job = board.wait(stream_slice, config)
        if job.state == SKIPPED:
            board.done(stream_slice)
            return
        download = self.download if self.download.selector is self.selector \
            else replace(self.download, selector=self.selector)
        for target in board.targets(job):
            target_slice = _job_slice(stream_slice, download_target=target, creation_response=job.creation,
                                      polling_response=job.polling)
            for page in download.read(target_slice, config, stream_state=stream_state):
                yield page
                board.tick()  # the other jobs are polled on while this one downloads
        board.done(stream_slice)

    def submit(self, slices: Iterable[StreamSlice], config: Mapping[str, Any]) -> None:
        self.board.submit(slices, config)

    def release(self, slices: Iterable[StreamSlice]) -> None:
        self.board.release(slices)


def _path_of(extractor: Any, ctx: BuildContext, path: tuple, name: str) -> tuple[str, ...]:
    if not isinstance(extractor, DpathExtractorModel):
        raise ConfigError(f"the AsyncRetriever's `{name}` must be a DpathExtractor here (a custom extractor is not "
                          f"supported for job statuses and targets){place_suffix(ctx.place(path + (name,)))}")
    built: DpathExtractor = ctx.build(extractor, path + (name,))
    return built.field_path


@builds("AsyncRetriever")
def build_async_retriever(model: AsyncRetriever, ctx: BuildContext, path: tuple) -> AsyncJobRetriever:
    def requester(name: str) -> Requester | None:
        found = getattr(model, name)
        return None if found is None else ctx.build(found, path + (name,))

    for name in ("decoder",):
        decoder_model = model.decoder
        if decoder_model is not None and not isinstance(decoder_model, JsonDecoder):
            raise ConfigError(f"the AsyncRetriever's `{name}` must be a JsonDecoder: job responses are read as JSON, "
                              f"as in Airbyte{place_suffix(ctx.place(path + (name,)))}")
    creation, polling = requester("creation_requester"), requester("polling_requester")
    assert creation is not None and polling is not None
    requesters = Requesters(
        creation=creation, polling=polling, download_target=requester("download_target_requester"),
        abort=requester("abort_requester"), delete=requester("delete_requester"),
        statuses=model.status_mapping.statuses(),
        status_path=_path_of(model.status_extractor, ctx, path, "status_extractor"),
        target_path=None if model.download_target_extractor is None
        else _path_of(model.download_target_extractor, ctx, path, "download_target_extractor"),
        place=ctx.place(path), mapping_place=ctx.place(path + ("status_mapping",)))
    minutes = DEFAULT_TIMEOUT_MINUTES if model.polling_job_timeout is None \
        else int(ctx.render(model.polling_job_timeout, model.parameters, "integer"))
    wait = None if model.failed_retry_wait_time_in_seconds is None \
        else float(ctx.render(model.failed_retry_wait_time_in_seconds, model.parameters, "integer"))
    settings = JobSettings(timedelta(minutes=minutes), wait, poll_seconds())
    slots = ctx.service(SERVICE, JobSlots(1))

    # the download: a page loop of its own (download requester, paginator, decoder and extractor), whose records
    # the AsyncRetriever's record selector filters and transforms
    download_requester = requester("download_requester")
    assert download_requester is not None
    selector = ctx.build(model.record_selector, path + ("record_selector",))
    extractor = ctx.build(model.download_extractor, path + ("download_extractor",)) \
        if model.download_extractor is not None else DpathExtractor((), place=ctx.place(path), mask=ctx.mask)
    decoder: ResponseDecoder | None = None
    if model.download_decoder is not None and not isinstance(model.download_decoder, (JsonDecoder, CustomDecoder)):
        decoder = ctx.build(model.download_decoder, path + ("download_decoder",))
        if isinstance(extractor, DpathExtractor):
            extractor = extractor.with_decoder(decoder)
        if decoder.streamed:
            download_requester = replace(download_requester, stream=True)
    elif isinstance(model.download_decoder, CustomDecoder):
        raise ConfigError("a CustomDecoder as `download_decoder` is not supported yet; use one of the decoders of "
                          f"the language{place_suffix(ctx.place(path + ('download_decoder',)))}")
    selector = replace(selector, extractor=extractor)
    paginator: Paginator = ctx.build(model.download_paginator or NoPagination.model_construct(),
                                     path + ("download_paginator",))
    download = Retriever(requester=download_requester, selector=selector, paginator=paginator,
                         parameters=model.parameters, decoder=decoder)
    board = JobBoard(requesters, settings, slots, ctx.clock, ctx.sleep, model.parameters)
    return AsyncJobRetriever(board=board, download=download, selector=selector, parameters=model.parameters)
