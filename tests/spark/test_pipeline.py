"""The Spark pipeline end to end on a local disk: a manifest, the fake API, one shared SparkSession.

Each test runs :func:`framework.spark.pipeline.run_pipeline` (or ``run-manifest``
in-process) against the fake HTTP API and reads the files back with readers
that share no code with ours: pyarrow, Spark and fastavro. The shop below has
an incremental stream with every type the seed lists (``items``), a parent and
its substream with an incremental dependency (``accounts`` and ``orders``) and
a full-refresh stream without a schema (``notes``).
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import re
import threading
from dataclasses import dataclass, field
from datetime import date, datetime, time, timezone
from pathlib import Path
from typing import Any

import fastavro
import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from fakes.api_server import FakeApi, RecordedRequest, Reply, dated, paged

from framework.engine.connector import open_connector
from framework.engine.selection import select_streams
from framework.models.destination import DestinationSettings
from framework.spark.pipeline import PipelineOptions, PipelineResult, run_pipeline
from framework.storage.state_store import STATE_KEY

pytestmark = pytest.mark.spark

SECRET = "sk-test-4f9a-pipeline-secret"

MANIFEST = """\
version: 6.7.0
type: DeclarativeSource
definitions:
  requester:
    type: HttpRequester
    url_base: "{{ config.base_url }}"
    authenticator: {type: BearerAuthenticator, api_token: "{{ config.api_key }}"}
    error_handler:
      type: DefaultErrorHandler
      max_retries: 1
      backoff_strategies: [{type: ConstantBackoffStrategy, backoff_time_in_seconds: 0}]
  selector:
    type: RecordSelector
    extractor: {type: DpathExtractor, field_path: [data]}
  paginator:
    type: DefaultPaginator
    pagination_strategy: {type: PageIncrement, start_from_page: 1, page_size: 2}
    page_token_option: {type: RequestOption, inject_into: request_parameter, field_name: page}
    page_size_option: {type: RequestOption, inject_into: request_parameter, field_name: per_page}
  cursor:
    type: DatetimeBasedCursor
    cursor_field: updated_at
    datetime_format: "%Y-%m-%dT%H:%M:%SZ"
    start_datetime: "{{ config.start }}"
    end_datetime: "{{ config.end }}"
    step: P1D
    cursor_granularity: PT1S
    start_time_option: {type: RequestOption, inject_into: request_parameter, field_name: since}
    end_time_option: {type: RequestOption, inject_into: request_parameter, field_name: until}
  accounts:
    type: DeclarativeStream
    name: accounts
    primary_key: id
    schema_loader:
      type: InlineSchemaLoader
      schema:
        type: object
        properties:
          id: {type: integer}
          name: {type: string}
          updated_at: {type: string, format: date-time, airbyte_type: timestamp_with_timezone}
    incremental_sync: {$ref: "#/definitions/cursor"}
    retriever:
      type: SimpleRetriever
      requester: {$ref: "#/definitions/requester", path: /accounts}
      record_selector: {$ref: "#/definitions/selector"}
      paginator: {$ref: "#/definitions/paginator"}
streams:
  - type: DeclarativeStream
    name: items
    primary_key: id
    schema_loader:
      type: InlineSchemaLoader
      schema:
        type: object
        properties:
          id: {type: integer}
          name: {type: string}
          price: {type: number}
          active: {type: boolean}
          quantity: {type: integer}
          updated_at: {type: string, format: date-time, airbyte_type: timestamp_with_timezone}
          local_ts: {type: string, format: date-time, airbyte_type: timestamp_without_timezone}
          day: {type: string, format: date}
          at_time: {type: string, format: time, airbyte_type: time_with_timezone}
          local_time: {type: string, format: time, airbyte_type: time_without_timezone}
          address:
            type: object
            properties: {city: {type: string}, zip: {type: integer}}
          extra: {type: object}
          tags: {type: array}
          scores: {type: array, items: {type: integer}}
          code: {oneOf: [{type: integer}, {type: string}]}
          mixed: {type: array, items: {oneOf: [{type: integer}, {type: string}]}}
    incremental_sync: {$ref: "#/definitions/cursor"}
    retriever:
      type: SimpleRetriever
      requester: {$ref: "#/definitions/requester", path: /items}
      record_selector: {$ref: "#/definitions/selector"}
      paginator: {$ref: "#/definitions/paginator"}
  - {$ref: "#/definitions/accounts"}
  - type: DeclarativeStream
    name: orders
    primary_key: id
    schema_loader:
      type: InlineSchemaLoader
      schema:
        type: object
        properties:
          id: {type: integer}
          account_id: {type: integer}
          total: {type: number}
          updated_at: {type: string, format: date-time, airbyte_type: timestamp_with_timezone}
    incremental_sync: {$ref: "#/definitions/cursor"}
    retriever:
      type: SimpleRetriever
      requester: {$ref: "#/definitions/requester", path: "/accounts/{{ stream_partition.account_id }}/orders"}
      record_selector: {$ref: "#/definitions/selector"}
      paginator: {$ref: "#/definitions/paginator"}
      partition_router:
        type: SubstreamPartitionRouter
        parent_stream_configs:
          - type: ParentStreamConfig
            stream: {$ref: "#/definitions/accounts"}
            parent_key: id
            partition_field: account_id
            incremental_dependency: true
  - type: DeclarativeStream
    name: notes
    primary_key: id
    schema_loader: {type: InlineSchemaLoader, schema: {type: object}}
    retriever:
      type: SimpleRetriever
      requester: {$ref: "#/definitions/requester", path: /notes}
      record_selector: {$ref: "#/definitions/selector"}
      paginator:
        $ref: "#/definitions/paginator"
        pagination_strategy: {type: PageIncrement, start_from_page: 1, page_size: 100}
check: {type: CheckStream, stream_names: [items]}
spec:
  type: Spec
  connection_specification:
    type: object
    required: [base_url, api_key, start, end]
    properties:
      base_url: {type: string}
      api_key: {type: string, airbyte_secret: true}
      start: {type: string}
      end: {type: string}
