"""Schema drift end to end: ``run-manifest --output`` against an API whose events gain a field between syncs.

Under each policy the events' files are read back with pyarrow (one file at a time: a folder whose files
differ in columns is unified by another step), and the summary's counts are checked: ``drop`` lands the
seed's columns and says what it dropped, ``keep`` carries the new field in ``_airbyte_additional_properties``,
``evolve`` adds a typed column, recorded next to the state so that the next sync types it from its first
record, widens it when its values change type, and shows it in the landed catalog normalization reads.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import fastavro
import pyarrow.parquet as pq
import pytest
import yaml
from fakes.api_server import FakeApi, RecordedRequest, dated, paged

from framework.cli.normalize import main as normalize_main
from framework.cli.run import main
from framework.formats.rolling import RollingWriter
from framework.models.destination import AvroFormat, ParquetFormat
from framework.spark.tasks import _rolling_on_new_columns
from framework.storage.drift_store import DRIFT_KEY
from framework.storage.layout import PartNumbers
from framework.storage.local import LocalStorage
from framework.storage.state_store import CATALOG_KEY
from framework.typed import RecordConverter, parse_schema
from framework.typed.drift import ADDITIONAL_PROPERTIES

pytestmark = pytest.mark.spark

MANIFEST = """\
version: 6.7.0
type: DeclarativeSource
streams:
  - type: DeclarativeStream
    name: events
    primary_key: id
    schema_loader:
      type: InlineSchemaLoader
      schema:
        type: object
        properties:
          id: {type: integer}
          kind: {type: string}
          updated_at: {type: string, format: date-time}
          place: {type: object, properties: {city: {type: string}}}
    incremental_sync:
      type: DatetimeBasedCursor
      cursor_field: updated_at
      datetime_format: "%Y-%m-%dT%H:%M:%SZ"
      start_datetime: "2024-01-01T00:00:00Z"
      end_datetime: "{{ config.end }}"
      step: P1D
      cursor_granularity: PT1S
      start_time_option: {type: RequestOption, inject_into: request_parameter, field_name: since}
      end_time_option: {type: RequestOption, inject_into: request_parameter, field_name: until}
    retriever:
      type: SimpleRetriever
      requester: {type: HttpRequester, url_base: "{{ config.base_url }}", path: /events}
      record_selector:
        type: RecordSelector
        extractor: {type: DpathExtractor, field_path: [data]}
      paginator:
        type: DefaultPaginator
        pagination_strategy: {type: PageIncrement, start_from_page: 1, page_size: 3}
        page_token_option: {type: RequestOption, inject_into: request_parameter, field_name: page}
        page_size_option: {type: RequestOption, inject_into: request_parameter, field_name: per_page}
check: {type: CheckStream, stream_names: [events]}
spec:
  type: Spec
  connection_specification:
    type: object
    required: [base_url, end]
    properties: {base_url: {type: string}, end: {type: string}}
