"""Resource guards for template evaluation.

A manifest template is untrusted text. Without ``range`` a template cannot loop
on its own, but a single operation can still ask for an enormous value:
``'x' * 10**9``, ``'%999999999d' % 1``, ``'a'.ljust(10**9)``, ``10 ** 10**9``,
or a ``replace`` that squares the length of a string. The checks here run
*before* such an operation and refuse it when the result would be too large.
The engine also caps the total size of a rendered template.

These guards bound one operation; :mod:`framework.interpolation.render_budget`
bounds a whole rendering (its loop steps, their time, and concatenations).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

#: Largest string or sequence (in characters or items) one operation may build.
MAX_ITEMS = 1_000_000
#: Largest rendered output, in characters.
MAX_OUTPUT_CHARS = 5_000_000
#: Largest integer ``**`` may produce, in bits.
MAX_POWER_BITS = 100_000

_PRINTF_SPEC = re.compile(r"%(?:\([^)]*\))?[-+ #0]*(\d+|\*)?(?:\.(\d+|\*))?")
_FORMAT_FIELD = re.compile(r"\{[^{}]*?:([^{}]*(?:\{[^{}]*\}[^{}]*)*)\}")
_DIGITS = re.compile(r"\d+")


class TemplateLimitError(Exception):
    """An operation inside a template would have exceeded a resource limit."""


def _sized(value: Any) -> bool:
    return isinstance(value, (str, bytes, list, tuple))


def _too_big(amount: int, what: str) -> None:
    if amount > MAX_ITEMS:
        raise TemplateLimitError(f"{what} would be {amount:,} long; the limit is {MAX_ITEMS:,}")


def check_binop(operator: str, left: Any, right: Any) -> None:
    """Refuse ``+``, ``*``, ``**`` and ``%`` when their result would be too large."""
    if operator == "+":
        if _sized(left) and _sized(right):
            _too_big(len(left) + len(right), "a joined value")
    elif operator == "*":
        for seq, count in ((left, right), (right, left)):
            if _sized(seq) and isinstance(count, int):
                _too_big(len(seq) * max(count, 0), "a repeated value")
    elif operator == "**":
        if isinstance(left, int) and isinstance(right, int) and right > 0 and abs(left) > 1:
            if left.bit_length() * right > MAX_POWER_BITS:
                raise TemplateLimitError(
                    f"an integer power would exceed {MAX_POWER_BITS:,} bits"
                )
    elif operator == "%" and isinstance(left, str):
        check_printf(left, right)


def _numbers(args: Any) -> list[int]:
    if isinstance(args, Mapping):
        values: Sequence[Any] = list(args.values())
    elif isinstance(args, tuple):
        values = args
    else:
        values = [args]
    return [v for v in values if isinstance(v, int) and not isinstance(v, bool)]


def check_printf(fmt: str, args: Any) -> None:
    """Refuse ``%``-formatting with a huge width or precision."""
    star = False
    for match in _PRINTF_SPEC.finditer(fmt):
        for part in match.groups():
            if part == "*":
                star = True
            elif part is not None:
                _too_big(int(part), "a formatted field")
    if star:
        for number in _numbers(args):
            _too_big(abs(number), "a formatted field")


def check_str_format(fmt: str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> None:
    """Refuse ``str.format`` calls with a huge width or precision."""
    for match in _FORMAT_FIELD.finditer(fmt):
        spec = match.group(1)
        for digits in _DIGITS.findall(spec):
            _too_big(int(digits), "a formatted field")
        if "{" in spec:
            for number in _numbers(tuple(args)) + _numbers(dict(kwargs)):
                _too_big(abs(number), "a formatted field")


def check_width(width: Any, what: str = "a padded string") -> None:
    """Refuse padding a string to a huge width."""
    if isinstance(width, int) and not isinstance(width, bool):
        _too_big(width, what)


def check_replace(text: Any, old: Any, new: Any) -> None:
    """Refuse a ``replace`` whose result would be too large."""
    if not (isinstance(text, str) and isinstance(old, str) and isinstance(new, str)):
        return
    if len(new) <= len(old):
        return
    hits = len(text) + 1 if old == "" else text.count(old)
    _too_big(len(text) + hits * (len(new) - len(old)), "a replaced string")


_PADDING_METHODS = frozenset({"center", "ljust", "rjust", "zfill", "expandtabs"})


def check_call(func: Any, args: Sequence[Any], kwargs: Mapping[str, Any]) -> None:
    """Guard the ``str`` methods that can grow a string far beyond its input."""
    owner = getattr(func, "__self__", None)
    name = getattr(func, "__name__", "")
    if not isinstance(owner, str):
        return
    if name in _PADDING_METHODS:
        for value in list(args) + list(kwargs.values()):
            if name == "expandtabs" and isinstance(value, int):
                _too_big(owner.count("\t") * max(value, 0) + len(owner), "an expanded string")
            else:
                check_width(value)
    elif name == "replace" and len(args) >= 2:
        check_replace(owner, args[0], args[1])


def check_output_size(size: int, limit: int = MAX_OUTPUT_CHARS) -> None:
    """Refuse a rendered template larger than ``limit`` characters."""
    if size > limit:
        raise TemplateLimitError(f"the rendered text is over the limit of {limit:,} characters")
