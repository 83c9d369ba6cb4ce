"""framework.interpolation.render_budget: a rendering's loop steps, their time and its concatenations are
bounded, whatever the template does (nested loops of 10^12 steps, a string doubled in a loop)."""

from __future__ import annotations

import threading
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from framework.components.context import BuildContext
from framework.components.http.transport import FunctionTransport
from framework.errors import InterpolationError, ReadError
from framework.interpolation import render_budget
from framework.interpolation.environment import TemplateEngine
from framework.interpolation.limits import TemplateLimitError
from framework.models import HttpRequester

NESTED = "{% for a in 'x' * 1000000 %}{% for b in 'x' * 1000000 %}{% endfor %}{% endfor %}"
DOUBLING = "{% set ns = namespace(s='x') %}{% for i in 'x' * 40 %}{% set ns.s = ns.s OP ns.s %}{% endfor %}{{ ns.s }}"


def _refused(source: str, match: str, result: str = "string") -> float:
    started = time.monotonic()
    with pytest.raises(InterpolationError, match=match) as caught:
        TemplateEngine().evaluate(source, {}, result)
    assert caught.value.kind == "limit"  # type: ignore[attr-defined]
    return time.monotonic() - started


def test_nested_loops_of_a_trillion_steps_stop_at_the_budget_at_once() -> None:
    assert _refused(NESTED, r"exceeds a resource limit: its loops ran more than 1,000,000 steps") < 5


@pytest.mark.parametrize("operator", ["~", "+"])
def test_a_string_doubled_in_a_loop_stops_at_the_size_limit(operator: str) -> None:
    _refused(DOUBLING.replace("OP", operator), r"would be 1,048,576 long; the limit is 1,000,000")


def test_a_list_grown_by_plus_in_an_expression_is_refused_before_it_is_built() -> None:
    _refused("{{ ('x' * 1000000) | list + ['y'] }}", "a joined value would be 1,000,001 long", "any")


def test_the_steps_of_every_rendering_start_from_nothing() -> None:
    engine = TemplateEngine()
    source = "{% for a in 'x' * 600000 %}{% endfor %}done"
    assert [engine.render(source, {}) for _ in range(3)] == ["done"] * 3  # 1.8 million steps in all


def test_each_thread_renders_with_its_own_budget() -> None:
    engine = TemplateEngine()
    results: list[str] = []
    source = "{% for a in 'x' * 700000 %}{% endfor %}ok"
    threads = [threading.Thread(target=lambda: results.append(engine.render(source, {}))) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == ["ok", "ok"]


def test_the_time_budget_stops_slow_steps() -> None:
    budget = render_budget.RenderBudget(max_steps=10 ** 9, max_seconds=0.05)

    def slow():
        while True:
            time.sleep(0.0005)
            yield 1

    with pytest.raises(TemplateLimitError, match="longer than 0.05 s"):
        for _ in budget.steps(slow()):
            pass


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=50), min_size=1, max_size=3))
def test_loops_within_the_budget_render_as_jinja_renders_them(sizes: list[int]) -> None:
    source = "".join(f"{{% for i{n} in range({size}) %}}" for n, size in enumerate(sizes)) + "x" + \
        "{% endfor %}" * len(sizes)
    product = 1
    for size in sizes:
        product *= size
    engine = TemplateEngine()
    rendered = engine.render(source, {"range": range})
    assert rendered == "x" * product


def test_a_requester_names_its_manifest_place_when_a_template_is_over_budget() -> None:
    model = HttpRequester.model_validate({"type": "HttpRequester", "url_base": "https://api.example.com",
                                          "path": NESTED})
    ctx = BuildContext(config={}, transport=FunctionTransport(lambda request: (200, {}, {})),
                       locate=lambda path: "manifest.yaml:12:7")
    requester = ctx.build(model, ("definitions", "requester"))
    with pytest.raises(ReadError, match=r"loops ran more than 1,000,000 steps.*manifest\.yaml:12:7") as caught:
        requester.parts({})
    assert caught.value.place == "manifest.yaml:12:7"
