"""A stream schema read from the API: ``DynamicSchemaLoader`` and the parts that say how to read it.

The loader's retriever reads one record that describes the stream's fields;
``SchemaTypeIdentifier`` says where the field list is in it (``schema_pointer``),
and where each field's name (``key_pointer``) and type (``type_pointer``) are;
``TypesMap`` turns the API's type names into Airbyte's (``ComplexFieldType`` for
arrays of a given item type).
"""

from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Discriminator, Field, Tag, model_validator

from framework.models.base import BASE, Component, spec
from framework.models.custom import CustomRecordFilter, CustomSchemaLoader
from framework.models.records import InlineSchemaLoader, JsonFileSchemaLoader, RecordFilter, Transformation

if TYPE_CHECKING:  # source imports this module: a stream has a schema loader (see back_references)
    from framework.models.source import SimpleRetriever

#: The type names a field of a dynamic schema may end up with (Airbyte's data types).
AirbyteType = Literal[
    "string", "boolean", "date", "timestamp_without_timezone", "timestamp_with_timezone",
    "time_without_timezone", "time_with_timezone", "integer", "number", "array", "object",
]



def _shape(value: Any) -> str:
    """Which option of a type field a value is meant for, so that errors come from that option alone."""
    if isinstance(value, (dict, ComplexFieldType)):
        return "ComplexFieldType"
    return "tuple" if isinstance(value, (list, tuple)) else "str"


# templates of the pointers see the config (and parameters); a type map's condition sees the field too
RAW_SCHEMA = BASE | {"raw_schema"}


class ComplexFieldType(Component):
    """A field type with items: an array of strings, an array of arrays of integers..."""

    takes_parameters = False

    type: Literal["ComplexFieldType"] = spec("Component type (may be left out).", "ComplexFieldType",
                                             "ComplexFieldType")
    field_type: AirbyteType = spec("The Airbyte type of the field.", "array")
    items: Annotated[Annotated[AirbyteType, Tag("str")] | Annotated["ComplexFieldType", Tag("ComplexFieldType")],
                     Discriminator(_shape)] | None = spec(
        "The type of the items, for `field_type: array`: a type name or another complex type.", "string", None,
        default_type="ComplexFieldType")

    @model_validator(mode="after")
    def _items_of_arrays_only(self) -> "ComplexFieldType":
        if self.items is not None and self.field_type != "array":
            raise ValueError("`items` is only for `field_type: array`")
        return self


class TypesMap(Component):
    """Maps a type name the API uses to an Airbyte type, when a condition holds."""

    takes_parameters = False

    type: Literal["TypesMap"] = spec("Component type (may be left out).", "TypesMap", "TypesMap")
    target_type: Annotated[
        Annotated[AirbyteType, Tag("str")] | Annotated[tuple[AirbyteType, ...], Tag("tuple")]
        | Annotated["ComplexFieldType", Tag("ComplexFieldType")], Discriminator(_shape)] = spec(
        "The Airbyte type the field gets: a name, two names (either type), or a complex type.", "integer",
        default_type="ComplexFieldType")
    current_type: str | tuple[str, ...] = spec(
        "The type as the API names it (a list matches a list type value exactly).", "int64")
    condition: str | None = spec(
        "Template that must render true for the mapping to apply; `raw_schema` is the field's definition "
        "as the API sent it. Always applies when left out.",
        "{{ raw_schema['name'] != 'id' }}", None, template=RAW_SCHEMA, result="boolean")


class SchemaTypeIdentifier(Component):
    """Where the fields are in the schema record, and where each field's name and type are."""

    type: Literal["SchemaTypeIdentifier"] = spec("Component type (may be left out).", "SchemaTypeIdentifier",
                                                 "SchemaTypeIdentifier")
    schema_pointer: tuple[str, ...] = spec(
        "Keys leading to the list of field definitions in the record; the record itself when empty.",
        ["fields"], (), template=BASE)
    key_pointer: tuple[str, ...] = spec(
        "Keys leading to the field's name in one field definition.", ["name"], template=BASE)
    type_pointer: tuple[str, ...] | None = spec(
        "Keys leading to the field's type in one field definition; every field is a string when left out "
        "(and when a definition has no type there).", ["type"], None, template=BASE)
    types_mapping: tuple[TypesMap, ...] = spec(
        "Type names of the API mapped to Airbyte types; the first mapping that matches applies.",
        [{"target_type": "integer", "current_type": "int64"}], (), default_type="TypesMap")


class DynamicSchemaLoader(Component):
    """The stream's JSON Schema built from a record an API endpoint returns (read when the connector opens).

    Every field becomes a nullable property of the Airbyte type its definition names; the schema keeps
    `additionalProperties: true`.
    """

    type: Literal["DynamicSchemaLoader"] = spec("Component type.", "DynamicSchemaLoader", "DynamicSchemaLoader")
    retriever: "SimpleRetriever" = spec(
        "How the schema record is read: its first record is the schema (no partitions, no transformations "
        "of the stream).",
        {"type": "SimpleRetriever", "requester": {"$ref": "#/definitions/requester"},
         "record_selector": {"type": "RecordSelector", "extractor": {"type": "DpathExtractor", "field_path": []}}})
    schema_filter: Annotated[RecordFilter | CustomRecordFilter, Field(discriminator="type")] | None = spec(
        "Which fields to keep; the condition sees each field as `record` (`{name: its schema}`).",
        {"type": "RecordFilter", "condition": "{{ 'internal' not in record }}"}, None)
    schema_transformations: tuple[Transformation, ...] = spec(
        "Changes applied to the schema's `properties` (as one record), in order.",
        [{"type": "AddFields", "fields": [{"path": ["id"], "value": "{{ {'type': 'integer'} }}"}]}], ())
    schema_type_identifier: SchemaTypeIdentifier = spec(
        "Where the fields, their names and their types are in the record.",
        {"schema_pointer": ["fields"], "key_pointer": ["name"], "type_pointer": ["type"]},
        default_type="SchemaTypeIdentifier")


#: What a stream's `schema_loader` may be.
StreamSchemaLoader = Annotated[
    InlineSchemaLoader | JsonFileSchemaLoader | DynamicSchemaLoader | CustomSchemaLoader, Field(discriminator="type")
]
