"""The template engine: one sandboxed Jinja environment, compiled-template cache,
rendering and typed evaluation.

Behaviour a manifest author sees:

* Text without ``{{``, ``{%`` or ``{#`` is not a template: it is returned as is
  (converted to the declared result type) without touching Jinja.
* A top-level name that is neither supplied in the context, nor one of
  :data:`VARIABLES`, nor a macro is an error. A known variable that the caller
  did not supply, a missing mapping key (``config['nope']``) or a missing
  attribute is *undefined*: it renders as ``""``, evaluates to ``None``, and
  further lookups on it (``config['a']['b']``) stay undefined. Doing arithmetic
  on or calling an undefined value is an error.
* With ``strict_lookups`` (:meth:`TemplateEngine.evaluate`; a CursorPagination's
  ``cursor_value`` uses it, as airbyte-cdk renders it) a lookup on an undefined
  value is an error instead: ``response['meta']['next']`` on a body without
  ``meta`` fails, naming ``meta``; ``response['meta']`` alone is still undefined.
* ``None`` renders as ``""`` (not ``"None"``).
* ``stream_interval`` and ``stream_partition`` default to ``stream_slice``.
* The sandbox is immutable: templates cannot call ``append``, ``update``,
  ``pop`` or other methods that change lists, dicts or sets.

Every failure raises :class:`~framework.errors.InterpolationError`; its
``kind`` attribute says which sort: ``"syntax"``, ``"security"``,
``"unknown-name"``, ``"undefined"``, ``"limit"``, ``"runtime"`` or
``"conversion"``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextvars import ContextVar
from functools import lru_cache
from typing import Any

from jinja2 import ChainableUndefined, Template, meta, nodes
from jinja2.exceptions import SecurityError, TemplateError, TemplateSyntaxError, UndefinedError
from jinja2.runtime import Undefined
from jinja2.sandbox import ImmutableSandboxedEnvironment
from msgspec import Struct

import framework.interpolation.checks as checks
import framework.interpolation.limits as limits
import framework.interpolation.render_budget as render_budget
from framework.errors import FrameworkError, InterpolationError
from framework.interpolation.conversions import (
    RESULT_TYPES,
    ConversionError,
    convert_text,
    convert_value,
    unquoted,
)
from framework.interpolation.filters import build_filters, guard_builtin_filters
from framework.interpolation.macros import build_globals
from framework.interpolation.variables import ALIASES, VARIABLES
from framework.temporal.clock import Clock, SystemClock

__all__ = ["CompiledTemplate", "SandboxEnvironment", "TemplateEngine", "build_environment"]

_KNOWN_VARIABLES = frozenset(VARIABLES)
_SHOWN_SOURCE_CHARS = 200


class SandboxEnvironment(ImmutableSandboxedEnvironment):
    """Jinja's immutable sandbox, made strict about unsafe access and resource use.

    Reaching an unsafe attribute raises at once (Jinja's sandbox would quietly
    render it as empty text), and operators, ``str`` methods and ``str.format``
    that could build huge values are checked first.
    """

    intercepted_binops = frozenset({"*", "**", "%", "+"})

    # what a budgeted template's loops and concatenations go through (render_budget.budgeted)
    budget_steps = staticmethod(render_budget.steps)
    budget_sized = staticmethod(render_budget.sized)

    def unsafe_undefined(self, obj: Any, attribute: str) -> Undefined:
        raise SecurityError(
            f"access to `{attribute}` on a {type(obj).__name__} value is not allowed"
        )

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        limits.check_binop(operator, left, right)
        return super().call_binop(context, operator, left, right)

    def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
        wrapped = super().wrap_str_format(value)
        if wrapped is None:
            return None
        fmt = value.__self__

        def guarded(*args: Any, **kwargs: Any) -> str:
            if value.__name__ == "format_map" and args and isinstance(args[0], Mapping):
                limits.check_str_format(fmt, (), args[0])
            else:
                limits.check_str_format(fmt, args, kwargs)
            return wrapped(*args, **kwargs)

        return guarded

    def format_string(self, s: str, args: Any, kwargs: Any, format_func: Any = None) -> str:
        # Used instead of wrap_str_format by Jinja releases before 3.1.5.
        limits.check_str_format(s, args, kwargs)
        return super().format_string(s, args, kwargs, format_func)  # type: ignore[misc]

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805
        limits.check_call(__obj, args, kwargs)
        return super().call(__context, __obj, *args, **kwargs)


#: Whether the template running in this context fails on a lookup through an undefined value (see
#: ``TemplateEngine.evaluate``'s ``strict_lookups``); one flag per thread and task, so engines stay shareable.
_STRICT_LOOKUPS: ContextVar[bool] = ContextVar("strict_lookups", default=False)


class _Undefined(ChainableUndefined):
    """Jinja's chainable undefined (``config['a']['b']`` stays undefined), unless lookups are strict in this
    context: then a lookup on it raises, naming the key that was missing first."""

    __slots__ = ()

    def __getattr__(self, name: str) -> Any:
        if _STRICT_LOOKUPS.get() and name[:2] != "__":
            self._fail_with_undefined_error()
        return super().__getattr__(name)

    def __getitem__(self, name: str) -> Any:
        if _STRICT_LOOKUPS.get():
            self._fail_with_undefined_error()
        return self


def _finalize(value: Any) -> Any:
    return "" if value is None else value


def build_environment(clock: Clock) -> SandboxEnvironment:
    """A fresh sandbox with the framework's macros (bound to ``clock``) and filters.

    The globals are the macros and the Jinja globals airbyte-cdk keeps
    (``dict``, ``namespace``, ``cycler``, ``joiner``, ``lipsum``); ``range`` is not one.
    """
    env = SandboxEnvironment(
        undefined=_Undefined,
        finalize=_finalize,
        autoescape=False,
        auto_reload=False,
    )
    env.globals.clear()
    env.globals.update(build_globals(clock))
    guard_builtin_filters(env.filters)
    env.filters.update(build_filters())
    return env


class CompiledTemplate(Struct, frozen=True, eq=False):
    """A template compiled once and reused.

    ``names`` are the top-level names it reads (macros excluded). ``template``
    renders it to text; ``expression``, set when the source is one ``{{ expr }}``,
    evaluates it to a native value. Both are ``None`` for text without markup.
    """

    source: str
    is_template: bool
    names: frozenset[str]
    template: Template | None
    expression: Template | None


def _shown(source: str) -> str:
    if len(source) > _SHOWN_SOURCE_CHARS:
        source = source[:_SHOWN_SOURCE_CHARS] + "..."
    return f"`{source}`"


def _error(message: str, source: str, kind: str) -> InterpolationError:
    error = InterpolationError(message, template=source)
    error.kind = kind  # type: ignore[attr-defined]
    return error


class TemplateEngine:
    """Compiles, caches, renders and evaluates manifest templates.

    One engine holds one sandboxed environment whose time macros read ``clock``
    (the system clock by default). Compiled templates are cached by source text
    (``cache_size`` of them, least recently used dropped first). An engine is
    safe to share between threads.
    """

    def __init__(
        self,
        clock: Clock | None = None,
        *,
        cache_size: int = 4096,
        max_output_chars: int = limits.MAX_OUTPUT_CHARS,
    ) -> None:
        self.clock: Clock = clock if clock is not None else SystemClock()
        self.environment = build_environment(self.clock)
        self.max_output_chars = max_output_chars
        self._compile_cached = lru_cache(maxsize=cache_size)(self._compile)

    # -- compiling ---------------------------------------------------------

    def compile(self, source: str) -> CompiledTemplate:
        """Compile ``source`` once; later calls with the same text reuse the result."""
        if not isinstance(source, str):
            raise _error(
                f"a template must be text, not {type(source).__name__}", repr(source), "syntax"
            )
        return self._compile_cached(source)

    def cache_info(self) -> Any:
        """Hits, misses and size of the compiled-template cache (``functools`` style)."""
        return self._compile_cached.cache_info()

    def cache_clear(self) -> None:
        """Forget every compiled template."""
        self._compile_cached.cache_clear()

    def _compile(self, source: str) -> CompiledTemplate:
        if not checks.has_markup(source):
            return CompiledTemplate(source, False, frozenset(), None, None)
        env = self.environment
        shown = _shown(source)
        try:
            tree = env.parse(source)
        except TemplateSyntaxError as exc:
            raise _error(
                f"template {shown} has a syntax error on line {exc.lineno}: {exc.message}",
                source,
                "syntax",
            ) from None
        forbidden = checks.forbidden_constructs(tree)
        if forbidden:
            raise _error(
                f"template {shown} uses {forbidden[0].reason}, which is not allowed",
                source,
                "security",
            )
        unknown = checks.unknown_filters_and_tests(tree, env.filters, env.tests)
        if unknown:
            kind, name, lineno = unknown[0]
            known = env.filters if kind == "filter" else env.tests
            hint = checks.did_you_mean(name, known)
            suffix = f"; did you mean `{hint}`?" if hint else ""
            raise _error(
                f"template {shown} uses the unknown {kind} `{name}` on line {lineno}{suffix}",
                source,
                "syntax",
            )
        names = frozenset(meta.find_undeclared_variables(tree)) - env.globals.keys()
        try:
            template = env.from_string(render_budget.budgeted(tree))
            expression = self._compile_expression(source)
        except TemplateError as exc:
            raise _error(f"template {shown} cannot be compiled: {exc}", source, "syntax") from None
        return CompiledTemplate(source, True, names, template, expression)

    def _compile_expression(self, source: str) -> Template | None:
        expr = checks.single_expression(self.environment.parse(source))
        if expr is None:
            return None
        program = nodes.Template(
            [nodes.Assign(nodes.Name("result", "store", lineno=1), expr, lineno=1)], lineno=1
        )
        return self.environment.from_string(render_budget.budgeted(program))

    # -- evaluating --------------------------------------------------------

    def _variables(self, compiled: CompiledTemplate, context: Mapping[str, Any]) -> dict[str, Any]:
        for name in compiled.names:
            if name not in context and name not in _KNOWN_VARIABLES:
                hint = checks.did_you_mean(name, list(_KNOWN_VARIABLES) + list(context))
                suffix = f"; did you mean `{hint}`?" if hint else ""
                raise _error(
                    f"template {_shown(compiled.source)} uses the unknown variable `{name}`{suffix}",
                    compiled.source,
                    "unknown-name",
                )
        variables = dict(context)
        for alias, target in ALIASES.items():
            if alias not in variables and target in variables:
                variables[alias] = variables[target]
        return variables

    def _failure(self, exc: BaseException, source: str) -> InterpolationError:
        shown = _shown(source)
        if isinstance(exc, SecurityError):
            text = str(exc)
            if "not allowed" not in text:
                text += " (not allowed in templates)"
            return _error(f"template {shown}: {text}", source, "security")
        if isinstance(exc, UndefinedError):
            return _error(f"template {shown} uses an undefined value: {exc}", source, "undefined")
        if isinstance(exc, (limits.TemplateLimitError, RecursionError, MemoryError)):
            reason = str(exc) if isinstance(exc, limits.TemplateLimitError) else type(exc).__name__
            return _error(f"template {shown} exceeds a resource limit: {reason}", source, "limit")
        if isinstance(exc, FrameworkError):
            return _error(f"template {shown} failed: {exc}", source, "runtime")
        return _error(f"template {shown} failed: {type(exc).__name__}: {exc}", source, "runtime")

    def _render(self, compiled: CompiledTemplate, context: Mapping[str, Any]) -> str:
        assert compiled.template is not None
        variables = self._variables(compiled, context)
        parts: list[str] = []
        size = 0
        render_budget.start()
        try:
            for chunk in compiled.template.generate(variables):
                size += len(chunk)
                limits.check_output_size(size, self.max_output_chars)
                parts.append(chunk)
        except InterpolationError:
            raise
        except Exception as exc:  # every template failure becomes an InterpolationError
            raise self._failure(exc, compiled.source) from exc
        return "".join(parts)

    def _native(self, compiled: CompiledTemplate, context: Mapping[str, Any]) -> Any:
        value = self._native_raw(compiled, context)
        return None if isinstance(value, Undefined) else value

    def gives_none(self, source: str, context: Mapping[str, Any]) -> bool:
        """Whether ``source`` is one ``{{ expr }}`` whose value is ``None`` itself, not an undefined value: a
        value that airbyte-cdk renders as the text ``None`` (``config.get('lang')`` without ``lang``, or a config
        value that is null), where a missing key (``config['lang']``) renders nothing there as here."""
        compiled = self.compile(source)
        if compiled.expression is None:
            return False
        return self._native_raw(compiled, context) is None

    def _native_raw(self, compiled: CompiledTemplate, context: Mapping[str, Any]) -> Any:
        template = compiled.expression
        assert template is not None
        variables = self._variables(compiled, context)
        render_budget.start()
        try:
            run = template.new_context(variables)
            for _ in template.root_render_func(run):
                pass
            value = run.vars.get("result")
            if isinstance(value, str):
                limits.check_output_size(len(value), self.max_output_chars)
        except InterpolationError:
            raise
        except Exception as exc:
            raise self._failure(exc, compiled.source) from exc
        return value

    def render(self, source: str, context: Mapping[str, Any]) -> str:
        """Render ``source`` to text. Text without markup comes back unchanged."""
        compiled = self.compile(source)
        if not compiled.is_template:
            return source
        return self._render(compiled, context)

    def evaluate(self, source: str, context: Mapping[str, Any], result: str = "string", *,
                 strict_lookups: bool = False) -> Any:
        """Evaluate ``source`` and convert it to ``result``.

        ``result`` is one of ``string``, ``integer``, ``number``, ``boolean``,
        ``object`` and ``any`` (see :mod:`framework.interpolation.conversions`).
        A template that is a single ``{{ expr }}`` is evaluated natively, so a
        number stays a number without a round trip through text.
        ``strict_lookups``: a lookup on an undefined value (a key missing one level
        up) is an error of kind ``"undefined"`` rather than undefined again.
        """
        if strict_lookups:
            token = _STRICT_LOOKUPS.set(True)
            try:
                return self._evaluate(source, context, result)
            finally:
                _STRICT_LOOKUPS.reset(token)
        return self._evaluate(source, context, result)

    def _evaluate(self, source: str, context: Mapping[str, Any], result: str) -> Any:
        if result not in RESULT_TYPES:
            raise _error(
                f"unknown result type {result!r}; use one of {', '.join(RESULT_TYPES)}",
                source if isinstance(source, str) else repr(source),
                "conversion",
            )
        compiled = self.compile(source)
        try:
            if not compiled.is_template:
                return convert_text(source, result)
            if result == "string":
                return unquoted(self._render(compiled, context))
            if compiled.expression is not None:
                return convert_value(self._native(compiled, context), result)
            return convert_text(self._render(compiled, context), result)
        except ConversionError as exc:
            raise _error(
                f"template {_shown(source)} must evaluate to {result}: {exc}", source, "conversion"
            ) from None
