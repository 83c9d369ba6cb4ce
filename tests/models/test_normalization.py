"""Normalization settings: defaults, dialect limits and the postgres requirements."""

from __future__ import annotations

import inspect

import pytest
from pydantic import BaseModel, ValidationError

import framework.models.normalization as normalization
from framework.models.base import is_secret
from framework.models.normalization import NormalizationSettings

LIMITS = {
    "postgres": 63,
    "bigquery": 1024,
    "snowflake": 255,
    "redshift": 127,
    "mysql": 64,
    "mssql": 64,
    "oracle": 128,
    "clickhouse": 63,
    "spark": None,
}

PG = {"target": "postgres", "jdbc_url": "jdbc:postgresql://db:5432/warehouse", "jdbc_user": "loader"}


def test_defaults():
    settings = NormalizationSettings()
    assert settings.enabled is False
    assert settings.target == "parquet"
    assert settings.dialect == "spark"
    assert settings.identifier_limit is None
    assert settings.jdbc_schema == "public"
    assert settings.destination_sync_mode is None


@pytest.mark.parametrize("dialect,limit", sorted(LIMITS.items()))
def test_identifier_limits(dialect, limit):
    settings = NormalizationSettings.model_validate({"dialect": dialect})
    assert settings.dialect == dialect
    assert settings.identifier_limit == limit


def test_dialect_follows_target():
    settings = NormalizationSettings.model_validate(PG)
    assert settings.dialect == "postgres"
    assert settings.identifier_limit == 63
    # The derived dialect is not an input: dumping only what was set round-trips exactly.
    assert settings.model_dump(exclude_unset=True) == PG
    assert NormalizationSettings.model_validate(settings.model_dump()) == settings


def test_explicit_dialect_overrides_target():
    settings = NormalizationSettings.model_validate({**PG, "dialect": "redshift"})
    assert settings.identifier_limit == 127


def test_postgres_needs_jdbc_url():
    with pytest.raises(ValidationError) as info:
        NormalizationSettings.model_validate({"target": "postgres", "enabled": True})
    assert "jdbc_url" in str(info.value)


def test_postgres_url_must_be_postgresql():
    with pytest.raises(ValidationError, match="jdbc:postgresql:"):
        NormalizationSettings.model_validate({"target": "postgres", "jdbc_url": "jdbc:mysql://db/x"})


def test_jdbc_settings_rejected_for_parquet():
    with pytest.raises(ValidationError, match="jdbc_url"):
        NormalizationSettings.model_validate({"jdbc_url": "jdbc:postgresql://db/x"})


@pytest.mark.parametrize(
    "data,bad",
    [
        ({"target": "mysql"}, "target"),
        ({"dialect": "sqlite"}, "dialect"),
        ({"destination_sync_mode": "upsert"}, "destination_sync_mode"),
        ({"jdbc_host": "db"}, "jdbc_host"),
    ],
)
def test_rejects_bad_values_and_unknown_keys(data, bad):
    with pytest.raises(ValidationError) as info:
        NormalizationSettings.model_validate(data)
    assert bad in str(info.value)


def test_password_is_secret_and_hidden():
    settings = NormalizationSettings.model_validate({**PG, "jdbc_password": "hunter2"})
    assert "hunter2" not in repr(settings)
    assert settings.jdbc_password == "hunter2"
    assert is_secret(NormalizationSettings.model_fields["jdbc_password"])
    assert not is_secret(NormalizationSettings.model_fields["jdbc_user"])
    schema = NormalizationSettings.model_json_schema(by_alias=True)
    assert schema["properties"]["jdbc_password"]["airbyte_secret"] is True
    assert "airbyte_secret" not in schema["properties"]["jdbc_user"]


def test_frozen():
    with pytest.raises(ValidationError):
        NormalizationSettings().enabled = True  # type: ignore[misc]


def test_every_field_documented():
    models = [
        cls for _, cls in inspect.getmembers(normalization, inspect.isclass)
        if issubclass(cls, BaseModel) and cls.__module__ == normalization.__name__
    ]
    assert NormalizationSettings in models
    for cls in models:
        for name, info in cls.model_fields.items():
            assert info.description and info.description.strip(), f"{cls.__name__}.{name} has no description"
            assert info.examples, f"{cls.__name__}.{name} has no example"
