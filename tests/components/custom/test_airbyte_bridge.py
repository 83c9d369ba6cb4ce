"""The airbyte-cdk bridge: classes that subclass Airbyte's, built by Airbyte's factory and called as the adapters call them.

Each test writes its own small components.py (subclasses of airbyte-cdk
classes) into tmp_path and registers it under ``components``, as the loader
does. Tests that need airbyte-cdk in this process skip without it; install the
extra (``pip install -e '.[airbyte]'``) to run them. The first ones need no
airbyte-cdk: the error that names the extra, and telling Airbyte's classes
apart without importing anything.
"""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import orjson
import pytest
import requests
import yaml
from fakes.api_server import FakeApi, RecordedRequest, paged
from requests.structures import CaseInsensitiveDict

from framework.components.custom import airbyte as bridge
from framework.components.slices import StreamSlice
from framework.components.stream import bridge_reason
from framework.engine.bridge import read_bridged_unit
from framework.engine.connector import open_connector_text
from framework.engine.plan import open_sync
from framework.errors import ConfigError, DecodeError, FrameworkError
from framework.manifest import check_manifest_text
from framework.models import DeclarativeStream
from framework.models.custom import CUSTOM_KINDS

needs_airbyte = pytest.mark.skipif(
    not bridge.airbyte_available(),
    reason=f"needs airbyte-cdk in this python: {bridge.AIRBYTE_EXTRA} (CI installs it in .venv-airbyte: "
           "make test-airbyte)")


def model(kind: str, class_name: str, **options: Any) -> Any:
    return CUSTOM_KINDS[kind].model_validate({"type": kind, "class_name": class_name, **options})


def response(body: Any, url: str = "http://api.test/items?page=1") -> requests.Response:
    out = requests.Response()
    out.status_code = 200
    out.headers = CaseInsensitiveDict({"Content-Type": "application/json"})
    out._content = orjson.dumps(body)
    out.url = url
    out.encoding = "utf-8"
    prepared = requests.PreparedRequest()
    prepared.prepare(method="GET", url=url)
    out.request = prepared
    return out


@pytest.fixture
def components(tmp_path: Path) -> Iterator[Any]:
    """Write components.py into tmp_path and register it as the module ``components`` (as the loader does).

    A ``source_declarative_manifest.components`` alias left by a connector opened earlier in this process
    is set aside meanwhile, so the class is looked up in this test's module."""
    saved = sys.modules.get("components")
    aliases = {name: sys.modules.pop(name) for name in list(sys.modules)
               if name == "source_declarative_manifest" or name.startswith("source_declarative_manifest.")}

    def write(code: str) -> Any:
        path = tmp_path / "components.py"
        path.write_text(textwrap.dedent(code))
        spec = importlib.util.spec_from_file_location("components", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["components"] = module
        spec.loader.exec_module(module)
        return module

    yield write
    if saved is None:
        sys.modules.pop("components", None)
    else:
        sys.modules["components"] = saved
    sys.modules.update(aliases)


# -- without airbyte-cdk -----------------------------------------------------------------------------


def test_airbyte_classes_are_told_apart_by_their_bases_modules() -> None:
    base = type("RecordTransformation", (), {"__module__": "airbyte_cdk.sources.declarative.transformations"})
    mine = type("Mine", (base,), {"__module__": "components"})
    assert bridge.is_airbyte_class(mine)
    assert not bridge.is_airbyte_class(type("Plain", (), {"__module__": "components"}))
    assert not bridge.is_airbyte_class(type("Lookalike", (), {"__module__": "airbyte_cdk_extras.x"}))


def test_without_airbyte_cdk_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bridge, "airbyte_available", lambda: False)
    with pytest.raises(ConfigError) as caught:
        bridge.build_airbyte_component(model("CustomTransformation", "components.Upper"), {},
                                       place="manifest.yaml:12:7")
    message = str(caught.value)
    assert "`components.Upper`" in message and "pip install 'manifest-framework[airbyte]'" in message
    assert "manifest.yaml:12:7" in message
    with pytest.raises(ConfigError, match=r"stream `orders` \(read through airbyte-cdk\) needs airbyte-cdk"):
        bridge.AirbyteStream({}, {}, "orders")


