"""``run-manifest`` as a user meets it: bad input, clear messages, secrets kept out, exit codes.

Most tests call :func:`framework.cli.run.main` in-process against the fake
API; a few run the installed ``run-manifest`` command in a subprocess, end to
end. Every failure must be one message that names the stream, the request
(secrets masked) and the manifest place, and must not stop the other streams.
"""

from __future__ import annotations

import base64
import fcntl
import gc
import io
import json
import os
import re
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import orjson
import pytest
from builder_modules import OPTIONAL
from conftest import LINUX_ONLY
from fakes.api_server import Reply, paged

from framework.cli.run import main
from framework.engine.connector import open_connector

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "shop" / "manifest.yaml"
SECRET = "sk-live-7Hq2pXw9-very-secret"

MANIFEST = """\
version: 6.7.0
type: DeclarativeSource
definitions:
  requester:
    type: HttpRequester
    url_base: "{{ config.base_url }}"
    path: "/{{ parameters.resource }}"
    request_parameters:
      api_key: "{{ config.api_key }}"
    error_handler:
      type: DefaultErrorHandler
      max_retries: 1
      backoff_strategies: [{type: ConstantBackoffStrategy, backoff_time_in_seconds: 0}]
  stream:
    type: DeclarativeStream
    schema_loader: {type: InlineSchemaLoader, schema: {type: object}}
    retriever:
      type: SimpleRetriever
      requester: {$ref: "#/definitions/requester"}
      record_selector:
        type: RecordSelector
        extractor: {type: DpathExtractor, field_path: [data]}
streams:
  - {$ref: "#/definitions/stream", name: first, $parameters: {resource: first}}
  - {$ref: "#/definitions/stream", name: broken, $parameters: {resource: broken}}
  - {$ref: "#/definitions/stream", name: last, $parameters: {resource: last}}
check:
  type: CheckStream
  stream_names: [first]
spec:
  type: Spec
  connection_specification:
    type: object
    required: [base_url, api_key]
    properties:
      base_url: {type: string}
      api_key: {type: string, airbyte_secret: true}
"""


def line_of(text: str, snippet: str) -> int:
    """The 1-based number of the first line of ``text`` holding ``snippet``."""
    for number, line in enumerate(text.splitlines(), 1):
        if snippet in line:
            return number
    raise AssertionError(f"{snippet!r} is not in the manifest")


@dataclass
class Result:
    code: int
    stdout: str
    stderr: str

    @property
    def messages(self) -> list[dict]:
        return [json.loads(line) for line in self.stdout.splitlines()]

    def records(self, stream: str) -> list[dict]:
        return [m["record"]["data"] for m in self.messages
                if m["type"] == "RECORD" and m["record"]["stream"] == stream]

    def errors(self) -> list[dict]:
        return [m["trace"]["error"] for m in self.messages if m["type"] == "TRACE" and m["trace"]["type"] == "ERROR"]

    def final_status(self, stream: str) -> str | None:
        found = [m["trace"]["stream_status"]["status"] for m in self.messages
                 if m["type"] == "TRACE" and m["trace"]["type"] == "STREAM_STATUS"
                 and m["trace"]["stream_status"]["stream_descriptor"]["name"] == stream]
        return found[-1] if found else None

    def assert_no(self, *secrets: str) -> None:
        for secret in secrets:
            assert secret not in self.stdout, f"{secret!r} leaked to stdout"
            assert secret not in self.stderr, f"{secret!r} leaked to stderr"


@pytest.fixture
def api(fake_api):
    fake_api.route("GET", "/first", {"data": [{"id": 1}]})
    fake_api.route("GET", "/last", {"data": [{"id": 3}]})
    return fake_api


@pytest.fixture
def cli(tmp_path, write_manifest, api, capsys):
    def run(*args: str, manifest: str = MANIFEST, config: dict | None = None) -> Result:
        path = write_manifest(manifest)
        config_file = tmp_path / "config.json"
        config_file.write_text(json.dumps({"base_url": api.url, "api_key": SECRET} if config is None else config))
        out = io.BytesIO()
        capsys.readouterr()
        code = main([path, "--config", str(config_file), *args], out=out)
        return Result(code, out.getvalue().decode(), capsys.readouterr().err)

    return run


QUOTE = '"'