"""

START, END = "2024-01-01T00:00:00Z", "2024-01-04T23:59:59Z"


def item(i: int, on: int, hour: int, **more: Any) -> dict:
    record = {"id": i, "name": f"item {i}", "price": i + 0.5, "active": i % 2 == 0, "quantity": i * 10,
              "updated_at": f"2024-01-{on:02d}T{hour:02d}:00:00Z", "local_ts": "2024-03-05T06:07:08+02:00",
              "day": "2024-03-05", "at_time": "12:00:00-01:00", "local_time": "04:05:06",
              "address": {"city": "Oslo", "zip": 150, "planet": "Earth"}, "extra": {"id": 1, "name": "Alice"},
              "tags": [1, "Alice"], "scores": [1, 2], "code": i, "mixed": [1, "Alice"]}
    record.update(more)
    return record


def first_items() -> list[dict]:
    """Two items a day from Jan 1 to Jan 4 (one window each), three of them with values that do not fit."""
    return [
        item(1, 1, 6),
        item(2, 1, 18, price="cheap", scores=[1, "Alice"], code="B2", at_time="04:00:00+02:00"),
        item(3, 2, 6, quantity=2 ** 70, at_time="04:00:00+05:30", mixed=[1, False]),
        item(4, 2, 18, address={"city": None, "zip": "far"}, day="not a day"),
        item(5, 3, 6), item(6, 3, 18), item(7, 4, 6), item(8, 4, 18),
    ]


@dataclass
class Shop:
    """The fake API's data (change it between syncs) and the API itself."""

    api: FakeApi
    items: list[dict] = field(default_factory=first_items)
    accounts: list[dict] = field(default_factory=lambda: [
        {"id": 1, "name": "Acme", "updated_at": "2024-01-01T10:00:00Z"},
        {"id": 2, "name": "Globex", "updated_at": "2024-01-03T10:00:00Z"},
    ])
    orders: dict[int, list[dict]] = field(default_factory=lambda: {
        1: [{"id": 100 + n, "account_id": 1, "total": n * 1.0, "updated_at": f"2024-01-0{n}T12:00:00Z"}
            for n in (1, 2, 3)],
        2: [{"id": 200 + n, "account_id": 2, "total": n * 2.0, "updated_at": f"2024-01-0{n}T12:00:00Z"}
            for n in (2, 4)],
    })
    notes: list[dict] = field(default_factory=lambda: [{"id": n, "text": f"note {n}", "tags": ["a", n]}
                                                       for n in range(5)])
    refuse_since: set[str] = field(default_factory=set)  # window starts of /items answered 401
    hang_since: set[str] = field(default_factory=set)  # window starts of /items that wait for `release`
    refuse_notes_page: int | None = None  # a page of /notes answered 401
    hanging: threading.Event = field(default_factory=threading.Event)  # set once a request hangs
    release: threading.Event = field(default_factory=threading.Event)

    def requests(self, path: str) -> list[RecordedRequest]:
        return self.api.received(path)


def _authorized(request: RecordedRequest) -> None:
    if request.headers.get("Authorization") != f"Bearer {SECRET}":
        raise AssertionError(f"bad credentials on {request!r}")


def serve(api: FakeApi) -> Shop:
    shop = Shop(api)

    def items(request: RecordedRequest) -> Reply:
        _authorized(request)
        if request.param("since") in shop.refuse_since:
            return Reply(401, {"error": "token revoked"})
        if request.param("since") in shop.hang_since:
            shop.hanging.set()
            if not shop.release.wait(300):
                return Reply(503, {"error": "released by timeout"})
        page = paged(dated(shop.items, request, "updated_at", "since", "until"), request, default_page_size=2)
        return Reply(200, json.dumps(page).encode())  # json, not orjson: item 3 has an integer beyond 64 bits

    def accounts(request: RecordedRequest) -> dict:
        _authorized(request)
        return paged(dated(shop.accounts, request, "updated_at", "since", "until"), request)

    def orders(request: RecordedRequest) -> dict:
        _authorized(request)
        found = shop.orders.get(int(request.path_params["account"]), [])
        return paged(dated(found, request, "updated_at", "since", "until"), request)

    def notes(request: RecordedRequest) -> dict | Reply:
        _authorized(request)
        if shop.refuse_notes_page is not None and request.param("page") == str(shop.refuse_notes_page):
            return Reply(401, {"error": "token revoked"})
        return paged(shop.notes, request, default_page_size=100)

    api.route("GET", "/items", items)
    api.route("GET", "/accounts", accounts)
    api.route("GET", "/accounts/{account}/orders", orders)
    api.route("GET", "/notes", notes)
    return shop


@pytest.fixture
def shop(fake_api) -> Shop:
    return serve(fake_api)


@pytest.fixture
def manifest(write_manifest) -> str:
    return write_manifest(MANIFEST)


def config_for(shop: Shop, end: str = END) -> dict:
    return {"base_url": shop.api.url, "api_key": SECRET, "start": START, "end": end}


def settings_for(output: Any, fmt: dict | None = None, **more: Any) -> DestinationSettings:
    return DestinationSettings.model_validate({"output": str(output), "format": fmt or {"format_type": "Parquet"},
                                               **more})


def sync(spark: Any, manifest: str, shop: Shop, settings: DestinationSettings, *, streams: list[str] | None = None,
         end: str = END, **options: Any) -> PipelineResult:
    """One sync of ``streams`` (all when None) through ``run_pipeline`` on the shared session."""
    connector = open_connector(manifest, config_for(shop, end), sleep=lambda seconds: None)
    selections = select_streams(connector.streams, None, streams)
    return run_pipeline(connector, manifest, selections, settings, spark, options=PipelineOptions(**options))


def stream_result(result: PipelineResult, name: str) -> Any:
    return next(s for s in result.streams if s.name == name)


def data_files(root: Path, stream: str, extension: str = ".parquet") -> list[Path]:
    """The visible files of a stream (hidden temp and metadata files left out), sorted by name."""
    folder = root / stream
    return sorted(p for p in folder.iterdir() if p.is_file() and not p.name.startswith(".")
                  and p.name.endswith(extension)) if folder.is_dir() else []


def saved_state(root: Path) -> dict:
    return json.loads((root / STATE_KEY).read_text())


def read_parquet(root: Path, stream: str) -> list[dict]:
    rows = [row for path in data_files(root, stream) for row in pq.read_table(path).to_pylist()]
    return sorted(rows, key=lambda r: r["id"])