def test_records_and_partitions_come_back_as_dicts() -> None:
    class Record(dict):  # Airbyte's Record: a mapping with .data
        def __init__(self, data: dict):
            super().__init__(data)
            self.data = data

    assert bridge.records_from_airbyte([{"id": 1}, Record({"id": 2})]) == [{"id": 1}, {"id": 2}]
    with pytest.raises(DecodeError, match="gave a str, not a record"):
        bridge.records_from_airbyte(["oops"], "the extractor")
    sliced = StreamSlice({"account": 1}, {"start": "a"}, {"name": "x"}).view()
    assert bridge.partition_from_airbyte(sliced) == ({"account": 1}, {"name": "x"})
    assert bridge.partition_from_airbyte({"account": 2}) == ({"account": 2}, {})
    assert bridge.state_from_airbyte({"states": ({"cursor": {"at": "x"}},)}) == {"states": [{"cursor": {"at": "x"}}]}


# -- components built by Airbyte's factory --------------------------------------------------------------


@needs_airbyte
def test_record_transformation_is_built_by_airbyte_and_transforms_in_place(components: Any) -> None:
    components("""
        from dataclasses import InitVar, dataclass
        from typing import Any, Mapping
        from airbyte_cdk.sources.declarative.transformations import RecordTransformation

        @dataclass
        class Stamp(RecordTransformation):
            field: str
            config: Mapping[str, Any]
            parameters: InitVar[Mapping[str, Any]]

            def __post_init__(self, parameters):
                self.prefix = parameters.get("prefix", "")

            def transform(self, record, config=None, stream_state=None, stream_slice=None):
                record[self.field] = self.prefix + self.config["tenant"]
                record["account"] = stream_slice.partition.get("account") if stream_slice else None
                record["since"] = (stream_state or {}).get("updated_at")
    """)
    built = bridge.build_airbyte_component(
        model("CustomTransformation", "components.Stamp", field="owner", **{"$parameters": {"prefix": "t-"}}),
        {"tenant": "acme"})
    assert type(built).__module__ == "components" and bridge.is_airbyte_class(type(built))
    record = {"id": 1}
    view = StreamSlice({"account": 7}, {"start": "2024-01-01"}).view()
    built.transform(record, config={"tenant": "acme"}, stream_state={"updated_at": "2024-01-02"}, stream_slice=view)
    assert record == {"id": 1, "owner": "t-acme", "account": 7, "since": "2024-01-02"}
    # and with Airbyte's own slice type, as Airbyte calls it
    record = {"id": 2}
    built.transform(record, config={}, stream_state={}, stream_slice=bridge.to_airbyte_slice(view))
    assert record["account"] == 7


@needs_airbyte
def test_dpath_extractor_subclass_takes_manifest_keys_as_airbyte_does(components: Any) -> None:
    components("""
        from airbyte_cdk.sources.declarative.extractors import DpathExtractor

        class Tagged(DpathExtractor):
            def extract_records(self, response):
                for record in super().extract_records(response):
                    yield {**record, "source": response.url.split("?")[0]}
    """)
    built = bridge.build_airbyte_component(
        model("CustomRecordExtractor", "source_declarative_manifest.components.Tagged",
              field_path=["{{ parameters.root }}", "items"], **{"$parameters": {"root": "data"}}), {})
    records = bridge.records_from_airbyte(built.extract_records(response({"data": {"items": [{"id": 1}, {"id": 2}]}})))
    assert records == [{"id": 1, "source": "http://api.test/items"}, {"id": 2, "source": "http://api.test/items"}]


@needs_airbyte
def test_record_filter_subclass_filters_a_page_with_our_slice(components: Any) -> None:
    components("""
        from airbyte_cdk.sources.declarative.extractors.record_filter import RecordFilter

        class NotHeartbeat(RecordFilter):
            def filter_records(self, records, stream_state, stream_slice=None, next_page_token=None):
                kept = super().filter_records(records, stream_state, stream_slice, next_page_token)
                return [r for r in kept if r["kind"] != "heartbeat"]
    """)
    built = bridge.build_airbyte_component(
        model("CustomRecordFilter", "components.NotHeartbeat",
              condition="{{ record.account == stream_slice.account and record.seq > config.min_seq }}"),
        {"min_seq": 1})
    records = [{"seq": 1, "kind": "view", "account": 3}, {"seq": 2, "kind": "heartbeat", "account": 3},
               {"seq": 3, "kind": "click", "account": 3}, {"seq": 4, "kind": "click", "account": 4}]
    view = StreamSlice({"account": 3}).view()
    kept = bridge.records_from_airbyte(built.filter_records(records, stream_state={}, stream_slice=view,
                                                            next_page_token=None))
    assert [r["seq"] for r in kept] == [3]


