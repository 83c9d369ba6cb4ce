"""The connector library as a whole: every manifest in manifests/ validates, is documented and discovers.

``validate-manifest`` must report no problem (not even a warning) over all of
manifests/; every connector has its page (manifests/<name>.md), a row in
manifests/README.md, an example config (manifests/configs/<name>.json) that
its spec accepts, secrets marked ``airbyte_secret``, and a ``url_base`` that
the config can point elsewhere (``base_url``), which the tests rely on.
"""

from __future__ import annotations

import io
import json
import re
import shlex
from pathlib import Path

import orjson
import pytest
import yaml
from manifests.harness import MANIFESTS

from framework.cli.run import _parser as run_parser
from framework.cli.run import main as run_manifest
from framework.cli.validate import _parser as validate_parser
from framework.cli.validate import main as validate_manifest
from framework.manifest import load_manifest

CONNECTORS = sorted(p.stem for p in MANIFESTS.glob("*.yaml"))
SECRET_WORDS = ("token", "key", "password", "secret")


def test_the_library_has_at_least_five_connectors():
    assert len(CONNECTORS) >= 5
    assert {"github", "stripe", "zendesk_support", "rick_and_morty", "pokeapi"} <= set(CONNECTORS)


def test_validate_manifest_reports_nothing_over_all_of_manifests(capsys):
    code = validate_manifest(["--strict", "--format", "json", *(str(MANIFESTS / f"{n}.yaml") for n in CONNECTORS)])
    problems = json.loads(capsys.readouterr().out)
    assert problems == [] and code == 0


@pytest.mark.parametrize("name", CONNECTORS)
def test_the_example_config_passes_the_spec(name, capsys):
    config = MANIFESTS / "configs" / f"{name}.json"
    assert config.exists(), f"add manifests/configs/{name}.json, an example config"
    code = validate_manifest(["--quiet", "--config", str(config), str(MANIFESTS / f"{name}.yaml")])
    assert code == 0, capsys.readouterr().out


@pytest.mark.parametrize("name", CONNECTORS)
def test_the_spec_marks_secrets_and_lets_the_config_move_the_api(name):
    manifest = yaml.safe_load((MANIFESTS / f"{name}.yaml").read_text())
    spec = manifest["spec"]["connection_specification"]
    assert spec["type"] == "object" and "required" in spec
    for field, schema in spec["properties"].items():
        assert schema.get("description"), f"{name}: describe config field {field!r}"
        if any(word in field for word in SECRET_WORDS):
            assert schema.get("airbyte_secret") is True, f"{name}: mark {field!r} airbyte_secret"
    assert "base_url" in spec["properties"]
    assert "base_url" in (MANIFESTS / f"{name}.yaml").read_text().split("url_base:", 1)[1].splitlines()[0]


@pytest.mark.parametrize("name", CONNECTORS)
def test_the_connector_is_documented(name):
    page = MANIFESTS / f"{name}.md"
    assert page.exists(), f"add manifests/{name}.md"
    text = page.read_text()
    manifest = yaml.safe_load((MANIFESTS / f"{name}.yaml").read_text())
    for field in manifest["spec"]["connection_specification"]["properties"]:
        assert f"`{field}`" in text, f"manifests/{name}.md does not explain config field {field!r}"
    for stream in load_manifest(str(MANIFESTS / f"{name}.yaml")).streams:
        assert f"`{stream.name}`" in text, f"manifests/{name}.md does not describe stream {stream.name!r}"
    assert f"({name}.yaml)" in (MANIFESTS / "README.md").read_text(), f"add {name} to manifests/README.md"


@pytest.mark.parametrize("name", CONNECTORS)
def test_the_connector_discovers_with_its_example_config(name, tmp_path: Path, capsys):
    out = io.BytesIO()
    code = run_manifest([str(MANIFESTS / f"{name}.yaml"), "--config", str(MANIFESTS / "configs" / f"{name}.json"),
                         "--discover"], out=out)
    assert code == 0, capsys.readouterr().err
    (message,) = [orjson.loads(line) for line in out.getvalue().splitlines()]
    streams = message["catalog"]["streams"]
    assert streams
    for stream in streams:
        schema = stream["json_schema"]
        assert schema["type"] == "object" and schema["properties"], stream["name"]
        assert "$ref" not in json.dumps(schema), f"{name}/{stream['name']}: a $ref was left in the schema"
        if "incremental" in stream["supported_sync_modes"]:
            (cursor,) = stream["default_cursor_field"]
            assert cursor in schema["properties"], f"{name}/{stream['name']}: cursor {cursor!r} not in the schema"


FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```\s*$", re.DOTALL | re.MULTILINE)
PARSERS = {"run-manifest": run_parser, "validate-manifest": validate_parser}


@pytest.mark.parametrize("page", sorted(p.name for p in MANIFESTS.glob("*.md")))
def test_the_examples_in_the_pages_are_valid(page):
    text = (MANIFESTS / page).read_text()
    blocks = FENCE.findall(text)
    assert text.count("```") == 2 * len(blocks), f"{page}: a fence is not closed"
    for language, body in blocks:
        assert language in {"json", "yaml", "bash", "text"}, f"{page}: tag the block {body[:40]!r}"
        if language == "json":
            json.loads(body)
        elif language == "yaml":
            yaml.safe_load(body)
        elif language == "bash":
            for line in body.splitlines():
                command, *arguments = shlex.split(line)
                if command in PARSERS:
                    PARSERS[command]().parse_args(arguments)
