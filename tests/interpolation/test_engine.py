from datetime import datetime, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from framework.errors import InterpolationError
from framework.interpolation import FALSE_TEXTS, RESULT_TYPES, VARIABLES, TemplateEngine
from framework.temporal.clock import FixedClock

NOW = datetime(2024, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
CONTEXT = {
    "config": {
        "n": 5,
        "f": 2.5,
        "s": "7",
        "text": "hello",
        "obj": {"a": 1, "b": [1, 2]},
        "list": [1, 2, 3],
        "flag": False,
        "none": None,
    },
    "parameters": {"name": "users"},
    "stream_slice": {"start": "2024-01-01", "end": "2024-01-31"},
}

ENGINE = TemplateEngine(FixedClock(NOW))


def evaluate(source, result="string", context=CONTEXT):
    return ENGINE.evaluate(source, context, result)


# -- rendering ----------------------------------------------------------------


def test_render_interpolates_the_context():
    assert ENGINE.render("/{{ parameters.name }}/{{ config['n'] }}", CONTEXT) == "/users/5"
    assert ENGINE.render("{% if config.n > 3 %}big{% else %}small{% endif %}", CONTEXT) == "big"


def test_text_without_markup_is_returned_unchanged():
    source = "just { text } with braces"
    assert ENGINE.render(source, CONTEXT) is source
    assert ENGINE.compile(source).is_template is False
    assert ENGINE.compile(source).template is None


def test_missing_keys_are_empty_and_chain():
    assert ENGINE.render("[{{ config['nope'] }}]", CONTEXT) == "[]"
    assert ENGINE.render("[{{ config.nope.deeper['x'] }}]", CONTEXT) == "[]"
    assert evaluate("{{ config['nope'] }}", "any") is None


@pytest.mark.parametrize("source", ["{{ config['nope']['x'] }}", "{{ config.nope.x }}",
                                    "{{ config.nope['x'] | default('d') }}", "{{ config['obj']['c']['d'] }}"])
def test_strict_lookups_fail_on_a_lookup_through_a_missing_key(source):
    with pytest.raises(InterpolationError) as info:
        ENGINE.evaluate(source, CONTEXT, "any", strict_lookups=True)
    assert info.value.kind == "undefined"
    assert "nope" in str(info.value) or "'c'" in str(info.value)
    assert evaluate(source, "any") in (None, "d")  # the same template without: undefined, and chained


@pytest.mark.parametrize("source, expected", [
    ("{{ config['nope'] }}", None), ("{{ config.get('nope', {}).get('x') }}", None),
    ("{{ config['obj']['a'] }}", 1), ("{{ config['obj']['c'] }}", None), ("{{ config['nope'] is defined }}", False),
    ("{{ config['none']['x'] }}", None),  # a lookup on null is undefined (Jinja's), the next one would fail
])
def test_strict_lookups_allow_one_missing_level(source, expected):
    assert ENGINE.evaluate(source, CONTEXT, "any", strict_lookups=True) == expected


def test_strict_lookups_end_with_the_evaluation():
    with pytest.raises(InterpolationError):
        ENGINE.evaluate("{{ config.nope.x }}", CONTEXT, "any", strict_lookups=True)
    assert evaluate("{{ config.nope.x }}", "any") is None


def test_known_variables_the_caller_did_not_supply_are_undefined():
    assert ENGINE.render("[{{ next_page_token }}]", CONTEXT) == "[]"
    assert evaluate("{{ next_page_token['cursor'] }}", "any") is None


def test_none_renders_as_empty_text():
    assert ENGINE.render("[{{ config.none }}]", CONTEXT) == "[]"
    assert evaluate("{{ config.none }}") == ""


def test_unknown_top_level_name_is_an_error_with_a_suggestion():
    with pytest.raises(InterpolationError) as info:
        ENGINE.render("{{ confg['n'] }}", CONTEXT)
    assert "unknown variable `confg`" in str(info.value)
    assert "did you mean `config`?" in str(info.value)
    assert info.value.template == "{{ confg['n'] }}"
    assert info.value.kind == "unknown-name"


def test_extra_context_names_are_allowed():
    assert ENGINE.render("{{ custom }}", {"custom": "ok"}) == "ok"


def test_stream_interval_and_partition_alias_the_slice():
    assert ENGINE.render("{{ stream_interval.start }}|{{ stream_partition.end }}", CONTEXT) == (
        "2024-01-01|2024-01-31"
    )
    explicit = dict(CONTEXT, stream_interval={"start": "other"})
    assert ENGINE.render("{{ stream_interval.start }}", explicit) == "other"


def test_operating_on_an_undefined_value_is_an_error():
    with pytest.raises(InterpolationError) as info:
        ENGINE.render("{{ config.nope + 1 }}", CONTEXT)
    assert info.value.kind == "undefined"
    assert "nope" in str(info.value)


def test_runtime_errors_name_the_template_and_the_cause():
    with pytest.raises(InterpolationError) as info:
        ENGINE.render("{{ 1 / 0 }}", CONTEXT)
    assert "`{{ 1 / 0 }}`" in str(info.value)
    assert "ZeroDivisionError" in str(info.value)
    assert info.value.kind == "runtime"


def test_syntax_errors_name_the_line():
    with pytest.raises(InterpolationError) as info:
        ENGINE.compile("line one\n{{ config[ }}")
    assert "line 2" in str(info.value)
    assert info.value.kind == "syntax"


def test_unknown_filter_fails_at_compile_time_with_suggestion():
    with pytest.raises(InterpolationError, match="did you mean `upper`"):
        ENGINE.compile("{{ config.text | uper }}")


def test_output_size_is_bounded():
    small = TemplateEngine(FixedClock(NOW), max_output_chars=10)
    assert small.render("{{ config.text }}", CONTEXT) == "hello"
    with pytest.raises(InterpolationError) as info:
        small.render("{% for i in config.list %}{{ config.text }}{% endfor %}", CONTEXT)
    assert info.value.kind == "limit"
    with pytest.raises(InterpolationError):
        small.evaluate("{{ config.text ~ config.text ~ config.text }}", CONTEXT, "any")


# -- caching ------------------------------------------------------------------


def test_each_source_is_compiled_once():
    engine = TemplateEngine(FixedClock(NOW))
    source = "{{ config['n'] + 1 }}"
    compiled = engine.compile(source)
    for _ in range(5):
        assert engine.render(source, CONTEXT) == "6"
        assert engine.evaluate(source, CONTEXT, "integer") == 6
    assert engine.compile(source) is compiled
    info = engine.cache_info()
    assert info.misses == 1
    assert info.hits == 11
    assert info.currsize == 1
    engine.render("{{ config['n'] }}", CONTEXT)
    assert engine.cache_info().currsize == 2
    engine.cache_clear()
    assert engine.cache_info().currsize == 0


def test_cache_is_bounded():
    engine = TemplateEngine(cache_size=2)
    for i in range(5):
        engine.render(f"{{{{ {i} }}}}", {})
    assert engine.cache_info().currsize == 2


def test_compile_rejects_non_text():
    with pytest.raises(InterpolationError, match="must be text"):
        ENGINE.compile(5)  # type: ignore[arg-type]


# -- typed evaluation -----------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "result", "expected"),
    [
        ("{{ config['n'] }}", "integer", 5),
        ("{{ config['s'] }}", "integer", 7),
        ("{{ config['n'] * 2.0 }}", "integer", 10),
        (" {{ config['n'] }} ", "integer", 5),
        ("{{ config['n'] }}0", "integer", 50),
        ("42", "integer", 42),
        ("{{ config.f }}", "number", 2.5),
        ("{{ config.n }}", "number", 5),
        ("{{ config.s }}", "number", 7),
        ("1e3", "number", 1000.0),
        ("{{ config.obj }}", "object", {"a": 1, "b": [1, 2]}),
        ("{{ config.list }}", "object", [1, 2, 3]),
        ('{"a": "{{ config.text }}"}', "object", {"a": "hello"}),
        ("{'a': {{ config.n }}}", "object", {"a": 5}),
        ("{{ config.n }}", "string", "5"),
        ("{{ config.obj }}", "string", "{'a': 1, 'b': [1, 2]}"),
        ("{{ config.n }}", "any", 5),
        ("{{ config.s }}", "any", 7),
        ("{{ config.text }}", "any", "hello"),
        ("{{ config.obj }}", "any", {"a": 1, "b": [1, 2]}),
        ("{{ config.flag }}", "any", False),
        ("{{ stream_slice.start }}", "any", "2024-01-01"),
        ("n={{ config.n }}", "any", "n=5"),
        ("[{{ config.n }}, 2]", "any", [5, 2]),
        ("100", "any", 100),
        ("", "any", None),
        ("{{ now_utc() }}", "any", "2024-01-02 03:04:05+00:00"),
        ("{{ '1j' }}", "any", "1j"),
    ],
)
def test_typed_evaluation(source, result, expected):
    value = evaluate(source, result)
    assert value == expected
    assert type(value) is type(expected)