@needs_airbyte
def test_pagination_strategy_subclass_pages_with_airbyte_records(components: Any) -> None:
    components("""
        from dataclasses import dataclass
        from airbyte_cdk.sources.declarative.requesters.paginators.strategies.pagination_strategy import (
            PaginationStrategy,
        )

        @dataclass
        class AfterLastId(PaginationStrategy):
            page_size: int

            @property
            def initial_token(self):
                return 0

            def next_page_token(self, response, last_page_size, last_record, last_page_token_value=None):
                if last_page_size < self.page_size:
                    return None
                return {"after": last_record["id"], "of": last_record.stream_name}

            def get_page_size(self):
                return self.page_size
    """)
    built = bridge.build_airbyte_component(model("CustomPaginationStrategy", "components.AfterLastId", page_size=2),
                                           {})
    assert built.initial_token == 0 and built.get_page_size() == 2
    page = response({"data": [{"id": 4}, {"id": 9}]})
    last = bridge.to_airbyte_record({"id": 9}, "items", StreamSlice({"account": 1}).view())
    assert last.data == {"id": 9} and last.associated_slice.partition == {"account": 1}
    assert built.next_page_token(page, 2, last, 0) == {"after": 9, "of": "items"}
    assert built.next_page_token(page, 1, last, 0) is None


@needs_airbyte
def test_state_migration_subclass_migrates_a_legacy_state(components: Any) -> None:
    components("""
        from dataclasses import dataclass, InitVar
        from typing import Any, Mapping
        from airbyte_cdk.sources.declarative.migrations.state_migration import StateMigration

        @dataclass
        class FromEpoch(StateMigration):
            cursor_field: str
            config: Mapping[str, Any]
            parameters: InitVar[Mapping[str, Any]]

            def should_migrate(self, stream_state):
                return isinstance(stream_state.get(self.cursor_field), int)

            def migrate(self, stream_state):
                import datetime
                value = datetime.datetime.fromtimestamp(stream_state[self.cursor_field], datetime.timezone.utc)
                return {self.cursor_field: value.strftime("%Y-%m-%dT%H:%M:%SZ")}
    """)
    built = bridge.build_airbyte_component(model("CustomStateMigration", "components.FromEpoch",
                                                 cursor_field="updated_at"), {})
    assert built.should_migrate({"updated_at": 1704067200})
    assert built.migrate({"updated_at": 1704067200}) == {"updated_at": "2024-01-01T00:00:00Z"}
    assert not built.should_migrate({"updated_at": "2024-01-01T00:00:00Z"})


@needs_airbyte
def test_a_class_airbyte_cannot_find_is_a_config_error_naming_it(components: Any) -> None:
    components("""
        from airbyte_cdk.sources.declarative.transformations import RecordTransformation
    """)
    with pytest.raises(ConfigError, match=r"airbyte-cdk could not build the transformation `components.Missing`.*"
                                          r"manifest.yaml:3:5"):
        bridge.build_airbyte_component(model("CustomTransformation", "components.Missing"), {},
                                       place="manifest.yaml:3:5")


# -- a stream read by airbyte-cdk's reader, a unit at a time ----------------------------------------------


RETRIEVER_COMPONENTS = """
    from dataclasses import dataclass
    from airbyte_cdk.sources.declarative.retrievers import SimpleRetriever

    @dataclass
    class TaggingRetriever(SimpleRetriever):
        def read_records(self, records_schema, stream_slice=None):
            for record in super().read_records(records_schema, stream_slice):
                data = dict(record.data) if hasattr(record, "data") else dict(record)
                data["via"] = "custom-retriever"
                yield data
"""


