"""Normalization into PostgreSQL end to end: three syncs of changing records through deduped history, the seed's
nested example, and a failing run that leaves the tables as they were. Checked with psql (tests/fakes), which
shares no code with the target."""

from __future__ import annotations

import uuid
from datetime import datetime, timezone

import pytest

from framework.normalization.naming import child_table_name
from framework.normalization.runner import normalize
from normalization.conftest import at, land

pytestmark = [pytest.mark.spark, pytest.mark.postgres]

USERS = {"type": "object", "properties": {
    "id": {"type": "integer"}, "name": {"type": "string"}, "updated_at": {"type": "string", "format": "date-time"},
    "_ab_cdc_deleted_at": {"type": ["null", "string"], "format": "date-time"},
    "address": {"type": "object", "properties": {"city": {"type": "string"}}},
    "tags": {"type": "array", "items": {"type": "string"}}}}


def user(i, name, updated, deleted=None):
    return {"id": i, "name": name, "updated_at": updated.isoformat().replace("+00:00", "Z"),
            "_ab_cdc_deleted_at": deleted.isoformat().replace("+00:00", "Z") if deleted else None,
            "address": {"city": f"{name}-city"}, "tags": [name, "x"]}


@pytest.fixture
def pg_settings(postgres, local_settings):
    schema = f"t_{uuid.uuid4().hex[:10]}"
    normalization = {"enabled": True, "target": "postgres", "jdbc_url": postgres.jdbc_url,
                     "jdbc_user": postgres.user, "jdbc_password": postgres.password, "jdbc_schema": schema}
    return local_settings("parquet", normalization=normalization), schema


def test_three_syncs_through_deduped_history_in_postgres(spark, postgres, pg_settings):
    settings, schema = pg_settings
    dec31 = datetime(2023, 12, 31, tzinfo=timezone.utc)

    def sync(records, day):
        land(settings, "users", records, USERS, emitted_at=at(day), primary_key=["id"], cursor="updated_at",
             destination_sync_mode="append_dedup")
        [outcome] = normalize(spark, settings, now=at(day, 12)).streams
        assert outcome.error is None, outcome.error
        return outcome

    def scd():
        return postgres.sql(
            f'select id, name, extract(day from _airbyte_start_at at time zone \'UTC\')::int, '
            f'extract(day from _airbyte_end_at at time zone \'UTC\')::int, _airbyte_active_row '
            f'from "{schema}".users_scd order by id, _airbyte_start_at, _airbyte_emitted_at')

    sync([user(1, "a", at(1)), user(2, "b", at(1)), user(3, "c", at(1))], 1)
    assert scd() == [("1", "a", "1", None, "t"), ("2", "b", "1", None, "t"), ("3", "c", "1", None, "t")]

    second = sync([user(1, "a2", at(2)), user(2, "b", at(2), deleted=at(2)), user(3, "old", dec31)], 2)
    assert second.incremental
    assert scd() == [("1", "a", "1", "2", "f"), ("1", "a2", "2", None, "t"),
                     ("2", "b", "1", "2", "f"), ("2", "b", "2", None, "f"),
                     ("3", "old", "31", "1", "f"), ("3", "c", "1", None, "t")]

    sync([user(1, "a3", at(2)), user(4, "d", at(3))], 3)  # same cursor as a2: the later emitted wins
    assert scd() == [("1", "a", "1", "2", "f"), ("1", "a2", "2", "2", "f"), ("1", "a3", "2", None, "t"),
                     ("2", "b", "1", "2", "f"), ("2", "b", "2", None, "f"),
                     ("3", "old", "31", "1", "f"), ("3", "c", "1", None, "t"),
                     ("4", "d", "3", None, "t")]
    assert postgres.sql(f'select id, name from "{schema}".users order by id') == [
        ("1", "a3"), ("3", "c"), ("4", "d")]
    address = child_table_name(["users"], "address", "postgres")
    tags = child_table_name(["users"], "tags", "postgres")
    assert postgres.sql(f'select a.city from "{schema}"."{address}" a join "{schema}".users u '
                        f'on a._airbyte_users_foreign_hashid = u._airbyte_users_hashid order by 1') == [
        ("a3-city",), ("c-city",), ("d-city",)]
    assert postgres.sql(f'select count(*) from "{schema}"."{tags}" t join "{schema}".users u '
                        f'on t._airbyte_users_foreign_hashid = u._airbyte_users_hashid') == [("6",)]
    # the raw table keeps every landed record, its blob as jsonb
    assert postgres.sql(f'select count(*), count(distinct _airbyte_data->>\'id\') from "{schema}"._airbyte_raw_users') \
        == [("8", "4")]
    types = dict(postgres.sql(
        f"select column_name, data_type from information_schema.columns where table_schema = '{schema}' "
        f"and table_name = 'users_scd'"))
    assert types["id"] == "bigint" and types["_airbyte_start_at"] == "timestamp with time zone"
    assert types["_airbyte_active_row"] == "boolean"


def test_a_failing_normalization_leaves_the_postgres_tables_as_they_were(spark, postgres, pg_settings, monkeypatch):
    settings, schema = pg_settings
    land(settings, "users", [user(1, "a", at(1))], USERS, emitted_at=at(1), primary_key=["id"],
         cursor="updated_at", destination_sync_mode="append")
    assert not normalize(spark, settings, now=at(1, 12)).failed
    before = postgres.sql(f'select id, name, _airbyte_normalized_at from "{schema}".users order by id')

    from framework.normalization.targets import postgres as target

    def broken(*args, **kwargs):
        raise RuntimeError("the database went away")

    monkeypatch.setattr(target.PostgresTarget, "publish", broken)
    land(settings, "users", [user(2, "b", at(2))], USERS, emitted_at=at(2), primary_key=["id"],
         cursor="updated_at", destination_sync_mode="append")
    [outcome] = normalize(spark, settings, now=at(2, 12)).streams
    assert outcome.error and "went away" in outcome.error
    assert postgres.sql(f'select id, name, _airbyte_normalized_at from "{schema}".users order by id') == before
