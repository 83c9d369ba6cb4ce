"""Files end to end against the local API: a CSV export read with ResponseToFileExtractor, and a FileUploader
downloading a file per record (protocol mode to Airbyte's staging folder, Spark beside the stream's files)."""

from __future__ import annotations

import gzip
import io
import json
import textwrap
from pathlib import Path

import orjson
import pyarrow.parquet as pq
import pytest
from fakes.api_server import FakeApi, RecordedRequest, Reply

from framework.cli.run import main

CSV_MANIFEST = textwrap.dedent("""\
    version: 6.7.0
    type: DeclarativeSource
    check: {type: CheckStream, stream_names: [export]}
    streams:
      - type: DeclarativeStream
        name: export
        primary_key: id
        retriever:
          type: SimpleRetriever
          requester: {type: HttpRequester, url_base: "{{ config['base_url'] }}", path: /export.csv}
          record_selector:
            type: RecordSelector
            extractor: {type: ResponseToFileExtractor}
        schema_loader:
          type: InlineSchemaLoader
          schema: {type: object, properties: {id: {type: [string, "null"]}}}
    """)

FILES_MANIFEST = textwrap.dedent("""\
    version: 6.7.0
    type: DeclarativeSource
    check: {type: CheckStream, stream_names: [documents]}
    streams:
      - type: DeclarativeStream
        name: documents
        primary_key: id
        retriever:
          type: SimpleRetriever
          requester: {type: HttpRequester, url_base: "{{ config['base_url'] }}", path: /documents}
          record_selector:
            type: RecordSelector
            extractor: {type: DpathExtractor, field_path: [data]}
          partition_router: {type: ListPartitionRouter, values: ["a", "b"], cursor_field: shelf,
                             request_option: {type: RequestOption, inject_into: request_parameter, field_name: shelf}}
        schema_loader:
          type: InlineSchemaLoader
          schema: {type: object, properties: {id: {type: integer}, name: {type: string}, url: {type: string}}}
        file_uploader:
          type: FileUploader
          requester: {type: HttpRequester, url_base: "{{ stream_slice.extra_fields.download_target }}"}
          download_target_extractor: {type: DpathExtractor, field_path: [url]}
          filename_extractor: "{{ record.id }}/{{ record.name }}"
    """)


def run(tmp_path: Path, manifest: str, api: FakeApi, *args: str) -> tuple[int, list[dict]]:
    (tmp_path / "manifest.yaml").write_text(manifest)
    (tmp_path / "config.json").write_text(json.dumps({"base_url": api.url}))
    out = io.BytesIO()
    code = main([str(tmp_path / "manifest.yaml"), "--config", str(tmp_path / "config.json"), *args], out=out)
    return code, [orjson.loads(line) for line in out.getvalue().splitlines() if line.startswith(b"{")]


def records(messages: list[dict]) -> list[dict]:
    return [m["record"]["data"] for m in messages if m["type"] == "RECORD"]


def test_a_gzip_csv_export_without_content_encoding_becomes_records(tmp_path, fake_api):
    body = gzip.compress(b'id,name,note\n1,"Ada, Countess",NA\n2,Bob,\n3,"multi\nline",x\n')
    fake_api.route("GET", "/export.csv", lambda request: Reply(body=body, headers={"Content-Type": "text/csv"}))
    code, messages = run(tmp_path, CSV_MANIFEST, fake_api, "--protocol")
    assert code == 0
    assert records(messages) == [{"id": "1", "name": "Ada, Countess", "note": None},
                                 {"id": "2", "name": "Bob", "note": None},
                                 {"id": "3", "name": "multi\nline", "note": "x"}]


def serve_documents(api: FakeApi) -> None:
    def documents(request: RecordedRequest) -> dict:
        shelf = request.param("shelf")
        first = 1 if shelf == "a" else 3
        return {"data": [{"id": i, "name": f"doc{i}.txt", "url": f"{api.url}/files/{i}"} for i in (first, first + 1)]}

    api.route("GET", "/documents", documents)
    api.route("GET", "/files/{id}", lambda request: Reply(body=f"content of {request.path}".encode() * 3,
                                                            headers={"Content-Type": "application/octet-stream"}))


def test_protocol_mode_lands_files_in_the_staging_folder_with_a_reference_in_each_record(tmp_path, fake_api,
                                                                                        monkeypatch):
    staging = tmp_path / "staging"
    staging.mkdir()
    monkeypatch.setenv("AIRBYTE_STAGING_DIRECTORY", str(staging))
    serve_documents(fake_api)
    code, messages = run(tmp_path, FILES_MANIFEST, fake_api, "--protocol")
    assert code == 0
    found = sorted(records(messages), key=lambda r: r["id"])
    assert [r["id"] for r in found] == [1, 2, 3, 4]
    for record in found:
        reference = record["file_reference"]
        expected = f"content of /files/{record['id']}".encode() * 3
        assert reference["source_file_relative_path"] == f"documents/{record['id']}/doc{record['id']}.txt"
        assert Path(reference["staging_file_url"]) == staging / reference["source_file_relative_path"]
        assert Path(reference["staging_file_url"]).read_bytes() == expected
        assert reference["file_size_bytes"] == len(expected)
    assert not [p for p in staging.rglob("*") if p.name.startswith(".")]  # no temp file left behind


def test_discover_says_the_stream_is_file_based(tmp_path, fake_api):
    code, messages = run(tmp_path, FILES_MANIFEST, fake_api, "--discover")
    (stream,) = next(m for m in messages if m["type"] == "CATALOG")["catalog"]["streams"]
    assert code == 0 and stream["is_file_based"] is True
    assert "file_reference" in stream["json_schema"]["properties"]


@pytest.mark.spark
def test_spark_lands_the_files_beside_the_stream_files_and_the_reference_in_the_parquet(spark, tmp_path,
                                                                                        fake_api):
    serve_documents(fake_api)
    out = tmp_path / "out"
    code, _ = run(tmp_path, FILES_MANIFEST, fake_api, "--output", str(out), "--concurrency", "2", "--quiet")
    assert code == 0
    parts = [p for p in (out / "documents").iterdir() if p.suffix == ".parquet" and not p.name.startswith(".")]
    rows = sorted((row for part in parts for row in pq.read_table(part).to_pylist()), key=lambda r: r["id"])
    assert [r["id"] for r in rows] == [1, 2, 3, 4]
    for row in rows:
        reference = row["file_reference"]
        path = out / "documents" / "_files" / str(row["id"]) / f"doc{row['id']}.txt"
        assert reference["staging_file_url"] == str(path)
        assert path.read_bytes() == f"content of /files/{row['id']}".encode() * 3
        assert reference["file_size_bytes"] == path.stat().st_size
