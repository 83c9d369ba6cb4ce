"""The destination and normalization settings the commands build from their flags and files."""

import argparse
import json
import os

import pytest

from framework.cli.settings import (
    check_shared_output,
    conf_pair,
    destination_settings,
    drift_flag,
    normalization_settings,
    resolve_output,
    with_schema_drift,
)
from framework.errors import ConfigError
from framework.models.destination import CsvFormat, DestinationSettings, ParquetFormat


def test_default_is_snappy_parquet_in_output():
    settings = destination_settings()
    assert settings == DestinationSettings.default_local(os.path.abspath("output"))
    assert isinstance(settings.format, ParquetFormat) and settings.format.compression_codec == "SNAPPY"
    assert destination_settings(output="/tmp/x", format="parquet").output == "/tmp/x"


def test_format_without_destination():
    settings = destination_settings(output="out", format="csv")
    assert isinstance(settings.format, CsvFormat) and settings.base_uri == os.path.abspath("out")


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


def test_a_local_output_is_resolved_on_the_driver(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert destination_settings(output="out").output == str(tmp_path / "out")
    assert destination_settings(output="~/x").output == os.path.expanduser("~/x")
    assert destination_settings(output="s3://b/p").output == "s3://b/p"  # a URL stays a URL
    dest = tmp_path / "dest.json"
    dest.write_text(json.dumps({"output": "rel/dir", "format": {"format_type": "Parquet"}}))
    assert destination_settings(str(dest)).base_uri == str(tmp_path / "rel" / "dir")
    bucket = DestinationSettings.model_validate({"s3_bucket_name": "b", "format": {"format_type": "Parquet"}})
    assert resolve_output(bucket) is bucket


def test_a_local_output_on_a_cluster_needs_shared_path(tmp_path):
    local = destination_settings(output=str(tmp_path))
    for master in (None, "local[*]", "local", "local-cluster[2,1,1024]"):
        check_shared_output(local, master, shared_path=False)  # this machine's executors: nothing to say
    with pytest.raises(ConfigError) as caught:
        check_shared_output(local, "spark://m:7077", shared_path=False)
    text = str(caught.value)
    assert str(tmp_path) in text and "spark://m:7077" in text and "s3://" in text and "--shared-path" in text
    check_shared_output(local, "spark://m:7077", shared_path=True)
    check_shared_output(destination_settings(output="s3://b/p"), "yarn", shared_path=False)


def test_conf_pairs():
    assert conf_pair("spark.a=b=c") == ("spark.a", "b=c")
    assert conf_pair("spark.a=") == ("spark.a", "")
    for bad in ("spark.a", "=x"):
        with pytest.raises(argparse.ArgumentTypeError, match="KEY=VALUE"):
            conf_pair(bad)


def test_schema_drift_flags_for_every_stream_or_one():
    assert drift_flag("keep") == (None, "keep")
    assert drift_flag("events=evolve") == ("events", "evolve")
    assert drift_flag("a=b=drop") == ("a=b", "drop")  # a stream's name may hold `=`; the policy never does
    for bad in ("merge", "events=", "=keep", "events=Keep"):
        with pytest.raises(argparse.ArgumentTypeError, match="give drop, keep or evolve"):
            drift_flag(bad)


def test_schema_drift_flags_are_put_in_over_the_destination_and_a_later_one_wins(tmp_path):
    dest = tmp_path / "dest.json"
    dest.write_text(json.dumps({"output": str(tmp_path), "schema_drift": "keep",
                                "schema_drift_streams": {"orders": "drop"}}))
    settings = destination_settings(str(dest))
    assert (settings.schema_drift_for("orders"), settings.schema_drift_for("events")) == ("drop", "keep")
    assert with_schema_drift(settings, (), ["orders", "events"]) is settings
    changed = with_schema_drift(settings, [(None, "drop"), ("events", "keep"), ("events", "evolve")],
                                ["orders", "events"])
    assert (changed.schema_drift, changed.schema_drift_streams) == ("drop", {"orders": "drop", "events": "evolve"})


def test_schema_drift_of_a_stream_the_manifest_lacks_is_refused_with_its_streams(tmp_path):
    settings = DestinationSettings.model_validate({"output": str(tmp_path), "schema_drift_streams": {"evnts": "keep"}})
    with pytest.raises(ConfigError, match=r"no stream named 'evnts' in the manifest \(its streams: events\)"):
        with_schema_drift(settings, (), ["events"])


def test_a_bad_schema_drift_in_the_destination_names_the_file_and_field(tmp_path):
    dest = tmp_path / "dest.json"
    dest.write_text(json.dumps({"output": str(tmp_path), "schema_drift_streams": {"events": "merge"}}))
    with pytest.raises(ConfigError, match=r"dest.json: schema_drift_streams.events: Input should be 'drop', 'keep'"):
        destination_settings(str(dest))
