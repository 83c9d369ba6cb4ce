"""Record transformations (a stream's ``transformations``) and the extractor's ``RecordExpander``.

Each model is one entry of Airbyte's language; :data:`Transformation` is the
union a stream's ``transformations`` list accepts (also importable from
:mod:`framework.models.records`).
"""

from typing import Annotated, Literal

from pydantic import Field, field_validator

from framework.models.base import BASE, RECORD, Component, spec
from framework.models.custom import CustomTransformation

# What AddFields' `condition` sees: the field's rendered `value` and its `path`, the record and the slice
# (Airbyte's add_fields passes these); `property` is the name Airbyte's schema documents for the value.
ADDED_FIELD = BASE | {"record", "stream_slice", "stream_interval", "stream_partition", "value", "path", "property"}
# What RemoveFields' `condition` sees: the value about to be removed, as `property`.
REMOVED_FIELD = BASE | {"property", "record"}
# KeysReplace's `old` and `new`: rendered per record.
KEYS_REPLACE = BASE | {"record", "stream_slice", "stream_interval", "stream_partition"}


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
        "Template that renders true when a field is to be added; always when empty. It sees the field's "
        "rendered `value` (also as `property`) and its `path`, besides `record` and the slice.",
        "{{ value is not none }}",
        "",
        template=ADDED_FIELD,
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
        template=REMOVED_FIELD,
        result="boolean",
    )


class KeysToLower(Component):
    """Lower-cases the record's top-level keys (nested keys stay)."""

    type: Literal["KeysToLower"] = spec("Component type.", "KeysToLower", "KeysToLower")


class KeysToSnakeCase(Component):
    """Renames every key, nested ones too, to snake case (`createdAt` -> `created_at`, `Unit Price` -> `unit_price`)."""

    type: Literal["KeysToSnakeCase"] = spec("Component type.", "KeysToSnakeCase", "KeysToSnakeCase")


class KeysReplace(Component):
    """Replaces a piece of text in every key, nested ones too."""

    type: Literal["KeysReplace"] = spec("Component type.", "KeysReplace", "KeysReplace")
    old: str = spec("The text to replace in keys.", " ", template=KEYS_REPLACE, result="any")
    new: str = spec("What replaces it.", "_", template=KEYS_REPLACE, result="any")


class FlattenFields(Component):
    """Flattens the record to one level: nested keys are kept when free, else prefixed by their parent's."""

    type: Literal["FlattenFields"] = spec("Component type.", "FlattenFields", "FlattenFields")
    flatten_lists: bool = spec(
        "Also flatten lists (their items become `<key>.<index>` fields); false keeps lists as values.", False, True
    )


class KeyTransformation(Component):
    """A prefix and a suffix for the keys DpathFlattenFields lifts into the record."""

    takes_parameters = False

    type: Literal["KeyTransformation"] = spec("Component type.", "KeyTransformation", "KeyTransformation")
    prefix: str | None = spec("Text put before each lifted key.", "flattened_", None, template=BASE)
    suffix: str | None = spec("Text put after each lifted key.", "_flattened", None, template=BASE)


class DpathFlattenFields(Component):
    """Lifts the fields of the object at a path to the top of the record."""

    type: Literal["DpathFlattenFields"] = spec("Component type.", "DpathFlattenFields", "DpathFlattenFields")
    field_path: tuple[str, ...] = spec(
        "Keys leading to the object; `*` matches every key or item at its level (the first match is used).",
        ["data", "attributes"],
        template=BASE,
    )
    delete_origin_value: bool = spec("Remove the object from where it was once its fields are lifted.", True, False)
    replace_record: bool = spec("The object's fields replace the whole record.", True, False)
    key_transformation: KeyTransformation | None = spec(
        "Prefix and suffix for the lifted keys.", {"type": "KeyTransformation", "prefix": "attr_"}, None,
        default_type="KeyTransformation",
    )


class ParentFieldPath(Component):
    """One value copied from the record being expanded onto each item it expands into."""

    type: Literal["ParentFieldPath"] = spec("Component type.", "ParentFieldPath", "ParentFieldPath")
    parent_path: tuple[str, ...] = spec("Keys of the value in the record being expanded.", ["id"], template=BASE)
    record_path: tuple[str, ...] = spec("Where the value goes in each item.", ["parent_id"], template=BASE)

    @field_validator("parent_path", "record_path")
    @classmethod
    def _one_field(cls, path: tuple[str, ...]) -> tuple[str, ...]:
        if not path:
            raise ValueError("the path is empty; give the keys of one field, e.g. [\"id\"]")
        for key in path:
            if "{" not in key and any(char in key for char in "*?["):
                raise ValueError(f"`{key}` holds a glob character (`*`, `?` or `[`), which Airbyte refuses here: "
                                 "the path must name one field, so write its keys out")
        return path


class RecordExpander(Component):
    """Emits the items of a list inside each extracted record as records of their own."""

    type: Literal["RecordExpander"] = spec("Component type.", "RecordExpander", "RecordExpander")
    expand_records_from_field: tuple[str, ...] = spec(
        "Keys leading to the list in each record; `*` matches every key or item at its level (all matched "
        "lists are expanded).",
        ["lines", "data"],
        template=BASE,
    )
    remain_original_record: bool = spec(
        "Put a copy of the whole record under `original_record` in each item.", True, False
    )
    parent_fields: tuple[ParentFieldPath, ...] = spec(
        "Values of the record copied onto each item (cheaper than `remain_original_record`).",
        [{"parent_path": ["id"], "record_path": ["order_id"]}],
        (),
        default_type="ParentFieldPath",
    )
    merge_parent: bool = spec(
        "Each item also gets the record's fields (the expanded list left out); the item's own keys win.", True, False
    )
    on_no_records: Literal["skip", "emit_parent"] = spec(
        "When the list is missing, not a list or empty: `skip` emits nothing, `emit_parent` the record as it is.",
        "emit_parent",
        "skip",
    )


Transformation = Annotated[
    AddFields | RemoveFields | KeysToLower | KeysToSnakeCase | KeysReplace | FlattenFields | DpathFlattenFields
    | CustomTransformation,
    Field(discriminator="type"),
]

__all__ = ["AddFields", "AddedFieldDefinition", "DpathFlattenFields", "FlattenFields", "KeyTransformation",
           "KeysReplace", "KeysToLower", "KeysToSnakeCase", "ParentFieldPath", "RecordExpander", "RemoveFields",
           "Transformation"]
