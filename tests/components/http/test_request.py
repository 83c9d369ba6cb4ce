import pytest
from hypothesis import given
from hypothesis import strategies as st

from framework.components.http.request import HttpRequest, Injection, RequestParts, join_url, without_nulls


def test_parts_become_a_request_with_text_values_in_order():
    parts = RequestParts(method="POST", url_base="https://api.example.com/v1/", path="/orders")
    parts.params.update({"b": 2, "a": True, "skip": None})
    parts.headers["X-Page"] = 3
    request = parts.to_request()
    assert request.url == "https://api.example.com/v1/orders"
    assert request.params == (("b", "2"), ("a", "true"))
    assert request.headers == {"X-Page": "3"}
    assert request.full_url() == "https://api.example.com/v1/orders?b=2&a=true"


def test_a_full_url_replaces_base_and_path():
    parts = RequestParts(url_base="https://a.example", path="/x", url="https://b.example/next?c=1")
    assert parts.to_request().url == "https://b.example/next?c=1"
    assert join_url("https://a.example/v1", "https://c.example/z") == "https://c.example/z"


@given(st.sampled_from(["https://h", "https://h/", "https://h/v1", "https://h/v1/"]),
       st.sampled_from(["", "x", "/x", "x/y", "/x/y/"]))
def test_join_url_has_exactly_one_slash_between(base, path):
    url = join_url(base, path)
    assert "//" not in url.split("://", 1)[1]
    assert url.startswith(base.rstrip("/"))


def test_injection_into_every_place():
    parts = RequestParts()
    Injection("request_parameter", ("since",)).apply(parts, "2024")
    Injection("header", ("X-Key",)).apply(parts, "k")
    Injection("body_json", ("filter", "range", "gte")).apply(parts, 5)
    Injection("body_json", ("filter", "size")).apply(parts, 10)
    Injection("request_parameter", ("none",)).apply(parts, None)
    assert parts.params == {"since": "2024"}
    assert parts.headers == {"X-Key": "k"}
    assert parts.json == {"filter": {"range": {"gte": 5}, "size": 10}}
    form = RequestParts()
    Injection("body_data", ("page",)).apply(form, 2)
    assert form.data == {"page": 2}


def test_body_data_cannot_add_to_a_text_body():
    parts = RequestParts(data="raw text")
    with pytest.raises(ValueError, match="text already"):
        Injection("body_data", ("page",)).apply(parts, 2)


def test_describe_masks_secrets():
    request = HttpRequest("GET", "https://h/x", (("api_key", "s3cret"),))
    assert request.describe(lambda t: t.replace("s3cret", "****")) == "GET https://h/x?api_key=****"


def test_a_url_without_a_scheme_fails_at_once_as_a_config_error():
    import time

    from framework.components.http.transport import RequestsTransport
    from framework.errors import ReadError, TransportError

    started = time.perf_counter()
    with pytest.raises(ReadError) as caught:
        RequestsTransport().send(HttpRequest("GET", "localhost:1/items"))
    assert not isinstance(caught.value, TransportError)  # not retried
    assert caught.value.failure_type == "config_error"
    assert "http://" in str(caught.value)
    assert time.perf_counter() - started < 1


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=20,
)


def _no_null_values(value):
    if isinstance(value, dict):
        return all(item is not None and _no_null_values(item) for item in value.values())
    if isinstance(value, list):
        return all(_no_null_values(item) for item in value)
    return True


@given(_json)
def test_without_nulls_leaves_no_null_in_any_mapping_and_keeps_the_rest(value):
    cleaned = without_nulls(value)
    assert _no_null_values(cleaned)
    assert without_nulls(cleaned) == cleaned
    if isinstance(value, dict):
        assert set(cleaned) == {key for key, item in value.items() if item is not None}


def test_without_nulls_keeps_nulls_inside_lists_as_airbyte_does():
    assert without_nulls({"a": None, "b": [None, {"c": None, "d": 1}], "e": {"f": None}}) == \
        {"b": [None, {"d": 1}], "e": {}}
