"""The `request_body` models: what each kind accepts and how it folds into the older body fields."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from framework.models import HttpRequester
from framework.models.request_bodies import effective_bodies


def requester(**more):
    return HttpRequester.model_validate({"type": "HttpRequester", "url_base": "https://x", **more})


def test_json_object_and_graphql_become_the_json_body():
    json_body = requester(request_body={"type": "RequestBodyJsonObject", "value": {"a": {"b": 1}}})
    assert json_body.bodies() == ({"a": {"b": 1}}, {})
    graphql = requester(request_body={"type": "RequestBodyGraphQL", "value": {
        "query": "query { a }", "variables": {"n": 1}, "operationName": None}})
    assert graphql.bodies() == ({"query": "query { a }", "variables": {"n": 1}}, {})


def test_form_and_plain_text_become_the_data_body():
    form = requester(request_body={"type": "RequestBodyUrlEncodedForm", "value": {"a": "1"}})
    assert form.bodies() == ({}, {"a": "1"})
    text = requester(request_body={"type": "RequestBodyPlainText", "value": "x=1"})
    assert text.bodies() == ({}, "x=1")


def test_request_body_replaces_the_older_field_of_its_kind():
    model = requester(request_body={"type": "RequestBodyJsonObject", "value": {"new": 1}},
                      request_body_json={"old": 1})
    assert model.bodies() == ({"new": 1}, {})
    model = requester(request_body={"type": "RequestBodyPlainText", "value": "new"}, request_body_data={"old": "1"})
    assert model.bodies() == ({}, "new")


def test_a_json_body_and_a_form_together_are_an_error_naming_the_fix():
    with pytest.raises(ValidationError, match="keep only `request_body`"):
        requester(request_body={"type": "RequestBodyJsonObject", "value": {"a": 1}}, request_body_data={"b": "2"})
    with pytest.raises(ValidationError, match="keep only `request_body`"):
        requester(request_body={"type": "RequestBodyUrlEncodedForm", "value": {"a": "1"}},
                  request_body_json={"b": 2})


@pytest.mark.parametrize("body", [
    {"type": "RequestBodyUrlEncodedForm", "value": {"a": 1}},  # form values are text in Airbyte's schema
    {"type": "RequestBodyPlainText", "value": {"a": "1"}},
    {"type": "RequestBodyJsonObject", "value": "text"},
    {"type": "RequestBodyGraphQL", "value": {"variables": {}}},  # no query
    {"type": "RequestBodyXml", "value": "<a/>"},
])
def test_values_airbyte_rejects_are_rejected(body):
    with pytest.raises(ValidationError):
        requester(request_body=body)


def test_no_request_body_keeps_the_older_fields():
    assert effective_bodies(None, {"a": 1}, {}) == ({"a": 1}, {})
