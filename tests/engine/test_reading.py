"""Every manifest component end to end: a manifest is built and read against the fake HTTP API.

Each test writes a manifest (built from small dicts, dumped as YAML), opens it
with :func:`~framework.engine.connector.open_connector` and reads it with the
protocol read loop, then checks both what the API received and what came out.
Sleeps are recorded, never slept.
"""

from __future__ import annotations

import base64
import copy
import io
from dataclasses import dataclass
from typing import Any

import orjson
import pytest
import yaml
from fakes.api_server import Reply, paged

from framework.engine.connector import open_connector
from framework.engine.selection import select_streams
from framework.protocol.read import read

ITEMS = [{"id": i, "name": f"item-{i}", "price": i * 10, "owner": {"id": i % 3}} for i in range(1, 26)]
NO_WAIT = [{"type": "ConstantBackoffStrategy", "backoff_time_in_seconds": 0}]

SPEC = {
    "type": "Spec",
    "connection_specification": {
        "type": "object",
        "required": ["base_url"],
        "properties": {
            "base_url": {"type": "string"},
            "token": {"type": "string", "airbyte_secret": True},
            "password": {"type": "string", "airbyte_secret": True},
            "client_secret": {"type": "string", "airbyte_secret": True},
            "refresh_token": {"type": "string", "airbyte_secret": True},
            "region": {"type": "string"},
            "page_size": {"type": "integer"},
        },
    },
}


def requester(path: str = "/items", **more: Any) -> dict:
    return {"type": "HttpRequester", "url_base": "{{ config.base_url }}", "path": path, **more}


def selector(*field_path: str, **more: Any) -> dict:
    return {"type": "RecordSelector", "extractor": {"type": "DpathExtractor", "field_path": list(field_path)},
            **more}


def stream(name: str = "items", *, requester_: dict | None = None, selector_: dict | None = None,
           paginator: dict | None = None, schema: dict | None = None, **more: Any) -> dict:
    retriever: dict = {"type": "SimpleRetriever", "requester": requester_ or requester(),
                       "record_selector": selector_ or selector("data")}
    if paginator is not None:
        retriever["paginator"] = paginator
    return {
        "type": "DeclarativeStream",
        "name": name,
        "primary_key": "id",
        "schema_loader": {"type": "InlineSchemaLoader", "schema": schema or {"type": "object"}},
        "retriever": retriever,
        **more,
    }


def source(*streams: dict) -> dict:
    return {
        "version": "6.7.0",
        "type": "DeclarativeSource",
        "check": {"type": "CheckStream", "stream_names": [streams[0]["name"]]},
        "streams": list(streams),
        "spec": copy.deepcopy(SPEC),
    }


def paginator(strategy: dict, **options: Any) -> dict:
    return {"type": "DefaultPaginator", "pagination_strategy": strategy, **options}


def option(inject_into: str, name: str | list[str]) -> dict:
    if isinstance(name, list):
        return {"type": "RequestOption", "inject_into": inject_into, "field_path": name}
    return {"type": "RequestOption", "inject_into": inject_into, "field_name": name}


@dataclass
class Run:
    messages: list[dict]
    stdout: str
    stderr: str
    sleeps: list[float]
    failed: bool
    connector: Any

    def records(self, stream: str = "items") -> list[dict]:
        return [m["record"]["data"] for m in self.messages
                if m["type"] == "RECORD" and m["record"]["stream"] == stream]

    def errors(self) -> list[dict]:
        return [m["trace"]["error"] for m in self.messages
                if m["type"] == "TRACE" and m["trace"]["type"] == "ERROR"]

    def statuses(self, stream: str = "items") -> list[str]:
        return [m["trace"]["stream_status"]["status"] for m in self.messages
                if m["type"] == "TRACE" and m["trace"]["type"] == "STREAM_STATUS"
                and m["trace"]["stream_status"]["stream_descriptor"]["name"] == stream]

    @property
    def output(self) -> str:
        """Everything printed, stdout and stderr."""
        return self.stdout + self.stderr


