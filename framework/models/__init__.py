"""Typed, frozen models of the manifest language.

``REGISTRY`` maps every supported component ``type`` to its model; the loader
(:mod:`framework.manifest`) builds models from YAML through it. Settings of the
sink and of normalization live in :mod:`framework.models.destination` and
:mod:`framework.models.normalization`.
"""

from __future__ import annotations

from framework.models.auth import (
    ApiKeyAuthenticator,
    BasicHttpAuthenticator,
    BearerAuthenticator,
    NoAuth,
    OAuthAuthenticator,
    SelectiveAuthenticator,
    SessionTokenAuthenticator,
    SessionTokenRequestApiKeyAuthenticator,
    SessionTokenRequestBearerAuthenticator,
)
from framework.models.base import Component, Model, TemplateSpec, default_type_of, format_of, template_of
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
from framework.models.error_handling import (
    CompositeErrorHandler,
    ConstantBackoffStrategy,
    DefaultErrorHandler,
    ExponentialBackoffStrategy,
    HttpResponseFilter,
    WaitTimeFromHeader,
    WaitUntilTimeFromHeader,
)
from framework.models.incremental import DatetimeBasedCursor, MinMaxDatetime
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
from framework.models.pagination import CursorPagination, DefaultPaginator, NoPagination, OffsetIncrement, PageIncrement
from framework.models.partitions import ListPartitionRouter, ParentStreamConfig, SubstreamPartitionRouter
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
from framework.models.requests import HttpRequester, JsonDecoder, RequestOption, RequestPath
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

COMPONENTS: tuple[type[Component], ...] = (
    DeclarativeSource, DeclarativeStream, SimpleRetriever, HttpRequester, RequestOption, RequestPath, JsonDecoder,
    NoAuth, ApiKeyAuthenticator, BearerAuthenticator, BasicHttpAuthenticator, OAuthAuthenticator,
    SessionTokenAuthenticator, SessionTokenRequestApiKeyAuthenticator, SessionTokenRequestBearerAuthenticator,
    SelectiveAuthenticator,
    DefaultPaginator, NoPagination, CursorPagination, PageIncrement, OffsetIncrement,
    RecordSelector, DpathExtractor, RecordFilter, AddFields, AddedFieldDefinition, RemoveFields,
    InlineSchemaLoader, JsonFileSchemaLoader,
    DefaultErrorHandler, CompositeErrorHandler, HttpResponseFilter,
    ConstantBackoffStrategy, ExponentialBackoffStrategy, WaitTimeFromHeader, WaitUntilTimeFromHeader,
    DatetimeBasedCursor, MinMaxDatetime,
    ListPartitionRouter, SubstreamPartitionRouter, ParentStreamConfig,
    Spec, CheckStream, ConcurrencyLevel,
    CustomAuthenticator, CustomBackoffStrategy, CustomErrorHandler, CustomIncrementalSync, CustomPaginationStrategy,
    CustomPartitionRouter, CustomRecordExtractor, CustomRecordFilter, CustomRequester, CustomRetriever,
    CustomSchemaLoader, CustomSchemaNormalization, CustomStateMigration, CustomTransformation,
    CustomConfigTransformation, CustomValidationStrategy, CustomDecoder,
    # state and config migrations, conditional and state-delegating streams (issue 16)
    LegacyToPerPartitionStateMigration, ConfigNormalizationRules, ConfigMigration, ConfigAddFields, ConfigRemapField, ConfigRemoveFields, DpathValidator, PredicateValidator, ValidateAdheresToSchema, ConditionalStreams, StateDelegatingStream,  # noqa: E501
)

REGISTRY: dict[str, type[Component]] = {model.type_name(): model for model in COMPONENTS}

# Components of Airbyte's language that this framework does not run (yet).
# Named here so a manifest using one gets a clear "not supported" error.
UNSUPPORTED: dict[str, str] = {
    name: "it is not implemented in this framework yet"
    for name in (
        "AsyncRetriever", "DynamicDeclarativeStream", "HttpComponentsResolver",
        "ConfigComponentsResolver", "IncrementingCountCursor", "GroupingPartitionRouter",
        "UnionPartitionRouter", "CartesianProductStreamSlicer", "DatetimeStreamSlicer",
        "SubstreamSlicer", "ListStreamSlicer", "SingleSlice", "JwtAuthenticator",
        "LegacySessionTokenAuthenticator", "RateLimitedMultipleTokenAuthenticator", "XmlDecoder",
        "CsvDecoder", "JsonlDecoder", "GzipDecoder", "IterableDecoder", "ZipfileDecoder", "JsonItemsDecoder",
        "DynamicSchemaLoader", "KeysToLower", "KeysToSnakeCase", "FlattenFields", "DpathFlattenFields",
        "KeysReplace", "ComponentMappingDefinition",
        "HTTPAPIBudget", "PropertiesFromEndpoint", "QueryProperties", "RecordExpander",
        "ParametrizedComponentsResolver", "PaginationReset", "RequestBodyJsonObject", "RequestBodyGraphQL",
        "RequestBodyPlainText", "RequestBodyUrlEncodedForm", "FileUploader",
    )
}

__all__ = ["COMPONENTS", "CUSTOM_KINDS", "REGISTRY", "UNSUPPORTED", "Component", "CustomComponent", "Model",
           "TemplateSpec", "default_type_of", "format_of", "template_of"] + [model.__name__ for model in COMPONENTS]
