"""Custom components: a Python class, named by ``class_name``, where the language has no component for a need.

Each ``Custom*`` type stands for one kind of component (an extractor, a
pagination strategy, ...). Besides ``type``, ``class_name`` and
``$parameters``, a custom component takes any other keys: they are handed to
the class (as keyword arguments for the fields it declares, Airbyte's
convention), so the model keeps them as they are (``model_extra``).

``methods`` names what a class of each kind must have, with Airbyte's method
names, so that classes written for Airbyte need no change;
``validate-manifest`` checks them in the source without running it.
"""

from typing import ClassVar, Literal

from pydantic import ConfigDict

from framework.models.base import Component, spec

_CLASS_NAME_EXAMPLE = "source_shop.components.OrdersExtractor"


class CustomComponent(Component):
    """A component implemented by a Python class; its other keys go to the class."""

    model_config = ConfigDict(extra="allow")

    #: What the class must define (methods or properties), by Airbyte's names.
    methods: ClassVar[tuple[str, ...]] = ()
    #: The kind in words, for messages ("record extractor").
    kind: ClassVar[str] = "component"

    class_name: str = spec(
        "Dotted path of the Python class: `components.X` for a `components.py` beside the manifest, "
        "`source_<name>.<module>.X` inside a connector's package folder, or any installed `module.X`.",
        _CLASS_NAME_EXAMPLE,
    )

    @property
    def options(self) -> dict[str, object]:
        """The keys the manifest gives the class, besides ``type``, ``class_name`` and ``$parameters``."""
        return dict(self.model_extra or {})


class CustomAuthenticator(CustomComponent):
    """Authenticates requests with a Python class: the headers of its `get_auth_header()`, and what its own
    `__call__(request)` sets on each request (requests' auth protocol), as airbyte-cdk calls it."""

    methods = ("get_auth_header",)
    kind = "authenticator"
    type: Literal["CustomAuthenticator"] = spec("Component type.", "CustomAuthenticator", "CustomAuthenticator")


class CustomBackoffStrategy(CustomComponent):
    """Decides how long to wait before a retry with a Python class."""

    methods = ("backoff_time",)
    kind = "backoff strategy"
    type: Literal["CustomBackoffStrategy"] = spec("Component type.", "CustomBackoffStrategy",
                                                  "CustomBackoffStrategy")


class CustomErrorHandler(CustomComponent):
    """Decides what a response or a failed request means (retry, ignore, fail) with a Python class."""

    methods = ("interpret_response",)
    kind = "error handler"
    type: Literal["CustomErrorHandler"] = spec("Component type.", "CustomErrorHandler", "CustomErrorHandler")


class CustomIncrementalSync(CustomComponent):
    """The stream's cursor as a Python class: its slices, what it observes and the state it keeps."""

    methods = ("stream_slices", "get_stream_state", "set_initial_state", "observe", "close_slice")
    kind = "incremental sync"
    type: Literal["CustomIncrementalSync"] = spec("Component type.", "CustomIncrementalSync",
                                                  "CustomIncrementalSync")


class CustomPaginationStrategy(CustomComponent):
    """Finds the next page's token in a response with a Python class."""

    methods = ("next_page_token",)
    kind = "pagination strategy"
    type: Literal["CustomPaginationStrategy"] = spec("Component type.", "CustomPaginationStrategy",
                                                     "CustomPaginationStrategy")


class CustomPartitionRouter(CustomComponent):
    """Splits a stream into partitions with a Python class."""

    methods = ("stream_slices",)
    kind = "partition router"
    type: Literal["CustomPartitionRouter"] = spec("Component type.", "CustomPartitionRouter",
                                                  "CustomPartitionRouter")


class CustomRecordExtractor(CustomComponent):
    """Takes the records out of a response with a Python class."""

    methods = ("extract_records",)
    kind = "record extractor"
    type: Literal["CustomRecordExtractor"] = spec("Component type.", "CustomRecordExtractor",
                                                  "CustomRecordExtractor")


class CustomRecordFilter(CustomComponent):
    """Keeps some of a page's records with a Python class."""

    methods = ("filter_records",)
    kind = "record filter"
    type: Literal["CustomRecordFilter"] = spec("Component type.", "CustomRecordFilter", "CustomRecordFilter")


class CustomRequester(CustomComponent):
    """Sends the stream's requests with a Python class."""

    methods = ("send_request",)
    kind = "requester"
    type: Literal["CustomRequester"] = spec("Component type.", "CustomRequester", "CustomRequester")


class CustomRetriever(CustomComponent):
    """Reads a stream slice's records with a Python class."""

    methods = ("read_records",)
    kind = "retriever"
    type: Literal["CustomRetriever"] = spec("Component type.", "CustomRetriever", "CustomRetriever")


class CustomSchemaLoader(CustomComponent):
    """Gives the stream's JSON Schema with a Python class."""

    methods = ("get_json_schema",)
    kind = "schema loader"
    type: Literal["CustomSchemaLoader"] = spec("Component type.", "CustomSchemaLoader", "CustomSchemaLoader")


class CustomSchemaNormalization(CustomComponent):
    """Casts a record's values to its schema with a Python class."""

    methods = ("transform",)
    kind = "schema normalization"
    type: Literal["CustomSchemaNormalization"] = spec("Component type.", "CustomSchemaNormalization",
                                                      "CustomSchemaNormalization")


class CustomStateMigration(CustomComponent):
    """Turns a saved state of an older shape into the current one with a Python class."""

    methods = ("should_migrate", "migrate")
    kind = "state migration"
    type: Literal["CustomStateMigration"] = spec("Component type.", "CustomStateMigration", "CustomStateMigration")


class CustomTransformation(CustomComponent):
    """Changes each record with a Python class."""

    methods = ("transform",)
    kind = "transformation"
    type: Literal["CustomTransformation"] = spec("Component type.", "CustomTransformation", "CustomTransformation")


class CustomConfigTransformation(CustomComponent):
    """Changes the config before the connector reads it with a Python class."""

    methods = ("transform",)
    kind = "config transformation"
    type: Literal["CustomConfigTransformation"] = spec("Component type.", "CustomConfigTransformation",
                                                       "CustomConfigTransformation")


class CustomValidationStrategy(CustomComponent):
    """Checks a config value with a Python class."""

    methods = ("validate",)
    kind = "validation strategy"
    type: Literal["CustomValidationStrategy"] = spec("Component type.", "CustomValidationStrategy",
                                                     "CustomValidationStrategy")


class CustomDecoder(CustomComponent):
    """Reads response bodies with a Python class."""

    methods = ("decode",)
    kind = "decoder"
    type: Literal["CustomDecoder"] = spec("Component type.", "CustomDecoder", "CustomDecoder")


#: Every custom kind, by its ``type``.
CUSTOM_KINDS: dict[str, type[CustomComponent]] = {
    model.model_fields["type"].default: model
    for model in (
        CustomAuthenticator, CustomBackoffStrategy, CustomErrorHandler, CustomIncrementalSync,
        CustomPaginationStrategy, CustomPartitionRouter, CustomRecordExtractor, CustomRecordFilter,
        CustomRequester, CustomRetriever, CustomSchemaLoader, CustomSchemaNormalization, CustomStateMigration,
        CustomTransformation, CustomConfigTransformation, CustomValidationStrategy, CustomDecoder,
    )
}

__all__ = ["CUSTOM_KINDS", "CustomComponent", *(model.__name__ for model in CUSTOM_KINDS.values())]
