"""PostgreSQL as the target of normalization: Spark's JDBC writer fills the tables, one transaction publishes them.

``PostgresTarget(spark, settings)`` keeps its tables in ``settings.jdbc_schema`` (created
when missing) of the database at ``settings.jdbc_url``.

Writing: the executors write every DataFrame through Spark's JDBC writer into a staging
table of its own (nothing is collected to the driver). Then one transaction on the driver
(DDL is transactional in PostgreSQL) drops each replaced table and renames its staging table
into its place, and appends each appended table's staged rows (``INSERT ... SELECT``,
creating the table or adding new columns first), dropping the staging tables. Readers see
every table's old content until the commit and every table's new content after it; a
publish that fails at any step leaves every table as it was and removes its staging tables.

Staging tables name their columns ``_stg0``, ``_stg1``, ... (renamed to the real names in
the transaction), so any column name works, however it must be quoted: Spark's JDBC writer
and reader never see the real names. Table and column names are quoted, kept as given
(case included), and refused when longer than PostgreSQL's 63 bytes (PostgreSQL would
silently cut them, and two names could become one).

Column types, from the DataFrame's Spark types:

* integers (byte, short, int, long): ``bigint``; booleans: ``boolean``;
* numbers (float, double): ``double precision``. Normalization types JSON numbers as Spark
  doubles, so ``float8`` stores exactly the values it computed (``numeric`` would only pretend
  to more precision) and reads back as a double; Spark decimals become ``numeric(p, s)``;
* timestamps: ``timestamp with time zone`` (``timestamp`` for Spark's TIMESTAMP_NTZ); dates: ``date``;
* strings: ``text``, except ``_airbyte_data`` (and any column whose field metadata has
  ``"json": true``), which is ``jsonb``: the connections use ``stringtype=unspecified``, so
  PostgreSQL parses the text as JSON; arrays, maps and structs are written as ``jsonb`` too
  (``to_json`` on the executors); binary: ``bytea``.

SQL on the driver goes through a JDBC connection made in the driver JVM
(``org.postgresql.Driver`` on Spark's classpath: see ``framework.spark.session``).
``java.sql.DriverManager`` cannot be used from Python: it refuses drivers loaded by Spark's
class loader.

Over Spark Connect the client has no JVM: the statements run on the server, each as the
``sessionInitStatement`` of a one-row JDBC read (:class:`_ServerSession`), a transaction's
statements in one ``BEGIN; ...; COMMIT`` (PostgreSQL runs them all or none), small queries as
JDBC reads. The server needs the driver on its classpath (``--jars`` when it starts:
docs/cluster.md, "Spark Connect").
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from msgspec import Struct

from framework.errors import FrameworkError
from framework.models.normalization import NormalizationSettings
from framework.spark.connect import is_connect

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructField

MAX_IDENTIFIER_BYTES = 63  # PostgreSQL's NAMEDATALEN - 1
JSON_COLUMN = "_airbyte_data"
EMITTED_AT = "_airbyte_emitted_at"
DRIVER_CLASS = "org.postgresql.Driver"
_STAGE_PREFIX = "_airbyte_tmp_"

_CONNECTION_STATES = ("08001", "08004", "08006", "08003", "08000")
_LOGIN_STATES = ("28P01", "28000")
_NO_DATABASE_STATE = "3D000"


def quote(identifier: str) -> str:
    """``identifier`` as a quoted PostgreSQL identifier (inner double quotes doubled)."""
    return '"' + identifier.replace('"', '""') + '"'


def redact_url(url: str) -> str:
    """The JDBC URL without a password (in its query string or before an ``@``), for messages."""
    url = re.sub(r"(?i)([?&;]password=)[^&;]*", r"\1***", url)
    return re.sub(r"(//[^/@:]*):[^/@]*@", r"\1:***@", url)


class PostgresTarget:
    """Normalized tables in a PostgreSQL schema, written by Spark over JDBC and published atomically."""

    name = "postgres"

    def __init__(self, spark: SparkSession, settings: NormalizationSettings):
        if not settings.jdbc_url:
            raise FrameworkError("the postgres target needs `jdbc_url`: set it in the normalization settings")
        self.dialect: str = settings.dialect or "postgres"
        self.schema: str = settings.jdbc_schema
        self.database: str = redact_url(settings.jdbc_url)  # safe to show
        self._spark = spark
        self._url = settings.jdbc_url
        self._user = settings.jdbc_user
        self._password = settings.jdbc_password

    def __repr__(self) -> str:
        return f"PostgresTarget({self.database!r}, schema={self.schema!r})"

    # ----------------------------------------------------------------------------------- reading

    def read_table(self, table: str) -> DataFrame | None:
        """The table's current content (read by Spark over JDBC), or None when there is no such table."""
        with self._explained(f"reading table {self._qualified(table)} of {self.database}"):
            with self._session() as session:
                columns = session.columns(self.schema, table)
            if columns is None:
                return None
            # Read under positional aliases: Spark's JDBC reader quotes names without escaping inner quotes.
            aliases = ", ".join(f"{quote(name)} AS {quote(f'c{index}')}" for index, name in enumerate(columns))
            query = f"(SELECT {aliases} FROM {self._qualified(table)}) AS _airbyte_source"
            frame = self._spark.read.format("jdbc").options(**self._spark_options(query), fetchsize="10000").load()
            return frame.toDF(*columns)

    def max_emitted_at(self, table: str) -> datetime | None:
        """The latest ``_airbyte_emitted_at`` in the table (aware, UTC); None when the table is absent or empty."""
        with self._explained(f"finding the latest {EMITTED_AT} of table {self._qualified(table)} in {self.database}"):
            with self._session() as session:
                columns = session.columns(self.schema, table)
                if columns is None:
                    return None
                if EMITTED_AT not in columns:
                    raise FrameworkError(
                        f"table {self._qualified(table)} in {self.database} has no {EMITTED_AT} column: "
                        f"it was not made by normalization; drop it or choose another jdbc_schema"
                    )
                rows = session.query(
                    f"SELECT to_char(max({quote(EMITTED_AT)})::timestamptz AT TIME ZONE 'UTC', "
                    f"'YYYY-MM-DD\"T\"HH24:MI:SS.US') FROM {self._qualified(table)}"
                )
        value = rows[0][0]
        return None if value is None else datetime.fromisoformat(value).replace(tzinfo=timezone.utc)

    # ---------------------------------------------------------------------------------- publishing

    def publish(self, replace: Mapping[str, DataFrame], append: Mapping[str, DataFrame]) -> None:
        """Replace some tables' contents and append rows to others, all or nothing.

        On any failure every table keeps its previous content and the error says what failed.
        """
        both = sorted(set(replace) & set(append))
        if both:
            raise FrameworkError(f"table {both[0]!r} is both replaced and appended to in one publish")
        token = uuid.uuid4().hex[:12]  # staging tables are named by position: table names may be 63 bytes long
        given = [(table, frame, True) for table, frame in replace.items()]
        given += [(table, frame, False) for table, frame in append.items()]
        plans = [
            _Plan.of(table, frame, is_replaced, f"{_STAGE_PREFIX}{token}_{index}")
            for index, (table, frame, is_replaced) in enumerate(given)
        ]
        if not plans:
            return
        tables = ", ".join(repr(plan.table) for plan in plans)
        with self._explained(f"publishing {tables} to {self.database}", "; every table keeps its previous content"):
            with self._session() as session:
                staged: list[str] = []
                try:
                    # Asked first: CREATE SCHEMA IF NOT EXISTS needs the right to create schemas even when it exists.
                    if not session.query("SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = ?", self.schema):
                        session.execute(f"CREATE SCHEMA IF NOT EXISTS {quote(self.schema)}")
                    for plan in plans:
                        session.execute(self._create_stage_sql(plan))
                        staged.append(plan.stage)
                        self._write_stage(plan)
                    with session.transaction():
                        for plan in plans:
                            for statement in self._publish_sql(plan):
                                session.execute(statement)
                except BaseException:
                    self._drop_quietly(session, staged)
                    raise

    def _create_stage_sql(self, plan: _Plan) -> str:
        columns = ", ".join(f"{quote(stage)} {sql_type}" for stage, sql_type in zip(plan.stage_columns, plan.types))
        # Appended rows only pass through their staging table: it need not survive a crash.
        kind = "TABLE" if plan.replace else "UNLOGGED TABLE"
        return f"CREATE {kind} {self._qualified(plan.stage)} ({columns})"

    def _write_stage(self, plan: _Plan) -> None:
        (
            plan.staged_frame()
            .write.format("jdbc")
            .options(**self._spark_options(self._qualified(plan.stage)), batchsize="5000")
            .mode("append")
            .save()
        )

    def _publish_sql(self, plan: _Plan) -> list[str]:
        target = self._qualified(plan.table)
        stage = self._qualified(plan.stage)
        if plan.replace:
            statements = [f"DROP TABLE IF EXISTS {target}"]
            statements += [
                f"ALTER TABLE {stage} RENAME COLUMN {quote(old)} TO {quote(new)}"
                for old, new in zip(plan.stage_columns, plan.columns)
            ]
            statements.append(f"ALTER TABLE {stage} RENAME TO {quote(plan.table)}")
            return statements
        definitions = ", ".join(f"{quote(name)} {sql_type}" for name, sql_type in zip(plan.columns, plan.types))
        statements = [f"CREATE TABLE IF NOT EXISTS {target} ({definitions})"]
        # New fields in the stream's schema become new (nullable) columns of an existing table.
        statements += [
            f"ALTER TABLE {target} ADD COLUMN IF NOT EXISTS {quote(name)} {sql_type}"
            for name, sql_type in zip(plan.columns, plan.types)
        ]
        names = ", ".join(quote(name) for name in plan.columns)
        staged = ", ".join(quote(name) for name in plan.stage_columns)
        statements.append(f"INSERT INTO {target} ({names}) SELECT {staged} FROM {stage}")
        statements.append(f"DROP TABLE {stage}")
        return statements

    def _drop_quietly(self, session: _Session | _ServerSession, tables: Sequence[str]) -> None:
        for table in tables:
            try:
                session.execute(f"DROP TABLE IF EXISTS {self._qualified(table)}")
            except Exception:  # noqa: BLE001 - the first error is the one worth reporting
                pass

    # --------------------------------------------------------------------------------- connections

    def _qualified(self, table: str) -> str:
        return f"{quote(self.schema)}.{quote(table)}"

    def _properties(self) -> dict[str, str]:
        properties = {"stringtype": "unspecified", "ApplicationName": "manifest-framework normalization"}
        if self._user:
            properties["user"] = self._user
        if self._password:
            properties["password"] = self._password
        return properties

    def _spark_options(self, dbtable: str) -> dict[str, str]:
        return {
            "url": self._url,
            "dbtable": dbtable,
            "driver": DRIVER_CLASS,
            "reWriteBatchedInserts": "true",
            **self._properties(),
        }

    @contextmanager
    def _session(self) -> Iterator[_Session | _ServerSession]:
        if is_connect(self._spark):  # no JVM here: the statements run on the Spark Connect server
            yield _ServerSession(self)
            return
        connection = self._connect()
        try:
            yield _Session(connection, self)
        finally:
            try:
                connection.close()
            except Exception:  # noqa: BLE001 - closing after use: nothing left to lose
                pass

    def _connect(self) -> Any:
        from py4j.java_gateway import JavaClass  # type: ignore[import-untyped]
        from py4j.protocol import Py4JJavaError  # type: ignore[import-untyped]

        jvm: Any = self._spark._jvm  # a classic session's (Spark Connect sessions take _ServerSession)
        driver_class = jvm.org.postgresql.Driver
        if not isinstance(driver_class, JavaClass):
            raise FrameworkError(
                "the PostgreSQL JDBC driver is not on Spark's classpath: install Debian's libpostgresql-jdbc-java "
                "or set FRAMEWORK_JDBC_JARS to the driver's jar, then start Spark again "
                "(docs/normalization.md, \"Getting a PostgreSQL database\")"
            )
        properties = jvm.java.util.Properties()
        for key, value in self._properties().items():
            properties.setProperty(key, value)
        try:
            connection = driver_class().connect(self._url, properties)
        except Py4JJavaError as exc:
            raise self._connect_error(exc) from None
        if connection is None:
            raise FrameworkError(f"{self.database} is not a PostgreSQL JDBC address: check jdbc_url")
        return connection

    def _connect_error(self, exc: Any) -> FrameworkError:
        state = _sql_state(exc)
        detail = self._reason(exc)
        user = f" as user {self._user!r}" if self._user else ""
        if state in _LOGIN_STATES:
            return FrameworkError(
                f"cannot log in to {self.database}{user}: {detail}; check jdbc_user and jdbc_password"
            )
        if state == _NO_DATABASE_STATE:
            return FrameworkError(f"cannot connect to {self.database}: {detail}; check the database name in jdbc_url")
        if state in _CONNECTION_STATES:
            return FrameworkError(
                f"cannot connect to {self.database}: {detail}; is the server running and reachable? check jdbc_url"
            )
        return FrameworkError(
            f"cannot connect to {self.database}{user}: {detail}; check jdbc_url, jdbc_user and jdbc_password"
        )

    @contextmanager
    def _explained(self, what: str, after: str = "") -> Iterator[None]:
        """Turn errors of the JVM, the driver or Spark into a FrameworkError saying what failed and why."""
        try:
            yield
        except FrameworkError:
            raise
        except Exception as exc:
            raise FrameworkError(f"{what} failed: {self._reason(exc)}{after}") from exc

    def _reason(self, exc: BaseException) -> str:
        return self._scrub(_java_message(exc))

    def _scrub(self, text: str) -> str:
        return text.replace(self._password, "***") if self._password else text


