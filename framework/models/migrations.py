"""State and config migrations: a saved state of an older shape, and the spec's ``config_normalization_rules``.

``LegacyToPerPartitionStateMigration`` sits in a stream's ``state_migrations``.
The config rules sit in ``spec.config_normalization_rules``: ``config_migrations``
(applied once, the migrated config announced or written back),
``transformations`` (applied at the start of every run, never saved) and
``validations`` (checked last; a failure stops the run before anything is read).
"""

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field

from framework.models.base import BASE, Component, spec
from framework.models.custom import CustomConfigTransformation, CustomValidationStrategy
from framework.models.records import AddedFieldDefinition

# What a config rule's condition may use: the config, and for ConfigAddFields the value about to be
# added (`value`, also as `property`) and its `path`.
CONFIG_CONDITION = BASE | {"property", "value", "path"}


class LegacyToPerPartitionStateMigration(Component):
    """Turns a per-partition state of the older shape (`{"<parent id>": {"<cursor field>": ...}}`) into
    `{"states": [{"partition": {...}, "cursor": {...}}]}`; the partition field and cursor field are the
    stream's (its SubstreamPartitionRouter's one parent and its DatetimeBasedCursor)."""

    model_config = ConfigDict(extra="allow")  # Airbyte's schema lets it carry other keys, which it ignores

    type: Literal["LegacyToPerPartitionStateMigration"] = spec(
        "Component type.", "LegacyToPerPartitionStateMigration", "LegacyToPerPartitionStateMigration")



class ConfigAddFields(Component):
    """Adds fields to the config; nested paths create the objects on the way."""

    takes_parameters = False

    type: Literal["ConfigAddFields"] = spec("Component type.", "ConfigAddFields", "ConfigAddFields")
    fields: tuple[AddedFieldDefinition, ...] = spec(
        "The fields to add: a path and a template of the value (rendered with `config`).",
        [{"path": ["region"], "value": "{{ config['country'] | lower }}"}],
        default_type="AddedFieldDefinition",
    )
    condition: str = spec(
        "Template that renders true when a field is to be added (with `value` and `path` of the field); "
        "always when empty.",
        "{{ config['environment'] == 'sandbox' }}",
        "",
        template=CONFIG_CONDITION,
        result="boolean",
    )


class ConfigRemapField(Component):
    """Replaces the value at a path of the config by the one a map gives for it (left alone when not in the map)."""

    takes_parameters = False

    type: Literal["ConfigRemapField"] = spec("Component type.", "ConfigRemapField", "ConfigRemapField")
    map: Mapping[str, Any] | str = spec(
        "Old value -> new value; keys and values may be templates; a template string must render an object.",
        {"pending": "in_progress", "done": "completed"},
        template=BASE,
        result="object",
    )
    field_path: tuple[str, ...] = spec(
        "Keys leading to the value (templates rendered with `config`); `*` is a key like any other.",
        ["data", "status"],
        template=BASE,
    )


class ConfigRemoveFields(Component):
    """Removes fields from the config; a path that is not there is skipped."""

    takes_parameters = False

    type: Literal["ConfigRemoveFields"] = spec("Component type.", "ConfigRemoveFields", "ConfigRemoveFields")
    field_pointers: tuple[tuple[str, ...], ...] = spec(
        "Paths of the fields to remove; `*` matches every key at its level.", [["legacy_token"], ["auth", "old"]]
    )
    condition: str = spec(
        "Template (rendered once with `config`) that renders true when the fields are to be removed; "
        "always when empty.",
        "{{ config['auth']['type'] == 'oauth' }}",
        "",
        template=CONFIG_CONDITION,
        result="boolean",
    )


ConfigTransformation = Annotated[
    ConfigAddFields | ConfigRemapField | ConfigRemoveFields | CustomConfigTransformation,
    Field(discriminator="type"),
]