@pytest.fixture
def run(write_manifest, fake_api):
    """Write ``manifest`` (a dict), read every stream, and return what came out."""

    def run_(manifest: dict, config: dict | None = None, *, files: dict[str, Any] | None = None) -> Run:
        for name, content in (files or {}).items():
            write_manifest(orjson.dumps(content).decode(), name)
        path = write_manifest(yaml.safe_dump(manifest, sort_keys=False))
        sleeps: list[float] = []
        connector = open_connector(path, {"base_url": fake_api.url, **(config or {})}, sleep=sleeps.append)
        out, err = io.BytesIO(), io.StringIO()
        report = read(connector, select_streams(connector.streams, None), {}, out, err, concurrency=1)  # units in plan order
        messages = [orjson.loads(line) for line in out.getvalue().splitlines()]
        return Run(messages, out.getvalue().decode(), err.getvalue(), sleeps, report.failed, connector)

    return run_


# -- requests -----------------------------------------------------------------------


def test_get_renders_parameters_and_headers_from_config_parameters_and_drops_empty_ones(run, fake_api):
    fake_api.route("GET", "/eu/items", {"data": ITEMS[:2]})
    manifest = source(stream(
        requester_=requester(
            "/{{ config.region }}/items",
            request_parameters={"sort": "{{ parameters.sort }}", "limit": "{{ config.page_size }}",
                                "missing": "{{ config.get('nothing') }}", "fixed": "yes"},
            request_headers={"X-Region": "{{ config.region | upper }}", "Accept": "application/json"},
        ),
        **{"$parameters": {"sort": "name"}},
    ))
    result = run(manifest, {"region": "eu", "page_size": 7})
    assert result.records() == ITEMS[:2]
    assert not result.connector.runs_own_code  # a manifest without custom components runs no code of its own
    (request,) = fake_api.requests
    assert request.method == "GET"
    assert request.path == "/eu/items"
    assert request.query == {"sort": ["name"], "limit": ["7"], "fixed": ["yes"]}
    assert request.headers["X-Region"] == "EU"
    assert request.headers["Accept"] == "application/json"


def test_post_sends_an_interpolated_json_body_keeping_numbers_numbers(run, fake_api):
    fake_api.route("POST", "/search", lambda r: {"data": [{"id": 1, "echo": r.json()}]})
    manifest = source(stream(requester_=requester(
        "/search", http_method="POST",
        request_body_json={"query": {"region": "{{ config.region }}", "limit": "{{ config.page_size }}"},
                           "tags": ["a", "{{ config.region }}"]},
    )))
    result = run(manifest, {"region": "us", "page_size": 5})
    body = fake_api.requests[0].json()
    assert body == {"query": {"region": "us", "limit": 5}, "tags": ["a", "us"]}
    assert result.records()[0]["echo"] == body
    assert fake_api.requests[0].headers["Content-Type"].startswith("application/json")


def test_post_sends_an_interpolated_form_body(run, fake_api):
    fake_api.route("POST", "/search", {"data": [{"id": 1}]})
    manifest = source(stream(requester_=requester(
        "/search", http_method="POST", request_body_data={"region": "{{ config.region }}", "kind": "all"},
    )))
    result = run(manifest, {"region": "us"})
    assert result.records() == [{"id": 1}]
    assert fake_api.requests[0].form() == {"region": "us", "kind": "all"}


def json_body(request: Any) -> dict:
    return request.json() if request.body else {}


@pytest.mark.parametrize(
    ("inject_into", "name", "where"),
    [
        ("request_parameter", "page", lambda r: r.param("page")),
        ("header", "X-Page", lambda r: r.headers.get("X-Page")),
        ("body_data", "page", lambda r: r.form().get("page")),
        ("body_json", "page", lambda r: json_body(r).get("page")),
        ("body_json", ["paging", "next", "page"], lambda r: json_body(r).get("paging", {}).get("next", {}).get("page")),
    ],
)
def test_request_options_put_the_page_token_where_they_say(run, fake_api, inject_into, name, where):
    def answer(request):
        page = where(request)
        page = int(page) if page is not None else 1
        return {"data": ITEMS[(page - 1) * 10: page * 10]}

    fake_api.route("POST", "/items", answer)
    manifest = source(stream(
        requester_=requester(http_method="POST"),
        paginator=paginator({"type": "PageIncrement", "page_size": 10, "start_from_page": 1},
                            page_token_option=option(inject_into, name)),
    ))
    result = run(manifest)
    assert [r["id"] for r in result.records()] == [i["id"] for i in ITEMS]
    sent = [where(r) for r in fake_api.requests]
    assert sent == ([None, 2, 3] if inject_into == "body_json" else [None, "2", "3"])  # JSON keeps numbers


