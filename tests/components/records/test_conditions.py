"""framework.components.records.conditions: a condition decided at build time where it has no markup."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from framework.components.records.conditions import Condition
from framework.interpolation import TemplateEngine
from framework.interpolation.conversions import truthy

ENGINE = TemplateEngine()


@given(st.text(alphabet=st.characters(blacklist_characters="{}%#"), max_size=12))
def test_a_condition_without_markup_is_decided_once(text: str) -> None:
    condition = Condition.of(text, ENGINE)
    if not text.strip() or truthy(text):
        assert condition is None  # always holds: nothing to evaluate per value
    else:
        assert condition == Condition(text, never=True)
        assert not condition.holds(ENGINE, {}, 1)


def test_a_template_condition_sees_the_value_as_property_and_value() -> None:
    condition = Condition.of("{{ property > 1 }}", ENGINE)
    assert condition is not None and not condition.never
    assert condition.holds(ENGINE, {}, 2) and not condition.holds(ENGINE, {}, 1)
    added = Condition.of("{{ value == 'x' and path == ['a', 'b'] }}", ENGINE)
    assert added is not None and added.holds_for_field(ENGINE, {}, "x", ("a", "b"))
