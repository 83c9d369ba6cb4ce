import pytest

from framework.interpolation import TemplateInfo, analyze_template
from framework.interpolation.analysis import TemplateProblem


def test_plain_text_is_not_a_template():
    info = analyze_template("just text")
    assert info == TemplateInfo(is_template=False)
    assert info.problems == () and info.ok


def test_variables_exclude_macros_and_loop_locals():
    info = analyze_template(
        "{% for r in response['items'] %}{{ r.id }}{{ loop.index }}{% endfor %}"
        "{{ format_datetime(now_utc(), '%Y') }}{{ config.a }}{% set x = 1 %}{{ x }}"
    )
    assert info.is_template
    assert info.variables == frozenset({"response", "config"})
    assert info.unknown_names == frozenset()
    assert info.ok


def test_unknown_names_with_suggestion():
    info = analyze_template("{{ config.a }}\n{{ confg.b }} {{ zzz }}")
    assert info.variables == frozenset({"config", "confg", "zzz"})
    assert info.unknown_names == frozenset({"confg", "zzz"})
    problems = [p for p in info.problems if p.code == "unknown-variable"]
    assert [(p.line, p.column) for p in problems] == [(2, 4), (2, 18)]
    assert problems[0].message == "unknown variable `confg`; did you mean `config`?"
    assert problems[0].fix == "replace `confg` with `config`"
    assert problems[1].fix is None
    assert not info.ok


@pytest.mark.parametrize(
    ("source", "line", "column"),
    [
        ("{{ config[ }}", 1, 1),
        ("a\nb\nc {{ x + }}", 3, 3),
        ("{{ x !! }}", 1, 6),
        ("line\n{% for x in config %}", 2, 22),
        ("{{ 'unterminated }}", 1, 4),
    ],
)
def test_syntax_errors_have_lines(source, line, column):
    info = analyze_template(source)
    problem = info.syntax_error
    assert isinstance(problem, TemplateProblem)
    assert problem.code == "template-syntax"
    assert (problem.line, problem.column) == (line, column)
    starts = [0] + [i + 1 for i, ch in enumerate(source) if ch == "\n"]
    assert problem.offset == starts[line - 1] + column - 1
    assert info.variables == frozenset()
    assert info.problems == (problem,)


def test_unknown_filters_and_tests_with_suggestions():
    second = "{{ config.b | uppr }} {{ 1 is od }}{{ x | zzz_filter }}"
    info = analyze_template("{{ config.a }}\n" + second)
    codes = [(p.code, p.line, p.column) for p in info.unknown_filters]
    assert codes == [
        ("unknown-filter", 2, second.index("| uppr") + 1),
        ("unknown-test", 2, second.index("is od") + 1),
        ("unknown-filter", 2, second.index("| zzz") + 1),
    ]
    assert info.unknown_filters[0].message == "unknown filter `uppr`; did you mean `upper`?"
    assert info.unknown_filters[1].message == "unknown test `od`; did you mean `odd`?"
    assert info.unknown_filters[2].fix is None
    # Names are still analysed although the template cannot compile.
    assert info.variables == frozenset({"config", "x"})


def test_custom_filters_are_known():
    info = analyze_template("{{ config.a | hash('sha256') | base64encode | regex_search('x') }}")
    assert info.unknown_filters == ()


def test_private_access_is_reported():
    info = analyze_template(
        "{{ record._id }}{{ ''.__class__.__mro__ }}{{ config['_secret'] }}{{ x | attr('_y') }}"
    )
    assert set(info.private_access) == {"_id", "__class__", "__mro__", "_secret", "_y"}
    forbidden = {p.message for p in info.forbidden}
    assert any("`__class__`" in m for m in forbidden)
    assert any("`__mro__`" in m for m in forbidden)
    warnings = [p for p in info.problems if p.code == "private-access"]
    assert {p.severity for p in warnings} == {"warning"}
    assert len(warnings) == 3


def test_forbidden_constructs():
    info = analyze_template("{{ self }}\n{% include 'x' %}")
    assert [(p.code, p.line, p.column) for p in info.forbidden] == [
        ("forbidden-construct", 1, 4),
        ("forbidden-construct", 2, 4),
    ]
    assert "not allowed" in info.forbidden[0].message


def test_deprecated_stream_state_is_a_warning():
    info = analyze_template("{{ stream_state.get('updated_at') }}")
    assert info.deprecated_names == frozenset({"stream_state"})
    assert info.unknown_names == frozenset()
    (problem,) = info.problems
    assert problem.code == "deprecated-variable" and problem.severity == "warning"
    assert info.ok


def test_analysis_does_not_render():
    info = analyze_template("{{ 1 / 0 }}{{ 'x' * 10**12 }}")
    assert info.variables == frozenset()  # 1 / 0 is never evaluated; the huge value is seen, not built
    assert [p.code for p in info.problems] == ["template-too-large"]


def test_problems_are_sorted_by_position():
    info = analyze_template("{{ zz }} {{ a | nope }} {{ self }}")
    offsets = [p.offset for p in info.problems]
    assert offsets == sorted(offsets)
    assert len(offsets) == 4  # zz, a, nope, self


def test_results_are_cached():
    source = "{{ config.cached }}"
    assert analyze_template(source) is analyze_template(source)


def test_constants_too_large_for_the_run_time_limits_are_found_without_building_them():
    import time

    from framework.interpolation.analysis import analyze_template as analyse

    started = time.perf_counter()
    for source in ("{{ 'a' * 10**9 }}", "{{ 2 ** 1000000 }}", "{{ ('ab' * 1000) * 1000 }}", "{{ '%999999999d' % 1 }}"):
        info = analyse(source)
        assert [p.code for p in info.forbidden] == ["template-too-large"], source
        assert "too large a value" in info.forbidden[0].message
    assert time.perf_counter() - started < 1.0  # folded with the limits checked first: nothing large is built
    for fine in ("{{ 'a' * 3 }}", "{{ 2 ** 10 }}", "{{ config.n * 10**9 }}", "{{ '%5d' % 3 }}"):
        assert analyse(fine).forbidden == (), fine
