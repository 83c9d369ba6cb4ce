"""Turning an evaluated template into its declared result type.

Two inputs are handled: *text* (a rendered template, or a string without any
markup) and a *native value* (what a template consisting of one ``{{ expr }}``
evaluates to, before any conversion to text).

=========== =================================================================
result      conversion
=========== =================================================================
``string``  the text as is (native values are rendered with ``str``;
            ``None`` becomes ``""``)
``integer`` an ``int``; integral floats and text such as ``"42"``/``"42.0"``
            are accepted, booleans, fractions and empty values are errors
``number``  an ``int`` or ``float`` (finite); text is read as a number
``boolean`` see :func:`truthy`
``object``  a ``dict`` or ``list``; text is read as JSON, then as a Python
            literal (Jinja renders dicts with ``repr``)
``any``     Airbyte-like: text is read as a Python literal when it is one
            (``"5"`` -> 5, ``"[1]"`` -> [1], ``"None"`` -> None), otherwise kept;
            empty text is ``None``; native JSON-like values pass through and
            other objects (datetimes, ...) become their text
=========== =================================================================
"""

from __future__ import annotations

import ast
import math
from collections.abc import Mapping
from typing import Any, Literal, get_args

from framework.interpolation.filters import LiteralText

__all__ = ["FALSE_TEXTS", "RESULT_TYPES", "ResultType", "ConversionError", "convert_text",
           "convert_value", "literal", "truthy", "unquoted"]

ResultType = Literal["string", "integer", "number", "boolean", "object", "any"]
RESULT_TYPES: tuple[str, ...] = get_args(ResultType)

#: Rendered texts (after stripping surrounding whitespace) that mean False.
FALSE_TEXTS: frozenset[str] = frozenset(
    {"", "False", "false", "0", "0.0", "None", "none", "null", "{}", "[]", "()"}
)

_LITERAL_PROBE_LIMIT = 64  # longer text is never a zero number or an empty container


class ConversionError(ValueError):
    """The value cannot be converted to the declared result type."""


def _describe(value: Any) -> str:
    """Name a value's shape without showing the value (it may be a secret)."""
    if value is None:
        return "nothing (None)"
    if isinstance(value, str):
        return "empty text" if not value.strip() else f"{len(value)} characters of text"
    return f"a value of type {type(value).__name__}"


def literal(text: str) -> Any:
    """Airbyte's reading of text: a Python literal when it is one, else the text.

    Complex numbers are never produced; empty text gives ``None``.
    """
    if not text.strip():
        return None
    try:
        value = ast.literal_eval(text.lstrip(" \t"))
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text
    return text if isinstance(value, complex) else value


def _falsy_value(value: Any) -> bool:
    if value is None or value is False:
        return True
    if isinstance(value, (int, float)):
        return value == 0
    if isinstance(value, (str, bytes, list, tuple, dict, set, frozenset)):
        return len(value) == 0
    return False


def truthy(value: Any) -> bool:
    """Airbyte-like truthiness of an evaluated condition.

    Text is False when, stripped, it is one of :data:`FALSE_TEXTS` or a Python
    literal equal to zero or empty (``"00"``, ``"0e0"``, ``"''"``); any other
    text is True - including ``"no"`` and ``"FALSE"``. Native values: ``None``,
    ``False``, zero and empty containers are False, everything else True.
    """
    if isinstance(value, str):
        text = value.strip()
        if text in FALSE_TEXTS:
            return False
        if len(text) <= _LITERAL_PROBE_LIMIT:
            parsed = literal(text)
            if parsed is not text and _falsy_value(parsed):
                return False
        return True
    return not _falsy_value(value)


def _integer_from_text(text: str) -> int:
    try:
        number = _number_from_text(text)
    except ConversionError:
        raise ConversionError(f"expected an integer, got {_describe(text)}") from None
    if isinstance(number, float):
        if not number.is_integer():
            raise ConversionError("expected an integer, got a number with a fractional part")
        return int(number)
    return number


def _number_from_text(text: str) -> int | float:
    stripped = text.strip()
    try:
        return int(stripped)
    except ValueError:
        pass
    try:
        number = float(stripped)
    except ValueError:
        raise ConversionError(f"expected a number, got {_describe(text)}") from None
    if not math.isfinite(number):
        raise ConversionError("expected a finite number")
    return number


def _object_from_text(text: str) -> dict | list:
    stripped = text.strip()
    if not stripped:
        raise ConversionError(f"expected an object, got {_describe(text)}")
    import orjson  # here: validate-manifest never renders an object

    try:
        value = orjson.loads(stripped)
    except orjson.JSONDecodeError:
        value = literal(stripped)
        if value is stripped:
            raise ConversionError(
                f"expected an object, got {_describe(text)} that is neither JSON "
                "nor a Python literal"
            ) from None
    return _object_from_value(value)


def _object_from_value(value: Any) -> dict | list:
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, (list, tuple)):
        return list(value)
    raise ConversionError(f"expected an object (a mapping or a list), got {_describe(value)}")


def unquoted(text: str) -> str:
    """A rendering that is one quoted Python string literal (``'"https://a.test/"'``) as that string; other text as is.

    Airbyte reads every rendering as a Python literal, so a manifest may quote a
    template's whole output (``url_base: '"https://{{ host }}/"'``) and get the
    bare string; a string field here does the same, and only for that case.
    """
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            return text
        if isinstance(value, str):
            return value
    return text


def convert_text(text: str, result: str) -> Any:
    """Convert text (a rendering, or a markup-free string) to ``result``."""
    if result == "string":
        return text
    if result == "integer":
        return _integer_from_text(text)
    if result == "number":
        return _number_from_text(text)
    if result == "boolean":
        return truthy(text)
    if result == "object":
        return _object_from_text(text)
    if result == "any":
        return literal(text)
    raise ConversionError(f"unknown result type {result!r}; use one of {', '.join(RESULT_TYPES)}")


def convert_value(value: Any, result: str) -> Any:
    """Convert the native value of a one-expression template to ``result``."""
    if isinstance(value, str):
        if result == "any" and isinstance(value, LiteralText):
            return str(value)
        return convert_text(value, result)
    if result == "string":
        return "" if value is None else str(value)
    if result == "boolean":
        return truthy(value)
    if result == "integer":
        if isinstance(value, bool) or value is None:
            raise ConversionError(f"expected an integer, got {_describe(value)}")
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, float):
            raise ConversionError("expected an integer, got a number with a fractional part")
        return _integer_from_text(str(value))
    if result == "number":
        if isinstance(value, bool) or value is None:
            raise ConversionError(f"expected a number, got {_describe(value)}")
        if isinstance(value, (int, float)):
            if isinstance(value, float) and not math.isfinite(value):
                raise ConversionError("expected a finite number")
            return value
        return _number_from_text(str(value))
    if result == "object":
        return _object_from_value(value)
    if result == "any":
        if value is None or isinstance(value, (bool, int, float, dict, list, tuple)):
            return value
        if isinstance(value, Mapping):
            return dict(value)
        return convert_text(str(value), "any")
    raise ConversionError(f"unknown result type {result!r}; use one of {', '.join(RESULT_TYPES)}")
