"""Whether a YAML file is a connector manifest, from its text alone: for ``validate-manifest --manifests-only``.

The pre-commit hook hands ``validate-manifest`` every YAML file of a commit (CI workflows,
``.pre-commit-config.yaml``, docker-compose files...). A manifest is recognised by its top-level
keys, read from the lines that start at column 0, so a file whose YAML is broken is still recognised
(and its errors reported): ``type: DeclarativeSource``, or ``version`` together with ``streams`` or
``dynamic_streams``. Nothing is parsed and nothing but the standard library is imported.
"""

from __future__ import annotations

import re

_TOP_LEVEL_KEY = re.compile(r"""^(["']?)(version|streams|dynamic_streams|type)\1[ \t]*:(.*)$""", re.MULTILINE)

RULE = "a top-level `type: DeclarativeSource`, or `version` with `streams` or `dynamic_streams`"


def looks_like_manifest(text: str) -> bool:
    """True when ``text`` has the top-level keys of a manifest (see :data:`RULE`)."""
    keys: dict[str, str] = {}
    for match in _TOP_LEVEL_KEY.finditer(text):
        keys.setdefault(match.group(2), match.group(3).split("#", 1)[0].strip().strip("\"'"))
    if keys.get("type") == "DeclarativeSource":
        return True
    return "version" in keys and ("streams" in keys or "dynamic_streams" in keys)


def file_looks_like_manifest(path: str) -> bool:
    """:func:`looks_like_manifest` of the file at ``path`` (bytes that are not UTF-8 replaced, not refused)."""
    with open(path, "rb") as handle:
        return looks_like_manifest(handle.read().decode("utf-8", errors="replace"))


__all__ = ["RULE", "file_looks_like_manifest", "looks_like_manifest"]
