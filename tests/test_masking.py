"""The one masking rule: secrets become ``****``, longest first; credentials in their URL spellings too."""

from __future__ import annotations

import pytest

from framework.masking import MASKED, Masker, credential_spellings, masking_credentials


def test_longest_secret_is_masked_whole():
    assert Masker.of(["abc", "abcdef", ""])("x abcdef y abc") == f"x {MASKED} y {MASKED}"


def test_masker_is_immutable_and_combining_makes_a_new_one():
    config = Masker.of(["hunter2"])
    both = config.with_credentials(["to/ken"])
    assert config("hunter2 to/ken") == "**** to/ken"
    assert both("hunter2 to/ken to%2Fken") == "**** **** ****"
    with pytest.raises(AttributeError, match="immutable"):
        config.secrets = ()  # type: ignore[misc]


def test_config_secrets_are_masked_as_given_credentials_also_url_encoded():
    assert Masker.of(["a b"])("a+b a%20b a b") == "a+b a%20b ****"
    assert credential_spellings("a b") == ("a b", "a%20b", "a+b")
    # stripped (a value written with `echo`), and escaped as repr and JSON show a line break
    assert credential_spellings("t0k\n") == ("t0k\n", "t0k\\n", "t0k%0A", "t0k")
    assert Masker().with_credentials(["a b"])("a+b a%20b a b") == "**** **** ****"


class _Tokens:
    def __init__(self) -> None:
        self.current = ("first",)

    def secrets(self) -> tuple[str, ...]:
        return self.current


def test_masking_credentials_reads_them_when_masking_then_applies_the_config_mask():
    tokens = _Tokens()
    mask = masking_credentials(tokens, Masker.of(["cfg"]))
    tokens.current = ("second",)
    assert mask("first second cfg") == "first **** ****"


def test_a_short_secret_is_masked_only_where_it_stands_alone_and_named_by_its_field():
    mask = Masker.of(["a", "7x"], names=[("a", "config.pin")])
    assert mask("a request to /accounts failed: a") == "a request to /accounts failed: a".replace(
        "a request", "<secret config.pin> request").replace("failed: a", "failed: <secret config.pin>")
    assert mask("code 7x, x7xy, ab") == "code ****, x7xy, ab"  # no field known: ****; never inside a word
    assert mask.with_credentials(["tok-long"])("a tok-long") == "<secret config.pin> ****"


def test_a_short_config_secret_is_named_by_its_field_in_messages():
    from framework.manifest.config_check import secret_names

    schema = {"type": "object", "properties": {"auth": {"type": "object", "properties": {
        "pin": {"type": "string", "airbyte_secret": True}}}, "key": {"type": "string", "airbyte_secret": True}}}
    names = secret_names(schema, {"auth": {"pin": "q"}, "key": "long-enough"})
    assert ("q", "config.auth.pin") in names and all(value != "long-enough" for value, _ in names)
    assert Masker.of(["q", "long-enough"], names)("unique q long-enough") == "unique <secret config.auth.pin> ****"
