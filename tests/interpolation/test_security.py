import pytest

from framework.errors import InterpolationError
from framework.interpolation import TemplateEngine

ENGINE = TemplateEngine()
CONTEXT = {"config": {"api_key": "k", "_id": 7}, "record": {"_id": "r1"}}


@pytest.mark.parametrize(
    "source",
    [
        "{{ ''.__class__.__mro__ }}",
        "{{ ''.__class__.__mro__[1].__subclasses__() }}",
        "{{ config.__class__ }}",
        "{{ config['__class__'] }}",
        "{{ cycler.__init__.__globals__ }}",
        "{{ now_utc.__globals__ }}",
        "{{ self }}",
        "{{ self._TemplateReference__context }}",
        "{{ config | attr('__class__') }}",
        "{{ config | attr('_' * 2 ~ 'class' ~ '_' * 2) }}",
        "{% for x in [1] %}{{ loop._iterator }}{% endfor %}",
        "{% for x in [1] %}{{ loop | attr('_after') }}{% endfor %}",
        "{{ config.update({'a': 1}) }}",
        "{{ config['items'] }}{{ [1].append(2) }}",
        "{{ config.pop('api_key') }}",
        "{% include 'other' %}",
        "{% extends 'base' %}",
        "{% import 'macros' as m %}",
        "{% from 'macros' import x %}",
    ],
)
def test_reaching_for_internals_is_not_allowed(source):
    with pytest.raises(InterpolationError) as info:
        ENGINE.render(source, CONTEXT)
    message = str(info.value)
    assert "not allowed" in message
    assert info.value.kind == "security"
    assert "<class" not in message and "<function" not in message
    assert info.value.template == source


def test_range_is_not_a_global_as_in_airbyte():
    assert "range" not in ENGINE.environment.globals
    with pytest.raises(InterpolationError, match="unknown variable `range`"):
        ENGINE.render("{{ range(10) | list }}", CONTEXT)


@pytest.mark.parametrize("name", ["dict", "lipsum", "cycler", "joiner", "namespace"])
def test_jinja_globals_airbyte_keeps_are_there(name):
    assert name in ENGINE.environment.globals


def test_lipsum_refuses_a_huge_text():
    with pytest.raises(InterpolationError, match="resource limit"):
        ENGINE.render("{{ lipsum(100000) }}", CONTEXT)
    assert len(ENGINE.render("{{ lipsum(1, false, 3, 5) }}", CONTEXT).split()) <= 5


def test_regex_replace_refuses_a_quadratic_result():
    with pytest.raises(InterpolationError, match="resource limit"):
        ENGINE.render("{{ ('x' * 5000) | regex_replace('(?=(x*))', '\\\\1') }}", CONTEXT)


def test_config_is_not_mutated_by_templates():
    context = {"config": {"a": 1}}
    with pytest.raises(InterpolationError):
        ENGINE.render("{{ config.setdefault('b', 2) }}", context)
    assert context == {"config": {"a": 1}}


def test_underscore_keys_of_mappings_are_plain_data():
    assert ENGINE.render("{{ record._id }}/{{ record['_id'] }}/{{ config._id }}", CONTEXT) == "r1/r1/7"


@pytest.mark.parametrize(
    "source",
    [
        "{{ 'x' * 100000000 }}",
        "{{ [1] * 100000000 }}",
        "{{ 100000000 * 'x' }}",
        "{{ 10 ** 100000000 }}",
        "{{ '%999999999d' % 1 }}",
        "{{ '%*d' % (999999999, 1) }}",
        "{{ '{:>999999999}'.format(1) }}",
        "{{ '{:>{w}}'.format(1, w=999999999) }}",
        "{{ 'a'.ljust(999999999) }}",
        "{{ 'a'.center(999999999) }}",
        "{{ 'a'.zfill(999999999) }}",
        "{{ ('\t' * 1000).expandtabs(999999) }}",
        "{{ ('x' * 100000).replace('', 'yyyyyyyyyyy') }}",
        "{{ 'a' | center(999999999) }}",
        "{{ 'a' | indent(999999999) }}",
        "{{ '%999999999s' | format('x') }}",
        "{{ ('x' * 100000) | replace('', 'yyyyyyyyyyy') }}",
        "{{ [1] | slice(999999999) | list }}",
        "{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}",
    ],
)
def test_resource_hungry_templates_are_refused(source):
    with pytest.raises(InterpolationError) as info:
        ENGINE.render(source, CONTEXT)
    assert info.value.kind == "limit"


def test_reasonable_sizes_are_allowed():
    assert len(ENGINE.render("{{ 'x' * 1000 }}", {})) == 1000
    assert ENGINE.render("{{ 2 ** 10 }}", {}) == "1024"
    assert ENGINE.render("{{ '%05d' % 42 }}", {}) == "00042"
    assert ENGINE.render("{{ '{:>4}'.format(1) }}", {}) == "   1"
    assert ENGINE.render("{{ 'id=1234567 %s' % 'x' }}", {}) == "id=1234567 x"


def test_errors_never_show_jinja_internals_for_unsafe_callables():
    with pytest.raises(InterpolationError) as info:
        ENGINE.render("{{ config.clear() }}", {"config": {"a": 1}})
    assert "not allowed" in str(info.value)
