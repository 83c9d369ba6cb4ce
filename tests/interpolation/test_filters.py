import base64
import hashlib
import hmac

import pytest
from hypothesis import given
from hypothesis import strategies as st

from framework.errors import InterpolationError
from framework.interpolation import FILTERS, TemplateEngine
from framework.interpolation.filters import base64decode, base64encode, regex_search

ENGINE = TemplateEngine()


def render(source, **context):
    return ENGINE.render(source, context)


def test_filter_names_are_installed_and_builtins_are_kept():
    for name in FILTERS:
        assert name in ENGINE.environment.filters
    for builtin in ("upper", "join", "default", "tojson", "int", "first", "map", "replace"):
        assert builtin in ENGINE.environment.filters
    assert render("{{ 'a,b' | upper }}") == "A,B"
    assert render("{{ [1, 2] | join('-') }}") == "1-2"
    assert render("{{ config.nope | default('x') }}", config={}) == "x"


def test_hash_defaults_to_md5():
    assert render("{{ 'abc' | hash }}") == "900150983cd24fb0d6963f7d28e17f72"


def test_hash_types_and_salt():
    assert render("{{ 'abc' | hash('sha256') }}") == hashlib.sha256(b"abc").hexdigest()
    assert render("{{ 'abc' | hash('sha1', 'pepper') }}") == hashlib.sha1(b"abcpepper").hexdigest()
    assert render("{{ 123 | hash('md5') }}") == hashlib.md5(b"123").hexdigest()


def test_unknown_hash_type_is_a_clear_error():
    with pytest.raises(InterpolationError, match="unknown hash type 'md55'"):
        render("{{ 'abc' | hash('md55') }}")
    with pytest.raises(InterpolationError, match="unknown hash type"):
        render("{{ 'abc' | hash('new') }}")


def test_base64_round_trip():
    assert render("{{ 'user:pass' | base64encode }}") == "dXNlcjpwYXNz"
    assert render("{{ 'dXNlcjpwYXNz' | base64decode }}") == "user:pass"
    with pytest.raises(InterpolationError, match="not base64"):
        render("{{ 'abc' | base64decode }}")


@given(st.text())
def test_base64_round_trips_any_text(text):
    assert base64decode(base64encode(text)) == text


def test_base64binascii_decode_encodes_ascii_like_airbyte():
    assert render("{{ 'user:pass' | base64binascii_decode }}") == base64.b64encode(b"user:pass").decode()
    with pytest.raises(InterpolationError, match="ASCII"):
        render("{{ 'é' | base64binascii_decode }}")


def test_string_filter():
    assert render("{{ 'text' | string }}") == "text"
    assert render("{{ value | string }}", value={"a": [1, None]}) == '{"a": [1, null]}'
    assert render("{{ value | string }}", value=5) == "5"
    assert ENGINE.evaluate("{{ value | string }}", {"value": [1, 2]}, "any") == "[1, 2]"
    assert ENGINE.evaluate("{{ value | string }}", {"value": [1, 2]}, "object") == [1, 2]


def test_regex_search():
    assert render("{{ 'page=12&x' | regex_search('page=(\\\\d+)') }}") == "12"
    assert render("{{ 'abc123' | regex_search('\\\\d+') }}") == ""  # no group: nothing, as in Airbyte
    assert render("[{{ 'abc' | regex_search('\\\\d+') }}]") == "[]"
    assert ENGINE.evaluate("{{ 'abc' | regex_search('x') }}", {}, "any") is None
    assert regex_search("<a>; rel=next", r"<(.*)>") == "a"
    assert regex_search(123, r"(2)") == "2"
    assert regex_search("abc", r"b") is None
    with pytest.raises(InterpolationError, match="invalid regular expression"):
        render("{{ 'abc' | regex_search('(') }}")


def test_hmac_filter():
    expected = hmac.new(b"key", b"message", hashlib.sha256).hexdigest()
    assert render("{{ 'message' | hmac('key') }}") == expected
    with pytest.raises(InterpolationError, match="not allowed"):
        render("{{ 'message' | hmac('key', 'md5') }}")


def test_guarded_builtin_filters_still_work():
    assert render("[{{ 'ab' | center(6) }}]") == "[  ab  ]"
    assert render("{{ 'a\nb' | indent(2) }}") == "a\n  b"
    assert render("{{ '%s-%s' | format(1, 2) }}") == "1-2"
    assert render("{{ 'aXbX' | replace('X', '-') }}") == "a-b-"
    assert render("{{ [1, 2, 3, 4] | slice(2) | list }}") == "[[1, 2], [3, 4]]"


def test_regex_replace():
    assert render("{{ 'hello world' | regex_replace('world', 'universe') }}") == "hello universe"
    assert render("{{ 'a1b22' | regex_replace('(\\\\d+)', '<\\\\1>') }}") == "a<1>b<22>"
    assert render("{{ 'ab' | regex_replace('(?P<x>a)', '\\\\g<x>\\\\g<x>') }}") == "aab"
    assert render("{{ 'abc' | regex_replace('', '-') }}") == "-a-b-c-"
    with pytest.raises(InterpolationError, match="invalid regular expression"):
        render("{{ 'abc' | regex_replace('(', 'x') }}")
    with pytest.raises(InterpolationError, match="invalid replacement"):
        render("{{ 'abc' | regex_replace('b', '\\\\9') }}")


def test_string_keeps_non_ascii_text():
    assert ENGINE.evaluate("{{ record | string }}", {"record": {"n": "é"}}, "any") == '{"n": "é"}'
