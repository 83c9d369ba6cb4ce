"""Parity with Airbyte for files: ``FileUploader`` in a sync, and ``ResponseToFileExtractor`` on the same bodies.

* ``FileUploader`` (``manifests/file_uploader.yaml``): both runners read the
  same documents with ``AIRBYTE_STAGING_DIRECTORY`` set to a folder of their
  own; the records are the same, each runner lands the same files with the
  same bytes under the same relative paths, and the reference carries the same
  path and size (the CDK puts it in the RECORD message's ``file_reference``, we
  put it in the record: see the README). Full refresh, so one sync.
* ``ResponseToFileExtractor``: Airbyte runs it only as an ``AsyncRetriever``'s
  ``download_extractor``, which we do not run, so the extractor itself is
  compared: airbyte-cdk's class and ours read the same bodies (plain, gzip,
  zlib, NUL bytes, missing values, short rows, repeated headers, quoted line
  breaks, a byte-order mark) with and without ``preserve_na_values``.

Needs a python with airbyte-cdk (AIRBYTE_CDK_PYTHON); skipped otherwise.
"""

from __future__ import annotations

import base64
import gzip
import json
import os
import subprocess
import sys
import zlib
from pathlib import Path

import orjson
import yaml
from fakes.api_server import FakeApi, RecordedRequest, Reply
from parity.test_airbyte_parity import (
    CDK_PYTHON,
    MANIFESTS,
    _cdk_command,
    _write,
    canonical,
    catalog_for,
    pytestmark,  # noqa: F401  (the parity mark and the skip without airbyte-cdk)
)

from framework.components.http.request import HttpRequest
from framework.components.http.transport import HttpResponse
from framework.components.records.file_extraction import ResponseToFile


def serve(api: FakeApi) -> None:
    def documents(request: RecordedRequest) -> dict:
        first = 1 if request.param("shelf") == "a" else 3
        return {"data": [{"id": i, "name": f"doc {i}.pdf", "url": f"{api.url}/files/{i}"} for i in (first, first + 1)]}

    api.route("GET", "/documents", documents)
    api.route("GET", "/files/{id}", lambda request: Reply(
        body=bytes(range(256)) * int(request.path.rsplit("/", 1)[1]), headers={"Content-Type": "application/pdf"}))


def read(command: list[str], folder: Path, staging: Path) -> list[dict]:
    staging.mkdir()
    done = subprocess.run(command, capture_output=True, cwd=folder, timeout=180, check=False,
                          env=dict(os.environ, AIRBYTE_STAGING_DIRECTORY=str(staging)))
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    messages = [orjson.loads(line) for line in done.stdout.splitlines() if line.startswith(b"{")]
    errors = [m for m in messages if m["type"] == "TRACE" and m["trace"].get("type") == "ERROR"]
    assert not errors, errors
    return [m["record"] for m in messages if m["type"] == "RECORD"]


def test_file_uploader_lands_the_same_files_with_the_same_references(tmp_path: Path) -> None:
    manifest = MANIFESTS / "file_uploader.yaml"
    catalog = _write(tmp_path, "catalog.json", catalog_for({"documents": "full_refresh"}))
    with FakeApi() as api:
        serve(api)
        config = {"base_url": api.url}
        ours = read([sys.executable, "-m", "framework.cli.run", str(manifest), "--protocol", "--config",
                     _write(tmp_path, "ours.json", config), "--catalog", catalog], tmp_path, tmp_path / "ours")
        injected = dict(config, __injected_declarative_manifest=yaml.safe_load(manifest.read_text()))
        cdk = read(_cdk_command() + ["read", "--config", _write(tmp_path, "cdk.json", injected), "--catalog", catalog],
                   tmp_path, tmp_path / "cdk")

    def by_id(records: list[dict]) -> list[dict]:
        return sorted(records, key=lambda r: r["data"]["id"])

    ours, cdk = by_id(ours), by_id(cdk)
    assert len(cdk) == 4
    assert [canonical({k: v for k, v in r["data"].items() if k != "file_reference"}) for r in ours] == \
        [canonical(r["data"]) for r in cdk]
    for mine, theirs in zip(ours, cdk):
        reference, expected = mine["data"]["file_reference"], theirs["file_reference"]
        assert reference["source_file_relative_path"] == expected["source_file_relative_path"]
        assert reference["file_size_bytes"] == expected["file_size_bytes"]
        relative = expected["source_file_relative_path"]
        assert Path(reference["staging_file_url"]) == tmp_path / "ours" / relative
        assert Path(expected["staging_file_url"]) == tmp_path / "cdk" / relative
        assert (tmp_path / "ours" / relative).read_bytes() == (tmp_path / "cdk" / relative).read_bytes()


BODIES = [
    b"a,b,c\n1,NA,\n2\n\n3,x,\"q, \"\"r\"\"\"\n",
    b"id,note\n1,N/A\n2,null\n3,None\n4,nan\n5,-NaN\n6,#N/A\n7,<NA>\n8, NA \n9,na\n",
    gzip.compress(b"id,name\n1,Ada\n2,\"multi\nline\"\n"),
    zlib.compress(b"id,name\n1,Bob\n"),
    b"id,name\n1,A\x00da\n",
    b"a,a,a.1,,b\n1,2,3,4,5\n",
    "\ufeffid,name\n1,Zoë\n".encode(),
    b"",
    b"a,b\n",
    b"a,b\r\n1,2\r\n,\r\n",
]

CDK_SCRIPT = """
import base64, io, json, sys, requests
from airbyte_cdk.sources.declarative.extractors.response_to_file_extractor import ResponseToFileExtractor
out = []
for case in json.load(sys.stdin):
    response = requests.Response()
    response.status_code = 200
    response.raw = io.BytesIO(base64.b64decode(case["body"]))
    extractor = ResponseToFileExtractor(parameters={}, preserve_na_values=case["preserve"])
    out.append([dict(record) for record in extractor.extract_records(response)])
print(json.dumps(out))
"""


def test_response_to_file_extractor_reads_bodies_as_airbyte_does(tmp_path: Path) -> None:
    cases = [{"body": base64.b64encode(body).decode(), "preserve": preserve}
             for body in BODIES for preserve in (False, True)]
    done = subprocess.run([CDK_PYTHON, "-c", CDK_SCRIPT], input=json.dumps(cases).encode(), capture_output=True,
                          cwd=tmp_path, timeout=120, check=False)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    theirs = json.loads(done.stdout.splitlines()[-1])
    request = HttpRequest("GET", "http://api/export")
    for case, expected in zip(cases, theirs):
        # no Content-Type: airbyte-cdk 7.39.1 fails on any (see the README)
        response = HttpResponse(200, {}, base64.b64decode(case["body"]), request)
        assert ResponseToFile(case["preserve"]).extract(response) == expected, case