class _Plan(Struct, frozen=True):
    """One table of a publish: its columns, their PostgreSQL types, the DataFrame and the staging table."""

    table: str
    frame: DataFrame
    replace: bool
    stage: str
    columns: list[str]
    types: list[str]
    stage_columns: list[str]

    @classmethod
    def of(cls, table: str, frame: DataFrame, replace: bool, stage: str) -> _Plan:
        _check_identifier(table, "table")
        fields = frame.schema.fields
        for field in fields:
            _check_identifier(field.name, f"column of table {table!r}")
        if not fields:
            raise FrameworkError(f"table {table!r} has no columns: PostgreSQL needs at least one")
        columns = [field.name for field in fields]
        types = [_sql_type(field, table) for field in fields]
        return cls(table, frame, replace, stage, columns, types, _stage_columns(columns))

    def staged_frame(self) -> DataFrame:
        """The DataFrame under the staging column names, complex values as JSON text (lazy, on the executors)."""
        from pyspark.sql import functions as F
        from pyspark.sql.types import ArrayType, MapType, NullType, StringType, StructType

        frame = self.frame.toDF(*self.stage_columns)
        converted = []
        changed = False
        for name, field in zip(self.stage_columns, self.frame.schema.fields):
            column = F.col(quote_spark(name))
            if isinstance(field.dataType, (ArrayType, MapType, StructType)):
                column, changed = F.to_json(column).alias(name), True
            elif isinstance(field.dataType, NullType):
                column, changed = column.cast(StringType()).alias(name), True
            converted.append(column)
        return frame.select(*converted) if changed else frame


