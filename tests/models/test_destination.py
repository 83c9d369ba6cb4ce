"""Sink settings: Airbyte S3 destination configs validate unchanged, plus our extensions."""

from __future__ import annotations

import copy
import inspect
import json

import pytest
from pydantic import BaseModel, TypeAdapter, ValidationError

import framework.models.destination as destination
from framework.models.base import is_secret
from framework.models.destination import (
    AvroFormat,
    AvroZstandard,
    CsvFormat,
    DestinationSettings,
    Gzip,
    JsonlFormat,
    ParquetFormat,
    ReplicantCsvFormat,
    ReplicantJsonFormat,
)
from framework.models.normalization import NormalizationSettings

BASE = {
    "s3_bucket_name": "airbyte_sync",
    "s3_bucket_path": "data_sync/test",
    "s3_bucket_region": "us-west-1",
    "s3_endpoint": "",
    "access_key_id": "A012345678910EXAMPLE",
    "secret_access_key": "a012345678910ABCDEFGH/AbCdEfGhEXAMPLEKEY",
    "s3_path_format": "${NAMESPACE}/${STREAM_NAME}/${YEAR}_${MONTH}_${DAY}_${EPOCH}_",
    "file_name_pattern": "{date}",
}

FORMATS = {
    "avro": {"format_type": "Avro", "compression_codec": {"codec": "zstandard", "compression_level": 3,
                                                          "include_checksum": False}},
    "avro_deflate": {"format_type": "Avro", "compression_codec": {"codec": "Deflate", "compression_level": 0}},
    "avro_xz": {"format_type": "Avro", "compression_codec": {"codec": "xz", "compression_level": 6}},
    "avro_none": {"format_type": "Avro", "compression_codec": {"codec": "no compression"}},
    "avro_bzip2": {"format_type": "Avro", "compression_codec": {"codec": "bzip2"}},
    "avro_snappy": {"format_type": "Avro", "compression_codec": {"codec": "snappy"}},
    "csv": {"format_type": "CSV", "flattening": "Root level flattening", "compression": {"compression_type": "GZIP"}},
    "csv_plain": {"format_type": "CSV", "flattening": "No flattening",
                  "compression": {"compression_type": "No Compression"}},
    "jsonl": {"format_type": "JSONL", "flattening": "No flattening", "compression": {"compression_type": "GZIP"}},
    "jsonl_old": {"format_type": "JSONL", "part_size_mb": 5},
    "parquet": {"format_type": "Parquet", "compression_codec": "SNAPPY", "block_size_mb": 128,
                "max_padding_size_mb": 8, "page_size_kb": 1024, "dictionary_page_size_kb": 1024,
                "dictionary_encoding": True},
    "replicant_csv": {"format_type": "replicant_csv", "mode": "realtime", "include_header": True,
                      "image": "full", "catalog": "warehouse", "schema": "io_blitzz"},
    "replicant_json": {"format_type": "replicant_json", "mode": "snapshot", "deleted_field": "deleted_at"},
}

CLASSES = {
    "avro": AvroFormat, "avro_deflate": AvroFormat, "avro_xz": AvroFormat, "avro_none": AvroFormat,
    "avro_bzip2": AvroFormat, "avro_snappy": AvroFormat, "csv": CsvFormat, "csv_plain": CsvFormat,
    "jsonl": JsonlFormat, "jsonl_old": JsonlFormat, "parquet": ParquetFormat,
    "replicant_csv": ReplicantCsvFormat, "replicant_json": ReplicantJsonFormat,
}


def config(fmt: str) -> dict:
    return {**copy.deepcopy(BASE), "format": copy.deepcopy(FORMATS[fmt])}


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_airbyte_config_validates_and_round_trips(fmt):
    data = json.loads(json.dumps(config(fmt)))  # exactly what a JSON file would give
    settings = DestinationSettings.model_validate(data)
    assert isinstance(settings.format, CLASSES[fmt])
    assert settings.target == "s3"
    assert settings.base_uri == "s3://airbyte_sync/data_sync/test"
    dumped = settings.model_dump(mode="json", by_alias=True, exclude_unset=True)
    assert dumped == data
    assert DestinationSettings.model_validate(settings.model_dump(mode="json", by_alias=True)) == settings


