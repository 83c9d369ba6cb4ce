"""Custom components in the manifest: the fields that take them, `class_name` alone, `$parameters`, extra keys."""

import pytest

from framework.manifest import check_manifest_text
from framework.models import (
    CUSTOM_KINDS,
    REGISTRY,
    UNSUPPORTED,
    CustomAuthenticator,
    CustomBackoffStrategy,
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
    DpathExtractor,
    ListPartitionRouter,
    SimpleRetriever,
)

MINIMAL = """
version: 6.7.0
streams:
  - name: items
    retriever:
      requester:
        url_base: https://api.example.com
      record_selector:
        extractor:
          field_path: [data]
check:
  stream_names: [items]
"""


def checked_ok(text):
    checked = check_manifest_text(text)
    assert checked.errors == (), [d.format() for d in checked.errors]
    assert checked.source is not None
    return checked


def test_every_custom_kind_is_registered_and_none_is_unsupported():
    assert len(CUSTOM_KINDS) == 17
    for name, model in CUSTOM_KINDS.items():
        assert REGISTRY[name] is model and name not in UNSUPPORTED
    assert "LegacyToPerPartitionStateMigration" in REGISTRY and "CartesianProductStreamSlicer" in UNSUPPORTED


# (text replaced in MINIMAL, its replacement, how to get the component from the source, its model)
SLOTS = [
    ("        url_base: https://api.example.com\n",
     "        url_base: https://api.example.com\n        authenticator: {C}\n",
     lambda s: s.streams[0].retriever.requester.authenticator, CustomAuthenticator),
    ("        url_base: https://api.example.com\n",
     "        url_base: https://api.example.com\n        error_handler: {C}\n",
     lambda s: s.streams[0].retriever.requester.error_handler, CustomErrorHandler),
    ("        url_base: https://api.example.com\n",
     "        url_base: https://api.example.com\n        error_handler: {{backoff_strategies: [{C}]}}\n",
     lambda s: s.streams[0].retriever.requester.error_handler.backoff_strategies[0], CustomBackoffStrategy),
    ("      record_selector:",
     "      paginator: {{type: DefaultPaginator, pagination_strategy: {C}}}\n      record_selector:",
     lambda s: s.streams[0].retriever.paginator.pagination_strategy, CustomPaginationStrategy),
    ("        extractor:\n          field_path: [data]\n", "        extractor: {C}\n",
     lambda s: s.streams[0].retriever.record_selector.extractor, CustomRecordExtractor),
    ("      record_selector:\n", "      record_selector:\n        record_filter: {C}\n",
     lambda s: s.streams[0].retriever.record_selector.record_filter, CustomRecordFilter),
    ("      record_selector:\n", "      record_selector:\n        schema_normalization: {C}\n",
     lambda s: s.streams[0].retriever.record_selector.schema_normalization, CustomSchemaNormalization),
    ("      record_selector:", "      partition_router: {C}\n      record_selector:",
     lambda s: s.streams[0].retriever.partition_router, CustomPartitionRouter),
    ("      record_selector:", "      decoder: {C}\n      record_selector:",
     lambda s: s.streams[0].retriever.decoder, CustomDecoder),
    ("    retriever:", "    incremental_sync: {C}\n    retriever:",
     lambda s: s.streams[0].incremental_sync, CustomIncrementalSync),
    ("    retriever:", "    schema_loader: {C}\n    retriever:",
     lambda s: s.streams[0].schema_loader, CustomSchemaLoader),
    ("    retriever:", "    transformations: [{C}]\n    retriever:",
     lambda s: s.streams[0].transformations[0], CustomTransformation),
    ("    retriever:", "    state_migrations: [{C}]\n    retriever:",
     lambda s: s.streams[0].state_migrations[0], CustomStateMigration),
]


@pytest.mark.parametrize("with_type", [True, False], ids=["typed", "class_name-only"])
@pytest.mark.parametrize(("old", "new", "get", "model"), SLOTS, ids=[s[3].__name__ for s in SLOTS])
def test_each_field_takes_its_custom_kind_typed_or_by_class_name_alone(old, new, get, model, with_type):
    component = "{" + (f"type: {model.type_name()}, " if with_type else "") + "class_name: components.X, size: 3}"
    assert old in MINIMAL
    source = checked_ok(MINIMAL.replace(old, new.format(C=component), 1)).source
    built = get(source)
    assert type(built) is model
    assert built.class_name == "components.X" and built.options == {"size": 3}


