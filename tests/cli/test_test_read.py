"""``run-manifest --test-read``: a new user's mistakes, each flagged with its fix.

A small helpdesk API (tickets under ``tickets``, a ``meta.next_cursor``
cursor, pages counted from 1, ``updated_at`` filtered by ``since``) and a
manifest written right; each test breaks it the way a user did and checks
what the test read says, and that the right manifest reads clean.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from fakes.api_server import FakeApi, Reply

from framework.cli.run import main

TICKETS = [{"id": i, "subject": f"ticket {i}", "updated_at": f"2024-01-{1 + i % 28:02d}T00:00:00Z"}
           for i in range(1, 26)]


def _cursor_page(request):
    start = int(request.param("cursor") or 0)
    items = TICKETS[start:start + 10]
    following = start + 10 if start + 10 < len(TICKETS) else None
    return {"tickets": items, "meta": {"next_cursor": str(following) if following is not None else None}}


def _numbered_page(request):
    page = max(1, int(request.param("page") or 1))  # page 0 is answered as page 1, as many APIs do
    return {"tickets": TICKETS[(page - 1) * 10: page * 10]}


@pytest.fixture()
def api():
    with FakeApi() as fake:
        fake.route("GET", "/cursor/tickets", _cursor_page)
        fake.route("GET", "/pages/tickets", _numbered_page)
        fake.route("GET", "/html", lambda r: Reply(200, b"<html></html>", {"Content-Type": "text/html"}))
        yield fake


MANIFEST = """\
version: 6.0.0
type: DeclarativeSource
check: {{type: CheckStream, stream_names: [tickets]}}
spec:
  type: Spec
  connection_specification:
    type: object
    required: [api_token]
    properties:
      api_token: {{type: string, airbyte_secret: true}}
streams:
  - type: DeclarativeStream
    name: tickets
    primary_key: {primary_key}
    schema_loader:
      type: InlineSchemaLoader
      schema:
        type: object
        properties:
          id: {{type: integer}}
          subject: {{type: string}}
          updated_at: {{type: string, format: date-time}}
    retriever:
      type: SimpleRetriever
      requester:
        type: HttpRequester
        url_base: {url}
        path: {path}
        authenticator: {{type: BearerAuthenticator, api_token: "{{{{ config['api_token'] }}}}"}}
      record_selector:
        type: RecordSelector
        extractor: {{type: DpathExtractor, field_path: {field_path}}}
      paginator:
{paginator}
"""

CURSOR_PAGINATOR = """\
        type: DefaultPaginator
        page_token_option: {{type: RequestOption, inject_into: request_parameter, field_name: cursor}}
        pagination_strategy:
          type: CursorPagination
          cursor_value: "{cursor_value}"
          stop_condition: "{{{{ not response.meta.next_cursor }}}}"
