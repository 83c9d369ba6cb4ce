"""The API and the stream the cluster tests sync: six daily windows of three events, two pages each.

:func:`serve_events` routes ``/events`` on a :class:`FakeApi`; one request
(``Events.hang``: a window start and a page) can be made to wait until
``release`` is set, once, so that a test can act while a task is in the middle
of a window (a page of it already written).
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow.parquet as pq
from fakes.api_server import FakeApi, RecordedRequest, dated, paged

MANIFEST = """\
version: 6.7.0
type: DeclarativeSource
streams:
  - type: DeclarativeStream
    name: events
    primary_key: id
    schema_loader:
      type: InlineSchemaLoader
      schema:
        type: object
        properties:
          id: {type: integer}
          name: {type: string}
          updated_at: {type: string, format: date-time, airbyte_type: timestamp_with_timezone}
    incremental_sync:
      type: DatetimeBasedCursor
      cursor_field: updated_at
      datetime_format: "%Y-%m-%dT%H:%M:%SZ"
      start_datetime: "{{ config.start }}"
      end_datetime: "{{ config.end }}"
      step: P1D
      cursor_granularity: PT1S
      start_time_option: {type: RequestOption, inject_into: request_parameter, field_name: since}
      end_time_option: {type: RequestOption, inject_into: request_parameter, field_name: until}
    retriever:
      type: SimpleRetriever
      requester:
        type: HttpRequester
        url_base: "{{ config.base_url }}"
        path: /events
        error_handler:
          type: DefaultErrorHandler
          max_retries: 1
          backoff_strategies: [{type: ConstantBackoffStrategy, backoff_time_in_seconds: 0}]
      record_selector:
        type: RecordSelector
        extractor: {type: DpathExtractor, field_path: [data]}
      paginator:
        type: DefaultPaginator
        pagination_strategy: {type: PageIncrement, start_from_page: 1, page_size: 2}
        page_token_option: {type: RequestOption, inject_into: request_parameter, field_name: page}
        page_size_option: {type: RequestOption, inject_into: request_parameter, field_name: per_page}
check: {type: CheckStream, stream_names: [events]}
"""

EVENTS = [{"id": day * 10 + n, "name": f"event {day}.{n}", "updated_at": f"2024-03-0{day}T0{n}:00:00Z"}
          for day in range(1, 7) for n in range(1, 4)]  # six daily windows of three events: two pages each
IDS = sorted(e["id"] for e in EVENTS)


@dataclass
class Events:
    api: FakeApi
    hang: tuple[str, str] | None = None  # (since, page) of the one request that waits for `release`
    hanging: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)

    def config(self) -> dict:
        return {"base_url": self.api.url, "start": "2024-03-01T00:00:00Z", "end": "2024-03-06T23:59:59Z"}


def serve_events(api: FakeApi) -> Events:
    served = Events(api)

    def handler(request: RecordedRequest) -> dict:
        if served.hang is not None and (request.param("since"), request.param("page")) == served.hang:
            served.hang = None  # once: the retried task goes through
            served.hanging.set()
            served.release.wait(240)
        return paged(dated(EVENTS, request, "updated_at", "since", "until"), request, default_page_size=2)

    api.route("GET", "/events", handler)
    return served


def rows(out: Path) -> list[tuple]:
    found = [(r["id"], r["name"], r["updated_at"]) for path in sorted((out / "events").glob("*.parquet"))
             for r in pq.read_table(path, columns=["id", "name", "updated_at"]).to_pylist()]
    return sorted(found, key=lambda r: (r[0], str(r[2])))


def state(out: Path) -> dict:
    return json.loads((out / "_airbyte_state" / "state.json").read_text())["streams"]["events"]["state"]


def temps(out: Path) -> list[Path]:
    return sorted(p for p in out.rglob(".*.tmp"))
