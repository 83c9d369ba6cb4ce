"""``run-manifest --discover`` answers from the schemas alone: streams whose read is driven by a custom class
are listed too, nothing is requested, and the custom-code gate and the config check still apply."""

from __future__ import annotations

import io
import json
import textwrap

import orjson
import pytest
import yaml

from framework.cli.run import main
from framework.errors import ConfigError, ManifestError
from framework.protocol.discover import custom_components, discover

COMPONENTS = '''
class Driver:
    """A retriever / requester / cursor that drives the read itself: discover must not build it."""

    def __init__(self, *args, **kwargs):
        raise RuntimeError("built by discover")

    def read_records(self, records_schema, stream_slice=None): return []
    def send_request(self, **kwargs): return None
    def stream_slices(self): return []
    def get_stream_state(self): return {}
    def set_initial_state(self, stream_state): pass
    def observe(self, stream_slice, record): pass
    def close_slice(self, stream_slice): pass


class Schema:
    def get_json_schema(self):
        return {"type": "object", "properties": {"id": {"type": "integer"}, "seen_at": {"type": "string"}}}
'''

SPEC = {"type": "object", "required": ["base_url"], "properties": {"base_url": {"type": "string"}}}


def _stream(name: str, **more) -> dict:
    stream = {
        "type": "DeclarativeStream", "name": name, "primary_key": "id",
        "schema_loader": {"type": "InlineSchemaLoader",
                          "schema": {"type": "object", "properties": {"id": {"type": "integer"}}}},
        "retriever": {"type": "SimpleRetriever",
                      "requester": {"type": "HttpRequester", "url_base": "{{ config['base_url'] }}", "path": "/x"},
                      "record_selector": {"type": "RecordSelector",
                                          "extractor": {"type": "DpathExtractor", "field_path": []}}},
    }
    stream.update(more)
    return stream


def _write(tmp_path, streams: list[dict], config: dict | None = None) -> tuple[str, str]:
    (tmp_path / "components.py").write_text(textwrap.dedent(COMPONENTS))
    manifest = {"version": "6.7.0", "type": "DeclarativeSource", "check": {"type": "CheckStream",
                                                                         "stream_names": [streams[0]["name"]]},
                "streams": streams, "spec": {"type": "Spec", "connection_specification": SPEC}}
    (tmp_path / "manifest.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False))
    (tmp_path / "config.json").write_text(json.dumps(config if config is not None else {"base_url": "http://127.0.0.1:9"}))
    return str(tmp_path / "manifest.yaml"), str(tmp_path / "config.json")


def _driven_streams() -> list[dict]:
    plain = _stream("plain")
    retriever = _stream("custom_retriever", retriever={"type": "CustomRetriever", "class_name": "components.Driver"})
    requester = _stream("custom_requester")
    requester["retriever"]["requester"] = {"type": "CustomRequester", "class_name": "components.Driver",
                                           "url_base": "http://127.0.0.1:9"}
    cursor = _stream("custom_cursor", incremental_sync={"type": "CustomIncrementalSync",
                                                         "class_name": "components.Driver",
                                                         "cursor_field": "{{ parameters['field'] }}",
                                                         "$parameters": {"field": "seen_at"}},
                     schema_loader={"type": "CustomSchemaLoader", "class_name": "components.Schema"})
    dated = _stream("dated", incremental_sync={"type": "DatetimeBasedCursor", "cursor_field": "updated_at",
                                               "datetime_format": "%Y-%m-%d",
                                               "start_datetime": "{{ config['start'] }}"})
    return [plain, retriever, requester, cursor, dated]


def test_streams_driven_by_custom_classes_are_listed_from_their_schemas(tmp_path):
    manifest, config = _write(tmp_path, _driven_streams())
    out = io.BytesIO()
    assert main([manifest, "--config", config, "--discover", "--allow-custom-code"], out=out) == 0
    (message,) = [orjson.loads(line) for line in out.getvalue().splitlines()]
    entries = {entry["name"]: entry for entry in message["catalog"]["streams"]}
    assert list(entries) == ["plain", "custom_retriever", "custom_requester", "custom_cursor", "dated"]
    assert entries["plain"] == {"name": "plain", "json_schema": {"type": "object", "properties": {"id": {"type": "integer"}}},
                                "supported_sync_modes": ["full_refresh"], "is_resumable": False,
                                "source_defined_primary_key": [["id"]]}
    assert entries["custom_retriever"]["supported_sync_modes"] == ["full_refresh"]
    cursor = entries["custom_cursor"]
    assert cursor["supported_sync_modes"] == ["full_refresh", "incremental"]
    assert cursor["default_cursor_field"] == ["seen_at"]  # the custom cursor's cursor_field, rendered
    assert cursor["json_schema"]["properties"]["seen_at"] == {"type": "string"}  # from the CustomSchemaLoader
    # a DatetimeBasedCursor whose start the config does not give (not built, so not rendered): still listed
    assert entries["dated"]["default_cursor_field"] == ["updated_at"]


def test_the_gate_still_refuses_shipped_code_and_nothing_is_built_or_requested(tmp_path, capsys):
    manifest, config = _write(tmp_path, _driven_streams())
    assert main([manifest, "--config", config, "--discover"], out=io.BytesIO()) == 2
    err = capsys.readouterr().err
    assert "would run the Python file" in err and "--allow-custom-code" in err and "manifest.yaml:" in err
    with pytest.raises(ConfigError, match="would run the Python file"):
        discover(manifest, {"base_url": "http://127.0.0.1:9"})


def test_the_config_is_still_checked_against_the_spec(tmp_path, capsys):
    manifest, config = _write(tmp_path, [_stream("plain")], config={"base_url": 3})
    assert main([manifest, "--config", config, "--discover"], out=io.BytesIO()) == 2
    assert "config.json" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="does not fit the manifest's spec"):
        discover(manifest, {})