def test_page_size_option_goes_into_a_nested_json_body(run, fake_api):
    fake_api.route("POST", "/items", lambda r: {"data": ITEMS[:3]})
    manifest = source(stream(
        requester_=requester(http_method="POST", request_body_json={"filter": {"active": True}}),
        paginator=paginator({"type": "OffsetIncrement", "page_size": 5},
                            page_size_option=option("body_json", ["paging", "limit"]),
                            page_token_option=option("body_json", ["paging", "offset"])),
    ))
    run(manifest)
    assert fake_api.requests[0].json() == {"filter": {"active": True}, "paging": {"limit": 5}}


def test_request_path_does_not_repeat_parameters_the_next_url_carries(run, fake_api):
    def answer(request):
        page = int(request.param("page", "1"))
        following = f"{fake_api.url}/items?per_page=10&page={page + 1}&sort=id" if page < 3 else None
        return {"data": ITEMS[(page - 1) * 10: page * 10], "next": following}

    fake_api.route("GET", "/items", answer)
    manifest = source(stream(
        requester_=requester(request_parameters={"sort": "name"}),
        paginator=paginator({"type": "CursorPagination", "cursor_value": "{{ response.next }}"},
                            page_token_option={"type": "RequestPath"},
                            page_size_option=option("request_parameter", "per_page")),
    ))
    manifest["streams"][0]["retriever"]["paginator"]["pagination_strategy"]["page_size"] = 10
    result = run(manifest)
    assert len(result.records()) == 25
    assert [r.query for r in fake_api.requests] == [
        {"sort": ["name"], "per_page": ["10"]},
        {"per_page": ["10"], "page": ["2"], "sort": ["id", "name"]},  # a different value is still sent
        {"per_page": ["10"], "page": ["3"], "sort": ["id", "name"]},
    ]


def test_request_path_follows_the_next_url_from_the_response(run, fake_api):
    def answer(request):
        page = int(request.param("p", "1"))
        following = f"{fake_api.url}/items?p={page + 1}" if page < 3 else None
        return {"data": ITEMS[(page - 1) * 5: page * 5], "next": following}

    fake_api.route("GET", "/items", answer)
    manifest = source(stream(paginator=paginator(
        {"type": "CursorPagination", "cursor_value": "{{ response.next }}",
         "stop_condition": "{{ not response.next }}"},
        page_token_option={"type": "RequestPath"},
    )))
    result = run(manifest)
    assert [r["id"] for r in result.records()] == list(range(1, 16))
    assert [r.target for r in fake_api.requests] == ["/items", "/items?p=2", "/items?p=3"]


# -- authentication -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("authenticator", "config", "sent"),
    [
        ({"type": "ApiKeyAuthenticator", "api_token": "{{ config.token }}", "header": "X-Api-Key"},
         {"token": "k-123"}, lambda r: r.headers.get("X-Api-Key") == "k-123"),
        ({"type": "ApiKeyAuthenticator", "api_token": "{{ config.token }}",
          "inject_into": option("request_parameter", "api_key")},
         {"token": "k-123"}, lambda r: r.param("api_key") == "k-123"),
        ({"type": "BearerAuthenticator", "api_token": "{{ config.token }}"},
         {"token": "k-123"}, lambda r: r.headers.get("Authorization") == "Bearer k-123"),
        ({"type": "BasicHttpAuthenticator", "username": "{{ config.region }}", "password": "{{ config.password }}"},
         {"region": "user", "password": "pw-9"},
         lambda r: r.headers.get("Authorization") == "Basic " + base64.b64encode(b"user:pw-9").decode()),
    ],
    ids=["api-key-header", "api-key-query", "bearer", "basic"],
)
def test_static_authenticators_put_their_credentials_on_every_request(run, fake_api, authenticator, config, sent):
    def answer(request):
        if not sent(request):
            return Reply(401, {"error": "who are you"})
        return paged(ITEMS, request, style="page")

    fake_api.route("GET", "/items", answer)
    manifest = source(stream(
        requester_=requester(authenticator=authenticator),
        paginator=paginator({"type": "PageIncrement", "page_size": 10, "start_from_page": 1},
                            page_token_option=option("request_parameter", "page"),
                            page_size_option=option("request_parameter", "per_page")),
    ))
    result = run(manifest, config)
    assert len(result.records()) == 25
    assert len(fake_api.requests) == 3 and all(sent(r) for r in fake_api.requests)
    for secret in config.values():
        if secret != "user":
            assert secret not in result.output