def with_broken_requester(fields: str, parameters: str = "") -> str:
    """The manifest with the requester of stream `broken` changed by ``fields`` (YAML flow mapping items)."""
    more = f", {parameters}" if parameters else ""
    return MANIFEST.replace(
        '  - {$ref: "#/definitions/stream", name: broken, $parameters: {resource: broken}}',
        f'  - {{$ref: "#/definitions/stream", name: broken, $parameters: {{resource: broken{more}}},\n'
        '     retriever: {$ref: "#/definitions/stream/retriever",\n'
        f'                 requester: {{$ref: "#/definitions/requester", {fields}}}}}}}',
    )


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def assert_one_failure(result: Result, stream: str, *parts: str) -> str:
    """Exactly one failure, of ``stream``, on stdout and stderr alike; the others completed."""
    assert result.code == 1
    (error,) = result.errors()
    assert error["stream_descriptor"] == {"name": stream}
    message = error["message"]
    assert message.startswith(f"stream `{stream}`: ")
    for part in parts:
        assert part in message, f"{part!r} not in {message!r}"
    retries = re.compile(r"^run-manifest: stream `\w+`: (retrying|rate limited) ")
    assert [line for line in result.stderr.splitlines() if not retries.match(line)] == [f"run-manifest: {message}"]
    assert result.final_status(stream) == "INCOMPLETE"
    assert result.final_status("first") == "COMPLETE" and result.final_status("last") == "COMPLETE"
    assert result.records("first") == [{"id": 1}] and result.records("last") == [{"id": 3}]
    result.assert_no(SECRET)
    return message


# -- bad input, one clear message each ----------------------------------------------


def test_a_config_missing_a_required_field_exits_2_naming_it(cli, api):
    result = cli("--protocol", config={"base_url": api.url})
    assert result.code == 2
    assert result.stdout == ""
    assert "'api_key' is a required property" in result.stderr
    assert "config.json:1:1" in result.stderr
    assert api.requests == []


def test_a_config_value_of_the_wrong_type_is_named_without_showing_the_secret(cli, api):
    result = cli("--protocol", config={"base_url": api.url, "api_key": 4242424242})
    assert result.code == 2
    assert "(at api_key)" in result.stderr
    result.assert_no("4242424242")


def test_an_unreachable_host_fails_its_stream_only(cli, api):
    manifest = with_broken_requester(f'url_base: "http://127.0.0.1:{closed_port()}"')
    result = cli("--protocol", manifest=manifest)
    message = assert_one_failure(result, "broken", "gave up after 2 attempts", "could not connect",
                                 "api_key=****", f"manifest.yaml:{line_of(manifest, 'url_base: ' + QUOTE + 'http')}:")
    assert result.errors()[0]["failure_type"] == "transient_error"
    assert "try again later" in message


def test_a_body_that_is_not_json_fails_its_stream_only(cli, api):
    api.route("GET", "/broken", Reply(200, f"<html>Maintenance {SECRET}</html>", {"Content-Type": "text/html"}))
    message = assert_one_failure(
        cli("--protocol"), "broken", "not JSON", "Content-Type: text/html", "<html>Maintenance ****",
        f"GET {api.url}/broken?api_key=****", f"manifest.yaml:{line_of(MANIFEST, 'extractor:')}:")
    assert "check url_base/path" in message


def test_a_401_fails_its_stream_only_as_a_config_error(cli, api):
    api.route("GET", "/broken", Reply(401, {"error": f"key {SECRET} revoked"}))
    result = cli("--protocol")
    assert_one_failure(result, "broken", "refused the credentials", "check the credentials in the config",
                       f"GET {api.url}/broken?api_key=****", f"manifest.yaml:{line_of(MANIFEST, 'requester: {$ref')}:")
    assert result.errors()[0]["failure_type"] == "config_error"
    assert len(api.received("/broken")) == 1  # a 401 is not retried without a renewable token


def test_an_error_status_shows_the_start_of_the_body_masked(cli, api):
    api.route("GET", "/broken", Reply(400, {"error": f"bad parameter api_key={SECRET}"}))
    assert_one_failure(cli("--protocol"), "broken", "HTTP 400 Bad Request", "bad parameter api_key=****")


def test_a_record_path_missing_from_the_response_reads_zero_records_and_warns(cli, api):
    api.route("GET", "/broken", {"items": [{"id": 2}]})
    result = cli("--protocol")
    assert result.code == 0 and result.errors() == []
    assert result.stderr == ("run-manifest: warning: broken: field_path: ['data'] found no records, but the response "
                             "has a list of 1 objects at `items`; fix: set the record selector's extractor to "
                             "field_path: ['items']\n")
    assert result.records("broken") == []
    assert result.final_status("broken") == "COMPLETE"


