"""The PostgreSQL target of normalization against a real, throwaway PostgreSQL server.

Tables are written through ``PostgresTarget`` (Spark's JDBC writer, a JDBC connection of
the driver JVM) and checked with ``psql`` (the ``postgres`` fixture's ``sql``), a client
that shares no code with it. Every test works in a schema of its own.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from framework.errors import FrameworkError
from framework.models.normalization import NormalizationSettings
from framework.normalization.targets.postgres import PostgresTarget, _sql_type, _stage_columns, quote, redact_url

RAW_SCHEMA = "`_airbyte_ab_id` string, `_airbyte_emitted_at` timestamp, `_airbyte_data` string"
CARS_SCHEMA = (
    "`_airbyte_ab_id` string, `_airbyte_emitted_at` timestamp, `_airbyte_cars_hashid` string, "
    "`_airbyte_normalized_at` timestamp, make string, horsepower long, price double, electric boolean, "
    "tags array<string>"
)
T1 = datetime(2024, 1, 2, 3, 4, 5, 123456, tzinfo=timezone.utc)
T2 = datetime(2024, 3, 4, 5, 6, 7, 654321, tzinfo=timezone.utc)
NOW = datetime(2024, 6, 1, tzinfo=timezone.utc)


def settings(postgres, schema: str, **more) -> NormalizationSettings:
    values = {
        "target": "postgres", "jdbc_url": postgres.jdbc_url, "jdbc_user": postgres.user,
        "jdbc_password": postgres.password, "jdbc_schema": schema,
    }
    return NormalizationSettings(**{**values, **more})


@pytest.fixture
def target(spark, postgres):
    """A PostgresTarget writing into a fresh schema of the test server."""
    return PostgresTarget(spark, settings(postgres, f"t_{uuid.uuid4().hex[:10]}"))


def tables(postgres, schema: str) -> set[str]:
    rows = postgres.sql(f"SELECT table_name FROM information_schema.tables WHERE table_schema = '{schema}'")
    return {row[0] for row in rows}


def column_types(postgres, schema: str, table: str) -> dict[str, str]:
    rows = postgres.sql(
        "SELECT column_name, data_type FROM information_schema.columns "
        f"WHERE table_schema = '{schema}' AND table_name = '{table}' ORDER BY ordinal_position"
    )
    return dict(rows)


def raw_frame(spark, rows):
    return spark.createDataFrame(rows, RAW_SCHEMA)


# ------------------------------------------------------------------------------ with the server


@pytest.mark.spark
@pytest.mark.postgres
def test_publish_replaces_and_appends_with_native_types_and_reads_back(spark, postgres, target):
    schema = target.schema
    raw1 = raw_frame(spark, [("r1", T1, '{"make": "alfa romeo", "horsepower": 247}'), ("r2", T1, None)])
    cars1 = spark.createDataFrame(
        [("r1", T1, "h1", NOW, "alfa romeo", 247, 60000.5, False, ["red", "fast"])], CARS_SCHEMA
    )
    target.publish({"cars": cars1}, {"_airbyte_raw_cars": raw1})

    raw2 = raw_frame(spark, [("r3", T2, '{"make": "lotus", "horsepower": 217}')])
    cars2 = spark.createDataFrame(
        [("r1", T1, "h1", NOW, "alfa romeo", 247, 60000.5, False, []),
         ("r3", T2, "h3", NOW, "lotus", None, None, None, None)],
        CARS_SCHEMA,
    )
    target.publish({"cars": cars2}, {"_airbyte_raw_cars": raw2})

    assert tables(postgres, schema) == {"cars", "_airbyte_raw_cars"}  # no staging table is left
    assert column_types(postgres, schema, "_airbyte_raw_cars") == {
        "_airbyte_ab_id": "text",
        "_airbyte_emitted_at": "timestamp with time zone",
        "_airbyte_data": "jsonb",
    }
    assert column_types(postgres, schema, "cars") == {
        "_airbyte_ab_id": "text",
        "_airbyte_emitted_at": "timestamp with time zone",
        "_airbyte_cars_hashid": "text",
        "_airbyte_normalized_at": "timestamp with time zone",
        "make": "text",
        "horsepower": "bigint",
        "price": "double precision",
        "electric": "boolean",
        "tags": "jsonb",
    }
    # Appended: every raw row of both publishes; the JSON is jsonb (queried with ->>), instants exact in UTC.
    assert postgres.sql(
        "SELECT _airbyte_ab_id, _airbyte_data->>'make', (_airbyte_data->'horsepower')::int, "
        "to_char(_airbyte_emitted_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') "
        f'FROM "{schema}"._airbyte_raw_cars ORDER BY 1'
    ) == [
        ("r1", "alfa romeo", "247", "2024-01-02 03:04:05.123456"),
        ("r2", None, None, "2024-01-02 03:04:05.123456"),
        ("r3", "lotus", "217", "2024-03-04 05:06:07.654321"),
    ]
    # Replaced: only the second publish's rows.
    assert postgres.sql(
        f"SELECT _airbyte_ab_id, make, horsepower, price, electric, jsonb_array_length(tags) "
        f'FROM "{schema}".cars ORDER BY 1'
    ) == [("r1", "alfa romeo", "247", "60000.5", "f", "0"), ("r3", "lotus", None, None, None, None)]

    back = target.read_table("cars")
    assert back.columns == ["_airbyte_ab_id", "_airbyte_emitted_at", "_airbyte_cars_hashid",
                            "_airbyte_normalized_at", "make", "horsepower", "price", "electric", "tags"]
    assert dict(back.dtypes)["horsepower"] == "bigint" and dict(back.dtypes)["electric"] == "boolean"
    rows = sorted(back.select("_airbyte_ab_id", "make", "horsepower", "price").collect())
    assert [tuple(row) for row in rows] == [("r1", "alfa romeo", 247, 60000.5), ("r3", "lotus", None, None)]
    assert target.read_table("trucks") is None


@pytest.mark.spark
@pytest.mark.postgres
def test_max_emitted_at_is_none_without_table_or_rows_then_the_latest_instant(spark, postgres, target):
    assert target.max_emitted_at("_airbyte_raw_cars") is None
    target.publish({}, {"_airbyte_raw_cars": raw_frame(spark, [])})  # an empty append still makes the table
    assert target.max_emitted_at("_airbyte_raw_cars") is None

    # Appended rows with a column the table lacks: the column is added, older rows hold NULL in it.
    wider = spark.createDataFrame([("a", T2, "{}", 7), ("b", T1, "{}", 8), ("c", None, "{}", 9)], RAW_SCHEMA + ", n long")
    target.publish({}, {"_airbyte_raw_cars": wider})
    latest = target.max_emitted_at("_airbyte_raw_cars")
    assert latest == T2 and latest.tzinfo is not None
    assert column_types(postgres, target.schema, "_airbyte_raw_cars")["n"] == "bigint"


@pytest.mark.spark
@pytest.mark.postgres
def test_a_publish_failing_while_its_data_is_computed_changes_no_table(spark, postgres, target):
    from pyspark.sql import functions as F

    before = raw_frame(spark, [("r1", T1, '{"v": 1}')])
    target.publish({"cars": before}, {"_airbyte_raw_cars": before})

    # The replaced table stages fine; the appended one fails on an executor half way through its rows.
    failing = raw_frame(spark, [("r2", T2, '{"v": 2}'), ("r3", T2, '{"v": 3}')]).withColumn(
        "_airbyte_data",
        F.when(F.col("_airbyte_ab_id") == "r3", F.raise_error(F.lit("boom in r3"))).otherwise(F.col("_airbyte_data")),
    )
    replacement = raw_frame(spark, [("new", T2, "{}")])
    with pytest.raises(FrameworkError) as caught:
        target.publish({"cars": replacement}, {"_airbyte_raw_cars": failing})

    message = str(caught.value)
    assert "boom in r3" in message and "keeps its previous content" in message
    assert postgres.password not in message
    for table in ("cars", "_airbyte_raw_cars"):
        assert postgres.sql(f'SELECT _airbyte_ab_id FROM "{target.schema}"."{table}"') == [("r1",)]
    assert tables(postgres, target.schema) == {"cars", "_airbyte_raw_cars"}


@pytest.mark.spark
@pytest.mark.postgres
def test_a_publish_failing_in_its_transaction_rolls_back_tables_already_swapped(spark, postgres, target):
    ints = "`_airbyte_emitted_at` timestamp, n long"
    target.publish({"a": spark.createDataFrame([(T1, 1)], ints)}, {"b": spark.createDataFrame([(T1, 1)], ints)})

    # "a" is swapped first; the rows for "b" then cannot go into its bigint column.
    texts = spark.createDataFrame([(T2, "not a number")], "`_airbyte_emitted_at` timestamp, n string")
    with pytest.raises(FrameworkError, match="keeps its previous content") as caught:
        target.publish({"a": spark.createDataFrame([(T2, 2)], ints)}, {"b": texts})

    assert "bigint" in str(caught.value)
    assert postgres.sql(f'SELECT n FROM "{target.schema}".a') == [("1",)]
    assert postgres.sql(f'SELECT n FROM "{target.schema}".b') == [("1",)]
    assert tables(postgres, target.schema) == {"a", "b"}


@pytest.mark.spark
@pytest.mark.postgres
def test_names_that_need_quotes_and_names_of_63_bytes_are_kept_exactly(spark, postgres):
    schema = f"Mixed Schema {uuid.uuid4().hex[:6]}"
    target = PostgresTarget(spark, settings(postgres, schema))
    long_table = "t" * 63
    long_column = "c" * 61 + "é"  # 62 characters, 63 bytes
    odd = ["select", "Two Words", 'say "hi"', "CamelCase", "x.y", "`tick`", long_column]
    frame = spark.createDataFrame([tuple(f"v{i}" for i in range(len(odd)))], [*odd])
    target.publish({long_table: frame}, {'Cars "Quoted" Table': frame})

    assert tables(postgres, schema) == {long_table, 'Cars "Quoted" Table'}
    escaped = schema.replace("'", "''")
    columns = postgres.sql(
        f"SELECT column_name FROM information_schema.columns WHERE table_schema = '{escaped}' "
        f"AND table_name = '{long_table}' ORDER BY ordinal_position"
    )
    assert [row[0] for row in columns] == odd
    back = target.read_table('Cars "Quoted" Table')
    assert back.columns == odd
    assert tuple(back.collect()[0]) == tuple(f"v{i}" for i in range(len(odd)))

    # One byte more: refused before anything is written (PostgreSQL would silently cut the name).
    with pytest.raises(FrameworkError, match="64 bytes long but PostgreSQL keeps only 63"):
        target.publish({"t" * 64: frame}, {})
    too_long = spark.createDataFrame([("v",)], ["c" * 62 + "é"])
    with pytest.raises(FrameworkError, match="dialect"):
        target.publish({}, {"fine": too_long})
    assert tables(postgres, schema) == {long_table, 'Cars "Quoted" Table'}


@pytest.mark.spark
@pytest.mark.postgres
def test_connection_errors_name_the_database_and_the_fix_but_never_the_password(spark, postgres):
    wrong_password = "wrong-" + postgres.password
    target = PostgresTarget(spark, settings(postgres, "public", jdbc_password=wrong_password))
    with pytest.raises(FrameworkError) as caught:
        target.max_emitted_at("cars")
    message = str(caught.value)
    assert postgres.jdbc_url in message and "check jdbc_user and jdbc_password" in message
    assert wrong_password not in message

    closed = postgres.jdbc_url.replace(f":{postgres.port}/", ":1/") + "?password=in-the-url"
    target = PostgresTarget(spark, settings(postgres, "public", jdbc_url=closed, jdbc_password=None))
    expected = r"cannot connect to jdbc:postgresql://127\.0\.0\.1:1/postgres\?password=\*\*\*.*is the server running"
    with pytest.raises(FrameworkError, match=expected + r".*check jdbc_url"):
        target.read_table("cars")
    assert "in-the-url" not in repr(target)


# ------------------------------------------------------------------------------------ pure parts


def test_a_table_both_replaced_and_appended_is_refused_before_any_work():
    target = PostgresTarget(None, NormalizationSettings(target="postgres", jdbc_url="jdbc:postgresql://db/x"))
    with pytest.raises(FrameworkError, match="both replaced and appended"):
        target.publish({"cars": object()}, {"cars": object()})  # type: ignore[dict-item]
    target.publish({}, {})  # nothing to do: no connection is made


def test_spark_types_map_to_postgres_types():
    from pyspark.sql import types as T

    def sql(name, data_type, **metadata):
        return _sql_type(T.StructField(name, data_type, metadata=metadata), "t")

    assert sql("_airbyte_data", T.StringType()) == "jsonb"
    assert sql("payload", T.StringType(), json=True) == "jsonb"
    assert sql("name", T.StringType()) == "text"
    assert sql("n", T.IntegerType()) == "bigint"
    assert sql("x", T.FloatType()) == "double precision"
    assert sql("d", T.DecimalType(38, 9)) == "numeric(38, 9)"
    assert sql("at", T.TimestampType()) == "timestamp with time zone"
    assert sql("local", T.TimestampNTZType()) == "timestamp"
    assert sql("day", T.DateType()) == "date"
    assert sql("nested", T.StructType([T.StructField("a", T.LongType())])) == "jsonb"
    with pytest.raises(FrameworkError, match="cannot store"):
        sql("i", T.DayTimeIntervalType())


def test_staging_columns_never_clash_with_real_names():
    assert _stage_columns(["a", "b"]) == ["_stg0", "_stg1"]
    staged = _stage_columns(["_stg1", "x", "__stg0"])
    assert not set(staged) & {"_stg1", "x", "__stg0"} and len(set(staged)) == 3


@given(st.text(min_size=1))
def test_quoted_identifiers_double_inner_quotes(name):
    quoted = quote(name)
    assert quoted.startswith('"') and quoted.endswith('"')
    assert quoted[1:-1].replace('""', "").count('"') == 0
    assert quoted[1:-1].replace('""', '"') == name


@given(st.text(alphabet=st.characters(blacklist_characters="&;/@", blacklist_categories=("Cs",)), min_size=1))
def test_redacted_urls_hold_no_password(password):
    for template in ("jdbc:postgresql://db:5432/x?user=u&password={}&ssl=true",
                     "jdbc:postgresql://db:5432/x?PASSWORD={}",
                     "jdbc:postgresql://u:{}@db:5432/x"):
        assert redact_url(template.format(password)) == template.format("***")
