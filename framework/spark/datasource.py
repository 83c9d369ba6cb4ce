"""``spark.read.format("manifest")``: one stream of a connector as a DataFrame, read on the executors.

For exploring an API from a notebook or joining it with other data without
landing files first::

    from framework.spark.datasource import register
    register(spark)
    orders = (spark.read.format("manifest")
              .option("manifest", "examples/shop/manifest.yaml")
              .option("config", "examples/shop/config.json")
              .option("stream", "orders")
              .load())

Options: ``manifest`` (path, read on the driver), ``config`` (path to the
config JSON) or ``config_json`` (the config itself), ``stream`` (the stream
to read), and ``state`` (optional: the stream's state as JSON, in Airbyte's
shape, to read only what is newer), ``partitions`` (how many input
partitions, default 8), ``readers`` (how many units of a partition are read
at once, by threads of its task; default: the connector's concurrency, its
``concurrency_level``, else 1), and ``allow_custom_code`` (``true`` runs the Python
code of custom components shipped with the manifest; else the environment
decides, see :mod:`framework.components.custom.loader`). The driver sends
the code it loaded to the executors with the manifest text. The driver plans the stream's units (partitions
times windows, parents of substreams read first) and splits them into that
many contiguous groups, one input partition each; executors rebuild the
connector from the manifest text, read their units page by page and hand
Spark typed ``pyarrow.RecordBatch`` pages, the same batches the sink writes
(the envelope columns ``_airbyte_raw_id``, ``_airbyte_extracted_at``,
``_airbyte_generation_id``, ``_airbyte_meta``, then the stream's fields).
Planning and reading are the engine's (:mod:`framework.engine.plan`,
:mod:`framework.engine.worker`), as for the pipeline's tasks.

The options above are read where Spark plans the query: the driver of a
classic session, the server of a Spark Connect one, whose machine may not
hold the manifest. :func:`read_stream` reads the manifest, its schemas and
custom code and the config here, in the client, and hands them to the data
source as one option (``connector``: the pickled :class:`ConnectorSource`,
as the task functions themselves travel), so that the same call works on a
classic session and over Spark Connect::

    orders = read_stream(spark, "examples/shop/manifest.yaml", "examples/shop/config.json", "orders")

This reader keeps no state: use ``run-manifest`` for incremental syncs with
state that only moves over written data. A unit that fails fails the query
with the reason (secrets masked).
"""

from __future__ import annotations

import base64
import pickle
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import orjson
import pyarrow as pa
from msgspec import Struct
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema
from pyspark.sql.types import StructType

from framework.engine.connector import Connector, open_connector, read_config
from framework.engine.plan import contiguous_groups, open_sync
from framework.engine.results import UnitResult
from framework.engine.worker import ConnectorSource, PageTyper, all_schemas, read_group, worker_connector
from framework.errors import ConfigError
from framework.typed import RecordConverter, parse_schema
from framework.values import replace

FORMAT_NAME = "manifest"
#: Input partitions when the ``partitions`` option is not given: units are read in this many contiguous groups.
DEFAULT_PARTITIONS = 8
#: The option :func:`read_stream` fills with the connector read in the client (base64 of a pickled ConnectorSource).
SOURCE_OPTION = "connector"


def register(spark: SparkSession) -> None:
    """Make ``spark.read.format("manifest")`` available in ``spark``."""
    spark.dataSource.register(ManifestDataSource)


def read_stream(spark: SparkSession, manifest: str, config: str | Mapping[str, Any], stream: str, *,
                state: Mapping[str, Any] | None = None, partitions: int | None = None,
                readers: int | None = None, allow_custom_code: bool | None = None) -> DataFrame:
    """``stream`` of the connector at ``manifest`` as a DataFrame, everything read in this process.

    ``config`` is the config or the path of its JSON file. The manifest, its schema files, the custom
    components' code it loads and the config are read here and travel with the query (the ``connector``
    option), so the session's driver, or a Spark Connect server, needs none of these files. The stream is
    looked up here: an unknown one fails at once.
    """
    given = read_config(config) if isinstance(config, str) else dict(config)
    connector = open_connector(manifest, given, allow_custom_code=allow_custom_code)
    connector.stream(stream)
    return stream_frames(spark, connector, manifest, [stream], {stream: state} if state is not None else None,
                         partitions=partitions, readers=readers)[stream]


