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
shape, to read only what is newer), and ``partitions`` (how many input
partitions, default 8). The driver plans the stream's units (partitions
times windows, parents of substreams read first) and splits them into that
many contiguous groups, one input partition each; executors rebuild the connector from the
manifest text, read their units page by page and hand Spark typed
``pyarrow.RecordBatch`` pages, the same batches the sink writes (the envelope
columns ``_airbyte_raw_id``, ``_airbyte_extracted_at``,
``_airbyte_generation_id``, ``_airbyte_meta``, then the stream's fields).

This reader keeps no state: use ``run-manifest`` for incremental syncs with
state that only moves over written data. A unit that fails fails the query
with the reason (secrets masked).
"""

from __future__ import annotations

import pickle
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import orjson
import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from framework.errors import ConfigError

FORMAT_NAME = "manifest"
#: Input partitions when the ``partitions`` option is not given: units are read in this many contiguous groups.
DEFAULT_PARTITIONS = 8


def register(spark: Any) -> None:
    """Make ``spark.read.format("manifest")`` available in ``spark``."""
    spark.dataSource.register(ManifestDataSource)


@dataclass(frozen=True)
class _Source:
    """What executors need to read a stream: everything in memory, nothing from the driver's disk."""

    manifest_text: str
    manifest_file: str
    base_dir: str
    config: Mapping[str, Any]
    stream: str
    schemas: Mapping[str, Mapping[str, Any]]
    state: Mapping[str, Any] | None
    partitions: int = DEFAULT_PARTITIONS


class _UnitPartition(InputPartition):
    def __init__(self, payload: bytes):
        super().__init__(payload)


class ManifestDataSource(DataSource):
    """The ``manifest`` data source (see the module docs for its options)."""

    @classmethod
    def name(cls) -> str:
        return FORMAT_NAME

    def _source(self) -> _Source:
        import os

        from framework.engine.connector import read_config

        options = {k.lower(): v for k, v in self.options.items()}
        missing = [name for name in ("manifest", "stream") if not options.get(name)]
        if missing:
            raise ConfigError(f"spark.read.format('manifest') needs the option(s) {', '.join(missing)}: "
                              ".option('manifest', 'path/to/manifest.yaml').option('stream', 'name')")
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
            raise ConfigError(f"{path}: no such manifest (the `manifest` option)") from None
        state = orjson.loads(options["state"]) if options.get("state") else None
        try:
            partitions = int(options.get("partitions") or DEFAULT_PARTITIONS)
        except ValueError:
            partitions = 0
        if partitions < 1:
            raise ConfigError(f"the `partitions` option is {options.get('partitions')!r}; give a whole number, 1 "
                              "or more (units are read in that many groups)")
        return _Source(text, path, os.path.dirname(os.path.abspath(path)), config, options["stream"], {}, state,
                       partitions)

    def _connector(self, source: _Source) -> Any:
        from framework.engine.connector import open_connector_text

        return open_connector_text(source.manifest_text, source.config, file=source.manifest_file,
                                   base_dir=source.base_dir, schemas=source.schemas or None)

    def schema(self) -> Any:
        from pyspark.sql.pandas.types import from_arrow_schema

        from framework.typed import RecordConverter, parse_schema

        source = self._source()
        stream = self._connector(source).stream(source.stream)
        converter = RecordConverter(parse_schema(dict(stream.json_schema), stream=stream.name), stream=stream.name)
        return from_arrow_schema(converter.schema)

    def reader(self, schema: Any) -> DataSourceReader:
        from framework.spark.pipeline import all_schemas

        source = self._source()
        connector = self._connector(source)
        connector.stream(source.stream)  # an unknown stream fails here, on the driver
        source = _Source(source.manifest_text, source.manifest_file, source.base_dir, dict(source.config),
                         source.stream, all_schemas(connector), source.state, source.partitions)
        return _ManifestReader(source, connector, schema)


class _ManifestReader(DataSourceReader):
    def __init__(self, source: _Source, connector: Any, schema: Any):
        from pyspark.sql.pandas.types import to_arrow_schema

        self.source = source
        self._connector = connector  # driver only; not pickled to executors
        # Spark wants its own Arrow flavour back (microsecond timestamps, list items named `element`).
        self.arrow_schema = to_arrow_schema(schema, timezone="UTC")

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_connector": None}

    def partitions(self) -> list[InputPartition]:
        from framework.engine.sync import StreamSync

        connector = self._connector
        stream = connector.stream(self.source.stream)
        sync = StreamSync(stream, connector.config, self.source.state, incremental=self.source.state is not None,
                          clock=connector.context.clock)
        units = [(u, sync.prior_of(u)) for u in sync.plan()]
        count = max(1, min(len(units), self.source.partitions))
        size, extra = divmod(len(units), count)
        groups, start = [], 0
        for index in range(count):  # contiguous groups of nearly equal size
            end = start + size + (1 if index < extra else 0)
            groups.append(units[start:end])
            start = end
        return [_UnitPartition(pickle.dumps(group, protocol=pickle.HIGHEST_PROTOCOL)) for group in groups]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        from framework.engine.sync import read_unit
        from framework.typed import RecordConverter, parse_schema

        group = pickle.loads(partition.value)
        if not group:  # a stream with nothing to read
            return
        source = self.source
        connector = _worker_connector(source)
        stream = connector.stream(source.stream)
        converter = RecordConverter(parse_schema(source.schemas[source.stream], stream=stream.name),
                                    stream=stream.name)
        target = self.arrow_schema
        try:
            for unit, prior in group:
                for records, _ in read_unit(stream, connector.config, unit, prior):
                    batch = converter.convert(records, extracted_at_ms=int(time.time() * 1000), generation_id=0,
                                              sync_id=0)
                    yield from pa.Table.from_batches([batch]).cast(target).to_batches()
        except Exception as exc:
            raise RuntimeError(connector.mask(f"stream `{stream.name}`: {exc}")) from None


_WORKER: dict[tuple, Any] = {}


def _worker_connector(source: _Source) -> Any:
    """The connector of ``source``, built once per Python worker."""
    from framework.engine.connector import open_connector_text

    key = (source.manifest_text, orjson.dumps(source.config, option=orjson.OPT_SORT_KEYS))
    found = _WORKER.get(key)
    if found is None:
        found = open_connector_text(source.manifest_text, source.config, file=source.manifest_file,
                                    base_dir=source.base_dir, schemas=source.schemas)
        _WORKER.clear()
        _WORKER[key] = found
    return found


__all__ = ["FORMAT_NAME", "ManifestDataSource", "register"]
