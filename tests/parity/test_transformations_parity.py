"""Parity with Airbyte for record transformations and selection: scenario (h), two syncs, and each transformation
over generated records.

``manifests/transformations.yaml`` uses every transformation the language has
besides AddFields/RemoveFields (KeysToLower, KeysToSnakeCase, KeysReplace,
FlattenFields, DpathFlattenFields with a KeyTransformation and with
``replace_record``), the extractor's RecordExpander (``parent_fields``,
``merge_parent``, ``remain_original_record``, ``on_no_records``),
``schema_normalization: Default``, AddFields whose condition reads ``value``,
and ``transform_before_filtering`` both left out on a client-side incremental
stream (where Airbyte then transforms first) and set to false. Both runners
read it twice from the fake API, the second time from the state each emitted,
after the API changed; records and state must be the same.

``test_each_transformation_over_generated_records`` runs every transformation
(and ``Default`` normalization) over a few hundred generated records, here and
in airbyte-cdk's own classes, and compares the results one by one.

Needs a python with airbyte-cdk (``AIRBYTE_CDK_PYTHON``); skipped otherwise.
Differences found are written up in tests/parity/README.md.
"""

from __future__ import annotations

import copy
import json
import random
import subprocess
from pathlib import Path
from typing import Any

import orjson
import pytest
from fakes.api_server import FakeApi
from parity.test_airbyte_parity import (
    CDK_PYTHON,
    ENABLE,
    _cdk_available,
    assert_same_records,
    catalog_for,
    run_both,
)

from framework.components.records.schema_normalization import compile_normalizer

pytestmark = [
    pytest.mark.parity,
    pytest.mark.skipif(not _cdk_available(),
                       reason=f"parity with airbyte-cdk needs AIRBYTE_CDK_PYTHON set to a python with airbyte-cdk: "
                              f"{ENABLE}"),
]

MANIFEST = "transformations.yaml"
START = "2024-01-01T00:00:00Z"


# -- the API of scenario (h) --------------------------------------------------------------------------------


def order(i: int, updated: str, **more: Any) -> dict:
    found: dict[str, Any] = {
        "OrderId": 100 + i, "orderStatus": "draft" if i % 5 == 0 else "paid", "updatedAt": updated,
        "Amount": str(12.5 * i), "Quantity": f"{i}", "Paid": ("yes", "no", "true", "0")[i % 4],
        "Note": None if i % 3 == 0 else i, "Tags": "solo" if i % 2 else ["a", None],
        "customerName": f"Zoë {i}", "Meta": {"Source": ("web", "app")[i % 2], "Raw": {"HTTPCode": 200}},
        "attributes": {"size": str(i % 3), "Color": "red"} if i % 4 else None,
        "Lines": [{"SKU": f"s{i}-{k}", "Qty": str(k + 1), "Dims": {"W": k, "Parts": [k, {"n": k}]}}
                  for k in range(i % 3)],
    }
    if i % 2:
        found["Promo"] = {"Code": f"P{i}"}
    found.update(more)
    return found


FIRST_ORDERS = [order(i, f"2024-01-0{1 + i % 4}T0{i % 10}:00:00Z") for i in range(1, 12)]
SECOND_ORDERS = [  # order 3 moved on, two new ones; the others are older than the first sync's state
    *[o for o in FIRST_ORDERS if o["OrderId"] != 103],
    order(3, "2024-01-06T10:00:00Z", Amount="99"), order(22, "2024-01-06T11:00:00Z"),
    order(21, "2024-01-07T00:00:00Z", Lines=[]),
]

PROFILES = {"items": [
    {"id": 1, "kind": "user", "versions": [
        {"entries": [{"body": {"ID": 11, "Full name": "Ana B", "addr": {"city": "X", "geo": [1, 2]}}, "v": 1},
                     {"v": 2, "extra": {"a b": [1]}}]},
        {"entries": []}, {"entries": "none"}, {"entries": [{"body": {}, "v": 3}]}]},
    {"id": 2, "kind": "bot", "versions": [{"entries": [{"body": {"ID": 21}}]}]},
    {"id": 3, "kind": "user", "versions": [{"entries": [{"kind": "user", "body": "text", "the id": 3}]}]},
]}


