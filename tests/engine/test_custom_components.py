"""Custom components end to end in protocol mode: a manifest whose every native custom kind comes from a
components.py beside it, read twice against the fake API; errors raised in user code; the gate."""

from __future__ import annotations

import io
import textwrap

import orjson
import pytest
import yaml
from fakes.api_server import Reply, paged

from framework.engine.connector import open_connector
from framework.engine.selection import parse_state, select_streams
from framework.errors import ConfigError
from framework.protocol.read import read

COMPONENTS = '''
from dataclasses import dataclass
from typing import Any, Mapping, Optional


class Items:
    def extract_records(self, response):
        return response.json()["data"]


class EvenOnly:
    def filter_records(self, records, stream_state, stream_slice=None, next_page_token=None):
        return [r for r in records if r["id"] % 2 == 0]


class Tag:
    def transform(self, record, config=None, stream_state=None, stream_slice=None):
        record["tag"] = stream_slice["region"] + "-" + str(record["id"])


class Pages:
    def __init__(self):
        self.calls = 0

    @property
    def initial_token(self):
        return None

    def next_page_token(self, response, last_page_size, last_record, last_page_token_value=None):
        body = response.json()
        return body["page"] + 1 if body["page"] < body["total_pages"] else None


@dataclass
class Regions:
    regions: list

    def stream_slices(self):
        for region in self.regions:
            yield {"region": region}


class Schema:
    def get_json_schema(self):
        return {"type": "object", "properties": {"id": {"type": "integer"}, "tag": {"type": "string"},
                                                 "updated_at": {"type": "string"}}}


@dataclass
class Auth:
    config: Mapping[str, Any]

    def get_auth_header(self):
        return {"X-Key": self.config["token"]}


class Errors:
    max_retries = 3

    def interpret_response(self, response):
        class Resolution:
            response_action = "RETRY" if response.status_code == 503 else "SUCCESS"
            failure_type = "transient_error"
            error_message = "busy"
        return Resolution()

    def backoff_time(self, response, attempt_count):
        return 0.5 * attempt_count


class Wait:
    def backoff_time(self, response, attempt_count):
        return 0.25 * attempt_count


@dataclass
class OldState:
    parameters: Mapping[str, Any]

    def should_migrate(self, stream_state):
        return "last" in stream_state

    def migrate(self, stream_state):
        return {"updated_at": stream_state["last"]}


class Exploding:
    def extract_records(self, response):
        return parse(response.json())


def parse(body):
    return [item["missing"] for item in body["data"]]
'''


def items(region: str) -> list[dict]:
    return [{"id": i, "updated_at": f"2024-01-{i:02d}T00:00:00Z", "region": region} for i in range(1, 13)]


def custom(kind: str, name: str, **options) -> dict:
    return {"type": kind, "class_name": f"components.{name}", **options}


def manifest(extractor: str = "Items", error_handler: dict | None = None) -> dict:
    stream = {
        "type": "DeclarativeStream",
        "name": "items",
        "primary_key": "id",
        "schema_loader": custom("CustomSchemaLoader", "Schema"),
        "incremental_sync": {"type": "DatetimeBasedCursor", "cursor_field": "updated_at",
                             "datetime_format": "%Y-%m-%dT%H:%M:%SZ", "is_client_side_incremental": True,
                             "start_datetime": "2024-01-01T00:00:00Z", "end_datetime": "2024-02-01T00:00:00Z"},
        "retriever": {
            "type": "SimpleRetriever",
            "requester": {"type": "HttpRequester", "url_base": "{{ config.base_url }}",
                          "path": "/{{ stream_partition.region }}/items",
                          "authenticator": custom("CustomAuthenticator", "Auth"),
                          "error_handler": error_handler or custom("CustomErrorHandler", "Errors")},
            "record_selector": {"type": "RecordSelector", "extractor": custom("CustomRecordExtractor", extractor),
                                "record_filter": custom("CustomRecordFilter", "EvenOnly")},
            "paginator": {"type": "DefaultPaginator", "pagination_strategy": custom("CustomPaginationStrategy", "Pages"),
                          "page_token_option": {"type": "RequestOption", "inject_into": "request_parameter",
                                                "field_name": "page"}},
            "partition_router": custom("CustomPartitionRouter", "Regions", regions=["eu", "us"]),
        },
        "transformations": [custom("CustomTransformation", "Tag")],
        "state_migrations": [custom("CustomStateMigration", "OldState")],
    }
    return {"version": "6.7.0", "type": "DeclarativeSource",
            "check": {"type": "CheckStream", "stream_names": ["items"]}, "streams": [stream]}


