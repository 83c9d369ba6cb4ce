"""Response formats end to end: manifests with a retriever `decoder`, read over HTTP from the fake API."""

from __future__ import annotations

import gzip
import io

import orjson
import pytest
from engine.test_reading import option, paginator, requester, selector, source, stream
from engine.test_reading import run as run  # noqa: F401  (the fixture)
from fakes.api_server import Reply

from framework.errors import FrameworkError

EVENTS = [{"id": i, "kind": "click" if i % 2 else "view", "at": f"2024-01-{1 + i % 28:02d}"} for i in range(1, 2001)]


def jsonl(records: list[dict]) -> bytes:
    return b"".join(orjson.dumps(r) + b"\n" for r in records)


def with_decoder(decoder: dict, path: str, *field_path: str, **more) -> dict:
    built = stream(path.strip("/").split(".")[0], requester_=requester(path), selector_=selector(*field_path), **more)
    built["retriever"]["decoder"] = decoder
    return built


def test_json_lines_csv_and_gzip_with_or_without_content_encoding(run, fake_api):
    fake_api.route("GET", "/events.jsonl", Reply(200, jsonl(EVENTS), {"Content-Type": "application/x-ndjson"}))
    fake_api.route("GET", "/encoded.jsonl", Reply(200, gzip.compress(jsonl(EVENTS)),
                                                  {"Content-Type": "application/x-ndjson", "Content-Encoding": "gzip"}))
    fake_api.route("GET", "/packed.gz", Reply(200, gzip.compress(jsonl(EVENTS[:3])),
                                              {"Content-Type": "application/gzip"}))
    fake_api.route("GET", "/rows.csv", Reply(200, b"id\tname\n1\tAnn\n2\t-\n", {"Content-Type": "text/csv"}))
    manifest = source(
        with_decoder({"type": "JsonlDecoder"}, "/events.jsonl"),
        with_decoder({"type": "JsonlDecoder"}, "/encoded.jsonl"),
        with_decoder({"type": "GzipDecoder", "decoder": {"type": "JsonlDecoder"}}, "/packed.gz"),
        with_decoder({"type": "CsvDecoder", "delimiter": "\\t", "set_values_to_none": ["-"]}, "/rows.csv"),
    )
    result = run(manifest)
    assert not result.failed, result.output
    assert result.records("events") == EVENTS
    assert result.records("encoded") == EVENTS
    assert result.records("packed") == EVENTS[:3]
    assert result.records("rows") == [{"id": "1", "name": "Ann"}, {"id": "2", "name": None}]


def test_xml_paged_by_a_cursor_from_the_xml_behind_an_xml_login(run, fake_api):
    fake_api.route("POST", "/login", Reply(200, "<auth><token>t-1</token></auth>", {"Content-Type": "text/xml"}))

    def products(request):
        assert request.headers.get("Authorization") == "Bearer t-1"
        if request.param("after") == "2":
            return Reply(200, '<list><p id="3"><n>C</n></p><next/></list>', {"Content-Type": "text/xml"})
        return Reply(200, '<list><p id="1"><n>A</n></p><p id="2"><n>B</n></p><next>2</next></list>',
                     {"Content-Type": "text/xml"})

    fake_api.route("GET", "/products", products)
    auth = {"type": "SessionTokenAuthenticator", "decoder": {"type": "XmlDecoder"},
            "login_requester": requester("/login", http_method="POST"),
            "session_token_path": ["auth", "token"], "request_authentication": {"type": "Bearer"}}
    built = stream("products", requester_=requester("/products", authenticator=auth), selector_=selector("list", "p"),
                   paginator=paginator({"type": "CursorPagination", "cursor_value": "{{ response.list.next }}",
                                        "stop_condition": "{{ not response.list.next }}"},
                                       page_token_option=option("request_parameter", "after")))
    built["retriever"]["decoder"] = {"type": "XmlDecoder"}
    result = run(source(built))
    assert not result.failed, result.output
    assert result.records("products") == [{"@id": "1", "n": "A"}, {"@id": "2", "n": "B"}, {"@id": "3", "n": "C"}]
    assert [r.query.get("after") for r in fake_api.received("/products")] == [None, ["2"]]


def test_a_body_that_breaks_the_format_fails_its_stream_only(run, fake_api):
    fake_api.route("GET", "/bad.csv", Reply(200, "a\né\n".encode(), {"Content-Type": "text/csv"}))
    fake_api.route("GET", "/good.jsonl", Reply(200, jsonl(EVENTS[:2])))
    result = run(source(with_decoder({"type": "CsvDecoder", "encoding": "ascii"}, "/bad.csv"),
                        with_decoder({"type": "JsonlDecoder"}, "/good.jsonl")))
    assert result.failed
    [error] = result.errors()
    assert "could not be read as CsvDecoder" in error["message"] and "/bad.csv" in error["message"]
    assert result.records("good") == EVENTS[:2]


def test_a_paginator_over_a_streamed_format_is_refused_with_its_place(run, fake_api):
    built = with_decoder({"type": "CsvDecoder"}, "/rows.csv",
                         paginator=paginator({"type": "PageIncrement", "page_size": 10},
                                             page_token_option=option("request_parameter", "page")))
    with pytest.raises(FrameworkError, match="DefaultPaginator cannot read `CsvDecoder` responses"):
        run(source(built))
    assert fake_api.received() == []


def test_an_error_handler_that_reads_the_body_of_a_streamed_response_leaves_it_to_the_decoder(run, fake_api):
    fake_api.route("GET", "/events.jsonl", Reply(200, jsonl(EVENTS[:5])))
    built = with_decoder({"type": "JsonlDecoder"}, "/events.jsonl")
    built["retriever"]["requester"]["error_handler"] = {
        "type": "DefaultErrorHandler",
        "response_filters": [{"type": "HttpResponseFilter", "action": "FAIL", "error_message_contains": "quota"}]}
    result = run(source(built))
    assert not result.failed, result.output
    assert result.records("events") == EVENTS[:5]


@pytest.mark.spark
def test_every_format_lands_through_spark(spark, fake_api, tmp_path):
    """The parity scenario's manifest on Spark: each stream's records land in its Parquet files."""
    import json
    from pathlib import Path

    import pyarrow.parquet as pq
    from parity.test_decoders_parity import STREAMS, Events, _config, _serve

    from framework.cli.run import main

    _serve(fake_api, Events())
    config = tmp_path / "config.json"
    config.write_text(json.dumps(_config(fake_api)))
    manifest = Path(__file__).resolve().parents[1] / "parity" / "manifests" / "decoders.yaml"
    out = tmp_path / "out"
    assert main([str(manifest), "--config", str(config), "--output", str(out)], out=io.BytesIO()) == 0
    landed = {name: [row for path in sorted((out / name).glob("*.parquet")) for row in pq.read_table(path).to_pylist()]
              for name in STREAMS}
    assert {name: len(rows) for name, rows in landed.items()} == {
        "events": 3, "rows": 4, "packed": 3, "catalog": 3, "lines": 4, "zipped": 3, "items": 3, "bundles": 5}
    # a schema without properties: each record lands whole, as JSON text in `_airbyte_data`
    assert sorted(json.loads(r["_airbyte_data"])["id"] for r in landed["events"]) == [1, 2, 3]
    assert sorted(json.loads(r["_airbyte_data"])["@sku"] for r in landed["catalog"]) == ["a1", "a2", "a3"]