class Scenario:
    """The fake API of scenario (h): ``/orders`` (all orders, the client filters) and ``/profiles``."""

    def __init__(self, api: FakeApi):
        self.orders = FIRST_ORDERS
        api.route("GET", "/orders", lambda request: {"data": {"orders": self.orders}})
        api.route("GET", "/profiles", lambda request: PROFILES)


def config_for(api: FakeApi) -> dict:
    return {"base_url": api.url, "start_date": START, "old": " "}


CATALOG = {"orders": "incremental", "order_lines": "full_refresh", "profiles": "full_refresh"}


def test_transformations_first_and_second_sync(fake_api: FakeApi, tmp_path: Path) -> None:
    api = fake_api
    scenario = Scenario(api)
    config = config_for(api)
    catalog = catalog_for(CATALOG)

    first = run_both(api, tmp_path, MANIFEST, config, catalog)
    for stream in CATALOG:
        assert_same_records(first, stream)
    assert {r["order_id"] for r in first.cdk.records["orders"]} == {
        str(o["OrderId"]) for o in FIRST_ORDERS if o["orderStatus"] != "draft"}
    assert first.ours.stream_state("orders") == first.cdk.stream_state("orders") == {
        "updated_at": max(o["updatedAt"] for o in FIRST_ORDERS if o["orderStatus"] != "draft")}

    scenario.orders = SECOND_ORDERS
    second = run_both(api, tmp_path, MANIFEST, config, catalog,
                      ours_state=first.ours.state_input(), cdk_state=first.cdk.state_input())
    for stream in CATALOG:
        assert_same_records(second, stream)
    assert {r["order_id"] for r in second.cdk.records["orders"]} >= {"103", "122", "121"}
    assert second.ours.stream_state("orders") == second.cdk.stream_state("orders")


# -- each transformation over generated records ---------------------------------------------------------------

KEYS = ["id", "Id", "userId", "user_id", "Unit Price", "HTTPCode", "2fa", "__x__", "a.b", "Café Crème", "naïve",
        "x1y2", "ABC", "abc", "data", "attributes", "lines", "  ", "", "Ünïcode Key", "with-dash", "CamelCase99",
        "名前 Key", "Ελληνικά", "ß-straße"]  # transliterated with anyascii, as the CDK does


