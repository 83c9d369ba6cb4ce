"""A slow API that caps and counts its requests in flight, and a manifest of daily windows that reads it."""

from __future__ import annotations

import threading
import time

from fakes.api_server import Reply

WINDOWS = 12

MANIFEST = """\
version: 6.7.0
type: DeclarativeSource
{level}
streams:
  - type: DeclarativeStream
    name: events
    primary_key: id
    schema_loader:
      type: InlineSchemaLoader
      schema: {{type: object, properties: {{id: {{type: integer}}, at: {{type: string}}}}}}
    incremental_sync:
      type: DatetimeBasedCursor
      cursor_field: at
      datetime_format: "%Y-%m-%dT%H:%M:%SZ"
      start_datetime: "2024-01-01T00:00:00Z"
      end_datetime: "2024-01-{end:02d}T23:59:59Z"
      step: P1D
      cursor_granularity: PT1S
      start_time_option: {{type: RequestOption, inject_into: request_parameter, field_name: since}}
    retriever:
      type: SimpleRetriever
      requester:
        type: HttpRequester
        url_base: "{{{{ config.base_url }}}}"
        path: /events
        error_handler:
          type: DefaultErrorHandler
          response_filters:
            - type: HttpResponseFilter
              action: RATE_LIMITED
              http_codes: [429]
      record_selector:
        type: RecordSelector
        extractor: {{type: DpathExtractor, field_path: [data]}}
check:
  type: CheckStream
  stream_names: [events]
"""


class Capped:
    """An endpoint that answers after ``latency`` s, refuses (429, Retry-After: 1) past ``cap`` requests in
    flight (0: never), and counts the most in flight and its refusals."""

    def __init__(self, latency: float, cap: int = 0):
        self.latency, self.cap = latency, cap
        self.now = self.most = self.refused = 0
        self.lock = threading.Lock()

    def __call__(self, request):
        with self.lock:
            if self.cap and self.now >= self.cap:
                self.refused += 1
                return Reply(429, {"error": "too many"}, {"Retry-After": "1"})
            self.now += 1
            self.most = max(self.most, self.now)
        try:
            time.sleep(self.latency)
            day = int(request.param("since")[8:10])
            return {"data": [{"id": day * 10 + i, "at": f"2024-01-{day:02d}T0{i}:00:00Z"} for i in range(3)]}
        finally:
            with self.lock:
                self.now -= 1


def every_id(windows: int) -> list[int]:
    """The ids of every record the API holds for ``windows`` daily windows."""
    return sorted(day * 10 + i for day in range(1, windows + 1) for i in range(3))
