"""``stream_groups`` end to end: two streams of one group never have requests in flight at the same time,
shown by the fake API's request log (each request's arrival and answer times), in protocol mode with
``--concurrency 4`` and in Spark mode (units read by executor tasks).

``orders`` (four partitions) and ``refunds`` (a substream of ``accounts``: reading it reads
``accounts`` too) are in group ``reports``; every answer takes a while, so overlapping reads would show.
"""

from __future__ import annotations

import io
import json
import time

import orjson
import pytest
from fakes.api_server import RecordedRequest

from framework.cli.run import main

MANIFEST = """\
version: 7.0.0
type: DeclarativeSource
definitions:
  base:
    type: DeclarativeStream
    primary_key: id
    schema_loader: {type: InlineSchemaLoader, schema: {type: object, properties: {id: {type: integer}}}}
    retriever:
      type: SimpleRetriever
      requester: {type: HttpRequester, url_base: "{{ config.base_url }}", path: "/{{ parameters.resource }}"}
      record_selector: {type: RecordSelector, extractor: {type: DpathExtractor, field_path: [data]}}
  accounts: {$ref: "#/definitions/base", name: accounts, $parameters: {resource: accounts}}
  orders:
    $ref: "#/definitions/base"
    name: orders
    $parameters: {resource: orders}
    retriever:
      $ref: "#/definitions/base/retriever"
      partition_router:
        type: ListPartitionRouter
        values: [north, south, east, west]
        cursor_field: region
        request_option: {type: RequestOption, inject_into: request_parameter, field_name: region}
  refunds:
    $ref: "#/definitions/base"
    name: refunds
    $parameters: {resource: refunds}
    retriever:
      $ref: "#/definitions/base/retriever"
      requester:
        $ref: "#/definitions/base/retriever/requester"
        path: "/refunds/{{ stream_partition.account }}"
      partition_router:
        type: SubstreamPartitionRouter
        parent_stream_configs:
          - {type: ParentStreamConfig, stream: {$ref: "#/definitions/accounts"}, parent_key: id,
             partition_field: account}
streams:
  - {$ref: "#/definitions/accounts"}
  - {$ref: "#/definitions/orders"}
  - {$ref: "#/definitions/refunds"}
stream_groups:
  reports:
    streams: [{$ref: "#/definitions/orders"}, {$ref: "#/definitions/refunds"}]
    action: {type: BlockSimultaneousSyncsAction}
check: {type: CheckStream, stream_names: [accounts]}
"""

DELAY = 0.15  # seconds every answer takes


@pytest.fixture
def api(fake_api):
    def slow(body):
        def answer(request: RecordedRequest) -> dict:
            time.sleep(DELAY)
            return body(request)
        return answer

    fake_api.route("GET", "/accounts", slow(lambda r: {"data": [{"id": 1}, {"id": 2}, {"id": 3}]}))
    regions = {"north": 1, "south": 2, "east": 3, "west": 4}
    fake_api.route("GET", "/orders", slow(lambda r: {"data": [{"id": regions[r.param("region")]}]}))
    fake_api.route("GET", "/refunds/{account}",
                   slow(lambda r: {"data": [{"id": 100 + int(r.path_params["account"])}]}))
    return fake_api


@pytest.fixture
def files(tmp_path, api):
    manifest = tmp_path / "manifest.yaml"
    manifest.write_text(MANIFEST)
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"base_url": api.url}))
    return str(manifest), str(config)


def spans(requests: list[RecordedRequest]) -> dict[str, tuple[float, float]]:
    """Per member of the group, from its first request's arrival to its last answer. A request to
    `/accounts` is the `refunds` read (its parent): `accounts` is read by no one else here."""
    member = {"orders": "orders", "refunds": "refunds", "accounts": "refunds"}
    found: dict[str, list[RecordedRequest]] = {}
    for request in requests:
        found.setdefault(member[request.path.split("/")[1]], []).append(request)
    assert all(r.answered_at >= r.received_at > 0 for r in requests)
    return {name: (min(r.received_at for r in rs), max(r.answered_at for r in rs)) for name, rs in found.items()}


def assert_apart(requests: list[RecordedRequest]) -> None:
    found = spans(requests)
    (a_start, a_end), (b_start, b_end) = found["orders"], found["refunds"]
    assert a_end <= b_start or b_end <= a_start, f"the reads of orders and refunds overlap: {found}"


def overlapping(requests: list[RecordedRequest]) -> bool:
    """Whether two of ``requests`` were in flight at the same time."""
    ordered = sorted(requests, key=lambda r: r.received_at)
    return any(b.received_at < a.answered_at for a, b in zip(ordered, ordered[1:], strict=False))


def test_protocol_mode_never_reads_two_members_at_once_with_concurrency(files, api, capsys):
    out = io.BytesIO()
    code = main([files[0], "--config", files[1], "--protocol", "--concurrency", "4",
                 "--streams", "orders,refunds"], out=out)
    assert code == 0, capsys.readouterr().err
    records = [m["record"] for m in map(orjson.loads, out.getvalue().splitlines()) if m["type"] == "RECORD"]
    assert sorted((r["stream"], r["data"]["id"]) for r in records) == \
        [("orders", 1), ("orders", 2), ("orders", 3), ("orders", 4), ("refunds", 101), ("refunds", 102),
         ("refunds", 103)]
    assert_apart(api.requests)
    # the partitions of one member were read side by side: the rule is between streams, not within one
    assert overlapping(api.received("/orders"))


@pytest.mark.spark
def test_spark_mode_never_reads_two_members_at_once(files, api, spark, tmp_path, capsys):
    out = tmp_path / "out"
    code = main([files[0], "--config", files[1], "--output", str(out), "--streams", "orders,refunds",
                 "--no-check"], out=io.BytesIO())  # counts the sync's own requests
    assert code == 0, capsys.readouterr().err
    assert len(api.received("/orders")) == 4 and len(api.received("/accounts")) == 1
    assert len([r for r in api.requests if r.path.startswith("/refunds/")]) == 3
    assert_apart(api.requests)