@pytest.mark.parametrize("kind", [CustomRequester, CustomRetriever])
def test_requester_and_retriever_can_be_custom(kind):
    if kind is CustomRetriever:
        text = MINIMAL.replace(MINIMAL[MINIMAL.index("    retriever:"):MINIMAL.index("check:")],
                               "    retriever: {class_name: components.Reader, path: /items}\n")
        source = checked_ok(text).source
        retriever = source.streams[0].retriever
    else:
        text = MINIMAL.replace("      requester:\n        url_base: https://api.example.com\n",
                               "      requester: {class_name: components.Sender, url_base: https://x}\n")
        source = checked_ok(text).source
        assert isinstance(source.streams[0].retriever, SimpleRetriever)
        retriever = source.streams[0].retriever.requester
    assert type(retriever) is kind


def test_a_list_of_partition_routers_mixes_custom_and_declarative():
    text = MINIMAL.replace("      record_selector:", """      partition_router:
        - {type: ListPartitionRouter, values: [a, b], cursor_field: region}
        - {class_name: components.Accounts}
      record_selector:""")
    routers = checked_ok(text).source.streams[0].retriever.partition_router
    assert [type(r) for r in routers] == [ListPartitionRouter, CustomPartitionRouter]


def test_class_name_where_no_custom_kind_fits_is_an_error_naming_the_types_there():
    text = MINIMAL.replace("  stream_names: [items]", "  class_name: components.Check")
    checked = check_manifest_text(text.replace("check:\n", "check:\n  stream_names: [items]\n"))
    [problem] = checked.errors
    assert problem.code == "wrong-component" and "CheckStream" in problem.fix
    assert (problem.line, problem.column) == (13, 15)  # the class_name value


def test_a_typed_mapping_without_class_name_is_not_taken_for_custom():
    source = checked_ok(MINIMAL).source
    assert type(source.streams[0].retriever.record_selector.extractor) is DpathExtractor


def test_parameters_reach_custom_components_and_the_components_in_their_keys():
    text = MINIMAL.replace("        extractor:\n          field_path: [data]\n", """        extractor:
          class_name: components.Extractor
          $parameters: {own: 1}
          inner: {type: DpathExtractor, field_path: ['{{ parameters.path }}']}
          plain: {type: NotAComponent, x: 1}
          listed: [{type: RecordFilter, condition: "{{ true }}"}, 7]
""").replace("  - name: items\n", "  - name: items\n    $parameters: {path: data}\n")
    checked = checked_ok(text)
    extractor = checked.source.streams[0].retriever.record_selector.extractor
    assert dict(extractor.parameters) == {"path": "data", "own": 1}
    inner = extractor.options["inner"]
    assert inner["type"] == "DpathExtractor" and inner["$parameters"]["own"] == 1
    assert extractor.options["plain"] == {"type": "NotAComponent", "x": 1}  # unknown type: kept as given
    assert extractor.options["listed"][0]["$parameters"]["path"] == "data" and extractor.options["listed"][1] == 7


def test_components_in_a_custom_components_keys_are_checked():
    text = MINIMAL.replace("        extractor:\n          field_path: [data]\n", """        extractor:
          class_name: components.Extractor
          inner: {type: DpathExtractor, field_pth: [data]}
          old: {type: CartesianProductStreamSlicer}
""")
    codes = {d.code for d in check_manifest_text(text).errors}
    assert {"unknown-field", "unsupported-component"} <= codes


def test_legacy_state_migration_needs_a_substream_router():
    text = MINIMAL.replace("    retriever:", "    state_migrations: [{type: LegacyToPerPartitionStateMigration}]\n"
                                             "    retriever:")
    [problem] = check_manifest_text(text).errors
    assert problem.code == "legacy-migration" and "SubstreamPartitionRouter" in problem.message


def test_a_custom_kind_in_the_wrong_field_is_reported():
    text = MINIMAL.replace("        extractor:\n          field_path: [data]\n",
                           "        extractor: {type: CustomTransformation, class_name: components.X}\n")
    [problem] = check_manifest_text(text).errors
    assert problem.code == "wrong-component" and "CustomRecordExtractor" in problem.fix


def test_class_name_must_be_text():
    text = MINIMAL.replace("        extractor:\n          field_path: [data]\n", "        extractor: {class_name: 3}\n")
    [problem] = check_manifest_text(text).errors
    assert problem.code == "bad-class-name"


def test_config_normalization_rules_take_custom_transformations_and_validations():
    text = MINIMAL + """spec:
  connection_specification: {type: object}
  config_normalization_rules:
    type: ConfigNormalizationRules
    transformations: [{type: CustomConfigTransformation, class_name: components.Fix}]
    validations:
      - type: PredicateValidator
        value: "{{ config['x'] }}"
        validation_strategy: {type: CustomValidationStrategy, class_name: components.Check}
"""
    rules = checked_ok(text).source.spec_.config_normalization_rules
    assert rules.transformations[0].class_name == "components.Fix"
    assert rules.validations[0].validation_strategy.class_name == "components.Check"
