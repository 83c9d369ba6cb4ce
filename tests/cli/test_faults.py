"""Faults on the wire (a proxy between run-manifest and the API): retried, reported, never a traceback or a secret.

Each case puts :class:`~fakes.fault_proxy.FaultProxy` faults in front of the
fake API and runs ``run-manifest --protocol`` as a user would; a passing fault
must leave every record read once, a lasting one a failed stream (exit 1) whose
message names the request, with the secret masked everywhere.
"""

from __future__ import annotations

import io
import json

import pytest
from fakes.api_server import FakeApi
from fakes.fault_proxy import Fault, FaultProxy

from framework.cli.run import main

TOKEN = "s3cret-wire-token"
TICKETS = [{"id": i, "subject": "x" * 200} for i in range(1, 41)]

MANIFEST = """\
version: 6.0.0
type: DeclarativeSource
check: {{type: CheckStream, stream_names: [tickets]}}
spec:
  type: Spec
  connection_specification:
    type: object
    properties: {{api_token: {{type: string, airbyte_secret: true}}}}
streams:
  - type: DeclarativeStream
    name: tickets
    primary_key: id
    schema_loader: {{type: InlineSchemaLoader, schema: {{type: object}}}}
    retriever:
      type: SimpleRetriever
      requester:
        type: HttpRequester
        url_base: {url}
        path: /tickets
        authenticator: {{type: BearerAuthenticator, api_token: "{{{{ config['api_token'] }}}}"}}
        error_handler:
          type: DefaultErrorHandler
          max_retries: 3
          backoff_strategies: [{{type: ConstantBackoffStrategy, backoff_time_in_seconds: 0.05}}]
      record_selector: {{type: RecordSelector, extractor: {{type: DpathExtractor, field_path: [tickets]}}}}
      paginator:
        type: DefaultPaginator
        page_token_option: {{type: RequestOption, inject_into: request_parameter, field_name: page}}
        pagination_strategy: {{type: PageIncrement, page_size: 20, start_from_page: 1}}
"""


def _page(request):
    page = int(request.param("page") or 1)
    return {"tickets": TICKETS[(page - 1) * 20: page * 20]}


@pytest.fixture()
def wire(tmp_path):
    with FakeApi() as api, FaultProxy(int(api.url.rsplit(":", 1)[1])) as proxy:
        api.route("GET", "/tickets", _page)
        manifest = tmp_path / "manifest.yaml"
        manifest.write_text(MANIFEST.format(url=proxy.url))
        config = tmp_path / "config.json"
        config.write_text(json.dumps({"api_token": TOKEN}))

        def run() -> tuple[int, list[dict], str]:
            out = io.BytesIO()
            code = main([str(manifest), "--config", str(config), "--protocol"], out=out)
            messages = [json.loads(line) for line in out.getvalue().splitlines() if line.strip()]
            return code, messages, out.getvalue().decode()

        yield proxy, api, run


def _ids(messages: list[dict]) -> list[int]:
    return [m["record"]["data"]["id"] for m in messages if m["type"] == "RECORD"]


@pytest.mark.parametrize("fault", [
    Fault("truncate", after_bytes=300),  # headers and part of the body, then the connection closes
    Fault("reset", after_bytes=300),  # part of the body, then a reset
    Fault("truncate", after_bytes=0),  # closed before any byte of the answer
    Fault("refuse"),  # reset before the request is read
], ids=["truncated-body", "reset-mid-body", "closed-without-answer", "refused"])
def test_a_passing_fault_is_retried_and_every_record_is_read_once(wire, fault, capsys):
    proxy, api, run = wire
    proxy.inject(fault)
    code, messages, text = run()
    err = capsys.readouterr().err
    assert code == 0, text + err
    assert _ids(messages) == list(range(1, 41))
    assert proxy.applied == [fault]
    assert "retrying GET" in err and "Traceback" not in err
    assert TOKEN not in text + err


def test_a_lasting_fault_fails_the_stream_with_the_request_named_and_no_secret(wire, capsys):
    proxy, api, run = wire
    proxy.inject(*[Fault("truncate", after_bytes=300)] * 10)
    code, messages, text = run()
    err = capsys.readouterr().err
    assert code == 1
    traces = [m["trace"] for m in messages if m["type"] == "TRACE" and m["trace"]["type"] == "ERROR"]
    assert len(traces) == 1
    message = traces[0]["error"]["message"]
    assert "tickets" in message and "GET " in message and "/tickets" in message
    assert "Traceback" not in err and TOKEN not in text + err
    assert len(proxy.applied) == 4  # the first attempt and max_retries: 3