@pytest.fixture
def shop(tmp_path, fake_api):
    for region in ("eu", "us"):
        fake_api.route("GET", f"/{region}/items", lambda r, region=region: paged(items(region), r, default_page_size=5))
    (tmp_path / "components.py").write_text(textwrap.dedent(COMPONENTS))

    def write(document: dict) -> str:
        path = tmp_path / "manifest.yaml"
        path.write_text(yaml.safe_dump(document, sort_keys=False))
        return str(path)

    return write


def sync(path: str, base_url: str, state: dict | None = None, *, allow: bool | None = True):
    sleeps: list[float] = []
    connector = open_connector(path, {"base_url": base_url, "token": "t0ken-s3cret"}, sleep=sleeps.append,
                               allow_custom_code=allow)
    out, err = io.BytesIO(), io.StringIO()
    states = parse_state(state) if state else {}
    report = read(connector, select_streams(connector.streams, None), states, out, err, concurrency=1)  # units in plan order
    messages = [orjson.loads(line) for line in out.getvalue().splitlines()]
    return messages, err.getvalue(), report, sleeps


def records(messages: list[dict]) -> list[dict]:
    return [m["record"]["data"] for m in messages if m["type"] == "RECORD"]


def last_state(messages: list[dict]) -> dict:
    return [m["state"] for m in messages if m["type"] == "STATE"][-1]


def test_every_native_kind_reads_twice_with_per_partition_state(shop, fake_api):
    path = shop(manifest())
    fake_api.fault(status=503, times=1, path="/eu/items")
    messages, err, report, sleeps = sync(path, fake_api.url)
    assert not report.failed, err
    got = records(messages)
    assert [r["tag"] for r in got] == [f"{region}-{i}" for region in ("eu", "us") for i in range(2, 13, 2)]
    assert sleeps == [0.5]  # one retry of the custom error handler, waited as it said
    requests = fake_api.received()
    assert all(r.headers.get("X-Key") == "t0ken-s3cret" for r in requests)
    assert [r.param("page") for r in requests if r.path == "/us/items"] == [None, "2", "3"]
    state = last_state(messages)
    saved = state["stream"]["stream_state"]
    assert {tuple(s["partition"].items()): s["cursor"] for s in saved["states"]} == {
        (("region", "eu"),): {"updated_at": "2024-01-12T00:00:00Z"},
        (("region", "us"),): {"updated_at": "2024-01-12T00:00:00Z"}}

    # The second sync starts from that state: nothing newer, so nothing (the client-side cursor drops the rest).
    again, err, report, _ = sync(path, fake_api.url, [state])
    assert not report.failed, err
    assert records(again) == [r for r in got if r["updated_at"] >= "2024-01-12T00:00:00Z"]


def test_a_state_migration_turns_an_old_state_into_the_current_shape_and_a_custom_backoff_waits(shop, fake_api):
    handler = {"type": "DefaultErrorHandler", "backoff_strategies": [custom("CustomBackoffStrategy", "Wait")]}
    path = shop(manifest(error_handler=handler))
    fake_api.fault(status=503, times=2, path="/us/items")
    old = {"type": "STREAM", "stream": {"stream_descriptor": {"name": "items"},
                                        "stream_state": {"last": "2024-01-10T00:00:00Z"}}}
    messages, err, report, sleeps = sync(path, fake_api.url, [old])
    assert not report.failed, err
    assert sorted({r["id"] for r in records(messages)}) == [10, 12]
    assert sleeps == [0.25, 0.5]


