"""``dynamic_streams``: mappings written into a template, the config and parametrized resolvers, made streams."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given
from hypothesis import strategies as st

from framework.components.context import BuildContext
from framework.components.delegating import listed_streams
from framework.components.dynamic import apply_mapping, resolve_templates, template_streams
from framework.errors import ConfigError
from framework.manifest import check_manifest_text

MANIFEST = """
version: 6.7.0
type: DeclarativeSource
check: {type: CheckStream, stream_names: [static]}
streams:
  - type: DeclarativeStream
    name: static
    schema_loader: {type: InlineSchemaLoader, schema: {}}
    retriever:
      type: SimpleRetriever
      requester: {type: HttpRequester, url_base: "https://x.io", path: /static}
      record_selector: {type: RecordSelector, extractor: {type: DpathExtractor, field_path: []}}
dynamic_streams:
  - type: DynamicDeclarativeStream
    name: made
    $parameters: {owner: manifest}
    stream_template:
      type: DeclarativeStream
      name: placeholder
      schema_loader: {type: InlineSchemaLoader, schema: {}}
      retriever:
        type: SimpleRetriever
        requester: {type: HttpRequester, url_base: "https://x.io", path: "/{{ parameters.owner }}"}
        record_selector: {type: RecordSelector, extractor: {type: DpathExtractor, field_path: []}}
    components_resolver:
%s
"""

CONFIG_RESOLVER = """      type: ConfigComponentsResolver
      stream_config:
        - {type: StreamConfig, configs_pointer: [regions]}
        - {type: StreamConfig, configs_pointer: [kinds], default_values: [{kind: all}]}
      components_mapping:
        - {type: ComponentMappingDefinition, field_path: [name],
           value: "{{ components_values.region }}_{{ components_values.kind }}"}
        - {type: ComponentMappingDefinition, field_path: [primary_key], value: "[id, {{ components_values.kind }}]",
           condition: "{{ components_values.kind != 'all' }}", create_or_update: true}
        - {type: ComponentMappingDefinition, field_path: [retriever, requester, http_method], value: POST}
"""

PARAMETRIZED = """      type: ParametrizedComponentsResolver
      stream_parameters:
        type: StreamParametersDefinition
        list_of_parameters_for_stream: [{name: one, size: "5"}, {name: two, size: "6"}]
      components_mapping:
        - {type: ComponentMappingDefinition, field_path: [name], value: "{{ components_values.name }}"}
        - {type: ComponentMappingDefinition, field_path: [retriever, requester, request_parameters, size],
           value: "{{ components_values.size }}", create_or_update: true}
        - {type: ComponentMappingDefinition, field_path: [missing, place], value: "x"}
