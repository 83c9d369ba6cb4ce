"""The destination and normalization settings the commands build from their flags and files."""

import json

import pytest

from framework.cli.settings import destination_settings, normalization_settings
from framework.errors import ConfigError
from framework.models.destination import CsvFormat, DestinationSettings, ParquetFormat


def test_default_is_snappy_parquet_in_output():
    settings = destination_settings()
    assert settings == DestinationSettings.default_local("./output")
    assert isinstance(settings.format, ParquetFormat) and settings.format.compression_codec == "SNAPPY"
    assert destination_settings(output="/tmp/x", format="parquet").output == "/tmp/x"


def test_format_without_destination():
    settings = destination_settings(output="out", format="csv")
    assert isinstance(settings.format, CsvFormat) and settings.base_uri == "out"


def test_destination_file_with_output_and_format_put_in(tmp_path):
    dest = tmp_path / "dest.json"
    dest.write_text(json.dumps({"s3_bucket_name": "b", "s3_bucket_path": "p",
                                "format": {"format_type": "Parquet"}}))
    assert destination_settings(str(dest)).base_uri == "s3://b/p"
    settings = destination_settings(str(dest), output=str(tmp_path / "local"), format="jsonl")
    assert settings.s3_bucket_name is None and settings.base_uri == str(tmp_path / "local")
    assert settings.format.format_type == "JSONL"


def test_bad_settings_name_the_file_or_flag(tmp_path):
    dest = tmp_path / "dest.json"
    dest.write_text("[1]")
    with pytest.raises(ConfigError, match="dest.json: not a JSON object"):
        destination_settings(str(dest))
    dest.write_text(json.dumps({"format": {"format_type": "Parquet"}}))
    with pytest.raises(ConfigError, match="dest.json: settings: .*s3_bucket_name"):
        destination_settings(str(dest))
    with pytest.raises(ConfigError, match="--output 'gs://x'"):
        destination_settings(output="gs://x")


def test_normalization_target_and_dialect_put_in():
    destination = DestinationSettings.model_validate(
        {"output": "out", "normalization": {"enabled": True, "target": "parquet", "dialect": "bigquery"}})
    assert normalization_settings(destination).dialect == "bigquery"
    assert normalization_settings(destination, "parquet").dialect == "bigquery"  # the same target keeps it
    assert normalization_settings(destination, dialect="mysql").dialect == "mysql"
    assert normalization_settings(DestinationSettings.default_local()).target == "parquet"
    with pytest.raises(ConfigError, match="normalization settings"):
        normalization_settings(DestinationSettings.default_local(), dialect="nonsense")
