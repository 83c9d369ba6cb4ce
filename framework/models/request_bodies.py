"""The body of a request (`request_body` of an HttpRequester): JSON, form, plain text or GraphQL.

Each kind says how its ``value`` is sent; strings inside are templates rendered
per request, like the older ``request_body_json`` / ``request_body_data``
fields. :func:`effective_bodies` folds a ``request_body`` into those two, as
Airbyte does: a form or plain-text body takes the place of
``request_body_data``, a JSON object or GraphQL body that of
``request_body_json``.
"""

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field

from framework.models.base import REQUEST, Component, Model, spec

_DEFAULT_QUERY = "query {\n    \n}"


class RequestBodyPlainText(Component):
    """Sends `value` as the body, as text."""

    takes_parameters = False

    type: Literal["RequestBodyPlainText"] = spec("Component type.", "RequestBodyPlainText", "RequestBodyPlainText")
    value: str = spec(
        "The body text (a template). Text that renders to a literal mapping is sent as a form, as in Airbyte.",
        "since={{ stream_interval.start_time }}",
        template=REQUEST,
        result="any",
    )


class RequestBodyUrlEncodedForm(Component):
    """Sends `value` as a URL-encoded form (`application/x-www-form-urlencoded`)."""

    takes_parameters = False

    type: Literal["RequestBodyUrlEncodedForm"] = spec(
        "Component type.", "RequestBodyUrlEncodedForm", "RequestBodyUrlEncodedForm"
    )
    value: Mapping[str, str] = spec(
        "Form fields; keys and values are templates (values are text, as in Airbyte's schema). "
        "A field that renders empty is left out.",
        {"grant": "all", "since": "{{ stream_interval.start_time }}"},
        template=REQUEST,
        result="object",
    )


class RequestBodyJsonObject(Component):
    """Sends `value` as a JSON object."""

    takes_parameters = False

    type: Literal["RequestBodyJsonObject"] = spec(
        "Component type.", "RequestBodyJsonObject", "RequestBodyJsonObject"
    )
    value: Mapping[str, Any] = spec(
        "The JSON object; strings anywhere inside are templates (a template alone in a string "
        "keeps the type it renders, so numbers stay numbers).",
        {"filter": {"updated_after": "{{ stream_interval.start_time }}"}, "limit": 100},
        template=REQUEST,
        result="object",
    )


class RequestBodyGraphQlQuery(Model):
    """A GraphQL request: `query` plus any other keys (`variables`, `operationName`), sent as JSON."""

    model_config = ConfigDict(frozen=True, extra="allow", defer_build=True)

    query: str = spec(
        "The GraphQL query text (a template). Jinja only reads `{{ ... }}` and `{% ... %}`, "
        "so GraphQL's single braces stay as written.",
        "query { repository(owner: \"{{ config['owner'] }}\") { issues(first: 50) { nodes { id } } } }",
        template=REQUEST,
        result="any",
    )


class RequestBodyGraphQL(Component):
    """Sends a GraphQL query as the JSON body `{"query": ..., ...}`."""

    takes_parameters = False

    type: Literal["RequestBodyGraphQL"] = spec("Component type.", "RequestBodyGraphQL", "RequestBodyGraphQL")
    value: RequestBodyGraphQlQuery = spec(
        "The query and the other keys of the body (`variables`, say); every string inside is a template.",
        {"query": "query($n: Int) { items(first: $n) { id } }", "variables": {"n": 50}},
        template=REQUEST,
        result="object",
    )


RequestBody = Annotated[
    RequestBodyPlainText | RequestBodyUrlEncodedForm | RequestBodyJsonObject | RequestBodyGraphQL,
    Field(discriminator="type"),
]


def graphql_body(query: RequestBodyGraphQlQuery) -> dict[str, Any]:
    """The JSON body of a GraphQL request: ``query`` and the extra keys, those set to null left out."""
    body: dict[str, Any] = {"query": query.query}
    body.update({key: value for key, value in (query.model_extra or {}).items() if value is not None})
    return body


def effective_bodies(request_body: Any, body_json: Any, body_data: Any) -> tuple[Any, Any]:
    """``(request_body_json, request_body_data)`` once ``request_body`` is folded in.

    ``request_body`` replaces the older field of its kind: a form or plain text the
    ``request_body_data``, a JSON object or GraphQL body the ``request_body_json``;
    the other older field stays (both set is an error the model reports).
    """
    if isinstance(request_body, (RequestBodyUrlEncodedForm, RequestBodyPlainText)):
        value = request_body.value
        return body_json, dict(value) if isinstance(value, Mapping) else value
    if isinstance(request_body, RequestBodyJsonObject):
        return dict(request_body.value), body_data
    if isinstance(request_body, RequestBodyGraphQL):
        return graphql_body(request_body.value), body_data
    return body_json, body_data


__all__ = [
    "RequestBody",
    "RequestBodyGraphQL",
    "RequestBodyGraphQlQuery",
    "RequestBodyJsonObject",
    "RequestBodyPlainText",
    "RequestBodyUrlEncodedForm",
    "effective_bodies",
    "graphql_body",
]
