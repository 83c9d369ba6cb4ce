"""Where the Parquet target's tables go: a root of their own, outside the raw files.

Raw streams, normalized tables and internal files never share a glob a user
would write: ``<output>/**/*.parquet`` is the landed streams only, and the
normalized tables sit in ``<output>_normalized/<table>/`` (beside the output:
a folder, or the prefix ``<prefix>_normalized`` of the same bucket), with the
target's bookkeeping in ``<output>_normalized/_airbyte_normalization/``.
``normalization.output`` (``--normalized-output``) puts them elsewhere; a
raw output that is a whole bucket needs it, since every prefix of the bucket
is under the raw root.

Earlier versions wrote the tables under the output (``<output>/normalized/``,
bookkeeping in ``<output>/_airbyte_normalization/``): such an output is
refused, with the fix (one ``--full-refresh`` run rebuilds the tables in the
new root), rather than normalized into two places.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from framework.errors import ConfigError
from framework.models.destination import DestinationSettings
from framework.models.normalization import NormalizationSettings
from framework.output_names import LEGACY_NORMALIZED

if TYPE_CHECKING:
    from framework.storage import Storage

SUFFIX = "_normalized"
#: the bookkeeping of the Parquet target, under its root (and, from older versions, under the output)
META = "_airbyte_normalization"
LEGACY_TABLES = f"{META}/tables.json"


def normalized_root(destination: DestinationSettings, settings: NormalizationSettings | None = None) -> str:
    """The root of the normalized tables: ``settings.output``, else ``<output>_normalized``."""
    given = settings.output if settings is not None else None
    raw = destination.base_uri.rstrip("/")
    if given:
        root = given.rstrip("/")
    elif destination.target == "s3" and not destination.prefix:
        raise ConfigError(f"the raw files fill the whole bucket {raw}, so normalized tables have no place "
                          "outside them: set `normalization.output` in the destination settings (or "
                          "--normalized-output) to another bucket or prefix, such as s3://warehouse/normalized")
    else:
        root = raw + SUFFIX
    if _inside(root, raw) or _inside(raw, root):
        raise ConfigError(f"normalized tables at {root} would share a folder with the raw files at {raw}: give "
                          f"`normalization.output` (--normalized-output) a place outside it, such as {raw}{SUFFIX}")
    return root


def _inside(path: str, root: str) -> bool:
    if "://" not in path and "://" not in root:
        path, root = os.path.abspath(path), os.path.abspath(root)
    return path == root or path.startswith(root.rstrip("/") + "/")


def normalized_destination(destination: DestinationSettings,
                           settings: NormalizationSettings | None = None) -> DestinationSettings:
    """``destination`` (its credentials, region, endpoint) addressing the normalized root instead."""
    return destination.model_copy(update={"s3_bucket_name": None, "s3_bucket_path": "",
                                          "output": normalized_root(destination, settings)})


def check_no_legacy_tables(raw: Storage, normalized: Storage, full_refresh: bool) -> None:
    """Refuse, with the fix, an output whose tables an older version normalized under it (unless
    ``full_refresh``, which rebuilds them in the new root)."""
    if full_refresh or raw.read(LEGACY_TABLES) is None or normalized.read(f"{META}/tables.json") is not None:
        return
    out = raw.uri()
    raise ConfigError(f"{raw.uri(LEGACY_NORMALIZED)}: these tables were normalized by an earlier version, under "
                      f"the raw files; normalized tables now go to {normalized.uri()} so that "
                      f"{out}/**/*.parquet reads raw data only. Run `normalize-output --output {out} "
                      f"--full-refresh` once to rebuild them there, then delete {raw.uri(LEGACY_NORMALIZED)}/ and "
                      f"{raw.uri(META)}/")


__all__ = ["META", "SUFFIX", "check_no_legacy_tables", "normalized_destination", "normalized_root"]
