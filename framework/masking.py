"""Hiding secret values in messages: the one masking rule.

A :class:`Masker` replaces every secret it holds by ``****``, longest first (so
a secret that contains another is hidden whole). It is an immutable value,
callable as ``masker(text)``. Secrets from the config are masked as given
(:func:`framework.manifest.config_check.secret_values` lists the spellings of
each); credentials an authenticator puts on requests are masked in every
spelling :func:`credential_spellings` gives (stripped, escaped, URL-encoded),
because they travel in URLs and are quoted in errors; Basic auth adds its
base64 form itself.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Protocol
from urllib.parse import quote, quote_plus

from msgspec import Struct

MASKED = "****"

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
    """Replaces each of ``secrets`` (kept longest first, no empty ones) by ``****``."""

    secrets: tuple[str, ...] = ()

    @classmethod
    def of(cls, secrets: Iterable[str]) -> Masker:
        """A masker for exactly these values."""
        return cls(tuple(sorted({secret for secret in secrets if secret}, key=len, reverse=True)))

    def with_credentials(self, credentials: Iterable[str]) -> Masker:
        """This masker and the credentials in every :func:`credential_spellings` spelling."""
        spelled = (spelling for credential in credentials if credential
                   for spelling in credential_spellings(credential))
        return Masker.of((*self.secrets, *spelled))

    def __call__(self, text: str) -> str:
        for secret in self.secrets:
            text = text.replace(secret, MASKED)
        return text


def masking_credentials(holder: HasSecrets, then: Mask) -> Mask:
    """A mask that hides ``holder``'s credentials as they are when a message is made (tokens
    obtained at run time are in no config), and then applies ``then`` (the config mask)."""

    def masked(text: str) -> str:
        return then(Masker().with_credentials(holder.secrets())(text))

    return masked


__all__ = ["MASKED", "HasSecrets", "Mask", "Masker", "credential_spellings", "masking_credentials"]
