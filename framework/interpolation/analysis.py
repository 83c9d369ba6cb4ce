"""Static analysis of a template: what it reads and what is wrong with it, without
rendering anything. Validators use it to report problems with a line number.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Literal

from jinja2 import meta, nodes
from jinja2.exceptions import TemplateError, TemplateSyntaxError
from msgspec import Struct

import framework.interpolation.checks as checks
from framework.interpolation.environment import SandboxEnvironment, build_environment
from framework.interpolation.limits import TemplateLimitError, check_binop
from framework.interpolation.loop_sizes import loop_warnings
from framework.interpolation.macros import GLOBALS
from framework.interpolation.variables import DEPRECATED_VARIABLES, VARIABLES
from framework.temporal.clock import SystemClock

__all__ = ["TemplateInfo", "TemplateProblem", "analyze_template"]

_LEXER_POSITION = re.compile(r" at (\d+)$")


class TemplateProblem(Struct, frozen=True):
    """One problem in a template.

    ``line`` and ``column`` are 1-based and relative to the template text;
    ``offset`` is the 0-based character index. Columns are best effort: Jinja
    reports lines only, so the column points at the relevant tag or filter when
    it can be found and at the first tag on the line otherwise.
    """

    code: str
    message: str
    line: int
    column: int
    offset: int
    fix: str | None = None
    severity: Literal["error", "warning"] = "error"


class TemplateInfo(Struct, frozen=True):
    """What :func:`analyze_template` found.

    * ``is_template`` - the text contains Jinja markup at all.
    * ``syntax_error`` - set when the text does not parse; the other fields are
      then empty.
    * ``variables`` - top-level names the template reads that are not globals (macros, ``dict``...).
    * ``unknown_names`` - those of ``variables`` that are not manifest variables.
    * ``unknown_filters`` - filters and tests that do not exist.
    * ``private_access`` - every ``_``-prefixed attribute or key it reaches for.
    * ``forbidden`` - constructs the engine refuses (``self``, ``{% include %}``,
      dunder attributes).
    * ``deprecated_names`` - deprecated variables it reads (``stream_state``).
    * ``config_keys`` - top-level keys of ``config`` it reads by a constant name (``config['api_key']``,
      ``config.api_key``, ``config.get('api_key')``).
    * ``partition_keys`` - the same for ``stream_partition``.
    """

    is_template: bool
    syntax_error: TemplateProblem | None = None
    variables: frozenset[str] = frozenset()
    unknown_names: frozenset[str] = frozenset()
    unknown_filters: tuple[TemplateProblem, ...] = ()
    private_access: tuple[str, ...] = ()
    forbidden: tuple[TemplateProblem, ...] = ()
    deprecated_names: frozenset[str] = frozenset()
    name_problems: tuple[TemplateProblem, ...] = ()
    config_keys: frozenset[str] = frozenset()
    #: those of ``config_keys`` read with a fallback (``config.get('k')``, ``config['k'] | default('x')``,
    #: ``config['k'] is defined``, ``'k' in config``): a config without them is expected
    config_fallbacks: frozenset[str] = frozenset()
    partition_keys: frozenset[str] = frozenset()
    #: loops whose steps the template leaves unbounded or puts past the render budget (warnings)
    loops: tuple[TemplateProblem, ...] = ()

    @property
    def ok(self) -> bool:
        """No problem of severity ``error``."""
        return all(p.severity != "error" for p in self.problems)

    @property
    def problems(self) -> tuple[TemplateProblem, ...]:
        """Every problem found, in the order of the template text."""
        found: list[TemplateProblem] = []
        if self.syntax_error is not None:
            found.append(self.syntax_error)
        found.extend(self.forbidden)
        found.extend(self.unknown_filters)
        found.extend(self.name_problems)
        found.extend(self.loops)
        return tuple(sorted(found, key=lambda p: (p.offset, p.code)))


class _AnyName(dict):
    """A filter/test table that claims to know every name, so that name analysis
    still works on a template that uses an unknown filter."""

    def get(self, key: Any, default: Any = None) -> Any:
        return super().get(key, _placeholder)

    def __contains__(self, key: object) -> bool:
        return True


def _placeholder(*args: Any, **kwargs: Any) -> None:
    return None


@lru_cache(maxsize=1)
def _environments() -> tuple[SandboxEnvironment, SandboxEnvironment]:
    real = build_environment(SystemClock())
    tolerant = build_environment(SystemClock())
    tolerant.filters = _AnyName(tolerant.filters)
    tolerant.tests = _AnyName(tolerant.tests)
    return real, tolerant


def _line_starts(source: str) -> list[int]:
    starts = [0]
    starts.extend(i + 1 for i, ch in enumerate(source) if ch == "\n")
    return starts


def _position(source: str, offset: int) -> tuple[int, int]:
    starts = _line_starts(source)
    line = max(i for i, start in enumerate(starts) if start <= offset) + 1
    return line, offset - starts[line - 1] + 1


def _offset_on_line(source: str, line: int, pattern: re.Pattern[str] | None) -> int:
    """Offset of ``pattern`` on ``line`` (else of the first tag there, else the line start)."""
    starts = _line_starts(source)
    line = min(max(line, 1), len(starts))
    start = starts[line - 1]
    end = starts[line] - 1 if line < len(starts) else len(source)
    text = source[start:end]
    if pattern is not None:
        match = pattern.search(text)
        if match:
            return start + match.start()
    tags = [i for i in (text.find(m) for m in ("{{", "{%", "{#")) if i >= 0]
    return start + (min(tags) if tags else 0)


def _problem(source: str, code: str, message: str, offset: int, **extra: Any) -> TemplateProblem:
    line, column = _position(source, offset)
    return TemplateProblem(code, message, line, column, offset, **extra)


def _syntax_problem(source: str, exc: TemplateSyntaxError) -> TemplateProblem:
    message = exc.message or str(exc)
    position = _LEXER_POSITION.search(message)
    if position:
        offset = min(int(position.group(1)), len(source))
    elif "end of template" in message.lower():
        offset = len(source)
    else:
        offset = _offset_on_line(source, exc.lineno or 1, None)
    return _problem(source, "template-syntax", f"template syntax error: {message}", offset)


def _name_pattern(name: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w.'\"]){re.escape(name)}\b")


_FOLDED: dict[type[nodes.Node], str] = {nodes.Mul: "*", nodes.Pow: "**", nodes.Mod: "%", nodes.Add: "+"}


def _config_keys(tree: nodes.Node, variable: str = "config") -> frozenset[str]:
    """Top-level keys of ``variable`` (``config``, ``stream_partition``) read by a constant name."""
    def is_config(node: nodes.Node) -> bool:
        return isinstance(node, nodes.Name) and node.name == variable

    keys: set[str] = set()
    for node in tree.find_all((nodes.Getitem, nodes.Getattr, nodes.Call)):
        if isinstance(node, nodes.Getitem) and is_config(node.node) and isinstance(node.arg, nodes.Const) \
                and isinstance(node.arg.value, str):
            keys.add(node.arg.value)
        elif isinstance(node, nodes.Getattr) and is_config(node.node) and node.attr not in ("get", "items", "keys",
                                                                                              "values"):
            keys.add(node.attr)
        elif isinstance(node, nodes.Call) and isinstance(node.node, nodes.Getattr) and is_config(node.node.node) \
                and node.node.attr == "get" and node.args and isinstance(node.args[0], nodes.Const) \
                and isinstance(node.args[0].value, str):
            keys.add(node.args[0].value)
    return frozenset(keys)


def _config_fallbacks(tree: nodes.Node) -> frozenset[str]:
    """Keys of ``config`` the template reads with a fallback: a default, a test, or a membership check."""
    def key_of(node: nodes.Node) -> str | None:
        if isinstance(node, nodes.Getitem) and isinstance(node.node, nodes.Name) and node.node.name == "config" \
                and isinstance(node.arg, nodes.Const) and isinstance(node.arg.value, str):
            return node.arg.value
        if isinstance(node, nodes.Getattr) and isinstance(node.node, nodes.Name) and node.node.name == "config":
            return node.attr
        return None

    keys: set[str] = set()
    for node in tree.find_all((nodes.Call, nodes.Filter, nodes.Test, nodes.Compare)):
        if isinstance(node, nodes.Call) and isinstance(node.node, nodes.Getattr) and node.node.attr == "get" \
                and isinstance(node.node.node, nodes.Name) and node.node.node.name == "config" \
                and node.args and isinstance(node.args[0], nodes.Const):
            keys.add(str(node.args[0].value))
        elif isinstance(node, nodes.Filter) and node.name in ("default", "d") and node.node is not None:
            key = key_of(node.node)
            if key is not None:
                keys.add(key)
        elif isinstance(node, nodes.Test) and node.name in ("defined", "undefined", "none"):
            key = key_of(node.node)
            if key is not None:
                keys.add(key)
        elif isinstance(node, nodes.Compare) and isinstance(node.expr, nodes.Const) \
                and isinstance(node.expr.value, str) and node.ops \
                and node.ops[0].op in ("in", "notin") and isinstance(node.ops[0].expr, nodes.Name) \
                and node.ops[0].expr.name == "config":
            keys.add(node.expr.value)
    return frozenset(keys)


def _oversized_constants(tree: nodes.Node) -> list[tuple[int, str]]:
    """Operations on constants whose result would pass the run-time limits (``'a' * 10**9``): found by
    folding constants with the run-time checks applied before each step, so nothing large is built."""
    found: list[tuple[int, str]] = []

    def fold(node: nodes.Node) -> Any:
        if isinstance(node, nodes.Const):
            return node.value
        operator = _FOLDED.get(type(node))
        if operator is None:
            return _UNKNOWN
        left, right = fold(node.left), fold(node.right)  # type: ignore[attr-defined]
        if left is _UNKNOWN or right is _UNKNOWN:
            return _UNKNOWN
        try:
            check_binop(operator, left, right)
            if operator == "+" and isinstance(left, str) and isinstance(right, str) \
                    and len(left) + len(right) > 1_000_000:
                raise TemplateLimitError("a joined text would be too long")
            return {"*": lambda a, b: a * b, "**": lambda a, b: a ** b, "%": lambda a, b: a % b,
                    "+": lambda a, b: a + b}[operator](left, right)
        except TemplateLimitError as exc:
            found.append((node.lineno, str(exc)))
        except Exception:  # noqa: BLE001 - a type error, say: the run time reports it
            pass
        return _UNKNOWN

    for node in tree.find_all(nodes.BinExpr):
        if not any(node is child for parent in tree.find_all(nodes.BinExpr) if parent is not node
                   for child in (parent.left, parent.right)):  # top-level expressions only
            fold(node)
    return found


_UNKNOWN = object()


@lru_cache(maxsize=4096)
def analyze_template(source: str) -> TemplateInfo:
    """Analyse ``source`` without rendering it; results are cached by text."""
    if not isinstance(source, str) or not checks.has_markup(source):
        return TemplateInfo(is_template=False)
    real, tolerant = _environments()
    try:
        tree = tolerant.parse(source)
    except TemplateSyntaxError as exc:
        return TemplateInfo(is_template=True, syntax_error=_syntax_problem(source, exc))

    try:
        undeclared = meta.find_undeclared_variables(tree)
    except TemplateError as exc:  # pragma: no cover - defensive; parse succeeded
        problem = _problem(source, "template-syntax", f"template error: {exc}", 0)
        return TemplateInfo(is_template=True, syntax_error=problem)
    variables = frozenset(undeclared) - frozenset(GLOBALS)
    unknown_names = variables - frozenset(VARIABLES)
    deprecated = variables & frozenset(DEPRECATED_VARIABLES)

    filter_problems = []
    for kind, name, lineno in checks.unknown_filters_and_tests(tree, real.filters, real.tests):
        known = real.filters if kind == "filter" else real.tests
        hint = checks.did_you_mean(name, known)
        where = rf"\|\s*{re.escape(name)}\b" if kind == "filter" else rf"\bis\s+(?:not\s+)?{re.escape(name)}\b"
        offset = _offset_on_line(source, lineno, re.compile(where))
        message = f"unknown {kind} `{name}`" + (f"; did you mean `{hint}`?" if hint else "")
        fix = f"replace `{name}` with `{hint}`" if hint else None
        filter_problems.append(_problem(source, f"unknown-{kind}", message, offset, fix=fix))

    forbidden = []
    for finding in checks.forbidden_constructs(tree):
        needle = re.compile(rf"\b{re.escape(finding.needle)}\b")
        offset = _offset_on_line(source, finding.lineno, needle)
        forbidden.append(
            _problem(
                source,
                "forbidden-construct",
                f"template uses {finding.reason}, which is not allowed (it reaches Python internals "
                "or other templates)",
                offset,
            )
        )

    for lineno, reason in _oversized_constants(tree):
        forbidden.append(_problem(source, "template-too-large", f"template asks for too large a value: {reason}",
                                  _offset_on_line(source, lineno, None),
                                  fix="build smaller values: rendering refuses this at run time too"))

    loops = tuple(_problem(source, "template-loop-budget", message, _offset_on_line(source, lineno, None),
                           fix="loop over fewer items (a smaller constant, or a bounded list from the config)",
                           severity="warning")
                  for lineno, message in loop_warnings(tree))

    private = checks.private_names(tree)
    name_problems = []
    for name in sorted(unknown_names):
        lineno = checks.first_line_of_name(tree, name)
        hint = checks.did_you_mean(name, VARIABLES + GLOBALS)
        message = f"unknown variable `{name}`" + (f"; did you mean `{hint}`?" if hint else "")
        offset = _offset_on_line(source, lineno, _name_pattern(name))
        fix = f"replace `{name}` with `{hint}`" if hint else None
        name_problems.append(_problem(source, "unknown-variable", message, offset, fix=fix))
    for name in sorted(deprecated):
        lineno = checks.first_line_of_name(tree, name)
        offset = _offset_on_line(source, lineno, _name_pattern(name))
        name_problems.append(
            _problem(source, "deprecated-variable", DEPRECATED_VARIABLES[name], offset,
                     severity="warning")
        )
    for name, lineno in private:
        if name.startswith("__"):
            continue  # already reported as a forbidden construct
        offset = _offset_on_line(source, lineno, re.compile(re.escape(name)))
        name_problems.append(
            _problem(
                source,
                "private-access",
                f"template reaches for `{name}`; this only works when it is a key of a "
                "mapping - attributes starting with `_` are Python internals and are refused",
                offset,
                severity="warning",
            )
        )

    return TemplateInfo(
        is_template=True,
        variables=variables,
        unknown_names=unknown_names,
        unknown_filters=tuple(filter_problems),
        private_access=tuple(dict.fromkeys(name for name, _ in private)),
        forbidden=tuple(forbidden),
        deprecated_names=deprecated,
        name_problems=tuple(name_problems),
        config_keys=_config_keys(tree) if "config" in variables else frozenset(),
        config_fallbacks=_config_fallbacks(tree) if "config" in variables else frozenset(),
        partition_keys=_config_keys(tree, "stream_partition") if "stream_partition" in variables else frozenset(),
        loops=loops,
    )