def retriever_manifest(base_url: str) -> dict:
    requester = {"type": "HttpRequester", "url_base": base_url, "path": "/orders", "http_method": "GET",
                 "request_parameters": {"since": "{{ stream_interval.start_time }}",
                                        "until": "{{ stream_interval.end_time }}"}}
    return {
        "version": "6.0.0",
        "type": "DeclarativeSource",
        "check": {"type": "CheckStream", "stream_names": ["orders"]},
        "streams": [{
            "type": "DeclarativeStream",
            "name": "orders",
            "primary_key": "id",
            "schema_loader": {"type": "InlineSchemaLoader", "schema": {"type": "object"}},
            "retriever": {
                "type": "CustomRetriever",
                "class_name": "components.TaggingRetriever",
                "requester": requester,
                "record_selector": {"type": "RecordSelector",
                                    "extractor": {"type": "DpathExtractor", "field_path": ["data"]}},
                # a custom retriever's paginator is built apart from its requester: Airbyte asks for url_base here
                "paginator": {"type": "DefaultPaginator", "$parameters": {"url_base": base_url},
                              "pagination_strategy": {"type": "PageIncrement", "page_size": 2, "start_from_page": 1},
                              "page_token_option": {"type": "RequestOption", "inject_into": "request_parameter",
                                                    "field_name": "page"},
                              "page_size_option": {"type": "RequestOption", "inject_into": "request_parameter",
                                                   "field_name": "per_page"}},
            },
            "incremental_sync": {
                "type": "DatetimeBasedCursor",
                "cursor_field": "updated_at",
                "datetime_format": "%Y-%m-%dT%H:%M:%SZ",
                "start_datetime": "{{ config.start_date }}",
                "end_datetime": "2024-01-03T00:00:00Z",
                "step": "P1D",
                "cursor_granularity": "PT1S",
            },
        }],
    }


ORDERS = [{"id": i, "updated_at": f"2024-01-0{1 + i % 2}T0{i}:00:00Z"} for i in range(1, 8)]


def _orders(request: RecordedRequest) -> dict:
    since, until = request.param("since") or "", request.param("until") or "~"
    chosen = sorted((o for o in ORDERS if since <= o["updated_at"] <= until), key=lambda o: o["id"])
    return paged(chosen, request)


@needs_airbyte
def test_a_custom_retriever_stream_is_read_a_unit_at_a_time_with_airbyte_state(components: Any) -> None:
    components(RETRIEVER_COMPONENTS)
    config = {"start_date": "2024-01-01T00:00:00Z"}
    with FakeApi() as api:
        api.route("GET", "/orders", _orders)
        driver = bridge.AirbyteStream(retriever_manifest(api.url), config, "orders")
        units = driver.units()
        assert [u.cursor_slice["start_time"][:10] for u in units] == ["2024-01-01", "2024-01-02"]
        assert all(u.partition == {} for u in units)
        # a worker reads the second unit from the unit alone (a Spark task would)
        worker = bridge.AirbyteStream(retriever_manifest(api.url), config, "orders")
        pages = list(worker.read(units[1], page_size=2))
        records = [r for page, _latest in pages for r in page]
        assert [r["id"] for r in records] == [1, 3, 5, 7] and {r["via"] for r in records} == {"custom-retriever"}
        latest = pages[-1][1]
        assert latest == {"id": 7, "updated_at": "2024-01-02T07:00:00Z", "via": "custom-retriever"}
        # the driver: the second window finished first holds the state back; then both
        driver.finish(units[1], latest)
        assert driver.state() == {"updated_at": "2024-01-01T00:00:00Z"}  # still the start
        first = [latest for _page, latest in driver.read(units[0])][-1]
        driver.finish(units[0], first)
        assert driver.state(final=True) == {"updated_at": "2024-01-02T07:00:00Z"}
        requests_made = {(r.param("since"), r.param("page")) for r in api.received()}
        assert ("2024-01-02T00:00:00Z", "2") in requests_made  # paged by the manifest's paginator

        # the second sync starts from that state: one window, nothing new
        again = bridge.AirbyteStream(retriever_manifest(api.url), config, "orders", driver.state())
        later = again.units()
        assert later[0].cursor_slice["start_time"] == "2024-01-02T07:00:00Z"


@needs_airbyte
def test_a_full_refresh_stream_has_no_state(components: Any) -> None:
    components(RETRIEVER_COMPONENTS)
    manifest = retriever_manifest("http://unused.test")
    del manifest["streams"][0]["incremental_sync"]
    stream = bridge.AirbyteStream(manifest, {}, "orders")
    assert stream.cursor_field is None
    assert stream.state() is None
    with pytest.raises(ConfigError, match="no stream `nope`"):
        bridge.AirbyteStream(manifest, {}, "nope")