@pytest.mark.parametrize(
    ("source", "result"),
    [
        ("{{ config.text }}", "integer"),
        ("{{ config.f }}", "integer"),
        ("2.5", "integer"),
        ("{{ config.flag }}", "integer"),
        ("{{ config.nope }}", "integer"),
        ("", "integer"),
        ("{{ config.text }}", "number"),
        ("{{ config.flag }}", "number"),
        ("nan", "number"),
        ("{{ config.text }}", "object"),
        ("{{ config.n }}", "object"),
        ("None", "object"),
        ("", "object"),
    ],
)
def test_typed_evaluation_errors(source, result):
    with pytest.raises(InterpolationError) as info:
        evaluate(source, result)
    assert info.value.kind == "conversion"
    assert f"must evaluate to {result}" in str(info.value)


def test_conversion_errors_do_not_show_the_value():
    with pytest.raises(InterpolationError) as info:
        evaluate("{{ config.secret }}", "integer", {"config": {"secret": "hunter2"}})
    assert "hunter2" not in str(info.value)


def test_unknown_result_type():
    with pytest.raises(InterpolationError, match="unknown result type"):
        evaluate("{{ 1 }}", "float")
    assert set(RESULT_TYPES) == {"string", "integer", "number", "boolean", "object", "any"}