def test_a_request_template_failing_at_run_time_names_the_template_and_the_place(cli, api):
    manifest = with_broken_requester('path: "/broken/{{ 100 // parameters.zero }}"', "zero: 0")
    message = assert_one_failure(cli("--protocol", manifest=manifest), "broken", "100 // parameters.zero",
                                 "ZeroDivisionError", f"manifest.yaml:{line_of(manifest, '// parameters.zero')}:")
    assert "could not be built" in message
    assert api.received("/broken") == []


def test_a_record_template_failing_at_run_time_names_the_template_request_and_place(cli, api):
    api.route("GET", "/broken", {"data": [{"id": 2, "total": 5, "count": 0}]})
    manifest = MANIFEST.replace(
        '  - {$ref: "#/definitions/stream", name: broken, $parameters: {resource: broken}}',
        '  - $ref: "#/definitions/stream"\n'
        '    name: broken\n'
        '    $parameters: {resource: broken}\n'
        '    transformations:\n'
        '      - type: AddFields\n'
        '        fields: [{type: AddedFieldDefinition, path: [avg], value: "{{ record.total / record.count }}"}]',
    )
    assert_one_failure(cli("--protocol", manifest=manifest), "broken", "record.total / record.count",
                       "division by zero", f"GET {api.url}/broken?api_key=****",
                       f"manifest.yaml:{line_of(manifest, 'name: broken') - 1}:")


def test_a_bad_manifest_exits_2_with_every_problem_placed(cli, api):
    manifest = MANIFEST.replace("type: DpathExtractor", "type: DpathExtracter")
    result = cli("--protocol", manifest=manifest)
    assert result.code == 2 and result.stdout == ""
    assert re.search(r"manifest\.yaml:\d+:\d+: error: .*DpathExtracter", result.stderr)
    assert api.requests == []


def test_a_manifest_that_is_not_yaml_exits_2(cli, api):
    result = cli("--protocol", manifest="streams: [unclosed\n")
    assert result.code == 2 and "manifest.yaml:" in result.stderr and result.stdout == ""


def test_a_config_that_is_not_json_exits_2(tmp_path, write_manifest, capsys):
    (tmp_path / "config.json").write_text("{base_url:")
    code = main([write_manifest(MANIFEST), "--config", str(tmp_path / "config.json"), "--protocol"], out=io.BytesIO())
    assert code == 2
    assert "config.json" in capsys.readouterr().err


def test_check_with_the_api_down_reports_failed(cli, api):
    api.route("GET", "/first", Reply(503, {"error": f"down for {SECRET}"}))
    result = cli("--check")
    assert result.code == 1  # so that `run-manifest --check && run-manifest ...` stops
    assert "run-manifest: the connection check failed: stream `first`" in result.stderr
    (message,) = result.messages
    assert message["connectionStatus"]["status"] == "FAILED"
    assert "stream `first`" in message["connectionStatus"]["message"]
    assert "HTTP 503" in message["connectionStatus"]["message"]
    result.assert_no(SECRET)


# -- secrets never shown ------------------------------------------------------------

OAUTH_SECRETS = ("client-secret-9f8e7d", "refresh-token-1a2b3c", "access-token-one", "access-token-two")

OAUTH_MANIFEST = """\
version: 6.7.0
type: DeclarativeSource
streams:
  - type: DeclarativeStream
    name: items
    schema_loader: {type: InlineSchemaLoader, schema: {type: object}}
    retriever:
      type: SimpleRetriever
      requester:
        type: HttpRequester
        url_base: "{{ config.base_url }}"
        path: /items
        authenticator:
          type: OAuthAuthenticator
          token_refresh_endpoint: "{{ config.base_url }}/token"
          client_id: "{{ config.client_id }}"
          client_secret: "{{ config.client_secret }}"
          refresh_token: "{{ config.refresh_token }}"
        error_handler:
          type: DefaultErrorHandler
          max_retries: 1
          backoff_strategies: [{type: ConstantBackoffStrategy, backoff_time_in_seconds: 0}]
      record_selector:
        type: RecordSelector
        extractor: {type: DpathExtractor, field_path: [data]}
check: {type: CheckStream, stream_names: [items]}
spec:
  type: Spec
  connection_specification:
    type: object
    required: [base_url, client_id, client_secret, refresh_token]
    properties:
      base_url: {type: string}
      client_id: {type: string}
      client_secret: {type: string, airbyte_secret: true}
      refresh_token: {type: string, airbyte_secret: true}
"""


