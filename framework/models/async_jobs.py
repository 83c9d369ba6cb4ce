"""Asynchronous jobs: AsyncRetriever and AsyncJobStatusMap.

A report API that cannot answer at once is read in three steps per partition:
a request creates a job on the API's side, polling requests ask for its status
until it is done, and download requests fetch its records. See the manifest
guide ("Asynchronous jobs") for how the engine runs them.
"""

from typing import Annotated, Literal

from pydantic import Field, model_validator

from framework.models.base import BASE, Component, spec
from framework.models.custom import CustomDecoder, CustomRecordExtractor, CustomRequester
from framework.models.decoders import Decoder
from framework.models.files import ResponseToFileExtractor
from framework.models.pagination import Paginator
from framework.models.partitions import PartitionRouter
from framework.models.records import DpathExtractor, RecordSelector
from framework.models.requests import HttpRequester

JobRequester = Annotated[HttpRequester | CustomRequester, Field(discriminator="type")]
AnyDecoder = Decoder | CustomDecoder


class AsyncJobStatusMap(Component):
    """Which of the API's status words mean running, completed, failed, timed out or skipped."""

    type: Literal["AsyncJobStatusMap"] = spec("Component type.", "AsyncJobStatusMap", "AsyncJobStatusMap")
    running: tuple[str, ...] = spec("The API's words for a job still running.", ["pending", "running"])
    completed: tuple[str, ...] = spec("The API's words for a job whose records can be downloaded.", ["ready"])
    failed: tuple[str, ...] = spec("The API's words for a failed job (it is created again, at most 3 attempts "
                                   "in all).", ["failed"])
    timeout: tuple[str, ...] = spec("The API's words for a job that timed out on its side (retried as a failed "
                                    "one).", ["timeout"])
    skipped: tuple[str, ...] | None = spec(
        "The API's words for a job with nothing to return: no records, no retry.", ["cancelled"], None)

    @model_validator(mode="after")
    def _each_word_once(self) -> "AsyncJobStatusMap":
        seen: dict[str, str] = {}
        for status in ("running", "completed", "failed", "timeout", "skipped"):
            for word in getattr(self, status) or ():
                if word in seen:
                    raise ValueError(f"the API status `{word}` is listed under both `{seen[word]}` and `{status}`; "
                                     "list each status once")
                seen[word] = status
        return self

    def statuses(self) -> dict[str, str]:
        """The API's word -> ``running``, ``completed``, ``failed``, ``timeout`` or ``skipped``."""
        return {word: status for status in ("running", "completed", "failed", "timeout", "skipped")
                for word in getattr(self, status) or ()}


