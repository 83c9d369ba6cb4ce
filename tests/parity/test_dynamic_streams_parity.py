"""Parity with Airbyte for ``dynamic_streams``: ``dynamic_streams.yaml``.

* ``tables_from_api`` (HttpComponentsResolver): one stream per record of ``/tables``, its name and path
  written by mappings (one ``field_path`` key a glob);
* ``reports_from_config`` (ConfigComponentsResolver): one stream per entry of the config's ``reports``, a
  request parameter created by ``create_or_update``, a ``$parameters`` key created for the requester's
  template and, where an entry says ``full_refresh``, a request parameter by a mapping with a ``condition``.

Discover lists the same streams with the same catalog entries; two syncs (the second from each runner's
own state) read the same records, send the same requests and keep the same state per made stream.

Needs a python with airbyte-cdk (``AIRBYTE_CDK_PYTHON``); skipped otherwise.
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
from fakes.api_server import FakeApi, dated
from parity.test_airbyte_parity import (
    ENABLE,
    MANIFESTS,
    _cdk_available,
    _cdk_command,
    _write,
    catalog_for,
    run_both,
)

pytestmark = [
    pytest.mark.parity,
    pytest.mark.skipif(not _cdk_available(),
                       reason=f"parity with airbyte-cdk needs AIRBYTE_CDK_PYTHON set to a python with airbyte-cdk: "
                              f"{ENABLE}"),
]

ROWS = {
    "alpha": [{"id": 1, "updated_at": "2024-01-02T00:00:00Z"}, {"id": 2, "updated_at": "2024-01-05T00:00:00Z"}],
    "beta": [{"id": 3, "updated_at": "2024-01-03T00:00:00Z"}],
    "weekly": [{"id": 7, "updated_at": "2024-01-04T00:00:00Z"}, {"id": 8, "updated_at": "2024-01-08T00:00:00Z"}],
    "totals": [{"id": 9, "updated_at": "2024-01-06T00:00:00Z"}],
}
MADE = ["table_alpha", "table_beta", "report_weekly", "report_totals"]


@pytest.fixture
def api() -> Iterator[FakeApi]:
    with FakeApi() as server:
        server.route("GET", "/tables", lambda r: {"data": [{"id": "alpha"}, {"id": "beta"}]})
        server.route("GET", "/tables/{name}/rows",
                     lambda r: {"data": dated(ROWS[r.path.split("/")[2]], r, "updated_at", "since")})
        server.route("GET", "/reports/{name}",
                     lambda r: {"data": dated(ROWS[r.path.split("/")[2]], r, "updated_at", "since")})
        yield server


def _config(api: FakeApi) -> dict[str, Any]:
    return {"base_url": api.url, "start_date": "2024-01-01T00:00:00Z", "end_date": "2024-01-31T00:00:00Z",
            "reports": [{"name": "weekly", "granularity": "week"},
                        {"name": "totals", "granularity": "all", "full_refresh": True}]}


def _discover(command: list[str], folder: Path) -> dict[str, dict]:
    done = subprocess.run(command, capture_output=True, cwd=folder, timeout=180, check=False)
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    [catalog] = [m["catalog"] for m in map(orjson.loads, done.stdout.splitlines()) if m.get("type") == "CATALOG"]
    return {entry["name"]: entry for entry in catalog["streams"]}


def _comparable(entry: dict) -> dict:
    keys = ("name", "json_schema", "supported_sync_modes", "source_defined_cursor", "default_cursor_field",
            "source_defined_primary_key")
    return {key: entry.get(key) for key in keys}


def test_discover_lists_the_same_made_streams(api: FakeApi, tmp_path: Path) -> None:
    config = _config(api)
    manifest = MANIFESTS / "dynamic_streams.yaml"
    ours = _discover([sys.executable, "-m", "framework.cli.run", str(manifest), "--discover",
                      "--config", _write(tmp_path, "ours.json", config)], tmp_path)
    injected = dict(config, __injected_declarative_manifest=yaml.safe_load(manifest.read_text()))
    cdk = _discover(_cdk_command() + ["discover", "--config", _write(tmp_path, "cdk.json", injected)], tmp_path)
    assert list(ours) == ["tables", *MADE]
    assert sorted(ours) == sorted(cdk)
    for name in ours:
        assert _comparable(ours[name]) == _comparable(cdk[name]), name


def test_two_syncs_of_the_made_streams(api: FakeApi, tmp_path: Path) -> None:
    catalog = catalog_for({"table_alpha": "incremental", "table_beta": "incremental",
                           "report_weekly": "incremental", "report_totals": "incremental"})
    first = run_both(api, tmp_path, "dynamic_streams.yaml", _config(api), catalog)
    for name in MADE:
        assert first.ours.records[name] == first.cdk.records[name], name
    assert first.ours.records["report_weekly"] == ROWS["weekly"]
    for name in MADE:
        assert first.ours.stream_state(name) == first.cdk.stream_state(name), name
    assert first.ours_requests == first.cdk_requests  # distinct requests: the listing read once or more
    queries = {path: dict(query) for _method, path, query in first.ours_requests}
    assert queries["/reports/weekly"].get("granularity") == "week" and "mode" not in queries["/reports/weekly"]
    assert queries["/reports/totals"].get("mode") == "full"  # the mapping whose condition holds
    # a parameter a mapping created reaches the requester's template (the definition's parameters propagated)
    assert queries["/reports/weekly"]["kind"] == "week_report" and queries["/tables/alpha/rows"]["kind"] == "table"

    second = run_both(api, tmp_path, "dynamic_streams.yaml", _config(api), catalog,
                      first.ours.state_input(), first.cdk.state_input())
    for name in MADE:
        assert second.ours.records.get(name) == second.cdk.records.get(name), name
    assert second.ours.records["report_weekly"] == ROWS["weekly"][1:]  # from the saved cursor, inclusive
    assert second.ours_requests == second.cdk_requests
    for name in MADE:
        assert second.ours.stream_state(name) == second.cdk.stream_state(name), name