def oauth_manifest(**more: Any) -> dict:
    return source(stream(requester_=requester(authenticator={
        "type": "OAuthAuthenticator",
        "token_refresh_endpoint": "{{ config.base_url }}/oauth/token",
        "client_id": "my-client",
        "client_secret": "{{ config.client_secret }}",
        "refresh_token": "{{ config.refresh_token }}",
        **more,
    })))


def test_oauth_gets_a_token_with_the_refresh_token_and_refreshes_it_once_after_a_401(run, fake_api):
    issued = iter(["access-1", "access-2"])
    fake_api.route("POST", "/oauth/token", lambda r: {"access_token": next(issued), "expires_in": 3600})

    def answer(request):
        if request.headers.get("Authorization") != "Bearer access-2":
            return Reply(401, {"error": "token expired"})
        return {"data": ITEMS[:4]}

    fake_api.route("GET", "/items", answer)
    config = {"client_secret": "cs-very-secret", "refresh_token": "rt-very-secret"}
    result = run(oauth_manifest(), config)
    assert len(result.records()) == 4
    token_calls = fake_api.received("/oauth/token")
    assert len(token_calls) == 2
    assert token_calls[0].form() == {"grant_type": "refresh_token", "client_id": "my-client",
                                     "client_secret": "cs-very-secret", "refresh_token": "rt-very-secret"}
    assert [r.headers["Authorization"] for r in fake_api.received("/items")] == ["Bearer access-1",
                                                                                 "Bearer access-2"]
    assert not result.failed and result.sleeps == []


def test_oauth_refuses_after_one_refresh_and_never_shows_the_secrets(run, fake_api):
    issued = iter(["access-1", "access-2", "access-3"])
    fake_api.route("POST", "/oauth/token", lambda r: {"access_token": next(issued)})
    fake_api.route("GET", "/items", Reply(401, {"error": "nope"}))
    config = {"client_secret": "cs-very-secret", "refresh_token": "rt-very-secret"}
    result = run(oauth_manifest(), config)
    assert result.failed
    assert len(fake_api.received("/oauth/token")) == 2  # one fetch, one refresh, no more
    (error,) = result.errors()
    assert error["failure_type"] == "config_error"
    assert "refused the credentials" in error["message"]
    for secret in ("cs-very-secret", "rt-very-secret", "access-1", "access-2"):
        assert secret not in result.output


def test_oauth_token_endpoint_refusal_is_an_authentication_error_without_secrets(run, fake_api):
    fake_api.route("POST", "/oauth/token",
                   Reply(400, {"error": "invalid_grant", "error_description": "rt-very-secret is revoked"}))
    fake_api.route("GET", "/items", {"data": []})
    config = {"client_secret": "cs-very-secret", "refresh_token": "rt-very-secret"}
    result = run(oauth_manifest(), config)
    (error,) = result.errors()
    assert "OAuth access token" in error["message"] and "invalid_grant" in error["message"]
    assert "stream `items`" in error["message"]
    assert fake_api.received("/items") == []
    for secret in ("cs-very-secret", "rt-very-secret"):
        assert secret not in result.output


