"""Parity with Airbyte: one manifest, two runners, the same output.

Each scenario serves a small fake API from this process (tests/fakes), then runs the same
manifest, config, configured catalog and state through our
``run-manifest --protocol`` and through airbyte-cdk's
``source-declarative-manifest read`` (manifest injected into the config as
``__injected_declarative_manifest``), and compares:

* the RECORD data per stream, as canonical JSON (so ``1`` and ``1.0`` differ;
  top-level nulls are left out, as the CDK drops them): the same records in
  the same order. Where a stream has several partitions or windows, the CDK
  reads them at once, so there the records are compared as multisets and in
  order within each (partition, window);
* the final STATE per stream: equal for a plain cursor; for per-partition
  state, the same cursor per partition and overall (the CDK also keeps
  partitions that had no records, at the start date). A full-refresh stream
  has no state (the CDK's ``__ab_no_cursor_state_message`` counts as none);
* the requests: the same distinct requests (path and query) where there is
  no cursor; with a datetime cursor, the same span of time per path, however
  it is cut into windows (the CDK folds the last short window into the one
  before it; we do not).

Scenarios: (a) PageIncrement; (b) CursorPagination + RecordFilter + AddFields
+ RemoveFields; (c) DatetimeBasedCursor with P1D windows, a first sync and a
second from its state, and ours from the CDK's state; (d) SubstreamPartitionRouter;
(e) (d) read incrementally, with per-partition state; (f) an epoch cursor's
state (a known difference, xfail).

Needs a python with airbyte-cdk; skipped otherwise::

    bash bench/peers.sh && AIRBYTE_CDK_PYTHON=.venv-peers/bin/python pytest tests/parity

Differences found so far are written up in tests/parity/README.md.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml
from fakes.api_server import ApiError, FakeApi, RecordedRequest, dated, paged

HERE = Path(__file__).resolve().parent
MANIFESTS = HERE / "manifests"
CDK_PYTHON = os.environ.get("AIRBYTE_CDK_PYTHON", "")
ENABLE = "bash bench/peers.sh && AIRBYTE_CDK_PYTHON=.venv-peers/bin/python pytest tests/parity"
NO_CURSOR_STATE = {"__ab_no_cursor_state_message": True}


def _cdk_available() -> bool:
    if not CDK_PYTHON or not os.path.exists(CDK_PYTHON):
        return False
    probe = subprocess.run([CDK_PYTHON, "-c", "import airbyte_cdk"], capture_output=True, check=False)
    return probe.returncode == 0


pytestmark = [
    pytest.mark.parity,
    pytest.mark.skipif(not _cdk_available(),
                       reason=f"parity with airbyte-cdk needs AIRBYTE_CDK_PYTHON set to a python with airbyte-cdk: "
                              f"{ENABLE}"),
]


# -- the fake API (tests/fakes/api_server.py) ---------------------------------------------------------------


@pytest.fixture
def api() -> Iterator[FakeApi]:
    with FakeApi() as server:
        yield server


def distinct_requests(api: FakeApi) -> set[tuple[str, str, tuple]]:
    """The requests the API saw, as ``(method, path, sorted (name, value) pairs)``, without repeats."""
    return {(r.method, r.path, tuple(sorted((name, value) for name, values in r.query.items() for value in values)))
            for r in api.received()}


# -- running both ------------------------------------------------------------------------------------------


@dataclass
class Output:
    """What one runner printed: records and the last STATE per stream, error traces, exit code."""

    records: dict[str, list[dict]] = field(default_factory=dict)
    states: dict[str, Any] = field(default_factory=dict)  # stream -> the last STATE message's `state` object
    errors: list[str] = field(default_factory=list)
    exit_code: int = 0
    stderr: str = ""

    def stream_state(self, stream: str) -> Any:
        message = self.states.get(stream)
        if message is None:
            return None
        value = message["stream"]["stream_state"]
        return None if value == NO_CURSOR_STATE else value

    def state_input(self) -> list[dict]:
        """The state to give the next sync: the last state message of each stream."""
        return list(self.states.values())

    def check(self, who: str) -> None:
        assert self.exit_code == 0 and not self.errors, (
            f"{who} failed (exit {self.exit_code}): {self.errors}\n{self.stderr[-2000:]}")


def parse_output(stdout: bytes, exit_code: int, stderr: bytes) -> Output:
    out = Output(exit_code=exit_code, stderr=stderr.decode(errors="replace"))
    for line in stdout.splitlines():
        if not line.startswith(b"{"):
            continue
        message = orjson.loads(line)
        kind = message.get("type")
        if kind == "RECORD":
            record = message["record"]
            out.records.setdefault(record["stream"], []).append(record["data"])
        elif kind == "STATE":
            state = message["state"]
            if state.get("type", "STREAM") == "STREAM":
                out.states[state["stream"]["stream_descriptor"]["name"]] = state
        elif kind == "TRACE" and message["trace"].get("type") == "ERROR":
            out.errors.append(message["trace"]["error"].get("message", ""))
    return out


def catalog_for(streams: Mapping[str, str]) -> dict:
    """A configured catalog: stream name -> sync mode."""
    entries = []
    for name, mode in streams.items():
        modes = ["full_refresh", "incremental"] if mode == "incremental" else ["full_refresh"]
        entries.append({"stream": {"name": name, "json_schema": {}, "supported_sync_modes": modes},
                        "sync_mode": mode, "destination_sync_mode": "append" if mode == "incremental" else "overwrite"})
    return {"streams": entries}


def _write(folder: Path, name: str, data: Any) -> str:
    path = folder / name
    path.write_text(json.dumps(data))
    return str(path)


def run_ours(folder: Path, manifest: Path, config: dict, catalog: dict, state: list | None = None) -> Output:
    command = [sys.executable, "-m", "framework.cli.run", str(manifest), "--protocol",
               "--config", _write(folder, "ours_config.json", config),
               "--catalog", _write(folder, "catalog.json", catalog)]
    if state is not None:
        command += ["--state", _write(folder, "ours_state.json", state)]
    done = subprocess.run(command, capture_output=True, cwd=folder, timeout=120, check=False)
    return parse_output(done.stdout, done.returncode, done.stderr)


def _cdk_command() -> list[str]:
    script = Path(CDK_PYTHON).parent / "source-declarative-manifest"
    if script.exists():
        return [str(script)]
    return [CDK_PYTHON, "-c", "import sys; from airbyte_cdk.cli.source_declarative_manifest import run; "
                              "sys.argv[0] = 'source-declarative-manifest'; run()"]


def run_cdk(folder: Path, manifest: Path, config: dict, catalog: dict, state: list | None = None) -> Output:
    injected = dict(config, __injected_declarative_manifest=yaml.safe_load(manifest.read_text()))
    command = _cdk_command() + ["read", "--config", _write(folder, "cdk_config.json", injected),
                                "--catalog", _write(folder, "catalog.json", catalog)]
    if state is not None:
        command += ["--state", _write(folder, "cdk_state.json", state)]
    done = subprocess.run(command, capture_output=True, cwd=folder, timeout=180, check=False)
    return parse_output(done.stdout, done.returncode, done.stderr)


@dataclass
class Both:
    ours: Output
    cdk: Output
    ours_requests: set
    cdk_requests: set


def run_both(api: FakeApi, folder: Path, manifest: str, config: dict, catalog: dict,
             ours_state: list | None = None, cdk_state: list | None = None) -> Both:
    path = MANIFESTS / manifest
    api.requests.clear()
    ours = run_ours(folder, path, config, catalog, ours_state)
    ours_requests = distinct_requests(api)
    api.requests.clear()
    cdk = run_cdk(folder, path, config, catalog, cdk_state)
    cdk_requests = distinct_requests(api)
    cdk.check("source-declarative-manifest")
    ours.check("run-manifest --protocol")
    return Both(ours, cdk, ours_requests, cdk_requests)


# -- comparing ---------------------------------------------------------------------------------------------


def canonical(record: Mapping[str, Any]) -> str:
    """A record as JSON with sorted keys: equal only when values and their JSON types are equal.

    Top-level fields that are null are left out: the CDK's message serializer drops them
    (``{"note": null}`` goes out as ``{}``) while we keep them; nested nulls both keep.
    """
    present = {key: value for key, value in record.items() if value is not None}
    return orjson.dumps(present, option=orjson.OPT_SORT_KEYS).decode()


def assert_same_records(both: Both, stream: str, partition_of: Callable[[dict], Any] | None = None) -> None:
    ours = [canonical(r) for r in both.ours.records.get(stream, [])]
    cdk = [canonical(r) for r in both.cdk.records.get(stream, [])]
    assert cdk, f"the CDK read no `{stream}` records; the scenario is broken"
    if partition_of is None:
        assert ours == cdk, f"`{stream}`: records or their order differ"
        return
    assert Counter(ours) == Counter(cdk), f"`{stream}`: the records differ (as multisets)"
    for key in {partition_of(r) for r in both.cdk.records[stream]}:
        mine = [canonical(r) for r in both.ours.records[stream] if partition_of(r) == key]
        theirs = [canonical(r) for r in both.cdk.records[stream] if partition_of(r) == key]
        assert mine == theirs, f"`{stream}`, partition {key!r}: the order within the partition differs"


def cursor_value(state: Any, cursor_field: str) -> Any:
    """The stream's cursor value in a flat state or in the global part of a per-partition one."""
    if not isinstance(state, Mapping):
        return None
    if cursor_field in state:
        return state[cursor_field]
    inner = state.get("state")
    return inner.get(cursor_field) if isinstance(inner, Mapping) else None


