"""Names of normalized tables and columns, by naming dialect (pure).

* Identifiers: accents dropped, every character other than a letter, digit or
  ``_`` becomes ``_``, a leading digit gets a ``_`` in front; PostgreSQL and
  Redshift fold to lower case, Snowflake and Oracle to upper case, the others
  keep the case. Names longer than the dialect's limit are cut in the middle,
  ``__`` marking the cut (:func:`truncate_middle`).
* Child tables (nested objects and arrays): ``<json path>_<hash>_<column>``
  where the JSON path is the names from the stream down to the table holding
  the nested column, joined by ``_``, and the hash the first 3 hex digits of
  the SHA-1 of the full path (stream name first, nested column last) joined
  with ``&airbyte&`` (:func:`child_table_name`). Generated table names keep
  :data:`RESERVE` characters free under the limit (for ``_scd`` and collision
  suffixes): the JSON path is cut first, to no fewer than 10 characters, then
  the column name in the middle.
* Collisions (two names equal without regard to case) are resolved by
  :class:`NameSet`: the first comer keeps the name, later ones get ``_1``,
  ``_2``... in the order they are asked for.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Sequence

from framework.models.normalization import IDENTIFIER_LIMITS

RESERVE = 20  # characters kept free in generated table names
MIN_PATH = 10  # the JSON path part of a child table name is never cut shorter
_NOT_ALLOWED = re.compile(r"[^A-Za-z0-9_]")
_LOWER = {"postgres", "redshift"}
_UPPER = {"snowflake", "oracle"}


def identifier_limit(dialect: str) -> int | None:
    return IDENTIFIER_LIMITS[dialect]


def table_limit(dialect: str) -> int | None:
    """The length generated table names are kept within: the dialect's limit minus :data:`RESERVE`."""
    limit = IDENTIFIER_LIMITS[dialect]
    return None if limit is None else limit - RESERVE


def normalize_identifier(name: str, dialect: str) -> str:
    """``name`` as a plain identifier of the dialect (not yet shortened)."""
    plain = "".join(c for c in unicodedata.normalize("NFKD", name) if not unicodedata.combining(c))
    text = _NOT_ALLOWED.sub("_", plain) or "_"
    if text[0].isdigit():
        text = "_" + text
    if dialect in _LOWER:
        text = text.lower()
    elif dialect in _UPPER:
        text = text.upper()
    return text


def truncate_middle(name: str, length: int | None) -> str:
    """``name`` cut to ``length`` characters by dropping its middle, ``__`` in its place."""
    if length is None or len(name) <= length:
        return name
    if length <= 2:
        return name[:length]
    keep = length - 2
    head = (keep + 1) // 2
    tail = keep - head
    return name[:head] + "__" + (name[-tail:] if tail else "")


def path_hash(full_path: Sequence[str]) -> str:
    """First 3 hex digits of the SHA-1 of the JSON path joined with ``&airbyte&``."""
    return hashlib.sha1("&airbyte&".join(full_path).encode("utf-8")).hexdigest()[:3]


def child_table_name(json_path: Sequence[str], column: str, dialect: str) -> str:
    """Name of the table made of nested ``column`` found at ``json_path`` (stream name first).

    Parts are normalized for the dialect; the hash is of the names as they are in the JSON.
    """
    limit = table_limit(dialect)
    digest = path_hash([*json_path, column])
    path = "_".join(normalize_identifier(part, dialect) for part in json_path)
    name = normalize_identifier(column, dialect)
    if limit is None or len(path) + len(name) + 5 <= limit:
        return f"{path}_{digest}_{name}"
    path = path[:max(MIN_PATH, limit - 5 - len(name))]
    name = truncate_middle(name, max(1, limit - 5 - len(path)))
    return f"{path}_{digest}_{name}"


def root_table_name(stream: str, dialect: str) -> str:
    """The stream's own table: its name for the dialect, within the table limit."""
    return truncate_middle(normalize_identifier(stream, dialect), table_limit(dialect))


def column_name(name: str, dialect: str) -> str:
    return truncate_middle(normalize_identifier(name, dialect), identifier_limit(dialect))


class NameSet:
    """Names handed out so far (compared without case); :meth:`claim` gives a free one.

    A taken name gets ``_1``, ``_2``... (the name cut in the middle first when the
    suffix would pass ``limit``).
    """

    def __init__(self, taken: Sequence[str] = ()):
        self._taken = {name.lower() for name in taken}

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._taken

    def claim(self, name: str, limit: int | None = None) -> str:
        candidate, number = name, 0
        while candidate.lower() in self._taken:
            number += 1
            suffix = f"_{number}"
            candidate = truncate_middle(name, None if limit is None else limit - len(suffix)) + suffix
        self._taken.add(candidate.lower())
        return candidate


__all__ = [
    "MIN_PATH",
    "RESERVE",
    "NameSet",
    "child_table_name",
    "column_name",
    "identifier_limit",
    "normalize_identifier",
    "path_hash",
    "root_table_name",
    "table_limit",
    "truncate_middle",
]