def test_session_token_logs_in_once_and_sends_the_token(run, fake_api):
    fake_api.route("POST", "/login", lambda r: {"data": {"token": f"session-for-{r.json()['user']}"}})

    def answer(request):
        if request.headers.get("X-Session") != "session-for-ann":
            return Reply(401, {"error": "log in first"})
        return paged(ITEMS, request, style="offset", default_page_size=10)

    fake_api.route("GET", "/items", answer)
    manifest = source(stream(
        requester_=requester(authenticator={
            "type": "SessionTokenAuthenticator",
            "login_requester": requester("/login", http_method="POST",
                                         request_body_json={"user": "ann", "password": "{{ config.password }}"}),
            "session_token_path": ["data", "token"],
            "request_authentication": {"type": "ApiKey", "inject_into": option("header", "X-Session")},
        }),
        paginator=paginator({"type": "OffsetIncrement", "page_size": 10},
                            page_token_option=option("request_parameter", "offset")),
    ))
    result = run(manifest, {"password": "pw-very-secret"})
    assert len(result.records()) == 25
    logins = fake_api.received("/login")
    assert len(logins) == 1 and logins[0].json() == {"user": "ann", "password": "pw-very-secret"}
    assert "pw-very-secret" not in result.output and "session-for-ann" not in result.output


# -- pagination ---------------------------------------------------------------------


def test_cursor_pagination_stops_on_its_stop_condition_and_sends_the_page_size(run, fake_api):
    fake_api.route("GET", "/items", lambda r: paged(ITEMS, r, style="cursor", page_size_param="limit"))
    manifest = source(stream(paginator=paginator(
        {"type": "CursorPagination", "cursor_value": "{{ response.next_cursor }}",
         "stop_condition": "{{ response.next_cursor is none }}", "page_size": 10},
        page_token_option=option("request_parameter", "cursor"),
        page_size_option=option("request_parameter", "limit"),
    )))
    result = run(manifest)
    assert [r["id"] for r in result.records()] == [i["id"] for i in ITEMS]
    assert len(fake_api.requests) == 3
    assert all(r.param("limit") == "10" for r in fake_api.requests)
    assert fake_api.requests[0].param("cursor") is None


def test_page_increment_stops_at_the_first_short_page(run, fake_api):
    fake_api.route("GET", "/items", lambda r: paged(ITEMS, r, style="page", first_page=0))
    manifest = source(stream(paginator=paginator(
        {"type": "PageIncrement", "page_size": "{{ config.page_size }}", "start_from_page": 0,
         "inject_on_first_request": True},
        page_token_option=option("request_parameter", "page"),
        page_size_option=option("request_parameter", "per_page"),
    )))
    result = run(manifest, {"page_size": 10})
    assert len(result.records()) == 25
    assert [r.param("page") for r in fake_api.requests] == ["0", "1", "2"]


def test_offset_increment_reads_until_an_empty_page(run, fake_api):
    fake_api.route("GET", "/items", lambda r: paged(ITEMS[:20], r, style="offset"))
    manifest = source(stream(paginator=paginator(
        {"type": "OffsetIncrement", "page_size": 10},
        page_token_option=option("request_parameter", "offset"),
        page_size_option=option("request_parameter", "per_page"),
    )))
    result = run(manifest)
    assert len(result.records()) == 20
    # 20 items in pages of 10: the third page is empty and ends the reading
    assert [r.param("offset") for r in fake_api.requests] == [None, "10", "20"]


def test_an_api_that_repeats_its_cursor_gives_a_clear_pagination_loop_error(run, fake_api, write_manifest):
    fake_api.route("GET", "/items", {"data": ITEMS[:2], "next_cursor": "same"})
    manifest = source(stream(paginator=paginator(
        {"type": "CursorPagination", "cursor_value": "{{ response.next_cursor }}"},
        page_token_option=option("request_parameter", "cursor"),
    )))
    result = run(manifest)
    assert result.failed
    (error,) = result.errors()
    message = error["message"]
    assert "`same`" in message and "again" in message and "never end" in message
    assert "stream `items`" in message
    assert f"GET {fake_api.url}/items?cursor=same" in message
    assert "manifest.yaml:" in message
    assert len(fake_api.requests) == 2
    assert result.statuses() == ["STARTED", "RUNNING", "INCOMPLETE"]