@needs_airbyte
def test_a_unit_of_a_stream_airbyte_cdk_laid_out_otherwise_fails_plainly(components: Any) -> None:
    components(RETRIEVER_COMPONENTS)
    stream = bridge.AirbyteStream(retriever_manifest("http://unused.test"), {"start_date": "2024-01-01T00:00:00Z"},
                                  "orders")
    stream._stream = SimpleNamespace(name="orders")  # not the DefaultStream airbyte-cdk 7.39.1 builds
    with pytest.raises(FrameworkError, match="cannot make from a slice"):
        list(stream.read(bridge.AirbyteUnit(0, cursor_slice={"start_time": "2024-01-01T00:00:00Z"})))


@needs_airbyte
def test_substream_router_subclass_reads_its_airbyte_parent(components: Any) -> None:
    components("""
        from dataclasses import dataclass
        from airbyte_cdk.sources.declarative.partition_routers import SubstreamPartitionRouter

        @dataclass
        class ActiveAccounts(SubstreamPartitionRouter):
            def stream_slices(self):
                for stream_slice in super().stream_slices():
                    if stream_slice.extra_fields.get("active"):
                        yield stream_slice
    """)
    with FakeApi() as api:
        api.route("GET", "/accounts", {"accounts": [{"id": 1, "active": True}, {"id": 2, "active": False},
                                                    {"id": 3, "active": True}]})
        parent = {"type": "DeclarativeStream", "name": "accounts", "primary_key": "id",
                  "schema_loader": {"type": "InlineSchemaLoader", "schema": {"type": "object"}},
                  "retriever": {"type": "SimpleRetriever",
                                "requester": {"type": "HttpRequester", "url_base": api.url, "path": "/accounts"},
                                "record_selector": {"type": "RecordSelector",
                                                    "extractor": {"type": "DpathExtractor",
                                                                  "field_path": ["accounts"]}}}}
        built = bridge.build_airbyte_component(
            model("CustomPartitionRouter", "components.ActiveAccounts",
                  parent_stream_configs=[{"type": "ParentStreamConfig", "stream": parent, "parent_key": "id",
                                          "partition_field": "account_id", "extra_fields": [["active"]]}]),
            {}, stream_name="account_orders")
        partitions = [bridge.partition_from_airbyte(item) for item in built.stream_slices()]
    assert [p for p, _extra in partitions] == [{"account_id": 1, "parent_slice": {}},
                                               {"account_id": 3, "parent_slice": {}}]
    assert all(extra == {"active": True} for _p, extra in partitions)


@needs_airbyte
def test_a_partitioned_custom_retriever_stream_keeps_airbyte_per_partition_state(components: Any) -> None:
    components(RETRIEVER_COMPONENTS)
    config = {"start_date": "2024-01-01T00:00:00Z"}
    rows = {1: [{"id": 11, "updated_at": "2024-01-01T05:00:00Z"}, {"id": 12, "updated_at": "2024-01-02T06:00:00Z"}],
            2: [{"id": 21, "updated_at": "2024-01-01T09:00:00Z"}]}
    with FakeApi() as api:
        api.route("GET", "/accounts", {"accounts": [{"id": 1}, {"id": 2}]})
        api.route("GET", "/accounts/{id}/orders",
                  lambda request: paged([o for o in rows[int(request.path_params["id"])]
                                         if request.param("since", "") <= o["updated_at"] <= request.param("until", "~")],
                                        request))
        manifest = retriever_manifest(api.url)
        stream = manifest["streams"][0]
        stream["retriever"]["requester"]["path"] = "/accounts/{{ stream_partition.account_id }}/orders"
        stream["retriever"]["partition_router"] = {
            "type": "SubstreamPartitionRouter",
            "parent_stream_configs": [{
                "type": "ParentStreamConfig", "parent_key": "id", "partition_field": "account_id",
                "stream": {"type": "DeclarativeStream", "name": "accounts", "primary_key": "id",
                           "schema_loader": {"type": "InlineSchemaLoader", "schema": {"type": "object"}},
                           "retriever": {"type": "SimpleRetriever",
                                         "requester": {"type": "HttpRequester", "url_base": api.url,
                                                       "path": "/accounts"},
                                         "record_selector": {"type": "RecordSelector",
                                                             "extractor": {"type": "DpathExtractor",
                                                                           "field_path": ["accounts"]}}}}}]}
        driver = bridge.AirbyteStream(manifest, config, "orders")
        units = driver.units()
        assert sorted((u.partition["account_id"], u.cursor_slice["start_time"][:10]) for u in units) == [
            (1, "2024-01-01"), (1, "2024-01-02"), (2, "2024-01-01"), (2, "2024-01-02")]
        worker = bridge.AirbyteStream(manifest, config, "orders")
        read = {}
        for unit in units:
            latest = None
            for page, page_latest in worker.read(unit):
                read.setdefault(unit.partition["account_id"], []).extend(r["id"] for r in page)
                latest = page_latest
            driver.finish(unit, latest)
    assert {account: sorted(ids) for account, ids in read.items()} == {1: [11, 12], 2: [21]}
    assert "state" not in driver.state()  # Airbyte moves the global cursor at the end of the sync only
    state = driver.state(final=True)
    cursors = {item["partition"]["account_id"]: item["cursor"]["updated_at"] for item in state["states"]}
    assert cursors == {1: "2024-01-02T06:00:00Z", 2: "2024-01-01T09:00:00Z"}
    assert state["use_global_cursor"] is False and state["state"] == {"updated_at": "2024-01-02T06:00:00Z"}