"""


def event(i: int, day: int, **more: Any) -> dict:
    return {"id": i, "kind": "click", "updated_at": f"2024-01-{day:02d}T{i % 20:02d}:00:00Z", **more}


#: Day 1 and 2: the declared fields. Day 3: the API adds `priority` (an integer) to half its events, and a
#: `zip` inside `place`. Day 4: no priority at all. Day 5: `priority` turns to text.
EVENTS = ([event(i, 1) for i in range(0, 4)] + [event(i, 2) for i in range(4, 8)]
          + [event(i, 3, place={"city": "Oslo", "zip": "0150"}) for i in range(8, 11)]
          + [event(i, 3, priority=i) for i in range(11, 14)]
          + [event(i, 4) for i in range(14, 17)]
          + [event(i, 5, priority="high") for i in range(17, 19)])


def serve(api: FakeApi) -> None:
    def events(request: RecordedRequest) -> dict:
        return paged(dated(EVENTS, request, "updated_at", "since", "until"), request)

    api.route("GET", "/events", events)


def run(tmp_path: Path, api: FakeApi, day: int, *flags: str, capsys: Any) -> tuple[int, str]:
    manifest, config = tmp_path / "manifest.yaml", tmp_path / "config.json"
    manifest.write_text(MANIFEST)
    config.write_text(json.dumps({"base_url": api.url, "end": f"2024-01-{day:02d}T23:59:59Z"}))
    capsys.readouterr()
    code = main([str(manifest), "--config", str(config), "--output", str(tmp_path / "out"), "--no-check",
                 *flags], out=io.BytesIO())
    return code, capsys.readouterr().err


def drift_of(stderr: str) -> dict:
    summary = [json.loads(line) for line in stderr.splitlines() if line.startswith("{")][-1]
    assert summary["event"] == "summary"
    return summary["streams"][0]["schema_drift"]


def files(out: Path) -> list[Any]:
    """Each visible Parquet file of the events, read by pyarrow on its own, in the order written."""
    found = sorted(p for p in (out / "events").iterdir() if p.suffix == ".parquet" and not p.name.startswith("."))
    return [pq.read_table(p) for p in found]


def rows(out: Path) -> dict[int, dict]:
    """The landed events by id, the latest landing of each (a sync starts at the cursor value the last one
    ended on, inclusive, as Airbyte's cursor does: the last event of a sync is read again by the next)."""
    by_id: dict[int, dict] = {}
    for table in files(out):
        for row in table.to_pylist():
            if row["id"] not in by_id or row["_airbyte_meta"]["sync_id"] > by_id[row["id"]]["_airbyte_meta"]["sync_id"]:
                by_id[row["id"]] = row
    return by_id


def test_drop_lands_the_seeds_columns_and_the_summary_says_what_was_dropped(spark, fake_api, tmp_path, capsys):
    serve(fake_api)
    code, _ = run(tmp_path, fake_api, 2, "--log-format", "json", capsys=capsys)
    assert code == 0
    code, text = run(tmp_path, fake_api, 3, capsys=capsys)
    assert code == 0
    assert ("events: 6 records had fields the schema does not declare: place.zip (3), priority (3) - dropped; "
            "--schema-drift keep|evolve (or events=keep|evolve) keeps them") in text
    code, stderr = run(tmp_path, fake_api, 5, "--log-format", "json", capsys=capsys)
    assert code == 0
    # days 4 and 5, and the last event of day 3 again (the cursor's inclusive start): 2 + 1 with priority
    assert drift_of(stderr) == {"policy": "drop", "records": 3, "fields": {"priority": 3}, "evolved": {}}
    out = tmp_path / "out"
    assert all(t.schema.names[4:] == ["id", "kind", "updated_at", "place"] for t in files(out))
    landed = rows(out)
    assert sorted(landed) == list(range(19))
    assert landed[8]["place"] == {"city": "Oslo"} and landed[8]["_airbyte_meta"]["changes"] == []
    assert not (out / DRIFT_KEY).exists()


def test_keep_carries_the_new_fields_as_json_text_in_every_file(spark, fake_api, tmp_path, capsys):
    serve(fake_api)
    assert run(tmp_path, fake_api, 2, "--schema-drift", "keep", "--log-format", "json", capsys=capsys)[0] == 0
    code, stderr = run(tmp_path, fake_api, 3, "--schema-drift", "keep", "--log-format", "json", capsys=capsys)
    assert code == 0
    assert drift_of(stderr) == {"policy": "keep", "records": 6, "fields": {"priority": 3, "place.zip": 3},
                                "evolved": {}}
    out = tmp_path / "out"
    assert all(t.schema.names[-1] == ADDITIONAL_PROPERTIES for t in files(out))
    landed = rows(out)
    assert sorted(landed) == list(range(14))
    kept = {i: json.loads(r[ADDITIONAL_PROPERTIES]) for i, r in landed.items() if r[ADDITIONAL_PROPERTIES]}
    assert kept == {**{i: {"place.zip": "0150"} for i in range(8, 11)}, **{i: {"priority": i} for i in range(11, 14)}}


def test_evolve_adds_a_typed_column_recorded_for_the_next_syncs_and_widens_it(spark, fake_api, tmp_path, capsys):
    serve(fake_api)
    out = tmp_path / "out"
    flag = ("--schema-drift", "events=evolve", "--log-format", "json")
    assert run(tmp_path, fake_api, 2, *flag, capsys=capsys)[0] == 0
    assert all(t.schema.names[4:] == ["id", "kind", "updated_at", "place"] for t in files(out))

    code, stderr = run(tmp_path, fake_api, 3, *flag, capsys=capsys)  # priority appears (integers)
    assert code == 0
    assert drift_of(stderr) == {"policy": "evolve", "records": 6, "fields": {"priority": 3, "place.zip": 3},
                                "evolved": {"priority": "integer"}}
    recorded = json.loads((out / DRIFT_KEY).read_text())
    assert recorded == {"streams": {"events": {"evolved": {"priority": "integer"}}}}
    catalog = json.loads((out / CATALOG_KEY).read_text())["streams"][0]["stream"]["json_schema"]["properties"]
    assert catalog["priority"] == {"type": ["null", "integer"]}
    landed = rows(out)
    assert {i: landed[i]["priority"] for i in range(11, 14)} == {11: 11, 12: 12, 13: 13}
    # a file started before the field came stays as it was: the next batch began a new file, nothing was lost
    for table in files(out):
        names = table.schema.names
        assert names[4:8] == ["id", "kind", "updated_at", "place"] and names[8:] in ([], ["priority"])
        if "priority" in names:
            assert str(table.schema.field("priority").type) == "int64"

    code, stderr = run(tmp_path, fake_api, 4, *flag, capsys=capsys)  # no priority: the column from the start
    assert code == 0 and drift_of(stderr)["records"] == 1  # event 13 again (the cursor's inclusive start)
    day_four = [t for t in files(out) if set(t.column("id").to_pylist()) & {14, 15, 16}]
    assert day_four and all(str(t.schema.field("priority").type) == "int64" for t in day_four)
    assert all(t.schema.names[8:] == ["priority"] for t in day_four)

    code, stderr = run(tmp_path, fake_api, 5, *flag, capsys=capsys)  # priority turns to text: widened, not nulled
    assert code == 0
    assert drift_of(stderr)["evolved"] == {"priority": "string"}
    assert json.loads((out / DRIFT_KEY).read_text())["streams"]["events"]["evolved"] == {"priority": "string"}
    catalog = json.loads((out / CATALOG_KEY).read_text())["streams"][0]["stream"]["json_schema"]["properties"]
    assert catalog["priority"] == {"type": ["null", "string"]}
    landed = rows(out)
    assert sorted(landed) == list(range(19))
    assert [landed[i]["priority"] for i in (17, 18)] == ["high", "high"]
    assert all(landed[i]["_airbyte_meta"]["changes"] == [] for i in landed)

    # normalization reads the landed catalog: the evolved column is a column of the typed table
    assert normalize_main(["--output", str(out), "--full-refresh", "--quiet"]) == 0
    table = pq.read_table(tmp_path / "out_normalized" / "events").to_pylist()
    priorities = {row["id"]: row["priority"] for row in table}
    assert sorted(priorities) == list(range(19))
    assert [priorities[i] for i in (7, 11, 17)] == [None, "11", "high"]


def test_a_bad_policy_or_an_unknown_stream_exits_2_with_the_fix(fake_api, tmp_path, capsys):
    serve(fake_api)
    with pytest.raises(SystemExit) as exited:
        run(tmp_path, fake_api, 2, "--schema-drift", "merge", capsys=capsys)
    assert exited.value.code == 2
    assert "give drop, keep or evolve" in capsys.readouterr().err
    code, stderr = run(tmp_path, fake_api, 2, "--schema-drift", "evnts=keep", capsys=capsys)
    assert code == 2
    assert "no stream named 'evnts' in the manifest (its streams: events)" in stderr


@pytest.mark.parametrize("fmt", [ParquetFormat(), AvroFormat()], ids=["parquet", "avro"])
def test_a_page_that_brings_a_new_field_starts_a_new_file_of_a_task(tmp_path, fmt):
    schema = yaml.safe_load(MANIFEST)["streams"][0]["schema_loader"]["schema"]
    converter = RecordConverter(parse_schema(schema, stream="events"), stream="events", drift="evolve")
    storage = LocalStorage(str(tmp_path))
    writer = RollingWriter(storage, lambda n: f"events/{n}{fmt.extension}", fmt, converter.schema,
                           converter.avro.schema, 1, 1 << 30, PartNumbers(0), to_avro=converter.to_avro_records)
    write = _rolling_on_new_columns(writer, converter)
    for page in ([event(0, 1), event(1, 1)], [event(2, 1)], [event(3, 1, priority=1), event(4, 1)],
                 [event(5, 1, priority=2)], [event(6, 1, priority=2.5)]):
        write(converter.convert(page, extracted_at_ms=0, generation_id=1, sync_id=1))
    files = writer.commit()
    assert [f.records for f in files] == [3, 3, 1]  # new column, then a wider kind: a file each, none lost
    if fmt.format_type == "Parquet":
        tables = [pq.read_table(tmp_path / f.key) for f in files]
        assert [t.schema.names[8:] for t in tables] == [[], ["priority"], ["priority"]]
        assert [str(t.schema.field("priority").type) for t in tables[1:]] == ["int64", "double"]
        values = [t.column("priority").to_pylist() for t in tables[1:]]
    else:
        readers = [list(fastavro.reader(open(tmp_path / f.key, "rb"))) for f in files]
        assert ["priority" in rows[0] for rows in readers] == [False, True, True]
        values = [[row["priority"] for row in rows] for rows in readers[1:]]
    assert values == [[1, None, 2], [2.5]]