# -- records ------------------------------------------------------------------------


def test_dpath_extractor_follows_a_nested_path(run, fake_api):
    fake_api.route("GET", "/items", {"result": {"page": {"items": ITEMS[:3]}}})
    result = run(source(stream(selector_=selector("result", "page", "items"))))
    assert result.records() == ITEMS[:3]


def test_dpath_extractor_wildcard_collects_every_match(run, fake_api):
    fake_api.route("GET", "/items", {"groups": [{"members": ITEMS[:2]}, {"members": []}, {"members": ITEMS[2:3]}],
                                     "other": {"members": [{"id": 99}]}})
    result = run(source(stream(selector_=selector("groups", "*", "members"))))
    assert result.records() == ITEMS[:3]


def test_a_record_path_missing_from_the_response_gives_no_records_and_no_error(run, fake_api):
    fake_api.route("GET", "/items", {"unexpected": [1, 2]})
    result = run(source(stream(selector_=selector("data", "items"))))
    assert result.records() == []
    assert not result.failed and result.errors() == []
    assert result.statuses() == ["STARTED", "COMPLETE"]


@pytest.mark.parametrize("body", [Reply(200, {}), Reply(200, []), Reply(200, b"null"), Reply(200, b""),
                                  [{}, {}], [[], {}, 0, None]])
def test_an_empty_body_at_the_root_is_no_record_and_ends_page_numbers(run, fake_api, body):
    pages = {"1": [{"id": 1}, {}, {"id": 2}], "2": body}
    fake_api.route("GET", "/items", lambda r: pages.get(r.param("page") or "1", Reply(400, {"error": "no page"})))
    manifest = source(stream(selector_=selector(), paginator=paginator(
        {"type": "PageIncrement", "page_size": 2, "start_from_page": 1, "inject_on_first_request": True},
        page_token_option=option("request_parameter", "page"))))
    result = run(manifest)
    assert result.records() == [{"id": 1}, {"id": 2}]
    assert [r.param("page") for r in fake_api.requests] == ["1", "2"]
    assert result.statuses() == ["STARTED", "RUNNING", "COMPLETE"] and not result.failed


def test_a_failing_next_page_token_fails_the_stream_after_the_page_is_out(run, fake_api):
    fake_api.route("GET", "/items", lambda r: {"data": [{"id": 2}]} if r.param("cursor") else
                   {"data": [{"id": 1}], "meta": {"next": "b"}})
    manifest = source(stream(paginator=paginator(
        {"type": "CursorPagination", "cursor_value": "{{ response['meta']['next'] }}"},
        page_token_option=option("request_parameter", "cursor"))))
    result = run(manifest)
    assert result.records() == [{"id": 1}, {"id": 2}]
    assert result.failed
    (error,) = result.errors()
    assert "'meta'" in error["message"] and "cursor=b" in error["message"]


def test_record_filter_keeps_the_records_its_condition_accepts(run, fake_api):
    fake_api.route("GET", "/items", {"data": ITEMS})
    result = run(source(stream(selector_=selector(
        "data", record_filter={"type": "RecordFilter",
                               "condition": "{{ record.price >= config.page_size and record.owner.id == 1 }}"}))),
        {"page_size": 100})
    assert [r["id"] for r in result.records()] == [10, 13, 16, 19, 22, 25]


def test_add_fields_and_remove_fields_change_every_record(run, fake_api):
    fake_api.route("GET", "/items", {"data": copy.deepcopy(ITEMS[:2])})
    manifest = source(stream(transformations=[
        {"type": "AddFields", "fields": [
            {"type": "AddedFieldDefinition", "path": ["region"], "value": "{{ config.region }}"},
            {"type": "AddedFieldDefinition", "path": ["meta", "double"], "value": "{{ record.price * 2 }}",
             "value_type": "integer"},
            {"type": "AddedFieldDefinition", "path": ["owner_id"], "value": "{{ record.owner.id }}"},
        ]},
        {"type": "RemoveFields", "field_pointers": [["owner"], ["price"]]},
    ]))
    result = run(manifest, {"region": "eu"})
    assert result.records() == [
        {"id": 1, "name": "item-1", "region": "eu", "meta": {"double": 20}, "owner_id": 1},
        {"id": 2, "name": "item-2", "region": "eu", "meta": {"double": 40}, "owner_id": 2},
    ]


