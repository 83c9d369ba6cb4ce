"""Typed, frozen models of the manifest language.

``REGISTRY`` maps every supported component ``type`` to its model, as the one
catalog of the language says (:mod:`framework.catalog`); the loader
(:mod:`framework.manifest`) builds models from YAML through it, and
``UNSUPPORTED`` (from the catalog too) says why the rest of Airbyte's types are
refused. Settings of the
sink and of normalization live in :mod:`framework.models.destination` and
:mod:`framework.models.normalization`.
"""

from __future__ import annotations

import sys

from framework.catalog import CATALOG, UNSUPPORTED, model_path
from framework.models.async_jobs import AsyncJobStatusMap, AsyncRetriever
from framework.models.auth import (
    JWT_ALGORITHMS,
    ApiKeyAuthenticator,
    AuthFlow,
    BasicHttpAuthenticator,
    BearerAuthenticator,
    JwtAuthenticator,
    JwtHeaders,
    JwtPayload,
    LegacySessionTokenAuthenticator,
    NoAuth,
    OAuthAuthenticator,
    OAuthConfigSpecification,
    RateLimitedMultipleTokenAuthenticator,
    RefreshTokenUpdater,
    SelectiveAuthenticator,
    SessionTokenAuthenticator,
    SessionTokenRequestApiKeyAuthenticator,
    SessionTokenRequestBearerAuthenticator,
)
from framework.models.back_references import bind_back_references
from framework.models.base import Component, Model, TemplateSpec, default_type_of, format_of, template_of
from framework.models.budgets import (
    FixedWindowCallRatePolicy,
    HTTPAPIBudget,
    HttpRequestRegexMatcher,
    MovingWindowCallRatePolicy,
    QuotaStatusSource,
    Rate,
    TokenQuota,
    UnlimitedCallRatePolicy,
)
from framework.models.custom import (
    CUSTOM_KINDS,
    CustomAuthenticator,
    CustomBackoffStrategy,
    CustomComponent,
    CustomConfigTransformation,
    CustomDecoder,
    CustomErrorHandler,
    CustomIncrementalSync,
    CustomPaginationStrategy,
    CustomPartitionRouter,
    CustomRecordExtractor,
    CustomRecordFilter,
    CustomRequester,
    CustomRetriever,
    CustomSchemaLoader,
    CustomSchemaNormalization,
    CustomStateMigration,
    CustomTransformation,
    CustomValidationStrategy,
)
from framework.models.decoders import (
    CsvDecoder,
    GzipDecoder,
    IterableDecoder,
    JsonItemsDecoder,
    JsonlDecoder,
    XmlDecoder,
    ZipfileDecoder,
)
from framework.models.dynamic import (
    CheckDynamicStream,
    ComponentMappingDefinition,
    ConfigComponentsResolver,
    DynamicDeclarativeStream,
    DynamicStreamCheckConfig,
    HttpComponentsResolver,
    ParametrizedComponentsResolver,
    StreamConfig,
    StreamParametersDefinition,
)
from framework.models.error_handling import (
    CompositeErrorHandler,
    ConstantBackoffStrategy,
    DefaultErrorHandler,
    ExponentialBackoffStrategy,
    HttpResponseFilter,
    WaitTimeFromHeader,
    WaitUntilTimeFromHeader,
)
from framework.models.files import FileUploader, ResponseToFileExtractor
from framework.models.incremental import DatetimeBasedCursor, IncrementingCountCursor, MinMaxDatetime
from framework.models.migrations import (
    ConfigAddFields,
    ConfigMigration,
    ConfigNormalizationRules,
    ConfigRemapField,
    ConfigRemoveFields,
    DpathValidator,
    LegacyToPerPartitionStateMigration,
    PredicateValidator,
    ValidateAdheresToSchema,
)
from framework.models.pagination import (
    CursorPagination,
    DefaultPaginator,
    NoPagination,
    OffsetIncrement,
    PageIncrement,
    PageSizeReduction,
    PaginationReset,
    PaginationResetLimits,
    RequestWindowSplitting,
)
from framework.models.partitions import (
    GroupingPartitionRouter,
    ListPartitionRouter,
    ParentStreamConfig,
    SubstreamPartitionRouter,
    UnionPartitionRouter,
)
from framework.models.query_properties import (
    GroupByKeyMergeStrategy,
    JsonSchemaPropertySelector,
    PropertiesFromEndpoint,
    PropertyChunking,
    QueryProperties,
)
from framework.models.records import (
    AddedFieldDefinition,
    AddFields,
    DpathExtractor,
    InlineSchemaLoader,
    JsonFileSchemaLoader,
    RecordFilter,
    RecordSelector,
    RemoveFields,
)
from framework.models.request_bodies import (
    RequestBodyGraphQL,
    RequestBodyGraphQlQuery,
    RequestBodyJsonObject,
    RequestBodyPlainText,
    RequestBodyUrlEncodedForm,
)
from framework.models.requests import HttpRequester, JsonDecoder, RequestOption, RequestPath
from framework.models.schema_loaders import ComplexFieldType, DynamicSchemaLoader, SchemaTypeIdentifier, TypesMap
from framework.models.source import (
    CheckStream,
    ConcurrencyLevel,
    ConditionalStreams,
    DeclarativeSource,
    DeclarativeStream,
    SimpleRetriever,
    Spec,
    StateDelegatingStream,
)
from framework.models.stream_groups import BlockSimultaneousSyncsAction
from framework.models.transformations import (
    DpathFlattenFields,
    FlattenFields,
    KeysReplace,
    KeysToLower,
    KeysToSnakeCase,
    KeyTransformation,
    ParentFieldPath,
    RecordExpander,
)

