"""How each selected stream lands: Airbyte's destination sync modes, defaulted per stream as Airbyte's UI does.

Without a configured catalog a stream's mode follows how it is read:

* a full-refresh stream (no ``incremental_sync``) is ``overwrite``: each sync
  replaces the stream's files once it succeeded, so the folder holds one copy;
* an incremental stream is ``append``: each sync adds what is new;
* with ``--dedup`` (``--sync-mode append_dedup``), an incremental stream with a
  primary key is ``append_dedup``: its files are appended as in ``append``
  and the landed catalog says ``append_dedup``, so normalization keeps one
  row per primary key (the ``_scd`` history and its final table).

``--sync-mode append`` or ``overwrite`` forces that mode on every stream
(``--dedup`` still makes incremental streams with a primary key
``append_dedup``). A configured catalog's ``destination_sync_mode`` is each
entry's own mode unless ``--sync-mode`` forces one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from framework.errors import ConfigError
from framework.values import replace

DestinationSyncMode = Literal["append", "overwrite", "append_dedup"]
MODES: tuple[str, ...] = ("append", "overwrite", "append_dedup")


def default_mode(incremental: bool, has_primary_key: bool, *, forced: str | None = None,
                 dedup: bool = False) -> str:
    """The destination sync mode of one stream: see the module docs.

    ``forced`` is ``--sync-mode`` (None: the per-stream default; ``append_dedup`` is ``dedup``).
    """
    if forced is not None and forced not in MODES:
        raise ConfigError(f"sync mode {forced!r} is not known; use append, overwrite or append_dedup")
    if forced == "append_dedup":
        forced, dedup = None, True
    if dedup and incremental and has_primary_key:
        return "append_dedup"
    if forced is not None:
        return forced
    return "append" if incremental else "overwrite"


def check_forced(forced: str | None, dedup: bool) -> None:
    """``--sync-mode overwrite`` with ``--dedup`` asks for two things at once: refused with the fix."""
    if dedup and forced == "overwrite":
        raise ConfigError("--dedup cannot be used with --sync-mode overwrite: dedup keeps the rows of earlier "
                          "syncs and keeps one per primary key, overwrite drops them; drop one of the two flags")


def with_destination_modes(selections: Sequence[Any], streams: Mapping[str, Any],
                           catalog: Mapping[str, Any] | None = None, *, forced: str | None = None,
                           dedup: bool = False) -> list[Any]:
    """``selections`` (:class:`~framework.engine.selection.Selection`) each with its ``destination_sync_mode``.

    ``streams`` maps names to the manifest's streams (their ``primary_key``);
    a catalog entry's ``destination_sync_mode`` wins over the default unless
    ``forced``; ``append_dedup`` needs a primary key (the stream's, or the
    entry's ``primary_key``).
    """
    check_forced(forced, dedup)
    entries = {str((e.get("stream") or {}).get("name")): e for e in (catalog or {}).get("streams") or ()
               if isinstance(e, Mapping)}
    out = []
    for selection in selections:
        stream = streams[selection.name]
        entry = entries.get(selection.name) or {}
        keyed = bool(getattr(stream, "primary_key", ())) or bool(entry.get("primary_key"))
        mode = entry.get("destination_sync_mode") if forced is None else None
        if mode is None:
            mode = default_mode(selection.incremental, keyed, forced=forced, dedup=dedup)
        elif mode not in MODES:
            raise ConfigError(f"catalog stream `{selection.name}`: destination_sync_mode must be append, "
                              f"overwrite or append_dedup, not {mode!r}")
        elif dedup and mode == "append" and selection.incremental and keyed:
            mode = "append_dedup"
        if mode == "append_dedup" and not keyed:
            raise ConfigError(f"stream `{selection.name}` has no primary key, so its records cannot be "
                              "deduplicated; give the stream a `primary_key` in the manifest, or use "
                              "destination_sync_mode append")
        out.append(replace(selection, destination_sync_mode=mode))
    return out


__all__ = ["MODES", "DestinationSyncMode", "check_forced", "default_mode", "with_destination_modes"]
