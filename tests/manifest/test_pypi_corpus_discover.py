"""The manifests of Airbyte's PyPI packages that use custom components: each validated and discovered.

Each manifest of PYPI_MANIFEST_CORPUS's INDEX.md with ``class_name`` uses is
validated and discovered (``run-manifest --discover --allow-custom-code``, with
a config made from its spec by tests/manifest/spec_config.py), here, with
airbyte-cdk installed (``make test-airbyte``). :data:`EXPECTED` says what each
must do:

* ``discovers``: no validation error, and a catalog with every stream of the
  manifest, in order, each with the properties of its schema file;
* ``package``: the one clear error naming the package its components need and
  that is not installed, from validate-manifest and from run-manifest alike
  (exit 2, nothing else about custom components);
* ``other``: stopped by errors that are not about custom components (the codes
  listed: components this framework does not have yet, say).
"""

from __future__ import annotations

import glob
import importlib.util
import io
import json
import os
from dataclasses import dataclass

import orjson
import pytest
import yaml
from manifest.spec_config import manifest_config

from framework.cli.run import main
from framework.manifest import check_manifest

CORPUS = os.environ.get("PYPI_MANIFEST_CORPUS")
CORPUS = CORPUS if CORPUS and os.path.isdir(CORPUS) else None
pytestmark = [
    pytest.mark.corpus,
    pytest.mark.skipif(CORPUS is None, reason="PYPI_MANIFEST_CORPUS is not set to the PyPI manifest corpus "
                                              "(../shared/corpus/pypi-manifests)"),
    pytest.mark.skipif(importlib.util.find_spec("airbyte_cdk") is None,
                       reason="airbyte-cdk is not installed (the `airbyte` extra): run it with `make test-airbyte`"),
]


@dataclass(frozen=True)
class Outcome:
    kind: str  # "discovers", "package" or "other"
    #: the package named (``package``), or the error codes that stop it (``other``)
    what: tuple[str, ...] = ()


EXPECTED = {
    "airbyte-source-avni": Outcome("discovers"),
    "airbyte-source-tiktok-marketing": Outcome("discovers"),  # partition routers subclass airbyte-cdk's
    "airbyte-source-zoom": Outcome("discovers"),  # schemas named from the package root: ./source_zoom/schemas/
    "airbyte-source-close-com": Outcome("package", ("pendulum",)),  # INDEX.md: Airbyte says `no`
    "airbyte-source-zendesk-chat": Outcome("package", ("pendulum",)),  # and two unsupported components
    # its RateLimitedMultipleTokenAuthenticator, and `page_size_reduction` with its custom pagination strategies
    "airbyte-source-github": Outcome("discovers"),
    # its $refs expand to about 8 million values, resolved as a DAG in a second (INDEX.md: `error`)
    "airbyte-source-google-ads": Outcome("package", ("pendulum",)),  # and component types not supported yet
}
CUSTOM_CODES = {"custom-module-not-found", "custom-class-not-found", "custom-method-missing", "custom-syntax-error",
                "bad-class-name", "custom-unknown-option", "airbyte-extra-missing"}


def _with_custom_components() -> list[str]:
    """Package names of INDEX.md whose manifest uses ``class_name``."""
    names = []
    with open(os.path.join(CORPUS or ".", "INDEX.md")) as handle:
        for line in handle:
            cells = [cell.strip() for cell in line.split("|")]
            if len(cells) > 6 and cells[3].endswith("manifest.yaml") and cells[5].isdigit() and int(cells[5]) > 0:
                names.append(cells[1])
    return names


def test_every_package_with_custom_components_has_an_expected_outcome():
    assert sorted(_with_custom_components()) == sorted(EXPECTED)


def _discover(manifest: str, tmp_path) -> tuple[int, list[dict]]:
    with open(manifest) as handle:
        config = manifest_config(yaml.safe_load(handle))
    config_file = tmp_path / "config.json"
    config_file.write_text(json.dumps(config))
    out = io.BytesIO()
    code = main([manifest, "--config", str(config_file), "--discover", "--allow-custom-code"], out=out)
    return code, [orjson.loads(line) for line in out.getvalue().splitlines()]


