"""The folders streams land in, and the names that would make two kinds of table share one.

A stream lands under ``<output>/<namespace>/<stream>/`` (Airbyte's default
``s3_path_format``), its name made safe for object keys (:func:`safe_name`).
Next to the streams the output holds internal folders only: ``_airbyte_state/``
(state, landed catalog, tasks' staged files) and ``_airbyte_cdc/`` (change
data's image and staging), and, from older versions, ``_airbyte_normalization/``
and ``normalized/``. A stream folder must be none of them, inside none of
them, and neither hold nor sit in another stream's folder (``out/<stream>/**``
is one stream), and two streams must not differ only by case (one folder on
a case-insensitive disk). :func:`folder_problems` says what collides and the
fix; ``validate-manifest`` and ``run-manifest`` refuse such names.

The internal folders hold data files too (staged, or change data's image);
their names end with :data:`INTERNAL_SUFFIX`, so ``out/**/*.parquet`` (or
``*.avro``, ``*.csv.gz``, ``*.jsonl``) is the streams' landed files only.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping

from framework.errors import ConfigError

#: folders of the output root that are the framework's, not a stream's (``_airbyte_`` is reserved as a whole)
INTERNAL_PREFIX = "_airbyte_"
#: where normalized tables went under the output before they had a root of their own (still read there)
LEGACY_NORMALIZED = "normalized"
#: ends the name of every internal data file (tasks' staged files, change data's staged records and image):
#: no data glob (``**/*.parquet``, ``**/*.avro``...) matches it; Spark and pyarrow read such a file by its key
INTERNAL_SUFFIX = ".staged"

_UNSAFE = re.compile(r"[^A-Za-z0-9/!_.*')(&$@=;:+,?\-]")


def safe_name(name: str) -> str:
    """A namespace or stream name as it appears in keys: no accents, unsafe characters as ``_``."""
    plain = "".join(c for c in unicodedata.normalize("NFKD", name) if not unicodedata.combining(c))
    return _UNSAFE.sub("_", plain)


def stream_folder(name: str, namespace: str = "") -> str:
    """The folder (key prefix, no slashes at the ends) a stream lands in under the default path format."""
    return re.sub(r"/+", "/", f"{safe_name(namespace)}/{safe_name(name)}").strip("/")


def _segments(folder: str) -> tuple[str, ...]:
    return tuple(part.lower() for part in folder.strip("/").split("/") if part)


def folder_problems(folders: Mapping[str, str]) -> dict[str, tuple[str, str]]:
    """``{stream: (problem, fix)}`` for the streams (name -> folder) whose folder collides; see the module docs.
    Of two colliding streams the later one (in the mapping's order) is named."""
    found: dict[str, tuple[str, str]] = {}
    seen: list[tuple[str, tuple[str, ...]]] = []
    for name, folder in folders.items():
        parts = _segments(folder)
        raw = folder.strip("/").split("/")
        if not parts:
            found[name] = (f"stream `{name}` would land at the output's root, beside the internal folders",
                           "give the stream a name of letters or digits")
        elif any(part in (".", "..") for part in raw):
            found[name] = (f"stream `{name}` lands in `{folder}/`, a folder with `.` or `..` in its path",
                           "give the stream a name without `.` or `..` between slashes")
        elif parts[0].startswith(INTERNAL_PREFIX) or parts[0] == LEGACY_NORMALIZED:
            found[name] = (f"stream `{name}` lands in `{folder}/`, which collides with the framework's own "
                           f"`{raw[0]}/` folder of the output (state, change data or normalized tables)",
                           f"rename the stream: names starting with `{INTERNAL_PREFIX}` (any case) and "
                           f"`{LEGACY_NORMALIZED}` are reserved")
        else:
            for other, other_parts in seen:
                if parts == other_parts:
                    how = "the same folder" if folder.strip("/") == folders[other].strip("/") else \
                        "the same folder on a case-insensitive disk"
                    found[name] = (f"streams `{other}` and `{name}` land in {how} (`{folder}/`)",
                                   "rename one of them: names must differ in more than case or unsafe characters")
                    break
                shorter, longer = sorted((parts, other_parts), key=len)
                if longer[:len(shorter)] == shorter:
                    found[name] = (f"the folder of stream `{name}` (`{folder}/`) and that of `{other}` "
                                   f"(`{folders[other].strip('/')}/`) sit one inside the other, so a reader of "
                                   "one would read both", "rename one of them so that neither name is a "
                                   "path prefix of the other")
                    break
        seen.append((name, parts))
    return found


def check_stream_folders(folders: Mapping[str, str], where: str = "") -> None:
    """Raise :class:`ConfigError` naming every collision of :func:`folder_problems` and its fix."""
    problems = folder_problems(folders)
    if problems:
        lines = "; ".join(f"{problem} (fix: {fix})" for problem, fix in problems.values())
        raise ConfigError(f"{where + ': ' if where else ''}{lines}")


__all__ = ["INTERNAL_PREFIX", "INTERNAL_SUFFIX", "LEGACY_NORMALIZED", "check_stream_folders", "folder_problems",
           "safe_name", "stream_folder"]