def quote_spark(name: str) -> str:
    """A Spark SQL column reference to ``name`` (backticks doubled)."""
    return "`" + name.replace("`", "``") + "`"


def _stage_columns(columns: Sequence[str]) -> list[str]:
    """Staging column names (``_stg0``...) that clash with none of the real names."""
    taken = set(columns)
    prefix = "_stg"
    while any(f"{prefix}{index}" in taken for index in range(len(columns))):
        prefix = "_" + prefix
    return [f"{prefix}{index}" for index in range(len(columns))]


def _check_identifier(name: str, what: str) -> None:
    size = len(name.encode("utf-8"))
    if not name or "\x00" in name:
        raise FrameworkError(f"{what} name {name!r} cannot be used in PostgreSQL: names must be non-empty text")
    if size > MAX_IDENTIFIER_BYTES:
        raise FrameworkError(
            f"{what} name {name!r} is {size} bytes long but PostgreSQL keeps only {MAX_IDENTIFIER_BYTES}: "
            f"use the `postgres` naming dialect (normalization setting `dialect`) so names are shortened"
        )


def _sql_type(field: StructField, table: str) -> str:
    from pyspark.sql import types as T

    data_type = field.dataType
    if isinstance(data_type, T.StringType):
        return "jsonb" if field.name == JSON_COLUMN or field.metadata.get("json") is True else "text"
    if isinstance(data_type, (T.LongType, T.IntegerType, T.ShortType, T.ByteType)):
        return "bigint"
    if isinstance(data_type, (T.DoubleType, T.FloatType)):
        return "double precision"
    if isinstance(data_type, T.BooleanType):
        return "boolean"
    if isinstance(data_type, T.TimestampNTZType):
        return "timestamp"
    if isinstance(data_type, T.TimestampType):
        return "timestamp with time zone"
    if isinstance(data_type, T.DateType):
        return "date"
    if isinstance(data_type, T.DecimalType):
        return f"numeric({data_type.precision}, {data_type.scale})"
    if isinstance(data_type, (T.ArrayType, T.MapType, T.StructType)):
        return "jsonb"
    if isinstance(data_type, T.BinaryType):
        return "bytea"
    if isinstance(data_type, T.NullType):
        return "text"
    raise FrameworkError(
        f"column {field.name!r} of table {table!r} has Spark type {data_type.simpleString()}, "
        f"which the postgres target cannot store: cast it to a string, number, boolean or timestamp"
    )


