"""Protocol mode's checkpoints go by time and reach the consumer at once, so a killed sync loses little.

A slow API (every request takes a while) and few records: the consumer must
still receive a STATE within a couple of seconds, not only when a stdout
buffer fills or the stream ends, and every STATE must come after the RECORD
lines of the data it covers.
"""

from __future__ import annotations

import io
import time

import orjson
from fakes.api_server import dated

from framework.engine.connector import open_connector
from framework.engine.selection import select_streams
from framework.protocol.read import read

MANIFEST = """\
version: 6.7.0
type: DeclarativeSource
streams:
  - type: DeclarativeStream
    name: orders
    primary_key: [id]
    schema_loader: {type: InlineSchemaLoader, schema: {type: object, properties: {}}}
    incremental_sync:
      type: DatetimeBasedCursor
      cursor_field: updated_at
      datetime_format: "%Y-%m-%dT%H:%M:%SZ"
      start_datetime: {type: MinMaxDatetime, datetime: "2024-01-01T00:00:00Z", datetime_format: "%Y-%m-%dT%H:%M:%SZ"}
      end_datetime: {type: MinMaxDatetime, datetime: "2024-01-28T23:59:59Z", datetime_format: "%Y-%m-%dT%H:%M:%SZ"}
      step: P3D
      cursor_granularity: PT1S
      start_time_option: {type: RequestOption, inject_into: request_parameter, field_name: since}
      end_time_option: {type: RequestOption, inject_into: request_parameter, field_name: until}
    retriever:
      type: SimpleRetriever
      requester: {type: HttpRequester, url_base: "{{ config.base_url }}", path: /orders}
      record_selector: {type: RecordSelector, extractor: {type: DpathExtractor, field_path: [data]}}
check: {type: CheckStream, stream_names: [orders]}
"""

ORDERS = [{"id": day, "updated_at": f"2024-01-{day:02d}T08:00:00Z"} for day in range(1, 29, 3)]
PAGE_SECONDS = 0.25  # each request (one window, one page) takes this long
CHECKPOINT_SECONDS = 0.5


class TimedSink(io.RawIOBase):
    """What the consumer of stdout receives, and when."""

    def __init__(self) -> None:
        self.chunks: list[tuple[float, bytes]] = []

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:  # type: ignore[override]
        self.chunks.append((time.monotonic(), bytes(data)))
        return len(data)

    def lines(self) -> list[tuple[float, dict]]:
        out = []
        for at, chunk in self.chunks:
            out += [(at, orjson.loads(line)) for line in chunk.splitlines() if line]
        return out


def test_a_slow_stream_checkpoints_by_time_and_each_state_reaches_the_consumer_after_its_records(
        tmp_path, fake_api):
    def slow(request):
        time.sleep(PAGE_SECONDS)
        return {"data": dated(ORDERS, request, "updated_at", "since", "until")}

    fake_api.route("GET", "/orders", slow)
    path = tmp_path / "manifest.yaml"
    path.write_text(MANIFEST)
    connector = open_connector(str(path), {"base_url": fake_api.url})
    sink = TimedSink()
    out = io.BufferedWriter(sink)  # as stdout to a pipe: block-buffered
    started = time.monotonic()
    report = read(connector, select_streams(connector.streams, None, None), {}, out, io.StringIO(),
                  checkpoint_seconds=CHECKPOINT_SECONDS, concurrency=1)
    out.flush()
    ended = time.monotonic()
    assert not report.failed
    received = sink.lines()
    states = [(at, m) for at, m in received if m["type"] == "STATE"]
    assert len(states) >= 3, "several checkpoints in a 10-window stream that takes 2.5 s or more"
    # the first STATE reaches the consumer soon after the first window is read, not with the end of the stream
    # (a block-buffered stdout held it until then)
    assert states[0][0] - started < ended - started - 3 * PAGE_SECONDS
    # while the stream is read, the consumer never waits much longer than checkpoint_seconds for the next STATE
    gaps = [later[0] - earlier[0] for earlier, later in zip(states, states[1:])]
    assert max(gaps) < CHECKPOINT_SECONDS + 2 * PAGE_SECONDS + 1.0, gaps
    # every STATE comes after the records it covers: what a kill right after it would keep is complete
    seen: list[dict] = []
    for _, message in received:
        if message["type"] == "RECORD":
            seen.append(message["record"]["data"])
        elif message["type"] == "STATE":
            value = message["state"]["stream"]["stream_state"]["updated_at"]
            assert [o for o in ORDERS if o["updated_at"] <= value] == [o for o in seen if o["updated_at"] <= value]
            assert message["state"]["sourceStats"]["recordCount"] == len(seen)
    assert seen == ORDERS