@pytest.mark.parametrize("package", sorted(EXPECTED))
def test_validate_and_discover(package, tmp_path, capsys):
    (manifest,) = glob.glob(os.path.join(CORPUS or ".", package, "source_*", "manifest.yaml"))
    expected = EXPECTED[package]
    checked = check_manifest(manifest)
    errors = [d for d in checked.errors if d.code != "file-not-found"]
    codes = {d.code for d in errors}
    if expected.kind == "other":
        assert codes == set(expected.what), "\n".join(d.format() for d in errors)
        return  # run-manifest stops at the same errors (tests/cli); google-ads takes seconds to get there
    if expected.kind == "package":
        missing = [d for d in errors if d.code == "package-missing"]
        assert [d.message.split("`")[3] for d in missing] == list(expected.what), "\n".join(d.format() for d in errors)
        assert not codes & CUSTOM_CODES  # nothing else about its custom components
        code, messages = _discover(manifest, tmp_path)
        err = capsys.readouterr().err
        assert code == 2 and messages == []
        for problem in missing:
            assert problem.format() in err  # the same error, its place and its fix
        assert "Traceback" not in err
        return
    assert errors == [], "\n".join(d.format() for d in errors)
    code, messages = _discover(manifest, tmp_path)
    assert code == 0, capsys.readouterr().err
    (message,) = messages
    assert message["type"] == "CATALOG"
    entries = message["catalog"]["streams"]
    assert checked.source is not None
    assert [entry["name"] for entry in entries] == [stream.name for stream in checked.source.streams]
    for entry in entries:
        assert entry["json_schema"].get("properties"), f"stream `{entry['name']}`: its schema file was not read"


def test_tiktok_plans_every_stream_with_its_airbyte_routers() -> None:
    """Past discover: each stream of source-tiktok-marketing opens and plans (its custom partition routers
    subclass airbyte-cdk's SubstreamPartitionRouter and are handed the stream's name, as Airbyte does). The
    advertiser is in the config; a parent a router reads anyway gets an empty answer from a fake transport."""
    from framework.components.http.transport import FunctionTransport
    from framework.engine.connector import open_connector
    from framework.engine.plan import open_sync

    (manifest,) = glob.glob(os.path.join(CORPUS or ".", "airbyte-source-tiktok-marketing", "source_*", "manifest.yaml"))
    with open(manifest) as handle:
        config = manifest_config(yaml.safe_load(handle))
    config.update(credentials={"auth_type": "oauth2.0", "access_token": "token", "advertiser_id": "123",
                               "app_id": "1", "secret": "app-secret"},
                  start_date="2024-01-01", end_date="2024-01-03")
    transport = FunctionTransport(lambda request: (200, {"Content-Type": "application/json"},
                                                   {"code": 0, "data": {"list": [], "page_info": {"total_page": 1}}}))
    connector = open_connector(manifest, config, allow_custom_code=True, transport=transport)
    partitions = {}
    for name, stream in connector.streams.items():
        units = open_sync(connector, stream, None).plan()
        if not units:  # a router whose parent the fake transport answered with no records
            continue
        partitions[name] = {str(unit.slice.partition.get("advertiser_id", unit.slice.partition.get("advertiser_ids")))
                            for unit in units}
    assert partitions.pop("advertiser_ids") == {"None"}  # the parent stream itself is not routed
    assert partitions.pop("advertisers") == {'["123"]'}  # several advertisers per request
    assert set(map(frozenset, partitions.values())) == {frozenset({"123"})} and len(partitions) > 30
    # url_base is a template whose output is quoted ('"https://...v1.3/"'): read as Airbyte reads it, unquoted
    assert {request.url.split("/")[2] for request in transport.requests} <= {"business-api.tiktok.com"}