@needs_airbyte
def test_a_view_is_converted_once_and_a_router_gets_the_stream_name_from_parameters(components: Any) -> None:
    view = StreamSlice({"account": 1}, {"start": "a"}).view()
    first = bridge.to_airbyte_slice(view)
    assert bridge.to_airbyte_slice(view) is first
    assert (first.partition, first.cursor_slice) == ({"account": 1}, {"start": "a"})
    components("""
        from dataclasses import dataclass
        from airbyte_cdk.sources.declarative.partition_routers import SubstreamPartitionRouter

        @dataclass
        class Router(SubstreamPartitionRouter):
            pass
    """)
    parent = {"type": "DeclarativeStream", "name": "accounts",
              "schema_loader": {"type": "InlineSchemaLoader", "schema": {}},
              "retriever": {"type": "SimpleRetriever",
                            "requester": {"type": "HttpRequester", "url_base": "http://api.test", "path": "/a"},
                            "record_selector": {"type": "RecordSelector",
                                                "extractor": {"type": "DpathExtractor", "field_path": []}}}}
    router = model("CustomPartitionRouter", "components.Router",
                   parent_stream_configs=[{"type": "ParentStreamConfig", "stream": parent, "parent_key": "id",
                                           "partition_field": "account_id"}],
                   **{"$parameters": {"name": "account_orders"}})
    assert type(bridge.build_airbyte_component(router, {})).__name__ == "Router"


def declared_stream(stream: dict) -> DeclarativeStream:
    """The model of one stream, as the loader builds it (no class is imported)."""
    manifest = {"version": "6.0.0", "type": "DeclarativeSource",
                "check": {"type": "CheckStream", "stream_names": [stream["name"]]}, "streams": [stream]}
    checked = check_manifest_text(orjson.dumps(manifest))
    assert checked.source is not None, [str(d) for d in checked.errors]
    return checked.source.streams[0]


def parent_stream(url: str = "http://api.test") -> dict:
    return {"type": "DeclarativeStream", "name": "accounts", "primary_key": "id",
            "schema_loader": {"type": "InlineSchemaLoader", "schema": {"type": "object"}},
            "retriever": {"type": "SimpleRetriever",
                          "requester": {"type": "HttpRequester", "url_base": url, "path": "/accounts"},
                          "record_selector": {"type": "RecordSelector",
                                              "extractor": {"type": "DpathExtractor", "field_path": ["accounts"]}}}}