# ----------------------------------------------------------------------------------------- Parquet


DEFAULT_NAME = re.compile(r"(?P<y>\d{4})_(?P<m>\d{2})_(?P<d>\d{2})_(?P<epoch>\d{13})_(?P<part>\d+)\.parquet")


def test_parquet_files_have_the_default_layout_and_the_seed_types(spark, shop, manifest, tmp_path):
    out = tmp_path / "out"
    exact = {"format_type": "Parquet", "time_adjusted_to_utc": True}  # the S3 1.0 exact form of times
    result = sync(spark, manifest, shop, settings_for(out, exact), streams=["items"])

    items = stream_result(result, "items")
    assert items.error is None and items.state_saved
    assert (items.records, items.units, items.units_done) == (8, 4, 4)
    assert items.nulled == 6
    files = data_files(out, "items")
    assert files and [f.name for f in files] == sorted(Path(f["key"]).name for f in items.files)
    for path in files:
        match = DEFAULT_NAME.fullmatch(path.name)
        assert match, path.name
        written = datetime.fromtimestamp(int(match["epoch"]) / 1000, timezone.utc)
        assert abs((written - datetime.now(timezone.utc)).total_seconds()) < 600  # the sync's start
        assert (match["y"], match["m"], match["d"]) == (f"{written:%Y}", f"{written:%m}", f"{written:%d}")
    assert sorted(int(DEFAULT_NAME.fullmatch(p.name)["part"]) for p in files) == \
        sorted(f["part_number"] for f in items.files)
    assert sum(pq.ParquetFile(p).metadata.num_rows for p in files) == 8

    schema = pq.ParquetFile(files[0]).schema_arrow
    assert schema.names[:4] == ["_airbyte_raw_id", "_airbyte_extracted_at", "_airbyte_generation_id",
                                "_airbyte_meta"]
    expected = {
        "_airbyte_raw_id": pa.string(), "_airbyte_extracted_at": pa.timestamp("ms", tz="UTC"),
        "_airbyte_generation_id": pa.int64(), "id": pa.int64(), "name": pa.string(), "price": pa.float64(),
        "active": pa.bool_(), "quantity": pa.int64(), "updated_at": pa.timestamp("us", tz="UTC"),
        "local_ts": pa.timestamp("us", tz="UTC"), "day": pa.date32(), "at_time": pa.time64("us"),
        "local_time": pa.time64("us"), "extra": pa.string(), "tags": pa.string(),
        "scores": pa.list_(pa.int64()),
        "address": pa.struct([("city", pa.string()), ("zip", pa.int64())]),
        "code": pa.struct([("type", pa.string()), ("integer", pa.int64()), ("string", pa.string())]),
    }
    for name, kind in expected.items():
        assert schema.field(name).type.equals(kind, check_metadata=False) or \
            (pa.types.is_list(kind) and schema.field(name).type.value_type == kind.value_type), name
    meta = schema.field("_airbyte_meta").type
    assert [meta.field(i).name for i in range(meta.num_fields)] == ["sync_id", "changes"]
    assert [f.name for f in meta.field("changes").type.value_type] == ["field", "change", "reason"]
    # The Parquet logical types themselves, as a Parquet reader sees them.
    columns = {c.path: c for c in (pq.ParquetFile(files[0]).schema.column(i)
                                   for i in range(len(pq.ParquetFile(files[0]).schema)))}
    assert "Timestamp(isAdjustedToUTC=true, timeUnit=milliseconds" in str(columns["_airbyte_extracted_at"].logical_type)
    assert "Timestamp(isAdjustedToUTC=true, timeUnit=microseconds" in str(columns["updated_at"].logical_type)
    assert "Time(isAdjustedToUTC=true, timeUnit=microseconds" in str(columns["at_time"].logical_type)
    assert str(columns["day"].logical_type) == "Date"
    assert columns["day"].physical_type == "INT32" and columns["updated_at"].physical_type == "INT64"

    rows = read_parquet(out, "items")
    assert [r["id"] for r in rows] == list(range(1, 9))
    assert len({r["_airbyte_raw_id"] for r in rows}) == 8
    for row in rows:
        assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", row["_airbyte_raw_id"])
        assert row["_airbyte_generation_id"] == 0
        assert row["_airbyte_meta"]["sync_id"] == 1
        assert abs(row["_airbyte_extracted_at"] - datetime.now(timezone.utc)).total_seconds() < 600
    first, second, third, fourth = rows[:4]
    assert first["updated_at"] == datetime(2024, 1, 1, 6, tzinfo=timezone.utc)
    assert first["local_ts"] == datetime(2024, 3, 5, 6, 7, 8, tzinfo=timezone.utc)  # wall clock kept
    assert first["day"] == date(2024, 3, 5)
    assert first["at_time"] == time(13, 0)  # 12:00:00-01:00 is 13:00 UTC
    assert second["at_time"] == time(2, 0)  # 04:00:00+02:00
    assert third["at_time"] == time(22, 30)  # 04:00:00+05:30
    assert first["local_time"] == time(4, 5, 6)
    assert first["address"] == {"city": "Oslo", "zip": 150}  # the undocumented `planet` is dropped
    assert json.loads(first["extra"]) == {"id": 1, "name": "Alice"}
    assert json.loads(first["tags"]) == [1, "Alice"]
    assert first["code"] == {"type": "integer", "integer": 1, "string": None}
    assert second["code"] == {"type": "string", "integer": None, "string": "B2"}
    assert first["mixed"] == [{"type": "integer", "integer": 1, "string": None},
                              {"type": "string", "integer": None, "string": "Alice"}]
    assert first["_airbyte_meta"]["changes"] == []

    def changes(row: dict) -> list[tuple[str, str, str]]:
        return sorted((c["field"], c["change"], c["reason"]) for c in row["_airbyte_meta"]["changes"])

    assert second["price"] is None and second["scores"] == [1, None]
    assert changes(second) == [("price", "NULLED", "DESTINATION_SERIALIZATION_ERROR"),
                               ("scores[1]", "NULLED", "DESTINATION_SERIALIZATION_ERROR")]
    assert third["quantity"] is None and third["mixed"][1] is None
    assert changes(third) == [("mixed[1]", "NULLED", "DESTINATION_SERIALIZATION_ERROR"),
                              ("quantity", "NULLED", "DESTINATION_FIELD_SIZE_LIMITATION")]
    assert fourth["address"] == {"city": None, "zip": None} and fourth["day"] is None
    assert changes(fourth) == [("address.zip", "NULLED", "DESTINATION_SERIALIZATION_ERROR"),
                               ("day", "NULLED", "DESTINATION_SERIALIZATION_ERROR")]

    # Spark reads the same files. Spark cannot read Parquet TIME(MICROS, isAdjustedToUTC=true) columns at all
    # (PARQUET_TYPE_ILLEGAL), which the seed asks for, so the time columns are left out of the schema here
    # (the default form, isAdjustedToUTC=false, needs no schema: tests/spark/test_spark_reads_output.py).
    frame = spark.read.schema(SPARK_ITEMS).parquet(str(out / "items"))
    assert frame.count() == 8
    spark_rows = {r["id"]: r for r in frame.collect()}
    assert spark_rows[2]["price"] is None and spark_rows[1]["price"] == 1.5
    assert spark_rows[1]["day"] == date(2024, 3, 5) and spark_rows[4]["address"]["zip"] is None
    assert spark_rows[1]["updated_at"].replace(tzinfo=None) == \
        datetime(2024, 1, 1, 6, tzinfo=timezone.utc).astimezone().replace(tzinfo=None)
    assert spark_rows[2]["code"].asDict() == {"type": "string", "integer": None, "string": "B2"}
    assert spark_rows[3]["_airbyte_meta"]["sync_id"] == 1
    assert {c["field"] for c in spark_rows[3]["_airbyte_meta"]["changes"]} == {"quantity", "mixed[1]"}
    assert json.loads(spark_rows[1]["extra"]) == {"id": 1, "name": "Alice"}


