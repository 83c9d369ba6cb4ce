"""Filters added to Jinja's built-in ones (``{{ value | hash('sha256') }}``).

They are airbyte-cdk 7.39.1's, with its results on every input it accepts
(``tests/parity/test_template_parity.py``); where it fails on an input (a number
given to ``base64encode``, a hash name in capitals) some of them accept it,
as tests/parity/README.md lists.

Jinja's own filters stay available; a few of them that can grow a value far
beyond its input (``center``, ``indent``, ``format``, ``replace``, ``slice``)
are wrapped with the checks from :mod:`framework.interpolation.limits`.
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import hmac as hmac_lib
import json
import re
from collections.abc import Callable, MutableMapping
from typing import Any

from jinja2.runtime import Undefined

import framework.interpolation.limits as limits

__all__ = ["FILTERS", "LiteralText", "build_filters", "guard_builtin_filters"]

#: Names of the filters this framework adds.
FILTERS: tuple[str, ...] = (
    "hash",
    "base64encode",
    "base64decode",
    "base64binascii_decode",
    "string",
    "regex_search",
    "regex_replace",
    "hmac",
)

# Hash functions whose hexdigest needs no length argument.
_HASHES = frozenset(
    name for name in hashlib.algorithms_available if not name.startswith("shake")
)
_HMAC_HASHES = {"sha256": hashlib.sha256}


class LiteralText(str):
    """Text a typed evaluation must keep as text, never re-read as a literal.

    Returned by the ``string`` filter: ``{{ record | string }}`` evaluated with
    result ``any`` stays the JSON text instead of turning back into a dict.
    """

    __slots__ = ()


def _text(value: Any) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def hash(value: Any, hash_type: str = "md5", salt: Any = None) -> str:  # noqa: A001
    """Hex digest of ``str(value)`` (then ``salt``, when given) with a hashlib algorithm."""
    name = str(hash_type).lower()
    if name not in _HASHES:
        known = ", ".join(sorted(_HASHES))
        raise ValueError(f"unknown hash type {hash_type!r}; use one of: {known}")
    digest = hashlib.new(name)
    digest.update(str(value).encode("utf-8"))
    if salt:
        digest.update(str(salt).encode("utf-8"))
    return digest.hexdigest()


def base64encode(value: Any) -> str:
    """Standard base64 of the UTF-8 bytes of ``value``."""
    raw = value if isinstance(value, bytes) else str(value).encode("utf-8")
    return base64.b64encode(raw).decode("ascii")


def base64decode(value: Any) -> str:
    """Decode standard base64 text to UTF-8 text."""
    raw = value if isinstance(value, bytes) else str(value).encode("utf-8")
    try:
        return base64.b64decode(raw).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError) as exc:
        raise ValueError(f"base64decode: the value is not base64 of UTF-8 text ({exc})") from exc


def base64binascii_decode(value: Any) -> str:
    """Standard base64 of ASCII text - despite the name, this *encodes*.

    Airbyte's CDK implements this filter as an ASCII base64 encoder, and manifests
    depend on that behaviour, so it is kept. Non-ASCII input is an error.
    """
    try:
        raw = _text(value).encode("ascii")
    except UnicodeEncodeError as exc:
        raise ValueError("base64binascii_decode: the value must be ASCII text") from exc
    return base64.standard_b64encode(raw).decode("ascii")


def string(value: Any) -> str:
    """Text stays as it is; an undefined value is empty; anything else becomes JSON text (non-ASCII kept)."""
    if isinstance(value, str):
        return value
    if isinstance(value, Undefined):
        return ""
    return LiteralText(json.dumps(value, default=str, ensure_ascii=False))


def _pattern(regex: Any, filter_name: str) -> re.Pattern[str]:
    try:
        return re.compile(regex)
    except (re.error, TypeError) as exc:
        raise ValueError(f"{filter_name}: invalid regular expression {regex!r}: {exc}") from exc


def regex_search(value: Any, regex: str) -> str | None:
    """The first capture group of the first match; ``None`` (empty text) without a match or a group."""
    pattern = _pattern(regex, "regex_search")
    match = pattern.search(_text(value))
    if match is None or not pattern.groups:
        return None
    return match.group(1)


def regex_replace(value: Any, regex: str, replacement: str) -> str:
    """Every match of ``regex`` replaced with ``replacement`` (``\\1`` and ``\\g<name>`` name groups)."""
    pattern = _pattern(regex, "regex_replace")
    text = _text(value)
    written = 0  # characters the replacements write; they may not outgrow the input by more than the limit

    def expand(match: re.Match[str]) -> str:
        nonlocal written
        try:
            piece = match.expand(str(replacement))
        except (re.error, IndexError) as exc:
            raise ValueError(f"regex_replace: invalid replacement {replacement!r}: {exc}") from exc
        written += len(piece)
        limits.check_width(written - len(text), "the growth of a replaced string")
        return piece

    return pattern.sub(expand, text)


def hmac(value: Any, key: Any, hash_type: str = "sha256") -> str:
    """Hex HMAC of ``str(value)`` keyed with ``str(key)``; only ``sha256`` is allowed."""
    digestmod = _HMAC_HASHES.get(str(hash_type).lower())
    if digestmod is None:
        allowed = ", ".join(_HMAC_HASHES)
        raise ValueError(f"hmac: hash type {hash_type!r} is not allowed; use {allowed}")
    mac = hmac_lib.new(str(key).encode("utf-8"), str(value).encode("utf-8"), digestmod)
    return mac.hexdigest()


def build_filters() -> dict[str, Callable[..., Any]]:
    """The framework's filters by name."""
    return {
        "hash": hash,
        "base64encode": base64encode,
        "base64decode": base64decode,
        "base64binascii_decode": base64binascii_decode,
        "string": string,
        "regex_search": regex_search,
        "regex_replace": regex_replace,
        "hmac": hmac,
    }


def _guard(inner: Callable[..., Any], check: Callable[..., None]) -> Callable[..., Any]:
    """Wrap a Jinja filter so ``check`` sees its arguments first.

    ``functools.wraps`` copies the marker Jinja uses to pass a context,
    environment or eval context first, so the wrapper is called exactly like the
    filter it wraps; ``check`` never sees that leading argument.
    """
    skip = 1 if hasattr(inner, "jinja_pass_arg") else 0

    @functools.wraps(inner)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        check(*args[skip:], **kwargs)
        return inner(*args, **kwargs)

    return guarded


def _check_center(value: Any, width: Any = 80) -> None:
    limits.check_width(width)


def _check_indent(s: Any, width: Any = 4, *args: Any, **kwargs: Any) -> None:
    lines = str(s).count("\n") + 1
    size = width if isinstance(width, int) else len(str(width))
    limits.check_width(size * lines, "an indented string")


def _check_format(value: Any, *args: Any, **kwargs: Any) -> None:
    limits.check_printf(str(value), kwargs or args)


def _check_replace(s: Any, old: Any, new: Any, count: Any = None) -> None:
    limits.check_replace(str(s), str(old), str(new))


def _check_slice(value: Any, slices: Any, *args: Any, **kwargs: Any) -> None:
    limits.check_width(slices, "a slice count")


def guard_builtin_filters(filters: MutableMapping[str, Callable[..., Any]]) -> None:
    """Replace the size-amplifying built-in filters in ``filters`` with guarded ones."""
    checks: dict[str, Callable[..., None]] = {
        "center": _check_center,
        "indent": _check_indent,
        "format": _check_format,
        "replace": _check_replace,
        "slice": _check_slice,
    }
    for name, check in checks.items():
        if name in filters:
            filters[name] = _guard(filters[name], check)
