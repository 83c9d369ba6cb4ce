"""No rendering of a secret reaches any output, whatever the error path.

Each scenario renders the config's secret somewhere it goes wrong (a header,
a query parameter, a URL path, a duration, a page size, a 401 answer that
echoes it) in the spellings it may take: with a trailing newline (a config
written with ``echo``), with surrounding spaces, URL-encoded, base64 in Basic
auth. Every byte the CLI writes (stdout, stderr, with ``--check`` and a read)
is then searched for each spelling of the secret.
"""

from __future__ import annotations

import base64
import io
import json
from urllib.parse import quote, quote_plus

import pytest
from cli.test_run_manifest import MANIFEST, SECRET, Result, with_broken_requester
from fakes.api_server import RecordedRequest, Reply

from framework.cli.run import main

# how each secret may show: as is, escaped, encoded (the masking must hide every one)
SPELLINGS = (SECRET, quote(SECRET, safe=""), quote_plus(SECRET), json.dumps(SECRET)[1:-1],
             base64.b64encode(f"user:{SECRET}".encode()).decode())


@pytest.fixture
def run(tmp_path, write_manifest, fake_api, capsys):
    fake_api.route("GET", "/first", {"data": [{"id": 1}]})
    fake_api.route("GET", "/last", {"data": [{"id": 3}]})

    def echo(request: RecordedRequest) -> Reply:  # an API that quotes the credentials it refuses
        shown = request.headers.get("Authorization", "") + " " + (request.param("api_key") or "")
        return Reply(401, {"error": f"bad credentials: {shown!r}"})

    fake_api.route("GET", "/broken", echo)

    def cli(manifest: str, secret: str, *args: str) -> Result:
        path = write_manifest(manifest)
        config = tmp_path / "config.json"
        config.write_text(json.dumps({"base_url": fake_api.url, "api_key": secret}))
        out = io.BytesIO()
        capsys.readouterr()
        code = main([path, "--config", str(config), *args], out=out)
        return Result(code, out.getvalue().decode(), capsys.readouterr().err)

    return cli


BEARER = 'authenticator: {type: BearerAuthenticator, api_token: "{{ config.api_key }}"}'
BASIC = 'authenticator: {type: BasicHttpAuthenticator, username: user, password: "{{ config.api_key }}"}'
PATH = 'path: "/broken/{{ config.api_key }}"'

SCENARIOS = {
    "a query parameter": MANIFEST,
    "a bearer token": with_broken_requester(BEARER),
    "basic auth": with_broken_requester(BASIC),
    "a URL path": with_broken_requester(PATH),
    "a page size": with_broken_requester(
        'request_parameters: {limit: "{{ config.api_key | int }}"}'),
    "a duration": MANIFEST.replace(
        "  - {$ref: \"#/definitions/stream\", name: last, $parameters: {resource: last}}",
        "  - {$ref: \"#/definitions/stream\", name: last, $parameters: {resource: last},\n"
        "     incremental_sync: {type: DatetimeBasedCursor, cursor_field: id, datetime_format: '%Y-%m-%d',\n"
        "                        start_datetime: '2024-01-01', step: \"{{ config.api_key }}\","
        " cursor_granularity: P1D}}"),
}


@pytest.mark.parametrize("where", sorted(SCENARIOS))
@pytest.mark.parametrize("written", ["as is", "with a trailing newline", "with spaces around"])
@pytest.mark.parametrize("mode", [("--check",), ("--protocol",)])
def test_no_spelling_of_a_secret_reaches_any_output(run, where, written, mode):
    secret = {"as is": SECRET, "with a trailing newline": SECRET + "\n", "with spaces around": f"  {SECRET} "}[written]
    result = run(SCENARIOS[where], secret, *mode)
    assert result.code in (0, 1, 2), result.stderr
    assert "Traceback" not in result.stderr
    for spelling in SPELLINGS:
        assert spelling not in result.stdout, f"{spelling!r} leaked to stdout: {result.stdout[:2000]}"
        assert spelling not in result.stderr, f"{spelling!r} leaked to stderr: {result.stderr[:2000]}"


def test_a_header_with_a_trailing_newline_is_named_and_the_fix_given(run):
    result = run(with_broken_requester(BEARER), SECRET + "\n", "--protocol")
    assert result.code == 1
    assert ("the value of the header `Authorization` ends with a line break" in result.stderr
            and "remove the whitespace from the config value" in result.stderr)


def test_a_token_http_cannot_carry_is_named_without_a_traceback(run):
    result = run(with_broken_requester(BEARER), "t\u00f6ken\u2713", "--protocol")
    assert result.code == 1 and "Traceback" not in result.stderr and "UnicodeEncodeError" not in result.stdout
    assert "the value of the header `Authorization` has characters HTTP headers cannot carry" in result.stderr
    assert "t\u00f6ken" not in result.stdout + result.stderr