#: The Spark schema of the items files, time columns left out.
SPARK_ITEMS = ("_airbyte_raw_id string, _airbyte_extracted_at timestamp, _airbyte_generation_id bigint, "
               "_airbyte_meta struct<sync_id: bigint, changes: array<struct<field: string, change: string, "
               "reason: string>>>, id bigint, name string, price double, active boolean, quantity bigint, "
               "updated_at timestamp, local_ts timestamp, day date, address struct<city: string, zip: bigint>, "
               "extra string, tags string, scores array<bigint>, code struct<type: string, integer: bigint, "
               "string: string>, mixed array<struct<type: string, integer: bigint, string: string>>")


def test_avro_files_read_back_with_fastavro(spark, shop, manifest, tmp_path):
    out = tmp_path / "out"
    fmt = {"format_type": "Avro", "compression_codec": {"codec": "Deflate", "compression_level": 3}}
    result = sync(spark, manifest, shop, settings_for(out, fmt), streams=["items"])
    assert stream_result(result, "items").error is None

    files = data_files(out, "items", ".avro")
    assert files
    records, schema = [], None
    for path in files:
        with open(path, "rb") as handle:
            reader = fastavro.reader(handle)
            assert reader.codec == "deflate"
            schema = reader.writer_schema
            records.extend(reader)
    records.sort(key=lambda r: r["id"])
    assert [r["id"] for r in records] == list(range(1, 9))
    fields = {f["name"]: f["type"] for f in schema["fields"]}
    assert fields["_airbyte_raw_id"] == {"type": "string", "logicalType": "uuid"}
    assert fields["_airbyte_extracted_at"] == {"type": "long", "logicalType": "timestamp-millis"}
    assert fields["_airbyte_generation_id"] == "long"
    assert fields["day"] == ["null", {"type": "int", "logicalType": "date"}]
    assert fields["at_time"] == ["null", {"type": "long", "logicalType": "time-micros"}]
    assert fields["local_ts"] == ["null", {"type": "long", "logicalType": "timestamp-micros"}]
    assert fields["id"] == ["null", "long"] and fields["extra"] == ["null", "string"]
    assert fields["code"] == ["null", "long", "string"]
    first, second = records[0], records[1]
    assert first["day"] == date(2024, 3, 5) and first["at_time"] == time(13, 0)
    assert first["updated_at"] == datetime(2024, 1, 1, 6, tzinfo=timezone.utc)
    assert first["code"] == 1 and second["code"] == "B2"
    assert first["mixed"] == [1, "Alice"]
    assert json.loads(first["extra"]) == {"id": 1, "name": "Alice"}
    assert second["price"] is None
    assert {c["field"] for c in second["_airbyte_meta"]["changes"]} == {"price", "scores[1]"}
    assert second["_airbyte_meta"]["sync_id"] == 1


# ------------------------------------------------------------------------------------ incremental


def test_second_run_with_the_same_output_reads_only_new_records(spark, shop, manifest, tmp_path):
    out = tmp_path / "out"
    first = sync(spark, manifest, shop, settings_for(out), streams=["items"])
    assert first.sync_id == 1 and not first.failed
    state = saved_state(out)
    assert state["sync_id"] == 1
    assert state["streams"]["items"]["state"] == {"updated_at": "2024-01-04T18:00:00Z"}
    assert len(shop.requests("/items")) > 0
    before = len(shop.requests("/items"))
    shop.items += [item(9, 5, 6), item(10, 5, 12)]

    second = sync(spark, manifest, shop, settings_for(out), streams=["items"], end="2024-01-05T23:59:59Z")

    assert second.sync_id == 2 and not second.failed
    starts = sorted({r.param("since") for r in shop.requests("/items")[before:]})
    assert starts == ["2024-01-04T18:00:00Z", "2024-01-05T18:00:00Z"]  # one-day windows from the saved state
    new_files = [Path(f["uri"]) for f in stream_result(second, "items").files]
    rows = [row for path in new_files for row in pq.read_table(path).to_pylist()]
    # The window starts at the saved value itself (inclusive, as Airbyte's cursor), so item 8 comes again.
    assert sorted(r["id"] for r in rows) == [8, 9, 10]
    assert {r["_airbyte_meta"]["sync_id"] for r in rows} == {2}
    state = saved_state(out)
    assert state["sync_id"] == 2
    assert state["streams"]["items"]["state"] == {"updated_at": "2024-01-05T12:00:00Z"}
    assert len(read_parquet(out, "items")) == 11


