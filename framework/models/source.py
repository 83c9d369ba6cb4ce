"""The source, its streams and their retrievers, the spec and the connection check."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import Field

from framework.models.base import BASE, Component, spec
from framework.models.custom import (
    CustomDecoder,
    CustomIncrementalSync,
    CustomRequester,
    CustomRetriever,
    CustomStateMigration,
)
from framework.models.incremental import DatetimeBasedCursor
from framework.models.migrations import ConfigNormalizationRules, LegacyToPerPartitionStateMigration
from framework.models.pagination import Paginator
from framework.models.partitions import PartitionRouter
from framework.models.records import RecordSelector, SchemaLoader, Transformation
from framework.models.requests import HttpRequester, JsonDecoder

PrimaryKey = str | tuple[str, ...] | tuple[tuple[str, ...], ...]


class SimpleRetriever(Component):
    """Reads a stream: partitions, requests, pages and records."""

    type: Literal["SimpleRetriever"] = spec("Component type.", "SimpleRetriever", "SimpleRetriever")
    requester: Annotated[HttpRequester | CustomRequester, Field(discriminator="type")] = spec(
        "How requests are made.", {"type": "HttpRequester", "url_base": "https://api.example.com", "path": "/items"}
    )
    record_selector: RecordSelector = spec(
        "Where the records are in a response.",
        {"type": "RecordSelector", "extractor": {"type": "DpathExtractor", "field_path": ["items"]}},
    )
    paginator: Paginator | None = spec(
        "How pages are followed; one request per partition when left out.",
        {"type": "NoPagination"},
        None,
        default_type="NoPagination",
    )
    partition_router: PartitionRouter | None = spec(
        "How the stream is split into partitions; a list forms the cartesian product of its routers.",
        {"type": "ListPartitionRouter", "values": ["eu", "us"], "cursor_field": "region"},
        None,
    )
    decoder: Annotated[JsonDecoder | CustomDecoder, Field(discriminator="type")] | None = spec(
        "How responses are read.", {"type": "JsonDecoder"}, None
    )
    ignore_stream_slicer_parameters_on_paginated_requests: bool = spec(
        "Leave the partition's and window's request options off the requests for the second and later pages.",
        True,
        False,
    )


class DeclarativeStream(Component):
    """A stream: a name, a schema, how to read it and how to read it incrementally."""

    type: Literal["DeclarativeStream"] = spec("Component type.", "DeclarativeStream", "DeclarativeStream")
    name: str = spec("Name of the stream, unique in the source.", "orders")
    retriever: Annotated[SimpleRetriever | CustomRetriever, Field(discriminator="type")] = spec(
        "How the stream's records are read.",
        {"type": "SimpleRetriever", "requester": {"$ref": "#/definitions/requester"},
         "record_selector": {"$ref": "#/definitions/selector"}},
    )
    primary_key: PrimaryKey | None = spec(
        "Field, fields, or paths of nested fields that identify a record.", "id", None
    )
    schema_loader: SchemaLoader | None = spec(
        "Where the stream's JSON Schema comes from; the file `schemas/<name>.json` when left out.",
        {"type": "InlineSchemaLoader", "schema": {"type": "object", "properties": {"id": {"type": "integer"}}}},
        None,
        default_type="JsonFileSchemaLoader",
    )
    incremental_sync: Annotated[DatetimeBasedCursor | CustomIncrementalSync, Field(discriminator="type")] | None = spec(
        "How the stream is read incrementally; a full refresh every time when left out.",
        {"type": "DatetimeBasedCursor", "cursor_field": "updated_at", "datetime_format": "%Y-%m-%dT%H:%M:%SZ",
         "start_datetime": "{{ config['start_date'] }}"},
        None,
    )
    transformations: tuple[Transformation, ...] = spec(
        "Changes applied to every record, in order.",
        [{"type": "RemoveFields", "field_pointers": [["_links"]]}],
        (),
    )
    state_migrations: tuple[Annotated[LegacyToPerPartitionStateMigration | CustomStateMigration,
                                      Field(discriminator="type")], ...] = spec(
        "Turn a saved state of an older shape into the current one before the read, in order.",
        [{"type": "CustomStateMigration", "class_name": "components.LegacyStateMigration"}],
        (),
    )


class Spec(Component):
    """What a config must hold: the connector's connection specification."""

    takes_parameters = False

    type: Literal["Spec"] = spec("Component type.", "Spec", "Spec")
    connection_specification: Mapping[str, Any] = spec(
        "JSON Schema of the config; properties with `airbyte_secret: true` are masked in every message.",
        {"type": "object", "required": ["api_key"],
         "properties": {"api_key": {"type": "string", "airbyte_secret": True}}},
    )
    documentation_url: str | None = spec(
        "Where the connector is documented.", "https://docs.example.com/connector", None
    )
    advanced_auth: Mapping[str, Any] | None = spec(
        "OAuth flow settings passed through to the SPEC message.", {"auth_flow_type": "oauth2.0"}, None
    )
    config_normalization_rules: ConfigNormalizationRules | None = spec(
        "How a config is migrated, transformed and validated before a run.",
        {"type": "ConfigNormalizationRules", "transformations": [
            {"type": "ConfigRemapField", "field_path": ["region"], "map": {"eu-west": "eu"}}]},
        None,
    )