@pytest.mark.parametrize("text", sorted(FALSE_TEXTS))
def test_false_texts(text):
    assert evaluate(text, "boolean") is False
    assert evaluate("{{ value }}", "boolean", {"value": text}) is False
    assert evaluate(" {{ value }} ", "boolean", {"value": text}) is False


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, False),
        (False, False),
        (True, True),
        (0, False),
        (0.0, False),
        (3, True),
        ([], False),
        ({}, False),
        ([0], True),
        ({"a": 1}, True),
        ("00", False),
        ("0e0", False),
        ("''", False),
        ("no", True),
        ("FALSE", True),
        ("x", True),
    ],
)
def test_boolean_rules(value, expected):
    assert evaluate("{{ value }}", "boolean", {"value": value}) is expected


def test_boolean_expressions():
    assert evaluate("{{ config.n > 3 }}", "boolean") is True
    assert evaluate("{{ config.n > 30 }}", "boolean") is False
    assert evaluate("{{ config.nope }}", "boolean") is False
    assert evaluate("{{ not config.list }}", "boolean") is False
    assert evaluate("true", "boolean") is True


def test_string_filter_output_stays_text_for_any():
    assert evaluate("{{ config.obj | string }}", "any") == '{"a": 1, "b": [1, 2]}'


@given(st.integers(min_value=-(10**18), max_value=10**18))
def test_native_integers_survive_without_rounding(number):
    assert ENGINE.evaluate("{{ config['v'] }}", {"config": {"v": number}}, "integer") == number
    assert ENGINE.evaluate("{{ config['v'] }}", {"config": {"v": number}}, "any") == number


@given(st.text(max_size=30))
def test_boolean_evaluation_of_any_text_never_fails(text):
    assert ENGINE.evaluate("{{ v }}", {"v": text}, "boolean") in (True, False)


@given(st.text(alphabet=st.characters(blacklist_characters="{}%#"), max_size=40))
def test_markup_free_text_is_returned_as_is(text):
    assert ENGINE.render(text, {}) == text
    assert ENGINE.evaluate(text, {}, "string") == text


def test_variables_constant():
    assert "config" in VARIABLES and "stream_state" in VARIABLES and "property" in VARIABLES
    assert len(VARIABLES) == len(set(VARIABLES)) == 19