def test_given_state_wins_over_the_saved_one(spark, shop, manifest, tmp_path):
    out = tmp_path / "out"
    connector = open_connector(manifest, config_for(shop), sleep=lambda seconds: None)
    result = run_pipeline(connector, manifest, select_streams(connector.streams, None, ["items"]),
                          settings_for(out), spark, given_states={"items": {"updated_at": "2024-01-04T00:00:00Z"}})
    assert not result.failed
    assert sorted(r["id"] for r in read_parquet(out, "items")) == [7, 8]
    assert {r.param("since") for r in shop.requests("/items")} == {"2024-01-04T00:00:00Z"}


# ------------------------------------------------------------------------ failures and durability


def test_state_covers_only_units_whose_files_were_committed(spark, shop, manifest, tmp_path):
    out = tmp_path / "out"
    shop.refuse_since = {"2024-01-02T00:00:00Z"}  # the second window of items answers 401
    result = sync(spark, manifest, shop, settings_for(out), streams=["items", "notes"], tasks_per_core=1)

    items, notes = stream_result(result, "items"), stream_result(result, "notes")
    assert result.failed
    assert items.error and "401" in items.error and SECRET not in items.error
    assert items.units == 4 and items.units_done < 4
    assert notes.error is None and notes.records == 5 and len(data_files(out, "notes")) >= 1
    # What is visible: complete files of the tasks that did not fail, and only those.
    visible = read_parquet(out, "items")
    assert {Path(f["uri"]).name for f in items.files} == {p.name for p in data_files(out, "items")}
    assert not {3, 4} & {r["id"] for r in visible}  # the refused window's records
    assert not [p for p in (out / "items").iterdir() if p.name.endswith(".tmp")]
    assert items.records == len(visible)
    # The state never covers a record that is not in a visible file.
    state = saved_state(out)["streams"]["items"].get("state") or {}
    covered = state.get("updated_at")
    missing = [r["id"] for r in shop.items if covered and r["updated_at"] <= covered
               and r["id"] not in {v["id"] for v in visible}]
    assert missing == []

    shop.refuse_since = set()
    again = sync(spark, manifest, shop, settings_for(out), streams=["items"])
    assert not again.failed
    assert {r["id"] for r in read_parquet(out, "items")} == set(range(1, 9))  # nothing lost


def task_job(shop, manifest, tmp_path):
    """A one-task job over the items stream, and its plan: what the driver would send, without Spark."""
    from framework.engine.plan import open_sync
    from framework.engine.worker import ConnectorSource
    from framework.spark.tasks import TaskJob

    connector = open_connector(manifest, config_for(shop), sleep=lambda seconds: None)
    stream = connector.stream("items")
    plan = open_sync(connector, stream, None).plan()
    settings = settings_for(tmp_path / "out")
    source = ConnectorSource(Path(manifest).read_text(), manifest, str(tmp_path), dict(connector.config),
                             {"items": dict(stream.json_schema)})
    job = TaskJob(source=source, stream="items", destination=orjson.loads(settings.model_dump_json(by_alias=True)),
                  sync_id=1, generation_id=0, part_start=0, tasks=1)
    return job, plan


def test_a_task_that_fails_reports_every_unit_it_held_as_failed(shop, manifest, tmp_path):
    """Without Spark: one task with two units, the second refused. The first unit's records were read but
    its files are aborted with the task's, so its row must not tell the driver it is done."""
    from framework.engine.results import from_arrow
    from framework.spark.tasks import encode_units, run_task

    job, plan = task_job(shop, manifest, tmp_path)
    shop.refuse_since = {"2024-01-02T00:00:00Z"}
    table = encode_units(plan[:2])
    results = [r for batch in run_task(job, iter(table.to_batches()), 0) for r in from_arrow(batch)]

    assert [r.unit for r in results] == [0, 1]
    assert all(r.error for r in results), results
    assert "401" in results[1].error
    assert results[0].error.startswith("not written, another partition of its task failed: ")
    assert all(r.files == () for r in results)
    assert data_files(tmp_path / "out", "items") == []


def test_a_task_that_outlives_its_driver_only_stages_and_the_next_run_removes_its_files(spark, shop, manifest,
                                                                                        tmp_path):
    """A zombie (its driver is gone, no state lists its files) can only stage: nothing of it is visible, and
    the next run removes it and reads its units once."""
    from framework.spark.tasks import encode_units, run_task
    from framework.storage.state_store import STAGING_PREFIX

    job, plan = task_job(shop, manifest, tmp_path)
    list(run_task(job, iter(encode_units(plan).to_batches()), 0))  # the zombie: every unit, all written
    out = tmp_path / "out"
    assert data_files(out, "items") == []
    assert any(p.name.endswith(".parquet.staged") for p in (out / STAGING_PREFIX).rglob("*"))  # no data glob matches
    result = sync(spark, manifest, shop, settings_for(out), streams=["items"])
    assert not result.failed
    assert [r["id"] for r in read_parquet(out, "items")] == list(range(1, 9))  # once each
    assert not (out / STAGING_PREFIX).exists() and "publishing" not in saved_state(out)


def test_one_result_row_per_unit(shop, manifest, tmp_path):
    """The driver gets one small row per unit back, never records: run a task without Spark and look."""
    from framework.spark.tasks import RESULT_SCHEMA, encode_units, run_task

    job, plan = task_job(shop, manifest, tmp_path)
    batches = list(run_task(job, iter(encode_units(plan).to_batches(max_chunksize=1)), 0))

    assert all(b.schema.equals(RESULT_SCHEMA) for b in batches)
    rows = [row for b in batches for row in b.to_pylist()]
    assert [r["unit"] for r in rows] == [u.index for u in plan]
    assert [r["records"] for r in rows] == [2, 2, 2, 2]
    assert all(r["error"] is None for r in rows)
    assert [r["latest"] for r in rows] == ["2024-01-01T18:00:00+00:00", "2024-01-02T18:00:00+00:00",
                                           "2024-01-03T18:00:00+00:00", "2024-01-04T18:00:00+00:00"]
    files = orjson.loads(rows[0]["files"])
    assert [f["records"] for f in files] == [8] and all(r["files"] is None for r in rows[1:])
    assert sum(b.nbytes for b in batches) < 4096