"""

PAGE_PAGINATOR = """\
        type: DefaultPaginator
        page_token_option: {{type: RequestOption, inject_into: request_parameter, field_name: page}}
        pagination_strategy:
          type: PageIncrement
          page_size: 10
{start}"""


def _write(tmp_path: Path, api, *, field_path="[tickets]", path="/cursor/tickets", primary_key="id",
           paginator=None) -> tuple[str, str]:
    paginator = paginator or CURSOR_PAGINATOR.format(cursor_value="{{ response.meta.next_cursor }}")
    manifest = tmp_path / "manifest.yaml"
    manifest.write_text(MANIFEST.format(url=api.url, path=path, field_path=field_path, primary_key=primary_key,
                                        paginator=paginator))
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"api_token": "s3cret-token"}))
    return str(manifest), str(config)


def _test_read(manifest: str, config: str, *extra: str) -> tuple[int, str]:
    out = io.BytesIO()
    code = main([manifest, "--config", config, "--test-read", *extra], out=out)
    return code, out.getvalue().decode()


def test_a_right_manifest_reads_clean_and_shows_requests_and_records(tmp_path, api):
    code, text = _test_read(*_write(tmp_path, api))
    assert code == 0, text
    assert "page 1: 10 records" in text and "page 3: 5 records" in text
    assert "GET " in text and "/cursor/tickets" in text and "-> 200 application/json" in text
    assert '"subject":"ticket 1"' in text
    assert "nothing looks wrong" in text
    assert "s3cret-token" not in text
    # the manifest sets no concurrency_level: what a sync would keep in flight, and how to change it
    assert "a sync keeps at most 2 (the manifest sets no concurrency_level" in text


def test_the_concurrency_flag_is_what_the_test_read_says_a_sync_keeps_in_flight(tmp_path, api):
    code, text = _test_read(*_write(tmp_path, api), "--concurrency", "auto")
    assert code == 0, text
    assert "a sync keeps at most auto (from 2, at most 64)" in text


def test_an_extractor_on_the_wrong_key_names_the_list(tmp_path, api):
    code, text = _test_read(*_write(tmp_path, api, field_path="[data]"))
    assert code == 1
    assert "field_path: ['data'] found no records" in text
    assert "list of 10 objects at `tickets`" in text
    assert "fix: set the record selector's extractor to field_path: ['tickets']" in text


def test_a_next_page_value_that_renders_empty_names_the_field(tmp_path, api):
    paginator = CURSOR_PAGINATOR.format(cursor_value="{{ response.next_cursor }}")
    code, text = _test_read(*_write(tmp_path, api, paginator=paginator))
    assert code == 1
    assert "paging stopped after page 1, but the response has `meta.next_cursor` = 10" in text
    assert "cursor_value: \"{{ response.meta.next_cursor }}\"" in text


def test_a_page_counter_from_zero_on_pages_from_one_is_a_repeated_page(tmp_path, api):
    code, text = _test_read(*_write(tmp_path, api, path="/pages/tickets",
                                    paginator=PAGE_PAGINATOR.format(start="")))
    assert code == 1
    assert "pages 1 and 2 have the same 10 records" in text
    assert "set start_from_page: 1" in text
    fixed = PAGE_PAGINATOR.format(start="          start_from_page: 1\n")
    code, text = _test_read(*_write(tmp_path, api, path="/pages/tickets", paginator=fixed))
    assert code == 0, text


def test_a_primary_key_typo_is_flagged_with_the_field_the_records_have(tmp_path, api):
    code, text = _test_read(*_write(tmp_path, api, primary_key="ticket_id"))
    assert code == 1
    assert "25 of 25 records have no primary key `ticket_id`" in text or "records have no primary key" in text


def test_pages_limits_the_read(tmp_path, api):
    code, text = _test_read(*_write(tmp_path, api), "--pages", "1")
    assert code == 0, text
    assert "page 2" not in text and "(more pages follow)" in text
    assert len(api.received("/cursor/tickets")) == 2  # the page shown, and the one that told more follow


def _protocol(manifest: str, config: str, capsys) -> tuple[int, list[dict], str]:
    out = io.BytesIO()
    code = main([manifest, "--config", config, "--protocol"], out=out)
    messages = [json.loads(line) for line in out.getvalue().splitlines() if line.strip()]
    return code, messages, capsys.readouterr().err


def test_a_normal_run_warns_of_a_page_read_twice_and_a_missing_key(tmp_path, api, capsys):
    manifest, config = _write(tmp_path, api, path="/pages/tickets", primary_key="ticket_id",
                              paginator=PAGE_PAGINATOR.format(start=""))
    code, messages, err = _protocol(manifest, config, capsys)
    assert code == 0  # warnings, not failures: the records still land
    warnings = [m["log"]["message"] for m in messages if m["type"] == "LOG" and m["log"]["level"] == "WARN"]
    assert any("pages 1 and 2 have the same 10 records" in w and "start_from_page: 1" in w for w in warnings)
    assert any("have no primary key `ticket_id`" in w for w in warnings)
    assert "run-manifest: warning: tickets: pages 1 and 2 have the same 10 records" in err


def test_a_normal_run_of_a_right_manifest_warns_of_nothing(tmp_path, api, capsys):
    code, messages, err = _protocol(*_write(tmp_path, api), capsys)
    assert code == 0
    assert not [m for m in messages if m["type"] == "LOG" and m["log"]["level"] == "WARN"]
    assert "warning" not in err


def test_a_normal_run_warns_of_a_wrong_field_path_and_a_next_page_value_that_renders_empty(tmp_path, api, capsys):
    code, messages, err = _protocol(*_write(tmp_path, api, field_path="[data]"), capsys)
    assert code == 0
    assert ("run-manifest: warning: tickets: field_path: ['data'] found no records, but the response has a list of "
            "10 objects at `tickets`; fix: set the record selector's extractor to field_path: ['tickets']") in err
    paginator = CURSOR_PAGINATOR.format(cursor_value="{{ response.next_cursor }}")
    code, messages, err = _protocol(*_write(tmp_path, api, paginator=paginator), capsys)
    assert code == 0
    warnings = [m["log"]["message"] for m in messages if m["type"] == "LOG" and m["log"]["level"] == "WARN"]
    assert len(warnings) == 1 and "paging stopped after page 1, but the response has `meta.next_cursor` = 10" in (
        warnings[0]) and 'cursor_value: "{{ response.meta.next_cursor }}"' in warnings[0]
    assert f"run-manifest: warning: {warnings[0]}" in err


def test_an_optional_config_value_airbyte_would_send_as_none_is_named(tmp_path, api):
    manifest, config = _write(tmp_path, api)
    text = Path(manifest).read_text().replace(
        "        path: /cursor/tickets\n",
        "        path: /cursor/tickets\n"
        "        request_parameters:\n"
        "          lang: \"{{ config.get('lang') }}\"\n"
        "          sort: \"{{ config['sort'] }}\"\n"
        "          region: \"{{ config.get('region', 'eu') }}\"\n")
    Path(manifest).write_text(text)
    code, out = _test_read(manifest, config)
    assert code == 1, out
    assert "request parameter `lang` is left out of the requests" in out
    assert "airbyte-cdk sends such a parameter as the text None: `lang=None`" in out
    assert "`sort`" not in out and "`region`" not in out  # a missing key: airbyte-cdk leaves it out too
    assert api.requests[0].param("lang") is None and api.requests[0].param("region") == "eu"
