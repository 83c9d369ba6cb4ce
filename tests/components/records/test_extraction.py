"""DpathExtractor: where records are found in a body, and the errors when they are not objects or not JSON."""

from __future__ import annotations

import pytest
from components.records.helpers import build, context, response
from hypothesis import given
from hypothesis import strategies as st

from framework.components.records import find_records
from framework.errors import DecodeError


def extract(field_path, body):
    extractor = build({"type": "DpathExtractor", "field_path": field_path})
    return extractor.extract(response(body))


@pytest.mark.parametrize(
    "field_path, body, expected",
    [
        ([], [{"id": 1}, {"id": 2}], [{"id": 1}, {"id": 2}]),
        ([], {"id": 1}, [{"id": 1}]),
        (["data"], {"data": [{"id": 1}]}, [{"id": 1}]),
        (["data"], {"data": {"id": 1}}, [{"id": 1}]),
        (["data", "items"], {"data": {"items": [{"id": 1}, {"id": 2}]}}, [{"id": 1}, {"id": 2}]),
        (["data"], {"other": [{"id": 1}]}, []),
        (["data"], {"data": None}, []),
        (["data", "items"], {"data": []}, []),
        (["data", "items"], {"data": "text"}, []),
        (["data", "0", "items"], {"data": [{"items": [{"id": 1}]}, {"items": [{"id": 2}]}]}, [{"id": 1}]),
        (["data", "1"], {"data": [{"id": 1}, {"id": 2}]}, [{"id": 2}]),
        (["data", "5"], {"data": [{"id": 1}]}, []),
        (["data", "x"], {"data": [{"id": 1}]}, []),
    ],
)
def test_paths(field_path, body, expected):
    assert extract(field_path, body) == expected


@pytest.mark.parametrize(
    "field_path, body, expected",
    [
        # `*` over a list, each match a list: the items of all of them
        (["data", "*", "items"], {"data": [{"items": [{"id": 1}]}, {"items": [{"id": 2}, {"id": 3}]}]},
         [{"id": 1}, {"id": 2}, {"id": 3}]),
        # `*` over an object's values; objects without the key contribute nothing
        (["groups", "*", "member"], {"groups": {"a": {"member": {"id": 1}}, "b": {}, "c": {"member": None},
                                                "d": {"member": {"id": 4}}}},
         [{"id": 1}, {"id": 4}]),
        # trailing `*`: every value
        (["data", "*"], {"data": {"x": {"id": 1}, "y": {"id": 2}}}, [{"id": 1}, {"id": 2}]),
        # leading `*` over a list body
        (["*", "records"], [{"records": [{"id": 1}]}, {"records": {"id": 2}}], [{"id": 1}, {"id": 2}]),
        # `*` on a scalar matches nothing
        (["data", "*"], {"data": 5}, []),
        (["data", "*", "*"], {"data": [[{"id": 1}], [{"id": 2}]]}, [{"id": 1}, {"id": 2}]),
    ],
)
def test_wildcards(field_path, body, expected):
    assert extract(field_path, body) == expected


def test_field_path_is_rendered_once_with_config_and_parameters():
    ctx = context({"root": "payload"})
    extractor = build({"type": "DpathExtractor", "field_path": ["{{ config.root }}", "{{ parameters.key }}"],
                       "$parameters": {"key": "rows"}}, ctx)
    assert extractor.field_path == ("payload", "rows")
    assert extractor.extract(response({"payload": {"rows": [{"id": 1}]}})) == [{"id": 1}]


def test_records_are_not_copied():
    body = {"data": [{"id": 1}]}
    resp = response(body)
    extractor = build({"type": "DpathExtractor", "field_path": ["data"]})
    records = extractor.extract(resp)
    assert records is resp.json()["data"]


@pytest.mark.parametrize("body", [b"", b"   \n", b"null"])
def test_empty_body_gives_no_records(body):
    assert extract([], body) == []
    assert extract(["data"], body) == []


@pytest.mark.parametrize(
    "field_path, body, found",
    [
        (["ids"], {"ids": [1, 2]}, "integer"),
        ([], ["a"], "string"),
        (["data", "*"], {"data": {"a": [1.5]}}, "number"),
        ([], 7, "integer"),
    ],
)
def test_records_that_are_not_objects_are_an_error(field_path, body, found):
    with pytest.raises(DecodeError) as caught:
        extract(field_path, body)
    message = str(caught.value)
    assert "must be JSON objects" in message
    assert f"found {found}" in message
    assert caught.value.request == "GET http://x/y"