bind_back_references()  # the names of models a module holds before it could import them (see back_references)


def _model(kind: str) -> type[Component]:
    module, name = model_path(kind)
    found: type[Component] = getattr(sys.modules[module], name)
    return found


#: Every supported component ``type`` and its model, in the catalog's order (:data:`framework.catalog.CATALOG`).
REGISTRY: dict[str, type[Component]] = {kind: _model(kind) for kind in CATALOG}

__all__ = ["AddFields", "AddedFieldDefinition", "ApiKeyAuthenticator", "AsyncJobStatusMap", "AsyncRetriever",
           "AuthFlow", "BasicHttpAuthenticator", "BearerAuthenticator", "BlockSimultaneousSyncsAction",
           "CUSTOM_KINDS", "CheckDynamicStream", "CheckStream", "ComplexFieldType", "Component",
           "ComponentMappingDefinition", "CompositeErrorHandler", "ConcurrencyLevel", "ConditionalStreams",
           "ConfigAddFields", "ConfigComponentsResolver", "ConfigMigration", "ConfigNormalizationRules",
           "ConfigRemapField", "ConfigRemoveFields", "ConstantBackoffStrategy", "CsvDecoder", "CursorPagination",
           "CustomAuthenticator", "CustomBackoffStrategy", "CustomComponent", "CustomConfigTransformation",
           "CustomDecoder", "CustomErrorHandler", "CustomIncrementalSync", "CustomPaginationStrategy",
           "CustomPartitionRouter", "CustomRecordExtractor", "CustomRecordFilter", "CustomRequester",
           "CustomRetriever", "CustomSchemaLoader", "CustomSchemaNormalization", "CustomStateMigration",
           "CustomTransformation", "CustomValidationStrategy", "DatetimeBasedCursor", "DeclarativeSource",
           "DeclarativeStream", "DefaultErrorHandler", "DefaultPaginator", "DpathExtractor", "DpathFlattenFields",
           "DpathValidator", "DynamicDeclarativeStream", "DynamicSchemaLoader", "DynamicStreamCheckConfig",
           "ExponentialBackoffStrategy", "FileUploader", "FixedWindowCallRatePolicy", "FlattenFields",
           "GroupByKeyMergeStrategy", "GroupingPartitionRouter", "GzipDecoder", "HTTPAPIBudget",
           "HttpComponentsResolver", "HttpRequestRegexMatcher", "HttpRequester", "HttpResponseFilter",
           "IncrementingCountCursor", "InlineSchemaLoader", "IterableDecoder", "JWT_ALGORITHMS", "JsonDecoder",
           "JsonFileSchemaLoader", "JsonItemsDecoder", "JsonSchemaPropertySelector", "JsonlDecoder",
           "JwtAuthenticator", "JwtHeaders", "JwtPayload", "KeyTransformation", "KeysReplace", "KeysToLower",
           "KeysToSnakeCase", "LegacySessionTokenAuthenticator", "LegacyToPerPartitionStateMigration",
           "ListPartitionRouter", "MinMaxDatetime", "Model", "MovingWindowCallRatePolicy", "NoAuth", "NoPagination",
           "OAuthAuthenticator", "OAuthConfigSpecification", "OffsetIncrement", "PageIncrement", "PageSizeReduction",
           "PaginationReset", "PaginationResetLimits", "ParametrizedComponentsResolver", "ParentFieldPath",
           "ParentStreamConfig", "PredicateValidator", "PropertiesFromEndpoint", "PropertyChunking",
           "QueryProperties", "QuotaStatusSource", "REGISTRY", "Rate",
           "RateLimitedMultipleTokenAuthenticator", "RecordExpander", "RecordFilter",
           "RecordSelector", "RefreshTokenUpdater", "RemoveFields", "RequestBodyGraphQL", "RequestBodyGraphQlQuery",
           "RequestBodyJsonObject", "RequestBodyPlainText", "RequestBodyUrlEncodedForm", "RequestOption",
           "RequestPath", "RequestWindowSplitting", "ResponseToFileExtractor", "SchemaTypeIdentifier",
           "SelectiveAuthenticator", "SessionTokenAuthenticator", "SessionTokenRequestApiKeyAuthenticator",
           "SessionTokenRequestBearerAuthenticator", "SimpleRetriever", "Spec", "StateDelegatingStream",
           "StreamConfig", "StreamParametersDefinition", "SubstreamPartitionRouter", "TemplateSpec", "TokenQuota",
           "TypesMap", "UNSUPPORTED", "UnionPartitionRouter", "UnlimitedCallRatePolicy", "ValidateAdheresToSchema",
           "WaitTimeFromHeader", "WaitUntilTimeFromHeader", "XmlDecoder", "ZipfileDecoder", "default_type_of",
           "format_of", "template_of"]
