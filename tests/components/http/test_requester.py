"""framework.components.http.requester: which requesters have QueryProperties (their runtime loads only then)."""

from __future__ import annotations

from typing import Any

import pytest

from framework.components.http.requester import asks_for_properties, plain_parameters
from framework.models import HttpRequester, QueryProperties

_LIST = {"type": "QueryProperties", "property_list": ["a", "b"]}


def _requester(**fields: Any) -> HttpRequester:
    return HttpRequester.model_validate({"type": "HttpRequester", "url_base": "https://api.example.com",
                                         "path": "/items", **fields})


@pytest.mark.parametrize(("fields", "asks"), [
    ({}, False),
    ({"request_parameters": {"page": "1"}}, False),
    ({"request_parameters": "{{ config.params }}"}, False),
    ({"request_parameters": {"page": "1", "fields": _LIST}}, True),
    ({"query_properties": _LIST}, True),
])
def test_a_requester_asks_for_properties_only_with_query_properties(fields: dict, asks: bool) -> None:
    assert asks_for_properties(_requester(**fields)) is asks


def test_anything_but_an_http_requester_asks_for_none() -> None:
    assert asks_for_properties(None) is False
    assert asks_for_properties({"query_properties": _LIST}) is False


def test_plain_parameters_leave_out_the_query_properties_only() -> None:
    requester = _requester(request_parameters={"page": "1", "fields": _LIST})
    assert plain_parameters(requester.request_parameters) == {"page": "1"}
    assert isinstance(requester.request_parameters["fields"], QueryProperties)
    plain = _requester(request_parameters={"page": "1"}).request_parameters
    assert plain_parameters(plain) is plain