class _Catalog:
    """What both kinds of session answer from PostgreSQL's catalog, through their ``query``."""

    def query(self, sql: str, *params: str) -> list[tuple[str | None, ...]]:
        raise NotImplementedError

    def columns(self, schema: str, table: str) -> list[str] | None:
        """The table's column names in order, or None when the schema has no such table (or view)."""
        found = self.query(
            "SELECT c.oid::text FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = ? AND c.relname = ? AND c.relkind IN ('r', 'p', 'v', 'm', 'f')",
            schema,
            table,
        )
        if not found:
            return None
        rows = self.query(
            "SELECT attname FROM pg_catalog.pg_attribute WHERE attrelid = ?::oid AND attnum > 0 "
            "AND NOT attisdropped ORDER BY attnum",
            str(found[0][0]),
        )
        return [str(row[0]) for row in rows]


class _ServerSession(_Catalog):
    """Statements and small queries run by a Spark Connect server's JDBC driver (see the module docs).

    A statement is the ``sessionInitStatement`` of a JDBC read of one row, which Spark runs once, in the
    read's only task, on a connection of its own; a transaction collects its statements and runs them
    as one ``BEGIN; ...; COMMIT`` when its block ends (nothing when the block fails).
    """

    def __init__(self, target: PostgresTarget):
        self._target = target
        self._pending: list[str] | None = None

    def execute(self, sql: str) -> None:
        if self._pending is not None:
            self._pending.append(sql)
        else:
            self._run([sql])

    def query(self, sql: str, *params: str) -> list[tuple[str | None, ...]]:
        """Rows of a small query, every value as text (None for NULL); ``?`` takes ``params`` as literals."""
        rows = self._read(_with_literals(sql, params)).collect()
        return [tuple(None if value is None else str(value) for value in row) for row in rows]

    @contextmanager
    def transaction(self) -> Iterator[None]:
        self._pending = []
        try:
            yield
            statements = self._pending
        finally:
            self._pending = None
        self._run(["BEGIN", *statements, "COMMIT"])

    def _run(self, statements: Sequence[str]) -> None:
        self._read("SELECT 1 AS done", sessionInitStatement=";\n".join(statements)).collect()

    def _read(self, sql: str, **more: str) -> DataFrame:
        options = self._target._spark_options(f"({sql}) AS _airbyte_query")
        frame = self._target._spark.read.format("jdbc").options(**options, **more).load()
        try:
            frame.schema  # noqa: B018 - resolved on the server: a missing driver fails here, before any statement
        except Exception as exc:
            if "org.postgresql.Driver" in str(exc) and "ClassNotFound" in str(exc):
                raise FrameworkError(
                    "the Spark Connect server has no PostgreSQL JDBC driver: start it with the driver's jar "
                    "(--jars /usr/share/java/postgresql.jar, or --packages org.postgresql:postgresql:42.7.4); "
                    "see docs/cluster.md, Spark Connect"
                ) from None
            raise
        return frame


