"""Jinja interpolation for manifest templates.

``TemplateEngine`` renders and evaluates templates in a hardened sandbox;
``analyze_template`` checks one statically. The names a template may use are
listed in ``VARIABLES`` (context variables), ``MACROS`` (Airbyte's callable globals),
``GLOBALS`` (the macros and the Jinja globals Airbyte keeps) and ``FILTERS`` (filters
added to Jinja's built-in ones).
"""

from framework.interpolation.analysis import TemplateInfo, TemplateProblem, analyze_template
from framework.interpolation.conversions import FALSE_TEXTS, RESULT_TYPES, ResultType, truthy
from framework.interpolation.environment import CompiledTemplate, TemplateEngine
from framework.interpolation.filters import FILTERS
from framework.interpolation.macros import GLOBALS, MACROS
from framework.interpolation.variables import ALIASES, DEPRECATED_VARIABLES, VARIABLES

__all__ = [
    "ALIASES",
    "CompiledTemplate",
    "DEPRECATED_VARIABLES",
    "FALSE_TEXTS",
    "FILTERS",
    "GLOBALS",
    "MACROS",
    "RESULT_TYPES",
    "ResultType",
    "TemplateEngine",
    "TemplateInfo",
    "TemplateProblem",
    "VARIABLES",
    "analyze_template",
    "truthy",
]