def stream_frames(spark: SparkSession, connector: Connector, manifest: str, streams: Sequence[str],
                  states: Mapping[str, Mapping[str, Any]] | None = None, *, partitions: int | None = None,
                  readers: int | None = None) -> dict[str, DataFrame]:
    """Each of ``streams`` of the open ``connector`` (of the manifest at ``manifest``) as a DataFrame, each read
    from its state in ``states`` when it has one (:func:`framework.read`)."""
    with open(manifest, encoding="utf-8") as handle:
        text = handle.read()
    encoded = _encode(ConnectorSource.of_connector(connector, manifest, text))
    register(spark)
    frames: dict[str, DataFrame] = {}
    for stream in streams:
        reader = spark.read.format(FORMAT_NAME).option(SOURCE_OPTION, encoded).option("stream", stream)
        state = (states or {}).get(stream)
        if state is not None:
            reader = reader.option("state", orjson.dumps(state).decode())
        if partitions is not None:
            reader = reader.option("partitions", str(partitions))
        if readers is not None:
            reader = reader.option("readers", str(readers))
        frames[stream] = reader.load()
    return frames


def _encode(source: ConnectorSource) -> str:
    return base64.b64encode(pickle.dumps(source, protocol=pickle.HIGHEST_PROTOCOL)).decode("ascii")


def _decode(text: str) -> ConnectorSource:
    try:
        source = pickle.loads(base64.b64decode(text.encode("ascii"), validate=True))
    except Exception:  # noqa: BLE001 - any damage: the option was not made by read_stream
        source = None
    if not isinstance(source, ConnectorSource):
        raise ConfigError(f"the `{SOURCE_OPTION}` option is not one read_stream made: leave it to "
                          "framework.spark.datasource.read_stream, or give the `manifest` and `config` options")
    return source


class _Source(Struct, frozen=True):
    """What executors need to read a stream: everything in memory, nothing from the driver's disk."""

    connector: ConnectorSource
    stream: str
    state: Mapping[str, Any] | None
    partitions: int = DEFAULT_PARTITIONS
    readers: int | None = None  # units of a partition read at once (None: the connector's concurrency)


class _UnitPartition(InputPartition):
    def __init__(self, payload: bytes):
        super().__init__(payload)