def _with_literals(sql: str, params: Sequence[str]) -> str:
    """``sql`` with each ``?`` replaced by the next of ``params`` as a PostgreSQL string literal."""
    pieces = sql.split("?")
    if len(pieces) != len(params) + 1:
        raise ValueError(f"{len(pieces) - 1} placeholders for {len(params)} values in {sql!r}")
    for value in params:
        if "\x00" in value:
            raise FrameworkError(f"{value!r} cannot be sent to PostgreSQL: it holds a NUL character")
    literals = ["'" + value.replace("'", "''") + "'" for value in params]  # standard_conforming_strings
    return pieces[0] + "".join(literal + piece for literal, piece in zip(literals, pieces[1:]))


class _Session(_Catalog):
    """A JDBC connection of the driver JVM: statements, small queries and one transaction at a time."""

    def __init__(self, connection: Any, target: PostgresTarget):
        self._connection = connection
        self._target = target

    def execute(self, sql: str) -> None:
        statement = self._connection.createStatement()
        try:
            statement.execute(sql)
        finally:
            statement.close()

    def query(self, sql: str, *params: str) -> list[tuple[str | None, ...]]:
        """Rows of a small query, every value as text (None for NULL)."""
        statement = self._connection.prepareStatement(sql)
        try:
            for index, value in enumerate(params, start=1):
                statement.setString(index, value)
            result = statement.executeQuery()
            width = result.getMetaData().getColumnCount()
            rows = []
            while result.next():
                rows.append(tuple(result.getString(index) for index in range(1, width + 1)))
            return rows
        finally:
            statement.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        self._connection.setAutoCommit(False)
        try:
            yield
            self._connection.commit()
        except BaseException:
            try:
                self._connection.rollback()
            except Exception:  # noqa: BLE001 - the error that made us roll back is the one raised
                pass
            raise
        finally:
            try:
                self._connection.setAutoCommit(True)
            except Exception:  # noqa: BLE001 - the connection is done with: its failure hides nothing
                pass