def test_a_task_reads_several_of_its_units_at_once(shop, manifest, tmp_path):
    """``TaskJob.readers``: the units are read by threads, their pages written by the task as they come; one
    row per unit (in the order they finished), the task's files on one of them; a refused unit fails all."""
    from framework.engine.results import from_arrow
    from framework.spark.tasks import encode_units, run_task
    from framework.values import replace

    job, plan = task_job(shop, manifest, tmp_path)
    job = replace(job, readers=3)
    results = sorted((r for b in run_task(job, iter(encode_units(plan).to_batches()), 0) for r in from_arrow(b)),
                     key=lambda r: r.unit)
    assert [(r.unit, r.records, r.error) for r in results] == [(u.index, 2, None) for u in plan]
    assert [f["records"] for r in results for f in r.files] == [8]

    shop.refuse_since = {"2024-01-02T00:00:00Z"}
    failed = [r for b in run_task(job, iter(encode_units(plan).to_batches()), 0) for r in from_arrow(b)]
    assert sorted(r.unit for r in failed) == [u.index for u in plan]
    assert all(r.error and r.files == () for r in failed)
    assert any("401" in r.error for r in failed)


def test_a_task_reads_with_room_for_a_page_in_the_young_generation_and_puts_the_collector_back(
        shop, manifest, tmp_path, monkeypatch):
    """While a task reads, the collector's young threshold is YOUNG_OBJECTS and the heap it started with is
    frozen; afterwards both are as they were, also when reading raised."""
    import gc

    from framework.collector import YOUNG_OBJECTS
    from framework.spark import tasks

    job, plan = task_job(shop, manifest, tmp_path)
    seen: list[tuple[tuple[int, ...], int]] = []
    real_read_group = tasks.read_group

    def watched(*args, **kwargs):
        seen.append((gc.get_threshold(), gc.get_freeze_count()))
        yield from real_read_group(*args, **kwargs)

    monkeypatch.setattr(tasks, "read_group", watched)
    before, frozen = gc.get_threshold(), gc.get_freeze_count()
    assert before[0] < YOUNG_OBJECTS  # Python's default (700): the test means something
    rows = [r for b in tasks.run_task(job, iter(tasks.encode_units(plan).to_batches()), 0) for r in b.to_pylist()]
    assert [r["records"] for r in rows] == [2, 2, 2, 2]
    (threshold, frozen_then), = seen
    assert threshold == (YOUNG_OBJECTS, *before[1:]) and frozen_then > frozen
    assert gc.get_threshold() == before and gc.get_freeze_count() == frozen

    def broken(*args, **kwargs):
        raise KeyboardInterrupt
        yield

    monkeypatch.setattr(tasks, "read_group", broken)
    with pytest.raises(KeyboardInterrupt):
        list(tasks.run_task(job, iter(tasks.encode_units(plan).to_batches()), 0))
    assert gc.get_threshold() == before and gc.get_freeze_count() == frozen


# ------------------------------------------------------------------- sync modes, parts and rolling


def part_numbers(result: PipelineResult, name: str) -> list[int]:
    return sorted(f["part_number"] for f in stream_result(result, name).files)


def sidecar(path: Path) -> dict:
    """The metadata of a landed file (in the output's hidden .metadata folder: <out>/.metadata/<stream>/<name>.json)."""
    return json.loads((path.parent.parent / ".metadata" / path.parent.name / f"{path.name}.json").read_text())


def test_append_continues_part_numbers_after_the_files_already_there(spark, shop, manifest, tmp_path):
    out = tmp_path / "out"
    first = sync(spark, manifest, shop, settings_for(out), streams=["items"])
    second = sync(spark, manifest, shop, settings_for(out), streams=["items"], end="2024-01-05T23:59:59Z")

    before, after = part_numbers(first, "items"), part_numbers(second, "items")
    assert before and after and min(after) > max(before)
    names = [p.name for p in data_files(out, "items")]
    assert len(names) == len(before) + len(after) == len(set(names))
    assert {sidecar(p)["ab-generation-id"] for p in data_files(out, "items")} == {"0"}


def test_overwrite_replaces_older_generations_only_after_success(spark, shop, manifest, tmp_path):
    out = tmp_path / "out"
    sync(spark, manifest, shop, settings_for(out), streams=["items"])
    gen0 = data_files(out, "items")
    assert {sidecar(p)["ab-generation-id"] for p in gen0} == {"0"}

    over = sync(spark, manifest, shop, settings_for(out), streams=["items"], sync_mode="overwrite")

    assert not over.failed
    gen1 = data_files(out, "items")
    assert not set(gen0) & set(gen1)  # generation 0 deleted
    assert not [p for p in (out / ".metadata" / "items").iterdir()
                if p.name.removesuffix(".json") in {g.name for g in gen0}]  # with their metadata
    assert {sidecar(p)["ab-generation-id"] for p in gen1} == {"1"}
    rows = read_parquet(out, "items")
    assert [r["id"] for r in rows] == list(range(1, 9))  # an overwrite reads everything again
    assert {r["_airbyte_generation_id"] for r in rows} == {1}
    assert min(part_numbers(over, "items")) > max(int(DEFAULT_NAME.fullmatch(p.name)["part"]) for p in gen0)
    state = saved_state(out)
    assert state["streams"]["items"]["generation_id"] == 1 and state["sync_id"] == 2

    shop.refuse_since = {"2024-01-03T00:00:00Z"}
    failed = sync(spark, manifest, shop, settings_for(out), streams=["items"], sync_mode="overwrite")

    assert failed.failed
    kept = data_files(out, "items")
    assert set(gen1) <= set(kept)  # a failed overwrite deletes nothing
    assert {sidecar(p)["ab-generation-id"] for p in set(kept) - set(gen1)} <= {"2"}
    assert saved_state(out)["streams"]["items"]["generation_id"] == 2

    shop.refuse_since = set()
    sync(spark, manifest, shop, settings_for(out), streams=["items"], sync_mode="overwrite")
    final = data_files(out, "items")
    assert {sidecar(p)["ab-generation-id"] for p in final} == {"3"}
    assert [r["id"] for r in read_parquet(out, "items")] == list(range(1, 9))