def echo_everything(request) -> str:
    """What a careless API puts in an error page: the request, headers and all."""
    headers = "; ".join(f"{k}: {v}" for k, v in request.headers.items() if k.lower() == "authorization")
    return f"{headers} {request.body.decode()} {request.method} {request.target}"


@pytest.mark.parametrize("scenario", ["ok", "refused", "html_echo", "error_echo", "token_refused", "check",
                                      "check_echo"])
def test_oauth_secrets_and_tokens_never_appear_in_any_output(cli, api, scenario):
    tokens = iter(["access-token-one", "access-token-two"])
    api.route("POST", "/token", lambda r: {"access_token": next(tokens), "expires_in": 3600})
    if scenario in ("ok", "check"):
        api.route("GET", "/items", {"data": [{"id": 1}]})
    elif scenario == "refused":
        api.route("GET", "/items", lambda r: Reply(401, {"error": echo_everything(r)}))
    elif scenario in ("html_echo", "check_echo"):
        api.route("GET", "/items", lambda r: Reply(200, echo_everything(r), {"Content-Type": "text/html"}))
    elif scenario == "error_echo":
        api.route("GET", "/items", lambda r: Reply(500, {"error": echo_everything(r)}))
    elif scenario == "token_refused":
        api.route("POST", "/token", lambda r: Reply(400, {"error": "invalid_grant",
                                                          "error_description": echo_everything(r)}))
    config = {"base_url": api.url, "client_id": "my-app", "client_secret": OAUTH_SECRETS[0],
              "refresh_token": OAUTH_SECRETS[1]}
    result = cli("--check" if scenario.startswith("check") else "--protocol", manifest=OAUTH_MANIFEST, config=config)
    result.assert_no(*OAUTH_SECRETS)
    if scenario in ("ok", "check"):
        assert result.code == 0 and "FAILED" not in result.stdout
    elif scenario == "check_echo":
        assert result.code == 1 and '"FAILED"' in result.stdout and "not JSON" in result.stdout
    else:
        assert result.code == 1 and len(result.errors()) == 1


def test_basic_auth_password_never_appears(cli, api):
    manifest = MANIFEST.replace(
        "    request_parameters:\n      api_key: \"{{ config.api_key }}\"\n",
        "    authenticator: {type: BasicHttpAuthenticator, username: ann, password: \"{{ config.api_key }}\"}\n",
    )
    api.route("GET", "/broken", lambda r: Reply(500, {"error": echo_everything(r)}))
    result = cli("--protocol", manifest=manifest)
    assert result.code == 1
    result.assert_no(SECRET, base64.b64encode(f"ann:{SECRET}".encode()).decode())


# -- the installed command, end to end ----------------------------------------------


def venv_command() -> list[str]:
    script = Path(sys.executable).with_name("run-manifest")
    return [str(script)] if script.exists() else [sys.executable, "-m", "framework.cli.run"]


def run_command(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([*venv_command(), *args], capture_output=True, text=True, timeout=60, env=env, check=False,
                          cwd=cwd or REPO)


def _files(tmp_path: Path, api) -> tuple[Path, Path]:
    """The manifest (:data:`MANIFEST`) and a config for the fake API, written in ``tmp_path``."""
    manifest = tmp_path / "manifest.yaml"
    manifest.write_text(MANIFEST)
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"base_url": api.url, "api_key": SECRET}))
    return manifest, config


def test_the_command_reads_every_stream_and_exits_1_for_the_failed_one(tmp_path, api):
    api.route("GET", "/broken", Reply(404, {"error": "gone"}))
    manifest, config = _files(tmp_path, api)
    done = run_command(str(manifest), "--config", str(config), "--protocol")
    assert done.returncode == 1
    result = Result(done.returncode, done.stdout, done.stderr)
    assert result.records("first") == [{"id": 1}] and result.records("last") == [{"id": 3}]
    (error,) = result.errors()
    assert "HTTP 404 Not Found" in error["message"]
    assert done.stderr.strip() == f"run-manifest: {error['message']}"
    result.assert_no(SECRET)