"""


def opened(resolver: str, config: dict) -> tuple:
    checked = check_manifest_text(MANIFEST % resolver)
    assert checked.ok, [d.format() for d in checked.diagnostics]
    ctx = BuildContext(config=config, locate=checked.locate)
    return checked, ctx


def test_the_config_resolver_makes_one_stream_per_combination_of_entries():
    checked, ctx = opened(CONFIG_RESOLVER, {"regions": [{"region": "eu"}, {"region": "us"}],
                                            "kinds": [{"kind": "daily"}]})
    listed = list(listed_streams(checked.source, ctx, checked))
    assert [model.name for _path, model in listed] == ["static", "eu_daily", "eu_all", "us_daily", "us_all"]
    made = {model.name: model for _path, model in listed[1:]}
    assert made["eu_daily"].primary_key == ("id", "daily")  # YAML text became a list; created where missing
    assert made["eu_all"].primary_key is None  # the condition did not hold
    assert made["us_all"].retriever.requester.http_method == "GET"  # not in the template, not created
    assert made["us_all"].retriever.requester.path == "/{{ parameters.owner }}"  # rendered when the stream reads
    assert made["us_all"].parameters["owner"] == "manifest"
    assert {path for path, _model in listed[1:]} == {("dynamic_streams", 0, "stream_template")}


def test_a_config_without_the_list_makes_only_the_defaults_combinations():
    checked, ctx = opened(CONFIG_RESOLVER, {"regions": {"region": "eu"}})  # one value, not a list
    assert [model.name for _p, model in listed_streams(checked.source, ctx, checked)] == ["static", "eu_all"]
    checked, ctx = opened(CONFIG_RESOLVER, {})
    assert [model.name for _p, model in listed_streams(checked.source, ctx, checked)] == ["static"]


def test_the_parametrized_resolver_writes_values_and_creates_only_with_create_or_update():
    checked, ctx = opened(PARAMETRIZED, {})
    templates = resolve_templates(checked.source, checked.data, ctx)
    assert [t["name"] for t in templates[0]] == ["one", "two"]
    assert templates[0][0]["retriever"]["requester"]["request_parameters"] == {"size": 5}  # YAML: a number
    assert "missing" not in templates[0][0]
    made = [model for _p, model in template_streams(checked.source, templates, checked, ctx)]
    assert [m.name for m in made] == ["one", "two"]


def test_two_made_streams_of_one_name_and_a_made_stream_without_a_name_are_config_errors():
    checked, ctx = opened(CONFIG_RESOLVER, {"regions": [{"region": "eu"}, {"region": "eu"}]})
    with pytest.raises(ConfigError, match="two streams made by dynamic_streams are named `eu_all`.*<manifest>:"):
        list(listed_streams(checked.source, ctx, checked))
    checked, ctx = opened(PARAMETRIZED, {})
    templates = resolve_templates(checked.source, checked.data, ctx)
    nameless = ((dict(templates[0][0], name=""),),)
    with pytest.raises(ConfigError, match="has no name"):
        list(template_streams(checked.source, nameless, checked, ctx))


def test_a_made_stream_that_is_not_a_stream_is_a_config_error_at_the_template():
    checked, ctx = opened(PARAMETRIZED, {})
    templates = resolve_templates(checked.source, checked.data, ctx)
    broken = ((dict(templates[0][0], retriever={"type": "SimpleRetriever"}),),)
    with pytest.raises(ConfigError, match="the stream `one` made by dynamic_streams is not a valid stream.*requester"):
        list(template_streams(checked.source, broken, checked, ctx))


def test_mapping_globs_and_list_indexes():
    doc = {"a": {"x1": 1, "x2": 2, "y": 3}, "items": [{"v": 0}, {"v": 1}]}
    assert apply_mapping(doc, ["a", "x*"], 9) == 2 and doc["a"] == {"x1": 9, "x2": 9, "y": 3}
    assert apply_mapping(doc, ["items", "1", "v"], 5) == 1 and doc["items"] == [{"v": 0}, {"v": 5}]
    assert apply_mapping(doc, ["b", "c"], 1) == 0 and "b" not in doc
    assert apply_mapping(doc, ["b", "c"], 0, create=True) == 0 and "b" not in doc  # a falsy value is not created
    assert apply_mapping(doc, ["b", "c"], 1, create=True) == 1 and doc["b"] == {"c": 1}
    assert apply_mapping(doc, [], 1, create=True) == 0


keys = st.text(alphabet="abcxyz_", min_size=1, max_size=4)
documents = st.recursive(st.integers(), lambda inner: st.dictionaries(keys, inner, max_size=4), max_leaves=12)


@given(documents, st.lists(keys, min_size=1, max_size=4), st.integers(min_value=1))
def test_create_or_update_always_leaves_the_value_at_the_path(document, path, value):
    doc = {"root": copy.deepcopy(document)}
    full = ["root", *path]
    written = apply_mapping(doc, full, value, create=True)
    node = doc
    reachable = True
    for key in full:
        if not isinstance(node, dict) or key not in node:
            reachable = False
            break
        node = node[key]
    # written where the path existed (an existing leaf may sit where the path goes on: then nothing is written)
    assert (written >= 1) == reachable and (not reachable or node == value)
