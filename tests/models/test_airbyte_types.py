"""Our component types against Airbyte's: every type of Airbyte's schema file is either supported
(:data:`~framework.models.REGISTRY`) or declined with a reason (:data:`~framework.models.UNSUPPORTED`).

The schema file is Airbyte's ``declarative_component_schema.yaml``, reached through the
``AIRBYTE_COMPONENT_SCHEMA`` environment variable (``.ci/run`` sets it to the corpus copy).
"""

from __future__ import annotations

import os
import re
from typing import Any

import pytest
import yaml

from framework.models import REGISTRY, UNSUPPORTED

SCHEMA = os.environ.get("AIRBYTE_COMPONENT_SCHEMA")
REASON = re.compile(r"^(not scheduled yet: .+|declined: .+)$")


def component_types(schema: Any) -> set[str]:
    """The values of every ``type`` property's ``enum`` in the schema, wherever the component is defined
    (under ``definitions`` or inline in another component's property)."""
    found: set[str] = set()
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            kind = node.get("properties", {}).get("type") if isinstance(node.get("properties"), dict) else None
            if isinstance(kind, dict) and isinstance(kind.get("enum"), list):
                found.update(value for value in kind["enum"] if isinstance(value, str))
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return found


@pytest.fixture(scope="module")
def airbyte_types() -> set[str]:
    if not SCHEMA or not os.path.isfile(SCHEMA):
        pytest.skip("AIRBYTE_COMPONENT_SCHEMA is not set to Airbyte's declarative_component_schema.yaml "
                    "(../shared/corpus/airbyte-declarative-component-schema.yaml; .ci/run sets it)")
    with open(SCHEMA, encoding="utf-8") as handle:
        types = component_types(yaml.safe_load(handle))
    assert len(types) > 100, f"{SCHEMA} names only {len(types)} component types: is it the right file?"
    return types


def test_every_airbyte_type_is_supported_or_declined_with_a_reason(airbyte_types: set[str]) -> None:
    missing = sorted(airbyte_types - set(REGISTRY) - set(UNSUPPORTED))
    assert not missing, (f"Airbyte's schema has component types we neither support nor decline: {missing}; "
                         "add each to framework/catalog.py CATALOG, or to UNSUPPORTED with its reason")


def test_types_we_decline_that_airbyte_no_longer_has_are_old_names(airbyte_types: set[str]) -> None:
    gone = sorted(name for name in set(UNSUPPORTED) - airbyte_types if not UNSUPPORTED[name].startswith("declined:"))
    assert not gone, f"declined as not yet supported, but not in Airbyte's schema: {gone}"


def test_a_type_is_supported_or_declined_not_both() -> None:
    both = sorted(set(REGISTRY) & set(UNSUPPORTED))
    assert not both, f"supported and also listed as unsupported: {both}; remove them from UNSUPPORTED"


@pytest.mark.parametrize("name", sorted(UNSUPPORTED))
def test_each_declined_type_has_a_real_reason(name: str) -> None:
    assert REASON.match(UNSUPPORTED[name]), f"{name}: {UNSUPPORTED[name]!r} does not say why"


def test_component_types_reads_nested_definitions() -> None:
    schema = {"definitions": {"A": {"properties": {"type": {"enum": ["A"]},
                                                   "inner": {"properties": {"type": {"enum": ["B"]}}}}},
                              "NotAComponent": {"properties": {"name": {"enum": ["x"]}}}}}
    assert component_types(schema) == {"A", "B"}
