"""Typed, frozen models of the manifest language.

``REGISTRY`` maps every supported component ``type`` to its model; the loader
(:mod:`framework.manifest`) builds models from YAML through it. Settings of the
sink and of normalization live in :mod:`framework.models.destination` and
:mod:`framework.models.normalization`.
"""

from __future__ import annotations

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
    RefreshTokenUpdater,
    SelectiveAuthenticator,
    SessionTokenAuthenticator,
    SessionTokenRequestApiKeyAuthenticator,
    SessionTokenRequestBearerAuthenticator,
)
from framework.models.back_references import bind_back_references
from framework.models.base import Component, Model, TemplateSpec, default_type_of, format_of, template_of
from framework.models.budgets import (  # API budgets (issue 17)
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
    # query properties
    QueryProperties, PropertiesFromEndpoint, PropertyChunking, GroupByKeyMergeStrategy, JsonSchemaPropertySelector,
    RequestBodyJsonObject, RequestBodyUrlEncodedForm, RequestBodyPlainText, RequestBodyGraphQL,  # request bodies
    PaginationReset, PaginationResetLimits, PageSizeReduction, RequestWindowSplitting,  # newer filter actions
    KeysToLower, KeysToSnakeCase, KeysReplace, FlattenFields, DpathFlattenFields, KeyTransformation,  # transformations
    RecordExpander, ParentFieldPath,  # transformations: the extractor's expander
    DynamicSchemaLoader, SchemaTypeIdentifier, TypesMap, ComplexFieldType,  # dynamic schemas
    ResponseToFileExtractor, FileUploader,  # files
    JsonlDecoder, CsvDecoder, XmlDecoder, GzipDecoder, ZipfileDecoder, IterableDecoder, JsonItemsDecoder,  # decoders
    IncrementingCountCursor, GroupingPartitionRouter, UnionPartitionRouter,  # cursors and routers (issue 16)
    # state and config migrations, conditional and state-delegating streams (issue 16)
    LegacyToPerPartitionStateMigration, ConfigNormalizationRules, ConfigMigration, ConfigAddFields, ConfigRemapField,
    ConfigRemoveFields, DpathValidator, PredicateValidator, ValidateAdheresToSchema, ConditionalStreams,
    StateDelegatingStream,
    BlockSimultaneousSyncsAction,  # stream groups (issue 16)
    # streams made from the API or the config (issue 16)
    DynamicDeclarativeStream, HttpComponentsResolver, ConfigComponentsResolver, ParametrizedComponentsResolver,
    ComponentMappingDefinition, StreamConfig, StreamParametersDefinition, CheckDynamicStream, DynamicStreamCheckConfig,
    AsyncRetriever, AsyncJobStatusMap,  # asynchronous jobs (issue 17)
    JwtAuthenticator, LegacySessionTokenAuthenticator,  # authentication (issue 17)
    HTTPAPIBudget, MovingWindowCallRatePolicy, FixedWindowCallRatePolicy, UnlimitedCallRatePolicy, Rate, HttpRequestRegexMatcher, TokenQuota, QuotaStatusSource,  # API budgets (issue 17)  # noqa: E501
)

REGISTRY: dict[str, type[Component]] = {model.type_name(): model for model in COMPONENTS}

_ISSUE_15 = "planned: issue 15 ({})"
_ISSUE_16 = "planned: issue 16 ({})"
_ISSUE_17 = "planned: issue 17 ({})"
_OLD_NAME = "declined: an old name Airbyte's language no longer has; {}"

#: Every other component type of Airbyte's language, with why it is not supported (a manifest using one
#: gets that as its error): ``planned: issue N`` when an open issue adds it, ``not scheduled yet`` or
#: ``declined`` with the reason otherwise. tests/models/test_airbyte_types.py compares this and
#: :data:`REGISTRY` with Airbyte's schema file.
UNSUPPORTED: dict[str, str] = {
    "RateLimitedMultipleTokenAuthenticator": "not scheduled yet: several tokens taken in turn by their rate "
                                             "limits; it needs the sync-wide budgets of issue 17 first",
    "CartesianProductStreamSlicer": _OLD_NAME.format("give `partition_router` a list of routers"),
    "DatetimeStreamSlicer": _OLD_NAME.format("windows are the stream's `incremental_sync` (DatetimeBasedCursor)"),
    "ListStreamSlicer": _OLD_NAME.format("use a ListPartitionRouter"),
    "SubstreamSlicer": _OLD_NAME.format("use a SubstreamPartitionRouter"),
    "SingleSlice": _OLD_NAME.format("leave `partition_router` out"),
}

__all__ = ["COMPONENTS", "CUSTOM_KINDS", "JWT_ALGORITHMS", "REGISTRY", "UNSUPPORTED", "AuthFlow", "Component",
           "CustomComponent", "JwtHeaders", "JwtPayload", "Model", "OAuthConfigSpecification", "RefreshTokenUpdater",
           "RequestBodyGraphQlQuery", "TemplateSpec", "default_type_of", "format_of", "template_of"] \
    + [model.__name__ for model in COMPONENTS]
