"""Hiding secret values in messages: the one masking rule.

A :class:`Masker` replaces every secret it holds by ``****``, longest first (so
a secret that contains another is hidden whole). It is an immutable value,
callable as ``masker(text)``. Secrets from the config are masked as given
(:func:`framework.manifest.config_check.secret_values` lists the spellings of
each); credentials an authenticator puts on requests are masked in every
spelling :func:`credential_spellings` gives (stripped, escaped, URL-encoded),
because they travel in URLs and are quoted in errors; Basic auth adds its
base64 form itself.

A secret shorter than :data:`SHORT` characters (a PIN, a one-letter
password) is masked only where it stands alone, never inside a word:
masking every ``a`` of every message would hide nothing and give the secret
away. Where it stands alone it is replaced by the config field it comes from
(``<secret config.pin>``) when the masker knows it, else by ``****``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from typing import Protocol
from urllib.parse import quote, quote_plus

from msgspec import Struct

MASKED = "****"

#: Secrets shorter than this are masked only where they stand alone (see the module's docstring).
SHORT = 4

Mask = Callable[[str], str]


class HasSecrets(Protocol):
    """Anything that knows the credential values it uses now (an authenticator)."""

    def secrets(self) -> tuple[str, ...]: ...


def credential_spellings(secret: str) -> tuple[str, ...]:
    """The ways a secret may appear in a message: as is and without surrounding whitespace (a value written
    with ``echo`` ends with a newline), each also escaped as Python's ``repr`` and JSON show it and
    URL-encoded (path or query). Empty spellings are left out."""
    found: dict[str, None] = {}
    for value in (secret, secret.strip()):
        if value:
            for spelling in (value, repr(value)[1:-1], json.dumps(value)[1:-1], quote(value, safe=""),
                             quote_plus(value)):
                found.setdefault(spelling)
    return tuple(found)


class Masker(Struct, frozen=True):
    """Replaces each of ``secrets`` (kept longest first, no empty ones) by ``****``; one shorter than
    :data:`SHORT` only where it stands alone, by its field's name from ``names`` (secret, field) if there."""

    secrets: tuple[str, ...] = ()
    names: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of(cls, secrets: Iterable[str], names: Iterable[tuple[str, str]] = ()) -> Masker:
        """A masker for exactly these values (``names``: the config field of a secret, by its value)."""
        return cls(tuple(sorted({secret for secret in secrets if secret}, key=len, reverse=True)),
                   tuple(sorted(set(names))))

    def with_credentials(self, credentials: Iterable[str]) -> Masker:
        """This masker and the credentials in every :func:`credential_spellings` spelling."""
        spelled = (spelling for credential in credentials if credential
                   for spelling in credential_spellings(credential))
        return Masker.of((*self.secrets, *spelled), self.names)

    def __call__(self, text: str) -> str:
        for secret in self.secrets:
            if len(secret) >= SHORT:
                text = text.replace(secret, MASKED)
            elif secret in text:
                label = next((f"<secret {name}>" for value, name in self.names if value == secret), MASKED)
                text = re.sub(rf"(?<!\w){re.escape(secret)}(?!\w)", label.replace("\\", "\\\\"), text)
        return text


def masking_credentials(holder: HasSecrets, then: Mask) -> Mask:
    """A mask that hides ``holder``'s credentials as they are when a message is made (tokens
    obtained at run time are in no config), and then applies ``then`` (the config mask)."""

    def masked(text: str) -> str:
        return then(Masker().with_credentials(holder.secrets())(text))

    return masked


__all__ = ["MASKED", "SHORT", "HasSecrets", "Mask", "Masker", "credential_spellings", "masking_credentials"]