@LINUX_ONLY
def test_the_command_widens_the_pipe_its_records_go_through(tmp_path, api):
    """framework.protocol.pipe: a page of RECORD lines fits in the consumer's pipe."""
    from framework.protocol.pipe import SIZE

    api.route("GET", "/broken", {"data": []})
    manifest, config = _files(tmp_path, api)
    process = subprocess.Popen([*venv_command(), str(manifest), "--config", str(config), "--protocol"],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=REPO,
                               env={**os.environ, "PYTHONPATH": str(REPO)})
    assert process.stdout is not None
    with process.stdout:
        assert b'"RECORD"' in process.stdout.read()
        assert fcntl.fcntl(process.stdout.fileno(), fcntl.F_GETPIPE_SZ) == SIZE  # the pipe it wrote to
    assert process.wait(timeout=60) == 0


def test_the_command_exits_2_on_a_bad_config_and_0_on_spec(tmp_path):
    manifest = tmp_path / "manifest.yaml"
    manifest.write_text(MANIFEST)
    config = tmp_path / "config.json"
    config.write_text("{}")
    done = run_command(str(manifest), "--config", str(config), "--protocol")
    assert done.returncode == 2 and done.stdout == ""
    assert "'base_url' is a required property" in done.stderr
    spec = run_command(str(manifest), "--spec")
    assert spec.returncode == 0
    assert json.loads(spec.stdout)["type"] == "SPEC"


# What a protocol read of a manifest that needs none of them must not import: Spark mode's (pyspark, py4j,
# pyarrow, pandas), the JwtAuthenticator's (jwt, cryptography), the full config check's (jsonschema, asked
# only when framework.engine.config_fit cannot vouch for the config) and durations' (isodate); nor the builders
# of component types it does not use (tests/builder_modules.py). Each costs start-up time.
NOT_IN_PROTOCOL_MODE = ("pyspark", "py4j", "pyarrow", "pandas", "jsonschema", "jwt", "cryptography", "isodate")
# The framework's modules a read leaves out: the other commands' (--check, --discover, --test-read), and those
# of what the manifest does not have: QueryProperties, state migrations, config normalization rules.
NOT_IN_A_READ = ("framework.protocol.check", "framework.protocol.discover", "framework.engine.test_read",
                 "framework.components.query_properties", "framework.components.state_migrations",
                 "framework.engine.config_migration")


def _after_a_protocol_read(tmp_path, api, then: str) -> subprocess.CompletedProcess:
    """A fresh interpreter that runs a protocol read of the test manifest (its exit code in ``code``), then the
    lines ``then``, which print what the test looks at."""
    manifest, config = _files(tmp_path, api)
    api.route("GET", "/broken", {"data": []})
    program = (
        "import io, sys\n"
        "from framework.cli.run import main\n"
        f"code = main([{str(manifest)!r}, '--config', {str(config)!r}, '--protocol'], out=io.BytesIO())\n"
        + then
    )
    return subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60, check=False,
                          cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})


def test_protocol_mode_does_not_import_pyspark(tmp_path, api):
    done = _after_a_protocol_read(tmp_path, api, (
        f"spark = sorted(m for m in sys.modules if m.split('.')[0] in {NOT_IN_PROTOCOL_MODE!r})\n"
        f"spark += sorted(set({OPTIONAL!r}) & set(sys.modules))\n"  # builders the manifest does not use
        f"spark += sorted(set({NOT_IN_A_READ!r}) & set(sys.modules))\n"
        "print(code, spark)\n"
    ))
    assert done.stdout.strip() == "0 []", done.stderr


def test_a_protocol_read_builds_no_pydantic_validator(tmp_path, api):
    """The manifest's models come from the quick build (framework/manifest/vouch.py): no model's core schema is
    built, nor pydantic's plugin loader imported, for a valid manifest (about 60 ms of a cold start)."""
    done = _after_a_protocol_read(tmp_path, api, (
        "from framework.models import REGISTRY\n"
        "print(code, [m.__name__ for m in REGISTRY.values() if m.__pydantic_complete__], "
        "'pydantic.plugin._loader' in sys.modules)\n"
    ))
    assert done.stdout.strip() == "0 [] False", done.stdout + done.stderr


