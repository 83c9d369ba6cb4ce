"""Records: where they are in a response, which to keep, how to change them, and their schema."""

from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Field

from framework.models.base import BASE, RECORD, Component, spec
from framework.models.custom import (
    CustomRecordExtractor,
    CustomRecordFilter,
    CustomSchemaLoader,
    CustomSchemaNormalization,
)
from framework.models.decoders import Decoder
from framework.models.transformations import (  # noqa: F401  (importable from here as before)
    AddedFieldDefinition,
    AddFields,
    RecordExpander,
    RemoveFields,
    Transformation,
)

if TYPE_CHECKING:  # files imports this module: a file uploader has extractors (see back_references)
    from framework.models.files import ResponseToFileExtractor


class DpathExtractor(Component):
    """Takes the records from a path in the response body."""

    type: Literal["DpathExtractor"] = spec("Component type.", "DpathExtractor", "DpathExtractor")
    field_path: tuple[str, ...] = spec(
        "Keys leading to the records; `*` matches every key or item at its level. "
        "Empty: the body itself (a list is many records, an object one). An empty object found there is no "
        "record; a body that is a list is read item by item at the path.",
        ["data", "*", "items"],
        template=BASE,
    )
    decoder: Decoder | None = spec(
        "Ignored, as Airbyte ignores it here: the retriever's `decoder` reads every response of the stream.",
        {"type": "JsonDecoder"}, None)
    record_expander: RecordExpander | None = spec(
        "Expands each extracted record into the items of a list inside it.",
        {"type": "RecordExpander", "expand_records_from_field": ["lines"]}, None, default_type="RecordExpander")


class RecordFilter(Component):
    """Keeps only the records for which a condition renders true."""

    type: Literal["RecordFilter"] = spec("Component type.", "RecordFilter", "RecordFilter")
    condition: str = spec(
        "Template that renders true for records to keep.",
        "{{ record['status'] != 'draft' }}",
        "",
        template=RECORD,
        result="boolean",
    )


class RecordSelector(Component):
    """Extracts the records of a response and filters them."""

    type: Literal["RecordSelector"] = spec("Component type.", "RecordSelector", "RecordSelector")
    extractor: Annotated["DpathExtractor | CustomRecordExtractor | ResponseToFileExtractor",
                         Field(discriminator="type")] = spec(
        "Where the records are in the response.", {"type": "DpathExtractor", "field_path": ["data"]},
        default_type="DpathExtractor",
    )
    record_filter: Annotated[RecordFilter | CustomRecordFilter, Field(discriminator="type")] | None = spec(
        "Which records to keep.", {"type": "RecordFilter", "condition": "{{ record.active }}"}, None
    )
    schema_normalization: Literal["None", "Default"] | CustomSchemaNormalization = spec(
        "`Default` casts record values to the types the stream's schema declares, as Airbyte does "
        "(`str()`, `int()`, `float()`; a value that does not convert stays); `None` leaves them; "
        "a `CustomSchemaNormalization` casts them with a Python class.",
        "Default",
        "None",
    )
    transform_before_filtering: bool | None = spec(
        "Apply the stream's transformations before the record filter rather than after it; when left out, "
        "before it on a stream whose cursor is `is_client_side_incremental`, after it otherwise.", True, None
    )


class InlineSchemaLoader(Component):
    """The stream's JSON Schema, written in the manifest."""

    takes_parameters = False

    type: Literal["InlineSchemaLoader"] = spec("Component type.", "InlineSchemaLoader", "InlineSchemaLoader")
    schema_: Mapping[str, Any] = spec(
        "A JSON Schema of one record.",
        {"type": "object", "properties": {"id": {"type": "integer"}}},
        alias="schema",
        default_factory=dict,
    )


class JsonFileSchemaLoader(Component):
    """The stream's JSON Schema, read from a file beside the manifest."""

    type: Literal["JsonFileSchemaLoader"] = spec(
        "Component type.", "JsonFileSchemaLoader", "JsonFileSchemaLoader"
    )
    file_path: str | None = spec(
        "Path of the schema file, relative to the manifest; `schemas/<stream name>.json` when left out.",
        "schemas/{{ parameters['name'] }}.json",
        None,
        template=BASE,
    )


SchemaLoader = Annotated[
    InlineSchemaLoader | JsonFileSchemaLoader | CustomSchemaLoader, Field(discriminator="type")
]
