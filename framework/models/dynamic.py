"""Streams made from an endpoint's answer or from config values: ``dynamic_streams``.

A ``DynamicDeclarativeStream`` holds a stream template and a components
resolver. The resolver yields one set of ``components_values`` per stream to
make (records read from an endpoint, entries of a config list, or values
written in the manifest); each ``ComponentMappingDefinition`` writes one
rendered value into a copy of the template, at ``field_path``. Each copy is an
ordinary stream of the connector once resolved.
"""

from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Field, model_validator

from framework.models.base import BASE, Component, spec

if TYPE_CHECKING:  # source imports this module: a source has dynamic streams (see back_references)
    from framework.models.source import DeclarativeStream, SimpleRetriever, StateDelegatingStream

# What a mapping's `value`, `field_path` and `condition` see: the values of the stream being made, the
# resolver's slice (HttpComponentsResolver) and the template as written.
MAPPING = BASE | {"components_values", "stream_slice", "stream_template_config"}


class ComponentMappingDefinition(Component):
    """One value written into the stream template for each stream made."""

    type: Literal["ComponentMappingDefinition"] = spec(
        "Component type.", "ComponentMappingDefinition", "ComponentMappingDefinition")
    field_path: tuple[str, ...] = spec(
        "The keys leading to the place in the template the value is written to (each may be a template).",
        ["retriever", "requester", "path"], template=MAPPING)
    value: str = spec(
        "Template of the value; text that reads as YAML (a number, a list, a mapping) becomes that value, "
        "except with the HTTP resolver.",
        "{{ components_values['id'] }}", template=MAPPING, result="any")
    value_type: Literal["string", "number", "integer", "boolean"] | None = spec(
        "Type the rendered value is converted to; inferred from the text when left out.", "string", None)
    create_or_update: bool = spec(
        "Create the place when the template lacks it (else a mapping to a missing place changes nothing). "
        "Not used by the HTTP resolver, as in Airbyte.", True, False)
    condition: str | None = spec(
        "Template that renders true when the mapping applies (ConfigComponentsResolver only, as in Airbyte).",
        "{{ components_values.get('cursor_field') }}", None, template=MAPPING, result="boolean")


Mappings = tuple[ComponentMappingDefinition, ...]


class HttpComponentsResolver(Component):
    """Streams made from the records an endpoint answers: one stream per record."""

    type: Literal["HttpComponentsResolver"] = spec(
        "Component type.", "HttpComponentsResolver", "HttpComponentsResolver")
    retriever: "SimpleRetriever" = spec(
        "How the records are read (once per run, on the driver); a partition router may list values to read "
        "for (not parent streams).",
        {"type": "SimpleRetriever", "requester": {"$ref": "#/definitions/requester"},
         "record_selector": {"type": "RecordSelector", "extractor": {"type": "DpathExtractor",
                                                                     "field_path": ["tables"]}}})
    components_mapping: Mappings = spec(
        "The values written into the template for each record.",
        [{"type": "ComponentMappingDefinition", "field_path": ["name"], "value": "{{ components_values['name'] }}"}],
        default_type="ComponentMappingDefinition")


class StreamConfig(Component):
    """Where in the config the values of the streams to make are."""

    type: Literal["StreamConfig"] = spec("Component type.", "StreamConfig", "StreamConfig")
    configs_pointer: tuple[str, ...] = spec(
        "The keys leading to a list (or one value) in the config (each may be a template).",
        ["custom_reports"], template=BASE)
    default_values: tuple[Any, ...] | None = spec(
        "Values added after the config's.", [{"name": "default_report"}], None)


class ConfigComponentsResolver(Component):
    """Streams made from config values: one stream per combination of the lists' entries."""

    type: Literal["ConfigComponentsResolver"] = spec(
        "Component type.", "ConfigComponentsResolver", "ConfigComponentsResolver")
    stream_config: StreamConfig | tuple[StreamConfig, ...] = spec(
        "Where the values are; with several, every combination of their entries makes a stream.",
        {"type": "StreamConfig", "configs_pointer": ["custom_reports"]}, default_type="StreamConfig")
    components_mapping: Mappings = spec(
        "The values written into the template for each entry.",
        [{"type": "ComponentMappingDefinition", "field_path": ["name"], "value": "{{ components_values['name'] }}"}],
        default_type="ComponentMappingDefinition")

    @property
    def stream_configs(self) -> tuple[StreamConfig, ...]:
        return self.stream_config if isinstance(self.stream_config, tuple) else (self.stream_config,)