class ManifestDataSource(DataSource):
    """The ``manifest`` data source (see the module docs for its options)."""

    @classmethod
    def name(cls) -> str:
        return FORMAT_NAME

    def _source(self) -> _Source:
        options = {k.lower(): v for k, v in self.options.items()}
        needed = ("stream",) if options.get(SOURCE_OPTION) else ("manifest", "stream")
        missing = [name for name in needed if not options.get(name)]
        if missing:
            raise ConfigError(f"spark.read.format('manifest') needs the option(s) {', '.join(missing)}: "
                              ".option('manifest', 'path/to/manifest.yaml').option('stream', 'name')")
        state = orjson.loads(options["state"]) if options.get("state") else None
        partitions = _partitions(options.get("partitions"))
        readers = _readers(options.get("readers"))
        if options.get(SOURCE_OPTION):
            return _Source(_decode(options[SOURCE_OPTION]), options["stream"], state, partitions, readers)
        if options.get("config_json"):
            config = orjson.loads(options["config_json"])
        elif options.get("config"):
            config = read_config(options["config"])
        else:
            raise ConfigError("spark.read.format('manifest') needs a config: .option('config', 'config.json') "
                              "or .option('config_json', '{...}')")
        path = options["manifest"]
        try:
            with open(path, encoding="utf-8") as handle:
                text = handle.read()
        except FileNotFoundError:
            raise ConfigError(f"{path}: no such manifest (the `manifest` option; over Spark Connect, paths are "
                              "read on the server: use framework.spark.datasource.read_stream)") from None
        allow = (options.get("allow_custom_code") or "").strip().lower() in ("1", "true", "yes", "on")
        return _Source(ConnectorSource.of(path, text, config, allow_custom_code=True if allow else None),
                       options["stream"], state, partitions, readers)

    def schema(self) -> StructType:
        source = self._source()
        stream = source.connector.open().stream(source.stream)
        converter = RecordConverter(parse_schema(dict(stream.json_schema), stream=stream.name), stream=stream.name)
        return from_arrow_schema(converter.schema)

    def reader(self, schema: StructType) -> DataSourceReader:
        source = self._source()
        connector = source.connector.open()
        connector.stream(source.stream)  # an unknown stream fails here, on the driver
        source = replace(source, connector=replace(
            source.connector, schemas=all_schemas(connector), shipped=connector.shipped_files,
            allow_custom_code=connector.custom_code_allowed, templates=connector.templates,
        ).with_query_properties(connector, source.stream), readers=source.readers or connector.concurrency())
        return _ManifestReader(source, connector, schema)


def _partitions(given: str | None) -> int:
    try:
        partitions = int(given or DEFAULT_PARTITIONS)
    except ValueError:
        partitions = 0
    if partitions < 1:
        raise ConfigError(f"the `partitions` option is {given!r}; give a whole number, 1 "
                          "or more (units are read in that many groups)")
    return partitions


def _readers(given: str | None) -> int | None:
    if not given:
        return None
    try:
        readers = int(given)
    except ValueError:
        readers = 0
    if readers < 1:
        raise ConfigError(f"the `readers` option is {given!r}; give a whole number, 1 or more (units of an "
                          "input partition read at once)")
    return readers


class _ManifestReader(DataSourceReader):
    def __init__(self, source: _Source, connector: Connector, schema: StructType):
        self.source = source
        self._connector: Connector | None = connector  # driver only; not pickled to executors
        # Spark wants its own Arrow flavour back (microsecond timestamps, list items named `element`).
        self.arrow_schema = to_arrow_schema(schema, timezone="UTC")

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_connector": None}

    def partitions(self) -> list[InputPartition]:
        connector = self._connector
        assert connector is not None, "partitions() runs on the driver, where the reader has its connector"
        source = self.source
        sync = open_sync(connector, connector.stream(source.stream), source.state,
                         incremental=source.state is not None)
        groups = contiguous_groups(sync.plan(), source.partitions)
        start = getattr(sync, "start_state", None)  # what the plan started from (airbyte-cdk's, a delegating stream's)
        return [_UnitPartition(pickle.dumps((group, start), protocol=pickle.HIGHEST_PROTOCOL)) for group in groups]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        group, start_state = pickle.loads(partition.value)
        if not group:  # a stream with nothing to read
            return
        source = self.source
        connector = worker_connector(source.connector)
        stream = connector.stream(source.stream)
        converter = RecordConverter(parse_schema(source.connector.schemas[source.stream], stream=stream.name),
                                    stream=stream.name)
        target = self.arrow_schema
        for item in read_group(connector, stream, group, PageTyper(converter), start_state=start_state,
                               readers=source.readers or 1):
            if isinstance(item, UnitResult):
                if item.error:  # already masked
                    raise RuntimeError(f"stream `{stream.name}`: {item.error}")
            else:
                yield from pa.Table.from_batches([item]).cast(target).to_batches()


__all__ = ["FORMAT_NAME", "SOURCE_OPTION", "ManifestDataSource", "read_stream", "register"]
