"""``run-manifest`` and custom components: the gate refused and allowed from the command line, and a user's
exception with its traceback on stderr."""

from __future__ import annotations

import io
import json
import textwrap

import orjson
import pytest

from framework.cli.run import main

COMPONENTS = """
class Items:
    def extract_records(self, response):
        return [dict(item, seen=True) for item in response.json()["data"]]


class Broken:
    def extract_records(self, response):
        return explode(response.json())


def explode(body):
    return body["nothing_here"]
"""

MANIFEST = """\
version: 6.7.0
type: DeclarativeSource
streams:
  - type: DeclarativeStream
    name: items
    schema_loader: {type: InlineSchemaLoader, schema: {type: object}}
    retriever:
      type: SimpleRetriever
      requester: {type: HttpRequester, url_base: "{{ config.base_url }}", path: /items}
      record_selector:
        type: RecordSelector
        extractor:
          type: CustomRecordExtractor
          class_name: components.EXTRACTOR
check: {type: CheckStream, stream_names: [items]}
"""


@pytest.fixture
def connector_dir(tmp_path, fake_api, monkeypatch):
    monkeypatch.delenv("FRAMEWORK_ALLOW_CUSTOM_CODE", raising=False)
    monkeypatch.delenv("AIRBYTE_ENABLE_UNSAFE_CODE", raising=False)
    fake_api.route("GET", "/items", {"data": [{"id": 1}, {"id": 2}]})
    (tmp_path / "components.py").write_text(textwrap.dedent(COMPONENTS))
    (tmp_path / "config.json").write_text(json.dumps({"base_url": fake_api.url}))

    def write(extractor: str = "Items") -> tuple[str, str]:
        (tmp_path / "manifest.yaml").write_text(MANIFEST.replace("EXTRACTOR", extractor))
        return str(tmp_path / "manifest.yaml"), str(tmp_path / "config.json")

    return write


def run(*argv: str) -> tuple[int, list[dict]]:
    out = io.BytesIO()
    code = main(list(argv), out=out)
    return code, [orjson.loads(line) for line in out.getvalue().splitlines()]


def test_refused_without_the_flag_exits_2_naming_the_file_the_place_and_how_to_allow(connector_dir, fake_api, capsys):
    manifest, config = connector_dir()
    for mode in ((), ("--protocol",), ("--discover",)):
        code, _ = run(manifest, "--config", config, *mode)
        err = capsys.readouterr().err
        assert code == 2
        assert "components.py, shipped with the manifest" in err and "manifest.yaml:" in err
        assert "--allow-custom-code" in err and "FRAMEWORK_ALLOW_CUSTOM_CODE=true" in err
    assert fake_api.received() == []


def test_allowed_by_the_flag_or_either_variable(connector_dir, monkeypatch):
    manifest, config = connector_dir()
    code, messages = run(manifest, "--config", config, "--protocol", "--allow-custom-code")
    assert code == 0
    assert [m["record"]["data"] for m in messages if m["type"] == "RECORD"] == [{"id": 1, "seen": True},
                                                                                {"id": 2, "seen": True}]
    for variable in ("FRAMEWORK_ALLOW_CUSTOM_CODE", "AIRBYTE_ENABLE_UNSAFE_CODE"):
        with monkeypatch.context() as env:
            env.setenv(variable, "true")
            assert run(manifest, "--config", config, "--protocol")[0] == 0


def test_a_users_exception_fails_the_stream_with_its_message_and_traceback_on_stderr(connector_dir, capsys):
    manifest, config = connector_dir("Broken")
    code, messages = run(manifest, "--config", config, "--protocol", "--allow-custom-code")
    err = capsys.readouterr().err
    assert code == 1
    assert ("stream `items`: the record extractor `components.Broken` raised KeyError in `extract_records`: "
            "'nothing_here'") in err
    assert "components.py\", line" in err and "in explode" in err and 'return body["nothing_here"]' in err
    errors = [m["trace"]["error"] for m in messages if m["type"] == "TRACE" and m["trace"]["type"] == "ERROR"]
    assert "in explode" in errors[0]["message"]


def test_a_custom_retriever_without_airbyte_cdk_exits_2_naming_the_extra_before_spark(tmp_path, fake_api,
                                                                                      monkeypatch, capsys):
    """A stream a CustomRetriever drives is read by airbyte-cdk: without it, the run stops when the connector
    opens (no Spark session, no request), naming the stream, the manifest place and the extra."""
    from framework.components.custom import airbyte

    monkeypatch.setattr(airbyte, "airbyte_available", lambda: False)
    (tmp_path / "components.py").write_text("class Reads:\n    def read_records(self, *args, **kwargs):\n"
                                            "        return []\n\n    def extract_records(self, response):\n"
                                            "        return []\n")
    (tmp_path / "config.json").write_text(json.dumps({"base_url": fake_api.url}))
    (tmp_path / "manifest.yaml").write_text(MANIFEST.replace("EXTRACTOR", "Reads").replace(
        "      type: SimpleRetriever\n", "      type: CustomRetriever\n      class_name: components.Reads\n"))
    for mode in ((), ("--protocol",)):
        code, _ = run(str(tmp_path / "manifest.yaml"), "--config", str(tmp_path / "config.json"),
                      "--allow-custom-code", "--output", str(tmp_path / "out"), *mode)
        err = capsys.readouterr().err
        assert code == 2, err
        assert "stream `items` (its retriever is a CustomRetriever (`components.Reads`)) needs airbyte-cdk" in err
        assert "manifest.yaml:" in err and "pip install 'manifest-framework[airbyte]'" in err
    assert fake_api.received() == [] and not (tmp_path / "out").exists()
