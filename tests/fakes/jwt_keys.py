"""Signing keys for every JWT algorithm, made once per test process (PEM text, as a config holds them).

``signing_key(algorithm)`` is what a config gives as ``secret_key``; ``verifying_key(algorithm)`` is
what the API checks the signature with (the same text for HS algorithms, the public key otherwise).
"""

from __future__ import annotations

import functools

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

HMAC_SECRET = "shared-secret-long-enough-for-hs512-which-wants-64-bytes-of-key!!"
_CURVES = {"ES256": ec.SECP256R1, "ES256K": ec.SECP256K1, "ES384": ec.SECP384R1, "ES512": ec.SECP521R1}


@functools.cache
def _private(kind: str, passphrase: str | None = None) -> tuple[str, str]:
    if kind == "RSA":
        key: rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey | ed25519.Ed25519PrivateKey = \
            rsa.generate_private_key(public_exponent=65537, key_size=2048)
    elif kind == "EdDSA":
        key = ed25519.Ed25519PrivateKey.generate()
    else:
        key = ec.generate_private_key(_CURVES[kind]())
    encryption: serialization.KeySerializationEncryption = (
        serialization.BestAvailableEncryption(passphrase.encode()) if passphrase else serialization.NoEncryption())
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption).decode()
    public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    return private, public


def _kind(algorithm: str) -> str:
    if algorithm[:2] in ("RS", "PS"):
        return "RSA"
    return algorithm  # ES*, EdDSA


def signing_key(algorithm: str, passphrase: str | None = None) -> str:
    if algorithm.startswith("HS"):
        return HMAC_SECRET
    return _private(_kind(algorithm), passphrase)[0]


def verifying_key(algorithm: str, passphrase: str | None = None) -> str:
    if algorithm.startswith("HS"):
        return HMAC_SECRET
    return _private(_kind(algorithm), passphrase)[1]


__all__ = ["HMAC_SECRET", "signing_key", "verifying_key"]