def assert_no_state(both: Both, stream: str) -> None:
    assert both.cdk.stream_state(stream) is None
    assert both.ours.stream_state(stream) is None, f"`{stream}` is full refresh but has state"


def assert_same_requests(both: Both) -> None:
    only_ours = sorted(both.ours_requests - both.cdk_requests)
    only_cdk = sorted(both.cdk_requests - both.ours_requests)
    assert not only_ours and not only_cdk, f"requests only we made: {only_ours}; only the CDK made: {only_cdk}"


def windows_of(requests: set, since: str, until: str) -> dict[str, list[tuple[str, str]]]:
    """The time windows a runner asked for, per path (one path per partition)."""
    found: dict[str, set] = {}
    for _method, path, query in requests:
        params = dict(query)
        if since in params:
            found.setdefault(path, set()).add((params[since], params[until]))
    return {path: sorted(windows) for path, windows in found.items()}


def covered(windows: Sequence[tuple[str, str]], granularity: timedelta,
            parse: Callable[[str], datetime]) -> list[tuple[str, str]]:
    """Windows merged where one starts one granularity after the last ended (or overlaps it)."""
    merged: list[list[datetime]] = []
    for start, end in sorted(windows, key=lambda w: parse(w[0])):
        low, high = parse(start), parse(end)
        if merged and low <= merged[-1][1] + granularity:
            merged[-1][1] = max(merged[-1][1], high)
        else:
            merged.append([low, high])
    return [(low.isoformat(), high.isoformat()) for low, high in merged]


