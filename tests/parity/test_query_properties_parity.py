"""Parity with Airbyte for query properties: scenario (h), two syncs.

``manifests/query_properties.yaml`` reads contacts from an API that answers only
the properties a request names (``tests/fakes/properties_api.py``):

* ``contacts``: the property list read from ``/properties`` (PropertiesFromEndpoint,
  paginated), chunks of three (``email`` always included), the chunks' records
  merged by ``id``, pages of three, incremental; a first sync, then a second
  from the state each runner emitted, after the API changed;
* ``contacts_selected``: a static list narrowed to the configured catalog's schema
  (JsonSchemaPropertySelector with a RemoveFields), chunked by characters, the
  chunk placed by a template reading ``stream_partition.extra_fields``.

Records, final state and requests (path and query, distinct) must be the same as
airbyte-cdk's. Helpers are scenario (a)-(f)'s (``test_airbyte_parity.py``).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fakes.api_server import FakeApi
from fakes.properties_api import serve_properties_api
from parity.test_airbyte_parity import (
    ENABLE,
    _cdk_available,
    assert_same_records,
    assert_same_requests,
    run_both,
)

pytestmark = [
    pytest.mark.parity,
    pytest.mark.skipif(not _cdk_available(),
                       reason=f"parity with airbyte-cdk needs AIRBYTE_CDK_PYTHON set to a python with airbyte-cdk: "
                              f"{ENABLE}"),
]

MANIFEST = "query_properties.yaml"
SELECTED_SCHEMA = {"type": "object", "properties": {"id": {}, "email": {}, "phone": {}, "city": {},
                                                    "lifecycle_stage": {}}}


def catalog() -> dict:
    return {"streams": [
        {"stream": {"name": "contacts", "json_schema": {}, "supported_sync_modes": ["full_refresh", "incremental"]},
         "sync_mode": "incremental", "destination_sync_mode": "append"},
        {"stream": {"name": "contacts_selected", "json_schema": SELECTED_SCHEMA,
                    "supported_sync_modes": ["full_refresh"]},
         "sync_mode": "full_refresh", "destination_sync_mode": "overwrite"},
    ]}


def test_query_properties_two_syncs(fake_api: FakeApi, tmp_path: Path) -> None:
    api = fake_api
    served = serve_properties_api(api)
    config = {"base_url": api.url, "start_date": "2024-01-01T00:00:00Z", "end_date": "2024-01-10T00:00:00Z"}

    first = run_both(api, tmp_path, MANIFEST, config, catalog())
    assert len(first.cdk.records["contacts"]) == len(served)
    assert all(len(r["properties"]) == 7 for r in first.cdk.records["contacts"]), "the chunks were not merged"
    assert_same_records(first, "contacts")
    assert_same_records(first, "contacts_selected")
    assert {frozenset(r["properties"]) for r in first.cdk.records["contacts_selected"]} == {
        frozenset({"email", "phone", "lifecycle_stage"})}  # city removed by the selector's RemoveFields
    assert_same_requests(first)
    assert sum(1 for request in first.ours_requests if request[1] == "/properties") == 4  # pages 1-4, once
    state = first.cdk.stream_state("contacts")
    assert state == {"updated_at": "2024-01-03T00:00:00Z"}
    assert first.ours.stream_state("contacts") == state

    # the API changes: a contact is updated, another is added
    served[5]["updated_at"] = "2024-01-04T00:00:00Z"
    served[5]["properties"]["city"] = "Lisbon"
    served.append({"id": "c7", "updated_at": "2024-01-05T00:00:00Z",
                   "properties": {name: f"{name}-new" for name in served[0]["properties"]}})
    second = run_both(api, tmp_path, MANIFEST, config, catalog(), ours_state=first.ours.state_input(),
                      cdk_state=first.cdk.state_input())
    assert [r["id"] for r in second.cdk.records["contacts"]] == ["c5", "c6", "c7"]
    assert_same_records(second, "contacts")
    assert_same_records(second, "contacts_selected")
    assert_same_requests(second)
    assert second.cdk.stream_state("contacts") == {"updated_at": "2024-01-05T00:00:00Z"}
    assert second.ours.stream_state("contacts") == second.cdk.stream_state("contacts")
