"""A config migrated, transformed and validated by the spec's rules; the migrated file written back."""

from __future__ import annotations

import json
import os
import stat

import pytest

from framework.engine.config_migration import rewrite_config_file
from framework.engine.connector import open_connector_text
from framework.errors import ConfigError

MANIFEST = """
version: 6.7.0
type: DeclarativeSource
check: {type: CheckStream, stream_names: [items]}
streams:
  - type: DeclarativeStream
    name: items
    schema_loader: {type: InlineSchemaLoader, schema: {}}
    retriever:
      type: SimpleRetriever
      requester: {type: HttpRequester, url_base: "https://x.io", path: /items}
      record_selector: {type: RecordSelector, extractor: {type: DpathExtractor, field_path: []}}
spec:
  type: Spec
  connection_specification:
    type: object
    required: [region, api_key]
    properties:
      region: {type: string, enum: [eu, us]}
      api_key: {type: string, airbyte_secret: true}
  config_normalization_rules:
    type: ConfigNormalizationRules
    config_migrations:
      - type: ConfigMigration
        transformations:
          - {type: ConfigRemapField, field_path: [region], map: {europe: eu}}
          - {type: ConfigAddFields, fields: [{path: [host], value: "{{ config['region'] }}.x.io"}]}
    transformations:
      - {type: ConfigAddFields, fields: [{path: [url], value: "https://{{ config['host'] }}"}]}
    validations:
      - type: DpathValidator
        field_path: [api_key]
        validation_strategy:
          type: ValidateAdheresToSchema
          base_schema: {type: object, required: [token]}
"""


def test_migrations_run_before_transformations_and_only_migrations_are_saved():
    connector = open_connector_text(MANIFEST, {"region": "europe", "api_key": '{"token": "s3cret"}'})
    normalized = connector.normalized
    assert normalized.migrated == {"region": "eu", "host": "eu.x.io", "api_key": '{"token": "s3cret"}'}
    assert connector.config == dict(normalized.migrated, url="https://eu.x.io")
    assert normalized.migrated_changed and connector.given_config == {"region": "europe",
                                                                      "api_key": '{"token": "s3cret"}'}


def test_the_spec_checks_the_migrated_config():
    with pytest.raises(ConfigError, match="does not fit the manifest's spec"):  # "asia" stays: not in the enum
        open_connector_text(MANIFEST, {"region": "asia", "api_key": '{"token": "s"}'})


def test_a_failed_validation_names_the_rule_the_value_and_hides_secrets():
    with pytest.raises(ConfigError) as failed:
        open_connector_text(MANIFEST, {"region": "eu", "api_key": '{"tok": "s3cret-value"}'}, file="m.yaml")
    text = str(failed.value)
    assert "config['api_key'] fails the manifest's validation (m.yaml:" in text
    assert "'token' is a required property" in text and "s3cret-value" not in text


def test_the_migrated_config_is_announced_before_it_is_checked():
    seen = []
    from framework.engine.connector import _build
    from framework.manifest import check_manifest_text

    with pytest.raises(ConfigError):
        _build(check_manifest_text(MANIFEST), {"region": "europe", "api_key": "not json"}, None,
               on_config=seen.append)
    assert [n.migrated["region"] for n in seen] == ["eu"]


def test_rewrite_keeps_a_backup_and_the_file_mode(tmp_path):
    path = tmp_path / "config.json"
    path.write_text('{"region": "europe"}')
    os.chmod(path, 0o600)
    backup = rewrite_config_file(str(path), {"region": "eu"})
    assert backup == f"{path}.bak" and json.loads(open(backup).read()) == {"region": "europe"}
    assert json.loads(path.read_text()) == {"region": "eu"}
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    second = rewrite_config_file(str(path), {"region": "us"})
    assert second == f"{path}.bak.1" and json.loads(open(second).read()) == {"region": "eu"}
    assert json.loads(open(backup).read()) == {"region": "europe"}  # never overwritten
    assert sorted(os.listdir(tmp_path)) == ["config.json", "config.json.bak", "config.json.bak.1"]


def test_a_rewrite_that_fails_leaves_the_old_file_whole(tmp_path, monkeypatch):
    path = tmp_path / "config.json"
    path.write_text('{"region": "europe"}')

    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken)
    with pytest.raises(OSError):
        rewrite_config_file(str(path), {"region": "eu"})
    assert json.loads(path.read_text()) == {"region": "europe"}
    assert sorted(os.listdir(tmp_path)) == ["config.json", "config.json.bak"]  # no temporary file left


CUSTOM = """
version: 6.7.0
type: DeclarativeSource
check: {type: CheckStream, stream_names: [items]}
streams:
  - type: DeclarativeStream
    name: items
    schema_loader: {type: InlineSchemaLoader, schema: {}}
    retriever:
      type: SimpleRetriever
      requester: {type: HttpRequester, url_base: "https://x.io", path: /items}
      record_selector: {type: RecordSelector, extractor: {type: DpathExtractor, field_path: []}}
spec:
  type: Spec
  connection_specification: {type: object}
  config_normalization_rules:
    type: ConfigNormalizationRules
    config_migrations:
      - type: ConfigMigration
        transformations:
          - {type: CustomConfigTransformation, class_name: components.Nest, key: token}
    validations:
      - type: PredicateValidator
        value: "{{ config['auth']['token'] }}"
        validation_strategy: {type: CustomValidationStrategy, class_name: components.LooksLikeAToken}
"""

CUSTOM_CODE = '''
from dataclasses import dataclass


@dataclass
class Nest:
    key: str

    def transform(self, config):
        if self.key in config:
            config["auth"] = {self.key: config.pop(self.key)}


class LooksLikeAToken:
    def validate(self, value):
        if not str(value).startswith("tk_"):
            raise ValueError("a token starts with tk_")
'''


@pytest.fixture
def custom_manifest(tmp_path):
    import sys

    (tmp_path / "manifest.yaml").write_text(CUSTOM)
    (tmp_path / "components.py").write_text(CUSTOM_CODE)
    saved = sys.modules.pop("components", None)
    yield str(tmp_path / "manifest.yaml")
    sys.modules.pop("components", None)
    if saved is not None:
        sys.modules["components"] = saved


def test_custom_transformations_and_validations_run_behind_the_gate(custom_manifest):
    from framework.engine.connector import open_connector

    with pytest.raises(ConfigError, match="allow-custom-code"):
        open_connector(custom_manifest, {"token": "tk_1"}, allow_custom_code=False)
    connector = open_connector(custom_manifest, {"token": "tk_1"}, allow_custom_code=True)
    assert connector.config == {"auth": {"token": "tk_1"}} and connector.normalized.migrated_changed
    assert "components.py" in "".join(connector.shipped_files)  # Spark executors get the code too
    with pytest.raises(ConfigError, match="a token starts with tk_"):
        open_connector(custom_manifest, {"token": "nope"}, allow_custom_code=True)