def test_while_an_overwrite_runs_its_generation_is_saved_and_the_older_files_stay(spark, shop, manifest, tmp_path):
    out = tmp_path / "out"
    sync(spark, manifest, shop, settings_for(out), streams=["items"])
    gen0, state0 = data_files(out, "items"), saved_state(out)["streams"]["items"]["state"]
    shop.hang_since = {"2024-01-02T00:00:00Z"}
    results: list[PipelineResult] = []
    running = threading.Thread(target=lambda: results.append(
        sync(spark, manifest, shop, settings_for(out), streams=["items"], sync_mode="overwrite")))
    running.start()
    try:
        assert shop.hanging.wait(120), "the overwrite never reached the hanging window"
        during = saved_state(out)
        assert during["streams"]["items"] == {"state": state0, "generation_id": 1}  # saved before any new file
        assert set(gen0) <= set(data_files(out, "items"))  # nothing deleted yet
    finally:
        shop.release.set()
        running.join(120)
    assert results and not results[0].failed
    assert {sidecar(p)["ab-generation-id"] for p in data_files(out, "items")} == {"1"}


def test_files_roll_over_at_the_size_limit_of_a_destination_file(spark, shop, manifest, tmp_path, capsys):
    from framework.cli.run import main

    out = tmp_path / "out"
    filler = "x" * 1000
    shop.notes = [{"id": n, "text": f"{n}{filler}"} for n in range(3000)]  # about 3 MB in 30 pages
    destination = tmp_path / "destination.json"
    destination.write_text(json.dumps({"output": str(out), "file_size_limit_mb": 1,
                                       "format": {"format_type": "JSONL"}}))
    config = tmp_path / "config.json"
    config.write_text(json.dumps(config_for(shop)))
    code = main([manifest, "--config", str(config), "--destination", str(destination), "--streams", "notes"],
                out=io.BytesIO())

    assert code == 0, capsys.readouterr().err
    files = data_files(out, "notes", ".jsonl")
    assert 3 <= len(files) <= 4
    sizes = [p.stat().st_size for p in files]
    assert all(size < 1024 * 1024 + 120_000 for size in sizes)  # a file closes at the first page past 1 MB
    assert sum(size >= 1024 * 1024 for size in sizes) == len(files) - 1  # every file but the last is full
    parts = sorted(int(p.name.rsplit("_", 1)[1].split(".")[0]) for p in files)
    assert parts == list(range(len(files)))
    ids = [json.loads(line)["_airbyte_data"]["id"] for p in files for line in p.read_text().splitlines()]
    assert sorted(ids) == list(range(3000))


# ------------------------------------------------------------------------------ CSV and JSONL


def lines_of(path: Path) -> list[str]:
    data = path.read_bytes()
    return (gzip.decompress(data) if path.name.endswith(".gz") else data).decode().splitlines()


def test_jsonl_without_flattening_keeps_the_record_whole(spark, shop, manifest, tmp_path):
    out = tmp_path / "out"
    fmt = {"format_type": "JSONL", "compression": {"compression_type": "GZIP"}}
    sync(spark, manifest, shop, settings_for(out, fmt), streams=["items", "notes"])

    files = data_files(out, "items", ".jsonl.gz")
    assert files and all(p.read_bytes()[:2] == b"\x1f\x8b" for p in files)
    lines = [json.loads(line) for p in files for line in lines_of(p)]
    assert len(lines) == 8
    for line in lines:
        assert list(line) == ["_airbyte_raw_id", "_airbyte_extracted_at", "_airbyte_meta",
                              "_airbyte_generation_id", "_airbyte_data"]
        assert isinstance(line["_airbyte_extracted_at"], int)
        assert line["_airbyte_meta"] == {"sync_id": 1, "changes": []}
    by_id = {line["_airbyte_data"]["id"]: line["_airbyte_data"] for line in lines}
    assert by_id[2] == first_items()[1]  # as it came: nothing typed, nothing nulled
    assert by_id[3]["quantity"] == 2 ** 70
    notes = [json.loads(line) for p in data_files(out, "notes", ".jsonl.gz") for line in lines_of(p)]
    assert sorted(n["_airbyte_data"]["id"] for n in notes) == [0, 1, 2, 3, 4]


def test_jsonl_with_root_level_flattening(spark, shop, manifest, tmp_path):
    out = tmp_path / "out"
    fmt = {"format_type": "JSONL", "flattening": "Root level flattening"}
    sync(spark, manifest, shop, settings_for(out, fmt), streams=["items"])

    lines = [json.loads(line) for p in data_files(out, "items", ".jsonl") for line in lines_of(p)]
    first = next(line for line in lines if line["id"] == 1)
    assert list(first)[:4] == ["_airbyte_raw_id", "_airbyte_extracted_at", "_airbyte_meta", "_airbyte_generation_id"]
    assert "_airbyte_data" not in first
    assert first["address"] == {"city": "Oslo", "zip": 150, "planet": "Earth"}
    assert first["tags"] == [1, "Alice"] and first["updated_at"] == "2024-01-01T06:00:00Z"


def test_csv_without_flattening_and_with_root_level_flattening(spark, shop, manifest, tmp_path):
    plain, flat = tmp_path / "plain", tmp_path / "flat"
    sync(spark, manifest, shop, settings_for(plain, {"format_type": "CSV"}), streams=["items"])
    sync(spark, manifest, shop, settings_for(flat, {"format_type": "CSV", "flattening": "Root level flattening",
                                                    "compression": {"compression_type": "GZIP"}}),
         streams=["items", "notes"])

    rows = [row for p in data_files(plain, "items", ".csv") for row in csv.DictReader(io.StringIO(
        "\n".join(lines_of(p))))]
    assert len(rows) == 8
    assert list(rows[0]) == ["_airbyte_raw_id", "_airbyte_extracted_at", "_airbyte_meta", "_airbyte_generation_id",
                             "_airbyte_data"]
    assert {json.loads(r["_airbyte_data"])["id"] for r in rows} == set(range(1, 9))
    assert json.loads(rows[0]["_airbyte_meta"]) == {"sync_id": 1, "changes": []}

    files = data_files(flat, "items", ".csv.gz")
    assert files
    rows = [row for p in files for row in csv.DictReader(io.StringIO("\n".join(lines_of(p))))]
    header = lines_of(files[0])[0].split(",")
    assert header == ["_airbyte_raw_id", "_airbyte_extracted_at", "_airbyte_meta", "_airbyte_generation_id", "id",
                      "name", "price", "active", "quantity", "updated_at", "local_ts", "day", "at_time",
                      "local_time", "address", "extra", "tags", "scores", "code", "mixed"]
    first = next(r for r in rows if r["id"] == "1")
    assert first["name"] == "item 1" and first["price"] == "1.5" and first["active"] == "false"
    assert json.loads(first["address"]) == {"city": "Oslo", "zip": 150, "planet": "Earth"}
    notes = [row for p in data_files(flat, "notes", ".csv.gz") for row in csv.DictReader(io.StringIO(
        "\n".join(lines_of(p))))]
    assert sorted(json.loads(n["_airbyte_data"])["id"] for n in notes) == [0, 1, 2, 3, 4]  # no schema: kept whole