def test_streams_whose_read_is_driven_by_user_code_need_the_bridge() -> None:
    requester = {"type": "HttpRequester", "url_base": "http://api.test", "path": "/a"}
    selector = {"type": "RecordSelector", "extractor": {"type": "DpathExtractor", "field_path": []}}
    simple = {"type": "SimpleRetriever", "requester": requester, "record_selector": selector}
    plain = {"type": "DeclarativeStream", "name": "a", "retriever": simple,
             "schema_loader": {"type": "InlineSchemaLoader", "schema": {}}}
    assert bridge_reason(declared_stream(plain)) is None
    custom = {**plain, "retriever": {"type": "CustomRetriever", "class_name": "components.Ads"}}
    assert bridge_reason(declared_stream(custom)) == "its retriever is a CustomRetriever (`components.Ads`)"
    signed = {**plain, "retriever": {**simple, "requester": {"type": "CustomRequester",
                                                             "class_name": "source_ads.components.Req"}}}
    assert bridge_reason(declared_stream(signed)) == (
        "its retriever.requester is a CustomRequester (`source_ads.components.Req`)")
    parent = {"type": "ParentStreamConfig", "stream": parent_stream(), "parent_key": "id",
              "partition_field": "account_id"}
    routed = {**plain, "retriever": {**simple, "partition_router": {
        "type": "CustomPartitionRouter", "class_name": "components.Router", "parent_stream_configs": [parent]}}}
    assert bridge_reason(declared_stream(routed)) is None  # its parents are read in full: ours reads it
    incremental = {**plain, "retriever": {**simple, "partition_router": {
        "type": "CustomPartitionRouter", "class_name": "components.Router",
        "parent_stream_configs": [{**parent, "incremental_dependency": True}]}}}
    model = declared_stream(incremental)
    assert bridge_reason(model) == (
        "its partition router `components.Router` reads its parents incrementally (incremental_dependency)")
    # a class of our own protocols (not airbyte-cdk's) keeps the router's parents to itself: ours reads it
    assert bridge_reason(model, lambda component: False) is None
    child = {**plain, "name": "child", "retriever": {**simple, "partition_router": {
        "type": "SubstreamPartitionRouter", "parent_stream_configs": [{**parent, "stream": signed}]}}}
    assert bridge_reason(declared_stream(child)) == "its parent stream `a` is read through airbyte-cdk"


SUBSTREAM_ROUTER = """
    from dataclasses import dataclass
    from airbyte_cdk.sources.declarative.partition_routers import SubstreamPartitionRouter

    @dataclass
    class ActiveAccounts(SubstreamPartitionRouter):
        def stream_slices(self):
            for stream_slice in super().stream_slices():
                if stream_slice.extra_fields.get("active"):
                    yield stream_slice
"""


def routed_manifest(url: str, incremental_dependency: bool = False) -> dict:
    """A stream `account_orders` named by its `name` alone (no `$parameters`), routed by ActiveAccounts."""
    parent = {"type": "ParentStreamConfig", "stream": parent_stream(url), "parent_key": "id",
              "partition_field": "account_id", "extra_fields": [["active"]]}
    if incremental_dependency:
        parent["incremental_dependency"] = True
        parent["stream"]["incremental_sync"] = {
            "type": "DatetimeBasedCursor", "cursor_field": "updated_at", "datetime_format": "%Y-%m-%dT%H:%M:%SZ",
            "start_datetime": "2024-01-01T00:00:00Z", "end_datetime": "2024-01-02T00:00:00Z"}
    requester = {"type": "HttpRequester", "url_base": url, "path": "/accounts/{{ stream_partition.account_id }}/orders"}
    return {
        "version": "6.0.0", "type": "DeclarativeSource",
        "check": {"type": "CheckStream", "stream_names": ["account_orders"]},
        "spec": {"type": "Spec", "connection_specification": {"type": "object", "properties": {}}},
        "streams": [{
            "type": "DeclarativeStream", "name": "account_orders", "primary_key": "id",
            "schema_loader": {"type": "InlineSchemaLoader", "schema": {"type": "object"}},
            "retriever": {"type": "SimpleRetriever", "requester": requester,
                          "record_selector": {"type": "RecordSelector",
                                              "extractor": {"type": "DpathExtractor", "field_path": ["orders"]}},
                          "partition_router": {"type": "CustomPartitionRouter",
                                               "class_name": "components.ActiveAccounts",
                                               "parent_stream_configs": [parent]}}}],
    }


def accounts_api(api: FakeApi) -> None:
    api.route("GET", "/accounts", {"accounts": [{"id": 1, "active": True, "updated_at": "2024-01-01T01:00:00Z"},
                                                {"id": 2, "active": False, "updated_at": "2024-01-01T02:00:00Z"},
                                                {"id": 3, "active": True, "updated_at": "2024-01-01T03:00:00Z"}]})
    api.route("GET", "/accounts/{id}/orders",
              lambda request: {"orders": [{"id": int(request.path_params["id"]) * 10}]})