def generated_value(rng: random.Random, depth: int) -> Any:
    roll = rng.random()
    if depth < 3 and roll < 0.25:
        return generated_record(rng, depth + 1)
    if depth < 3 and roll < 0.4:
        return [generated_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return rng.choice([None, True, False, 0, 1, -7, 2.5, 3.0, "", "12", " 7 ", "x", "yes", "off", "1e3", "1.50",
                       "012", "true", "ünï"])


def generated_record(rng: random.Random, depth: int = 0) -> dict:
    return {rng.choice(KEYS): generated_value(rng, depth) for _ in range(rng.randint(0, 6))}


TRANSFORMATIONS: list[dict] = [
    {"type": "KeysToSnakeCase"},
    {"type": "KeysReplace", "old": "a", "new": "_A_"},
    {"type": "KeysReplace", "old": " ", "new": ""},
    {"type": "FlattenFields"},
    {"type": "FlattenFields", "flatten_lists": False},
    {"type": "DpathFlattenFields", "field_path": ["data"]},
    {"type": "DpathFlattenFields", "field_path": ["data"], "delete_origin_value": True},
    {"type": "DpathFlattenFields", "field_path": ["attributes"], "replace_record": True,
     "key_transformation": {"type": "KeyTransformation", "prefix": "p_", "suffix": "_s"}},
    {"type": "DpathFlattenFields", "field_path": ["lines", "*"], "delete_origin_value": True},
]
EXPANDERS: list[dict] = [
    {"type": "RecordExpander", "expand_records_from_field": ["lines"]},
    {"type": "RecordExpander", "expand_records_from_field": ["data", "*"], "on_no_records": "emit_parent"},
    {"type": "RecordExpander", "expand_records_from_field": ["lines"], "merge_parent": True,
     "remain_original_record": True,
     "parent_fields": [{"type": "ParentFieldPath", "parent_path": ["id"], "record_path": ["parent", "id"]}]},
    {"type": "RecordExpander", "expand_records_from_field": ["lines"], "parent_fields": [
        {"type": "ParentFieldPath", "parent_path": ["data", "id"], "record_path": ["zz", "1", "id"]},
        {"type": "ParentFieldPath", "parent_path": ["lines", "-1"], "record_path": ["last"]}]},
]
SCHEMA = {"type": "object", "properties": {
    "id": {"type": "integer"}, "Id": {"type": ["null", "number"]}, "userId": {"type": "string"},
    "user_id": {"type": ["string", "null"]}, "abc": {"type": "boolean"}, "ABC": {"type": ["null", "boolean"]},
    "x1y2": {"type": "array", "items": {"type": ["integer", "null"]}}, "lines": {"type": "array"},
    "data": {"type": "object", "properties": {"id": {"type": "number"}, "abc": {"type": "string"},
                                              "lines": {"type": "array", "items": {"type": "integer"}}}},
    "attributes": {"type": ["object", "null"], "properties": {"ABC": {"type": "integer"}}},
    "a.b": {"type": ["string", "integer"]}, "HTTPCode": {"type": "number"},
}}

# Airbyte's side: each case run through airbyte-cdk's own classes.
CDK_SCRIPT = r"""
import copy, json, sys
from airbyte_cdk.sources.declarative.parsers.model_to_component_factory import ModelToComponentFactory
from airbyte_cdk.sources.declarative.models import declarative_component_schema as models
from airbyte_cdk.sources.utils.transform import TransformConfig, TypeTransformer

cases = json.load(sys.stdin)
factory = ModelToComponentFactory()
out = []
for definition in cases["transformations"]:
    model = getattr(models, definition["type"]).parse_obj(definition)
    component = factory.create_component(type(model), definition, config={})
    results = []
    for record in copy.deepcopy(cases["records"]):
        component.transform(record, config={})
        results.append(record)
    out.append(results)
for definition in cases["expanders"]:
    model = getattr(models, definition["type"]).parse_obj(definition)
    component = factory.create_component(type(model), definition, config={})
    out.append([list(component.expand_record(record)) for record in copy.deepcopy(cases["records"])])
normalizer = TypeTransformer(TransformConfig.DefaultSchemaNormalization)
results = []
for record in copy.deepcopy(cases["records"]):
    normalizer.transform(record, cases["schema"])
    results.append(record)
out.append(results)
print(json.dumps(out))
"""


def _helpers_build() -> Any:
    """tests/components/records/helpers.py's ``build``, loaded by path: a connector's own ``components``
    module (custom components, loaded by earlier tests in this process) may hold that name."""
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "components" / "records" / "helpers.py"
    spec = importlib.util.spec_from_file_location("parity_transformations_helpers", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.build


def _ours(records: list[dict]) -> list[list[Any]]:
    build = _helpers_build()

    variables = {"config": {}, "parameters": {}}
    out: list[list[Any]] = []
    for definition in TRANSFORMATIONS:
        out.append(build(definition).apply_page(copy.deepcopy(records), variables))
    for definition in EXPANDERS:
        expander = build(definition)
        out.append([expander.expand(record) for record in copy.deepcopy(records)])
    normalize = compile_normalizer(SCHEMA)
    assert normalize is not None
    normalized = copy.deepcopy(records)
    for record in normalized:
        normalize(record)
    out.append(normalized)
    return out


def _canonical(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def test_each_transformation_over_generated_records() -> None:
    rng = random.Random(15)
    records = [generated_record(rng) for _ in range(300)]
    for index in range(0, 300, 3):  # give the paths something to find
        records[index]["data"] = generated_record(rng, 1)
        records[index]["lines"] = [generated_value(rng, 1) for _ in range(3)]
        records[index]["attributes"] = generated_record(rng, 2)
    cases = {"transformations": TRANSFORMATIONS, "expanders": EXPANDERS, "schema": SCHEMA, "records": records}
    done = subprocess.run([CDK_PYTHON, "-c", CDK_SCRIPT], input=json.dumps(cases).encode(), capture_output=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    theirs = json.loads(done.stdout.splitlines()[-1])  # the CDK logs its warnings on stdout first
    ours = _ours(records)
    names = [json.dumps(d) for d in TRANSFORMATIONS + EXPANDERS] + ["schema_normalization: Default"]
    for name, mine, cdk in zip(names, ours, theirs, strict=True):
        for record, one, other in zip(records, mine, cdk, strict=True):
            assert _canonical(one) == _canonical(other), f"{name} on {_canonical(record)}"
