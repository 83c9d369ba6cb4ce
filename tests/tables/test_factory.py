"""framework/tables/factory.py: where a stream's table lives and which format's class opens it, Iceberg's wiring
checked against a stand-in `framework.tables.iceberg` (the Iceberg part's module, by its agreed name)."""

from __future__ import annotations

import sys
import types

import pytest

from framework.errors import ConfigError
from framework.models.destination import DestinationSettings
from framework.tables.factory import app_id, iceberg_catalog, open_table, table_key, table_location


def settings(**more) -> DestinationSettings:
    return DestinationSettings.model_validate({"output": "/data/lake", **more})


def test_layout_one_table_per_stream_under_its_namespace():
    assert table_key("orders") == "orders" and table_key("orders", "shop") == "shop/orders"
    assert table_key("Ünïcode stream", "a/b") == "a/b/Unicode_stream"  # names made safe as for files
    assert table_location(settings(format={"format_type": "delta"}), "orders", "shop") == "/data/lake/shop/orders"
    s3 = DestinationSettings.model_validate({"s3_bucket_name": "b", "s3_bucket_path": "lake",
                                             "format": {"format_type": "delta"}})
    assert table_location(s3, "orders") == "s3://b/lake/orders"
    assert app_id("orders", "shop") == "manifest-framework:shop/orders"


def test_delta_opens_a_delta_table():
    pytest.importorskip("deltalake", reason="the tables extra (deltalake) is not installed")
    from framework.tables.delta import DeltaLakeTable

    table = open_table(settings(format={"format_type": "delta"}), "orders")
    assert isinstance(table, DeltaLakeTable) and table.data_location() == "/data/lake/orders/data"


def test_iceberg_is_opened_through_open_iceberg_table_with_the_catalog_and_the_s3_options(monkeypatch):
    calls = []
    stand_in = types.ModuleType("framework.tables.iceberg")
    stand_in.open_iceberg_table = lambda *args: calls.append(args) or "a table"  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "framework.tables.iceberg", stand_in)

    assert open_table(settings(format={"format_type": "iceberg"}), "orders") == "a table"
    assert calls[-1] == ("/data/lake/orders", "airbyte", "orders",
                         {"type": "sqlite", "path": "/data/lake/_airbyte_state/iceberg_catalog.db"}, {})
    s3 = DestinationSettings.model_validate({
        "s3_bucket_name": "b", "s3_bucket_path": "lake", "s3_endpoint": "http://127.0.0.1:9000",
        "access_key_id": "AK", "secret_access_key": "SK", "s3_bucket_region": "us-east-1",
        "format": {"format_type": "iceberg", "namespace": "shop",
                   "catalog": {"type": "rest", "uri": "https://cat", "warehouse": "w", "token": "t"}}})
    open_table(s3, "orders", "crm")
    location, namespace, name, catalog, options = calls[-1]
    assert (location, namespace, name) == ("s3://b/lake/crm/orders", "crm", "orders")  # the stream's namespace wins
    assert catalog == {"type": "rest", "uri": "https://cat", "warehouse": "w", "credential": None, "token": "t",
                       "properties": {}}
    assert options == {"s3.endpoint": "http://127.0.0.1:9000", "s3.path-style-access": "true",
                       "s3.region": "us-east-1", "s3.access-key-id": "AK", "s3.secret-access-key": "SK"}


def test_the_sqlite_catalog_lives_in_the_output_local_or_on_s3_unless_a_path_is_given():
    on_s3 = DestinationSettings.model_validate({"output": "s3://b/lake", "format": {"format_type": "iceberg"}})
    assert iceberg_catalog(on_s3) == {"type": "sqlite", "path": "s3://b/lake/_airbyte_state/iceberg_catalog.db"}
    given = DestinationSettings.model_validate({"output": "s3://b/lake", "format": {
        "format_type": "iceberg", "catalog": {"type": "sqlite", "path": "/var/cat.db"}}})
    assert iceberg_catalog(given)["path"] == "/var/cat.db"


def test_a_file_format_has_no_table():
    with pytest.raises(ConfigError, match="lands files, not tables"):
        open_table(settings(), "orders")