def iso_instant(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ")


def epoch_instant(text: str) -> datetime:
    return datetime.fromtimestamp(int(text), tz=timezone.utc).replace(tzinfo=None)


def assert_same_coverage(both: Both, since: str, until: str, parse: Callable[[str], datetime] = iso_instant) -> None:
    """Per path, both asked for the same span of time, however they cut it into windows."""
    ours = windows_of(both.ours_requests, since, until)
    cdk = windows_of(both.cdk_requests, since, until)
    assert sorted(ours) == sorted(cdk), f"windows for different paths: ours {sorted(ours)}, the CDK's {sorted(cdk)}"
    for path in cdk:
        second = timedelta(seconds=1)
        assert covered(ours[path], second, parse) == covered(cdk[path], second, parse), (
            f"{path}: the windows cover different time: ours {ours[path]}, the CDK's {cdk[path]}")


# -- (a) PageIncrement, full refresh -----------------------------------------------------------------------


ITEMS = [{"id": i, "name": f"item {i}", "price": round(i * 1.25, 2), "in_stock": i % 3 != 0,
          "note": None if i % 4 else "ünïcødé ✓ \"quoted\"", "dims": {"w": i, "h": i * 2},
          "tags": ["red", "blue", "green"][: i % 3]} for i in range(1, 24)]


def test_page_increment_full_refresh(api: FakeApi, tmp_path: Path) -> None:
    def items(request: RecordedRequest) -> dict:
        if request.param("page") is None:  # 400: the runners do not retry it
            raise ApiError(400, "inject_on_first_request: every request must name its page")
        return paged(ITEMS, request, page_size_param="page_size")

    api.route("GET", "/items", items)
    both = run_both(api, tmp_path, "page_increment.yaml", {"base_url": api.url}, catalog_for({"items": "full_refresh"}))
    assert len(both.cdk.records["items"]) == len(ITEMS)
    assert_same_records(both, "items")
    assert_no_state(both, "items")
    assert_same_requests(both)


# -- (b) CursorPagination + RecordFilter + AddFields + RemoveFields ----------------------------------------


def _event(i: int) -> dict:
    event = {"id": f"ev-{i}", "seq": i, "kind": ("click", "view", "heartbeat", "purchase")[i % 4],
             "amount": (0, 12.5, 3, 99.99, 7.25)[i % 5], "internal": {"shard": i % 2}}
    if i % 3:
        event["labels"] = {"debug": True, "color": ("red", "blue")[i % 2]}
    return event


EVENTS = [_event(i) for i in range(15)]


def test_cursor_pagination_filter_and_transformations(api: FakeApi, tmp_path: Path) -> None:
    def events(request: RecordedRequest) -> dict:
        if request.param("limit") is None:
            raise ApiError(400, "every request must carry the page size as limit")
        return paged(EVENTS, request, style="cursor", page_size_param="limit", data_key="results")

    api.route("GET", "/events", events)
    config = {"base_url": api.url, "tenant": "acme"}
    both = run_both(api, tmp_path, "cursor_pagination.yaml", config, catalog_for({"events": "full_refresh"}))
    assert len(both.cdk.records["events"]) == sum(e["kind"] != "heartbeat" for e in EVENTS)
    assert_same_records(both, "events")
    assert_no_state(both, "events")
    assert_same_requests(both)


# -- (c) DatetimeBasedCursor, P1D windows, two syncs -------------------------------------------------------


def _order(i: int, updated_at: str) -> dict:
    return {"id": i, "total": round(i * 3.5, 2), "updated_at": updated_at}


FIRST_ORDERS = [
    _order(1, "2024-01-01T00:00:00Z"), _order(2, "2024-01-01T06:30:00Z"), _order(3, "2024-01-01T12:00:00Z"),
    _order(4, "2024-01-01T23:59:59Z"),
    *[_order(10 + k, f"2024-01-02T{k:02d}:15:00Z") for k in range(7)],  # 7 on one day: pages of 3, 3, 1
    _order(30, "2024-01-04T08:00:00Z"), _order(31, "2024-01-04T10:00:00Z"),
]
SECOND_ORDERS = [  # what has changed by the second sync: order 2 updated, new orders, one at the very end
    *[o for o in FIRST_ORDERS if o["id"] != 2],
    _order(2, "2024-01-04T15:00:00Z"), _order(40, "2024-01-04T11:00:00Z"), _order(41, "2024-01-04T23:59:59Z"),
    _order(42, "2024-01-05T00:00:00Z"), _order(43, "2024-01-05T08:00:00Z"),  # 43 is after end_date
]


class Orders:
    """GET /orders?updated_since=..&updated_until=..&page=..&per_page=..: the orders in the window, by time."""

    def __init__(self, orders: list[dict]):
        self.orders = orders

    def __call__(self, request: RecordedRequest) -> dict:
        if not (request.param("updated_since") and request.param("updated_until")):
            raise ApiError(400, "every request must carry a window: updated_since and updated_until")
        chosen = dated(self.orders, request, "updated_at", "updated_since", "updated_until")
        chosen = sorted(chosen, key=lambda o: (o["updated_at"], o["id"]))
        return paged(chosen, request, data_key="orders")


def _day(record: dict) -> str:
    return record["updated_at"][:10]


def test_datetime_cursor_first_and_second_sync(api: FakeApi, tmp_path: Path) -> None:
    orders = Orders(FIRST_ORDERS)
    api.route("GET", "/orders", orders)
    config = {"base_url": api.url, "start_date": "2024-01-01T00:00:00Z", "end_date": "2024-01-05T00:00:00Z"}
    catalog = catalog_for({"orders": "incremental"})

    first = run_both(api, tmp_path, "datetime_cursor.yaml", config, catalog)
    assert len(first.cdk.records["orders"]) == len(FIRST_ORDERS)
    assert_same_records(first, "orders", partition_of=_day)
    assert first.cdk.stream_state("orders") == {"updated_at": "2024-01-04T10:00:00Z"}
    assert first.ours.stream_state("orders") == first.cdk.stream_state("orders")
    assert_same_coverage(first, "updated_since", "updated_until")

    orders.orders = SECOND_ORDERS
    second = run_both(api, tmp_path, "datetime_cursor.yaml", config, catalog,
                      ours_state=first.ours.state_input(), cdk_state=first.cdk.state_input())
    assert {r["id"] for r in second.cdk.records["orders"]} >= {2, 40, 41, 42}
    assert_same_records(second, "orders", partition_of=_day)
    assert second.cdk.stream_state("orders") == {"updated_at": "2024-01-05T00:00:00Z"}
    assert second.ours.stream_state("orders") == second.cdk.stream_state("orders")
    assert_same_coverage(second, "updated_since", "updated_until")


def test_datetime_cursor_reads_the_cdk_state(api: FakeApi, tmp_path: Path) -> None:
    """A connection moved from Airbyte: our second sync starts from the state the CDK left."""
    orders = Orders(FIRST_ORDERS)
    api.route("GET", "/orders", orders)
    config = {"base_url": api.url, "start_date": "2024-01-01T00:00:00Z", "end_date": "2024-01-05T00:00:00Z"}
    catalog = catalog_for({"orders": "incremental"})
    manifest = MANIFESTS / "datetime_cursor.yaml"
    cdk_first = run_cdk(tmp_path, manifest, config, catalog)
    cdk_first.check("source-declarative-manifest")

    orders.orders = SECOND_ORDERS
    both = run_both(api, tmp_path, "datetime_cursor.yaml", config, catalog,
                    ours_state=cdk_first.state_input(), cdk_state=cdk_first.state_input())
    assert_same_records(both, "orders", partition_of=_day)
    assert both.ours.stream_state("orders") == both.cdk.stream_state("orders") == {"updated_at": "2024-01-05T00:00:00Z"}
    assert_same_coverage(both, "updated_since", "updated_until")


# -- (d) SubstreamPartitionRouter ---------------------------------------------------------------------------


ACCOUNTS = [{"id": 1, "name": "Acme"}, {"id": 2, "name": "Globex"}, {"id": 3, "name": "Initech"}]
ACCOUNT_ORDERS = {
    1: [{"id": 100 + k, "account_id": 1, "total": k * 10} for k in range(5)],  # pages of 2, 2, 1
    2: [],
    3: [{"id": 300 + k, "account_id": 3, "total": k * 10.5} for k in range(2)],  # one full page, then an empty one
}


def test_substream_parent_and_child(api: FakeApi, tmp_path: Path) -> None:
    api.route("GET", "/accounts", {"accounts": ACCOUNTS})
    api.route("GET", "/accounts/{id}/orders",
              lambda request: paged(ACCOUNT_ORDERS[int(request.path_params["id"])], request, data_key="orders"))
    catalog = catalog_for({"accounts": "full_refresh", "account_orders": "full_refresh"})
    both = run_both(api, tmp_path, "substream.yaml", {"base_url": api.url}, catalog)
    assert len(both.cdk.records["account_orders"]) == sum(len(rows) for rows in ACCOUNT_ORDERS.values())
    assert_same_records(both, "accounts")
    assert_same_records(both, "account_orders", partition_of=lambda record: record["account_id"])
    assert_no_state(both, "accounts")
    assert_no_state(both, "account_orders")
    assert_same_requests(both)


# -- (e) SubstreamPartitionRouter + DatetimeBasedCursor: per-partition state ------------------------------


PARTITION_ORDERS: dict[int, list[dict]] = {
    1: [{"id": "a1", "account_id": 1, "updated_at": "2024-01-01T05:00:00Z"},
        {"id": "a2", "account_id": 1, "updated_at": "2024-01-03T05:00:00Z"}],
    2: [],  # a partition without records
    3: [{"id": "c1", "account_id": 3, "updated_at": "2024-01-02T01:00:00Z"}],
}


def _account_day(record: dict) -> tuple[int, str]:
    """The CDK reads the windows of one partition at once too: order holds within a (partition, window),
    and a day is never cut by this scenario's window edges."""
    return record["account_id"], _day(record)


def partition_cursors(state: Any, cursor_field: str) -> dict[str, Any]:
    """``{partition as JSON: cursor value}`` of a per-partition state."""
    return {canonical(item["partition"]): item["cursor"].get(cursor_field) for item in (state or {}).get("states", [])}


def assert_equivalent_partition_state(both: Both, stream: str, cursor_field: str, start: str) -> None:
    """Same cursor per partition and overall; the CDK also keeps partitions that had no records, at ``start``."""
    ours, cdk = both.ours.stream_state(stream), both.cdk.stream_state(stream)
    assert cursor_value(ours, cursor_field) == cursor_value(cdk, cursor_field), "the overall cursors differ"
    mine, theirs = partition_cursors(ours, cursor_field), partition_cursors(cdk, cursor_field)
    assert mine == {key: value for key, value in theirs.items() if key in mine or value != start}, (
        f"per-partition cursors differ: ours {mine}, the CDK's {theirs}")
    assert ours.get("use_global_cursor") == cdk.get("use_global_cursor") is False


def test_substream_incremental_per_partition_state(api: FakeApi, tmp_path: Path) -> None:
    rows = {account: list(orders) for account, orders in PARTITION_ORDERS.items()}
    api.route("GET", "/accounts", {"accounts": ACCOUNTS})
    api.route("GET", "/accounts/{id}/orders",
              lambda request: {"orders": dated(rows[int(request.path_params["id"])], request, "updated_at",
                                               "since", "until")})
    config = {"base_url": api.url, "start_date": "2024-01-01T00:00:00Z", "end_date": "2024-01-05T00:00:00Z"}
    catalog = catalog_for({"account_orders": "incremental"})

    first = run_both(api, tmp_path, "substream_incremental.yaml", config, catalog)
    assert_same_records(first, "account_orders", partition_of=_account_day)
    assert_equivalent_partition_state(first, "account_orders", "updated_at", config["start_date"])
    assert_same_coverage(first, "since", "until")

    rows[1].append({"id": "a3", "account_id": 1, "updated_at": "2024-01-04T00:00:00Z"})
    rows[2].append({"id": "b1", "account_id": 2, "updated_at": "2024-01-01T09:00:00Z"})  # old, in a new partition
    second = run_both(api, tmp_path, "substream_incremental.yaml", config, catalog,
                      ours_state=first.ours.state_input(), cdk_state=first.cdk.state_input())
    assert {r["id"] for r in second.cdk.records["account_orders"]} >= {"a2", "a3", "b1"}
    assert_same_records(second, "account_orders", partition_of=_account_day)
    assert_equivalent_partition_state(second, "account_orders", "updated_at", config["start_date"])
    assert_same_coverage(second, "since", "until")


# -- (f) DatetimeBasedCursor with an epoch datetime_format -----------------------------------------------


def test_epoch_cursor_state_is_written_as_airbyte_writes_it(api: FakeApi, tmp_path: Path) -> None:
    orders = [{"id": 1, "updated_at": "2024-01-01T05:00:00Z"}, {"id": 2, "updated_at": "2024-01-02T07:30:00Z"}]

    api.route("GET", "/orders",
              lambda request: {"orders": dated(orders, request, "updated_at", "since", "until", "epoch", item_fmt="iso")})
    config = {"base_url": api.url, "start_date": "2024-01-01T00:00:00Z", "end_date": "2024-01-03T00:00:00Z"}
    both = run_both(api, tmp_path, "epoch_cursor.yaml", config, catalog_for({"orders": "incremental"}))
    assert_same_records(both, "orders", partition_of=_day)
    assert_same_coverage(both, "since", "until", parse=epoch_instant)
    assert both.cdk.stream_state("orders") == {"updated_at": "1704180600"}
    assert both.ours.stream_state("orders") == both.cdk.stream_state("orders")