def test_importing_the_command_leaves_the_framework_for_main(tmp_path):
    """The script's ``from framework.cli.run import main`` loads no models or components: main imports them
    once the collector is off (made with it on, they cost about 120 collections, some 30 ms of a start)."""
    program = ("import gc, sys\n"
               "import framework.cli.run\n"
               "print(sorted(m for m in sys.modules if m.split('.')[0] == 'pydantic' or m.startswith(("
               "'framework.models', 'framework.components', 'framework.manifest', 'framework.engine'))))\n")
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60, check=False,
                          cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.stdout.strip() == "[]", done.stdout + done.stderr


class _Thresholds(io.BytesIO):
    """An output that notes the collector's thresholds and frozen count at every write."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[int, bool]] = []

    def write(self, data) -> int:  # type: ignore[override]
        self.seen.append((gc.get_threshold()[0], gc.get_freeze_count() > 0))
        return super().write(data)


def test_a_protocol_read_leaves_a_page_to_the_collector_young_and_puts_it_back(tmp_path, api):
    from framework.collector import YOUNG_OBJECTS

    manifest, config = _files(tmp_path, api)
    api.route("GET", "/broken", {"data": []})
    before = gc.get_threshold()
    out = _Thresholds()
    assert main([str(manifest), "--config", str(config), "--protocol"], out=out) == 0
    assert b'"RECORD"' in out.getvalue()
    # while reading: room for a page of records, the start-up's objects frozen; after it: as it was (a caller
    # that goes on, as this test, gets no frozen heap either)
    assert out.seen and all(seen == (max(before[0], YOUNG_OBJECTS), True) for seen in out.seen)
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0


def test_no_collection_after_start_up_walks_what_start_up_made(tmp_path, api):
    """The collector is off while the connector is built; once it is on again, the objects of start-up are
    frozen first. Otherwise the first young collection walks every one of them (30 ms of a 0.33 s read)."""
    manifest, config = _files(tmp_path, api)
    api.route("GET", "/broken", {"data": []})
    frozen: list[int] = []

    def note(phase: str, info: dict) -> None:
        if phase == "start":
            frozen.append(gc.get_freeze_count())

    gc.callbacks.append(note)
    try:
        assert main([str(manifest), "--config", str(config), "--protocol"], out=io.BytesIO()) == 0
    finally:
        gc.callbacks.remove(note)
    assert all(count > 1000 for count in frozen), frozen
    assert gc.get_freeze_count() == 0  # and a caller that goes on gets nothing left frozen


# -- the shipped manifests ----------------------------------------------------------

SHIPPED = [EXAMPLE, *sorted((REPO / "manifests").glob("*.yaml"))]


@pytest.mark.parametrize("manifest", SHIPPED, ids=lambda p: str(p.relative_to(REPO)))
def test_shipped_manifests_build_and_discover(manifest, tmp_path, capsys):
    config = {"base_url": "http://127.0.0.1:9", "api_key": "k", "start_date": "2024-01-01"}
    if manifest != EXAMPLE:  # each shipped connector has an example config that fits its spec
        example = REPO / "manifests" / "configs" / f"{manifest.stem}.json"
        config = json.loads(example.read_text()) if example.exists() else {}
    connector = open_connector(str(manifest), config)
    assert connector.streams
    config_file = tmp_path / "config.json"
    config_file.write_text(json.dumps(config))
    out = io.BytesIO()
    assert main([str(manifest), "--config", str(config_file), "--discover"], out=out) == 0, capsys.readouterr().err
    (message,) = [orjson.loads(line) for line in out.getvalue().splitlines()]
    names = [s["name"] for s in message["catalog"]["streams"]]
    assert names == list(connector.streams)
    for entry in message["catalog"]["streams"]:
        assert entry["json_schema"].get("type") == "object"
        assert entry["supported_sync_modes"][0] == "full_refresh"


def test_the_example_shop_reads_against_the_fake_api(tmp_path, fake_api):
    accounts = [{"id": 1, "name": "Ann", "country": None, "updated_at": "2024-01-02T00:00:00Z"}]
    fake_api.route("GET", "/accounts", lambda r: paged(accounts, r, style="cursor", page_size_param="limit"))
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"base_url": fake_api.url, "api_key": "k-1", "start_date": "2024-01-01"}))
    out = io.BytesIO()
    assert main([str(EXAMPLE), "--config", str(config), "--check"], out=out) == 0
    assert orjson.loads(out.getvalue())["connectionStatus"] == {"status": "SUCCEEDED"}
    assert fake_api.requests[0].headers["Authorization"] == "Bearer k-1"


def test_check_with_a_bad_config_reports_failed_and_exits_2(cli, api):
    result = cli("--check", config={"base_url": api.url, "api_key": 17})
    assert result.code == 2
    (message,) = result.messages
    status = message["connectionStatus"]
    assert status["status"] == "FAILED"
    assert "(at api_key)" in status["message"] and "(at api_key)" in result.stderr
    assert api.requests == []
    result.assert_no("17 is not")


def test_a_failing_parent_stream_is_named_in_the_child_s_failure(tmp_path, fake_api, capsys):
    fake_api.route("GET", "/accounts", Reply(403, {"error": "forbidden"}))
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"base_url": fake_api.url, "api_key": SECRET, "start_date": "2024-01-01"}))
    out = io.BytesIO()
    assert main([str(EXAMPLE), "--config", str(config), "--protocol", "--streams", "orders"], out=out) == 1
    result = Result(1, out.getvalue().decode(), capsys.readouterr().err)
    (error,) = result.errors()
    assert error["stream_descriptor"] == {"name": "orders"}
    assert error["message"].startswith("stream `orders`: reading its parent stream `accounts`: the API denied access")
    assert f"GET {fake_api.url}/accounts?" in error["message"] and "manifest.yaml:" in error["message"]
    assert fake_api.received(path="/accounts/1/orders") == []
    result.assert_no(SECRET)


@pytest.mark.parametrize("kind", ["a directory", "YAML", "a pipe"])
def test_config_inputs_follow_one_rule_and_are_read_once(tmp_path, write_manifest, api, kind, capsys):
    path = write_manifest(MANIFEST)
    if kind == "a directory":
        config = str(tmp_path)
    elif kind == "YAML":
        config = str(tmp_path / "config.yaml")
        Path(config).write_text(f"base_url: {api.url}\napi_key: {SECRET}\n")
    else:
        read_end, write_end = os.pipe()
        os.write(write_end, json.dumps({"base_url": api.url, "api_key": SECRET}).encode())
        os.close(write_end)
        config = f"/dev/fd/{read_end}"
    out = io.BytesIO()
    code = main([path, "--config", config, "--check"], out=out)
    err = capsys.readouterr().err
    status = json.loads(out.getvalue())["connectionStatus"]
    if kind == "a pipe":
        assert code == 0 and status["status"] == "SUCCEEDED", err
        return
    assert code == 2 and status["status"] == "FAILED" and "Traceback" not in err
    assert {"a directory": "is a directory; pass the config's JSON file",
            "YAML": "not valid JSON"}[kind] in status["message"]
    assert SECRET not in err and SECRET not in status["message"]


def test_a_catalog_that_selects_no_stream_says_so(cli, tmp_path):
    catalog = tmp_path / "catalog.json"
    catalog.write_text(json.dumps({"streams": []}))
    result = cli("--protocol", "--catalog", str(catalog))
    assert result.code == 0
    assert f"run-manifest: warning: nothing to read: the catalog {catalog} selects no stream" in result.stderr
    (log,) = result.messages
    assert log["type"] == "LOG" and log["log"]["level"] == "WARN" and "first, broken, last" in log["log"]["message"]


def test_an_output_that_cannot_take_files_exits_2_before_spark_starts(cli, monkeypatch):
    from framework.spark import session

    def no_spark(*args, **kwargs):
        raise AssertionError("Spark was started")

    monkeypatch.setattr(session, "spark_session", no_spark)
    result = cli("--output", "/dev/null")
    assert result.code == 2 and "Traceback" not in result.stderr
    assert "the output /dev/null is not a folder; pass --output a folder you can write to" in result.stderr


def test_each_retry_is_a_line_naming_the_stream_request_status_attempt_and_wait(cli, api):
    answers = iter([Reply(503, {"error": "busy"})])
    api.route("GET", "/broken", lambda request: next(answers, {"data": [{"id": 2}]}))
    result = cli("--protocol")
    assert result.code == 0 and result.records("broken") == [{"id": 2}]
    (line,) = [line for line in result.stderr.splitlines() if "retrying" in line]
    assert line.startswith("run-manifest: stream `broken`: retrying GET ")
    assert "/broken?api_key=****" in line and "503" in line and "(attempt 1 of 1), waiting 0 s" in line
    result.assert_no(SECRET)


def test_retry_lines_as_json_for_scripts(capsys):
    import logging

    from framework.cli.retry_log import showing_retries
    from framework.components.http.client import RETRY_LOG

    with showing_retries("run-manifest", as_json=True):
        RETRY_LOG.warning("stream `a`: retrying GET http://x after 503 (attempt 1 of 5), waiting 2 s")
    RETRY_LOG.warning("not shown once the command is over")
    (line,) = capsys.readouterr().err.splitlines()
    event = json.loads(line)
    assert event["event"] == "retry" and event["message"].startswith("stream `a`: retrying GET http://x")
    assert RETRY_LOG.level == logging.NOTSET and RETRY_LOG.propagate


def test_a_body_that_is_not_json_is_retried_like_a_5xx_and_said_what_it_was(cli, api):
    html = Reply(200, "<html><body>maintenance</body></html>", {"Content-Type": "text/html"})
    answers = iter([html])
    api.route("GET", "/broken", lambda request: next(answers, {"data": [{"id": 2}]}))
    result = cli("--protocol")
    assert result.code == 0 and result.records("broken") == [{"id": 2}]  # the second answer was JSON
    assert "stream `broken`: retrying GET" in result.stderr and "after a body that is not JSON" in result.stderr

    api.route("GET", "/broken", html)
    message = assert_one_failure(cli("--protocol"), "broken", "gave up after 2 attempts",
                                 "HTTP 200, Content-Type: text/html", "decoding failed at byte 0", "<html>")
    assert "maintenance" in message


def test_nan_and_infinity_in_a_body_are_read_as_null(cli, api):
    api.route("GET", "/broken", Reply(200, b'{"data": [{"id": 2, "score": NaN, "limit": Infinity, "low": -Infinity}]}'))
    result = cli("--protocol")
    assert result.code == 0
    assert result.records("broken") == [{"id": 2, "score": None, "limit": None, "low": None}]


def test_a_local_output_on_a_cluster_master_exits_2_before_spark_starts(cli, monkeypatch, tmp_path):
    from framework.spark import session

    def no_spark(*args, **kwargs):
        raise AssertionError("Spark was started")

    monkeypatch.setattr(session, "spark_session", no_spark)
    monkeypatch.chdir(tmp_path)
    result = cli("--master", "spark://spark-master:7077")  # the default ./output
    assert result.code == 2 and "Traceback" not in result.stderr
    assert f"--output {tmp_path / 'output'} is a folder on this machine" in result.stderr
    assert "use s3://bucket/prefix, or a folder every node mounts at the same path and pass --shared-path" \
        in result.stderr
    monkeypatch.setenv("MASTER", "yarn")  # a master the environment names is known before Spark starts too
    from_env = cli("--output", str(tmp_path / "o"))
    assert from_env.code == 2 and "the master yarn" in from_env.stderr


def test_bad_conf_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as stopped:
        main(["m.yaml", "--config", "c.json", "--conf", "spark.executor.memory"])
    assert stopped.value.code == 2 and "is not KEY=VALUE" in capsys.readouterr().err


def test_a_master_known_only_once_the_session_runs_is_checked_before_any_request(cli, api, monkeypatch, tmp_path):
    """Under spark-submit the master is spark-submit's: the session knows it; the check comes before the pipeline."""
    from framework.spark import pipeline, session

    class Conf:
        def get(self, key, default=None):
            return "spark://submitted:7077" if key == "spark.master" else default

    class FakeSession:
        conf = Conf()

    asked = {}

    def fake_session(master=None, app_name="run-manifest", **kwargs):
        asked.update(kwargs, master=master)
        return FakeSession()

    def no_pipeline(*args, **kwargs):
        raise AssertionError("the pipeline ran")

    monkeypatch.setattr(session, "spark_session", fake_session)
    monkeypatch.setattr(pipeline, "run_pipeline", no_pipeline)
    monkeypatch.setenv("PYSPARK_GATEWAY_PORT", "1")  # as under spark-submit: the master is not known before
    before = len(api.requests)
    # --no-check: the connection check's one page (read before Spark starts) is not what is counted here
    result = cli("--output", str(tmp_path / "out"), "--conf", "spark.executor.memory=2g", "--no-check")
    assert result.code == 2 and "the master spark://submitted:7077 runs the tasks on other machines" in result.stderr
    assert asked["spark.executor.memory"] == "2g" and asked["jdbc"] is False
    assert len(api.requests) == before  # nothing was read
