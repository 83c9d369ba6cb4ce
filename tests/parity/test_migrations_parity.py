"""Parity with Airbyte for state and config migrations: scenarios (h) and (i).

(h) ``legacy_state_migration.yaml``: a per-partition stream read from a state of the
older shape (``{"<parent id>": {"updated_at": ...}}``), which
``LegacyToPerPartitionStateMigration`` turns into ``{"states": [...]}`` before the read:
the same records, the same requests and the same final state, then a second sync from
each runner's own state.

(i) ``config_migration.yaml``: the spec's ``config_normalization_rules``. Both runners
get a config of the older shape: each announces the same migrated config (a CONTROL
message of type CONNECTOR_CONFIG, before any record) and writes it to the config file;
the records carry the config values the streams saw (migrated, then transformed); a run
from the migrated config announces nothing. A config a validation rejects stops both
runners before any record.

Needs a python with airbyte-cdk (``AIRBYTE_CDK_PYTHON``); skipped otherwise.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml
from fakes.api_server import FakeApi, RecordedRequest, dated
from parity.test_airbyte_parity import (
    ENABLE,
    MANIFESTS,
    _cdk_available,
    _cdk_command,
    _write,
    canonical,
    catalog_for,
    run_both,
)


@pytest.fixture
def api() -> Iterator[FakeApi]:
    with FakeApi() as server:
        yield server


pytestmark = [
    pytest.mark.parity,
    pytest.mark.skipif(not _cdk_available(),
                       reason=f"parity with airbyte-cdk needs AIRBYTE_CDK_PYTHON set to a python with airbyte-cdk: "
                              f"{ENABLE}"),
]

ACCOUNTS = [{"id": "acc-1", "name": "one"}, {"id": "acc-2", "name": "two"}, {"id": "acc-3", "name": "three"}]
ORDERS = {
    "acc-1": [{"id": 11, "updated_at": "2024-01-02T00:00:00Z"}, {"id": 12, "updated_at": "2024-01-12T00:00:00Z"}],
    "acc-2": [{"id": 21, "updated_at": "2024-01-05T00:00:00Z"}, {"id": 22, "updated_at": "2024-01-25T00:00:00Z"}],
    "acc-3": [{"id": 31, "updated_at": "2024-01-07T00:00:00Z"}],
}


def _serve_orders(api: FakeApi) -> None:
    api.route("GET", "/accounts", lambda r: {"accounts": ACCOUNTS})

    def orders(request: RecordedRequest) -> Any:
        account = request.path.split("/")[2]
        items = dated(ORDERS.get(account, []), request, "updated_at", "updated_since", "updated_until")
        return {"orders": items}

    api.route("GET", "/accounts/{id}/orders", orders)


def _partition_cursors(state: Any) -> dict[str, str]:
    """Each partition's cursor, by its JSON (the migrated ones have no `parent_slice`, the router's have)."""
    return {json.dumps(item["partition"], sort_keys=True): item["cursor"]["updated_at"]
            for item in (state or {}).get("states", [])}


def _first_window_starts(requests: set) -> dict[str, str]:
    starts: dict[str, str] = {}
    for _method, path, query in requests:
        since = dict(query).get("updated_since")
        if since is not None and (path not in starts or since < starts[path]):
            starts[path] = since
    return starts


def _same_multiset(both: Any, stream: str) -> None:
    ours = Counter(canonical(r) for r in both.ours.records.get(stream, []))
    cdk = Counter(canonical(r) for r in both.cdk.records.get(stream, []))
    assert ours == cdk, f"`{stream}`: the records differ (as multisets)"


def test_legacy_state_is_migrated_to_per_partition_state(api: FakeApi, tmp_path: Path) -> None:
    """airbyte-cdk 7.39's partitions of a SubstreamPartitionRouter carry `parent_slice: {}`, which a migrated
    partition lacks: the migrated cursors match no partition, so both runners read every partition from the
    start date and keep the migrated entries in the state beside the new ones (see README, difference 13)."""
    _serve_orders(api)
    config = {"base_url": api.url, "start_date": "2024-01-01T00:00:00Z", "end_date": "2024-01-31T00:00:00Z"}
    catalog = catalog_for({"orders": "incremental"})
    legacy = [{"type": "STREAM", "stream": {"stream_descriptor": {"name": "orders"}, "stream_state": {
        "acc-1": {"updated_at": "2024-01-10T00:00:00Z"}, "acc-2": {"updated_at": "2024-01-20T00:00:00Z"}}}}]

    both = run_both(api, tmp_path, "legacy_state_migration.yaml", config, catalog, legacy, legacy)
    _same_multiset(both, "orders")
    assert _first_window_starts(both.ours_requests) == _first_window_starts(both.cdk_requests)
    ours_state, cdk_state = both.ours.stream_state("orders"), both.cdk.stream_state("orders")
    assert _partition_cursors(ours_state) == _partition_cursors(cdk_state)
    migrated = {json.dumps({"account_id": "acc-1"}): "2024-01-10T00:00:00Z",
                json.dumps({"account_id": "acc-2"}): "2024-01-20T00:00:00Z"}
    assert migrated.items() <= _partition_cursors(ours_state).items(), "the legacy state was not migrated"
    assert ours_state["state"] == cdk_state["state"]

    # a second sync from each runner's own (now current) state: nothing to migrate; each partition from its cursor
    again = run_both(api, tmp_path, "legacy_state_migration.yaml", config, catalog,
                     both.ours.state_input(), both.cdk.state_input())
    _same_multiset(again, "orders")
    assert _first_window_starts(again.ours_requests) == _first_window_starts(again.cdk_requests)
    assert _partition_cursors(again.ours.stream_state("orders")) == \
        _partition_cursors(again.cdk.stream_state("orders"))


# -- (i) config migrations ------------------------------------------------------------------------------------


def _raw(command: list[str], cwd: Path) -> tuple[int, list[dict], str]:
    done = subprocess.run(command, capture_output=True, cwd=cwd, timeout=180, check=False)
    messages = [orjson.loads(line) for line in done.stdout.splitlines() if line.startswith(b"{")]
    return done.returncode, messages, done.stderr.decode(errors="replace")


def _ours(folder: Path, config_file: str, catalog: dict) -> tuple[int, list[dict], str]:
    return _raw([sys.executable, "-m", "framework.cli.run", str(MANIFESTS / "config_migration.yaml"), "--protocol",
                 "--config", config_file, "--catalog", _write(folder, "catalog.json", catalog)], folder)


def _cdk(folder: Path, config_file: str, catalog: dict) -> tuple[int, list[dict], str]:
    return _raw(_cdk_command() + ["read", "--config", config_file, "--catalog",
                                  _write(folder, "catalog.json", catalog)], folder)


def _controls(messages: list[dict]) -> list[dict]:
    return [m["control"]["connectorConfig"]["config"] for m in messages if m.get("type") == "CONTROL"]


def _records(messages: list[dict]) -> list[dict]:
    return [m["record"]["data"] for m in messages if m.get("type") == "RECORD"]


def _without_manifest(config: dict) -> dict:
    return {k: v for k, v in config.items() if k != "__injected_declarative_manifest"}


def test_config_migration_is_announced_saved_and_read(api: FakeApi, tmp_path: Path) -> None:
    api.route("GET", "/eu/items", lambda r: {"items": [{"id": 1}, {"id": 2}]})
    manifest = yaml.safe_load((MANIFESTS / "config_migration.yaml").read_text())
    old = {"base_url": api.url, "region": "europe", "legacy_token": "abc", "seats": 12,
           "reports": [{"name": "daily"}]}
    catalog = catalog_for({"items": "full_refresh"})
    ours_file = _write(tmp_path, "ours_config.json", old)
    cdk_file = _write(tmp_path, "cdk_config.json", dict(old, __injected_declarative_manifest=manifest))

    ours_code, ours, ours_err = _ours(tmp_path, ours_file, catalog)
    cdk_code, cdk, cdk_err = _cdk(tmp_path, cdk_file, catalog)
    assert ours_code == 0 and cdk_code == 0, (ours_err[-2000:], cdk_err[-2000:])

    # the same migrated config announced, first (before any record), once
    [announced] = _controls(ours)
    [theirs] = _controls(cdk)
    assert announced == _without_manifest(theirs)
    assert announced == {"base_url": api.url, "region": "eu", "seats": 12, "reports": [{"name": "daily"}],
                         "api": {"host": api.url.replace("http://", "")}}
    assert ours[0]["type"] == "CONTROL"
    assert next(i for i, m in enumerate(cdk) if m["type"] == "CONTROL") < \
        next(i for i, m in enumerate(cdk) if m["type"] == "RECORD")
    # both saved the migrated config (not the transformed one) to the config file
    assert json.loads(Path(ours_file).read_text()) == announced
    assert _without_manifest(json.loads(Path(cdk_file).read_text())) == announced
    assert json.loads(Path(ours_file + ".bak").read_text()) == old  # ours keeps the previous file
    # the streams read the migrated and transformed config
    assert _records(ours) == _records(cdk)
    assert _records(ours)[0] == {"id": 1, "region": "eu", "host": api.url.replace("http://", ""),
                                 "has_legacy_token": False, "plan": "pro"}

    # from the migrated config, nothing more to announce
    ours_code, ours, _ = _ours(tmp_path, ours_file, catalog)
    cdk_code, cdk, _ = _cdk(tmp_path, cdk_file, catalog)
    assert ours_code == 0 and cdk_code == 0
    assert _controls(ours) == [] and _controls(cdk) == []
    assert _records(ours) == _records(cdk)


def test_a_config_the_validations_reject_stops_both(api: FakeApi, tmp_path: Path) -> None:
    api.route("GET", "/eu/items", lambda r: {"items": [{"id": 1}]})
    manifest = yaml.safe_load((MANIFESTS / "config_migration.yaml").read_text())
    bad = {"base_url": api.url, "region": "eu", "reports": [{"name": "daily"}, {"title": "no name"}]}
    catalog = catalog_for({"items": "full_refresh"})
    ours_code, ours, ours_err = _ours(tmp_path, _write(tmp_path, "ours_config.json", bad), catalog)
    cdk_code, cdk, _ = _cdk(tmp_path, _write(tmp_path, "cdk_config.json",
                                             dict(bad, __injected_declarative_manifest=manifest)), catalog)
    assert _records(ours) == [] and _records(cdk) == []
    assert cdk_code != 0 and any("name" in json.dumps(m) for m in cdk if m.get("type") == "TRACE")
    assert ours_code == 2
    assert "config['reports'][1]" in ours_err and "'name' is a required property" in ours_err
    assert api.received() == [] or all(r.path != "/eu/items" for r in api.received())