class CheckStream(Component):
    """How a connection is checked: reading the first record of some streams."""

    takes_parameters = False

    type: Literal["CheckStream"] = spec("Component type.", "CheckStream", "CheckStream")
    stream_names: tuple[str, ...] = spec("Streams to read one record from.", ["accounts"])


class ConcurrencyLevel(Component):
    """How many partitions are read at once."""

    type: Literal["ConcurrencyLevel"] = spec("Component type.", "ConcurrencyLevel", "ConcurrencyLevel")
    default_concurrency: int | str = spec(
        "Partitions read at once; a template must render an integer.", 4, template=BASE, result="integer"
    )
    max_concurrency: int | None = spec("Upper bound for a value taken from the config.", 20, None)


class StateDelegatingStream(Component):
    """One stream read by one definition on its first sync and by another once it has a state.

    The full-refresh definition reads when the stream has no saved state (and
    when ``api_retention_period`` says the saved cursor is too old for the
    incremental API); the incremental one reads from the saved state. Both must
    have the stream's name; the catalog shows the full-refresh definition.
    """

    type: Literal["StateDelegatingStream"] = spec("Component type.", "StateDelegatingStream",
                                                  "StateDelegatingStream")
    name: str = spec("Name of the stream, the same as both definitions'.", "events")
    full_refresh_stream: DeclarativeStream = spec(
        "The definition read when there is no saved state.", {"$ref": "#/definitions/events_full_refresh"}
    )
    incremental_stream: DeclarativeStream = spec(
        "The definition read once the stream has a saved state.", {"$ref": "#/definitions/events_incremental"}
    )
    api_retention_period: str | None = spec(
        "How far back the incremental API keeps data (ISO 8601 duration, may be a template); a saved cursor "
        "older than that is read again in full by the full-refresh definition.",
        "P30D",
        None,
        template=BASE,
        format="duration",
    )


class ConditionalStreams(Component):
    """Streams that exist only when a condition over the config holds."""

    type: Literal["ConditionalStreams"] = spec("Component type.", "ConditionalStreams", "ConditionalStreams")
    condition: str = spec(
        "Template that renders true when the streams exist (rendered with `config`).",
        "{{ config['include_sandbox_streams'] }}",
        template=BASE,
        result="boolean",
    )
    streams: tuple[DeclarativeStream, ...] = spec(
        "The streams.", [{"$ref": "#/definitions/sandbox_stream"}], default_type="DeclarativeStream"
    )


AnyStream = Annotated[DeclarativeStream | StateDelegatingStream | ConditionalStreams, Field(discriminator="type")]


class DeclarativeSource(Component):
    """A connector: its streams, how to check a connection, and what its config holds."""

    type: Literal["DeclarativeSource"] = spec("Component type.", "DeclarativeSource", "DeclarativeSource")
    version: str = spec("Version of the manifest language the file was written for.", "6.7.0")
    streams: tuple[AnyStream, ...] = spec(
        "The streams: a DeclarativeStream, a StateDelegatingStream, or ConditionalStreams holding streams "
        "that exist only when their condition holds.",
        [{"$ref": "#/definitions/orders_stream"}], default_type="DeclarativeStream"
    )
    check: CheckStream = spec("How a connection is checked.", {"type": "CheckStream", "stream_names": ["orders"]})
    spec_: Spec | None = spec(
        "The connection specification.",
        {"type": "Spec", "connection_specification": {"type": "object", "properties": {}}},
        None,
        alias="spec",
    )
    definitions: Mapping[str, Any] = spec(
        "Reusable pieces referenced with `$ref: '#/definitions/<name>'`; never read by themselves.",
        {"requester": {"type": "HttpRequester", "url_base": "https://api.example.com"}},
        default_factory=dict,
    )
    schemas: Mapping[str, Any] = spec(
        "Reusable JSON Schemas referenced with `$ref: '#/schemas/<name>'`.",
        {"orders": {"type": "object", "properties": {"id": {"type": "integer"}}}},
        default_factory=dict,
    )
    concurrency_level: ConcurrencyLevel | None = spec(
        "How many partitions are read at once.", {"type": "ConcurrencyLevel", "default_concurrency": 4}, None
    )
    metadata: Mapping[str, Any] = spec(
        "Free-form information about the manifest, kept for tools.", {"autoImportSchema": {"orders": True}},
        default_factory=dict,
    )
    description: str | None = spec("What the connector reads.", "Orders and accounts of the Example API.", None)
