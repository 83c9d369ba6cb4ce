"""The source, its streams and their retrievers, the spec and the connection check."""

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from framework.models.async_jobs import AsyncRetriever
from framework.models.auth import AuthFlow
from framework.models.base import BASE, Component, spec
from framework.models.budgets import HTTPAPIBudget
from framework.models.custom import (
    CustomDecoder,
    CustomPaginationStrategy,
    CustomRequester,
    CustomRetriever,
    CustomStateMigration,
)
from framework.models.decoders import (
    CsvDecoder,
    GzipDecoder,
    IterableDecoder,
    JsonDecoder,
    JsonItemsDecoder,
    JsonlDecoder,
    XmlDecoder,
    ZipfileDecoder,
)
from framework.models.dynamic import CheckDynamicStream, DynamicDeclarativeStream, DynamicStreamCheckConfig
from framework.models.error_handling import uses_action
from framework.models.files import FileUploader
from framework.models.incremental import DatetimeBasedCursor, IncrementalSync
from framework.models.migrations import ConfigNormalizationRules, LegacyToPerPartitionStateMigration
from framework.models.pagination import (
    CursorPagination,
    DefaultPaginator,
    OffsetIncrement,
    PageSizeReduction,
    PaginationReset,
    Paginator,
    RequestWindowSplitting,
)
from framework.models.partitions import PartitionRouter
from framework.models.records import RecordSelector, Transformation
from framework.models.requests import HttpRequester, RequestPath
from framework.models.schema_loaders import StreamSchemaLoader
from framework.models.stream_groups import StreamGroup

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
    decoder: Annotated[JsonDecoder | JsonItemsDecoder | XmlDecoder | CsvDecoder | JsonlDecoder | GzipDecoder
                       | IterableDecoder | ZipfileDecoder | CustomDecoder, Field(discriminator="type")] | None = spec(
        "The format of the responses (JSON when left out): the extractor reads its documents, the paginator "
        "its first one.", {"type": "JsonlDecoder"}, None
    )
    ignore_stream_slicer_parameters_on_paginated_requests: bool = spec(
        "Leave the partition's and window's request options off the requests for the second and later pages.",
        True,
        False,
    )
    pagination_reset: PaginationReset | None = spec(
        "How pagination restarts when an error filter's action is RESET_PAGINATION or a limit is reached; "
        "without it a RESET_PAGINATION restarts the slice from its first page once.",
        {"type": "PaginationReset", "action": "RESET"},
        None,
    )

    page_size_reduction: PageSizeReduction | None = spec(
        "How the page size shrinks when an error filter's action is REDUCE_PAGE_SIZE (needed then). Needs a "
        "DefaultPaginator with `page_size_option` and a CursorPagination or OffsetIncrement with `page_size`.",
        {"type": "PageSizeReduction", "reduction_factor": 2, "minimum_page_size": 10},
        None,
    )

    request_window_splitting: RequestWindowSplitting | None = spec(
        "How the datetime window is split when an error filter's action is SPLIT_REQUEST_WINDOW (needed then); "
        "needs a DatetimeBasedCursor with `cursor_granularity`.",
        {"type": "RequestWindowSplitting", "min_split_window": "PT1H"},
        None,
    )

    @model_validator(mode="after")
    def _splittable_window(self) -> "SimpleRetriever":
        if self.request_window_splitting is None:
            if uses_action(getattr(self.requester, "error_handler", None), "SPLIT_REQUEST_WINDOW"):
                raise ValueError("an error filter says SPLIT_REQUEST_WINDOW but the retriever has no "
                                 "`request_window_splitting`; add one (`request_window_splitting: "
                                 "{type: RequestWindowSplitting}`)")
        elif getattr(self.requester, "query_properties", None) or \
                getattr(self.requester, "fetch_properties_from_endpoint", None):
            raise ValueError("`request_window_splitting` cannot be used with query properties: the records of the "
                             "earlier property chunks are out already when a chunk asks for a smaller window")
        return self

    @model_validator(mode="after")
    def _limits_without_filter(self) -> "SimpleRetriever":
        if self.pagination_reset is not None and self.pagination_reset.limits is not None \
                and self.record_selector.record_filter is not None:
            raise ValueError("`pagination_reset` with `limits` cannot be used with a `record_filter` "
                             "(records left out would not count), as in Airbyte; remove one of them")
        return self

    @model_validator(mode="after")
    def _reducible_page_size(self) -> "SimpleRetriever":
        reduction = self.page_size_reduction
        if reduction is None:
            if uses_action(getattr(self.requester, "error_handler", None), "REDUCE_PAGE_SIZE"):
                raise ValueError("an error filter says REDUCE_PAGE_SIZE but the retriever has no "
                                 "`page_size_reduction`; add one (`page_size_reduction: {type: PageSizeReduction}`)")
            return self
        if getattr(self.requester, "query_properties", None) or \
                getattr(self.requester, "fetch_properties_from_endpoint", None):
            raise ValueError("`page_size_reduction` cannot be used with query properties: the records of the "
                             "earlier property chunks are out already when a chunk asks for a smaller page")
        paginator = self.paginator
        if not isinstance(paginator, DefaultPaginator) or paginator.page_size_option is None:
            raise ValueError("`page_size_reduction` needs a DefaultPaginator with a `page_size_option`, "
                             "to send the smaller page size")
        if isinstance(paginator.page_token_option, RequestPath):
            raise ValueError("`page_size_reduction` cannot follow next-page URLs (`page_token_option: RequestPath`): "
                             "they carry the old page size; send the token with a RequestOption instead")
        strategy = paginator.pagination_strategy
        if isinstance(strategy, CustomPaginationStrategy):
            # told the reduced size through `page_size_override` (checked when its class is loaded), as Airbyte
            return self
        if not isinstance(strategy, (CursorPagination, OffsetIncrement)):
            raise ValueError(f"`page_size_reduction` works with CursorPagination, OffsetIncrement and a "
                             f"CustomPaginationStrategy whose `next_page_token` takes `page_size_override`, not "
                             f"{strategy.type}: a smaller page would move later pages' boundaries")
        if strategy.page_size is None:
            raise ValueError("`page_size_reduction` needs the pagination strategy's `page_size`: "
                             "there is nothing to reduce without it")
        size = strategy.page_size
        if isinstance(size, int) and size <= reduction.minimum_page_size:
            raise ValueError(f"`page_size_reduction` can never reduce a `page_size` of {size} with a "
                             f"`minimum_page_size` of {reduction.minimum_page_size}; lower `minimum_page_size`")
        return self


