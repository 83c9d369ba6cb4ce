"""The one catalog of the manifest language: every component ``type``, its model and what builds it.

Each entry names, as ``"module:name"`` strings, the pydantic model of the type
(under :mod:`framework.models`) and either

* its builder (:func:`built`, under :mod:`framework.components`): the function
  decorated ``@builds("Type")`` beside the runtime component it makes, which
  :meth:`framework.components.context.BuildContext.build` calls; or
* the types whose builders read it as a part of their own model
  (:func:`part`): a piece that only means something with its owner's model or
  ``$parameters`` (an added field's definition, a session token's request
  authentication, a rate of a policy, a stream's legacy state migration, which
  reads the stream's router and cursor), or the source's own pieces, which the
  connector reads (``spec``, ``check``, ``concurrency_level``). Such a type
  has no runtime of its own.

Nothing is imported here: the catalog is plain text, so reading it costs
nothing, and each builder's module is imported the first time a manifest uses
one of its types (:func:`framework.components.context.builder_of`).
:data:`framework.models.REGISTRY` (type -> model, what the manifest loader
uses) is made from it too. tests/test_catalog.py holds it to the code: every
model with a ``type``, every ``@builds`` function, exactly once.

:data:`UNSUPPORTED` lists the rest of Airbyte's language, each with why a
manifest using it is refused.

Adding a type: its model, its runtime and builder, and one line here
(docs/architecture.md, "How to add a component").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple, TypeVar

BuilderT = TypeVar("BuilderT", bound=Callable[..., Any])


class Entry(NamedTuple):
    """One component type: its model, and its builder or the types that build it as a part."""

    model: str  # "module:Class" under framework.models
    builder: str | None  # "module:function" under framework.components; None for a part
    within: tuple[str, ...]  # a part's owners: the types whose builders read it (empty for the source itself)


def built(model: str, builder: str) -> Entry:
    """A type with a builder of its own."""
    return Entry(model, builder, ())


def part(model: str, *within: str) -> Entry:
    """A type read by the builders of ``within`` as part of their model."""
    return Entry(model, None, within)


MODELS_PACKAGE = "framework.models"
COMPONENTS_PACKAGE = "framework.components"

CATALOG: dict[str, Entry] = {
    # async_jobs
    "AsyncJobStatusMap": part("async_jobs:AsyncJobStatusMap", "AsyncRetriever"),
    "AsyncRetriever": built("async_jobs:AsyncRetriever", "async_jobs:build_async_retriever"),
    # auth
    "ApiKey": part("auth:SessionTokenRequestApiKeyAuthenticator", "SessionTokenAuthenticator"),
    "ApiKeyAuthenticator": built("auth:ApiKeyAuthenticator", "http.auth.static:build_api_key"),
    "BasicHttpAuthenticator": built("auth:BasicHttpAuthenticator", "http.auth.static:build_basic"),
    "Bearer": part("auth:SessionTokenRequestBearerAuthenticator", "SessionTokenAuthenticator"),
    "BearerAuthenticator": built("auth:BearerAuthenticator", "http.auth.static:build_bearer"),
    "JwtAuthenticator": built("auth:JwtAuthenticator", "http.auth.jwt:build_jwt"),
    "LegacySessionTokenAuthenticator": built("auth:LegacySessionTokenAuthenticator",
                                             "http.auth.session_token:build_legacy_session_token"),
    "NoAuth": built("auth:NoAuth", "http.auth.base:build_no_auth"),
    "OAuthAuthenticator": built("auth:OAuthAuthenticator", "http.auth.oauth:build_oauth"),
    "RateLimitedMultipleTokenAuthenticator": built("auth:RateLimitedMultipleTokenAuthenticator",
                                                   "http.auth.token_quotas:build_rate_limited_tokens"),
    "SelectiveAuthenticator": built("auth:SelectiveAuthenticator", "http.auth.selective:build_selective"),
    "SessionTokenAuthenticator": built("auth:SessionTokenAuthenticator",
                                       "http.auth.session_token:build_session_token"),
    # budgets
    "FixedWindowCallRatePolicy": built("budgets:FixedWindowCallRatePolicy", "http.budget:build_fixed_window_policy"),
    "HTTPAPIBudget": built("budgets:HTTPAPIBudget", "http.budget:build_api_budget"),
    "HttpRequestRegexMatcher": built("budgets:HttpRequestRegexMatcher", "http.budget:build_request_matcher"),
    "MovingWindowCallRatePolicy": built("budgets:MovingWindowCallRatePolicy", "http.budget:build_moving_window_policy"),
    "QuotaStatusSource": part("budgets:QuotaStatusSource", "RateLimitedMultipleTokenAuthenticator"),
    "Rate": part("budgets:Rate", "MovingWindowCallRatePolicy"),
    "TokenQuota": part("budgets:TokenQuota", "RateLimitedMultipleTokenAuthenticator"),
    "UnlimitedCallRatePolicy": built("budgets:UnlimitedCallRatePolicy", "http.budget:build_unlimited_policy"),
    # custom
    "CustomAuthenticator": built("custom:CustomAuthenticator", "custom.builders:build_custom_auth"),
    "CustomBackoffStrategy": built("custom:CustomBackoffStrategy", "custom.builders:build_custom_backoff"),
    "CustomConfigTransformation": built("custom:CustomConfigTransformation",
                                        "config_rules:build_custom_config_transformation"),
    "CustomDecoder": built("custom:CustomDecoder", "custom.builders:build_custom_decoder"),
    "CustomErrorHandler": built("custom:CustomErrorHandler", "custom.builders:build_custom_error_handler"),
    "CustomIncrementalSync": built("custom:CustomIncrementalSync", "custom.builders:build_custom_drives_the_read"),
    "CustomPaginationStrategy": built("custom:CustomPaginationStrategy", "custom.builders:build_custom_pagination"),
    "CustomPartitionRouter": built("custom:CustomPartitionRouter", "custom.builders:build_custom_router"),
    "CustomRecordExtractor": built("custom:CustomRecordExtractor", "custom.builders:build_custom_extractor"),
    "CustomRecordFilter": built("custom:CustomRecordFilter", "custom.builders:build_custom_filter"),
    "CustomRequester": built("custom:CustomRequester", "custom.builders:build_custom_drives_the_read"),
    "CustomRetriever": built("custom:CustomRetriever", "custom.builders:build_custom_drives_the_read"),
    "CustomSchemaLoader": built("custom:CustomSchemaLoader", "custom.builders:build_custom_schema"),
    "CustomSchemaNormalization": built("custom:CustomSchemaNormalization",
                                       "custom.builders:build_custom_normalization"),
    "CustomStateMigration": built("custom:CustomStateMigration", "custom.builders:build_custom_state_migration"),
    "CustomTransformation": built("custom:CustomTransformation", "custom.builders:build_custom_transformation"),
    "CustomValidationStrategy": built("custom:CustomValidationStrategy", "config_rules:build_custom_validation"),
    # decoders
    "CsvDecoder": built("decoders:CsvDecoder", "records.decoders:build_csv_decoder"),
    "GzipDecoder": built("decoders:GzipDecoder", "records.decoders:build_gzip_decoder"),
    "IterableDecoder": built("decoders:IterableDecoder", "records.decoders:build_iterable_decoder"),
    "JsonDecoder": built("decoders:JsonDecoder", "records.decoders:build_json_decoder"),
    "JsonItemsDecoder": built("decoders:JsonItemsDecoder", "records.decoders:build_json_items_decoder"),
    "JsonlDecoder": built("decoders:JsonlDecoder", "records.decoders:build_jsonl_decoder"),
    "XmlDecoder": built("decoders:XmlDecoder", "records.decoders:build_xml_decoder"),
    "ZipfileDecoder": built("decoders:ZipfileDecoder", "records.decoders:build_zipfile_decoder"),
    # dynamic
    "CheckDynamicStream": part("dynamic:CheckDynamicStream", "DeclarativeSource"),
    "ComponentMappingDefinition": part("dynamic:ComponentMappingDefinition", "ConfigComponentsResolver",
                                       "HttpComponentsResolver", "ParametrizedComponentsResolver"),
    "ConfigComponentsResolver": built("dynamic:ConfigComponentsResolver", "dynamic:build_config_resolver"),
    "DynamicDeclarativeStream": part("dynamic:DynamicDeclarativeStream", "DeclarativeSource"),
    "DynamicStreamCheckConfig": part("dynamic:DynamicStreamCheckConfig", "CheckDynamicStream", "CheckStream"),
    "HttpComponentsResolver": built("dynamic:HttpComponentsResolver", "dynamic:build_http_resolver"),
    "ParametrizedComponentsResolver": built("dynamic:ParametrizedComponentsResolver",
                                            "dynamic:build_parametrized_resolver"),
    "StreamConfig": part("dynamic:StreamConfig", "ConfigComponentsResolver"),
    "StreamParametersDefinition": part("dynamic:StreamParametersDefinition", "ParametrizedComponentsResolver"),
    # error_handling
    "CompositeErrorHandler": built("error_handling:CompositeErrorHandler",
                                   "http.error_handler:build_composite_error_handler"),
    "ConstantBackoffStrategy": built("error_handling:ConstantBackoffStrategy",
                                     "http.error_handler:build_constant_backoff"),
    "DefaultErrorHandler": built("error_handling:DefaultErrorHandler",
                                 "http.error_handler:build_default_error_handler"),
    "ExponentialBackoffStrategy": built("error_handling:ExponentialBackoffStrategy",
                                        "http.error_handler:build_exponential_backoff"),
    "HttpResponseFilter": built("error_handling:HttpResponseFilter", "http.error_handler:build_response_filter"),
    "WaitTimeFromHeader": built("error_handling:WaitTimeFromHeader", "http.error_handler:build_wait_from_header"),
    "WaitUntilTimeFromHeader": built("error_handling:WaitUntilTimeFromHeader",
                                     "http.error_handler:build_wait_until_from_header"),
    # files
    "FileUploader": built("files:FileUploader", "records.file_upload:build_file_uploader"),
    "ResponseToFileExtractor": built("files:ResponseToFileExtractor", "records.file_extraction:build_response_to_file"),
    # incremental
    "DatetimeBasedCursor": built("incremental:DatetimeBasedCursor",
                                 "incremental.datetime_cursor:build_datetime_cursor"),
    "IncrementingCountCursor": built("incremental:IncrementingCountCursor",
                                     "incremental.count_cursor:build_count_cursor"),
    "MinMaxDatetime": built("incremental:MinMaxDatetime", "incremental.min_max:build_min_max"),
    # migrations
    "ConfigAddFields": built("migrations:ConfigAddFields", "config_rules:build_config_add_fields"),
    "ConfigMigration": built("migrations:ConfigMigration", "config_rules:build_config_migration"),
    "ConfigNormalizationRules": part("migrations:ConfigNormalizationRules", "Spec"),
    "ConfigRemapField": built("migrations:ConfigRemapField", "config_rules:build_config_remap_field"),
    "ConfigRemoveFields": built("migrations:ConfigRemoveFields", "config_rules:build_config_remove_fields"),
    "DpathValidator": built("migrations:DpathValidator", "config_rules:build_dpath_validator"),
    "LegacyToPerPartitionStateMigration": part("migrations:LegacyToPerPartitionStateMigration", "DeclarativeStream"),
    "PredicateValidator": built("migrations:PredicateValidator", "config_rules:build_predicate_validator"),
    "ValidateAdheresToSchema": built("migrations:ValidateAdheresToSchema", "config_rules:build_schema_validation"),
    # pagination
    "CursorPagination": built("pagination:CursorPagination", "pagination:build_cursor_strategy"),
    "DefaultPaginator": built("pagination:DefaultPaginator", "pagination:build_default_paginator"),
    "NoPagination": built("pagination:NoPagination", "pagination:build_no_pagination"),
    "OffsetIncrement": built("pagination:OffsetIncrement", "pagination:build_offset_strategy"),
    "PageIncrement": built("pagination:PageIncrement", "pagination:build_page_number_strategy"),
    "PageSizeReduction": part("pagination:PageSizeReduction", "SimpleRetriever"),
    "PaginationReset": part("pagination:PaginationReset", "SimpleRetriever"),
    "PaginationResetLimits": part("pagination:PaginationResetLimits", "PaginationReset"),
    "RequestWindowSplitting": part("pagination:RequestWindowSplitting", "SimpleRetriever"),
    # partitions
    "GroupingPartitionRouter": built("partitions:GroupingPartitionRouter", "partitions:build_grouping_router"),
    "ListPartitionRouter": built("partitions:ListPartitionRouter", "partitions:build_list_router"),
    "ParentStreamConfig": built("partitions:ParentStreamConfig", "partitions:build_parent_config"),
    "SubstreamPartitionRouter": built("partitions:SubstreamPartitionRouter", "partitions:build_substream_router"),
    "UnionPartitionRouter": built("partitions:UnionPartitionRouter", "partitions:build_union_router"),
    # query_properties
    "GroupByKeyMergeStrategy": part("query_properties:GroupByKeyMergeStrategy", "PropertyChunking"),
    "JsonSchemaPropertySelector": built("query_properties:JsonSchemaPropertySelector",
                                        "query_properties:build_property_selector"),
    "PropertiesFromEndpoint": built("query_properties:PropertiesFromEndpoint",
                                    "query_properties:build_properties_from_endpoint"),
    "PropertyChunking": built("query_properties:PropertyChunking", "query_properties:build_property_chunking"),
    "QueryProperties": built("query_properties:QueryProperties", "query_properties:build_query_properties_reader"),
    # records
    "DpathExtractor": built("records:DpathExtractor", "records.selection:build_dpath_extractor"),
    "InlineSchemaLoader": built("records:InlineSchemaLoader", "records.schemas:build_inline_schema"),
    "JsonFileSchemaLoader": built("records:JsonFileSchemaLoader", "records.schemas:build_schema_file"),
    "RecordFilter": built("records:RecordFilter", "records.selection:build_record_filter"),
    "RecordSelector": built("records:RecordSelector", "records.selection:build_record_selector"),
    # request_bodies
    "RequestBodyGraphQL": part("request_bodies:RequestBodyGraphQL", "HttpRequester"),
    "RequestBodyJsonObject": part("request_bodies:RequestBodyJsonObject", "HttpRequester"),
    "RequestBodyPlainText": part("request_bodies:RequestBodyPlainText", "HttpRequester"),
    "RequestBodyUrlEncodedForm": part("request_bodies:RequestBodyUrlEncodedForm", "HttpRequester"),
    # requests
    "HttpRequester": built("requests:HttpRequester", "http.requester:build_requester"),
    "RequestOption": built("requests:RequestOption", "http.request:build_injection"),
    "RequestPath": built("requests:RequestPath", "http.request:build_path_injection"),
    # schema_loaders
    "ComplexFieldType": part("schema_loaders:ComplexFieldType", "TypesMap"),
    "DynamicSchemaLoader": built("schema_loaders:DynamicSchemaLoader", "records.dynamic_schema:build_dynamic_schema"),
    "SchemaTypeIdentifier": part("schema_loaders:SchemaTypeIdentifier", "DynamicSchemaLoader"),
    "TypesMap": part("schema_loaders:TypesMap", "SchemaTypeIdentifier"),
    # source
    "CheckStream": part("source:CheckStream", "DeclarativeSource"),
    "ConcurrencyLevel": part("source:ConcurrencyLevel", "DeclarativeSource"),
    "ConditionalStreams": part("source:ConditionalStreams", "DeclarativeSource"),
    "DeclarativeSource": part("source:DeclarativeSource"),
    "DeclarativeStream": built("source:DeclarativeStream", "stream:build_stream"),
    "SimpleRetriever": built("source:SimpleRetriever", "retriever:build_retriever"),
    "Spec": part("source:Spec", "DeclarativeSource"),
    "StateDelegatingStream": built("source:StateDelegatingStream", "delegating:build_delegation"),
    # stream_groups
    "BlockSimultaneousSyncsAction": built("stream_groups:BlockSimultaneousSyncsAction",
                                          "stream_groups:build_block_simultaneous_syncs"),
    # transformations
    "AddFields": built("transformations:AddFields", "records.transformations:build_add_fields"),
    "AddedFieldDefinition": part("transformations:AddedFieldDefinition", "AddFields", "ConfigAddFields"),
    "DpathFlattenFields": built("transformations:DpathFlattenFields", "records.reshaping:build_dpath_flatten_fields"),
    "FlattenFields": built("transformations:FlattenFields", "records.reshaping:build_flatten_fields"),
    "KeyTransformation": part("transformations:KeyTransformation", "DpathFlattenFields"),
    "KeysReplace": built("transformations:KeysReplace", "records.reshaping:build_keys_replace"),
    "KeysToLower": built("transformations:KeysToLower", "records.reshaping:build_keys_to_lower"),
    "KeysToSnakeCase": built("transformations:KeysToSnakeCase", "records.reshaping:build_keys_to_snake_case"),
    "ParentFieldPath": part("transformations:ParentFieldPath", "RecordExpander"),
    "RecordExpander": built("transformations:RecordExpander", "records.expansion:build_record_expander"),
    "RemoveFields": built("transformations:RemoveFields", "records.transformations:build_remove_fields"),
}

_OLD_NAME = "declined: an old name Airbyte's language no longer has; {}"

#: Every other component type of Airbyte's language, with why it is not supported (a manifest using one gets
#: that as its error): ``not scheduled yet`` or ``declined`` with the reason. tests/models/test_airbyte_types.py
#: compares this and :data:`CATALOG` with Airbyte's schema file.
UNSUPPORTED: dict[str, str] = {
    "CartesianProductStreamSlicer": _OLD_NAME.format("give `partition_router` a list of routers"),
    "DatetimeStreamSlicer": _OLD_NAME.format("windows are the stream's `incremental_sync` (DatetimeBasedCursor)"),
    "ListStreamSlicer": _OLD_NAME.format("use a ListPartitionRouter"),
    "SubstreamSlicer": _OLD_NAME.format("use a SubstreamPartitionRouter"),
    "SingleSlice": _OLD_NAME.format("leave `partition_router` out"),
}


def builds(*type_names: str) -> Callable[[BuilderT], BuilderT]:
    """Mark the decorated function as the builder of these component types.

    The mark changes nothing at run time (the catalog's line is what finds the builder); it is
    what tests/test_catalog.py holds this catalog to: each marked function is the catalog's
    builder of exactly the types it names, and each catalog builder is marked.
    """

    def mark(func: BuilderT) -> BuilderT:
        func.__builds__ = type_names  # type: ignore[attr-defined]
        return func

    return mark


def model_path(kind: str) -> tuple[str, str]:
    """The module and class name of the model of ``kind`` (KeyError for a type not in the catalog)."""
    module, name = CATALOG[kind].model.split(":")
    return f"{MODELS_PACKAGE}.{module}", name


def builder_path(kind: str) -> tuple[str, str] | None:
    """The module and function name of the builder of ``kind``; None for a part or a type not in the catalog."""
    entry = CATALOG.get(kind)
    if entry is None or entry.builder is None:
        return None
    module, name = entry.builder.split(":")
    return f"{COMPONENTS_PACKAGE}.{module}", name


__all__ = ["CATALOG", "UNSUPPORTED", "Entry", "builder_path", "builds", "built", "model_path", "part"]
