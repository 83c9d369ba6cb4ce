"""framework.interpolation.loop_sizes: the loops whose steps a template leaves unbounded or puts past the render
budget, told from the template alone (what validate-manifest warns of)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from framework.interpolation.analysis import analyze_template
from framework.interpolation.environment import build_environment
from framework.interpolation.loop_sizes import loop_warnings
from framework.interpolation.render_budget import MAX_STEPS
from framework.temporal.clock import SystemClock

ENV = build_environment(SystemClock())


def warnings(source: str) -> list[tuple[int, str]]:
    return loop_warnings(ENV.parse(source))


@pytest.mark.parametrize(("source", "read"), [
    ("{% for a in 'x' * config['n'] %}{% endfor %}", "`config['n']`"),
    ("{% for a in [0] * (config.pages | int) %}{% endfor %}", "`config['pages']`"),
    ("{% for a in range(stream_slice['count']) %}{% endfor %}", "`stream_slice['count']`"),
])
def test_a_loop_repeated_by_a_value_read_at_run_time_is_unbounded(source: str, read: str) -> None:
    [(line, message)] = warnings(source)
    assert line == 1 and f"length comes from {read} at run time" in message


def test_nested_loops_past_the_budget_are_told_once_at_the_loop_that_passes_it() -> None:
    source = ("{% for a in 'x' * 1000 %}\n{% for b in [1, 2] %}\n{% for c in 'x' * 1000 %}{% endfor %}"
              "{% endfor %}{% endfor %}")
    assert warnings(source) == [(3, "nested loops of 2,000,000 steps in all: past the render budget of "
                                    "1,000,000 steps, so the template can never render")]


@pytest.mark.parametrize("source", [
    "{% for item in config['items'] %}{% for b in [1, 2, 3] %}{% endfor %}{% endfor %}",  # the data's size
    "{% for a in [1, 2] %}{% for b in 'x' * 1000 %}{% endfor %}{% endfor %}",
    "{{ 'x' * config['n'] }}",  # no loop
])
def test_loops_of_known_small_or_the_datas_size_are_left_alone(source: str) -> None:
    assert warnings(source) == []


@given(st.lists(st.integers(min_value=0, max_value=2000), min_size=1, max_size=4))
def test_constant_nested_loops_are_told_exactly_when_their_product_passes_the_budget(sizes: list[int]) -> None:
    source = "".join(f"{{% for v{n} in 'x' * {size} %}}" for n, size in enumerate(sizes)) + "{% endfor %}" * len(sizes)
    product = 1
    passed = False
    for size in sizes:
        product *= size
        passed = passed or product > MAX_STEPS
    assert bool(warnings(source)) is passed


def test_the_analysis_carries_them_as_warnings() -> None:
    info = analyze_template("{% for a in 'x' * config['n'] %}{% endfor %}")
    assert info.ok
    [problem] = info.loops
    assert (problem.code, problem.severity) == ("template-loop-budget", "warning")
    assert problem in info.problems