class StreamParametersDefinition(Component):
    """Values written in the manifest, one mapping per stream to make."""

    takes_parameters = False

    type: Literal["StreamParametersDefinition"] = spec(
        "Component type.", "StreamParametersDefinition", "StreamParametersDefinition")
    list_of_parameters_for_stream: tuple[Mapping[str, Any], ...] = spec(
        "One mapping per stream (its `components_values`).", [{"name": "orders", "path": "/orders"}])


class ParametrizedComponentsResolver(Component):
    """Streams made from values written in the manifest."""

    type: Literal["ParametrizedComponentsResolver"] = spec(
        "Component type.", "ParametrizedComponentsResolver", "ParametrizedComponentsResolver")
    stream_parameters: StreamParametersDefinition = spec(
        "The values, one mapping per stream.",
        {"type": "StreamParametersDefinition", "list_of_parameters_for_stream": [{"name": "orders"}]},
        default_type="StreamParametersDefinition")
    components_mapping: Mappings = spec(
        "The values written into the template for each mapping.",
        [{"type": "ComponentMappingDefinition", "field_path": ["name"], "value": "{{ components_values['name'] }}"}],
        default_type="ComponentMappingDefinition")


ComponentsResolver = Annotated[HttpComponentsResolver | ConfigComponentsResolver | ParametrizedComponentsResolver,
                               Field(discriminator="type")]


class DynamicDeclarativeStream(Component):
    """A stream template and the resolver that makes streams of it."""

    type: Literal["DynamicDeclarativeStream"] = spec(
        "Component type.", "DynamicDeclarativeStream", "DynamicDeclarativeStream")
    name: str = spec("Name of the group of streams made (a check may name it).", "custom_reports", "")
    stream_template: Annotated["DeclarativeStream | StateDelegatingStream", Field(discriminator="type")] = spec(
        "The stream each set of values is written into; its `name` usually comes from a mapping.",
        {"$ref": "#/definitions/report_stream"}, default_type="DeclarativeStream")
    components_resolver: ComponentsResolver = spec(
        "Where the values come from.",
        {"type": "ConfigComponentsResolver", "stream_config": {"type": "StreamConfig",
                                                              "configs_pointer": ["custom_reports"]},
         "components_mapping": [{"type": "ComponentMappingDefinition", "field_path": ["name"],
                                 "value": "{{ components_values['name'] }}"}]})
    use_parent_parameters: bool = spec(
        "Parameters of the definition win over the template's own (Airbyte's default).", False, True)

    @model_validator(mode="before")
    @classmethod
    def _template_name(cls, data: Any) -> Any:
        # a template's name usually comes from a mapping: it may leave `name` out (Airbyte's default is "")
        template = data.get("stream_template") if isinstance(data, Mapping) else None
        if isinstance(template, Mapping) and template.get("type", "DeclarativeStream") == "DeclarativeStream" \
                and "name" not in template:
            data = {**data, "stream_template": {**template, "name": ""}}
        return data



class DynamicStreamCheckConfig(Component):
    """The streams of one DynamicDeclarativeStream a CheckStream reads from too."""

    takes_parameters = False

    type: Literal["DynamicStreamCheckConfig"] = spec(
        "Component type.", "DynamicStreamCheckConfig", "DynamicStreamCheckConfig")
    dynamic_stream_name: str = spec("The `name` of the DynamicDeclarativeStream.", "custom_reports")
    stream_count: int | None = spec("How many of its streams are read from, the first ones; all when left out.",
                                    1, None)


class CheckDynamicStream(Component):
    """How a connection is checked: reading from the first streams, dynamic ones included."""

    takes_parameters = False

    type: Literal["CheckDynamicStream"] = spec("Component type.", "CheckDynamicStream", "CheckDynamicStream")
    stream_count: int = spec("How many streams are read from: the first ones, in discover's order.", 1)
    use_check_availability: bool = spec(
        "Read from the streams; when false the check passes as soon as the source has a stream.", True, True)

