"""``run-manifest --test-read --infer-schema / --write-schemas``: schemas from a test read, written where the
streams' loaders read them."""

from __future__ import annotations

import io
import json

import pytest
from fakes.api_server import FakeApi

from framework.cli.run import main
from framework.manifest import check_manifest

ITEMS = [{"id": i, "name": f"item {i}", "added_at": "2024-01-31T12:00:00Z", "size": i * 1.5} for i in range(3)]

MANIFEST = """\
version: 6.0.0
type: DeclarativeSource
check: {{type: CheckStream, stream_names: [inline]}}
definitions:
  retriever:
    type: SimpleRetriever
    requester: {{type: HttpRequester, url_base: {url}, path: /items}}
    record_selector:
      type: RecordSelector
      extractor: {{type: DpathExtractor, field_path: [items]}}
streams:
  # the inline schema: comments and style stay
  - type: DeclarativeStream
    name: inline
    schema_loader:
      type: InlineSchemaLoader
      schema:
        type: object
        properties:
          id: {{ type: integer, description: "kept as written" }}  # the key
    retriever: {{$ref: "#/definitions/retriever"}}
  - type: DeclarativeStream
    name: in_file
    schema_loader: {{type: JsonFileSchemaLoader, file_path: schemas/custom_in_file.json}}
    retriever: {{$ref: "#/definitions/retriever"}}
  - type: DeclarativeStream
    name: no_loader
    retriever: {{$ref: "#/definitions/retriever"}}
"""


@pytest.fixture()
def connector(tmp_path):
    with FakeApi() as api:
        api.route("GET", "/items", lambda request: {"items": ITEMS})
        (tmp_path / "schemas").mkdir()
        (tmp_path / "schemas" / "custom_in_file.json").write_text(json.dumps(
            {"type": "object", "properties": {"name": {"type": "string", "minLength": 1}}}))
        (tmp_path / "manifest.yaml").write_text(MANIFEST.format(url=api.url))
        (tmp_path / "config.json").write_text("{}")
        yield tmp_path


def run(folder, *flags):
    out = io.BytesIO()
    code = main([str(folder / "manifest.yaml"), "--config", str(folder / "config.json"), "--test-read", *flags],
                out=out)
    return code, out.getvalue().decode()


def test_infer_schema_shows_the_diff_and_writes_nothing(connector):
    before = (connector / "manifest.yaml").read_text()
    _, text = run(connector, "--infer-schema")
    assert "inline: 3 field(s) inferred from 3 records: name, added_at, size" in text
    assert '+    "added_at": {' in text and "add --write-schemas to write it to" in text
    assert (connector / "manifest.yaml").read_text() == before
    assert not (connector / "schemas" / "no_loader.json").exists()


def test_write_schemas_writes_each_schema_where_its_loader_reads_it(connector):
    _, text = run(connector, "--write-schemas")
    manifest = (connector / "manifest.yaml").read_text()
    assert "# the inline schema: comments and style stay" in manifest and "# the key" in manifest
    assert 'description: "kept as written"' in manifest
    assert (connector / "manifest.yaml.bak").exists()
    checked = check_manifest(str(connector / "manifest.yaml"))
    assert checked.ok, checked.diagnostics
    inline = checked.data["streams"][0]["schema_loader"]["schema"]["properties"]
    assert set(inline) == {"id", "name", "added_at", "size"}
    assert inline["added_at"] == {"type": ["null", "string"], "format": "date-time"}

    in_file = json.loads((connector / "schemas" / "custom_in_file.json").read_text())
    assert in_file["properties"]["name"] == {"type": "string", "minLength": 1}  # the declared kept
    assert in_file["properties"]["size"]["type"] == ["null", "number"]
    assert (connector / "schemas" / "custom_in_file.json.bak").exists()
    no_loader = json.loads((connector / "schemas" / "no_loader.json").read_text())
    assert set(no_loader["properties"]) == {"id", "name", "added_at", "size"}

    _, again = run(connector, "--write-schemas")  # a second pass finds nothing to add
    assert again.count("the declared schema has every field") == 3


def test_infer_schema_needs_a_test_read(connector, capsys):
    with pytest.raises(SystemExit) as exit_:
        main([str(connector / "manifest.yaml"), "--config", str(connector / "config.json"), "--infer-schema"])
    assert exit_.value.code == 2 and "add --test-read" in capsys.readouterr().err