def _java_exception(exc: Any) -> Any:
    """The JVM exception behind a py4j error or a PySpark captured exception, if any."""
    return getattr(exc, "java_exception", None) or getattr(exc, "_origin", None)


def _sql_state(exc: Any) -> str | None:
    java = _java_exception(exc)
    while java is not None:
        try:
            state = java.getSQLState()
        except Exception:  # noqa: BLE001 - any JVM exception without a SQL state
            state = None
        if state:
            return str(state)
        java = java.getCause()
    return None


def _root_cause(text: str) -> str:
    """The message of the last ``Caused by: Class: message`` line of a Spark Connect error's JVM stack
    trace (the driver's own reason, say a refused login), else ``text``."""
    causes = [line.strip()[len("Caused by: "):] for line in text.splitlines()
              if line.strip().startswith("Caused by: ")]
    if not causes:
        return text
    kind, _, message = causes[-1].partition(": ")
    return message if message and " " not in kind else causes[-1]


def _java_message(exc: BaseException) -> str:
    """A one-line reason: the root Java cause's message when the error came from the JVM."""
    java = _java_exception(exc)
    if java is not None:
        root = java
        while root.getCause() is not None and root.getCause() != root:
            root = root.getCause()
        message = root.getMessage() or root.toString()
        text = str(message)
    else:
        text = _root_cause(str(exc))
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if not lines:
        return type(exc).__name__
    # A Python error on an executor ends its traceback with the exception line: that one says most.
    line = lines[-1] if lines[0].startswith("Traceback") else lines[0]
    return line if len(line) <= 400 else line[:400] + "..."


__all__ = ["PostgresTarget", "quote", "redact_url"]