class DeclarativeStream(Component):
    """A stream: a name, a schema, how to read it and how to read it incrementally."""

    type: Literal["DeclarativeStream"] = spec("Component type.", "DeclarativeStream", "DeclarativeStream")
    name: str = spec("Name of the stream, unique in the source.", "orders")
    retriever: Annotated[SimpleRetriever | CustomRetriever | AsyncRetriever, Field(discriminator="type")] = spec(
        "How the stream's records are read.",
        {"type": "SimpleRetriever", "requester": {"$ref": "#/definitions/requester"},
         "record_selector": {"$ref": "#/definitions/selector"}},
        default_type="SimpleRetriever",
    )
    primary_key: PrimaryKey | None = spec(
        "Field, fields, or paths of nested fields that identify a record.", "id", None
    )
    schema_loader: StreamSchemaLoader | tuple[StreamSchemaLoader, ...] | None = spec(
        "Where the stream's JSON Schema comes from; the file `schemas/<name>.json` when left out. A list of "
        "loaders gives one schema: the properties of each, merged, an earlier loader's winning where two name "
        "the same property (as Airbyte merges them).",
        {"type": "InlineSchemaLoader", "schema": {"type": "object", "properties": {"id": {"type": "integer"}}}},
        None,
        default_type="JsonFileSchemaLoader",
    )
    incremental_sync: IncrementalSync | None = spec(
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
    file_uploader: FileUploader | None = spec(
        "Download a file for each record: it lands beside the stream's files and the record gets "
        "`file_reference` (where it landed, its path, its size).",
        {"type": "FileUploader", "requester": {"$ref": "#/definitions/download_requester"},
         "download_target_extractor": {"type": "DpathExtractor", "field_path": ["content_url"]}},
        None,
    )

    @model_validator(mode="after")
    def _window_to_split(self) -> "DeclarativeStream":
        if getattr(self.retriever, "request_window_splitting", None) is None:
            return self
        cursor = self.incremental_sync
        if not isinstance(cursor, DatetimeBasedCursor) or not cursor.cursor_granularity:
            raise ValueError("`request_window_splitting` needs a DatetimeBasedCursor with `cursor_granularity` in "
                             "`incremental_sync`: the smallest window, and where two halves meet")
        if cursor.is_client_side_incremental:
            raise ValueError("`request_window_splitting` cannot be used with `is_client_side_incremental`: the "
                             "window is not sent to the API, so splitting it changes nothing")
        return self


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
    advanced_auth: AuthFlow | None = spec(
        "How a UI runs an OAuth flow to fill the config; carried by the SPEC message.",
        {"auth_flow_type": "oauth2.0", "predicate_key": ["credentials", "auth_type"], "predicate_value": "oauth"},
        None,
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
    dynamic_streams_check_configs: tuple[DynamicStreamCheckConfig, ...] = spec("Streams made by `dynamic_streams` to read one record from too.", [{"type": "DynamicStreamCheckConfig", "dynamic_stream_name": "reports", "stream_count": 1}], (), default_type="DynamicStreamCheckConfig")  # noqa: E501


class ConcurrencyLevel(Component):
    """The most requests the sync keeps in flight at once, across all its readers."""

    type: Literal["ConcurrencyLevel"] = spec("Component type.", "ConcurrencyLevel", "ConcurrencyLevel")
    default_concurrency: int | str = spec(
        "Requests in flight at once (windows and partitions read side by side); a template must render an integer.",
        4, template=BASE, result="integer"
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
        "that exist only when their condition holds. May be left out when `dynamic_streams` makes them all.",
        [{"$ref": "#/definitions/orders_stream"}], (), default_type="DeclarativeStream"
    )
    check: Annotated[CheckStream | CheckDynamicStream, Field(discriminator="type")] = spec("How a connection is checked.", {"type": "CheckStream", "stream_names": ["orders"]}, default_type="CheckStream")  # noqa: E501
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
        "The most requests the sync keeps in flight at once.", {"type": "ConcurrencyLevel", "default_concurrency": 4},
        None
    )
    max_concurrent_async_job_count: int | str | None = spec(  # asynchronous jobs (AsyncRetriever)
        "How many asynchronous jobs (AsyncRetriever) may run at once in the whole sync, every task of it "
        "counted (1 when left out, as in Airbyte).", 3, None, template=BASE, result="integer")
    metadata: Mapping[str, Any] = spec(
        "Free-form information about the manifest, kept for tools.", {"autoImportSchema": {"orders": True}},
        default_factory=dict,
    )
    description: str | None = spec("What the connector reads.", "Orders and accounts of the Example API.", None)
    stream_groups: Mapping[str, StreamGroup] = spec(
        "Groups of streams (by group name) that share a resource of the API and are never read at the same time.",
        {"reports": {"streams": [{"$ref": "#/definitions/orders_stream"}, {"$ref": "#/definitions/refunds_stream"}],
                     "action": {"type": "BlockSimultaneousSyncsAction"}}},
        default_factory=dict,
    )
    dynamic_streams: tuple[DynamicDeclarativeStream, ...] = spec(
        "Streams made from an endpoint's answer or from config values.", [{"$ref": "#/definitions/report_streams"}],
        (), default_type="DynamicDeclarativeStream")
    api_budget: HTTPAPIBudget | None = spec(
        "How many requests the whole sync may send to the API in a time window (see docs/api-budgets.md).",
        {"type": "HTTPAPIBudget", "policies": [{"type": "MovingWindowCallRatePolicy",
                                                "rates": [{"limit": 900, "interval": "PT1M"}], "matchers": []}]},
        None)

