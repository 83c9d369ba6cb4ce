"""Parity with Airbyte for ``DynamicSchemaLoader``: the discovered catalog and two incremental syncs.

The stream's schema is read from ``/contacts/fields`` (see
``manifests/dynamic_schema.yaml``): types mapped by ``TypesMap`` (one only where
its condition holds, one matching a list type exactly), an array of strings
(``ComplexFieldType``), two names as ``oneOf``, a field without a type, a field
left out by ``schema_filter`` and one added by ``schema_transformations``. The
records are cast to that schema (``schema_normalization: Default``), so the
same values must come out of both runners. Compared: the catalog entry of
``--discover`` (schema, key, cursor, sync modes), then the records and the
final state of a first sync and of a second one from each runner's own state.
We read the schema once per run.

Needs a python with airbyte-cdk (AIRBYTE_CDK_PYTHON); skipped otherwise.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest
import yaml
from fakes.api_server import FakeApi, RecordedRequest, dated
from parity.test_airbyte_parity import (
    MANIFESTS,
    _cdk_command,
    _write,
    assert_same_records,
    catalog_for,
    pytestmark,  # noqa: F401  (the parity mark and the skip without airbyte-cdk)
    run_both,
)

FIELDS = {"result": {"fields": [
    {"name": "id", "type": "int64"},
    {"name": "email", "type": "text"},
    {"name": "score", "type": "float"},
    {"name": "active", "type": "bool"},
    {"name": "tags", "type": "list"},
    {"name": "updated_at", "type": "datetime"},
    {"name": "code", "type": "mixed"},
    {"name": "label", "type": "mixed"},
    {"name": "birthday", "type": ["day", "text"]},
    {"name": "note"},
    {"name": "internal_rank", "type": "int64"},
]}}


def _contact(i: int, day: int) -> dict:
    return {"id": str(i) if i % 2 else i, "email": f"c{i}@example.com", "score": str(i * 1.5) if i % 3 else i * 1.5,
            "active": i % 2 == 0, "tags": ["a", "b"][: i % 3], "updated_at": f"2024-01-0{day}T0{i % 9}:00:00Z",
            "code": i * 10, "label": 7 if i % 4 == 0 else "seven", "birthday": "2000-02-29", "note": None,
            "internal_rank": i, "extra": {"kept": True}}


CONTACTS = [_contact(i, 1 + i % 3) for i in range(1, 10)]
CONFIG = {"start_date": "2024-01-01T00:00:00Z", "end_date": "2024-01-03T23:59:59Z"}


def serve(api: FakeApi, contacts: list[dict]) -> None:
    api.route("GET", "/contacts/fields", lambda request: FIELDS)

    def page(request: RecordedRequest) -> dict:
        return {"data": dated(contacts, request, "updated_at", "updated_since", "updated_until")}

    api.route("GET", "/contacts", page)


def catalog_entry_of(stdout: bytes) -> dict:
    for line in stdout.splitlines():
        if line.startswith(b"{"):
            message = orjson.loads(line)
            if message.get("type") == "CATALOG":
                (entry,) = message["catalog"]["streams"]
                return entry
    raise AssertionError(f"no CATALOG message in {stdout[-2000:]!r}")


def test_discover_gives_the_same_catalog(tmp_path: Path) -> None:
    manifest = MANIFESTS / "dynamic_schema.yaml"
    with FakeApi() as api:
        serve(api, CONTACTS)
        config = dict(CONFIG, base_url=api.url)
        ours = subprocess.run([sys.executable, "-m", "framework.cli.run", str(manifest), "--discover", "--config",
                               _write(tmp_path, "ours.json", config)], capture_output=True, timeout=120, check=False)
        assert ours.returncode == 0, ours.stderr.decode()[-2000:]
        assert len(api.received("/contacts/fields")) == 1
        injected = dict(config, __injected_declarative_manifest=yaml.safe_load(manifest.read_text()))
        cdk = subprocess.run(_cdk_command() + ["discover", "--config", _write(tmp_path, "cdk.json", injected)],
                             capture_output=True, timeout=180, check=False, cwd=tmp_path)
        assert cdk.returncode == 0, cdk.stderr.decode()[-2000:]
    mine, theirs = catalog_entry_of(ours.stdout), catalog_entry_of(cdk.stdout)
    assert mine["json_schema"] == theirs["json_schema"]
    assert list(mine["json_schema"]["properties"]) == list(theirs["json_schema"]["properties"])  # same order too
    for key in ("name", "supported_sync_modes", "source_defined_cursor", "default_cursor_field",
                "source_defined_primary_key"):
        assert mine.get(key) == theirs.get(key), key


@pytest.fixture
def api() -> FakeApi:
    with FakeApi() as server:
        yield server


def test_two_syncs_type_records_by_the_dynamic_schema(api: FakeApi, tmp_path: Path) -> None:
    serve(api, CONTACTS)
    config = dict(CONFIG, base_url=api.url)
    catalog = catalog_for({"contacts": "incremental"})

    def window(record: dict) -> str:
        return record["updated_at"][:10]

    first = run_both(api, tmp_path, "dynamic_schema.yaml", config, catalog)
    assert_same_records(first, "contacts", window)
    assert {type(r["id"]) for r in first.ours.records["contacts"]} == {int}  # "1" cast to the schema's integer
    assert first.ours.stream_state("contacts") == first.cdk.stream_state("contacts")

    later = [dict(_contact(i, 3), updated_at=f"2024-01-03T2{i % 4}:00:00Z") for i in range(20, 24)]
    serve(api, CONTACTS + later)
    api.requests.clear()
    second = run_both(api, tmp_path, "dynamic_schema.yaml", config, catalog,
                      ours_state=first.ours.state_input(), cdk_state=first.cdk.state_input())
    assert_same_records(second, "contacts", window)
    assert second.ours.stream_state("contacts") == second.cdk.stream_state("contacts")
