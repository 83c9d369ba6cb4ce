"""``run-manifest --protocol``, ``--check``, ``--discover`` and ``--spec``: the Airbyte messages they print.

The connector is run through :func:`framework.cli.run.main` against the fake
API, as a user (or Airbyte) would run it, and its stdout is read back as
protocol messages.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from typing import Any

import orjson
import pytest
from fakes.api_server import Reply, dated

from framework.cli.run import main

API_KEY = "key-5f2b9c-very-secret"

MANIFEST = """\
version: 6.7.0
type: DeclarativeSource
definitions:
  requester:
    type: HttpRequester
    url_base: "{{ config.base_url }}"
    authenticator:
      type: ApiKeyAuthenticator
      header: X-Api-Key
      api_token: "{{ config.api_key }}"
    error_handler:
      type: DefaultErrorHandler
      max_retries: 1
      backoff_strategies: [{type: ConstantBackoffStrategy, backoff_time_in_seconds: 0}]
  selector:
    type: RecordSelector
    extractor: {type: DpathExtractor, field_path: [data]}
streams:
  - type: DeclarativeStream
    name: accounts
    primary_key: id
    schema_loader:
      type: InlineSchemaLoader
      schema:
        type: object
        properties:
          id: {type: integer}
          name: {type: string}
    retriever:
      type: SimpleRetriever
      requester: {$ref: "#/definitions/requester", path: /accounts}
      record_selector: {$ref: "#/definitions/selector"}
  - type: DeclarativeStream
    name: orders
    primary_key: [id]
    schema_loader:
      type: InlineSchemaLoader
      schema:
        type: object
        properties:
          id: {type: integer}
          updated_at: {type: string, format: date-time}
    incremental_sync:
      type: DatetimeBasedCursor
      cursor_field: updated_at
      datetime_format: "%Y-%m-%dT%H:%M:%SZ"
      start_datetime:
        type: MinMaxDatetime
        datetime: "{{ config.start_date }}"
        datetime_format: "%Y-%m-%d"
      end_datetime:
        type: MinMaxDatetime
        datetime: "2024-01-31T00:00:00Z"
        datetime_format: "%Y-%m-%dT%H:%M:%SZ"
      step: P10D
      cursor_granularity: PT1S
      start_time_option: {type: RequestOption, inject_into: request_parameter, field_name: since}
      end_time_option: {type: RequestOption, inject_into: request_parameter, field_name: until}
    retriever:
      type: SimpleRetriever
      requester: {$ref: "#/definitions/requester", path: /orders}
      record_selector: {$ref: "#/definitions/selector"}
check:
  type: CheckStream
  stream_names: [accounts]
spec:
  type: Spec
  documentation_url: https://example.invalid/docs
  connection_specification:
    type: object
    required: [base_url, api_key, start_date]
    properties:
      base_url: {type: string}
      api_key: {type: string, airbyte_secret: true}
      start_date: {type: string, pattern: "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"}