def test_airbyte_defaults():
    settings = DestinationSettings.model_validate({"s3_bucket_name": "b", "s3_bucket_path": "p",
                                                   "format": {"format_type": "Parquet"}})
    fmt = settings.format
    assert isinstance(fmt, ParquetFormat)
    assert (fmt.compression_codec, fmt.block_size_mb, fmt.max_padding_size_mb, fmt.page_size_kb,
            fmt.dictionary_page_size_kb, fmt.dictionary_encoding) == ("UNCOMPRESSED", 128, 8, 1024, 1024, True)
    assert settings.s3_bucket_region == "" and settings.s3_endpoint == ""
    assert settings.file_size_limit_mb > 0
    csv = DestinationSettings.model_validate({"output": "out", "format": {"format_type": "CSV"}}).format
    assert csv.flattening == "No flattening" and csv.compression.compression_type == "No Compression"
    assert csv.extension == ".csv"
    zstd = AvroZstandard.model_validate({"codec": "zstandard"})
    assert (zstd.compression_level, zstd.include_checksum) == (3, False)
    avro = AvroFormat.model_validate({"format_type": "Avro"})
    assert avro.compression_codec.codec == "no compression"


def test_replicant_defaults_and_alias():
    fmt = DestinationSettings.model_validate(
        {"output": "./out", "format": {"format_type": "replicant_csv", "schema": "sales"}}
    ).format
    assert isinstance(fmt, ReplicantCsvFormat)
    assert (fmt.mode, fmt.include_header, fmt.image, fmt.deleted_field, fmt.catalog, fmt.schema_name) == (
        "realtime", False, "changes", "_ab_cdc_deleted_at", None, "sales"
    )
    with pytest.raises(ValidationError, match="include_header"):
        DestinationSettings.model_validate(
            {"output": "./out", "format": {"format_type": "replicant_json", "include_header": True}}
        )


@pytest.mark.parametrize(
    "path,key",
    [
        ((), "bucket_name"),
        (("format",), "compression"),  # Parquet has `compression_codec`, not `compression`
        (("format",), "flatten"),
        (("normalization",), "jdbc_host"),
    ],
)
def test_unknown_keys_rejected(path, key):
    data = config("parquet")
    data["normalization"] = {"enabled": True}
    target = data
    for part in path:
        target = target[part]
    target[key] = "x"
    with pytest.raises(ValidationError) as info:
        DestinationSettings.model_validate(data)
    assert key in str(info.value)
    assert "Extra inputs are not permitted" in str(info.value)


@pytest.mark.parametrize(
    "fmt,change,bad",
    [
        ("parquet", {"compression_codec": "snappy"}, "compression_codec"),
        ("csv", {"flattening": "Nested flattening"}, "flattening"),
        ("csv", {"compression": {"compression_type": "gzip"}}, "compression_type"),
        ("avro", {"compression_codec": {"codec": "Zstandard"}}, "codec"),
        ("avro_deflate", {"compression_codec": {"codec": "Deflate", "compression_level": 10}}, "compression_level"),
        ("replicant_csv", {"mode": "cdc"}, "mode"),
        ("replicant_json", {"image": "after"}, "image"),
        ("parquet", {"format_type": "parquet"}, "format_type"),
        ("parquet", {"block_size_mb": 0}, "block_size_mb"),
    ],
)
def test_wrong_enum_strings_rejected(fmt, change, bad):
    data = config(fmt)
    data["format"].update(change)
    with pytest.raises(ValidationError) as info:
        DestinationSettings.model_validate(data)
    assert bad in str(info.value)


def test_wrong_region_rejected():
    with pytest.raises(ValidationError, match="s3_bucket_region"):
        DestinationSettings.model_validate({**config("parquet"), "s3_bucket_region": "US-EAST-1"})


