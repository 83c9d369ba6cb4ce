"""Query properties: APIs that are told which fields to return, possibly a few at a time.

``QueryProperties`` names the properties (a list, or ``PropertiesFromEndpoint``
reading them from the API), ``PropertyChunking`` splits them into several
requests per page and ``GroupByKeyMergeStrategy`` puts the records of those
requests back together; ``JsonSchemaPropertySelector`` keeps only the
properties the configured catalog selects. A QueryProperties sits in an
HttpRequester's ``request_parameters`` (the chunk goes there, comma-separated),
or in its ``query_properties`` (templates read the chunk as
``stream_slice.extra_fields['query_properties']``).
"""

from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Discriminator, Field, Tag, model_validator

from framework.models.base import BASE, Component, spec
from framework.models.custom import CustomRetriever
from framework.models.records import Transformation

if TYPE_CHECKING:  # source imports this module, through requests: a retriever's requester (see back_references)
    from framework.models.source import SimpleRetriever


class GroupByKeyMergeStrategy(Component):
    """Records of the requests of one page that share the key's values are merged into one record."""

    type: Literal["GroupByKeyMergeStrategy"] = spec("Component type.", "GroupByKeyMergeStrategy",
                                                    "GroupByKeyMergeStrategy")
    key: str | tuple[str, ...] = spec(
        "Field, or fields, of the record whose values say which records are one.", ["id"]
    )

    @model_validator(mode="after")
    def _some_key(self) -> "GroupByKeyMergeStrategy":
        keys = (self.key,) if isinstance(self.key, str) else self.key
        if not keys or any(not k for k in keys):
            raise ValueError("`key` needs at least one field name, and no empty one")
        return self


class PropertyChunking(Component):
    """Splits the properties into groups, one request per group, for APIs that limit a request's properties."""

    type: Literal["PropertyChunking"] = spec("Component type.", "PropertyChunking", "PropertyChunking")
    property_limit_type: Literal["characters", "property_count"] = spec(
        "What `property_limit` counts: properties, or characters of the names (each plus 3 for the "
        "encoded comma between them).",
        "property_count",
    )
    property_limit: int | None = spec(
        "The most properties (or characters) per request; one request with every property when left out or 0.",
        50,
        None,
    )
    record_merge_strategy: GroupByKeyMergeStrategy | None = spec(
        "How the records of a page's requests are merged; by the `id` field when left out.",
        {"type": "GroupByKeyMergeStrategy", "key": "id"},
        None,
    )

    @model_validator(mode="after")
    def _limit(self) -> "PropertyChunking":
        if self.property_limit is not None and self.property_limit < 0:
            raise ValueError("`property_limit` must be a positive number (or 0 for no limit)")
        return self


class JsonSchemaPropertySelector(Component):
    """Requests only the properties the configured catalog's schema of the stream holds."""

    type: Literal["JsonSchemaPropertySelector"] = spec("Component type.", "JsonSchemaPropertySelector",
                                                       "JsonSchemaPropertySelector")
    transformations: tuple[Transformation, ...] = spec(
        "Changes applied to the schema's `properties` mapping (as if it were a record) before its keys "
        "are taken, to turn column names into property names.",
        [{"type": "RemoveFields", "field_pointers": [["_links"]]}],
        (),
    )


class PropertiesFromEndpoint(Component):
    """Reads the property names from the API, once per sync, with a retriever of its own."""

    type: Literal["PropertiesFromEndpoint"] = spec("Component type.", "PropertiesFromEndpoint",
                                                   "PropertiesFromEndpoint")
    property_field_path: tuple[str, ...] = spec(
        "Path, in each record of the retriever, to the property name.", ["name"], template=BASE
    )
    retriever: Annotated["SimpleRetriever | CustomRetriever", Field(discriminator="type")] = spec(
        "How the property records are read (no partitions: `stream_slice` is empty).",
        {"type": "SimpleRetriever", "requester": {"type": "HttpRequester", "url_base": "https://api.example.com",
                                                  "path": "/properties"},
         "record_selector": {"type": "RecordSelector", "extractor": {"type": "DpathExtractor",
                                                                     "field_path": ["results"]}}},
        default_type="SimpleRetriever",
    )


class QueryProperties(Component):
    """The properties an API is asked for, sent as a request parameter or read from the slice."""

    type: Literal["QueryProperties"] = spec("Component type.", "QueryProperties", "QueryProperties")
    property_list: tuple[str, ...] | PropertiesFromEndpoint = spec(
        "The properties: a list, or read from the API.", ["name", "email", "created_at"]
    )
    always_include_properties: tuple[str, ...] | None = spec(
        "Properties put in every request (at the front), whatever the chunking and the selector.", ["id"], None
    )
    property_chunking: PropertyChunking | None = spec(
        "How the properties are split over several requests; all in one request when left out.",
        {"type": "PropertyChunking", "property_limit_type": "property_count", "property_limit": 50},
        None,
    )
    property_selector: JsonSchemaPropertySelector | None = spec(
        "Keep only the properties selected in the configured catalog.", {"type": "JsonSchemaPropertySelector"}, None
    )


def _parameter_kind(value: Any) -> str:
    if isinstance(value, QueryProperties) or (isinstance(value, Mapping) and value.get("type") == "QueryProperties"):
        return "query_properties"
    return "value"


class _AnyOfSchema:
    """Says the union in JSON Schema as ``anyOf`` (its ``{}`` branch overlaps the component)."""

    def __get_pydantic_json_schema__(self, core_schema: Any, handler: Any) -> Any:
        schema = handler(core_schema)
        if "oneOf" in schema:
            schema["anyOf"] = schema.pop("oneOf")
        return schema


#: A value of `request_parameters`: a QueryProperties (given by its `type`), or a plain value or template.
RequestParameter = Annotated[
    Annotated[QueryProperties, Tag("query_properties")] | Annotated[Any, Tag("value")],
    Discriminator(_parameter_kind),
    _AnyOfSchema(),
]
