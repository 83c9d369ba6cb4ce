"""Parity with Airbyte for manifests that were refused here and that airbyte-cdk reads (issue 37).

``manifests/schema_loader_list.yaml``:

* ``contacts``: its ``schema_loader`` is a list (hubspot's manifest has one), two inline loaders around a
  ``DynamicSchemaLoader``: one schema with the properties of each, an earlier loader's winning; the records
  are cast to it (``schema_normalization: Default``), so a property taken from the wrong loader shows in the
  values too;
* ``companies``: a list of one loader;
* ``exports``: an AsyncRetriever with the old ``urls_extractor`` (sendgrid's): both ignore it, so the job is
  downloaded once, from the download requester's own path, never from the URLs the poll lists;
* the check names a stream the manifest lacks (zendesk-support's): discover and read work, ``--check`` fails.

``manifests/dynamic_streams_only.yaml``: no ``streams``, every stream made by ``dynamic_streams``.

Compared: the catalog of ``--discover`` (schemas, keys, modes), the records and requests of a read, and the
outcome of ``--check``. Needs a python with airbyte-cdk (``AIRBYTE_CDK_PYTHON``); skipped otherwise.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml
from fakes.api_server import FakeApi, Reply
from parity.test_airbyte_parity import (
    MANIFESTS,
    _cdk_command,
    _write,
    assert_same_records,
    catalog_for,
    pytestmark,  # noqa: F401  (the parity mark and the skip without airbyte-cdk)
    run_both,
)

FIELDS = {"fields": [{"name": "score", "type": "text"}, {"name": "email", "type": "text"},
                     {"name": "visits", "type": "int64"}]}
CONTACTS = [{"id": "1", "score": "2.5", "email": "a@example.com", "visits": "3", "extra": "4", "other": True},
            {"id": 2, "score": 7, "email": 9, "visits": 10, "extra": 11}]
TABLE_ROWS = {"alpha": [{"id": "1", "label": 5}], "beta": [{"id": 2, "label": "two"}, {"id": "3", "label": None}]}


@pytest.fixture
def api() -> Iterator[FakeApi]:
    with FakeApi() as server:
        server.route("GET", "/contacts/fields", FIELDS)
        server.route("GET", "/contacts", {"data": CONTACTS})
        server.route("GET", "/companies", {"data": [{"id": "5", "name": "Acme"}]})
        server.route("POST", "/exports", {"id": "e1"})
        server.route("GET", "/exports/e1", {"status": "ready", "urls": ["/files/a", "/files/b"]})
        server.route("GET", "/exports/{job}/file", Reply(200, '{"id": 1}\n{"id": 2}\n',
                                                        {"Content-Type": "application/jsonl"}))
        server.route("GET", "/files/{name}", Reply(200, '{"id": 99}\n', {"Content-Type": "application/jsonl"}))
        server.route("GET", "/tables/{name}/rows", lambda r: {"data": TABLE_ROWS[r.path.split("/")[2]]})
        yield server


def _messages(command: list[str], folder: Path) -> tuple[int, list[dict], str]:
    done = subprocess.run(command, capture_output=True, cwd=folder, timeout=180, check=False)
    messages = [orjson.loads(line) for line in done.stdout.splitlines() if line.startswith(b"{")]
    return done.returncode, messages, done.stderr.decode(errors="replace")[-2000:]


def _both(manifest: str, command: str, config: dict, folder: Path) -> tuple[tuple, tuple]:
    """``run-manifest --<command>`` and airbyte-cdk's ``<command>`` on one manifest: (exit code, messages,
    stderr's end) of each."""
    path = MANIFESTS / manifest
    ours = _messages([sys.executable, "-m", "framework.cli.run", str(path), f"--{command}", "--config",
                      _write(folder, "ours.json", config)], folder)
    injected = dict(config, __injected_declarative_manifest=yaml.safe_load(path.read_text()))
    theirs = _messages(_cdk_command() + [command, "--config", _write(folder, "cdk.json", injected)], folder)
    return ours, theirs


def _catalog(run: tuple) -> dict[str, dict[str, Any]]:
    code, messages, stderr = run
    assert code == 0, stderr
    [catalog] = [m["catalog"] for m in messages if m.get("type") == "CATALOG"]
    keys = ("json_schema", "supported_sync_modes", "source_defined_cursor", "default_cursor_field",
            "source_defined_primary_key")
    return {entry["name"]: {key: entry.get(key) for key in keys} for entry in catalog["streams"]}


def test_schema_loader_lists_old_names_and_a_check_naming_a_missing_stream(api: FakeApi, tmp_path: Path) -> None:
    config = {"base_url": api.url}
    ours, theirs = _both("schema_loader_list.yaml", "discover", config, tmp_path)
    mine, cdk = _catalog(ours), _catalog(theirs)
    assert mine == cdk
    for name in mine:  # the same properties in the same order
        assert list(mine[name]["json_schema"]["properties"]) == list(cdk[name]["json_schema"]["properties"]), name
    assert mine["contacts"]["json_schema"]["properties"]["id"] == {"type": "integer"}  # the first loader's

    both = run_both(api, tmp_path, "schema_loader_list.yaml", config,
                    catalog_for({"contacts": "full_refresh", "companies": "full_refresh", "exports": "full_refresh"}))
    for stream in ("contacts", "companies", "exports"):
        assert_same_records(both, stream)
    assert both.ours.records["contacts"][0]["id"] == 1 and both.ours.records["contacts"][0]["visits"] == 3
    assert both.ours.records["exports"] == [{"id": 1}, {"id": 2}]  # the job's own file; `urls` not read
    assert both.ours_requests == both.cdk_requests
    assert not any(path.startswith("/files/") for _method, path, _query in both.ours_requests)

    # the check fails on the stream the manifest lacks, after reading `contacts`: airbyte-cdk raises (an error
    # trace, exit 1), we answer FAILED with the reason (exit 1), as for any failed check
    ours, theirs = _both("schema_loader_list.yaml", "check", config, tmp_path)
    assert ours[0] == theirs[0] == 1
    [status] = [m["connectionStatus"] for m in ours[1] if m["type"] == "CONNECTION_STATUS"]
    assert status["status"] == "FAILED" and "no stream `tickets`" in status["message"]
    [error] = [m["trace"]["error"] for m in theirs[1] if m["type"] == "TRACE" and m["trace"]["type"] == "ERROR"]
    assert "tickets is not part of the catalog" in error["internal_message"]


def test_a_manifest_without_streams_reads_the_streams_dynamic_streams_make(api: FakeApi, tmp_path: Path) -> None:
    config = {"base_url": api.url, "tables": [{"name": "alpha"}, {"name": "beta"}]}
    ours, theirs = _both("dynamic_streams_only.yaml", "discover", config, tmp_path)
    assert list(_catalog(ours)) == ["table_alpha", "table_beta"]
    assert _catalog(ours) == _catalog(theirs)

    both = run_both(api, tmp_path, "dynamic_streams_only.yaml", config,
                    catalog_for({"table_alpha": "full_refresh", "table_beta": "full_refresh"}))
    for stream in ("table_alpha", "table_beta"):
        assert_same_records(both, stream)
    assert both.ours.records["table_alpha"] == [{"id": 1, "label": "5"}]  # typed by the merged schema
    assert both.ours_requests == both.cdk_requests