SCHEMA = {"type": "object", "properties": {"id": {"type": "integer"}, "name": {"type": "string"}}}


def test_inline_and_file_schemas_reach_the_catalog(run, fake_api, write_manifest):
    fake_api.route("GET", "/items", {"data": []})
    from_file = stream("filed")
    from_file["schema_loader"] = {"type": "JsonFileSchemaLoader", "file_path": "schemas/{{ parameters.kind }}.json",
                                  "$parameters": {"kind": "thing"}}
    shared = {"type": "object", "properties": {"when": {"type": "string", "format": "date-time"}}}
    with_ref = {"type": "object", "properties": {"id": {"type": "integer"}, "at": {"$ref": "shared.json"}}}
    result = run(source(stream(schema=SCHEMA), from_file),
                 files={"schemas/thing.json": with_ref, "schemas/shared.json": shared})
    streams = result.connector.streams
    assert streams["items"].catalog_entry()["json_schema"] == SCHEMA
    assert streams["filed"].catalog_entry()["json_schema"] == {
        "type": "object", "properties": {"id": {"type": "integer"}, "at": shared}}


def test_schema_normalization_casts_records_to_the_schema(run, fake_api):
    fake_api.route("GET", "/items", {"data": [{"id": "7", "name": 8}]})
    result = run(source(stream(schema=SCHEMA, selector_=selector("data", schema_normalization="Default"))))
    assert result.records() == [{"id": 7, "name": "8"}]


# -- error handling -----------------------------------------------------------------


def handled(*filters: dict, **more: Any) -> dict:
    return source(stream(requester_=requester(error_handler={
        "type": "DefaultErrorHandler", "response_filters": list(filters), **more})))


def test_ignore_404_reads_zero_records_and_completes(run, fake_api):
    result = run(handled({"type": "HttpResponseFilter", "action": "IGNORE", "http_codes": [404]}))
    assert result.records() == [] and not result.failed
    assert result.statuses() == ["STARTED", "COMPLETE"]
    assert len(fake_api.requests) == 1


def test_fail_with_an_error_message_reports_that_message(run, fake_api):
    fake_api.route("GET", "/items", Reply(403, {"error": "plan too small", "code": 77}))
    result = run(handled({"type": "HttpResponseFilter", "action": "FAIL", "http_codes": [403],
                          "failure_type": "config_error",
                          "error_message": "upgrade your plan (code {{ response.code }})"}))
    assert result.failed
    (error,) = result.errors()
    assert error["failure_type"] == "config_error"
    assert error["message"].startswith("stream `items`: upgrade your plan (code 77)")
    assert f"GET {fake_api.url}/items" in error["message"] and "manifest.yaml:" in error["message"]
    assert len(fake_api.requests) == 1
    assert "upgrade your plan (code 77)" in result.stderr


def test_retry_action_retries_a_status_that_would_fail(run, fake_api):
    fake_api.route("GET", "/items", {"data": ITEMS[:1]})
    fake_api.fault(status=418, times=2)
    result = run(handled({"type": "HttpResponseFilter", "action": "RETRY", "http_codes": [418]},
                         backoff_strategies=NO_WAIT))
    assert result.records() == ITEMS[:1] and not result.failed
    assert len(fake_api.requests) == 3 and result.sleeps == [0, 0]


def test_rate_limited_waits_what_retry_after_says(run, fake_api):
    fake_api.route("GET", "/items", {"data": ITEMS[:1]})
    fake_api.fault(status=420, times=3, headers={"Retry-After": "0"})
    result = run(handled({"type": "HttpResponseFilter", "action": "RATE_LIMITED", "http_codes": [420]},
                         max_retries=1))
    # rate limits are not counted as retries: three in a row pass with max_retries 1
    assert result.records() == ITEMS[:1] and not result.failed
    assert result.sleeps == [0, 0, 0]