class ConfigMigration(Component):
    """One migration of the config: transformations applied in order to a config of the older shape."""

    takes_parameters = False

    type: Literal["ConfigMigration"] = spec("Component type.", "ConfigMigration", "ConfigMigration")
    description: str | None = spec("What the migration is for.", "start_date moved under `replication`", None)
    transformations: tuple[ConfigTransformation, ...] = spec(
        "The transformations, in order.",
        [{"type": "ConfigRemapField", "field_path": ["region"], "map": {"eu-west": "eu"}}],
        (),
    )


class ValidateAdheresToSchema(Component):
    """The value must fit a JSON Schema (a string value is parsed as JSON first)."""

    takes_parameters = False

    type: Literal["ValidateAdheresToSchema"] = spec(
        "Component type.", "ValidateAdheresToSchema", "ValidateAdheresToSchema")
    base_schema: Mapping[str, Any] | str = spec(
        "The JSON Schema; a string is a template rendered with `config` into a schema (JSON text or an object).",
        {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}},
        template=BASE,
        result="object",
    )


ValidationStrategy = Annotated[ValidateAdheresToSchema | CustomValidationStrategy, Field(discriminator="type")]


class DpathValidator(Component):
    """Checks the config value at a path (every value, with `*`); nothing is checked when the path is absent."""

    takes_parameters = False

    type: Literal["DpathValidator"] = spec("Component type.", "DpathValidator", "DpathValidator")
    field_path: tuple[str, ...] = spec(
        "Keys leading to the value; `*` matches every key or item at its level.", ["custom_reports"],
        template=BASE,
    )
    validation_strategy: ValidationStrategy = spec(
        "How the value is checked.", {"type": "ValidateAdheresToSchema", "base_schema": {"type": "array"}}
    )


class PredicateValidator(Component):
    """Checks a value (a literal, or a template rendered with `config`)."""

    takes_parameters = False

    type: Literal["PredicateValidator"] = spec("Component type.", "PredicateValidator", "PredicateValidator")
    value: Any = spec("The value; strings are templates rendered with `config`.", "{{ config['api_version'] }}",
                      template=BASE, result="any")
    validation_strategy: ValidationStrategy = spec(
        "How the value is checked.", {"type": "ValidateAdheresToSchema", "base_schema": {"enum": ["v1", "v2"]}}
    )


Validator = Annotated[DpathValidator | PredicateValidator, Field(discriminator="type")]


class ConfigNormalizationRules(Component):
    """How the config is brought up to date and checked before a run: migrations, transformations, validations."""

    takes_parameters = False

    type: Literal["ConfigNormalizationRules"] = spec(
        "Component type.", "ConfigNormalizationRules", "ConfigNormalizationRules")
    config_migrations: tuple[ConfigMigration, ...] = spec(
        "Migrations applied in order; when they change the config, the new config is announced (a CONTROL "
        "message in protocol mode) or written back to the config file (Spark mode, with a backup).",
        [{"type": "ConfigMigration", "transformations": [
            {"type": "ConfigRemoveFields", "field_pointers": [["legacy_token"]]}]}],
        (),
        default_type="ConfigMigration",
    )
    transformations: tuple[ConfigTransformation, ...] = spec(
        "Transformations applied in order at the start of every run, after the migrations; never saved.",
        [{"type": "ConfigAddFields", "fields": [{"path": ["base"], "value": "https://{{ config['host'] }}"}]}],
        (),
    )
    validations: tuple[Validator, ...] = spec(
        "Checks of the config once transformed; a failure stops the run with a config error (exit 2).",
        [{"type": "DpathValidator", "field_path": ["reports"],
          "validation_strategy": {"type": "ValidateAdheresToSchema", "base_schema": {"type": "array"}}}],
        (),
    )


__all__ = [
    "ConfigAddFields", "ConfigMigration", "ConfigNormalizationRules", "ConfigRemapField", "ConfigRemoveFields",
    "ConfigTransformation", "DpathValidator", "LegacyToPerPartitionStateMigration", "PredicateValidator",
    "ValidateAdheresToSchema", "ValidationStrategy", "Validator",
]