"""

ACCOUNTS = [{"id": 1, "name": "Ann"}, {"id": 2, "name": "Bob"}]
ORDERS = [{"id": i, "updated_at": f"2024-01-{day:02d}T08:00:00Z"} for i, day in enumerate([2, 5, 12, 19, 25, 28], 1)]


@dataclass
class Result:
    code: int
    messages: list[dict]
    stderr: str
    stdout: bytes

    def of(self, kind: str) -> list[dict]:
        return [m for m in self.messages if m["type"] == kind]

    def records(self, stream: str) -> list[dict]:
        return [m["record"]["data"] for m in self.of("RECORD") if m["record"]["stream"] == stream]

    def states(self, stream: str) -> list[dict]:
        return [m["state"]["stream"]["stream_state"] for m in self.of("STATE")
                if m["state"]["stream"]["stream_descriptor"]["name"] == stream]

    def statuses(self, stream: str) -> list[str]:
        return [m["trace"]["stream_status"]["status"] for m in self.of("TRACE")
                if m["trace"]["type"] == "STREAM_STATUS"
                and m["trace"]["stream_status"]["stream_descriptor"]["name"] == stream]

    def errors(self) -> list[dict]:
        return [m["trace"]["error"] for m in self.of("TRACE") if m["trace"]["type"] == "ERROR"]


@pytest.fixture
def api(fake_api):
    fake_api.route("GET", "/accounts", lambda r: (
        {"data": ACCOUNTS} if r.headers.get("X-Api-Key") == API_KEY else Reply(401, {"error": "bad key"})))
    fake_api.route("GET", "/orders", lambda r: {"data": dated(ORDERS, r, "updated_at", "since", "until")})
    return fake_api


def by_id(records: list[dict]) -> list[dict]:
    """Records in the order of their ids (protocol mode reads two windows at once by default, as airbyte-cdk)."""
    return sorted(records, key=lambda record: record["id"])


@pytest.fixture
def cli(tmp_path, write_manifest, api, capsys):
    """Run ``run-manifest`` with a manifest (the one above unless given) and a config (a valid one unless given)."""

    def run(*args: str, manifest: str = MANIFEST, config: dict | None = None, catalog: Any = None,
            state: Any = None) -> Result:
        argv = [write_manifest(manifest)]
        if "--spec" not in args:
            config_file = tmp_path / "config.json"
            config_file.write_text(json.dumps(config if config is not None else
                                              {"base_url": api.url, "api_key": API_KEY, "start_date": "2024-01-01"}))
            argv += ["--config", str(config_file)]
        for name, value in (("catalog", catalog), ("state", state)):
            if value is not None:
                file = tmp_path / f"{name}.json"
                file.write_text(value if isinstance(value, str) else json.dumps(value))
                argv += [f"--{name}", str(file)]
        out = io.BytesIO()
        capsys.readouterr()
        code = main([*argv, *args], out=out)
        stdout = out.getvalue()
        messages = [orjson.loads(line) for line in stdout.splitlines()]
        return Result(code, messages, capsys.readouterr().err, stdout)

    return run


def configured(*entries: tuple[str, str]) -> dict:
    return {"streams": [{"stream": {"name": name, "json_schema": {}, "supported_sync_modes": ["full_refresh"]},
                         "sync_mode": mode, "destination_sync_mode": "append"} for name, mode in entries]}


# -- reading ------------------------------------------------------------------------


def test_protocol_mode_prints_records_state_logs_and_statuses_in_order(cli, api):
    result = cli("--protocol")
    assert result.code == 0, result.stderr
    assert result.stderr == ""
    assert result.records("accounts") == ACCOUNTS
    assert by_id(result.records("orders")) == ORDERS  # windows read side by side
    kinds = [m["type"] for m in result.messages]
    # every line is one message; accounts first, orders after, in manifest order
    assert kinds.index("RECORD") > 0 and kinds.count("RECORD") == len(ACCOUNTS) + len(ORDERS)
    assert result.statuses("accounts") == ["STARTED", "RUNNING", "COMPLETE"]
    assert result.statuses("orders") == ["STARTED", "RUNNING", "COMPLETE"]
    record = result.of("RECORD")[0]["record"]
    assert set(record) == {"stream", "data", "emitted_at"} and isinstance(record["emitted_at"], int)
    # a full-refresh stream ends on Airbyte's no-cursor state; the incremental one on its latest cursor value
    assert result.states("accounts") == [{"__ab_no_cursor_state_message": True}]
    assert result.states("orders")[-1] == {"updated_at": "2024-01-28T08:00:00Z"}
    state = result.of("STATE")[-1]["state"]
    assert state["type"] == "STREAM"
    assert state["stream"]["stream_descriptor"] == {"name": "orders"}
    logs = [m["log"] for m in result.of("LOG")]
    assert all(log["level"] == "INFO" for log in logs)
    assert any("2 records" in log["message"] and "accounts" in log["message"] for log in logs)
    # orders are read in windows of 10 days (less the granularity) between start_date and end_datetime
    windows = sorted((r.param("since"), r.param("until")) for r in api.received("/orders"))  # read side by side
    assert windows == [("2024-01-01T00:00:00Z", "2024-01-10T23:59:59Z"),
                       ("2024-01-11T00:00:00Z", "2024-01-20T23:59:59Z"),
                       ("2024-01-21T00:00:00Z", "2024-01-30T23:59:59Z"),
                       ("2024-01-31T00:00:00Z", "2024-01-31T00:00:00Z")]


def stream_of(message: dict) -> str | None:
    if message["type"] == "RECORD":
        return message["record"]["stream"]
    if message["type"] == "STATE":
        return message["state"]["stream"]["stream_descriptor"]["name"]
    if message["type"] == "TRACE" and message["trace"]["type"] == "STREAM_STATUS":
        return message["trace"]["stream_status"]["stream_descriptor"]["name"]
    return None


def test_each_stream_s_messages_run_from_started_to_complete_without_interleaving(cli):
    result = cli("--protocol")
    owners = [stream_of(m) for m in result.messages if stream_of(m) is not None]
    assert owners == sorted(owners)  # every accounts message before every orders message
    for name in ("accounts", "orders"):
        own = [m for m in result.messages if stream_of(m) == name]
        assert own[0]["type"] == "TRACE" and own[0]["trace"]["stream_status"]["status"] == "STARTED"
        assert own[-1]["type"] == "TRACE" and own[-1]["trace"]["stream_status"]["status"] == "COMPLETE"
    # the final state of orders comes after its last record
    kinds = [m["type"] for m in result.messages if stream_of(m) == "orders"]
    last_state = len(kinds) - 1 - kinds[::-1].index("STATE")
    assert last_state > max(i for i, kind in enumerate(kinds) if kind == "RECORD")


def test_state_resumes_an_incremental_stream_and_moves_forward(cli, api):
    state = [{"type": "STREAM", "stream": {"stream_descriptor": {"name": "orders"},
                                           "stream_state": {"updated_at": "2024-01-19T08:00:00Z"}}}]
    result = cli("--protocol", catalog=configured(("orders", "incremental")), state=state)
    assert result.code == 0, result.stderr
    assert sorted(r["id"] for r in result.records("orders")) == [4, 5, 6]
    assert min(r.param("since") for r in api.received("/orders")) == "2024-01-19T08:00:00Z"  # side by side
    assert api.received("/accounts") == []
    assert result.states("orders")[-1] == {"updated_at": "2024-01-28T08:00:00Z"}


@pytest.mark.parametrize("state", [
    {"orders": {"updated_at": "2024-01-19T08:00:00Z"}},  # legacy mapping
    {"type": "STATE", "state": {"type": "STREAM", "stream": {"stream_descriptor": {"name": "orders"},
                                                             "stream_state": {"updated_at": "2024-01-19T08:00:00Z"}}}},
])
def test_state_is_read_in_airbyte_s_other_shapes(cli, api, state):
    result = cli("--protocol", "--streams", "orders", state=state)
    assert result.code == 0, result.stderr
    assert [r["id"] for r in result.records("orders")] == [4, 5, 6]


def test_a_full_refresh_in_the_catalog_reads_everything_and_emits_only_the_no_cursor_state(cli, api):
    state = {"orders": {"updated_at": "2024-01-19T08:00:00Z"}}
    result = cli("--protocol", catalog=configured(("orders", "full_refresh"), ("accounts", "full_refresh")),
                 state=state)
    assert result.code == 0, result.stderr
    assert by_id(result.records("orders")) == ORDERS  # windows read side by side
    # the given state is not used, and each stream ends on the no-cursor state, once
    assert result.states("orders") == result.states("accounts") == [{"__ab_no_cursor_state_message": True}]
    # catalog order, not manifest order
    assert result.of("TRACE")[0]["trace"]["stream_status"]["stream_descriptor"]["name"] == "orders"


def test_streams_flag_reads_only_the_named_streams(cli, api):
    result = cli("--protocol", "--streams", "accounts")
    assert result.code == 0
    assert result.records("accounts") == ACCOUNTS
    assert result.statuses("orders") == [] and api.received("/orders") == []


def test_concurrency_flag_reads_windows_at_once_with_the_same_output(cli, api):
    result = cli("--protocol", "--streams", "orders", "--concurrency", "3")
    assert result.code == 0, result.stderr
    assert sorted(r["id"] for r in result.records("orders")) == [1, 2, 3, 4, 5, 6]
    assert result.states("orders")[-1] == {"updated_at": "2024-01-28T08:00:00Z"}


def test_a_failing_stream_is_reported_and_the_others_carry_on(cli, api):
    api.route("GET", "/accounts", Reply(500, {"error": "database on fire"}))
    result = cli("--protocol")
    assert result.code == 1
    (error,) = result.errors()
    assert error["failure_type"] == "transient_error"
    assert error["stream_descriptor"] == {"name": "accounts"}
    assert error["message"].startswith("stream `accounts`: gave up after 2 attempts")
    assert "database on fire" in error["message"]
    assert result.statuses("accounts") == ["STARTED", "INCOMPLETE"]
    assert result.statuses("orders") == ["STARTED", "RUNNING", "COMPLETE"]
    assert by_id(result.records("orders")) == ORDERS  # windows read side by side
    retries = [line for line in result.stderr.splitlines() if "stream `accounts`: retrying GET" in line]
    assert len(retries) == 1 and "(attempt 1 of 1)" in retries[0]  # one line per retry
    assert result.stderr.count("\n") == 2 and error["message"] in result.stderr


def test_a_stream_failing_midway_keeps_the_state_of_the_windows_it_finished(cli, api):
    api.fault(path="/orders", after=1, times=10, status=503)  # the second window fails
    result = cli("--protocol", "--streams", "orders", "--concurrency", "1")
    assert result.code == 1
    assert [r["id"] for r in result.records("orders")] == [1, 2]
    # the first window is finished: the state may move to its last record, not further
    assert result.states("orders")[-1] == {"updated_at": "2024-01-05T08:00:00Z"}
    assert result.statuses("orders") == ["STARTED", "RUNNING", "INCOMPLETE"]


# -- check, discover, spec ----------------------------------------------------------


def test_check_succeeds_when_the_check_stream_reads(cli, api):
    result = cli("--check")
    assert result.code == 0
    assert result.messages == [{"type": "CONNECTION_STATUS", "connectionStatus": {"status": "SUCCEEDED"}}]
    assert len(api.received("/accounts")) == 1


def test_check_fails_with_a_useful_message_and_no_secret(cli, api):
    config = {"base_url": api.url, "api_key": "wrong-key-also-secret", "start_date": "2024-01-01"}
    result = cli("--check", config=config)
    assert result.code == 1  # a failed check exits 1 (the message is on stdout all the same)
    (message,) = result.messages
    status = message["connectionStatus"]
    assert status["status"] == "FAILED"
    assert "stream `accounts`" in status["message"] and "refused the credentials" in status["message"]
    assert f"GET {api.url}/accounts" in status["message"] and "manifest.yaml:" in status["message"]
    assert b"wrong-key-also-secret" not in result.stdout and "wrong-key-also-secret" not in result.stderr


def test_a_check_naming_a_stream_the_manifest_lacks_fails_only_the_check(cli, api):
    """As in airbyte-cdk (zendesk-support's manifest): validate-manifest warns, discover and read work, and
    `--check` fails naming the stream."""
    manifest = MANIFEST.replace("stream_names: [accounts]", "stream_names: [accounts, tickets]")
    result = cli("--check", manifest=manifest)
    assert result.code == 1
    (message,) = result.messages
    assert message["connectionStatus"]["status"] == "FAILED"
    assert "no stream `tickets`" in message["connectionStatus"]["message"]
    discovered = cli("--discover", manifest=manifest)
    assert discovered.code == 0
    assert [s["name"] for s in discovered.messages[0]["catalog"]["streams"]] == ["accounts", "orders"]
    read = cli("--protocol", "--streams", "accounts", manifest=manifest)
    assert read.code == 0 and by_id(read.records("accounts")) == ACCOUNTS


def test_discover_describes_each_stream(cli, api):
    result = cli("--discover")
    assert result.code == 0
    (message,) = result.messages
    streams = {s["name"]: s for s in message["catalog"]["streams"]}
    assert list(streams) == ["accounts", "orders"]
    accounts, orders = streams["accounts"], streams["orders"]
    assert accounts["json_schema"]["properties"] == {"id": {"type": "integer"}, "name": {"type": "string"}}
    assert accounts["supported_sync_modes"] == ["full_refresh"]
    assert accounts["source_defined_primary_key"] == [["id"]]
    assert "default_cursor_field" not in accounts
    assert orders["supported_sync_modes"] == ["full_refresh", "incremental"]
    assert orders["source_defined_cursor"] is True
    assert orders["default_cursor_field"] == ["updated_at"]
    assert orders["source_defined_primary_key"] == [["id"]]
    assert api.requests == []  # discovering reads nothing


def test_spec_needs_no_config(cli):
    result = cli("--spec")
    assert result.code == 0
    (message,) = result.messages
    assert message["type"] == "SPEC"
    spec = message["spec"]
    assert spec["documentationUrl"] == "https://example.invalid/docs"
    assert spec["connectionSpecification"]["required"] == ["base_url", "api_key", "start_date"]
    assert spec["connectionSpecification"]["properties"]["api_key"]["airbyte_secret"] is True


# -- bad catalogs and states --------------------------------------------------------


@pytest.mark.parametrize(("catalog", "expected"), [
    (configured(("invoices", "full_refresh")), "catalog stream `invoices` is not in the manifest"),
    (configured(("accounts", "incremental")), "has no incremental_sync"),
    (configured(("orders", "sideways")), "sync_mode must be full_refresh or incremental"),
    ({"streams": [{"sync_mode": "full_refresh"}]}, "has no `stream.name`"),
    ("{not json", "not valid JSON"),
])
def test_a_bad_catalog_exits_2_before_reading(cli, api, catalog, expected):
    result = cli("--protocol", catalog=catalog)
    assert result.code == 2
    assert expected in result.stderr and result.stderr.count("\n") == 1
    assert result.messages == [] and api.requests == []


@pytest.mark.parametrize(("state", "expected"), [
    ("[1, 2", "not valid JSON"),
    ([{"type": "STREAM", "stream": {"stream_state": {}}}], "no stream_descriptor.name"),
    ([{"type": "WEIRD"}], "unknown type"),
    ({"orders": {"updated_at": "last tuesday"}}, "orders"),
])
def test_a_bad_state_exits_2_before_reading(cli, api, state, expected):
    result = cli("--protocol", state=state)
    assert result.code == 2, result.messages
    assert expected in result.stderr
    assert result.messages == [] and api.requests == []


def test_unknown_streams_in_the_streams_flag_exit_2(cli, api):
    result = cli("--protocol", "--streams", "accounts,invoices")
    assert result.code == 2
    assert "invoices" in result.stderr and api.requests == []


def test_a_state_for_a_stream_the_manifest_lacks_is_ignored(cli):
    result = cli("--protocol", "--streams", "accounts", state={"gone": {"updated_at": "x"}})
    assert result.code == 0 and result.records("accounts") == ACCOUNTS


def test_a_stream_failing_while_read_concurrently_stops_promptly_and_keeps_only_safe_state(cli, api):
    api.fault(path="/orders", after=2, times=100, status=503)
    result = cli("--protocol", "--streams", "orders", "--concurrency", "4")
    assert result.code == 1
    (error,) = result.errors()
    assert "HTTP 503" in error["message"]
    states = result.states("orders")
    # whatever finished first, the state never passes a window that was not read (and is never empty); windows
    # finished beyond it are kept as finished ranges (Airbyte's date-range state), not as its value
    resume = [s["slices"][0].get("most_recent_cursor_value") or s["slices"][0]["end"]
              if s.get("state_type") == "date-range" else s["updated_at"] for s in states]
    assert states and all(value <= "2024-01-20T23:59:59Z" for value in resume)
    assert result.statuses("orders")[-1] == "INCOMPLETE"