class AsyncRetriever(Component):
    """Reads a stream through jobs on the API's side: one job per partition, created, polled, downloaded."""

    type: Literal["AsyncRetriever"] = spec("Component type.", "AsyncRetriever", "AsyncRetriever")
    record_selector: RecordSelector = spec(
        "The filter, transformations and normalization of the downloaded records (its extractor is not used: "
        "`download_extractor` takes the records out of a download).",
        {"type": "RecordSelector", "extractor": {"type": "DpathExtractor", "field_path": []}},
    )
    status_mapping: AsyncJobStatusMap = spec(
        "Which of the API's status words mean what.",
        {"type": "AsyncJobStatusMap", "running": ["pending"], "completed": ["ready"], "failed": ["failed"],
         "timeout": ["timeout"]},
        default_type="AsyncJobStatusMap",
    )
    status_extractor: Annotated[DpathExtractor | CustomRecordExtractor, Field(discriminator="type")] = spec(
        "Where the job's status is in a polling response (the first value found).",
        {"type": "DpathExtractor", "field_path": ["status"]}, default_type="DpathExtractor")
    download_target_extractor: Annotated[DpathExtractor | CustomRecordExtractor, Field(discriminator="type")] | None \
        = spec("Where the download targets (URLs, file ids) are in the completed job's polling response (or in the "
               "`download_target_requester`'s response): one download per target, read by templates as "
               "`download_target`. Without it, one download with no target.",
               {"type": "DpathExtractor", "field_path": ["urls"]}, None, default_type="DpathExtractor")
    download_extractor: Annotated[DpathExtractor | CustomRecordExtractor | ResponseToFileExtractor,
                                  Field(discriminator="type")] | None = spec(
        "Where the records are in a download; the whole body when left out.",
        {"type": "DpathExtractor", "field_path": ["data"]}, None, default_type="DpathExtractor")
    creation_requester: JobRequester = spec(
        "The request that creates the job; its response is `creation_response` in the later requests' templates.",
        {"type": "HttpRequester", "url_base": "https://api.example.com", "path": "/reports", "http_method": "POST"},
        default_type="HttpRequester")
    polling_requester: JobRequester = spec(
        "The request that asks for the job's status (templates read `creation_response`).",
        {"type": "HttpRequester", "url_base": "https://api.example.com",
         "path": "/reports/{{ creation_response['id'] }}"}, default_type="HttpRequester")
    polling_job_timeout: int | str | None = spec(
        "Minutes after which a job still running counts as timed out: it is aborted and created again "
        "(60 when left out, as in Airbyte).", 30, None, template=BASE, result="integer")
    failed_retry_wait_time_in_seconds: int | str | None = spec(
        "Seconds to wait before creating again a job the API reported failed (a failed creation and a timed-out "
        "job are retried at once); other jobs go on meanwhile.", 60, None, template=BASE, result="integer")
    download_target_requester: JobRequester | None = spec(
        "A request made once the job is completed, whose response holds the download targets (templates read "
        "`polling_response`); needs `download_target_extractor`.",
        {"type": "HttpRequester", "url_base": "https://api.example.com",
         "path": "/reports/{{ polling_response['id'] }}/files"}, None, default_type="HttpRequester")
    download_requester: JobRequester = spec(
        "The request that downloads the records (templates read `download_target`, `creation_response` and "
        "`polling_response`).",
        {"type": "HttpRequester", "url_base": "", "path": "{{ download_target }}"}, default_type="HttpRequester")
    download_paginator: Paginator | None = spec(
        "How the pages of a download are followed; one request per target when left out.",
        {"type": "NoPagination"}, None, default_type="NoPagination")
    abort_requester: JobRequester | None = spec(
        "The request that stops a job that timed out (templates read `creation_response`).",
        {"type": "HttpRequester", "url_base": "https://api.example.com",
         "path": "/reports/{{ creation_response['id'] }}/cancel", "http_method": "POST"}, None,
        default_type="HttpRequester")
    delete_requester: JobRequester | None = spec(
        "The request that deletes a job once its records are read (templates read `creation_response`).",
        {"type": "HttpRequester", "url_base": "https://api.example.com",
         "path": "/reports/{{ creation_response['id'] }}/delete", "http_method": "POST"}, None,
        default_type="HttpRequester")
    partition_router: PartitionRouter | None = spec(
        "How the stream is split into partitions: one job per partition (and datetime window).",
        {"type": "ListPartitionRouter", "values": ["eu", "us"], "cursor_field": "region"}, None)
    decoder: Annotated[AnyDecoder, Field(discriminator="type")] | None = spec(
        "The format of the creation, polling and download-target responses (JSON when left out; only JSON is "
        "read, as in Airbyte).", {"type": "JsonDecoder"}, None)
    download_decoder: Annotated[AnyDecoder, Field(discriminator="type")] | None = spec(
        "The format of the downloads (JSON when left out): CSV, JSON lines, gzip...",
        {"type": "CsvDecoder"}, None)

    @model_validator(mode="after")
    def _targets_need_extractor(self) -> "AsyncRetriever":
        if self.download_target_requester is not None and self.download_target_extractor is None:
            raise ValueError("a `download_target_requester` needs a `download_target_extractor` (where the targets "
                             "are in its response); add one, e.g. {type: DpathExtractor, field_path: [urls]}")
        return self


__all__ = ["AsyncJobStatusMap", "AsyncRetriever"]