@needs_airbyte
def test_an_airbyte_router_of_a_stream_named_by_name_alone_reads_natively(tmp_path: Path) -> None:
    """Airbyte hands a partition router its stream's name (its parent configs need it): so do we."""
    (tmp_path / "components.py").write_text(textwrap.dedent(SUBSTREAM_ROUTER))
    with FakeApi() as api:
        accounts_api(api)
        connector = open_connector_text(yaml.safe_dump(routed_manifest(api.url)), {},
                                        file=str(tmp_path / "manifest.yaml"), base_dir=str(tmp_path),
                                        allow_custom_code=True)
        stream = connector.stream("account_orders")
        assert stream.bridge is None
        sync = open_sync(connector, stream, None)
        records = [r["id"] for unit in sync.plan() for page in sync.read(unit) for r in page]
    assert records == [10, 30]


@needs_airbyte
def test_an_airbyte_router_with_incremental_parents_is_read_through_the_bridge(tmp_path: Path) -> None:
    (tmp_path / "components.py").write_text(textwrap.dedent(SUBSTREAM_ROUTER))
    with FakeApi() as api:
        accounts_api(api)
        connector = open_connector_text(yaml.safe_dump(routed_manifest(api.url, incremental_dependency=True)), {},
                                        file=str(tmp_path / "manifest.yaml"), base_dir=str(tmp_path),
                                        allow_custom_code=True)
        stream = connector.stream("account_orders")
        assert stream.bridge == ("its partition router `components.ActiveAccounts` reads its parents "
                                 "incrementally (incremental_dependency)")
        sync = open_sync(connector, stream, None)
        records = [r["id"] for unit in sync.plan() for page in sync.read(unit) for r in page]
    assert sorted(records) == [10, 30]


@needs_airbyte
def test_a_worker_reads_a_bridged_unit_from_the_state_the_sync_started_from(components: Any,
                                                                            tmp_path: Path) -> None:
    components(RETRIEVER_COMPONENTS)
    with FakeApi() as api:
        api.route("GET", "/orders", lambda request: paged([], request))
        manifest = retriever_manifest(api.url)
        text = yaml.safe_dump(manifest)
        connector = open_connector_text(text, {"start_date": "2024-01-01T00:00:00Z"},
                                        file=str(tmp_path / "manifest.yaml"), base_dir=str(tmp_path),
                                        allow_custom_code=True)
        stream = connector.stream("orders")
        state = {"updated_at": "2024-01-02T05:00:00Z"}
        units = open_sync(connector, stream, state).plan()
        assert units and units[0].cursor_slice["start_time"] == "2024-01-02T05:00:00Z"
        for unit in units:
            list(read_bridged_unit(connector, stream, unit, state))
        list(read_bridged_unit(connector, stream, units[0], None))
    started = {key: reader.state() for (_name, key), reader in connector.readers.items()}
    assert len(started) == 2  # one reader per start state, kept for the process's later units
    assert started[orjson.dumps(state, option=orjson.OPT_SORT_KEYS)] == state
    assert started[b""] != state  # a reader without it would start from the start date


@needs_airbyte
def test_a_custom_requester_stream_is_read_through_the_bridge(components: Any) -> None:
    components("""
        from dataclasses import dataclass
        from airbyte_cdk.sources.declarative.requesters import HttpRequester

        @dataclass
        class Signed(HttpRequester):
            def get_request_headers(self, *, stream_state=None, stream_slice=None, next_page_token=None):
                return {**super().get_request_headers(stream_state=stream_state, stream_slice=stream_slice,
                                                      next_page_token=next_page_token), "X-Signed": "yes"}
    """)
    with FakeApi() as api:
        def items(request: RecordedRequest) -> dict:
            assert request.headers.get("X-Signed") == "yes"
            return paged([{"id": i} for i in range(5)], request)

        api.route("GET", "/orders", items)
        manifest = retriever_manifest(api.url)
        stream = manifest["streams"][0]
        del stream["incremental_sync"]
        requester = {**stream["retriever"]["requester"], "type": "CustomRequester", "class_name": "components.Signed",
                     "name": "orders", "request_parameters": {}}
        stream["retriever"] = {**stream["retriever"], "type": "SimpleRetriever", "requester": requester}
        del stream["retriever"]["class_name"]
        assert bridge_reason(declared_stream(stream)) == (
            "its retriever.requester is a CustomRequester (`components.Signed`)")
        reader = bridge.AirbyteStream(manifest, {}, "orders")
        units = reader.units()
        records = [r["id"] for unit in units for page, _latest in reader.read(unit) for r in page]
    assert records == [0, 1, 2, 3, 4] and reader.state(final=True) is None
