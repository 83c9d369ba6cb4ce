"""Records: where they are in a response, which to keep, how to change them, and their schema."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import Field

from framework.models.base import BASE, PROPERTY, RECORD, Component, spec
from framework.models.custom import (
    CustomRecordExtractor,
    CustomRecordFilter,
    CustomSchemaLoader,
    CustomSchemaNormalization,
    CustomTransformation,
)
from framework.models.decoders import Decoder


class DpathExtractor(Component):
    """Takes the records from a path in the response body."""

    type: Literal["DpathExtractor"] = spec("Component type.", "DpathExtractor", "DpathExtractor")
    field_path: tuple[str, ...] = spec(
        "Keys leading to the records; `*` matches every key or item at its level. "
        "Empty: the body itself (a list is many records, an object one).",
        ["data", "*", "items"],
        template=BASE,
    )
    decoder: Decoder | None = spec(
        "Ignored, as Airbyte ignores it here: the retriever's `decoder` reads every response of the stream.",
        {"type": "JsonDecoder"}, None)


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
    extractor: Annotated[DpathExtractor | CustomRecordExtractor, Field(discriminator="type")] = spec(
        "Where the records are in the response.", {"type": "DpathExtractor", "field_path": ["data"]}
    )
    record_filter: Annotated[RecordFilter | CustomRecordFilter, Field(discriminator="type")] | None = spec(
        "Which records to keep.", {"type": "RecordFilter", "condition": "{{ record.active }}"}, None
    )
    schema_normalization: Literal["None", "Default"] | CustomSchemaNormalization = spec(
        "`Default` casts record values to the types the stream's schema declares; `None` leaves them; "
        "a `CustomSchemaNormalization` casts them with a Python class.",
        "Default",
        "None",
    )
    transform_before_filtering: bool = spec(
        "Apply the stream's transformations before the record filter rather than after it.", True, False
    )


class AddedFieldDefinition(Component):
    """One field added to every record."""

    type: Literal["AddedFieldDefinition"] = spec("Component type.", "AddedFieldDefinition", "AddedFieldDefinition")
    path: tuple[str, ...] = spec("Where the field goes in the record.", ["account_id"])
    value: str = spec(
        "Template of the value.", "{{ stream_partition.account_id }}", template=RECORD, result="any"
    )
    value_type: Literal["string", "number", "integer", "boolean"] | None = spec(
        "Type the rendered value is converted to; inferred from the text when left out.", "integer", None
    )


class AddFields(Component):
    """Adds fields to every record."""

    type: Literal["AddFields"] = spec("Component type.", "AddFields", "AddFields")
    fields: tuple[AddedFieldDefinition, ...] = spec(
        "The fields to add.", [{"path": ["source"], "value": "api"}], default_type="AddedFieldDefinition"
    )
    condition: str = spec(
        "Template that renders true when a field is to be added; always when empty.",
        "{{ property is not none }}",
        "",
        template=PROPERTY,
        result="boolean",
    )


class RemoveFields(Component):
    """Removes fields from every record."""

    type: Literal["RemoveFields"] = spec("Component type.", "RemoveFields", "RemoveFields")
    field_pointers: tuple[tuple[str, ...], ...] = spec(
        "Paths of the fields to remove; `*` matches every key at its level.", [["_links"], ["meta", "raw"]]
    )
    condition: str = spec(
        "Template that renders true for a field to remove; always when empty.",
        "{{ property == '' }}",
        "",
        template=PROPERTY,
        result="boolean",
    )


Transformation = Annotated[AddFields | RemoveFields | CustomTransformation, Field(discriminator="type")]


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