def test_an_exception_in_user_code_fails_the_stream_naming_kind_class_place_and_stream_with_its_traceback(
        shop, fake_api):
    path = shop(manifest(extractor="Exploding"))
    messages, err, report, _ = sync(path, fake_api.url)
    assert report.failed
    trace = [m["trace"]["error"] for m in messages if m["type"] == "TRACE" and m["trace"]["type"] == "ERROR"][0]
    message = trace["message"]
    assert "stream `items`" in message
    assert "the record extractor `components.Exploding` raised KeyError in `extract_records`: 'missing'" in message
    assert "manifest.yaml:" in message
    assert "in parse" in err and "item[\"missing\"]" in err  # the user's traceback on stderr
    assert "t0ken-s3cret" not in err + message


def test_shipped_code_is_refused_unless_allowed(shop, fake_api, monkeypatch):
    path = shop(manifest())
    monkeypatch.delenv("FRAMEWORK_ALLOW_CUSTOM_CODE", raising=False)
    monkeypatch.delenv("AIRBYTE_ENABLE_UNSAFE_CODE", raising=False)
    with pytest.raises(ConfigError, match=r"components.py, shipped with the manifest \(manifest: .*manifest.yaml:\d+"):
        sync(path, fake_api.url, allow=None)
    assert fake_api.received() == []
    monkeypatch.setenv("AIRBYTE_ENABLE_UNSAFE_CODE", "true")
    messages, err, report, _ = sync(path, fake_api.url, allow=None)
    assert not report.failed, err


def test_a_worker_builds_the_connector_from_the_shipped_package_files_when_the_folder_is_gone(tmp_path, fake_api):
    """A ``source_<name>/`` package: the driver records the modules it loaded; a worker without the folder
    writes them to a temporary folder in the same layout and reads the same records."""
    import pickle
    import shutil

    from framework.engine.plan import open_sync
    from framework.engine.worker import ConnectorSource, worker_connector

    package = tmp_path / "source_things"
    (package / "parts").mkdir(parents=True)
    (package / "__init__.py").write_text("raise RuntimeError('the package __init__ is not run')\n")
    (package / "parts" / "__init__.py").write_text("")
    (package / "parts" / "base.py").write_text("SUFFIX = '!'\n")
    (package / "components.py").write_text(textwrap.dedent('''
        from .parts.base import SUFFIX


        class Items:
            def extract_records(self, response):
                return [dict(item, name=str(item["id"]) + SUFFIX) for item in response.json()["data"]]
    '''))
    document = manifest()
    stream = document["streams"][0]
    stream["retriever"]["record_selector"] = {"type": "RecordSelector", "extractor": {
        "type": "CustomRecordExtractor", "class_name": "source_things.components.Items"}}
    stream["retriever"]["requester"].pop("authenticator")
    stream["retriever"]["requester"].pop("error_handler")
    stream["schema_loader"] = {"type": "InlineSchemaLoader", "schema": {"type": "object"}}
    for key in ("transformations", "state_migrations", "incremental_sync"):
        stream.pop(key)
    stream["retriever"]["paginator"] = {"type": "NoPagination"}
    stream["retriever"]["partition_router"] = {"type": "ListPartitionRouter", "cursor_field": "region",
                                               "values": ["eu"]}
    fake_api.route("GET", "/eu/items", {"data": [{"id": 1}, {"id": 2}]})
    path = package / "manifest.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))

    driver = open_connector(str(path), {"base_url": fake_api.url}, allow_custom_code=True)
    assert driver.runs_own_code  # so its driver leaves pyarrow's pandas lookup as it is (typed/pandas_lookup.py)
    assert sorted(driver.shipped_files) == ["source_things/components.py", "source_things/parts/__init__.py",
                                            "source_things/parts/base.py"]
    source = pickle.loads(pickle.dumps(ConnectorSource.of_connector(driver, str(path), path.read_text())))
    shutil.rmtree(package)

    worker = worker_connector(source)
    assert worker.context.base_dir != str(package) and worker.context.base_dir.endswith("/source_things")
    stream_ = worker.stream("items")
    sync_ = open_sync(worker, stream_, None, incremental=False)
    assert [r for unit in sync_.plan() for page in sync_.read(unit) for r in page] == [
        {"id": 1, "name": "1!"}, {"id": 2, "name": "2!"}]