def test_server_errors_are_retried_by_default_with_the_default_backoff(run, fake_api):
    fake_api.route("GET", "/items", {"data": ITEMS[:1]})
    fake_api.fault(status=503, times=2)
    result = run(source(stream()))
    assert result.records() == ITEMS[:1]
    assert result.sleeps == [10.0, 20.0]  # 5 * 2**attempt


def test_server_errors_give_up_after_max_retries(run, fake_api):
    fake_api.route("GET", "/items", Reply(502, {"error": "bad gateway"}))
    result = run(handled(max_retries=2, backoff_strategies=NO_WAIT))
    (error,) = result.errors()
    assert error["failure_type"] == "transient_error"
    assert "gave up after 3 attempts" in error["message"] and "HTTP 502" in error["message"]
    assert len(fake_api.requests) == 3


def test_dropped_connections_are_retried(run, fake_api):
    fake_api.route("GET", "/items", {"data": ITEMS[:2]})
    fake_api.fault(close_connection=True, times=2)
    result = run(handled(backoff_strategies=NO_WAIT))
    assert result.records() == ITEMS[:2] and not result.failed
    assert len(fake_api.requests) == 3


def test_an_error_message_contains_filter_matches_the_body(run, fake_api):
    fake_api.route("GET", "/items", Reply(200, {"error": "quota exhausted", "data": []}))
    result = run(handled({"type": "HttpResponseFilter", "action": "FAIL",
                          "error_message_contains": "quota exhausted"}))
    (error,) = result.errors()
    assert "quota exhausted" in error["message"]



def test_a_constant_json_body_is_not_changed_by_the_options_put_into_it(run, fake_api):
    def answer(request):
        body = request.json()
        offset = body["paging"].get("offset", 0)
        region = body["region"]
        return {"data": [{"id": f"{region}-{i}"} for i in range(offset, min(offset + 2, 3))]}

    fake_api.route("POST", "/items", answer)
    manifest = source(stream(
        requester_=requester(http_method="POST", request_body_json={"paging": {"sort": "id"}}),
        paginator=paginator({"type": "OffsetIncrement", "page_size": 2},
                            page_token_option=option("body_json", ["paging", "offset"])),
    ))
    manifest["streams"][0]["retriever"]["partition_router"] = {
        "type": "ListPartitionRouter", "values": ["eu", "us"], "cursor_field": "region",
        "request_option": option("body_json", "region")}
    result = run(manifest)
    assert [r["id"] for r in result.records()] == ["eu-0", "eu-1", "eu-2", "us-0", "us-1", "us-2"]
    assert [r.json() for r in fake_api.requests] == [
        {"paging": {"sort": "id"}, "region": "eu"},
        {"paging": {"sort": "id", "offset": 2}, "region": "eu"},
        {"paging": {"sort": "id"}, "region": "us"},
        {"paging": {"sort": "id", "offset": 2}, "region": "us"},
    ]


def test_a_session_token_sent_in_the_query_is_masked_in_failures(run, fake_api):
    fake_api.route("POST", "/login", {"token": "session-abc-123-secret"})
    fake_api.route("GET", "/items", Reply(200, "<html>maintenance</html>", {"Content-Type": "text/html"}))
    manifest = source(stream(requester_=requester(authenticator={
        "type": "SessionTokenAuthenticator",
        "login_requester": requester("/login", http_method="POST"),
        "session_token_path": ["token"],
        "request_authentication": {"type": "ApiKey", "inject_into": option("request_parameter", "session")},
    })))
    result = run(manifest)
    (error,) = result.errors()
    assert fake_api.received("/items")[0].param("session") == "session-abc-123-secret"
    assert "not JSON" in error["message"] and f"GET {fake_api.url}/items?session=****" in error["message"]
    assert "session-abc-123-secret" not in result.output


def test_429_is_rate_limited_by_default_and_honours_retry_after(run, fake_api):
    fake_api.route("GET", "/items", {"data": ITEMS[:1]})
    fake_api.fault(status=429, times=2, headers={"Retry-After": "0"})
    result = run(source(stream()))
    assert result.records() == ITEMS[:1] and result.sleeps == [0, 0]
