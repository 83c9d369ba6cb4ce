"""Renderings turned into their result types (framework/interpolation/conversions.py)."""

from __future__ import annotations

from framework.interpolation import TemplateEngine
from framework.interpolation.conversions import unquoted


def test_a_rendering_that_is_one_quoted_string_literal_is_that_string_as_airbyte_reads_it() -> None:
    engine = TemplateEngine()
    url = '"https://{{ "sandbox" if config.sandbox else "api" }}.example.test/v1/"'
    assert engine.evaluate(url, {"config": {"sandbox": False}}) == "https://api.example.test/v1/"
    assert engine.evaluate("'{{ config.a }}'", {"config": {"a": "x"}}) == "x"
    assert engine.evaluate('"{{ config.a }}" and more', {"config": {"a": "x"}}) == '"x" and more'
    assert engine.evaluate('"{{ config.a }}\'', {"config": {"a": "x"}}) == '"x\''  # not one literal
    assert engine.evaluate('"plain"', {}) == '"plain"'  # text without markup is never read
    assert unquoted('"a\\tb"') == "a\tb" and unquoted("'") == "'" and unquoted("") == ""