def test_a_custom_decoder_and_schema_normalization(tmp_path, fake_api):
    """JSON Lines decoded by a class (each line a record), values cast by another class with the schema."""
    (tmp_path / "components.py").write_text(textwrap.dedent('''
        import json


        class Lines:
            def decode(self, response):
                for line in response.text.splitlines():
                    if line.strip():
                        yield json.loads(line)


        class Cast:
            def transform(self, record, schema):
                for name, spec in schema["properties"].items():
                    if spec.get("type") == "integer" and name in record:
                        record[name] = int(record[name])
    '''))
    fake_api.route("GET", "/lines", Reply(200, b'{"id": "1", "name": "a"}\n{"id": "2", "name": "b"}\n',
                                          {"Content-Type": "application/jsonl"}))
    document = {"version": "6.7.0", "type": "DeclarativeSource",
                "check": {"type": "CheckStream", "stream_names": ["lines"]},
                "streams": [{"type": "DeclarativeStream", "name": "lines",
                             "schema_loader": {"type": "InlineSchemaLoader", "schema": {
                                 "type": "object", "properties": {"id": {"type": "integer"}}}},
                             "retriever": {"type": "SimpleRetriever",
                                           "requester": {"type": "HttpRequester", "url_base": "{{ config.base_url }}",
                                                         "path": "/lines"},
                                           "decoder": custom("CustomDecoder", "Lines"),
                                           "record_selector": {
                                               "type": "RecordSelector",
                                               "extractor": {"type": "DpathExtractor", "field_path": []},
                                               "schema_normalization": custom("CustomSchemaNormalization",
                                                                              "Cast")}}}]}
    path = tmp_path / "manifest.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    messages, err, report, _ = sync(str(path), fake_api.url)
    assert not report.failed, err
    assert records(messages) == [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]


@pytest.mark.parametrize("kind, field", [("CustomRetriever", "retriever"), ("CustomRequester", "requester"),
                                         ("CustomIncrementalSync", "incremental_sync")])
def test_kinds_that_drive_the_read_need_airbyte_cdk_or_are_refused_when_the_connector_opens(kind, field, tmp_path,
                                                                                          monkeypatch):
    """A stream with a CustomRetriever or CustomRequester is read by airbyte-cdk: without it, the error names
    the extra (the stream is read through it otherwise, see tests/components/custom/test_airbyte_dispatch.py);
    a CustomIncrementalSync is refused, with the reason."""
    from framework.components.custom import airbyte

    monkeypatch.setattr(airbyte, "airbyte_available", lambda: False)
    (tmp_path / "components.py").write_text(textwrap.dedent(COMPONENTS) + textwrap.dedent("""
        class Driver:
            def read_records(self, records_schema, stream_slice=None): return []
            def send_request(self, **kwargs): return None
            def stream_slices(self): return []
            def get_stream_state(self): return {}
            def set_initial_state(self, stream_state): pass
            def observe(self, stream_slice, record): pass
            def close_slice(self, stream_slice): pass
    """))
    document = manifest()
    stream = document["streams"][0]
    driver = custom(kind, "Driver")
    if field == "requester":
        stream["retriever"]["requester"] = driver
    else:
        stream[field] = driver
    path = tmp_path / "manifest.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    if kind == "CustomIncrementalSync":
        expected = "`components.Driver` is a CustomIncrementalSync, which run-manifest cannot run.*airbyte-cdk 7.39.1"
    else:
        where = "retriever" if field == "retriever" else "retriever.requester"
        expected = (rf"stream `{stream['name']}` \(its {where} is a {kind} \(`components.Driver`\)\) needs "
                    r"airbyte-cdk, which is not installed: pip install 'manifest-framework\[airbyte\]'")
    with pytest.raises(ConfigError, match=expected):
        open_connector(str(path), {"base_url": "http://127.0.0.1:9", "token": "t"}, allow_custom_code=True)