def test_a_package_a_component_needs_and_that_is_missing_is_named_at_discover(tmp_path):
    streams = [_stream("plain")]
    streams[0]["retriever"]["record_selector"]["extractor"] = {"type": "CustomRecordExtractor",
                                                               "class_name": "components.Nowhere"}
    manifest, _ = _write(tmp_path, streams)
    body = "class Nowhere:\n    def extract_records(self, response): return []\n"
    (tmp_path / "components.py").write_text("import not_a_package_here\n\n" + body)
    with pytest.raises(ManifestError, match="needs the package `not_a_package_here`"):  # seen in the source
        discover(manifest, {"base_url": "x"}, allow_custom_code=True)
    # an import the source does not show is found when the class is loaded, and named the same way
    (tmp_path / "components.py").write_text("import importlib\nimportlib.import_module('not_a_' + 'package_here')\n"
                                            + body)
    with pytest.raises(ConfigError, match=r"imports `not_a_package_here`, which is not installed.*manifest.yaml:"):
        discover(manifest, {"base_url": "x"}, allow_custom_code=True)


def test_custom_components_finds_every_custom_class_with_its_manifest_path(tmp_path):
    from framework.manifest import check_manifest

    streams = _driven_streams()
    streams[0]["retriever"]["partition_router"] = {  # a class airbyte-cdk builds, nested in a custom one's keys
        "type": "CustomPartitionRouter", "class_name": "components.Router",
        "parent": {"extractor": {"class_name": "components.Inner", "field_path": []}}}
    manifest, _ = _write(tmp_path, streams)
    with open(tmp_path / "components.py", "a") as handle:
        handle.write("\n\nclass Router:\n    parent: dict\n\n    def stream_slices(self):\n        return []\n\n\n"
                     "class Inner:\n    def extract_records(self, response):\n        return []\n")
    checked = check_manifest(manifest)
    assert checked.ok and checked.source is not None, [d.format() for d in checked.errors]
    source = checked.source
    found = [(class_name, kind, path) for index, stream in enumerate(source.streams)
             for class_name, kind, path in custom_components(stream, ("streams", index))]
    assert found == [
        ("components.Router", "partition router", ("streams", 0, "retriever", "partition_router")),
        ("components.Inner", "component", ("streams", 0, "retriever", "partition_router", "parent", "extractor")),
        ("components.Driver", "retriever", ("streams", 1, "retriever")),
        ("components.Driver", "requester", ("streams", 2, "retriever", "requester")),
        ("components.Schema", "schema loader", ("streams", 3, "schema_loader")),
        ("components.Driver", "incremental sync", ("streams", 3, "incremental_sync")),
    ]