def test_non_json_body_error_says_status_type_and_start():
    html = "<html><head><title>502 Bad Gateway</title></head><body>" + "x" * 300 + "</body></html>"
    extractor = build({"type": "DpathExtractor", "field_path": ["data"]},
                      context(locate=lambda path: "manifest.yaml:12:7"))
    with pytest.raises(DecodeError) as caught:
        extractor.extract(response(html, status=502, content_type="text/html"))
    message = str(caught.value)
    assert "HTTP 502" in message
    assert "Content-Type: text/html" in message
    assert html[:100] in message
    assert html[:101] not in message
    assert "check url_base/path" in message
    assert "manifest.yaml:12:7" in message
    assert "GET http://x/y" in message


def test_non_json_body_excerpt_is_masked():
    ctx = context(mask=lambda text: text.replace("s3cr3t", "****"))
    extractor = build({"type": "DpathExtractor", "field_path": []}, ctx)
    with pytest.raises(DecodeError) as caught:
        extractor.extract(response("token=s3cr3t is invalid", content_type="text/plain"))
    assert "s3cr3t" not in str(caught.value)
    assert "****" in str(caught.value)


keys = st.text(alphabet="abcdef", min_size=1, max_size=4)
records = st.lists(st.dictionaries(keys, st.integers(), max_size=3), max_size=5)


@given(path=st.lists(keys, max_size=4), found=records)
def test_records_nested_under_any_path_are_found(path, found):
    body: object = found
    for key in reversed(path):
        body = {key: body}
    assert find_records(body, tuple(path)) == found


@given(groups=st.dictionaries(keys, records, max_size=4))
def test_wildcard_collects_every_group_in_order(groups):
    body = {"groups": {name: {"rows": rows} for name, rows in groups.items()}}
    expected = [row for rows in groups.values() for row in rows]
    assert find_records(body, ("groups", "*", "rows")) == expected


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40), st.sampled_from(
    [b"\xff", b"\xc3(", b"\xed\xa0\x80", b"\xe2\x82"]))
def test_invalid_utf8_is_named_at_the_byte_where_it_is(before, bad):
    from framework.components.records.extraction import decode_body
    from framework.errors import UnreadableBodyError

    prefix = b'{"name": "' + before.encode().replace(b"\\", b"").replace(b'"', b"")
    with pytest.raises(UnreadableBodyError) as raised:
        decode_body(response(prefix + bad + b'"}'))
    assert f"decoding failed at byte {len(prefix)}: not valid UTF-8" in str(raised.value)


# -- empty bodies and empty documents, as airbyte-cdk 7.39's DpathExtractor reads them -------------------------


@pytest.mark.parametrize(
    "field_path, body, expected",
    [
        # an empty object is not a record, as the body or as the value at the path
        ([], {}, []),
        ([], [], []),
        ([], [{}], []),
        (["data"], {"data": {}}, []),
        (["data", "item"], {"data": {"item": {}}}, []),
        # nor are other false values
        ([], [{"id": 1}, 0, False, "", None, {}], [{"id": 1}]),
        (["data"], {"data": 0}, []),
        (["data"], {"data": ""}, []),
        (["data"], {"data": False}, []),
        # a list inside a list body gives its items, each kept as it is
        ([], [{"id": 1}, [{"id": 2}, {}]], [{"id": 1}, {"id": 2}, {}]),
        # the items of a list at the path are all records, an empty one too
        (["data"], {"data": [{}, {"id": 1}]}, [{}, {"id": 1}]),
        # a list body is a list of documents: the path is applied to each
        (["data"], [{"data": [{"id": 1}]}, {"data": {"id": 2}}, {"data": {}}, {"other": 1}], [{"id": 1}, {"id": 2}]),
        (["a", "b"], [{"a": {"b": [{"id": 1}]}}, {"a": {"b": {"id": 2}}}], [{"id": 1}, {"id": 2}]),
        # ... unless it starts with an index or `*`, which apply to the list
        (["0"], [{"id": 1}, {"id": 2}], [{"id": 1}]),
        (["1"], [{"id": 1}, {}], []),
    ],
)
def test_empty_values_are_no_records(field_path, body, expected):
    assert extract(field_path, body) == expected


def test_a_page_of_objects_is_not_copied():
    body = [{"id": 1}, {"id": 2}]
    resp = response(body)
    assert build({"type": "DpathExtractor", "field_path": []}).extract(resp) is resp.json()


small = st.integers(-1000, 1000)


@given(documents=st.lists(st.dictionaries(keys, small, max_size=2), max_size=6))
def test_a_list_body_gives_its_non_empty_objects_in_order(documents):
    assert extract([], documents) == [document for document in documents if document]


@given(pages=st.lists(st.one_of(st.lists(st.dictionaries(keys, small, max_size=3), max_size=4),
                                 st.dictionaries(keys, small, max_size=2)), max_size=5))
def test_a_path_is_applied_to_each_document_of_a_list_body(pages):
    body = [{"rows": page} for page in pages]
    expected = []
    for page in pages:
        if isinstance(page, list):
            expected.extend(page)
        elif page:
            expected.append(page)
    assert extract(["rows"], body) == expected