# ------------------------------------------------------------------------------------ substreams


def test_substream_parents_are_read_on_the_driver_and_children_spread_over_tasks(spark, shop, manifest, tmp_path):
    out = tmp_path / "out"
    result = sync(spark, manifest, shop, settings_for(out), streams=["orders"])

    orders = stream_result(result, "orders")
    assert orders.error is None
    assert orders.units == 8 and orders.units_done == 8  # two accounts times four windows
    assert orders.records == 5 and len(orders.files) >= 2  # more than one task wrote files
    rows = read_parquet(out, "orders")
    assert [(r["id"], r["account_id"]) for r in rows] == [(101, 1), (102, 1), (103, 1), (202, 2), (204, 2)]
    assert not (out / "accounts").exists()
    account_windows = sorted(r.param("since") for r in shop.requests("/accounts"))
    assert account_windows == ["2024-01-01T00:00:00Z", "2024-01-02T00:00:00Z", "2024-01-03T00:00:00Z",
                               "2024-01-04T00:00:00Z"]  # the parent, read once, on the driver
    state = saved_state(out)["streams"]["orders"]["state"]
    assert state["parent_state"] == {"accounts": {"updated_at": "2024-01-03T10:00:00Z"}}
    assert sorted((s["partition"]["account_id"], s["cursor"]["updated_at"]) for s in state["states"]) == [
        (1, "2024-01-03T12:00:00Z"), (2, "2024-01-04T12:00:00Z")]

    shop.accounts.append({"id": 3, "name": "Initech", "updated_at": "2024-01-05T10:00:00Z"})
    shop.orders[3] = [{"id": 301, "account_id": 3, "total": 9.0, "updated_at": "2024-01-05T11:00:00Z"}]
    before = len(shop.requests("/accounts"))
    again = sync(spark, manifest, shop, settings_for(out), streams=["orders"], end="2024-01-05T23:59:59Z")

    assert not again.failed
    assert {r.param("since") for r in shop.requests("/accounts")[before:]} >= {"2024-01-03T10:00:00Z"}
    assert min(r.param("since") for r in shop.requests("/accounts")[before:]) == "2024-01-03T10:00:00Z"
    assert saved_state(out)["streams"]["orders"]["state"]["parent_state"] == {
        "accounts": {"updated_at": "2024-01-05T10:00:00Z"}}
    assert 301 in {r["id"] for r in read_parquet(out, "orders")}


# ------------------------------------------------------------------------------ schema problems


CONFLICTED = """\
  - type: DeclarativeStream
    name: conflicted
    schema_loader:
      type: InlineSchemaLoader
      schema:
        type: object
        properties:
          who:
            oneOf:
              - {type: object, properties: {id: {type: integer}}}
              - {type: object, properties: {id: {type: string}}}
    retriever:
      type: SimpleRetriever
      requester: {$ref: "#/definitions/requester", path: /conflicted}
      record_selector: {$ref: "#/definitions/selector"}
check:"""


def test_a_schema_the_sink_cannot_type_fails_its_stream_before_any_request(spark, shop, write_manifest, tmp_path):
    manifest = write_manifest(MANIFEST.replace("check:", CONFLICTED, 1))
    out = tmp_path / "out"
    result = sync(spark, manifest, shop, settings_for(out), streams=["conflicted", "notes"])

    conflicted = stream_result(result, "conflicted")
    assert conflicted.error.startswith("stream `conflicted`: field `who.id` has two types that cannot be merged")
    assert shop.requests("/conflicted") == []
    assert stream_result(result, "notes").error is None and len(data_files(out, "notes")) == 1


class BrokenSpark:
    """A session whose jobs all fail, as when an executor dies: enough of SparkSession for run_pipeline."""

    class sparkContext:
        defaultParallelism = 2

        @staticmethod
        def setJobGroup(group: str, description: str, interruptOnCancel: bool = False) -> None:
            pass

    class conf:
        @staticmethod
        def get(key: str, default: str | None = None) -> str | None:
            return {"spark.master": "local[2]"}.get(key, default)

    @staticmethod
    def createDataFrame(table: pa.Table) -> Any:
        raise RuntimeError("Job aborted due to stage failure: Task 0 in stage 3.0 failed\n"
                           "org.apache.spark.api.python.PythonException: Traceback (most recent call last):\n"
                           '  File "tasks.py", line 1, in run\n'
                           "OSError: [Errno 28] No space left on device\n"
                           "\tat org.apache.spark.api.python.BasePythonRunner.handlePythonException(x.scala:1)")


def test_a_spark_job_that_fails_as_a_whole_fails_its_stream_only(shop, manifest, tmp_path):
    out = tmp_path / "out"
    result = sync(BrokenSpark(), manifest, shop, settings_for(out), streams=["items", "notes"])

    items, notes = stream_result(result, "items"), stream_result(result, "notes")
    assert items.error == "a Spark task failed: OSError: [Errno 28] No space left on device"
    assert notes.error == items.error  # each stream tried, each reported
    assert (items.units, items.units_done, items.records) == (4, 0, 0)
    state = saved_state(out)
    # nothing finished: the state is the start, where the next sync begins anyway (as airbyte-cdk writes it)
    assert state["sync_id"] == 1 and state["streams"]["items"].get("state") == {"updated_at": "2024-01-01T00:00:00Z"}