def test_secrets_flagged_in_schema_and_hidden():
    schema = DestinationSettings.model_json_schema(by_alias=True)
    props = schema["properties"]
    assert props["access_key_id"]["airbyte_secret"] is True
    assert props["secret_access_key"]["airbyte_secret"] is True
    for name in ("s3_bucket_name", "role_arn", "output", "s3_endpoint"):
        assert "airbyte_secret" not in props[name], name
    assert schema["$defs"]["NormalizationSettings"]["properties"]["jdbc_password"]["airbyte_secret"] is True
    assert props["format"]["discriminator"]["propertyName"] == "format_type"
    assert "schema" in schema["$defs"]["ReplicantJsonFormat"]["properties"]
    settings = DestinationSettings.model_validate(config("parquet"))
    assert BASE["secret_access_key"] not in repr(settings)
    assert BASE["access_key_id"] not in repr(settings)
    assert is_secret(DestinationSettings.model_fields["secret_access_key"])


def test_credentials_come_in_pairs():
    data = config("parquet")
    del data["secret_access_key"]
    with pytest.raises(ValidationError, match="secret_access_key"):
        DestinationSettings.model_validate(data)


def test_default_local():
    settings = DestinationSettings.default_local()
    assert settings.target == "local"
    assert settings.output == "./output" and settings.base_uri == "./output"
    assert isinstance(settings.format, ParquetFormat) and settings.format.compression_codec == "SNAPPY"
    assert settings.bucket is None and settings.prefix == ""
    assert DestinationSettings.default_local("/tmp/x").output == "/tmp/x"


@pytest.mark.parametrize(
    "output,bucket,prefix,uri",
    [
        ("s3://lake/raw/api/", "lake", "raw/api", "s3://lake/raw/api"),
        ("s3://lake", "lake", "", "s3://lake"),
    ],
)
def test_s3_output(output, bucket, prefix, uri):
    settings = DestinationSettings.model_validate({"output": output})
    assert settings.target == "s3" and (settings.bucket, settings.prefix, settings.base_uri) == (bucket, prefix, uri)


def test_bucket_wins_over_output():
    settings = DestinationSettings.model_validate({**config("parquet"), "output": "./local"})
    assert settings.target == "s3" and settings.base_uri == "s3://airbyte_sync/data_sync/test"


@pytest.mark.parametrize("data,match", [
    ({}, "s3_bucket_name"),
    ({"output": "gs://bucket/x"}, "output"),
    ({"output": "s3://"}, "output"),
])
def test_location_required_and_checked(data, match):
    with pytest.raises(ValidationError, match=match):
        DestinationSettings.model_validate(data)


def test_normalization_nested():
    data = {"output": "./out", "normalization": {"enabled": True, "target": "postgres",
                                                  "jdbc_url": "jdbc:postgresql://db/w"}}
    settings = DestinationSettings.model_validate(data)
    assert isinstance(settings.normalization, NormalizationSettings)
    assert settings.normalization.identifier_limit == 63
    with pytest.raises(ValidationError, match="jdbc_url"):
        DestinationSettings.model_validate({"output": "./out", "normalization": {"target": "postgres"}})


def test_extensions():
    assert DestinationSettings.model_validate(config("csv")).format.extension == ".csv.gz"
    jsonl = DestinationSettings.model_validate(config("jsonl")).format
    assert isinstance(jsonl.compression, Gzip) and jsonl.extension == ".jsonl.gz"


def _models() -> list[type[BaseModel]]:
    return [
        cls for _, cls in inspect.getmembers(destination, inspect.isclass)
        if issubclass(cls, BaseModel) and cls.__module__ == destination.__name__
    ]


def test_every_field_documented():
    models = _models()
    assert DestinationSettings in models and len(models) >= 15
    for cls in models:
        for name, info in cls.model_fields.items():
            assert info.description and info.description.strip(), f"{cls.__name__}.{name} has no description"
            assert info.examples, f"{cls.__name__}.{name} has no example"


def test_examples_are_valid():
    """Every field's example is a valid value of that field."""
    for cls in _models():
        for info in cls.model_fields.values():
            TypeAdapter(info.rebuild_annotation()).validate_python(info.examples[0])
