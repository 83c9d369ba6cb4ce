"""Parity with Airbyte for response formats (decoders): one manifest, a stream per format.

``manifests/decoders.yaml`` reads JSON lines (incremental: a first sync and a second
from each runner's own state), CSV with a delimiter and values set to null, gzip'd
JSON lines sent without ``Content-Encoding``, XML paged by a cursor read from the XML
behind a session token whose login answers in XML, lines of text, CSV files in a zip,
the items of a JSON array (JsonItemsDecoder) and JSON in gzip paged by page number.
Both runners must emit the same records in the same order, the same state and make
the same requests. Skipped without airbyte-cdk (see tests/parity/README.md).
"""

from __future__ import annotations

import gzip
import io
import zipfile
from pathlib import Path
from typing import Any

import orjson
from fakes.api_server import FakeApi, RecordedRequest, Reply, dated
from parity.test_airbyte_parity import api as api  # noqa: F401  (the fixture)
from parity.test_airbyte_parity import (  # noqa: F401  (pytestmark: the parity mark and the skip)
    assert_same_records,
    assert_same_requests,
    catalog_for,
    pytestmark,
    run_both,
)

FIRST_EVENTS = [
    {"id": 1, "kind": "open", "updated_at": "2024-01-01T08:00:00Z", "tags": ["a", "b"]},
    {"id": 2, "kind": "click", "updated_at": "2024-01-02T09:30:00Z", "meta": {"x": 1.5, "y": None}},
    {"id": 3, "kind": "clôture", "updated_at": "2024-01-03T10:00:00Z"},
]
SECOND_EVENTS = FIRST_EVENTS + [
    {"id": 4, "kind": "open", "updated_at": "2024-01-04T11:00:00Z"},
    {"id": 5, "kind": "close", "updated_at": "2024-01-04T12:00:00Z"},
]

CSV = "id;name;note;score\r\n1;Ann;;3.5\r\n2;Bob;N/A;4\r\n3;\"Cé; quoted\";\"two\nlines\";\r\n4;Dee\r\n"
LINES = b"alpha\nbeta\r\n\ngamma \xc3\xa9\n"
REPORT = {"report": {"rows": [{"k": 1, "v": "a"}, {"k": 2, "v": 2.5}, {"k": 3, "v": None}], "total": 3}}
BUNDLES = [{"id": n, "size": n * 10} for n in range(1, 6)]
PRODUCTS = {
    None: '<?xml version="1.0" encoding="UTF-8"?><catalog>'
          '<product sku="a1"><name>Anvil</name><price currency="EUR">10.5</price></product>'
          '<product sku="a2"><name>Bolt</name><tags><tag>x</tag><tag>y</tag></tags></product>'
          '<next>p2</next></catalog>',
    "p2": '<catalog><product sku="a3"><name>Café</name></product><next/></catalog>',
}
TOKEN = "tok-42"


class Events:
    """JSON lines of the events updated within ``[since, until]``, with a blank line, a bad line and ``{}``."""

    def __init__(self) -> None:
        self.events = FIRST_EVENTS

    def __call__(self, request: RecordedRequest) -> Reply:
        kept = dated(self.events, request, "updated_at", "since", "until")
        lines = [orjson.dumps(event) for event in kept] + [b"", b"{not json", b"{}"]
        return Reply(200, b"\n".join(lines) + b"\n", {"Content-Type": "application/x-ndjson"})


def _zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("2024-01.csv", "day,visits\n2024-01-01,5\n2024-01-02,7\n")
        archive.writestr("2024-02.csv", "day,visits\n2024-02-01,9\n")
    return buffer.getvalue()


def _bundles(request: RecordedRequest) -> Reply:
    page = int(request.param("page", "1") or 1)
    size = int(request.param("per_page", "2") or 2)
    body = orjson.dumps({"data": BUNDLES[(page - 1) * size: page * size], "page": page})
    return Reply(200, gzip.compress(body), {"Content-Type": "application/gzip"})


def _catalog(request: RecordedRequest) -> Reply:
    if request.headers.get("Authorization") != f"Bearer {TOKEN}":
        return Reply(401, "<error>login first</error>", {"Content-Type": "application/xml"})
    return Reply(200, PRODUCTS[request.param("after")], {"Content-Type": "application/xml"})


def _serve(api: FakeApi, events: Events) -> None:
    api.route("GET", "/events.jsonl", events)
    api.route("GET", "/rows.csv", Reply(200, CSV.encode(), {"Content-Type": "text/csv"}))
    export = b"".join(orjson.dumps(e) + b"\n" for e in FIRST_EVENTS)
    api.route("GET", "/export.jsonl.gz", Reply(200, gzip.compress(export), {"Content-Type": "application/octet-stream"}))
    api.route("POST", "/login", Reply(200, f"<session><token>{TOKEN}</token><ttl>60</ttl></session>",
                                      {"Content-Type": "application/xml"}))
    api.route("GET", "/catalog.xml", _catalog)
    api.route("GET", "/lines.txt", Reply(200, LINES, {"Content-Type": "text/plain"}))
    api.route("GET", "/reports.zip", Reply(200, _zip(), {"Content-Type": "application/zip"}))
    api.route("GET", "/report.json", REPORT)
    api.route("GET", "/bundles.json.gz", _bundles)


STREAMS = ("events", "rows", "packed", "catalog", "lines", "zipped", "items", "bundles")


def _config(api: FakeApi) -> dict[str, Any]:
    return {"base_url": api.url, "start_date": "2024-01-01T00:00:00Z", "end_date": "2024-01-05T00:00:00Z"}


def test_every_format_reads_the_same_records_over_two_syncs(api: FakeApi, tmp_path: Path) -> None:
    events = Events()
    _serve(api, events)
    catalog = catalog_for({name: "incremental" if name == "events" else "full_refresh" for name in STREAMS})

    first = run_both(api, tmp_path, "decoders.yaml", _config(api), catalog)
    for stream in STREAMS:
        assert_same_records(first, stream)
    assert_same_requests(first)
    assert [r["id"] for r in first.cdk.records["events"]] == [1, 2, 3]
    assert first.cdk.records["rows"][1] == {"id": "2", "name": "Bob", "score": "4"}  # null `note` dropped by CDK
    assert [r["@sku"] for r in first.cdk.records["catalog"]] == ["a1", "a2", "a3"]
    assert len(first.cdk.records["bundles"]) == len(BUNDLES)
    assert first.ours.stream_state("events") == first.cdk.stream_state("events") == {
        "updated_at": "2024-01-03T10:00:00Z"}

    events.events = SECOND_EVENTS
    second = run_both(api, tmp_path, "decoders.yaml", _config(api), catalog,
                      ours_state=first.ours.state_input(), cdk_state=first.cdk.state_input())
    assert_same_records(second, "events")
    assert {r["id"] for r in second.cdk.records["events"]} >= {4, 5}
    assert second.ours.stream_state("events") == second.cdk.stream_state("events") == {
        "updated_at": "2024-01-04T12:00:00Z"}
    assert_same_requests(second)
